#!/usr/bin/env bash
# Stats regions are other users' bytes. As root, with two unprivileged users made for the
# test (and removed after): names cannot be squatted (regions live in a 0700 directory per
# user; a squatted directory costs the victim its region, in one line, and readers refuse
# it); a region its owner crafts (huge offsets and capacities, truncated, an odd seq on
# every record, records 4 GiB into a sparse file) costs tiermem-stat an error line or a
# bounded read, never a crash or a hang; and tiermem-stat and tiermem-heat --pid --feed run
# against a region its owner rewrites at random 10,000 times: no crash, no hang (each run
# bounded at 10 s), the target unaffected.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
SIM=(SIMCUDA_MEM=256M SIMCUDA_NUMA_NODES=0,1 TIERMEM_POLICY=size)
SCRIBBLE=$B/tests/preload/region_scribble
HEAT=$B/bin/tiermem-heat

if [ "$(id -u)" -ne 0 ]; then
  skip "regions against other users" "needs root to create the users the attacks run as"
  done_testing
  exit 0
fi
if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
  skip "regions against other users" "useradd or setpriv is missing"
  done_testing
  exit 0
fi

attacker=tmra$$ victim=tmrv$$
started=()
cleanup() {
  local p
  for p in "${started[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${started[@]}"; do wait "$p" 2>/dev/null; done
  for u in "$attacker" "$victim"; do
    if id -u "$u" >/dev/null 2>&1; then
      local uid
      uid=$(id -u "$u")
      rm -rf "/dev/shm/tiermem-$uid" "/dev/shm/tiermem-ledger.u$uid"
      userdel "$u" 2>/dev/null || echo "# could not remove the user $u made for the test" >&2
    fi
  done
  rm -f "${squats[@]}"
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
useradd --system --no-create-home --shell /usr/sbin/nologin "$attacker" &&
  useradd --system --no-create-home --shell /usr/sbin/nologin "$victim"
check_eq "two unprivileged users made for the test" "$?" 0
AUID=$(id -u "$attacker") VUID=$(id -u "$victim")
as() { local u=$1; shift; setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups -- "$@"; }
chmod 711 "$SCRATCH" # the users' programs look for the hold file there
ADIR=/dev/shm/tiermem-$AUID
as "$attacker" mkdir -m 0700 "$ADIR"

# ---------------------------------------------------------------- squatting
# the attacker plants the old-style names of the next pids, and tries root's directory
next=$(sh -c 'echo $$')
squats=()
for i in $(seq 1 64); do squats+=("/dev/shm/tiermem.$((next + i))"); done
as "$attacker" touch "${squats[@]}"
mkdir -p -m 0700 "$REGIONS"
as "$attacker" touch "$REGIONS/tiermem.$((next + 1))" 2>/dev/null
check "another user cannot create a name in root's region directory" test ! -e "$REGIONS/tiermem.$((next + 1))"
if start_held "${SIM[@]}" -- "$PROBE" pieces 8M 4M; then
  region=$REGIONS/tiermem.$HELD_PID
  check_eq "root's process made its region in its own directory, despite the squatted pids" \
    "$(stat -c '%u %a' "$region" 2>&1)" "0 600"
  # a region planted for root's live pid in the attacker's own directory is never looked at
  cp "$region" "$ADIR/tiermem.$HELD_PID" && chown "$attacker" "$ADIR/tiermem.$HELD_PID"
  "$SCRIBBLE" set "$ADIR/tiermem.$HELD_PID" device_count 99
  json=$("$TIERMEM_STAT" --json "$HELD_PID" 2>&1)
  check "tiermem-stat PID reads the process's own region (its pid, running)" \
    jq -e --argjson pid "$HELD_PID" --arg region "$region" \
      '.pid == $pid and .state == "running" and .region == $region' <<<"$json" >/dev/null
  release_held
  check_eq "root's process ran as usual" "$HELD_RC" 0
else
  check "the held program started" false
fi
check_eq "the squatted names are left as they were (the attacker's, still there)" \
  "$(stat -c %u "${squats[@]}" | sort -u)" "$AUID"

# the attacker makes the victim's directory before the victim runs
VDIR=/dev/shm/tiermem-$VUID
as "$attacker" mkdir -m 0700 "$VDIR"
out=$(under_tiermem "${SIM[@]}" -- setpriv --reuid="$VUID" --regid="$(id -g "$victim")" --clear-groups -- \
  "$PROBE" pieces 8M 4M 2>&1); rc=$?
check_eq "the victim's program runs without a region" "$rc" 0
check_eq "and says so in one line, naming the directory" \
  "$(grep -c "cannot use the stats region directory '$VDIR' (owned by another user; it is left untouched); going on without a region" <<<"$out")" 1
check_eq "the squatted directory is left as it was" "$(stat -c '%u %a' "$VDIR")" "$AUID 700"
under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/planted" -- "$PROBE" exit 0 >/dev/null 2>&1
cp "$SCRATCH/planted" "$VDIR/tiermem.1" && chown "$attacker" "$VDIR/tiermem.1"
out=$("$TIERMEM_STAT" --json "$VDIR/tiermem.1" 2>&1); rc=$?
check_eq "a region planted in the squatted directory, named by its path: refused in one line (exit 2)" \
  "$rc $(grep -c "its directory $VDIR is owned by another user" <<<"$out")" "2 1"
rm -rf "$VDIR"
if start_held "${SIM[@]}" -- setpriv --reuid="$VUID" --regid="$(id -g "$victim")" --clear-groups -- \
    "$PROBE" pieces 8M 4M; then
  victim_pid=$HELD_PID
  check_eq "with the directory free, the victim's region is made in it, 0700" "$(stat -c '%u %a' "$VDIR")" "$VUID 700"
  check "and tiermem-stat reads it" grep -q "^tiermem: pid $victim_pid (running)" <<<"$("$TIERMEM_STAT" "$victim_pid")"
  chmod 0755 "$VDIR"
  out=$("$TIERMEM_STAT" "$victim_pid" 2>&1); rc=$?
  check_eq "a region directory opened to others: refused in one line (exit 2)" \
    "$rc $(grep -c "its directory $VDIR is not of mode 0700" <<<"$out")" "2 1"
  chmod 0700 "$VDIR"
  release_held
else
  check "the victim's held program started" false
fi

# ---------------------------------------------------------------- crafted by the owner
# the attacker's live process and a region of its own, crafted
setpriv --reuid="$AUID" --regid="$(id -g "$attacker")" --clear-groups -- sleep 120 & owner_pid=$!
started+=("$owner_pid")
under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/base" -- "$PROBE" pieces 8M 4M >/dev/null 2>&1
plant() { # plant NAME: a fresh copy of the base region as the attacker's region of owner_pid
  cp "$SCRATCH/base" "$ADIR/tiermem.$owner_pid" && chown "$attacker" "$ADIR/tiermem.$owner_pid"
}
# stat_bounded NAME: tiermem-stat on owner_pid within 10 s; sets OUT and RC
stat_bounded() { OUT=$(timeout 10 "$TIERMEM_STAT" "$@" "$owner_pid" 2>&1); RC=$?; }
plant
stat_bounded
check "the attacker's region as it is reads well" grep -q "^tiermem: pid" <<<"$OUT"
for crafted in "records_offset 1099511627776" "heat_chunks_offset 8589934592" "record_capacity 4294967295" \
               "heat_chunk_capacity 1099511627776" "calls_offset 18446744073709551615" "heat_tick_ns 0"; do
  plant
  as "$attacker" "$SCRIBBLE" set "$ADIR/tiermem.$owner_pid" $crafted
  stat_bounded
  check_eq "$crafted: refused in one line (exit 2)" "$RC $(wc -l <<<"$OUT")" "2 1"
done
plant
as "$attacker" truncate -s 4000 "$ADIR/tiermem.$owner_pid"
stat_bounded
check_eq "a truncated region: refused in one line (exit 2)" "$RC $(grep -c 'stats region is truncated' <<<"$OUT")" "2 1"
plant
as "$attacker" "$SCRIBBLE" oddseq "$ADIR/tiermem.$owner_pid"
start=$(date +%s%N)
stat_bounded --json
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "# an odd seq on all 16384 records: read in $elapsed_ms ms"
check_eq "an odd seq on every record: answered within 10 s, the records left out" \
  "$RC $(grep -c '"address"' <<<"$OUT")" "0 0"
plant
as "$attacker" "$SCRIBBLE" badheat "$ADIR/tiermem.$owner_pid"
stat_bounded --json
check_eq "heat of NaN and infinities: the allocation is shown" "$RC $(grep -c '"address":1099511627776' <<<"$OUT")" "0 1"
check "with finite values only: no bare nan or inf in --json" lacks '[^a-z_"]\(-\?nan\|-\?inf\)' "$OUT"
if command -v jq >/dev/null; then
  parses() { jq -e .pid <<<"$1" >/dev/null; }
  check "and the JSON parses" parses "$OUT"
else
  skip "and the JSON parses" "jq is not installed"
fi
plant
as "$attacker" "$SCRIBBLE" set "$ADIR/tiermem.$owner_pid" records_offset 4294967296
as "$attacker" truncate -s 5G "$ADIR/tiermem.$owner_pid"
check_sparse_read "the owner's records 4 GiB into a sparse file" "$owner_pid"
rm -f "$ADIR/tiermem.$owner_pid"

# --gc as root: a leftover in the attacker's own directory goes, a file there that is no
# region stays; a directory squatted for the victim is named in one line and left alone
gone=$(json_value "$("$TIERMEM_STAT" --json "$SCRATCH/base")" pid)
cp "$SCRATCH/base" "$ADIR/tiermem.$gone" && chown "$attacker" "$ADIR/tiermem.$gone"
dead=$(sh -c 'echo $$')
cp "$SCRATCH/base" "$ADIR/tiermem.$dead" && chown "$attacker" "$ADIR/tiermem.$dead"
"$SCRIBBLE" set "$ADIR/tiermem.$dead" magic 0
rm -rf "$VDIR" && as "$attacker" mkdir -m 0700 "$VDIR"
out=$("$TIERMEM_STAT" --gc 2>&1)
check "--gc removes the leftover of the attacker's dead process, in one line" \
  test ! -e "$ADIR/tiermem.$gone" -a "$(grep -c "^tiermem-stat: removed $ADIR/tiermem.$gone (process $gone is gone)" <<<"$out")" -eq 1
check "--gc keeps a file of the attacker's that is no region" test -f "$ADIR/tiermem.$dead"
check_eq "--gc names the squatted directory in one line and leaves it" \
  "$(grep -c "^tiermem-stat: $VDIR is owned by another user (uid $VUID's must be its own, mode 0700): not used" <<<"$out") $(stat -c %u "$VDIR")" \
  "1 $AUID"
rm -rf "$VDIR" "$ADIR/tiermem.$dead"

# ---------------------------------------------------------------- 10,000 rewrites
# the attacker's program under libtiermem.so, its region rewritten at random by the attacker
# while tiermem-stat reads it over and over and tiermem-heat --pid --feed writes heat into it
if start_held "${SIM[@]}" -- setpriv --reuid="$AUID" --regid="$(id -g "$attacker")" --clear-groups -- \
    "$PROBE" pieces 64M 4M; then
  target=$HELD_PID
  region=$ADIR/tiermem.$target
  heat_ran=0
  if [ -x "$HEAT" ]; then
    timeout 10 "$HEAT" --pid "$target" --feed --json --interval 0.05 --duration 5 >"$SCRATCH/heat.json" \
      2>"$SCRATCH/heat.err" &
    heat_pid=$!
    heat_ran=1
  fi
  as "$attacker" "$SCRIBBLE" rewrite "$region" 10000 "$$" 20000 >"$SCRATCH/scribble.out" 2>&1 &
  scribbler=$!
  runs=0 worst=0 sanitizer=0
  while kill -0 "$scribbler" 2>/dev/null; do
    timeout 10 "$TIERMEM_STAT" --json "$target" >/dev/null 2>"$SCRATCH/stat.err"; rc=$?
    runs=$((runs + 1))
    [ "$rc" -gt "$worst" ] && worst=$rc
    grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$SCRATCH/stat.err" && sanitizer=1
  done
  wait "$scribbler"
  check_eq "the owner rewrote its region 10,000 times" "$(cat "$SCRATCH/scribble.out")" "rewrote 10000"
  echo "# tiermem-stat ran $runs times meanwhile, worst exit $worst"
  check "tiermem-stat read it $runs times meanwhile: each an answer or an error line (worst exit $worst)" \
    test "$runs" -ge 2 -a "$worst" -le 2 -a "$worst" -ne 1
  check_eq "no sanitizer report from tiermem-stat" "$sanitizer" 0
  if [ "$heat_ran" = 1 ]; then
    wait "$heat_pid"; rc=$?
    if grep -q 'cannot use eBPF' "$SCRATCH/heat.err"; then
      skip "tiermem-heat --pid --feed against the rewritten region" "$(grep 'cannot use eBPF' "$SCRATCH/heat.err")"
    else
      check_eq "tiermem-heat --pid --feed beside it ran to its end within 10 s" "$rc" 0
      check "without a sanitizer report" lacks 'AddressSanitizer\|runtime error' "$(cat "$SCRATCH/heat.err")"
    fi
  else
    skip "tiermem-heat --pid --feed against the rewritten region" "tiermem-heat was not built"
  fi
  release_held
  check_eq "the target itself was unaffected: it checked its memory and exited 0" "$HELD_RC" 0
else
  check "the attacker's held program started" false
fi
done_testing
