#!/usr/bin/env bash
# Every allocation path (pitch, async in both stream forms, pools, managed), address ranges
# and pointer attributes, release at cuMemFree / context destruction / exit, 8 threads of
# mixed allocations, and fork.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
SIM=(SIMCUDA_MEM=128M SIMCUDA_NUMA_NODES=0,1 SIMCUDA_LOG=info)

out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_STATS="$SCRATCH/paths" -- "$PROBE" paths 2>&1); rc=$?
check_eq "pitch, async, ptsz, pool and managed allocations work and check" "$rc $(grep -c '^paths ok' <<<"$out")" "0 1"
json=$("$TIERMEM_STAT" --json "$SCRATCH/paths")
for symbol in cuMemAllocPitch_v2 cuMemAllocAsync cuMemAllocAsync_ptsz cuMemFreeAsync cuMemFreeAsync_ptsz \
              cuMemAllocFromPoolAsync cuMemAllocManaged; do
  check "$symbol went through its wrapper" test "$(json_value "$json" "$symbol")" -gt 0
done
# 2 pitched, 4 async (two sizes, two stream forms), 2 from the pool, 1 managed
check_eq "every allocation was counted and freed" "$(json_value "$json" alloc_total) $(json_value "$json" free_total)" "9 9"
check "nothing in use at exit" grep -q 'device memory in use 0 bytes' <<<"$out"

for size in 6M 4096; do
  out=$(under_tiermem "${SIM[@]}" -- "$PROBE" attrs $size 2>&1); rc=$?
  check_eq "address range and pointer attributes of a $size allocation under the interposer" "$rc" 0
  out=$(without_tiermem "${SIM[@]}" -- "$PROBE" attrs $size 2>&1); rc=$?
  check_eq "the same checks hold without it" "$rc" 0
done

# (no staging ring: the heat policy's ring belongs to the device, not to the context)
out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_STREAM=off -- "$PROBE" ctx 2>&1); rc=$?
check_eq "a destroyed context takes its allocations along" "$rc $(grep -c '^after destroy: chunked 0, small 0, hbm 0 bytes' <<<"$out")" "0 1"

# What the program leaves allocated is the driver's to take back at exit, as without the
# interposer: C++ static destructors may still use it after tiermem's exit handler.
for what in "8M 3" "4K 3"; do
  out=$(without_tiermem "${SIM[@]}" -- "$PROBE" leak $what 2>&1)
  check "without the interposer simcuda reports leaked memory ($what)" lacks 'device memory in use 0 bytes' "$out"
  out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_LOG=info -- "$PROBE" leak $what 2>&1)
  pid=$(grep -o "stats region $REGIONS/tiermem\.[0-9]*" <<<"$out" | sed 's/.*\.//')
  check "under the interposer it is left to the driver too ($what)" lacks 'device memory in use 0 bytes' "$out"
  check "and the stats region is gone ($what)" test -n "$pid" -a ! -e "$REGIONS/tiermem.$pid"
done
for size in 6M 4096; do
  out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_HBM_LIMIT=4M TIERMEM_LOG=info -- "$PROBE" late $size 2>&1)
  check "an exit handler running after tiermem's reads a $size allocation right" \
    grep -q '^late read: CUDA_SUCCESS, 0 bytes wrong$' <<<"$out"
  check "  and frees it" grep -q '^late free: CUDA_SUCCESS$' <<<"$out"
  check "  nothing is left at the driver's exit" grep -q 'device memory in use 0 bytes' <<<"$out"
done

out=$(under_tiermem SIMCUDA_MEM=64M SIMCUDA_NUMA_NODES=0,1 SIMCUDA_LOG=info TIERMEM_CXL_NODE=1 \
      TIERMEM_STATS="$SCRATCH/threads" -- "$PROBE" threads 8 10000 2>&1); rc=$?
check_eq "8 threads x 10000 mixed allocations and frees, data checked" "$rc $(grep -c '^threads 8 x 10000 operations: 0 failed' <<<"$out")" "0 1"
json=$("$TIERMEM_STAT" --json "$SCRATCH/threads")
check "the threads spilled past HBM" test "$(json_tier "$json" cxl peak)" -gt 0
check_eq "allocations and frees balance" "$(json_value "$json" alloc_total)" "$(json_value "$json" free_total)"
check_eq "nothing is in use at the end" "$(json_tier_sum "$json" used)" 0
check "no device memory left" grep -q 'device memory in use 0 bytes' <<<"$out"

out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 -- "$PROBE" fork 2>&1); rc=$?
check_eq "a forked child allocates on its own" "$(grep -c '^child before init: 0' <<<"$out")" 1
check "a child leaving does not touch the parent's memory or region" \
  grep -q "^child of a live parent: 0, parent's region kept" <<<"$out"
check_eq "fork run ends well" "$rc $(grep -c '^fork ok' <<<"$out")" "0 1"
done_testing
