#!/usr/bin/env bash
# Runs every test program and script given on the command line. Each speaks TAP
# ("ok N - name", "not ok N - name", "ok N - name # SKIP why"); C tests use cmocka with
# CMOCKA_MESSAGE_OUTPUT=TAP. A program that exits non-zero without reporting a failure,
# or reports nothing at all, counts as one failure. Output of each test goes to
# $O/test-logs/<name>.log; failures are shown in full. The last line is "N passed, N failed".
set -u
O=${O:-build}
export O SAN=${SAN:-0}
export CMOCKA_MESSAGE_OUTPUT=TAP
export TM_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export TM_SHARED=${TM_SHARED:-$TM_ROOT/../shared}
# Under the sanitizers, LD_PRELOAD of an instrumented library needs the ASan runtime first.
if [ "$SAN" = 1 ]; then
  export TM_SAN_PRELOAD=$(${CC:-gcc} -print-file-name=libasan.so)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
logs=$O/test-logs
mkdir -p "$logs"
# Processes of one group (TIERMEM_GROUP), or a server and its children, share lower-tier
# budgets through a ledger in /dev/shm: each run of the tests gets its own, so runs in other
# checkouts never meet these in it.
ledger_dir=$(mktemp -d)
trap 'rm -rf "$ledger_dir"' EXIT
export TIERMEM_LEDGER=${TIERMEM_LEDGER:-$ledger_dir/ledger}
passed=0 failed=0 skipped=0
failures=()
for t in "$@"; do
  name=$(basename "$t"); name=${name%.sh}
  log=$logs/$name.log
  start=$(date +%s)
  if [[ $t == *.sh ]]; then bash "$t" >"$log" 2>&1; else "$t" >"$log" 2>&1; fi
  rc=$?
  # A SKIP directive makes a result a skip whether it says "ok" or "not ok" (cmocka's
  # skip() prints the latter).
  skip=$(grep -acE '^(not )?ok [0-9]+.*# SKIP' "$log")
  ok=$(grep -acE '^ok [0-9]+' "$log")
  notok=$(grep -acE '^not ok [0-9]+' "$log")
  ok=$((ok - $(grep -acE '^ok [0-9]+.*# SKIP' "$log")))
  notok=$((notok - $(grep -acE '^not ok [0-9]+.*# SKIP' "$log")))
  if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then notok=1; echo "not ok - $name exited with status $rc" >>"$log"; fi
  if [ $((ok + notok + skip)) -eq 0 ]; then notok=1; echo "not ok - $name reported no results" >>"$log"; fi
  passed=$((passed + ok)); failed=$((failed + notok)); skipped=$((skipped + skip))
  printf '%-32s %4d passed %3d failed %3d skipped  %3ds\n' "$name" "$ok" "$notok" "$skip" $(( $(date +%s) - start ))
  # a cmocka skip has no reason of its own: the test says it on a "# SKIP reason:" line
  grep -aE '^(not )?ok [0-9]+.*# SKIP|^# SKIP reason:' "$log" | sed "s/^/    $name: /"
  if [ "$notok" -ne 0 ]; then failures+=("$name"); fi
done
for f in "${failures[@]}"; do
  echo; echo "==== $f: $logs/$f.log (last 60 lines)"; tail -n 60 "$logs/$f.log"
done
[ "$skipped" -gt 0 ] && echo "$skipped skipped (reasons above)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
