#!/usr/bin/env bash
# tiermem-stat trusts nothing in a region: crafted text is escaped, counts are bounded,
# truncation (even while it reads) is an error line rather than a crash, FIFOs and
# symlinks are refused, a PID's region must belong to that process's user, no argument
# lists every live process, and --gc removes only the leftovers of processes that are gone
# (their regions, never through a symlink, and their ledger entries).
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
# HBM figures as `size` places (`heat` would add the 4 MiB of its staging ring)
SIM=(SIMCUDA_MEM=256M SIMCUDA_NUMA_NODES=0,1 TIERMEM_POLICY=size)
R=$SCRATCH/region
under_tiermem "${SIM[@]}" TIERMEM_STATS="$R" -- "$PROBE" exit 0 >/dev/null 2>&1
check "a kept region to work on" grep -q '"state":"exited"' <<<"$("$TIERMEM_STAT" --json "$R" 2>&1)"
u64_at() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
# writes bytes (printf format) into a copy of the region at an offset
craft() { cp "$R" "$SCRATCH/$1"; printf "$3" | dd of="$SCRATCH/$1" bs=1 seek="$2" conv=notrunc status=none; }
calls_offset=$(u64_at "$R" 24)

# ---------------------------------------------------------------- text
craft evil "$calls_offset" '\033[2J"x\\y'
text=$("$TIERMEM_STAT" "$SCRATCH/evil" 2>&1)
json=$("$TIERMEM_STAT" --json "$SCRATCH/evil" 2>&1)
check "a crafted symbol sends no escape sequence to the terminal" test "$(grep -c $'\033' <<<"$text$json")" -eq 0
check "the crafted symbol is shown with its control characters, quote and backslash as '?'" \
  grep -q '"?\[2J?x?y' <<<"$json"
check "the JSON keeps its shape: every string is closed" test "$(tr -cd '"' <<<"$json" | wc -c | awk '{print $1 % 2}')" -eq 0
# a tier name without its NUL (offset 152: the first tier's 8-byte name) runs into no other field
craft unterminated 152 'hbmhbmhb'
check "a tier name without NUL stops at its field" grep -q '{"name":"hbmhbmh",' <<<"$("$TIERMEM_STAT" --json "$SCRATCH/unterminated")"
odd=$SCRATCH/$'bad\033name'
cp "$R" "$odd"
check "an odd region path is printed escaped" test "$("$TIERMEM_STAT" "$odd" | grep -c $'\033')" -eq 0

# ---------------------------------------------------------------- bounds
craft huge 36 '\377\377\377\377'
out=$("$TIERMEM_STAT" "$SCRATCH/huge" 2>&1); rc=$?
check_eq "a record capacity of 2^32-1: refused in one line (exit 2)" \
  "$rc $(grep -c 'claims .* records (at most' <<<"$out")" "2 1"
# records 4 GiB into a sparse file, 2^18 of them (the most a reader takes): the hole is
# never copied, only the records' blocks stream through
craft sparse 36 '\000\000\004\000\000\000\000\000\001\000\000\000'
truncate -s 5G "$SCRATCH/sparse"
check_sparse_read "2^18 records 4 GiB into a sparse file" "$SCRATCH/sparse"
craft toomany 36 '\001\000\004\000'
out=$("$TIERMEM_STAT" "$SCRATCH/toomany" 2>&1); rc=$?
check_eq "a record capacity of 2^18+1: refused in one line (exit 2)" \
  "$rc $(grep -c 'claims .* records (at most' <<<"$out")" "2 1"
cp "$R" "$SCRATCH/short" && truncate -s 4000 "$SCRATCH/short"
check "a truncated region: one line" grep -q 'stats region is truncated' <<<"$("$TIERMEM_STAT" "$SCRATCH/short" 2>&1)"

# truncated over and over while it reads: an answer or an error line, never a signal
cp "$R" "$SCRATCH/moving"
size=$(stat -c %s "$R")
( for _ in $(seq 4000); do truncate -s 100 "$SCRATCH/moving"; truncate -s "$size" "$SCRATCH/moving"; done ) &
flipper=$!
worst=0
for _ in $(seq 200); do
  "$TIERMEM_STAT" --json "$SCRATCH/moving" >/dev/null 2>&1; rc=$?
  [ "$rc" -gt "$worst" ] && worst=$rc
done
kill "$flipper" 2>/dev/null; wait "$flipper" 2>/dev/null
check "200 reads of a region truncated meanwhile: none dies of a signal (worst exit $worst)" test "$worst" -le 2

# ---------------------------------------------------------------- files
mkfifo "$SCRATCH/fifo"
out=$(timeout 10 "$TIERMEM_STAT" "$SCRATCH/fifo" 2>&1); rc=$?
check_eq "a FIFO: refused at once, not waited on" "$rc $(grep -c 'not a regular file' <<<"$out")" "2 1"
ln -s "$R" "$SCRATCH/link"
check "a symlink: not followed" grep -q 'a symbolic link, not followed' <<<"$("$TIERMEM_STAT" "$SCRATCH/link" 2>&1)"
if [ "$(id -u)" -eq 0 ]; then
  sleep 60 & sleeper=$!
  mkdir -p -m 0700 "$REGIONS"
  cp "$R" "$REGIONS/tiermem.$sleeper" && chown nobody "$REGIONS/tiermem.$sleeper"
  out=$("$TIERMEM_STAT" "$sleeper" 2>&1); rc=$?
  check_eq "a region planted by another user under a process's pid: refused" \
    "$rc $(grep -c 'owned by uid [0-9]*, but the process runs as uid 0: not its region' <<<"$out")" "2 1"
  rm -f "$REGIONS/tiermem.$sleeper"; kill "$sleeper"; wait "$sleeper" 2>/dev/null
else
  skip "a region planted by another user" "chown needs root"
fi

# ---------------------------------------------------------------- --gc
if start_held "${SIM[@]}" -- "$PROBE" pieces 8M 4M; then
  killed=$HELD_PID
  kill -KILL "$killed"; wait "$killed" 2>/dev/null
  check "SIGKILL leaves the region behind" test -f "$REGIONS/tiermem.$killed"
  sleep 60 & alive=$!
  cp "$R" "$REGIONS/tiermem.$alive"
  # a symlink named after a dead pid, to a copy of the dead process's region
  linked=$(sh -c 'echo $$')
  cp "$REGIONS/tiermem.$killed" "$SCRATCH/target"
  ln -s "$SCRATCH/target" "$REGIONS/tiermem.$linked"
  check "the killed process's ledger entry is left behind" \
    grep -Eq "^ *$killed +gone" <<<"$("$TIERMEM_STAT" --ledger "$TIERMEM_LEDGER")"
  out=$("$TIERMEM_STAT" --gc "$TIERMEM_LEDGER" 2>&1)
  check "--gc removes the dead process's region, in one line" \
    test ! -e "$REGIONS/tiermem.$killed" -a "$(grep -c "^tiermem-stat: removed $REGIONS/tiermem.$killed (process $killed is gone)" <<<"$out")" -eq 1
  check "--gc keeps the region named after a live process" test -f "$REGIONS/tiermem.$alive"
  check "--gc follows no symlink: the link and the file it names stay" \
    test -L "$REGIONS/tiermem.$linked" -a -f "$SCRATCH/target"
  check_eq "--gc frees the dead process's ledger entry, in one line" \
    "$(grep -c "^tiermem-stat: freed the ledger entry of process $killed in $TIERMEM_LEDGER (it is gone)$" <<<"$out")" 1
  check "the ledger no longer lists it" lacks "^ *$killed " "$("$TIERMEM_STAT" --ledger "$TIERMEM_LEDGER")"
  rm -f "$REGIONS/tiermem.$alive" "$REGIONS/tiermem.$linked"; kill "$alive"; wait "$alive" 2>/dev/null
else
  check "the held program started" false
fi
# ---------------------------------------------------------------- no argument: every live process
if start_held "${SIM[@]}" -- "$PROBE" pieces 8M 4M; then
  out=$("$TIERMEM_STAT" 2>&1); rc=$?
  check_eq "with no argument it lists live processes (exit status 0)" "$rc" 0
  check "a header line names the columns" grep -q '^ *PID  DEVICE  HBM USED/LIMIT' <<<"$out"
  check "the held process has its line: pid, device 0, hbm usage, two chunked allocations" \
    grep -Eq "^ *$HELD_PID +0 +[0-9.]+ MiB/[0-9.]+ [MG]iB .* 2  size$" <<<"$out"
  release_held
  check "once it exited, it is no longer listed" lacks "^ *$HELD_PID " "$("$TIERMEM_STAT" 2>&1)"
else
  release_held
  check "the held program started" false
fi

echo "not a region" >"$SCRATCH/plain"
dead=$(sh -c 'echo $$')
cp "$SCRATCH/plain" "$REGIONS/tiermem.$dead"
"$TIERMEM_STAT" --gc "$TIERMEM_LEDGER" >/dev/null 2>&1
check "--gc keeps a file that is no stats region" test -f "$REGIONS/tiermem.$dead"
rm -f "$REGIONS/tiermem.$dead"
done_testing
