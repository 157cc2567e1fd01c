# Helpers of the interposer's shell tests (sourced after tests/lib/tap.sh).
#   under_tiermem ENV=... -- cmd...   runs cmd with libtiermem.so preloaded and the ENV given
#   without_tiermem ENV=... -- cmd... the same program, straight on simcuda
#   lacks PATTERN TEXT                true when no line of TEXT matches
#   json_tier JSON TIER FIELD         a number from the tiers of `tiermem-stat --json`
#   json_value JSON KEY               a top-level number of it
#   start_held VAR=... -- cmd...      starts a `probe pieces ... HOLD` run in the background
#                                     under the interposer; sets HELD_PID, HELD_OUT, HELD_FILE
#   release_held                      lets it finish; sets HELD_RC
#
# Cross runs (make test-aarch64) set TM_EMULATOR (qemu-aarch64 -L SYSROOT): the programs run
# under it, and the tools that read what they leave come from the host's build, TM_HOST_B.
PROBE=$B/tests/preload/probe
SERVING=$B/tests/preload/serving
DOORS=$B/tests/preload/doors
LIBTIERMEM=$B/lib/libtiermem.so
TIERMEM_STAT=${TM_HOST_B:-$B}/bin/tiermem-stat
export LD_LIBRARY_PATH=$B/lib/simcuda
SCRATCH=$(mktemp -d)
# where the interposer puts this user's stats regions (preload/region/region_path.h)
REGIONS=/dev/shm/tiermem-$(id -u)
trap 'rm -rf "$SCRATCH"' EXIT

under_tiermem() {
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  if [ -n "${TM_EMULATOR:-}" ]; then env "${vars[@]}" $TM_EMULATOR -E LD_PRELOAD="$LIBTIERMEM" "$@"
  else env "${vars[@]}" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "$@"; fi
}
without_tiermem() {
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  env "${vars[@]}" ${TM_EMULATOR:-} "$@"
}
json_tier() { grep "\"name\":\"$2\"" <<<"$1" | sed -E "s/.*\"$3\":([0-9]+).*/\1/"; }
json_value() { grep -o "\"$2\":[0-9]*" <<<"$1" | head -n 1 | cut -d: -f2; }
# The three tiers' FIELD values added up.
json_tier_sum() {
  local sum=0 tier value
  for tier in hbm cxl ddr; do value=$(json_tier "$1" "$tier" "$2"); sum=$((sum + ${value:-0})); done
  echo "$sum"
}
# check_sparse_read WHAT ARG: tiermem-stat ARG (a sparse region) answers within 10 s and
# 400 MB of address space (skipped under ASan, which reserves terabytes of it).
check_sparse_read() {
  local name="$1: read within 400 MB of address space" out rc
  if [ "${SAN:-0}" = 1 ]; then
    skip "$name" "ASan reserves terabytes of address space, so ulimit -v cannot bound it"
    return
  fi
  out=$( (ulimit -v 400000; timeout 10 "$TIERMEM_STAT" "$2") 2>&1); rc=$?
  check_eq "$name" "$rc $(grep -c '^tiermem: pid' <<<"$out")" "0 1"
}
# True when TEXT has no line matching PATTERN.
lacks() { ! grep -q -- "$1" <<<"$2"; }
# Re-emits the "ok"/"not ok" lines of a program's own TAP output as checks of this script.
relay_tap() {
  local prefix=$1 file=$2 line
  while IFS= read -r line; do
    case $line in
      "ok "*) check "$prefix: ${line#* - }" true ;;
      "not ok "*) check "$prefix: ${line#* - }" false ;;
    esac
  done <"$file"
}

start_held() {
  HELD_OUT=$SCRATCH/held.out HELD_FILE=$SCRATCH/held.go
  rm -f "$HELD_FILE" "$HELD_OUT" # a previous run's "ready" must not be read as this one's
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  # a plain command, so that $! is the program itself (env execs it)
  if [ -n "${TM_EMULATOR:-}" ]; then
    env "${vars[@]}" $TM_EMULATOR -E LD_PRELOAD="$LIBTIERMEM" "$@" "$HELD_FILE" >"$HELD_OUT" 2>&1 &
  else
    env "${vars[@]}" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "$@" "$HELD_FILE" >"$HELD_OUT" 2>&1 &
  fi
  HELD_PID=$!
  for _ in $(seq 600); do
    grep -q '^ready' "$HELD_OUT" 2>/dev/null && return 0
    kill -0 "$HELD_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
release_held() {
  touch "$HELD_FILE"
  wait "$HELD_PID"
  HELD_RC=$?
}
