#!/usr/bin/env bash
# The program's own VMM use beyond HBM, and devices without HOST_NUMA in the VMM API
# (lower tiers as pinned host memory registered with the device).
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
MIB=$((1 << 20))
# HBM figures as `size` places (`heat` would add the 4 MiB of its staging ring)
SIM=(SIMCUDA_MEM=128M SIMCUDA_NUMA_NODES=0,1 TIERMEM_POLICY=size)

# ---------------------------------------------------------------- cuMemCreate at the device
out=$(without_tiermem "${SIM[@]}" -- "$PROBE" vmm 32M 8 2>&1); rc=$?
check_eq "without the interposer the 5th 32 MiB handle does not fit 128 MiB" "$rc $(grep -c 'cuMemCreate 5 of 8 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out")" "2 1"
out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_STATS="$SCRATCH/vmm" -- "$PROBE" vmm 32M 8 2>&1); rc=$?
check_eq "under the interposer 8 handles are created, mapped and checked" "$rc" 0
check "each handle reports the DEVICE location it was asked for, and its mapping device memory" grep -q '^vmm ok: 8 handles' <<<"$out"
json=$("$TIERMEM_STAT" --json "$SCRATCH/vmm")
# HBM 128 MiB less its 2 MiB reserve holds three 32 MiB handles; five go to CXL
check_eq "three handles in hbm, five in cxl (peaks)" "$(json_tier "$json" hbm peak) $(json_tier "$json" cxl peak)" \
  "$((96 * MIB)) $((160 * MIB))"
check_eq "all released: nothing in use at exit" "$(json_tier_sum "$json" used) $(json_value "$json" free_total)" "0 8"

# ---------------------------------------------------------------- cuMemRetainAllocationHandle
# chunked memory is cuMemAlloc memory to the program: no physical handle of tiermem's comes
# out; the program's own handle (16 MiB, in CXL past the 8 MiB of HBM) stays charged, and
# reports the location asked for, while a retained reference is held
out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_HBM_LIMIT=8M TIERMEM_MIN_TIERED=1M -- \
  "$B/tests/preload/vmm_retain" 16M 2>&1); rc=$?
check_eq "retain: the program runs to its end" "$rc" 0
check "retain: inside chunked memory it is CUDA_ERROR_INVALID_VALUE" \
  grep -q '^chunked: retain CUDA_ERROR_INVALID_VALUE$' <<<"$out"
check "retain: the chunked memory still holds its bytes" grep -q '^chunked: bytes ok$' <<<"$out"
for c in A B; do
  what=$([ $c = A ] && echo "retained, then released once" || echo "released while mapped, then retained")
  check_eq "retain ($what): the program's handle, at the location it asked for" \
    "$(sed -n "s/^$c: retain //p" <<<"$out")" "CUDA_SUCCESS same yes location DEVICE"
  check_eq "retain ($what): unmapped, still charged while retained" \
    "$(sed -n "s/^$c: used while retained //p" <<<"$out")" $((16 * MIB))
  check_eq "retain ($what): uncharged at the last release" "$(sed -n "s/^$c: used after release //p" <<<"$out")" 0
done

# ---------------------------------------------------------------- no HOST_NUMA in the VMM API
if start_held "${SIM[@]}" SIMCUDA_MEM=256M SIMCUDA_HOST_NUMA_VMM=0 SIMCUDA_LOG=info TIERMEM_CXL_NODE=1 \
     TIERMEM_CXL_LIMIT=300M TIERMEM_LOG=info -- "$PROBE" pieces 768M 64M; then
  json=$("$TIERMEM_STAT" --json "$HELD_PID")
  release_held
  check_eq "pinned-host fallback: the program runs and checks every byte" "$HELD_RC" 0
  check_eq "the stats say the lower tiers are pinned host memory" "$(grep -o '"backing":"[a-z_]*"' <<<"$json")" \
    '"backing":"pinned_host"'
  # whole allocations: three pieces fit HBM (252 MiB room), the other nine live in host tiers
  check_eq "whole pieces: 192 MiB in hbm, 576 MiB in cxl and ddr" \
    "$(json_tier "$json" hbm used) $(( $(json_tier "$json" cxl used) + $(json_tier "$json" ddr used) ))" \
    "$((192 * MIB)) $((576 * MIB))"
  check_eq "nine records are flagged pinned host" "$(grep -c '"pinned_host":true' <<<"$json")" 9
  check "the start-up line says these allocations cannot migrate" \
    grep -q 'lower tiers as pinned host memory (no HOST_NUMA in the VMM API: they cannot migrate)' "$HELD_OUT"
  check "nothing left in use at exit" grep -q 'device memory in use 0 bytes' "$HELD_OUT"
else
  cat "$HELD_OUT"; release_held
  check "pinned-host fallback: the program reached its hold point" false
fi
out=$(under_tiermem "${SIM[@]}" SIMCUDA_HOST_NUMA_VMM=0 TIERMEM_CXL_NODE=1 -- "$PROBE" vmm 32M 8 2>&1); rc=$?
check_eq "pinned-host fallback: handles beyond HBM get the driver's own answer" \
  "$rc $(grep -c 'cuMemCreate 5 of 8 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out")" "2 1"
done_testing
