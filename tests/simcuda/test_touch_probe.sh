#!/usr/bin/env bash
# The USDT probe simcuda:touch, the access trace eBPF collectors attach to: simcuda's
# libcuda.so.1 carries it with the fixed contract (simcuda.h): five arguments, uint64
# address, uint64 bytes, int32 write flag, uint64 launch sequence, a name pointer.
source "$(dirname "$0")/../lib/tap.sh"
LIB=$B/lib/simcuda/libcuda.so.1

notes=$(readelf -n "$LIB" 2>&1)
check "libcuda.so.1 has SystemTap probe notes" grep -q 'NT_STAPSDT' <<<"$notes"
probe=$(awk '/Provider: simcuda/ { p = 1; next } p && /Name:/ { n = $2 } p && /Arguments:/ { if (n == "touch") print; p = 0 }' <<<"$notes")
check "the probe is provider simcuda, name touch" test -n "$probe"
echo "# $probe"
sizes=$(sed 's/^ *Arguments: *//' <<<"$probe" | tr ' ' '\n' | sed 's/@.*//' | tr '\n' ' ')
check_eq "five arguments: u64 address, u64 bytes, s32 write, u64 sequence, pointer name" "$sizes" "8 8 -4 8 8 "
done_testing
