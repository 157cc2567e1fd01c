#!/usr/bin/env bash
# Same-address chunk migration under load: 8 streams (asynchronous, SIMCUDA_ASYNC=1)
# check and rewrite checksummed data in a chunked allocation, and read it back with
# device-to-host copies, and set and copy a chunk with memsets and device-to-device
# copies, while chunks move between
# HBM, CXL and DDR. No byte is corrupted, nothing leaks (simcuda has no physical
# allocation or reservation live at exit), and a driver call failing mid-migration
# leaves the data right. `make stress` runs the same for 10^6 migrations.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
STRESS=$B/tests/preload/migrate_stress
SIM=(SIMCUDA_MEM=24M SIMCUDA_NUMA_NODES=0,1 SIMCUDA_ASYNC=1 SIMCUDA_HOST_TIME=0 SIMCUDA_LOG=info TIERMEM_CXL_NODE=1)
MIGRATIONS=${TM_STRESS_MIGRATIONS:-500}

out=$(without_tiermem "${SIM[@]}" -- "$STRESS" 10 2>&1); rc=$?
check_eq "without the interposer it says tiermem_migrate is missing" \
  "$rc $(grep -c 'tiermem_migrate is not there' <<<"$out")" "2 1"

out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/stress" -- "$STRESS" "$MIGRATIONS" 8 1 2>&1); rc=$?
line=$(grep '^migrations' <<<"$out")
echo "# $line"
check_eq "$MIGRATIONS migrations under 8 streams: exit 0, 0 corrupted bytes, 0 failed" \
  "$rc $(sed -E 's/.* failed ([0-9]+) .* corrupted bytes ([0-9]+)/\1 \2/' <<<"$line")" "0 0 0"
check "the kernels ran while chunks moved" test "$(sed -E 's/.* launches ([0-9]+) .*/\1/' <<<"$line")" -gt 8
check "device-to-host read-backs ran while chunks moved (and found every byte right)" \
  test "$(sed -E 's/.* reads ([0-9]+) .*/\1/' <<<"$line")" -gt 4
check "no physical allocation or reservation leaked" \
  grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' <<<"$out"
echo "# $("$TIERMEM_STAT" "$SCRATCH/stress" | grep '^migrations')"
json=$("$TIERMEM_STAT" --json "$SCRATCH/stress")
# The program counts a move into a chunk's tier only once it knows that tier: not before a
# chunk's first move, nor after a refused call, which may have moved part of its run of up
# to 4 chunks; it counts such a move all the same, so the stats may be that much lower.
moved=$(sed -E 's/^migrations ([0-9]+) .*/\1/' <<<"$line")
refused=$(sed -E 's/.* refused ([0-9]+) .*/\1/' <<<"$line")
check "the stats count the chunks moved (all but 12 first moves and 4 per refused call at most)" \
  test "$(json_value "$json" migrations)" -ge $((moved - 12 - 4 * refused))
check "a migration found a pooled chunk" test "$(json_value "$json" pool_hits)" -gt 0
check_eq "every tier is empty at the end" "$(json_tier_sum "$json" used)" 0

# Ping-pongs: a chunk sent back to the tier it left counts, one sent on to a third does not.
# hbm -> ddr -> hbm (back) -> cxl -> ddr -> cxl (back): 5 moves, 2 of them back.
out=$(under_tiermem "${SIM[@]}" TIERMEM_POLICY=size TIERMEM_STATS="$SCRATCH/path" -- "$STRESS" path ddr hbm cxl ddr cxl 2>&1); rc=$?
json=$("$TIERMEM_STAT" --json "$SCRATCH/path")
check_eq "one chunk moved hbm, ddr, hbm, cxl, ddr, cxl: 5 migrations, 2 ping-pongs" \
  "$rc $(grep -c '^path ok' <<<"$out") $(json_value "$json" migrations) $(json_value "$json" ping_pongs)" "0 1 5 2"

# One stream: fewer launches, so a migration copies again less often, and the memsets and
# device-to-device copies of the setter meet more remaps.
out=$(under_tiermem "${SIM[@]}" -- "$STRESS" "$MIGRATIONS" 1 1 2>&1); rc=$?
line=$(grep '^migrations' <<<"$out")
echo "# one stream: $line"
check_eq "$MIGRATIONS migrations under 1 stream: exit 0, 0 corrupted bytes" \
  "$rc $(sed -E 's/.* corrupted bytes ([0-9]+)/\1/' <<<"$line")" "0 0"

# A driver call failing inside a migration: the migration fails, the data does not.
for fault in cuMemcpyDtoDAsync_v2:7:CUDA_ERROR_UNKNOWN cuMemMap:40 cuMemSetAccess:30 cuMemCreate:25 cuCtxSynchronize:20; do
  out=$(under_tiermem "${SIM[@]}" SIMCUDA_FAIL="$fault" -- "$STRESS" 40 4 1 2>&1); rc=$?
  line=$(grep '^migrations' <<<"$out")
  [ "${fault%%:*}" = cuMemcpyDtoDAsync_v2 ] &&
    check "SIMCUDA_FAIL=$fault: the migration it hit failed" test "$(sed -E 's/.* failed ([0-9]+) .*/\1/' <<<"$line")" -ge 1
  check_eq "SIMCUDA_FAIL=$fault: exit 0, 0 corrupted bytes" \
    "$rc $(sed -E 's/.* corrupted bytes ([0-9]+)/\1/' <<<"$line")" "0 0"
  check "SIMCUDA_FAIL=$fault: nothing leaked" \
    grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' <<<"$out"
done
done_testing
