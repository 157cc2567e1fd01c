#!/usr/bin/env bash
# tiermem-llm serve with the official openai npm client (installed by `make deps` when
# npm is present): models, a completion, chat whole and streamed, and a 400.
source "$(dirname "$0")/../lib/tap.sh"
require_models stories260K.gguf
source "$(dirname "$0")/serve_lib.sh"
NPM_DIR=$B/npm/node_modules
if ! command -v node >/dev/null; then
  skip "openai client" "node is not installed (the openai package needs Node.js)"; done_testing; exit
fi
if [ ! -f "$NPM_DIR/openai/package.json" ]; then
  skip "openai client" "the openai npm package is not in $NPM_DIR (make deps installs it when npm is present)"
  done_testing; exit
fi
T=$(mktemp -d)
SPID=
trap '[ -n "$SPID" ] && kill -KILL $SPID 2>/dev/null; rm -rf "$T"' EXIT

start_server "$T/log" --kv-dtype f32 --kv-blocks 1024 --ctx 256
check "the server starts" test -n "$PORT"
URL=$URL NODE_PATH=$NPM_DIR timeout 120 node "$TM_ROOT/tests/serve/openai_client.js" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' "$T/err"
check "the client runs to the end" test $rc -eq 0
get() { jq -r "$1" "$T/out" 2>/dev/null; }
check_eq "models.list" "$(get .model)" stories260K.gguf
check_eq "completions.create: the reference text" "$(get .completion)" \
  ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
check_eq "completions.create: usage" "$(get .completion_tokens)" 32
check "chat.completions.create: an answer" test -n "$(get .chat)"
check_eq "chat stream: the deltas add up to the whole answer" "$(get .streamed)" "$(get .chat)"
check "chat stream: more than one chunk" test "$(get .chunks)" -gt 2
check_eq "max_tokens 0: BadRequestError 400" "$(get .bad_request)" "400 'max_tokens' must be at least 1, got 0"
stop_server
check_eq "exit 0 on SIGTERM" "$SRC" 0
SPID=
done_testing
