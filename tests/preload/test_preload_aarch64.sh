#!/usr/bin/env bash
# The aarch64 (GH200) build: libtiermem.so, simcuda and the preload test programs
# cross-built with Debian's aarch64 toolchain into build-aarch64/, and the preload tests
# that drive them run under qemu-user (the dlsym and dlvsym entry points are assembly per
# architecture). `make deps-aarch64` installs the toolchain; without it this says so and
# skips. `make test-aarch64` runs more of them (AARCH64_TESTS=all).
source "$(dirname "$0")/../lib/tap.sh"
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
SYSROOT=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}
CROSS_O=build-aarch64
# make test runs the dlsym and export checks; make test-aarch64 sets AARCH64_TESTS=all
if [ "${AARCH64_TESTS:-}" = all ]; then
  TESTS=(test_preload_doors test_preload_exports test_preload_glibc test_preload_managed test_preload_devices)
else
  TESTS=(test_preload_doors test_preload_exports test_preload_glibc)
fi

missing=""
command -v "$CROSS_CC" >/dev/null || missing="$missing $CROSS_CC"
command -v qemu-aarch64 >/dev/null || missing="$missing qemu-aarch64"
for lib in libnuma.so libjansson.so liburing.so; do
  [ -e "/usr/lib/aarch64-linux-gnu/$lib" ] || missing="$missing $lib (arm64)"
done
[ -e /usr/include/aarch64-linux-gnu/sys/sdt.h ] || missing="$missing sys/sdt.h (arm64)"
if [ -n "$missing" ]; then
  skip "the aarch64 build and its preload tests under qemu" "no aarch64 toolchain here:$missing (make deps-aarch64 installs it)"
  done_testing; exit
fi
if [ "${SAN:-0}" = 1 ]; then
  skip "the aarch64 build and its preload tests under qemu" "SAN=1: the sanitizer runtimes are not cross-built"
  done_testing; exit
fi

cd "$TM_ROOT"
targets="$CROSS_O/lib/libtiermem.so $CROSS_O/lib/simcuda/libcuda.so.1 $CROSS_O/tests/preload/kernels.so"
for p in probe doors devices; do targets="$targets $CROSS_O/tests/preload/$p"; done
make --no-print-directory -j2 O=$CROSS_O CC="$CROSS_CC" $targets >"$B/aarch64-build.log" 2>&1
check "libtiermem.so and the preload test programs cross-build for aarch64 (log: $B/aarch64-build.log)" test $? -eq 0
check "the library is an aarch64 ELF" grep -q 'AArch64' <<<"$(readelf -h $CROSS_O/lib/libtiermem.so 2>&1)"
for t in "${TESTS[@]}"; do
  out=$(TM_EMULATOR="qemu-aarch64 -L $SYSROOT" TM_HOST_B="$B" O=$CROSS_O LD_LIBRARY_PATH= \
        bash "tests/preload/$t.sh" 2>&1)
  check "$t passes on aarch64 under qemu-user" test $? -eq 0
  grep '^not ok' <<<"$out" | sed "s/^/# $t: /"
done
done_testing
