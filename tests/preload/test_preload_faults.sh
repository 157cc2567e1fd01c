#!/usr/bin/env bash
# Driver faults on the interposer's paths: every driver call libtiermem makes while the
# probe allocates, maps and frees (SIMCUDA_FAIL finds how many calls of each function
# there are) is failed once in turn. The program sees no error but the driver's (or, when
# tiermem passes the call through instead, none), its data stays right, and nothing leaks:
# tiermem's counters return to zero and simcuda has nothing live at exit (unless the program
# itself gave up and exited holding memory, which is then the driver's to take back).
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
SIM=(SIMCUDA_MEM=64M SIMCUDA_LOG=info)
FUNCTIONS=(cuMemAddressReserve cuMemCreate cuMemMap cuMemSetAccess cuMemUnmap cuMemRelease cuMemAddressFree
           cuMemAlloc_v2 cuMemFree_v2 cuMemAllocPitch_v2 cuMemAllocAsync cuMemFreeAsync
           cuMemGetAllocationGranularity cuDeviceGetAttribute cuDeviceTotalMem_v2 cuCtxGetCurrent cuCtxGetDevice
           cuStreamSynchronize cuCtxSynchronize cuMemGetInfo_v2 cuMemHostRegister_v2 cuMemHostUnregister
           cuMemHostGetDevicePointer_v2 cuCtxPushCurrent_v2 cuCtxPopCurrent_v2 cuPointerGetAttribute)

# SIMCUDA_FAIL itself: a bad list is named in one line; a rule fails exactly its call.
out=$(without_tiermem SIMCUDA_FAIL=cuMemAlloc_v2:x -- "$PROBE" exit 0 2>&1)
check "SIMCUDA_FAIL bad value: one line naming it" grep -q "^simcuda: SIMCUDA_FAIL='cuMemAlloc_v2:x' is not a list of FUNCTION:N\[:ERROR\]" <<<"$out"
out=$(without_tiermem SIMCUDA_FAIL=cuNoSuchCall:1 -- "$PROBE" exit 0 2>&1)
check "SIMCUDA_FAIL with an unknown function: refused" grep -q "^simcuda: SIMCUDA_FAIL='cuNoSuchCall:1' is not" <<<"$out"
out=$(without_tiermem SIMCUDA_MEM=64M SIMCUDA_FAIL=cuMemAlloc_v2:2:CUDA_ERROR_INVALID_VALUE -- "$PROBE" exit 0 2>&1); rc=$?
check_eq "SIMCUDA_FAIL=cuMemAlloc_v2:2:CUDA_ERROR_INVALID_VALUE: the second cuMemAlloc fails with it" \
  "$rc $(grep -c 'cuMemAlloc(&small, 512) failed: CUDA_ERROR_INVALID_VALUE' <<<"$out")" "3 1"

# The calls to walk: a run whose rules never trigger counts them.
rules=$(printf '%s:1000000000,' "${FUNCTIONS[@]}")
walk() { # walk LABEL ENV...: fails each counted call once in turn under the given setting
  local label=$1; shift
  local counts out rc f n total=0 bad=0
  counts=$(under_tiermem "${SIM[@]}" "$@" SIMCUDA_FAIL="${rules%,}" -- "$PROBE" faults 2>&1)
  check "$label: the counting run finishes" grep -q '^faults done' <<<"$counts"
  for f in "${FUNCTIONS[@]}"; do
    n=$(sed -n "s/^simcuda: exit: SIMCUDA_FAIL $f: \([0-9]*\) calls$/\1/p" <<<"$counts")
    for ((i = 1; i <= ${n:-0}; i++)); do
      total=$((total + 1))
      rm -f "$SCRATCH/region"
      out=$(under_tiermem "${SIM[@]}" "$@" SIMCUDA_FAIL="$f:$i" TIERMEM_STATS="$SCRATCH/region" -- "$PROBE" faults 2>&1); rc=$?
      json=$("$TIERMEM_STAT" --json "$SCRATCH/region" 2>&1)
      why=""
      [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || why="exit status $rc"
      grep 'CUDA_ERROR_' <<<"$out" | grep -v '^simcuda:' | grep -qv 'CUDA_ERROR_OUT_OF_MEMORY' && why="$why; an error other than the driver's"
      # status 3: the program gave up at a failed call and exited holding memory, which is
      # left to the driver at exit (as without the interposer); otherwise nothing may stay
      if [ "$rc" -ne 3 ]; then
        grep -q '^simcuda: exit: device memory in use 0 bytes' <<<"$out" || why="$why; device memory left in use"
        grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' <<<"$out" || why="$why; VMM objects left"
      fi
      # a call failed while tiermem set the device up turns tiering off (one line): no region then
      if [ "$rc" -ne 3 ] && ! grep -q '^tiermem: warning: .*: tiering is off, every call passes through to the driver$' <<<"$out"; then
        [ "$(json_tier_sum "$json" used) $(json_value "$json" tiered_count) $(json_value "$json" small_count)" == "0 0 0" ] ||
          why="$why; tiermem's counters are not zero"
      fi
      if [ -n "$why" ]; then
        bad=$((bad + 1))
        echo "# $label: call $i of $f:${why#;}"
        grep -v '^simcuda: exit: copied\|launches' <<<"$out" | sed 's/^/#   /' | head -12
      fi
    done
  done
  check "$label: $total driver calls failed in turn, the program gets the driver's error and nothing leaks" \
    test "$total" -gt 30 -a "$bad" -eq 0
}
walk "VMM chunks"
walk "pinned host tiers" SIMCUDA_HOST_NUMA_VMM=0 TIERMEM_HBM_LIMIT=8M
done_testing
