#!/usr/bin/env bash
# The managed baseline: TIERMEM_POLICY=managed turns every allocation that would be chunked
# into managed memory, counted and recorded as such; managed-advised also prefers the
# device for each and marks read-mostly exactly the allocations the host filled before the
# first kernel launch. Every allocation path still works and frees.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
SIM=(SIMCUDA_MEM=64M SIMCUDA_LOG=info)

# 96 MiB in 8 MiB pieces on a 64 MiB device; each piece is filled, then a kernel runs on it
for policy in managed managed-advised; do
  if ! start_held "${SIM[@]}" TIERMEM_POLICY=$policy TIERMEM_LOG=debug -- "$PROBE" pieces 96M 8M; then
    check "$policy: the probe starts ($(tail -n 3 "$HELD_OUT"))" false
    continue
  fi
  json=$("$TIERMEM_STAT" --json "$HELD_PID")
  check_eq "$policy: twelve managed allocations, 96 MiB" \
    "$(json_value "$json" managed_count) $(json_value "$json" managed_bytes)" "12 100663296"
  check_eq "$policy: nothing chunked, nothing in the lower tiers" \
    "$(json_value "$json" tiered_count) $(json_tier "$json" cxl used) $(json_tier "$json" ddr used)" "0 0 0"
  check_eq "$policy: every record says managed" "$(grep -c '"managed":true' <<<"$json")" 12
  check "$policy: the stats region names the policy" grep -q "\"policy\":\"$policy\"" <<<"$json"
  read_mostly=$(grep -c '"read_mostly":true' <<<"$json")
  release_held
  check_eq "$policy: a model larger than the device runs, every byte checked" \
    "$HELD_RC $(grep -c '^freed' "$HELD_OUT")" "0 1"
  if [ "$policy" = managed ]; then
    check_eq "managed: no advice" "$read_mostly $(grep -c 'preferred on the device' "$HELD_OUT")" "0 0"
  else
    # only the first piece is filled before the first launch
    check_eq "managed-advised: one allocation read-mostly" "$read_mostly" 1
    check_eq "managed-advised: the read-mostly line names the rule" \
      "$(grep -c 'read-mostly (filled from the host before the first kernel launch)$' "$HELD_OUT")" 1
    check_eq "managed-advised: every allocation prefers the device" \
      "$(grep -c 'bytes of managed memory, preferred on the device' "$HELD_OUT")" 12
  fi
done

# every allocation path (pitch, async in both stream forms, pool, the program's own managed)
out=$(under_tiermem "${SIM[@]}" TIERMEM_POLICY=managed-advised TIERMEM_STATS="$SCRATCH/paths" \
      -- "$PROBE" paths 2>&1); rc=$?
check_eq "every allocation path works under managed-advised" "$rc $(grep -c '^paths ok' <<<"$out")" "0 1"
json=$("$TIERMEM_STAT" --json "$SCRATCH/paths")
check_eq "every allocation was counted and freed" \
  "$(json_value "$json" alloc_total) $(json_value "$json" free_total) $(json_value "$json" managed_count)" "9 9 0"

# small allocations still go to HBM as before
out=$(under_tiermem "${SIM[@]}" TIERMEM_POLICY=managed TIERMEM_STATS="$SCRATCH/small" \
      -- "$PROBE" pieces 4M 1M 2>&1); rc=$?
json=$("$TIERMEM_STAT" --json "$SCRATCH/small")
check_eq "allocations below TIERMEM_MIN_TIERED stay plain device memory" \
  "$rc $(json_value "$json" alloc_total) $(grep -c '"managed":true' <<<"$json")" "0 4 0"

out=$(under_tiermem "${SIM[@]}" TIERMEM_POLICY=managed-hinted -- "$PROBE" pieces 4M 2M 2>&1); rc=$?
check "a misspelt policy is named with what it accepts" \
  grep -q "TIERMEM_POLICY='managed-hinted' is not valid: expected size, heat, managed or managed-advised" <<<"$out"
done_testing
