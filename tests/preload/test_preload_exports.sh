#!/usr/bin/env bash
# libtiermem.so exports exactly the hooked driver symbols of preload/hooks.def, NVML's two
# memory calls, dlsym and dlvsym in glibc's two versions each, the file calls of hook_file.c
# at glibc's base version,
# tiermem_migrate and tiermem_note_file_read; every hook names a symbol the driver has.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

hooks=$(grep -oE '^HOOK\(cu[A-Za-z0-9_]+' "$TM_ROOT/preload/driver/hooks.def" | sed 's/HOOK(//' | sort)
exported=$(nm -D --defined-only "$LIBTIERMEM" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' | sort)
# glibc's first symbol version: GLIBC_2.2.5 on x86-64, GLIBC_2.17 on aarch64
base=GLIBC_2.2.5
readelf -h "$LIBTIERMEM" | grep -q 'AArch64' && base=GLIBC_2.17
file_calls="open open64 openat openat64 close read pread pread64 readv preadv preadv64 mmap mmap64 munmap"
nvml_calls="nvmlDeviceGetMemoryInfo nvmlDeviceGetMemoryInfo_v2"
check_eq "the exported functions are the hooks, NVML's memory calls, dlsym, dlvsym, the file calls, tiermem_migrate and tiermem_note_file_read" \
  "$exported" "$(printf '%s\n' "$hooks" $nvml_calls dlsym dlsym dlvsym dlvsym $file_calls tiermem_migrate tiermem_note_file_read | sort)"
for f in $file_calls; do
  check "$f is exported as $f@@$base" grep -q " $f@@$base\$" <<<"$(nm -D --defined-only "$LIBTIERMEM")"
done
for f in dlsym dlvsym; do
  check "$f is exported as $f@@GLIBC_2.34" grep -q " $f@@GLIBC_2.34\$" <<<"$(nm -D --defined-only "$LIBTIERMEM")"
  check "$f is exported as $f@$base" grep -q " $f@$base\$" <<<"$(nm -D --defined-only "$LIBTIERMEM")"
done
driver=$(nm -D --defined-only "$B/lib/simcuda/libcuda.so.1" | awk '{ print $3 }')
missing=$(comm -23 <(echo "$hooks") <(echo "$driver" | sort))
check_eq "every hooked symbol is a driver symbol" "$missing" ""
check "the library does not link the driver (it loads it at run time)" \
  lacks 'libcuda' "$(readelf -d "$LIBTIERMEM" | grep NEEDED)"
check "it is linked -Bsymbolic" grep -q 'SYMBOLIC' <<<"$(readelf -d "$LIBTIERMEM")"
done_testing
