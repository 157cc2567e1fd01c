# Helpers for the server's shell tests; source after tests/lib/tap.sh.
#   start_server LOG args...   starts tiermem-llm serve on a free loopback port, with the
#                              variables in SERVER_ENV (NAME=value ...); sets SPID, PORT, URL
#   stop_server                SIGTERM, then waits (bounded) for the exit status in SRC
LLM=$B/bin/tiermem-llm
MODEL=$TM_SHARED/models/stories260K.gguf
SERVER_ENV=()

start_server() {
  local log=$1; shift
  env "${SERVER_ENV[@]}" "$LLM" serve -m "$MODEL" --port 0 "$@" 2>"$log" &
  SPID=$!
  PORT=
  for _ in $(seq 600); do   # up to 60 s on a busy machine
    PORT=$(sed -n 's|^tiermem-llm: serving on http://127.0.0.1:\([0-9]*\)$|\1|p' "$log" 2>/dev/null)
    [ -n "$PORT" ] && break
    kill -0 $SPID 2>/dev/null || break
    sleep 0.1
  done
  URL=http://127.0.0.1:$PORT
  [ -n "$PORT" ] || { echo "# the server did not start:"; sed 's/^/#   /' "$log"; return 1; }
}

stop_server() {
  kill -TERM $SPID 2>/dev/null
  for _ in $(seq 600); do kill -0 $SPID 2>/dev/null || break; sleep 0.1; done
  if kill -0 $SPID 2>/dev/null; then
    echo "# the server did not stop within 60 s of SIGTERM"; kill -KILL $SPID; SRC=137
  else
    wait $SPID; SRC=$?
  fi
}

# post PATH JSON: the response body; the status code goes to $T/status
post() { curl -s --max-time 120 -o - -w '%{http_code}' "${AUTH[@]}" "$URL$1" -H 'Content-Type: application/json' -d "$2" \
           | { body=$(cat); printf '%s' "${body:0:-3}"; printf '%s' "${body: -3}" >"$T/status"; }; }
# sse_text FILE: the text of an SSE stream (completions or chat deltas), concatenated
sse_text() { sed -n 's/^data: //p' "$1" | grep -v '^\[DONE\]$' | jq -j '.choices[0] | (.text // .delta.content // "")'; }
