#!/usr/bin/env bash
# Pooled chunks (preload/chunk_pool.h): HBM chunks a cuMemFree releases are mapped again by
# the next chunked allocation instead of created, within the HBM limit, never shared by two
# live allocations, and never a fork child's.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
POOL_PROBE=$B/tests/preload/pool_probe
MIB=$((1 << 20))
# HBM figures as `size` places (`heat` would add the 4 MiB of its staging ring)
SIM=(SIMCUDA_MEM=256M SIMCUDA_NUMA_NODES=0,1 SIMCUDA_LOG=info TIERMEM_POLICY=size)
# simcuda counts the calls of a function a SIMCUDA_FAIL rule names; this one never fires
COUNT=(SIMCUDA_FAIL=cuMemCreate:1000000000)
created() { grep -o 'SIMCUDA_FAIL cuMemCreate: [0-9]* calls' <<<"$1" | awk '{ print $3 }'; }

# ---------------------------------------------------------------- an alloc/free loop
out=$(under_tiermem "${SIM[@]}" "${COUNT[@]}" TIERMEM_CXL_NODE=1 TIERMEM_LOG=info -- "$POOL_PROBE" loop 50 8M 2>&1); rc=$?
check_eq "50 rounds of an 8 MiB allocation, every byte checked" "$rc $(grep -c '^loop ok$' <<<"$out")" "0 1"
check "the first round creates its 4 chunks, the other 49 map them from the pool" \
  grep -q 'chunks 4 created, 196 reused from the pool$' <<<"$out"
n=$(created "$out")
check "the driver saw a handful of cuMemCreate calls, not 200 ($n)" test -n "$n" -a "${n:-999}" -lt 10
out=$(under_tiermem "${SIM[@]}" "${COUNT[@]}" TIERMEM_CXL_NODE=1 TIERMEM_LOG=info -- "$POOL_PROBE" loop 10 64M 2>&1); rc=$?
check_eq "10 rounds of 64 MiB" "$rc $(grep -c '^loop ok$' <<<"$out")" "0 1"
# the pool of a 254 MiB HBM limit holds max(8 chunks, 1/64 of it): 8 of the 32 chunks
check "64 MiB rounds reuse the 8 chunks the pool keeps" grep -q 'chunks 248 created, 72 reused from the pool$' <<<"$out"
check "nothing is left at the driver's exit" grep -q 'device memory in use 0 bytes' <<<"$out"

# ---------------------------------------------------------------- no aliasing
out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_LOG=info -- "$POOL_PROBE" alias 8M 2>&1); rc=$?
check_eq "a freed allocation's chunks back one new allocation: two live ones never overlap or share bytes" \
  "$rc $(grep -c '^alias ok$' <<<"$out")" "0 1"
check "  and the pooled chunks were reused by one of them" grep -q 'chunks 8 created, 4 reused from the pool$' <<<"$out"

# ---------------------------------------------------------------- the HBM limit
out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_HBM_LIMIT=64M TIERMEM_STATS="$SCRATCH/room" TIERMEM_LOG=info -- \
      "$POOL_PROBE" steps 32M -1 62M 2>&1); rc=$?
json=$("$TIERMEM_STAT" --json "$SCRATCH/room")
check_eq "after 32 MiB freed, 62 MiB (the HBM limit less its reserve) still fits HBM whole" \
  "$rc $(json_tier "$json" hbm used) $(json_tier "$json" cxl peak)" "0 $((62 * MIB)) 0"
check "  taking the pooled chunks" grep -q 'chunks 39 created, 8 reused from the pool$' <<<"$out"
check_eq "tiermem-stat --json counts them too" "$(json_value "$json" chunks_created) $(json_value "$json" chunks_reused)" "39 8"
check "  and the device never held more than the limit" grep -q 'peak 62.0 MiB of 256.0 MiB' <<<"$out"
# 32 MiB live and 16 MiB pooled: the third 8 MiB allocation the driver makes needs the pool's room
out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_HBM_LIMIT=64M TIERMEM_MIN_TIERED=16M \
      TIERMEM_STATS="$SCRATCH/plain" -- "$POOL_PROBE" steps 32M 16M -2 8M 8M 8M 2>&1); rc=$?
json=$("$TIERMEM_STAT" --json "$SCRATCH/plain")
check_eq "three 8 MiB allocations the driver makes fit once the pool gives its room back" \
  "$rc $(json_value "$json" small_count) $(json_tier "$json" cxl peak)" "0 3 0"
check "  and the device never held more than the 64 MiB limit" grep -q 'peak 64.0 MiB of 256.0 MiB' <<<"$out"
for view in available physical virtual; do
  out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_MEMINFO=$view -- "$POOL_PROBE" info 8M 2>&1)
  before=$(awk '$1 == "info" && $2 == "before" { print $3 }' <<<"$out")
  after=$(awk '$1 == "info" && $2 == "after" { print $3 }' <<<"$out")
  check_eq "cuMemGetInfo ($view): as much free after a free as before, the pooled chunks counted free" \
    "${after:-none}" "${before:-missing}"
done

# ---------------------------------------------------------------- fork
out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_LOG=info -- "$POOL_PROBE" fork 8M 2>&1); rc=$?
plain=$(without_tiermem "${SIM[@]}" -- "$POOL_PROBE" fork 8M 2>&1)
check_eq "a fork child gets the driver's answer, not the parent's pooled chunks" \
  "$(grep '^child alloc' <<<"$out")" "$(grep '^child alloc' <<<"$plain")"
check_eq "the parent's memory is intact and it still reuses its pool after the child left" \
  "$rc $(grep -c '^fork ok$' <<<"$out") $(grep -c 'chunks 8 created, 4 reused from the pool$' <<<"$out")" "0 1 1"
done_testing
