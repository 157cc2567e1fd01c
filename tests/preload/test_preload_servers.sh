#!/usr/bin/env bash
# What serving stacks do with device memory: pools built on the VMM API (create, map,
# release at once), stream-ordered frees that must not block the host, CUDA graphs.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
MIB=$((1 << 20))
# HBM figures as `size` places (`heat` would add the 4 MiB of its staging ring)
SIM=(SIMCUDA_MEM=256M SIMCUDA_NUMA_NODES=0,1 TIERMEM_CXL_NODE=1 TIERMEM_POLICY=size)

# ---------------------------------------------------------------- a pool of the program's own
# llama.cpp grows its pool by create → map → release: the mapping keeps the memory, so it
# must keep counting. Four 48 MiB grows under a 96 MiB HBM limit (94 MiB past the 2 MiB
# reserve): the first fits HBM, the other three go to CXL.
out=$(under_tiermem "${SIM[@]}" TIERMEM_HBM_LIMIT=96M TIERMEM_STATS="$SCRATCH/grow" -- "$SERVING" grow 48M 4 2>&1)
rc=$?
check_eq "the pool grows four times and every byte checks" "$rc" 0
json=$("$TIERMEM_STAT" --json "$SCRATCH/grow")
check_eq "released but mapped handles keep counting: 48 MiB peak in hbm, 144 MiB in cxl" \
  "$(json_tier "$json" hbm peak) $(json_tier "$json" cxl peak)" "$((48 * MIB)) $((144 * MIB))"
free=()
for i in 1 2 3 4; do free+=("$(sed -n "s/^grow $i free //p" <<<"$out")"); done
unmapped=$(sed -n 's/^unmapped free //p' <<<"$out")
check_eq "cuMemGetInfo counts the mapped grow in hbm until it is unmapped" "$((unmapped - free[0]))" "$((48 * MIB))"
check_eq "the grows that spilled leave hbm's free memory as it was" "${free[3]}" "${free[0]}"
check_eq "the first spill of the run is one warning line saying where it went and how to see more" \
  "$(grep -c '^tiermem: warning: HBM is full: an allocation of 48 MiB spilled 48 MiB to cxl and 0 B to ddr (later ones are not logged; `tiermem-stat [0-9]*` shows where everything lives' <<<"$out") $(grep -c 'HBM is full' <<<"$out")" "1 1"
check "unmapping ends the charge: nothing in use at exit" \
  test "$(json_tier_sum "$json" used) $(json_value "$json" free_total)" = "0 4"

# ---------------------------------------------------------------- stream-ordered free
# The stream is held by a host function until the free returns: a free that waits for the
# stream would time it out.
out=$(under_tiermem "${SIM[@]}" SIMCUDA_ASYNC=1 -- "$SERVING" freeasync 64M 2>&1); rc=$?
check_eq "cuMemFreeAsync of chunked memory returns without waiting for the stream" "$rc" 0
check "the program saw the free return while its stream was held" \
  grep -q '^free returned while the stream was held' <<<"$out"
read -r before after < <(sed -n 's/^info before \([0-9]*\) after \([0-9]*\)/\1 \2/p' <<<"$out")
check_eq "once the stream reached the free, the memory is back" "${after:-none}" "${before:-unknown}"


# ---------------------------------------------------------------- CUDA graphs
# A capture allocates and frees scratch (the driver's allocation nodes) and frees a chunked
# allocation made before it: no sync of the capturing stream, and the memory stays mapped
# for the graph, which then writes through it.
for async in 0 1; do
  out=$(without_tiermem SIMCUDA_ASYNC=$async -- "$SERVING" capture 8M 2>&1); rc=$?
  check_eq "SIMCUDA_ASYNC=$async: on simcuda alone the captured graph runs and writes every byte" "$rc" 0
  out=$(under_tiermem "${SIM[@]}" SIMCUDA_ASYNC=$async -- "$SERVING" capture 8M 2>&1); rc=$?
  check_eq "SIMCUDA_ASYNC=$async: under the interposer the capture stays valid and every byte lands" "$rc" 0
  check "SIMCUDA_ASYNC=$async: the graph ran" grep -q '^graph ran: every captured write landed' <<<"$out"
done
# ---------------------------------------------------------------- context reset
# cudaDeviceReset after the runtime retained the primary context before the first
# allocation: the reset must release tiermem's memory and its counts, or the second round
# is counted on top of the first.
out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/reset" -- "$SERVING" reset 64M 2>&1); rc=$?
check_eq "two rounds of allocate and reset run" "$rc" 0
check_eq "after the reset, the same allocation leaves the same free memory" \
  "$(sed -n 's/^round 2 free //p' <<<"$out")" "$(sed -n 's/^round 1 free //p' <<<"$out")"
json=$("$TIERMEM_STAT" --json "$SCRATCH/reset")
check_eq "the reset released the chunks: nothing in use, one round's peak" \
  "$(json_tier_sum "$json" used) $(json_tier "$json" hbm peak)" "0 $((64 * MIB))"
done_testing
