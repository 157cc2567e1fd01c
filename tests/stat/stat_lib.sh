# Helpers of tests/stat (sourced after tests/lib/tap.sh and tests/preload/preload_lib.sh).
#   hold NAME ENV=... -- cmd...   starts `cmd HOLD_FILE` under the interposer, waits for its
#                                 "ready"; sets HOLD_PID[NAME]; false when it did not start
#   unhold NAME                   lets it finish and waits for it
#   start_exporter LOG args...    tiermem-stat --serve 127.0.0.1:0 args; sets XPID and XURL
#                                 (http://127.0.0.1:PORT)
#   stop_exporter                 SIGTERM, bounded wait; sets XRC
declare -A HOLD_PID
hold() {
  local name=$1; shift
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  rm -f "$SCRATCH/$name.go" "$SCRATCH/$name.out"
  env "${vars[@]}" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "$@" "$SCRATCH/$name.go" >"$SCRATCH/$name.out" 2>&1 &
  HOLD_PID[$name]=$!
  for _ in $(seq 600); do
    grep -q '^ready' "$SCRATCH/$name.out" 2>/dev/null && return 0
    kill -0 "${HOLD_PID[$name]}" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
unhold() {
  touch "$SCRATCH/$1.go"
  wait "${HOLD_PID[$1]}" 2>/dev/null
}
start_exporter() {
  local log=$1; shift
  "$TIERMEM_STAT" --serve 127.0.0.1:0 "$@" 2>"$log" &
  XPID=$!
  XURL=
  for _ in $(seq 300); do
    XURL=$(sed -n 's|^tiermem-stat: serving .* at \(http://[0-9.:]*\)/metrics$|\1|p' "$log" 2>/dev/null)
    [ -n "$XURL" ] && return 0
    kill -0 "$XPID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
stop_exporter() {
  kill -TERM "$XPID" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$XPID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$XPID" 2>/dev/null; then kill -KILL "$XPID"; XRC=137; else wait "$XPID"; XRC=$?; fi
}
