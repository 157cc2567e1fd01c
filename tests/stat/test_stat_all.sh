#!/usr/bin/env bash
# tiermem-stat without a pid shows every live process under libtiermem: the table (pid,
# command, device, tiers, migrations), --json as one array jq parses, --watch of both;
# `tiermem-stat N` tells "no process N" (exit 3) from "process N is not under libtiermem"
# (exit 2); JSON escapes what it prints (a command with a quote and a backslash) and writes
# heat that is not a finite number as null, never a bare nan or inf.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/../preload/preload_lib.sh"
source "$(dirname "$0")/stat_lib.sh"
SIM=(SIMCUDA_MEM=64M SIMCUDA_NUMA_NODES=0,1 TIERMEM_POLICY=size)
is_json() { jq -e "$1" <<<"$2" >/dev/null; }
trap 'for n in "${!HOLD_PID[@]}"; do touch "$SCRATCH/$n.go"; done; rm -rf "$SCRATCH"' EXIT

# a second copy of the probe, named with a quote and a backslash (its comm)
odd_name='pr"o\be'
cp "$PROBE" "$SCRATCH/$odd_name"
hold a "${SIM[@]}" -- "$PROBE" pieces 12M 4M; started_a=$?
hold b "${SIM[@]}" -- "$SCRATCH/$odd_name" pieces 8M 4M; started_b=$?
check "two processes under libtiermem hold their memory" test "$started_a$started_b" = 00
A=${HOLD_PID[a]} Bp=${HOLD_PID[b]}

# ---------------------------------------------------------------- the table
out=$("$TIERMEM_STAT" 2>&1); rc=$?
check_eq "with no argument: exit 0" "$rc" 0
check "the header names pid, device, the tiers, command and migrations" \
  grep -qE '^ *PID +DEVICE +HBM USED/LIMIT +CXL USED/LIMIT +DDR USED/LIMIT +COMMAND +MIGRATIONS +CHUNKED +POLICY$' <<<"$out"
check "process $A: device 0, 12 MiB of HBM, command probe, 0 migrations, 3 chunked" \
  grep -qE "^ *$A +0 +12 MiB/[0-9.]+ MiB .* probe +0 +3  size$" <<<"$out"
check "process $Bp: its command as the kernel keeps it" grep -qE "^ *$Bp +0 +8 MiB/.* pr\"o\\\\be +0 +2  size$" <<<"$out"
out=$("$TIERMEM_STAT" --watch --count 2 --interval 0.1 2>&1)
check_eq "--watch --count 2 without a pid: the screen cleared and the table shown, twice" \
  "$(grep -cE $'^\033\\[H\033\\[2J *PID +DEVICE' <<<"$out")" 2

# ---------------------------------------------------------------- JSON of every process
json=$("$TIERMEM_STAT" --json 2>"$SCRATCH/json.err"); rc=$?
check_eq "--json without a pid: exit 0" "$rc" 0
check "it is one JSON array" is_json 'type == "array"' "$json"
# (pids may wrap between the two starts, so the pairs are compared in sorted order)
check_eq "both processes are in it, with their HBM bytes" \
  "$(jq -r --argjson a "$A" --argjson b "$Bp" '.[] | select(.pid == $a or .pid == $b) | "\(.pid):\(.tiers[0].used)"' <<<"$json" | sort | tr '\n' ' ')" \
  "$(printf '%s\n' "$A:$((12 << 20))" "$Bp:$((8 << 20))" | sort | tr '\n' ' ')"
check "the array is in pid order" is_json '[.[].pid] == ([.[].pid] | sort)' "$json"
check_eq "the command with a quote and a backslash comes back intact through jq" \
  "$(jq -r --argjson b "$Bp" '.[] | select(.pid == $b) | .command' <<<"$json")" "$odd_name"
check_eq "each object has its allocations and the device's uuid" \
  "$(jq -r --argjson a "$A" '.[] | select(.pid == $a) | "\(.allocations | length) \(.devices[0].uuid | test("^GPU-[0-9a-f-]{36}$"))"' <<<"$json")" "3 true"
out=$("$TIERMEM_STAT" --json --watch --count 2 --interval 0.1)
check_eq "--json --watch --count 2: two arrays, one after the other" "$(jq -s 'map(type) | join(",")' <<<"$out")" '"array,array"'
check_eq "--json PID: one object, the same process" "$("$TIERMEM_STAT" --json "$A" | jq -r '"\(type) \(.pid) \(.command)"')" "object $A probe"

# ---------------------------------------------------------------- not finite
cp "/dev/shm/tiermem-$(id -u)/tiermem.$A" "$SCRATCH/region"
check "the region's heat chunks are there before crafting" \
  test "$("$TIERMEM_STAT" --json "$SCRATCH/region" | jq '[.allocations[].chunk_heat | length] | add')" -gt 0
# the heat chunk pool ends the region (262144 chunks of 40 bytes): chunk 0's heat, reads
# and writes become NaN, chunk 1's +Inf and -Inf
pool=$(( $(stat -c %s "$SCRATCH/region") - 262144 * 40 ))
poke() { printf "$2" | dd of="$SCRATCH/region" bs=1 seek="$1" conv=notrunc status=none; }
for field in 8 24 32; do poke $((pool + field)) '\0\0\0\0\0\0\370\177'; done
poke $((pool + 48)) '\0\0\0\0\0\0\360\177'
poke $((pool + 64)) '\0\0\0\0\0\0\360\377'
json=$("$TIERMEM_STAT" --json "$SCRATCH/region" 2>&1)
check "a region with NaN and infinite heat: the JSON still parses" is_json . "$json"
check "  no bare nan or inf in it" lacks '[:,\[]-\?\(nan\|inf\|NaN\|Infinity\)' "$json"
# the reader takes a value that is not finite as no heat (stats_read.c), so what is printed
# is a number of at least 0 everywhere
check "  the values that were not finite read as finite numbers of at least 0" \
  test "$(jq '[.allocations[].chunk_heat[] | select((.heat | type) != "number" or .heat < 0 or .reads < 0 or .writes < 0)] | length' <<<"$json")" -eq 0
unhold a
unhold b

# ---------------------------------------------------------------- two messages
sleep 30 & plain=$!
out=$("$TIERMEM_STAT" "$plain" 2>&1); rc=$?
check_eq "a live process without libtiermem: exit 2" "$rc" 2
check "  'process N is not under libtiermem'" grep -q "^tiermem-stat: process $plain is not under libtiermem (" <<<"$out"
kill "$plain"; wait "$plain" 2>/dev/null
gone=$(sh -c 'echo $$')
out=$("$TIERMEM_STAT" "$gone" 2>&1); rc=$?
check_eq "a pid no process has: exit 3" "$rc" 3
check_eq "  'no process N'" "$out" "tiermem-stat: no process $gone"
out=$("$TIERMEM_STAT" --json "$gone" 2>&1); rc=$?
check_eq "  the same with --json" "$rc $out" "3 tiermem-stat: no process $gone"
out=$("$TIERMEM_STAT" 0 2>&1); rc=$?
check_eq "pid 0: a bad argument (exit 1)" "$rc $out" "1 tiermem-stat: '0' is not a process id"
done_testing
