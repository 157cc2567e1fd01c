#!/usr/bin/env bash
# tests/gpu/package.sh — assembles what tests/gpu/run.sh needs on a GPU machine that has a
# driver, nvcc and PyTorch but no package registry and none of the build's libraries:
#
#   tests/gpu/package.sh BUILD_DIR PACKAGE_DIR
#   tests/gpu/package.sh --list               the files it takes from BUILD_DIR (run.sh
#                                             builds them)
#
# PACKAGE_DIR mirrors BUILD_DIR's layout (lib/, bin/, tests/..., gpu-conformance/), so
# `tests/gpu/run.sh --from PACKAGE_DIR` runs every step from it without building. It holds
# the built programs and libraries with their debug information stripped, deps/ with every
# shared library they need that is not glibc's or the C++ runtime's (libnuma, liburing,
# libjansson, libnettle, libgomp, libcmocka, libcudart, libmicrohttpd and what it pulls in:
# found with ldd), models/stories260K.gguf when TM_SHARED has it, MANIFEST (path, bytes,
# sha256 of every file) and PACKAGE (the commit and how to run it). Each ELF file gets a
# RUNPATH to deps/ (patchelf), after the one it had ($ORIGIN/../../lib/simcuda for the test
# programs), so no LD_LIBRARY_PATH is needed for the libraries; LD_LIBRARY_PATH still
# chooses the driver, as run.sh does.
#
# Fails, saying why, when a file is missing, a library cannot be resolved, or the package
# is over PACKAGE_LIMIT bytes (default 64 MiB: what the GPU machine is sent). Prints one
# line per check ("ok - ..." / "not ok - ...") and "# " lines of what it holds.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# What each step runs, relative to the build folder.
files=(
  lib/libtiermem.so lib/libtiermem-kernels.so lib/simcuda/libcuda.so.1 lib/simcuda/libnvidia-ml.so.1
  bin/tiermem-llm bin/tiermem-mkmodel kernels/tiermem-kernels.fatbin
  tests/gpu/kernel_check tests/kernels/libtiermem-kernels-cuda-emu.so
  tests/gpu/calibrate tests/gpu/calibrate_kernels.so tests/gpu/calibrate_kernels.fatbin
  tests/preload/serving tests/preload/probe tests/preload/ipc_peer
  gpu-conformance/cuda_conformance gpu-conformance/conformance_kernels.fatbin
)
# Every runtime test program, both builds (tests/cudart/module.mk builds each NAME.cu twice).
for cu in "$ROOT"/tests/cudart/*.cu; do
  name=$(basename "$cu" .cu)
  files+=("tests/cudart/${name}_static" "tests/cudart/${name}_shared")
done
if [ "${1:-}" = --list ]; then printf '%s\n' "${files[@]}"; exit 0; fi

B=${1:?usage: package.sh BUILD_DIR PACKAGE_DIR | --list}
P=${2:?usage: package.sh BUILD_DIR PACKAGE_DIR | --list}
TM_SHARED=${TM_SHARED:-$ROOT/../shared}
PACKAGE_LIMIT=${PACKAGE_LIMIT:-$((64 << 20))}
failed=0
ok() { echo "ok - $*"; }
bad() { echo "not ok - $*"; failed=1; }
skip() { echo "ok - $1 # SKIP $2"; } # WHAT WHY
# glibc's libraries, the C++ runtime (every machine that runs PyTorch has them), the
# driver and cuBLAS (over 500 MiB; the GPU machine's CUDA 13.0 toolkit has it, and
# tests/gpu/run.sh puts the toolkit's lib64 on the path there) are the machine's own;
# everything else comes along.
system_lib() {
  case $1 in
    linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libutil.so.*|\
    libresolv.so.*|libstdc++.so.*|libgcc_s.so.*|libcuda.so.1|libcublas.so.*|libcublasLt.so.*) return 0 ;;
  esac
  return 1
}
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

rm -rf "$P"
mkdir -p "$P/deps"
P=$(cd "$P" && pwd)
missing=()
for f in "${files[@]}"; do
  if [ -f "$B/$f" ]; then
    mkdir -p "$P/$(dirname "$f")"
    cp "$B/$f" "$P/$f"
  else
    missing+=("$f")
  fi
done
[ ${#missing[@]} -eq 0 ] && ok "the ${#files[@]} built files are there" ||
  bad "not built: ${missing[*]} (make all test-progs, tests/gpu/conformance.sh --build-only)"

# The libraries they need, by ldd on the build's own files (it resolves the closure).
unresolved=()
for f in "${files[@]}"; do
  [ -f "$B/$f" ] && is_elf "$B/$f" || continue
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    system_lib "$name" && continue
    if [ "$path" = "not" ]; then unresolved+=("$name (for $f)"); continue; fi
    [ -f "$P/deps/$name" ] || cp "$(readlink -f "$path")" "$P/deps/$name"
  done < <(ldd "$B/$f" 2>/dev/null)
done
[ ${#unresolved[@]} -eq 0 ] && ok "every library the programs need resolves here ($(ls "$P/deps" | wc -l) carried in deps/)" ||
  bad "libraries not found here: ${unresolved[*]}"

# Debug information off the project's own files, then a RUNPATH to deps/ on every ELF.
if ! command -v patchelf >/dev/null; then
  bad "patchelf is not installed (make deps): the package cannot point its programs at deps/"
else
  patched=0
  while IFS= read -r -d '' f; do
    is_elf "$f" || continue
    rel=${f#$P/}
    case $rel in deps/*) ;; *) strip --strip-debug "$f" 2>/dev/null ;; esac
    dir=$(dirname "$rel")
    up=$(sed 's|[^/][^/]*|..|g' <<<"$dir")
    [ "$dir" = . ] && up=.
    old=$(patchelf --print-rpath "$f" 2>/dev/null)
    want='$ORIGIN/'$up/deps
    case $rel in deps/*) want='$ORIGIN' ;; esac
    patchelf --set-rpath "${old:+$old:}$want" "$f" && patched=$((patched + 1))
  done < <(find "$P" -type f -print0)
  ok "RUNPATH to deps/ set on $patched ELF files"
fi

# Resolved from the package: each library the package's own files need is in deps/ or the
# system's (glibc, the C++ runtime), and the test programs still find simcuda beside them.
outside=()
while IFS= read -r -d '' f; do
  is_elf "$f" || continue
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    system_lib "$name" && continue
    path=$(realpath -m "$path")
    case $path in "$P"/*) ;; *) outside+=("${f#$P/}: $name => $path") ;; esac
  done < <(ldd "$f" 2>/dev/null)
done < <(find "$P" -type f -print0)
[ ${#outside[@]} -eq 0 ] && ok "every library the package's files load comes from the package or glibc" ||
  bad "loaded from outside the package: ${outside[*]}"
glibc=$(find "$P" -type f -exec sh -c 'head -c4 "$1" | grep -q ELF && objdump -T "$1"' _ {} \; 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
echo "# the package needs ${glibc:-GLIBC_?} (glibc ${glibc#GLIBC_} or newer) and the machine's libstdc++"

# The model step 5 and 7 decode; without it those checks skip, saying so, on the GPU machine.
if [ -f "$TM_SHARED/models/stories260K.gguf" ]; then
  mkdir -p "$P/models" && cp "$TM_SHARED/models/stories260K.gguf" "$P/models/"
  ok "models/stories260K.gguf from $TM_SHARED"
else
  skip "models/stories260K.gguf" "no $TM_SHARED/models/stories260K.gguf (set TM_SHARED): the engine checks will skip"
fi

commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -qv '^??' && echo ", with uncommitted changes")
rel_p=$P
case $P in "$ROOT"/*) rel_p=${P#$ROOT/} ;; esac
cat >"$P/PACKAGE" <<EOF
tiermem GPU check package, built from commit $commit$dirty on $(date -u +%Y-%m-%dT%H:%MZ)
by tests/gpu/package.sh. On the GPU machine, from a copy of the same tree with this
folder at $rel_p:
    tests/gpu/run.sh --from $rel_p
EOF
(cd "$P" && find . -type f ! -name MANIFEST -printf '%P\n' | sort | while read -r f; do
   printf '%s %s %s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)"
 done) >"$P/MANIFEST"

bytes=$(find "$P" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
count=$(find "$P" -type f | wc -l)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
limit_mib=$(awk -v b="$PACKAGE_LIMIT" 'BEGIN { printf "%.0f", b / 1048576 }')
for d in lib bin kernels tests gpu-conformance deps models; do
  [ -d "$P/$d" ] || continue
  what=$(cd "$P/$d" && find . -type f -printf '%P\n' | sort | tr '\n' ' ')
  echo "#   $d/: $(find "$P/$d" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.1f MiB", s / 1048576 }'): $what"
done
[ "$bytes" -le "$PACKAGE_LIMIT" ] && ok "package $rel_p: $count files, $mib MiB, within $limit_mib MiB" ||
  bad "package $rel_p: $mib MiB is over the $limit_mib MiB the GPU machine is sent"
exit "$failed"
