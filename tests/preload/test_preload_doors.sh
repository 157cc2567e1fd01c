#!/usr/bin/env bash
# Every door into the driver — the direct symbol, dlsym on RTLD_DEFAULT, RTLD_NEXT and a
# dlopen handle, glibc's dlsym and dlvsym as dlvsym hands them out by version, cuGetProcAddress_v2 with cudaVersion 12000 and 13000 and each flag, with
# and without a status, the 11.3 cuGetProcAddress, and the engine's way (dlopen, dlsym of
# cuGetProcAddress_v2, everything through it) — reaches the wrapper under the interposer
# (its allocation appears in the stats) and the driver without it, and behaves the same.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

without_tiermem SIMCUDA_MEM=1G -- "$DOORS" direct >"$SCRATCH/direct" 2>&1; rc_direct=$?
under_tiermem SIMCUDA_MEM=1G -- "$DOORS" interposed >"$SCRATCH/interposed" 2>&1; rc_interposed=$?
check_eq "the door program runs without the interposer" "$rc_direct" 0
check_eq "the door program runs under the interposer" "$rc_interposed" 0
relay_tap "direct" "$SCRATCH/direct"
relay_tap "interposed" "$SCRATCH/interposed"
check_eq "every door behaves the same with and without the interposer" \
  "$(grep '^behaviour:' "$SCRATCH/interposed")" "$(grep '^behaviour:' "$SCRATCH/direct")"
check "32 doors were walked" test "$(grep -c '^behaviour: .*alloc CUDA_SUCCESS, data same, free CUDA_SUCCESS' "$SCRATCH/direct")" -eq 32
done_testing
