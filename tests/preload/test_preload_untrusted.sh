#!/usr/bin/env bash
# Files another process can write, met by a process under libtiermem.so: a ledger truncated,
# scribbled on or locked by a hung process (each run bounded at 10 s, no SIGBUS, the ledger
# set aside, never deleted); a profile that is a FIFO; a log file with a hard link; a name
# holding a newline in a warning; the settings lines. As root, with an unprivileged user
# made for the test and removed after: a ledger and a profile that user planted in a sticky
# directory are refused in one line, and their owner, inode, mode and bytes stay as they were;
# that user, as a member of a group root's processes share a ledger with, truncates it under
# them: no SIGBUS, the ledger set aside.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
HOLD=$B/tests/preload/ledger_hold
BASE=(SIMCUDA_MEM=64M TIERMEM_HBM_LIMIT=16M TIERMEM_TIER_ORDER=hbm,ddr TIERMEM_DDR_LIMIT=120M)
# count PATTERN TEXT: lines of TEXT matching the extended regular expression
count() { grep -cE -- "$1" <<<"$2"; }
# the extended regular expression matching S literally
literal() { sed 's/[][\.*^$(){}+?|/]/\\&/g' <<<"$1"; }

# ---------------------------------------------------------------- a ledger cut short or scribbled on
for damage in truncated scribbled; do
  L=$SCRATCH/ledger-$damage
  start_held "${BASE[@]}" TIERMEM_LEDGER="$L" -- "$PROBE" pieces 64M 64M
  if [ "$damage" = truncated ]; then truncate -s 100 "$L"; reason="its size is not a ledger's"
  else printf '\377\377\377\177' | dd of="$L" bs=1 seek=16 conv=notrunc status=none
       reason="a node column names no NUMA node"; fi
  start=$SECONDS
  OUT=$(timeout 10 env LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "${BASE[@]}" TIERMEM_LEDGER="$L" \
        "$PROBE" pieces 64M 64M 2>&1); RC=$?
  check_eq "a $damage ledger: the next process runs to the end (exit 0, within 10 s)" "$RC" 0
  check_eq "  one line: it failed validation and is set aside" \
    "$(count "^tiermem: warning: ledger $(literal "$L") failed validation \($reason\): set aside as $(literal "$L").damaged.[0-9]+; this process keeps its own lower-tier limits$" "$OUT")" 1
  aside=$(ls "$L".damaged.* 2>/dev/null | head -1)
  check "  the ledger is kept under that name, not deleted" test -f "$aside"
  check "  and no new one is made in its place by that process" test ! -e "$L"
  release_held
  check_eq "  the process that held its share when it was $damage exits 0 (no SIGBUS)" "$HELD_RC" 0
  check "  and says in one line that the ledger failed validation" \
    test "$(grep -c "ledger $L failed validation" "$HELD_OUT")" -eq 1
done

# ---------------------------------------------------------------- a ledger whose lock a hung process holds
L=$SCRATCH/ledger-locked
under_tiermem "${BASE[@]}" TIERMEM_LEDGER="$L" -- "$PROBE" pieces 64M 64M >/dev/null 2>&1
start_held "${BASE[@]}" TIERMEM_LEDGER="$L" -- "$PROBE" pieces 64M 64M
rm -f "$SCRATCH/unlock"
"$HOLD" "$L" "$SCRATCH/unlock" >"$SCRATCH/hold.out" 2>&1 &
hold_pid=$!
for _ in $(seq 100); do grep -q '^locked' "$SCRATCH/hold.out" && break; sleep 0.1; done
check "a hung process holds the ledger's lock" grep -q '^locked' "$SCRATCH/hold.out"
start=$SECONDS
OUT=$(timeout 10 env LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "${BASE[@]}" TIERMEM_LEDGER="$L" \
      "$PROBE" pieces 64M 64M 2>&1); RC=$?
TOOK=$((SECONDS - start))
check_eq "a new process is not held: exit 0 within 10 s (took ${TOOK} s)" "$RC" 0
check_eq "  one line: it waited 2 s and keeps its own limits" \
  "$(count "^tiermem: warning: ledger $(literal "$L") is not used: another process has held its lock for 2000 ms; this process keeps its own lower-tier limits$" "$OUT")" 1
start=$SECONDS
touch "$HELD_FILE"; timeout 10 tail --pid="$HELD_PID" -f /dev/null; wait "$HELD_PID"; HELD_RC=$?
TOOK=$((SECONDS - start))
check_eq "a process that joined before exits 0 within 10 s (took ${TOOK} s), not hung at exit" "$HELD_RC" 0
check "  saying the holder is taken as hung" \
  grep -q "^tiermem: warning: ledger $L: its lock has been held by another process for 2000 ms; that process is taken as hung and this one keeps its own lower-tier limits$" "$HELD_OUT"
start=$SECONDS
out=$(timeout 10 "$TIERMEM_STAT" --gc "$L" 2>&1); rc=$?
TOOK=$((SECONDS - start))
check_eq "tiermem-stat --gc is not held either (exit 0 within 10 s, took ${TOOK} s)" "$rc" 0
check "  and says why it did not wait" grep -q "the ledger's lock has been held by another process for 2000 ms" <<<"$out"
touch "$SCRATCH/unlock"; wait "$hold_pid"
check "  the ledger itself is left in place" test -f "$L"

# ---------------------------------------------------------------- a profile that is a FIFO
mkfifo "$SCRATCH/fifo.profile"
start=$SECONDS
OUT=$(timeout 10 env LD_PRELOAD="$(preload_value "$LIBTIERMEM")" SIMCUDA_MEM=64M TIERMEM_POLICY=heat \
      TIERMEM_PROFILE="$SCRATCH/fifo.profile" TIERMEM_LEDGER=off "$PROBE" pieces 32M 8M 2>&1); RC=$?
check_eq "TIERMEM_PROFILE naming a FIFO never blocks: exit 0 within 10 s" "$RC" 0
check_eq "  one line: not a regular file, neither read nor written" \
  "$(count "^tiermem: warning: profile $(literal "$SCRATCH")/fifo.profile: not a regular file, never read or written; ignored$" "$OUT") $(count profile "$OUT")" "1 1"
check "  still a FIFO" test -p "$SCRATCH/fifo.profile"

# ---------------------------------------------------------------- a name holding a newline
evil="$SCRATCH/evil
tiermem: error: forged line"
mkfifo "$evil"
OUT=$(timeout 10 env LD_PRELOAD="$(preload_value "$LIBTIERMEM")" SIMCUDA_MEM=64M TIERMEM_POLICY=heat \
      TIERMEM_PROFILE="$evil" TIERMEM_LEDGER=off "$PROBE" pieces 32M 8M 2>&1)
check "a newline in a name cannot start a line of its own" lacks "^tiermem: error: forged line" "$OUT"
check "  it is written \\n, on the warning's own line" grep -qF "profile $SCRATCH/evil\\ntiermem: error: forged line: not a regular file" <<<"$OUT"

# ---------------------------------------------------------------- log files
: >"$SCRATCH/victim"
ln "$SCRATCH/victim" "$SCRATCH/linked.log"
OUT=$(under_tiermem SIMCUDA_MEM=64M TIERMEM_LOG=info TIERMEM_LOG_FILE="$SCRATCH/linked.log" -- "$PROBE" pieces 32M 8M 2>&1)
check_eq "a log file with a hard link: refused in one line" \
  "$(count "^tiermem: TIERMEM_LOG_FILE='$(literal "$SCRATCH")/linked.log' cannot be opened \(it has other names \(hard links\)\); tiering is disabled" "$OUT")" 1
check_eq "  nothing is appended through the link" "$(stat -c %s "$SCRATCH/victim")" 0
under_tiermem SIMCUDA_MEM=64M TIERMEM_LOG=info TIERMEM_LOG_FILE="$SCRATCH/new.log" -- "$PROBE" pieces 32M 8M >/dev/null 2>&1
check_eq "a log file tiermem creates is 0600 and holds its lines" \
  "$(stat -c %a "$SCRATCH/new.log") $(grep -c '^tiermem: ' "$SCRATCH/new.log" | sed 's/^[1-9][0-9]*$/some/')" "600 some"

# ---------------------------------------------------------------- settings
OUT=$(under_tiermem SIMCUDA_MEM=64M TIERMEM_DRIVER=/nonexistent/libcuda.so -- "$PROBE" pieces 32M 8M 2>&1)
check_eq "a bad TIERMEM_DRIVER: one line" "$(count '^tiermem: ' "$OUT")" 1
OUT=$(under_tiermem SIMCUDA_MEM=64M TIERMEM_HBM_LIMIT=0 TIERMEM_LEDGER=off -- "$PROBE" pieces 32M 8M 2>&1); RC=$?
check_eq "TIERMEM_HBM_LIMIT=0: accepted (exit 0) with a warning naming the variable" \
  "$RC $(count '^tiermem: warning: TIERMEM_HBM_LIMIT \(0 B here\) leaves HBM less than one chunk' "$OUT")" "0 1"
OUT=$(under_tiermem SIMCUDA_MEM=64M TIERMEM_CXL_NODE=0 TIERMEM_LEDGER=off -- "$PROBE" pieces 32M 8M 2>&1)
check "TIERMEM_CXL_NODE=0 on the DDR tier's node: the warning names the variable" \
  grep -q "^tiermem: warning: TIERMEM_CXL_NODE=0 names the DDR tier's node too" <<<"$OUT"
for setting in TIERMEM_LOG_FILE=on TIERMEM_PROFILE=1 TIERMEM_STATS=0; do
  name=${setting%%=*} value=${setting#*=}
  OUT=$(cd "$SCRATCH" && under_tiermem SIMCUDA_MEM=64M "$setting" -- "$PROBE" pieces 32M 8M 2>&1)
  check_eq "$setting is not a file name: one line saying so, and no file '$value' made" \
    "$(count "^tiermem: $name='$value' is not valid: expected .*a word such as 0, 1, on or off is not taken for a file name" "$OUT") $(test -e "$SCRATCH/$value" && echo made || echo none)" "1 none"
done

# ---------------------------------------------------------------- another user's files (root)
USER_NAME=tmprobe$$ GROUP_NAME=tmprobeg$$
why=""
[ "$(id -u)" = 0 ] || why="needs root (a second user is created for it)"
for tool in useradd userdel groupadd groupdel runuser setpriv; do
  [ -z "$why" ] && ! command -v "$tool" >/dev/null && why="$tool is not installed"
done
if [ -z "$why" ] && ! { groupadd "$GROUP_NAME" && useradd -M -N -G "$GROUP_NAME" -s /usr/sbin/nologin "$USER_NAME"; } >/dev/null 2>&1; then
  why="useradd $USER_NAME or groupadd $GROUP_NAME failed"
  groupdel "$GROUP_NAME" >/dev/null 2>&1
fi
if [ -n "$why" ]; then
  for what in "a squatted ledger is refused in one line" "  left unchanged" \
              "another user's profile in a sticky directory is refused in one line" "  its owner, inode, mode and bytes unchanged" \
              "  no file of this process left beside it" "a group member truncates root's group ledger: root's processes exit 0" \
              "  the ledger is set aside, in one line"; do
    skip "$what" "$why"
  done
  done_testing; exit
fi
trap 'userdel "$USER_NAME" >/dev/null 2>&1; groupdel "$GROUP_NAME" >/dev/null 2>&1; rm -rf "$SCRATCH"' EXIT
as_user() { runuser -u "$USER_NAME" -- "$@"; }
chmod 711 "$SCRATCH"
STICKY=$SCRATCH/sticky
mkdir "$STICKY"; chmod 1777 "$STICKY"
facts() { stat -c '%u %i %a %s' "$1"; sha256sum <"$1" | cut -c1-16; }

# a ledger planted where this process's would be
as_user sh -c "head -c 4096 /dev/zero >'$STICKY/ledger'; chmod 666 '$STICKY/ledger'"
before=$(facts "$STICKY/ledger")
OUT=$(under_tiermem "${BASE[@]}" TIERMEM_LEDGER="$STICKY/ledger" -- "$PROBE" pieces 64M 64M 2>&1); RC=$?
check_eq "a squatted ledger is refused in one line; the process runs on its own limits" \
  "$RC $(count "^tiermem: warning: ledger $(literal "$STICKY")/ledger is not used: it belongs to another user; this process keeps its own lower-tier limits$" "$OUT")" "0 1"
check_eq "  left unchanged" "$(facts "$STICKY/ledger")" "$before"

# a valid profile of another user
under_tiermem SIMCUDA_MEM=64M TIERMEM_POLICY=heat TIERMEM_LEDGER=off TIERMEM_PROFILE="$SCRATCH/root.profile" -- \
  "$PROBE" pieces 32M 8M >/dev/null 2>&1
as_user sh -c "cat >'$STICKY/heat.profile'; chmod 644 '$STICKY/heat.profile'" <"$SCRATCH/root.profile"
before=$(facts "$STICKY/heat.profile")
OUT=$(under_tiermem SIMCUDA_MEM=64M TIERMEM_POLICY=heat TIERMEM_LEDGER=off TIERMEM_PROFILE="$STICKY/heat.profile" -- \
      "$PROBE" pieces 32M 8M 2>&1)
check_eq "another user's profile in a sticky directory is refused in one line" \
  "$(count "^tiermem: warning: profile $(literal "$STICKY")/heat.profile: owned by another user \(uid [0-9]+\), never read or written; ignored$" "$OUT") $(count profile "$OUT")" "1 1"
check_eq "  its owner, inode, mode and bytes unchanged" "$(facts "$STICKY/heat.profile")" "$before"
check_eq "  no file of this process left beside it" "$(ls -A "$STICKY" | grep -vc '^heat.profile$\|^ledger$')" 0

# a member of the group root's processes share a ledger with truncates it under them
gid=$(getent group "$GROUP_NAME" | cut -d: -f3)
G=$STICKY/group-ledger
in_group=(setpriv --groups "$gid" --)
start_held "${BASE[@]}" TIERMEM_GROUP="$GROUP_NAME" TIERMEM_LEDGER="$G" -- "${in_group[@]}" "$PROBE" pieces 64M 64M
as_user truncate -s 100 "$G"
OUT=$(timeout 10 env LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "${BASE[@]}" TIERMEM_GROUP="$GROUP_NAME" \
      TIERMEM_LEDGER="$G" "${in_group[@]}" "$PROBE" pieces 64M 64M 2>&1); RC=$?
release_held
check_eq "a group member truncates root's group ledger: root's processes exit 0" "$RC $HELD_RC" "0 0"
check_eq "  the ledger is set aside, in one line" \
  "$(count "^tiermem: warning: ledger $(literal "$G") failed validation \(its size is not a ledger's\): set aside as $(literal "$G").damaged.[0-9]+; " "$OUT") $(ls "$G".damaged.* 2>/dev/null | wc -l)" "1 1"
done_testing
