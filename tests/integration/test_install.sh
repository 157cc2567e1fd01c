#!/usr/bin/env bash
# `make install` into a staging root: the libraries, programs, public header, pkg-config
# file and manual pages land where they belong; the pages format without a warning; the
# pkg-config file validates and gives flags that compile a program against the header.
source "$(dirname "$0")/../lib/tap.sh"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
PREFIX=/usr/local

out=$(make -s --no-print-directory -C "$TM_ROOT" install O="$O" SAN="${SAN:-0}" PREFIX=$PREFIX DESTDIR="$STAGE" 2>&1)
check_eq "make install DESTDIR=... succeeds" "$?" 0
ROOT=$STAGE$PREFIX
for f in lib/libtiermem.so bin/tiermem-stat bin/tiermem-llm include/tiermem/tiermem.h lib/pkgconfig/libtiermem.pc \
         share/man/man7/libtiermem.7 share/man/man1/tiermem-stat.1 share/man/man1/tiermem-llm.1 \
         lib/tiermem/simcuda/libcuda.so.1 lib/tiermem/simcuda/libnvidia-ml.so.1; do
  check "installs $f" test -f "$ROOT/$f"
done

# every installed program has its manual page, and every page formats cleanly
for program in "$ROOT"/bin/*; do
  check "$(basename "$program") has a manual page" test -f "$ROOT/share/man/man1/$(basename "$program").1"
done
for page in "$ROOT"/share/man/man*/*; do
  page=${page#"$ROOT"/share/man/}
  warnings=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$ROOT/share/man/$page" 2>&1)
  check_eq "groff -man -ww formats $page without a warning" "$warnings" ""
  name=$(basename "$page"); name=${name%.*}
  check "man -l $page renders its NAME section" \
    grep -q "^ *$name - " <<<"$(MANWIDTH=200 LC_ALL=C.UTF-8 man -l "$ROOT/share/man/$page" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g; s/.\x08//g')"
done

# --define-prefix: the prefix is where the file was staged (the CUDA path stays as built)
export PKG_CONFIG_PATH=$ROOT/lib/pkgconfig
check "pkg-config --validate libtiermem" pkg-config --validate libtiermem
check_eq "the installed file names the prefix it was built for" "$(pkg-config --variable=prefix libtiermem)" "$PREFIX"
pc() { pkg-config --define-prefix "$@" libtiermem | sed 's/ *$//'; }
check_eq "pkg-config --libs libtiermem, staged" "$(pc --libs)" "-L$ROOT/lib -ltiermem"
check "the public header compiles with pkg-config's flags" \
  sh -c "printf '#include <tiermem/tiermem.h>\nint main(void) { CUresult (*f)(CUdeviceptr, size_t, const char *) = tiermem_migrate; return f != 0; }\n' |
         ${CC:-cc} -std=gnu11 -Wall -Werror $(pc --cflags) -x c - -o '$STAGE/uses_header' $(pc --libs)"
defined=$(nm -D --defined-only "$ROOT/lib/libtiermem.so")
check "libtiermem.so defines the header's function" grep -q ' T tiermem_migrate' <<<"$defined"

# every function libtiermem.so exports beyond the driver's is declared in the header: a
# loader compiled against it reports a read, run under the installed interposer
for f in $(sed -n 's/.* T \(tiermem_[a-z_]*\)@@TIERMEM_1$/\1/p' <<<"$defined"); do
  check "the header declares $f, with a comment" \
    grep -Pzq "\*/\n(__attribute__\(\(visibility\(\"default\"\)\)\) )?[a-zA-Z]+ $f\(" "$ROOT/include/tiermem/tiermem.h"
done
cat > "$STAGE/note.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <tiermem/tiermem.h>

int main(int argc, char **argv)
{
    char head[4096];
    int fd = argc == 2 ? open(argv[1], O_RDONLY) : -1;
    ssize_t n = fd >= 0 ? pread(fd, head, sizeof head, 0) : -1;
    if (n <= 0)
        return 1;
    printf("model %d, not a model file %d\n", tiermem_note_file_read(fd, head, (size_t)n, 0),
           tiermem_note_file_read(0, head, (size_t)n, 0));
    return 0;
}
C
check "a loader calling tiermem_note_file_read compiles against the installed header and pkg-config" \
  ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror $(pc --cflags) "$STAGE/note.c" -o "$STAGE/note" $(pc --libs)
"$O/bin/tiermem-mkmodel" -o "$STAGE/m.gguf" --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --type f32 \
  --seed 1 > /dev/null 2>&1
check_eq "under the installed interposer, the read of a model file is recorded and another fd refused" \
  "$(LD_PRELOAD=$(preload_value "$ROOT/lib/libtiermem.so") LD_LIBRARY_PATH=$ROOT/lib:$ROOT/lib/tiermem/simcuda "$STAGE/note" \
     "$STAGE/m.gguf" 2>&1)" "model 0, not a model file -1"
done_testing
