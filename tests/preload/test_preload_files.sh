#!/usr/bin/env bash
# Files the interposer is pointed at: TIERMEM_STATS and TIERMEM_LOG_FILE never damage a
# file tiermem did not create (special files, symlinks, files of another user), the
# default region goes away on SIGTERM and SIGHUP, and values in messages are escaped.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
SIM=(SIMCUDA_MEM=256M SIMCUDA_NUMA_NODES=0,1)
# "mode owner links size" of a path, without following a symlink
describe() { stat -c '%A %U %h %s' "$1"; }

# ---------------------------------------------------------------- TIERMEM_STATS
if [ "$(id -u)" -eq 0 ]; then
  mknod "$SCRATCH/null" c 1 3 && ln "$SCRATCH/null" "$SCRATCH/null2"
  before=$(describe "$SCRATCH/null2")
  out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/null" -- "$PROBE" exit 0 2>&1); rc=$?
  check_eq "TIERMEM_STATS at a device file: the program runs" "$rc" 0
  check "TIERMEM_STATS at a device file: it is still there" test -c "$SCRATCH/null"
  check_eq "TIERMEM_STATS at a device file: mode, owner and links unchanged" "$(describe "$SCRATCH/null2")" "$before"
  check "TIERMEM_STATS at a device file: one line says it is left untouched" \
    grep -q "^tiermem: warning: cannot create the stats region '$SCRATCH/null' (it exists and is not a stats region of this user; it is left untouched); going on without it" <<<"$out"

  echo planted >"$SCRATCH/planted" && chown nobody "$SCRATCH/planted" && chmod 666 "$SCRATCH/planted"
  out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/planted" -- "$PROBE" exit 0 2>&1)
  check_eq "TIERMEM_STATS at another user's file: its bytes, mode and owner unchanged" \
    "$(cat "$SCRATCH/planted") $(describe "$SCRATCH/planted")" "planted -rw-rw-rw- nobody 1 8"
  check "TIERMEM_STATS at another user's file: one line" grep -q "^tiermem: warning: cannot create the stats region '$SCRATCH/planted'" <<<"$out"
else
  skip "TIERMEM_STATS at a device file or another user's file" "mknod and chown need root"
fi

echo mine >"$SCRATCH/notes"
out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/notes" -- "$PROBE" exit 0 2>&1)
check_eq "TIERMEM_STATS at an ordinary file of this user that is no region: kept as it was" "$(cat "$SCRATCH/notes")" mine
ln -s "$SCRATCH/notes" "$SCRATCH/link"
out=$(under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/link" -- "$PROBE" exit 0 2>&1)
check "TIERMEM_STATS at a symlink: not followed" test "$(cat "$SCRATCH/notes")" == mine -a -L "$SCRATCH/link"
mkfifo "$SCRATCH/fifo"
out=$(timeout 20 env "${SIM[@]}" TIERMEM_STATS="$SCRATCH/fifo" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "$PROBE" exit 0 2>&1); rc=$?
check_eq "TIERMEM_STATS at a FIFO: no hang, the program's status" "$rc" 0

under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/kept" -- "$PROBE" exit 0 >/dev/null 2>&1
first=$(stat -c '%i %a' "$SCRATCH/kept")
under_tiermem "${SIM[@]}" TIERMEM_STATS="$SCRATCH/kept" -- "$PROBE" exit 0 >/dev/null 2>&1
check "a kept region of this user is replaced by a new file (mode 0600)" \
  test "$(stat -c '%i %a' "$SCRATCH/kept")" != "$first" -a "$(stat -c %a "$SCRATCH/kept")" == 600
check "and it holds the new run's region" grep -q '"state":"exited"' <<<"$("$TIERMEM_STAT" --json "$SCRATCH/kept")"
check_eq "no temporary file is left beside it" "$(ls "$SCRATCH" | grep -c '^kept\.')" 0

# ---------------------------------------------------------------- TIERMEM_LOG_FILE
cp /etc/hostname "$SCRATCH/target" 2>/dev/null || echo host >"$SCRATCH/target"
ln -s "$SCRATCH/target" "$SCRATCH/log-link"
before=$(md5sum <"$SCRATCH/target")
out=$(under_tiermem "${SIM[@]}" TIERMEM_LOG=info TIERMEM_LOG_FILE="$SCRATCH/log-link" -- "$PROBE" exit 0 2>&1)
check_eq "TIERMEM_LOG_FILE at a symlink: the file it points to is unchanged" "$(md5sum <"$SCRATCH/target")" "$before"
check "TIERMEM_LOG_FILE at a symlink: one line says why" \
  grep -q "^tiermem: TIERMEM_LOG_FILE='$SCRATCH/log-link' cannot be opened (a symbolic link); tiering is disabled" <<<"$out"
out=$(timeout 20 env "${SIM[@]}" TIERMEM_LOG_FILE="$SCRATCH/fifo" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "$PROBE" exit 0 2>&1); rc=$?
check "TIERMEM_LOG_FILE at a FIFO: refused at once" \
  grep -q "^tiermem: TIERMEM_LOG_FILE='$SCRATCH/fifo' cannot be opened (No such device or address\|not a regular file)" <<<"$out"
if [ "$(id -u)" -eq 0 ]; then
  : >"$SCRATCH/theirs" && chown nobody "$SCRATCH/theirs"
  out=$(under_tiermem "${SIM[@]}" TIERMEM_LOG=info TIERMEM_LOG_FILE="$SCRATCH/theirs" -- "$PROBE" exit 0 2>&1)
  check "TIERMEM_LOG_FILE owned by another user: refused, the file stays empty" \
    test ! -s "$SCRATCH/theirs" -a "$(grep -c "cannot be opened (owned by another user)" <<<"$out")" -eq 1
else
  skip "TIERMEM_LOG_FILE owned by another user" "chown needs root"
fi

# ---------------------------------------------------------------- escaped values
esc=$'\033[31mred'
out=$(under_tiermem "${SIM[@]}" TIERMEM_DRIVER="/nonexistent/$esc" -- "$PROBE" exit 0 2>&1)
check "TIERMEM_DRIVER in its message: control characters escaped" \
  test "$(grep -c $'\033' <<<"$out")" -eq 0 -a "$(grep -c "TIERMEM_DRIVER='/nonexistent/?\[31mred'" <<<"$out")" -eq 1
out=$(under_tiermem "${SIM[@]}" TIERMEM_LOG_FILE="/nonexistent/$esc" -- "$PROBE" exit 0 2>&1)
check "TIERMEM_LOG_FILE in its message: control characters escaped" \
  test "$(grep -c $'\033' <<<"$out")" -eq 0 -a "$(grep -c "TIERMEM_LOG_FILE='/nonexistent/?\[31mred'" <<<"$out")" -eq 1

# ---------------------------------------------------------------- signals
for sig in TERM HUP; do
  if start_held "${SIM[@]}" -- "$PROBE" pieces 8M 4M; then
    region=$REGIONS/tiermem.$HELD_PID
    there=$(test -f "$region" && echo yes)
    kill -s "$sig" "$HELD_PID"; wait "$HELD_PID"; rc=$?
    check_eq "SIG$sig: the program dies of it as without tiermem" "$rc" $((128 + $(kill -l "$sig")))
    check_eq "SIG$sig: the region was there and is removed" "$there $(test -e "$region" || echo gone)" "yes gone"
  else
    check "SIG$sig: the held program started" false
  fi
done
# a signal the program ignores stays ignored
(trap '' TERM; start_held "${SIM[@]}" -- "$PROBE" pieces 8M 4M || exit 3
 kill -TERM "$HELD_PID"; sleep 0.5; kill -0 "$HELD_PID" || exit 4; release_held; exit "$HELD_RC")
check_eq "an ignored SIGTERM stays ignored: the program finishes" "$?" 0
done_testing
