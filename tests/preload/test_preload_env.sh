#!/usr/bin/env bash
# The environment: memory-info views, limits, tier order, rules, TIERMEM_DISABLE, logging,
# the stats switch, and every variable given a bad value (one named line, pure
# pass-through, the program's own exit status).
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
MIB=$((1 << 20))
# Placement, limits and views as `size` places (`heat` would add its HBM staging ring)
SIM=(SIMCUDA_MEM=512M SIMCUDA_NUMA_NODES=0,1 TIERMEM_POLICY=size)

# ---------------------------------------------------------------- memory-info views
lines() { grep '^info ' <<<"$1" | sed -n "$2p"; }
phys=$(under_tiermem "${SIM[@]}" TIERMEM_HBM_LIMIT=256M TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=1G \
       TIERMEM_DDR_LIMIT=256M TIERMEM_MEMINFO=physical -- "$PROBE" meminfo 64M 600M 2>&1)
avail=$(under_tiermem "${SIM[@]}" TIERMEM_HBM_LIMIT=256M TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=1G \
       TIERMEM_DDR_LIMIT=256M -- "$PROBE" meminfo 64M 600M 2>&1)
virt=$(under_tiermem "${SIM[@]}" TIERMEM_HBM_LIMIT=256M TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=1G \
       TIERMEM_DDR_LIMIT=256M TIERMEM_MEMINFO=virtual -- "$PROBE" meminfo 64M 600M 2>&1)
plain=$(without_tiermem "${SIM[@]}" -- "$PROBE" meminfo 64M 2>&1)
check_eq "physical view at start: the HBM limit, free less the 4 MiB reserve chunks may not use" \
  "$(lines "$phys" 1)" "info $((252 * MIB)) $((256 * MIB)) $((256 * MIB))"
check_eq "physical view after 64 MiB" "$(lines "$phys" 2)" "info $((188 * MIB)) $((256 * MIB)) $((256 * MIB))"
# 600 MiB more: HBM takes what the 4 MiB reserve leaves (188 MiB), the rest spills
check_eq "physical view after 600 MiB more: nothing a chunked allocation could take is free" \
  "$(lines "$phys" 3)" "info 0 $((256 * MIB)) $((256 * MIB))"
check_eq "physical view after freeing everything" "$(lines "$phys" 4)" "$(lines "$phys" 1)"
# One view: cuDeviceTotalMem before any context, and every total inside one, agree.
same_totals() { # same_totals OUTPUT: "before" and every total of the "info" lines, once each
  { grep '^before ' <<<"$1" | cut -d' ' -f2; grep '^info ' <<<"$1" | cut -d' ' -f3,4 | tr ' ' '\n'; } | sort -u | tr '\n' ' '
}
check_eq "physical view: cuDeviceTotalMem before a context is the total in it, and never changes" \
  "$(same_totals "$phys")" "$((256 * MIB)) "
check_eq "virtual view: cuDeviceTotalMem before a context is HBM plus the lower tiers already" \
  "$(same_totals "$virt")" "$((1536 * MIB)) "
check_eq "available view: the same total before and inside a context" "$(same_totals "$avail")" "$((256 * MIB)) "
check_eq "virtual view at start: HBM plus the CXL and DDR limits" "$(lines "$virt" 1)" \
  "info $((1536 * MIB)) $((1536 * MIB)) $((1536 * MIB))"
check_eq "virtual view after 664 MiB" "$(lines "$virt" 3)" "info $((872 * MIB)) $((1536 * MIB)) $((1536 * MIB))"
check_eq "available view (the default) after 664 MiB: HBM full of chunks that can move down, all free" \
  "$(lines "$avail" 3)" "info $((256 * MIB)) $((256 * MIB)) $((256 * MIB))"
check_eq "available view after freeing everything: HBM's limit, all free" "$(lines "$avail" 4)" \
  "info $((256 * MIB)) $((256 * MIB)) $((256 * MIB))"
check_eq "without the interposer the driver's own answer" "$(lines "$plain" 1)" \
  "info $((512 * MIB)) $((512 * MIB)) $((512 * MIB))"

# ---------------------------------------------------------------- placement settings
# Runs `probe pieces TOTAL PIECE` held, and sets $json to tiermem-stat's view of it.
held_json() {
  json=""
  if start_held "$@"; then json=$("$TIERMEM_STAT" --json "$HELD_PID" 2>&1); fi
  release_held
  if ! grep -q '"tiers"' <<<"$json"; then # say why on the way to the failing check
    sed 's/^/# /' <<<"$json"; sed 's/^/# probe: /' "$HELD_OUT"
  fi
}
held_json "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_RULES='size>=32M=ddr' -- "$PROBE" pieces 128M 32M
check_eq "rule size>=32M=ddr: every chunk in ddr" \
  "$(json_tier "$json" hbm chunks) $(json_tier "$json" cxl chunks) $(json_tier "$json" ddr chunks)" "0 0 64"
held_json "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_RULES='size<4M=cxl' -- "$PROBE" pieces 8M 1M
check_eq "rule size<4M=cxl: eight 1 MiB allocations chunked in cxl, none small" \
  "$(json_tier "$json" cxl chunks) $(json_value "$json" small_count)" "8 0"
held_json "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=64M TIERMEM_TIER_ORDER=cxl,hbm -- \
  "$PROBE" pieces 128M 64M
check_eq "tier order cxl,hbm: cxl fills first" "$(json_tier "$json" cxl chunks) $(json_tier "$json" hbm chunks)" "32 32"
# HBM 128 MiB less its default reserve (1/64: 2 MiB)
held_json "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_HBM_LIMIT=128M TIERMEM_TIER_ORDER=hbm,ddr -- \
  "$PROBE" pieces 256M 64M
check_eq "tier order hbm,ddr: cxl gets nothing" \
  "$(json_tier "$json" hbm used) $(json_tier "$json" cxl used) $(json_tier "$json" ddr used)" \
  "$((126 * MIB)) 0 $((130 * MIB))"
check_eq "the order and limits are in the stats" "$(grep -o '"tier_order":"[a-z,]*"' <<<"$json")" '"tier_order":"hbm,ddr"'

held_json "${SIM[@]}" TIERMEM_MIN_TIERED=16M -- "$PROBE" pieces 64M 8M
check_eq "TIERMEM_MIN_TIERED=16M: 8 MiB allocations pass through to HBM, counted" \
  "$(json_value "$json" small_count) $(json_value "$json" tiered_count) $(json_tier "$json" hbm used)" "8 0 $((64 * MIB))"
held_json "${SIM[@]}" TIERMEM_HBM_LIMIT=256M TIERMEM_HBM_RESERVE=64M TIERMEM_DDR_NODE=1 -- "$PROBE" pieces 256M 64M
check_eq "TIERMEM_HBM_RESERVE=64M: chunked allocations leave 64 MiB of HBM free" \
  "$(json_tier "$json" hbm used) $(json_value "$json" hbm_reserve)" "$((192 * MIB)) $((64 * MIB))"
check_eq "TIERMEM_DDR_NODE=1: the DDR tier is node 1 and takes the rest" \
  "$(json_tier "$json" ddr node) $(json_tier "$json" ddr used)" "1 $((64 * MIB))"

out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_HBM_LIMIT=128M TIERMEM_CXL_LIMIT=64M \
      TIERMEM_DDR_LIMIT=64M -- "$PROBE" pieces 256M 64M 2>&1); rc=$?
check_eq "limits: 252 MiB of room cannot take a 4th 64 MiB piece (exit 2)" "$rc" 2
check "limits: the 4th piece gets CUDA_ERROR_OUT_OF_MEMORY" \
  grep -q 'allocation 4 of 4 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out"
check "limits: the three pieces already allocated are intact" grep -q 'the 3 earlier pieces are intact' <<<"$out"

# ---------------------------------------------------------------- switches and logging
out=$(under_tiermem SIMCUDA_MEM=256M TIERMEM_DISABLE=1 -- "$PROBE" pieces 768M 64M 2>&1); rc=$?
check "TIERMEM_DISABLE=1 passes everything through: the 5th piece fails as without it" \
  grep -q 'allocation 5 of 12 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out"
check_eq "TIERMEM_DISABLE=1 prints nothing at the default log level" "$(grep -c tiermem <<<"$out")" 0

out=$(under_tiermem "${SIM[@]}" TIERMEM_CXL_NODE=1 TIERMEM_LOG=info -- "$PROBE" exit 0 2>&1)
check "TIERMEM_LOG=info: one start-up line describes every tier" \
  grep -qE '^tiermem: tiers: hbm 512 MiB \(device 0, reserve 8 MiB\), cxl .* \(node 1, TIERMEM_CXL_NODE\), ddr .* \(node 0, ' <<<"$out"
check "TIERMEM_LOG=info: the exit line gives the peak per tier" \
  grep -qE '^tiermem: exit: peak hbm 4.00 MiB, cxl 0 B, ddr 0 B; 2 allocations' <<<"$out"
out=$(under_tiermem "${SIM[@]}" TIERMEM_LOG=debug TIERMEM_LOG_FILE="$SCRATCH/log" -- "$PROBE" exit 0 2>&1)
check "TIERMEM_LOG_FILE takes the lines off standard error" lacks tiermem "$out"
check "TIERMEM_LOG_FILE holds the debug lines" grep -q '^tiermem: debug: 0x.*: 4194304 bytes in 2 chunks' "$SCRATCH/log"

out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/kept" -- "$PROBE" exit 0 2>&1)
check "TIERMEM_STATS=path keeps the final state after exit" \
  grep -q '"state":"exited"' <<<"$("$TIERMEM_STAT" --json "$SCRATCH/kept")"
check_eq "the kept region shows the peak" "$(json_tier "$("$TIERMEM_STAT" --json "$SCRATCH/kept")" hbm peak)" \
  $((4 * MIB + 512))
out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS=off TIERMEM_LOG=info -- "$PROBE" exit 0 2>&1)
check "TIERMEM_STATS=off: no region is made" lacks 'stats region' "$out"
check "without TIERMEM_STATS=off the region is announced at info" \
  grep -q "^tiermem: stats region $REGIONS/tiermem\." <<<"$(under_tiermem "${SIM[@]}" TIERMEM_LOG=info -- "$PROBE" exit 0 2>&1)"

# ---------------------------------------------------------------- bad values
long=$(printf '/x%.0s' $(seq 700))
bad=(
  "TIERMEM_DISABLE=2" "TIERMEM_HBM_LIMIT=12Q" "TIERMEM_CXL_LIMIT=-1" "TIERMEM_DDR_LIMIT=1.5"
  "TIERMEM_HBM_RESERVE=lots" "TIERMEM_CXL_NODE=2000" "TIERMEM_DDR_NODE=x" "TIERMEM_MIN_TIERED=0"
  "TIERMEM_TIER_ORDER=hbm,gpu" "TIERMEM_POLICY=lru" "TIERMEM_RULES=size>1G=cxl" "TIERMEM_MEMINFO=both"
  "TIERMEM_LOG=loud" "TIERMEM_LOG_FILE=$long" "TIERMEM_STATS=$long" "TIERMEM_DRIVER=$long"
)
for setting in "${bad[@]}"; do
  name=${setting%%=*}
  out=$(under_tiermem SIMCUDA_MEM=256M "$setting" -- "$PROBE" exit 7 2>&1); rc=$?
  check_eq "$name bad: the program's own exit status" "$rc" 7
  check_eq "$name bad: exactly one line, naming it" "$(grep -c "^tiermem: $name='.*' is not valid: expected .*; tiering is disabled" <<<"$out") $(grep -c . <<<"$out")" "1 1"
  out=$(under_tiermem SIMCUDA_MEM=256M "$setting" -- "$PROBE" pieces 768M 64M 2>&1)
  check "$name bad: calls pass through (the 5th piece fails as without the interposer)" \
    grep -q 'allocation 5 of 12 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out"
done
# values only found wrong when used
out=$(under_tiermem SIMCUDA_MEM=256M TIERMEM_LOG_FILE=/nonexistent/dir/log -- "$PROBE" pieces 768M 64M 2>&1); rc=$?
check "TIERMEM_LOG_FILE that cannot be opened: one named line" \
  grep -q "^tiermem: TIERMEM_LOG_FILE='/nonexistent/dir/log' cannot be opened (No such file or directory); tiering is disabled" <<<"$out"
check "TIERMEM_LOG_FILE that cannot be opened: calls pass through" \
  grep -q 'allocation 5 of 12 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out"
out=$(under_tiermem SIMCUDA_MEM=256M TIERMEM_DRIVER=/nonexistent/libcuda.so -- "$PROBE" pieces 768M 64M 2>&1)
check "TIERMEM_DRIVER that cannot be loaded: one named line" \
  grep -q "^tiermem: error: TIERMEM_DRIVER='/nonexistent/libcuda.so' is not a usable CUDA driver" <<<"$out"
check "TIERMEM_DRIVER that cannot be loaded: the default driver, passed through" \
  grep -q 'allocation 5 of 12 failed: CUDA_ERROR_OUT_OF_MEMORY' <<<"$out"
out=$(under_tiermem TIERMEM_HBM_LIMIT=12Q -- /bin/sh -c 'exit 5' 2>&1); rc=$?
check_eq "a program that never uses CUDA keeps its exit status" "$rc" 5
check "and hears of the bad value once" test "$(grep -c "TIERMEM_HBM_LIMIT='12Q'" <<<"$out")" -eq 1
done_testing
