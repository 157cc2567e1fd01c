#!/usr/bin/env bash
# The CUDA kernels (kernels/*.cu) without a GPU: compiled for the CPU through
# tests/kernels/cuda_emu.h (threads of a block as coroutines, real barriers and warp
# shuffles) and run by tests/gpu/kernel_check on simcuda against the C twins, with the
# tolerances the GPU run uses. It checks the CUDA code's indexing, reductions and
# barriers here; the GPU run (tests/gpu/run.sh) checks the real compiler and hardware.
source "$(dirname "$0")/../lib/tap.sh"
CHECK=$B/tests/gpu/kernel_check
TWINS=$B/lib/libtiermem-kernels.so
EMU=$B/tests/kernels/libtiermem-kernels-cuda-emu.so
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_LIBRARY_PATH=$B/lib/simcuda timeout 600 "$CHECK" "$TWINS" --module "$EMU" --small >"$log" 2>&1
rc=$?
grep '^#' "$log"
check "kernel_check of the emulated CUDA kernels exits 0" test "$rc" -eq 0
check "it ran more than 80 kernel checks" test "$(grep -c '^ok ' "$log")" -gt 80
check_eq "failed kernel checks" "$(grep -c '^not ok' "$log")" "0"
grep '^not ok\|Bail out\|cuda_emu:' "$log" | sed 's/^/# /'
# The largest difference seen, for the record (a fraction of each check's tolerance).
worst=$(sed -n 's/.* is \([0-9.e+-]*\) of its tolerance.*/\1/p' "$log" | sort -g | tail -1)
echo "# largest difference, as a fraction of its tolerance: ${worst:-none}"
done_testing
