#!/usr/bin/env bash
# tiermem-llm serve with curl, on simcuda with stories260K: the endpoints, streaming and
# not, 64 concurrent streams against each request alone, the prefix cache, stop strings,
# bad input, the API key, the queue limit, disconnects, and SIGTERM.
source "$(dirname "$0")/../lib/tap.sh"
require_models stories260K.gguf
source "$(dirname "$0")/serve_lib.sh"
T=$(mktemp -d)
SPID=
trap '[ -n "$SPID" ] && kill -KILL $SPID 2>/dev/null; rm -rf "$T"' EXIT
AUTH=(-H "Authorization: Bearer s3cret")

REF=", there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
# 16-token prefill chunks: longer prompts spread over several steps
start_server "$T/log" --kv-dtype f32 --kv-blocks 1024 --ctx 256 --api-key s3cret --prefill-chunk 16
check "the server starts on a loopback port" test -n "$PORT"

# --- endpoints ---------------------------------------------------------------------
check_eq "/health" "$(curl -s --max-time 10 "$URL/health")" '{"status":"ok"}'
check_eq "/v1/models lists the model" "$(curl -s --max-time 10 "${AUTH[@]}" "$URL/v1/models" | jq -r '.data[0].id')" \
  "stories260K.gguf"
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":32,"temperature":0}')
check_eq "completion: status" "$(cat "$T/status")" 200
check_eq "completion: the reference text" "$(jq -r '.choices[0].text' <<<"$r")" "$REF"
check_eq "completion: usage" "$(jq -c '.usage | [.prompt_tokens, .completion_tokens, .total_tokens]' <<<"$r")" "[5,32,37]"
check_eq "completion: finish_reason" "$(jq -r '.choices[0].finish_reason' <<<"$r")" length

curl -sN --max-time 120 "${AUTH[@]}" "$URL/v1/completions" \
  -d '{"prompt":"Once upon a time","max_tokens":32,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}' >"$T/sse"
check_eq "stream: deltas add up to the reference" "$(sse_text "$T/sse")" "$REF"
check_eq "stream: ends with [DONE]" "$(tail -2 "$T/sse" | head -1)" "data: [DONE]"
check_eq "stream: usage chunk" "$(sed -n 's/^data: //p' "$T/sse" | grep -v DONE | tail -1 | jq -c '.usage.completion_tokens')" 32

chat='{"messages":[{"role":"system","content":"Tell a story."},{"role":"user","content":"Once upon a time"}],"max_tokens":20,"temperature":0'
r=$(post /v1/chat/completions "$chat}")
check_eq "chat: status" "$(cat "$T/status")" 200
check_eq "chat: assistant message" "$(jq -r '.choices[0].message.role' <<<"$r")" assistant
curl -sN --max-time 120 "${AUTH[@]}" "$URL/v1/chat/completions" -d "$chat,\"stream\":true}" >"$T/chat.sse"
check_eq "chat: streamed text equals the whole answer" "$(sse_text "$T/chat.sse")" "$(jq -r '.choices[0].message.content' <<<"$r")"
check_eq "chat: the first chunk carries the role" \
  "$(sed -n 's/^data: //p' "$T/chat.sse" | head -1 | jq -r '.choices[0].delta.role')" assistant

# --- stop strings and the prefix cache --------------------------------------------
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":32,"temperature":0,"stop":["Lily"]}')
check_eq "stop: text ends before the stop string" "$(jq -r '.choices[0].text' <<<"$r")" ", there was a little girl named "
check_eq "stop: finish_reason" "$(jq -r '.choices[0].finish_reason' <<<"$r")" stop
long='"prompt":"Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."'
a=$(post /v1/completions "{$long,\"max_tokens\":16,\"temperature\":0}")
b=$(post /v1/completions "{$long,\"max_tokens\":16,\"temperature\":0}")
check "prefix cache: the repeat finds its prompt's full blocks cached" \
  test "$(jq '.usage.prompt_tokens_details.cached_tokens' <<<"$b")" -ge 16
check_eq "prefix cache: same text from cached KV" "$(jq -r '.choices[0].text' <<<"$b")" "$(jq -r '.choices[0].text' <<<"$a")"
"$LLM" -m "$MODEL" --kv-dtype f32 --kv-blocks 256 -p "$(jq -r .prompt <<<"{$long}")" -n 16 >"$T/cli.out" 2>/dev/null
check_eq "a prompt prefilled in 16-token chunks gives the CLI's text (one chunk)" \
  "$(jq -r .prompt <<<"{$long}")$(jq -r '.choices[0].text' <<<"$a")" "$(cat "$T/cli.out")"

# --- 64 concurrent streams, each equal to its request alone ------------------------
prompts=("Once upon a time" "The little dog" "Lily and Tom went to the park" "One day, a big bird"
         "She was very happy because" "Tom had a red ball" "The sun was" "A cat sat on")
for i in "${!prompts[@]}"; do
  alone[$i]=$(post /v1/completions "{\"prompt\":\"${prompts[$i]}\",\"max_tokens\":24,\"temperature\":0}" | jq -r '.choices[0].text')
done
pids=()
for k in $(seq 0 63); do
  i=$((k % 8))
  curl -sN --max-time 300 "${AUTH[@]}" "$URL/v1/completions" \
    -d "{\"prompt\":\"${prompts[$i]}\",\"max_tokens\":24,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
    >"$T/c$k.sse" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
bad=0
for k in $(seq 0 63); do
  i=$((k % 8))
  [ "$(sse_text "$T/c$k.sse")" == "${alone[$i]}" ] || { bad=$((bad + 1)); echo "# stream $k differs from prompt $i alone"; }
  grep -q '^data: \[DONE\]$' "$T/c$k.sse" || { bad=$((bad + 1)); echo "# stream $k has no [DONE]"; }
done
check "64 concurrent streams: each equals its request alone, none lost or duplicated" test $bad -eq 0
metrics=$(curl -s --max-time 10 "$URL/metrics")
check "metrics: requests, tokens and histograms" grep -q '^tiermem_llm_time_to_first_token_seconds_count ' <<<"$metrics"
ok_count=$(sed -n 's/^tiermem_llm_requests_total{outcome="ok"} //p' <<<"$metrics")
echo "# requests ok so far: $ok_count"
check "metrics: every finished request counted (7 + 8 alone + 64)" test "${ok_count:-0}" -ge 79
check "metrics: the streams shared decode steps (a batch of 8 or more)" \
  awk '$1 == "tiermem_llm_batch_size_max" { exit !($2 >= 8) }' <<<"$metrics"
check "metrics: prefix hits recorded" awk '$1 == "tiermem_llm_prefix_hit_rate" { exit !($2 > 0) }' <<<"$metrics"

# --- bad input: 400 with an OpenAI error object -----------------------------------
expect_400() {
  local name=$1 path=$2 json=$3 pattern=$4
  local r; r=$(post "$path" "$json")
  check_eq "bad input, $name: status" "$(cat "$T/status")" 400
  check "bad input, $name: error says '$pattern'" grep -q -- "$pattern" <<<"$(jq -r '.error.message + " " + .error.type' <<<"$r")"
}
expect_400 "invalid JSON" /v1/completions '{"prompt": "x",' "invalid JSON at line 1"
expect_400 "not an object" /v1/completions '[1,2]' "must be a JSON object"
expect_400 "max_tokens 0" /v1/completions '{"prompt":"x","max_tokens":0}' "'max_tokens' must be at least 1"
expect_400 "max_tokens -5" /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"max_tokens":-5}' "at least 1"
expect_400 "temperature of the wrong type" /v1/completions '{"prompt":"x","temperature":"hot"}' "'temperature' must be a number"
expect_400 "stream of the wrong type" /v1/completions '{"prompt":"x","stream":"yes"}' "'stream' must be true or false"
expect_400 "stop of the wrong type" /v1/completions '{"prompt":"x","stop":7}' "'stop' must be a string"
expect_400 "n=2" /v1/completions '{"prompt":"x","n":2}' "only n=1 is supported"
expect_400 "no prompt" /v1/completions '{"max_tokens":3}' "'prompt' is required"
expect_400 "no messages" /v1/chat/completions '{"messages":[]}' "'messages' must be a non-empty array"
expect_400 "prompt beyond the context" /v1/completions "{\"prompt\":\"$(printf 'Once upon a time %.0s' $(seq 80))\"}" \
  "the context is 256"
expect_400 "max_tokens past the context" /v1/completions '{"prompt":"Once upon a time","max_tokens":300}' "past the context of 256"
check_eq "unknown endpoint: 404" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/v1/nothing")" 404
check_eq "GET on completions: 405" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "${AUTH[@]}" "$URL/v1/completions")" 405
check_eq "no API key: 401" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/v1/models")" 401
check_eq "wrong API key: 401" \
  "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Authorization: Bearer s3cres' "$URL/v1/models")" 401
check "the server is still healthy" test "$(curl -s --max-time 10 "$URL/health")" == '{"status":"ok"}'
stop_server
check_eq "SIGTERM when idle: exit 0" "$SRC" 0
SPID=

# --- the queue limit and a disconnect ------------------------------------------------
# One sequence in the batch and one place in the queue: a long stream runs, a second
# waits, a third gets 429. Cutting the first stream frees its place for the second.
# A pool of 100 blocks (1600 tokens) under a context of 2048.
start_server "$T/log2" --kv-dtype f32 --kv-blocks 100 --max-batch 1 --max-queue 1
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":1700}')
check_eq "more than the KV pool holds: 400" "$(cat "$T/status")" 400
check "  says so" grep -q "more than the 1600 tokens the KV pool holds" <<<"$(jq -r .error.message <<<"$r")"
long_req='{"prompt":"Once upon a time","max_tokens":1500,"temperature":0,"stream":true}'
curl -sN --max-time 300 "$URL/v1/completions" -d "$long_req" >"$T/first.sse" &
first=$!
for _ in $(seq 300); do grep -qs '^data: ' "$T/first.sse" && break; sleep 0.1; done
curl -sN --max-time 300 "$URL/v1/completions" -d '{"prompt":"The little dog","max_tokens":8,"temperature":0,"stream":true}' >"$T/second.sse" &
second=$!
for _ in $(seq 300); do curl -s --max-time 5 "$URL/metrics" | grep -q '^tiermem_llm_queue_depth 1$' && break; sleep 0.1; done
r=$(post /v1/completions '{"prompt":"A cat","max_tokens":4}')
check_eq "queue full: 429" "$(cat "$T/status")" 429
check_eq "queue full: rate limit error" "$(jq -r '.error.type' <<<"$r")" rate_limit_error
kill $first 2>/dev/null; wait $first 2>/dev/null
wait $second
check "after the first stream's client went away, the queued request ran to the end" \
  grep -q '^data: \[DONE\]$' "$T/second.sse"
check "the cut stream never finished" test -z "$(grep -c '"finish_reason":"length"' "$T/first.sse" | grep -v '^0$')"
metrics=$(curl -s --max-time 10 "$URL/metrics")
check "metrics: the disconnect counted as aborted" grep -q '^tiermem_llm_requests_total{outcome="aborted"} 1$' <<<"$metrics"
check "metrics: nothing holds KV blocks once idle" grep -q '^tiermem_llm_kv_blocks_used 0$' <<<"$metrics"

# --- SIGTERM finishes in-flight requests, answers 503 to new ones, exits 0 ----------
curl -sN --max-time 300 "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":true}' >"$T/drain.sse" &
drain=$!
for _ in $(seq 300); do grep -qs '^data: ' "$T/drain.sse" && break; sleep 0.1; done
kill -TERM $SPID
for _ in $(seq 100); do grep -q "draining" "$T/log2" && break; sleep 0.1; done
check_eq "while draining, /health answers 503" \
  "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")" 503
wait $drain
grep -q '"finish_reason":"length"' "$T/drain.sse" || { tail -c 400 "$T/drain.sse"; tail -3 "$T/log2"; } | sed 's/^/# /'
check "SIGTERM: the in-flight stream ran to its max_tokens" grep -q '"finish_reason":"length"' "$T/drain.sse"
stop_server
check_eq "SIGTERM with a request in flight: exit 0" "$SRC" 0
SPID=

# --- command-line mistakes: one line each, exit 2 ---------------------------------------
cli_error() {
  local name=$1 pattern=$2; shift 2
  "$LLM" "$@" >/dev/null 2>"$T/cli.err"
  local rc=$?
  check_eq "$name: exit 2" "$rc" 2
  check "$name: says '$pattern'" grep -q -- "$pattern" "$T/cli.err"
}
cli_error "serve without a model" "serve takes -m MODEL" serve --port 0
cli_error "serve with a prompt" "serve takes -m MODEL and no -p" serve -m "$MODEL" -p hi
cli_error "a port out of range" "--port expects an integer from 0 to 65535" serve -m "$MODEL" --port 70000
cli_error "a serve option on a one-shot run" "--port is an option of 'tiermem-llm serve'" -m "$MODEL" -p hi --port 9
cli_error "a host name this machine cannot resolve" "error: --host 'no-such-host.invalid' is no address and no host name" \
  serve -m "$MODEL" --host no-such-host.invalid --port 0
start_server "$T/log4" --kv-blocks 64 && PORT1=$PORT
"$LLM" serve -m "$MODEL" --kv-blocks 64 --port "$PORT1" >/dev/null 2>"$T/busy.err"
check_eq "a port in use: exit 1" "$?" 1
check "  says so" grep -q "error: cannot listen on 127.0.0.1 port $PORT1" "$T/busy.err"
stop_server

# --- the grace period ends what is left -----------------------------------------------
start_server "$T/log3" --kv-dtype f32 --kv-blocks 1024 --ctx 2048 --grace 0.5
curl -sN --max-time 300 "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":2000,"temperature":0,"stream":true}' >"$T/grace.sse" &
g=$!
for _ in $(seq 300); do grep -qs '^data: ' "$T/grace.sse" && break; sleep 0.1; done
stop_server
wait $g
check_eq "past the grace period: exit 0" "$SRC" 0
check "past the grace period: the stream ends with finish_reason abort and [DONE]" \
  grep -q '"finish_reason":"abort"' "$T/grace.sse"
SPID=
done_testing
