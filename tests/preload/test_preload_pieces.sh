#!/usr/bin/env bash
# Three times the device's memory in 64 MiB pieces: without the interposer the program
# fails with CUDA_ERROR_OUT_OF_MEMORY at the fifth piece; under it every piece is filled,
# changed by a kernel, read back and checked byte for byte, tiermem-stat shows the bytes
# per tier, and nothing is left behind at exit.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

# HBM figures as `size` places (`heat` would add the 4 MiB of its staging ring)
SIM=(SIMCUDA_MEM=256M SIMCUDA_NUMA_NODES=0,1 SIMCUDA_LOG=info TIERMEM_POLICY=size)
MIB=$((1 << 20))

out=$(without_tiermem "${SIM[@]}" -- "$PROBE" pieces 768M 64M 2>&1); rc=$?
check_eq "without the interposer the program stops with exit status 2" "$rc" 2
check "without the interposer the 5th of 12 pieces fails with CUDA_ERROR_OUT_OF_MEMORY" \
  grep -q 'allocation 5 of 12 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out"

if start_held "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=300M TIERMEM_DDR_LIMIT=1G -- \
     "$PROBE" pieces 768M 64M; then
  check "under the interposer all 12 pieces are allocated and every byte checks" \
    grep -q 'allocated 12 pieces of 67108864 bytes, every byte checked' "$HELD_OUT"
  json=$("$TIERMEM_STAT" --json "$HELD_PID")
  table=$("$TIERMEM_STAT" "$HELD_PID")
  # HBM: 256 MiB less the 4 MiB reserve; CXL: its 300 MiB limit; DDR: the rest
  check_eq "hbm holds 252 MiB" "$(json_tier "$json" hbm used)" $((252 * MIB))
  check_eq "cxl holds its 300 MiB limit" "$(json_tier "$json" cxl used)" $((300 * MIB))
  check_eq "ddr holds the remaining 216 MiB" "$(json_tier "$json" ddr used)" $((216 * MIB))
  check_eq "384 chunks of 2 MiB in all" "$(json_tier_sum "$json" chunks)" 384
  check_eq "12 chunked allocations of 768 MiB" "$(json_value "$json" tiered_count) $(json_value "$json" tiered_bytes)" \
    "12 $((768 * MIB))"
  check_eq "12 allocation records" "$(grep -c '"path":"cuMemAlloc"' <<<"$json")" 12
  check "the table names each tier with its node" grep -qE '^cxl +node1 +300 MiB +300 MiB' <<<"$table"
  check "the table lists the split allocation" grep -qE '64 MiB +30 +2 +0 +[-0-9.]+ +[a-z-]+ +cuMemAlloc' <<<"$table"
  check "the region is mode 0600" test "$(stat -c %a $REGIONS/tiermem.$HELD_PID)" = 600
  watch_out=$("$TIERMEM_STAT" --watch --interval 0.1 --count 2 "$HELD_PID")
  check_eq "--watch prints the table again each interval" "$(grep -c '^tier ' <<<"$watch_out")" 2
  release_held
  check_eq "the program exits 0" "$HELD_RC" 0
  check "it freed every piece after checking them again" grep -q '^freed' "$HELD_OUT"
  check "the stats region is removed at exit" test ! -e $REGIONS/tiermem.$HELD_PID
  check "simcuda has no device memory in use at exit" grep -q 'device memory in use 0 bytes' "$HELD_OUT"
  check "tiermem-stat says there is no region after exit" bash -c "! '$TIERMEM_STAT' $HELD_PID 2>/dev/null"
else
  cat "$HELD_OUT"
  check "the program reached its hold point under the interposer" false
fi
done_testing
