#!/usr/bin/env bash
# Tiers named or bounded in the environment are checked against the machine: a NUMA node
# neither the host nor the driver has is refused in one line (the tier is absent or found
# as if unset), limits stay within what a node has, and settings that conflict with the
# tiers found get one warning line each at the default log level.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
MIB=$((1 << 20))
# HBM figures as `size` places (`heat` would add the 4 MiB of its staging ring)
SIM=(SIMCUDA_MEM=64M TIERMEM_POLICY=size)

# ---------------------------------------------------------------- nodes
# Runs `probe pieces TOTAL PIECE` held; $json is tiermem-stat's view, $log what it printed.
held_json() {
  json=""
  if start_held "$@"; then json=$("$TIERMEM_STAT" --json "$HELD_PID" 2>&1); fi
  release_held
  log=$(cat "$HELD_OUT")
}
held_json "${SIM[@]}" TIERMEM_CXL_NODE=5 -- "$PROBE" pieces 128M 32M
check_eq "TIERMEM_CXL_NODE=5 on a host without it: one line names the node" \
  "$(grep -c "^tiermem: warning: TIERMEM_CXL_NODE=5: node 5 is not a NUMA node of this host (nodes [0-9,]*) and the driver does not accept it; there is no CXL tier$" <<<"$log")" 1
check_eq "  the CXL tier is absent and took nothing; DDR took the spill" \
  "$(grep -o '"name":"cxl","present":[a-z]*' <<<"$json") $(json_tier "$json" cxl peak) $(json_tier "$json" ddr chunks)" \
  '"name":"cxl","present":false 0 33'
held_json "${SIM[@]}" TIERMEM_DDR_NODE=7 -- "$PROBE" pieces 128M 32M
check_eq "TIERMEM_DDR_NODE=7: one line, and the DDR tier is found as if unset" \
  "$(grep -c "^tiermem: warning: TIERMEM_DDR_NODE=7: node 7 is not a NUMA node .* the DDR tier is found as if it were not set$" <<<"$log") $(json_tier "$json" ddr node)" \
  "1 0"
check "  the process keeps VMM backing (not pinned host memory)" grep -q '"backing":"vmm"' <<<"$json"
held_json "${SIM[@]}" SIMCUDA_NUMA_NODES=0,1 TIERMEM_CXL_NODE=1 -- "$PROBE" pieces 128M 32M
check_eq "a node the driver emulates (SIMCUDA_NUMA_NODES) is accepted without a word" \
  "$(grep -v 'HBM is full' <<<"$log" | grep -c warning) $(grep -o '"name":"cxl","present":[a-z]*,"node":[0-9]*' <<<"$json")" \
  '0 "name":"cxl","present":true,"node":1'

# The default limits of an emulated node and the DDR tier share the host's memory: under the
# virtual view, what lies beyond HBM is at most half of what the host has available.
out=$(under_tiermem "${SIM[@]}" SIMCUDA_NUMA_NODES=0,1 TIERMEM_CXL_NODE=1 TIERMEM_MEMINFO=virtual -- "$PROBE" meminfo 2M 2>&1)
total=$(grep '^info ' <<<"$out" | head -1 | cut -d' ' -f3)
available=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
check "virtual view with an emulated CXL node: lower tiers total at most half the host's available memory ($(((total - 64 * MIB) / MIB)) MiB of $((available / MIB)) MiB)" \
  test "$((total - 64 * MIB))" -le "$((available / 2 + 64 * MIB))"
out=$(under_tiermem "${SIM[@]}" TIERMEM_DDR_LIMIT=100T -- "$PROBE" exit 0 2>&1)
check_eq "TIERMEM_DDR_LIMIT=100T: one line, the limit is what node 0 has" \
  "$(grep -c '^tiermem: warning: TIERMEM_DDR_LIMIT=100 TiB is more than node 0 has (.*); using ' <<<"$out")" 1

# ---------------------------------------------------------------- conflicting settings
# The first-spill line is no settings warning: it is left out of the count.
expect_warning() { # expect_warning NAME PATTERN ENV...
  local name=$1 pattern=$2; shift 2
  local out
  out=$(under_tiermem "$@" -- "$PROBE" exit 0 2>&1)
  check_eq "$name: exactly one warning line saying what tiermem does" \
    "$(grep -c "^tiermem: warning: $pattern" <<<"$out") $(grep '^tiermem:' <<<"$out" | grep -vc 'HBM is full')" "1 1"
}
expect_warning "TIERMEM_HBM_RESERVE above HBM" \
  'TIERMEM_HBM_RESERVE=128 MiB leaves no chunk of the HBM limit (64 MiB): chunked allocations go to the lower tiers$' \
  "${SIM[@]}" TIERMEM_HBM_RESERVE=128M
expect_warning "TIERMEM_DDR_LIMIT below one chunk" \
  'TIERMEM_DDR_LIMIT=1 MiB is less than one chunk (2 MiB): the tier takes no chunks$' "${SIM[@]}" TIERMEM_DDR_LIMIT=1M
expect_warning "TIERMEM_TIER_ORDER=cxl without a CXL tier" \
  'TIERMEM_TIER_ORDER=cxl names cxl, which is absent here: no tier of the order exists, so chunked allocations get CUDA_ERROR_OUT_OF_MEMORY$' \
  "${SIM[@]}" TIERMEM_TIER_ORDER=cxl
expect_warning "TIERMEM_TIER_ORDER=hbm,cxl without a CXL tier" \
  'TIERMEM_TIER_ORDER=hbm,cxl names cxl, which is absent here: the other tiers of the order take its chunks$' \
  "${SIM[@]}" TIERMEM_TIER_ORDER=hbm,cxl
expect_warning "a rule naming an absent tier" \
  'TIERMEM_RULES: rule 1 sends allocations to cxl, which is absent here: they follow the tier order instead$' \
  "${SIM[@]}" 'TIERMEM_RULES=size>=1M=cxl'
expect_warning "a default reserve that would take a tiny HBM" \
  'the default HBM reserve (2 MiB) would leave no chunk of the HBM limit (2 MiB): tiermem keeps no reserve$' \
  SIMCUDA_MEM=2M
held_json SIMCUDA_MEM=2M -- "$PROBE" pieces 4M 2M
check_eq "  and HBM then takes its one chunk" "$(json_value "$json" hbm_reserve) $(json_tier "$json" hbm chunks)" "0 1"
out=$(under_tiermem "${SIM[@]}" -- "$PROBE" exit 0 2>&1)
check_eq "the defaults on this machine print nothing" "$out" ""
done_testing
