#!/usr/bin/env bash
# tiermem-llm serve against clients that hold connections and do nothing: 1,000 silent
# connections (more than FD_SETSIZE) and 400 slowloris clients that send one request line
# and stop leave /health and /metrics answering within 1 s, and are closed after
# --idle-timeout; connections past --max-connections are refused with a few log lines,
# not one each; after SIGTERM /health answers 503 while the server drains.
source "$(dirname "$0")/../lib/tap.sh"
require_models stories260K.gguf
source "$(dirname "$0")/serve_lib.sh"
T=$(mktemp -d)
SPID= HOLD=
trap '[ -n "$HOLD" ] && kill $HOLD 2>/dev/null; [ -n "$SPID" ] && kill -KILL $SPID 2>/dev/null; rm -rf "$T"' EXIT
IDLE=$B/tests/serve/idle_clients

# hold_clients OUT N MODE SECONDS: starts idle_clients in the background (HOLD), waits until
# all N are open (bounded)
hold_clients() {
  : > "$1"
  "$IDLE" "$PORT" "$2" "$3" "$4" > "$1" 2> "$1.err" &
  HOLD=$!
  for _ in $(seq 100); do grep -q '^opened=' "$1" && return 0; kill -0 $HOLD 2> /dev/null || break; sleep 0.1; done
  sed 's/^/#   /' "$1.err"; return 1
}
# answers_within_1s PATH: the status of GET PATH, or 000 when it took over 1 s
status_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$URL$1"; }

start_server "$T/log" --kv-blocks 64 --idle-timeout 2
check "the server starts" test -n "$PORT"

# -------------------------------------------------------------- 1,000 silent connections
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 1200 ]; then
  skip "1,000 idle connections" "the hard descriptor limit is $(ulimit -Hn), under 1,200"
else
  hold_clients "$T/silent" 1000 silent 9
  check "1,000 silent connections are open" grep -q '^opened=1000$' "$T/silent"
  check_eq "  /health answers within 1 s" "$(status_of /health)" 200
  check_eq "  /metrics answers within 1 s" "$(status_of /metrics)" 200
  r=$(curl -s --max-time 5 "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":4,"temperature":0}')
  check "  a completion is served" grep -q '"finish_reason":"length"' <<<"$r"
  wait $HOLD; HOLD=
  check "  with --idle-timeout 2 the server closed all of them within 9 s ($(tail -1 "$T/silent"))" \
    grep -q '^closed_by_server=1000 ' "$T/silent"
fi

# -------------------------------------------------------------- slowloris
hold_clients "$T/loris" 400 line 9
check "400 connections that sent one request line and stopped are open" grep -q '^opened=400$' "$T/loris"
check_eq "  /health answers within 1 s" "$(status_of /health)" 200
wait $HOLD; HOLD=
check "  with --idle-timeout 2 the server closed all of them within 9 s ($(tail -1 "$T/loris"))" \
  grep -q '^closed_by_server=400 ' "$T/loris"
check_eq "the server is still healthy" "$(status_of /health)" 200
stop_server
check_eq "SIGTERM: exit 0" "$SRC" 0
SPID=

# -------------------------------------------------------------- quiet while the engine works
# One place in the batch: a long stream holds it while a whole (not streamed) completion and
# a stream wait in the queue for longer than --idle-timeout; neither connection is closed.
# The long stream is made long in time whatever the machine's speed: 3000 tokens run for
# several seconds even on an idle host, well past the idle timeout of 2 s.
start_server "$T/log3" --kv-dtype f32 --kv-blocks 1024 --ctx 4096 --max-batch 1 --idle-timeout 2
curl -sN --max-time 120 "$URL/v1/completions" \
  -d '{"prompt":"Once upon a time","max_tokens":3000,"temperature":0,"stream":true}' > "$T/long.sse" &
long=$!
for _ in $(seq 300); do grep -qs '^data: ' "$T/long.sse" && break; sleep 0.1; done
curl -s --max-time 120 "$URL/v1/completions" -d '{"prompt":"The dog","max_tokens":4,"temperature":0}' \
  > "$T/queued.json" &
queued=$!
curl -sN --max-time 120 "$URL/v1/completions" -d '{"prompt":"A cat","max_tokens":4,"stream":true}' > "$T/queued.sse" &
queued_stream=$!
wait $long $queued $queued_stream
check "a long stream ran to its end" grep -q '"finish_reason":"length"' "$T/long.sse"
gap=$(grep -c '^: keep-alive' "$T/queued.sse")
check "  a whole completion queued behind it got its answer" grep -q '"finish_reason":"length"' "$T/queued.json"
check "  a stream queued behind it got its answer" grep -q '^data: \[DONE\]$' "$T/queued.sse"
check "  the queued stream waited past the idle timeout (${gap} keep-alives)" test "$gap" -ge 3
stop_server
SPID=

# -------------------------------------------------------------- refused connections, few lines
start_server "$T/log2" --kv-blocks 64 --max-connections 16 --idle-timeout 2
hold_clients "$T/over" 300 silent 1
wait $HOLD; HOLD=
http_lines=$(grep -c '^tiermem-llm: http: ' "$T/log2")
check "300 connections past --max-connections 16: refused with 1 to 6 log lines (got $http_lines)" \
  test "$http_lines" -ge 1 -a "$http_lines" -le 6
for _ in $(seq 30); do [ "$(status_of /health)" = 200 ] && break; sleep 0.1; done
check_eq "  once they are gone, /health answers" "$(status_of /health)" 200

# -------------------------------------------------------------- draining answers 503
curl -sN --max-time 60 "$URL/v1/completions" \
  -d '{"prompt":"Once upon a time","max_tokens":600,"temperature":0,"stream":true}' > "$T/drain.sse" &
drain=$!
for _ in $(seq 300); do grep -qs '^data: ' "$T/drain.sse" && break; sleep 0.1; done
kill -TERM $SPID
for _ in $(seq 100); do grep -q "draining" "$T/log2" && break; sleep 0.1; done
check_eq "while draining, /health answers 503 within 1 s" "$(status_of /health)" 503
check_eq "  and says so" "$(curl -s --max-time 1 "$URL/health")" '{"status":"draining"}'
check_eq "  a new completion gets 503" \
  "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/v1/completions" -d '{"prompt":"x","max_tokens":2}')" 503
wait $drain
check "  the in-flight stream ran to the end" grep -q '^data: \[DONE\]$' "$T/drain.sse"
stop_server
check_eq "  exit 0" "$SRC" 0
SPID=
done_testing
