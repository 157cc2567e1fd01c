#!/usr/bin/env bash
# The GPU check program (tests/gpu/kernel_check) on simcuda: it loads the twin library as
# the "device" module and launches every kernel through the driver API (cuModuleLoad,
# cuModuleGetFunction, cuLaunchKernel with kernelParams), then compares with the twins
# called directly. Both sides run the same C code, so every comparison must be exact;
# this checks the launch path, the argument packing and the program the GPU run uses.
source "$(dirname "$0")/../lib/tap.sh"
CHECK=$B/tests/gpu/kernel_check
TWINS=$B/lib/libtiermem-kernels.so
SIM=$B/lib/simcuda
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_LIBRARY_PATH=$SIM "$CHECK" "$TWINS" --module "$TWINS" --small >"$log" 2>&1
rc=$?
sed -n 's/^\(#.*\)/\1/p' "$log"
check "kernel_check on simcuda exits 0" test "$rc" -eq 0
check "it ran more than 80 kernel checks" test "$(grep -c '^ok ' "$log")" -gt 80
check_eq "failed kernel checks" "$(grep -c '^not ok' "$log")" "0"
check "every comparison is exact on simcuda (0 of its tolerance)" \
  bash -c "! grep '^ok .*of its tolerance' '$log' | grep -qv 'is 0 of its tolerance'"
grep '^not ok\|Bail out' "$log" | sed 's/^/# /'
done_testing
