#!/usr/bin/env bash
# tiermem-llm takes llama.cpp's spellings: -c/--ctx-size, -t, -s, -ngl/--n-gpu-layers
# (accepted, with a note: every layer runs on the device), -n -1 (until the end of sequence
# or of the context), --version; and its server: --host by name, --alias or
# --served-model-name, GET /v1/models/{id}.
source "$(dirname "$0")/../lib/tap.sh"
LLM=$B/bin/tiermem-llm
MODEL=$TM_SHARED/models/stories260K.gguf
export LD_LIBRARY_PATH=$B/lib/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=$(mktemp -d)
SPID=
trap '[ -n "$SPID" ] && kill -KILL $SPID 2>/dev/null; rm -rf "$T"' EXIT

version=$(sed -n 's/^TIERMEM_VERSION := //p' "$TM_ROOT/Makefile")
check_eq "--version prints the release of the build" "$("$LLM" --version)" "tiermem-llm $version"

if [ ! -r "$MODEL" ]; then
  skip "llama.cpp's spellings on stories260K" "no test model at $MODEL (TM_SHARED=$TM_SHARED; see docs/install.md: Test data)"
  done_testing; exit
fi

ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
"$LLM" -m "$MODEL" -p "Once upon a time" -n 16 --ctx 64 --threads 1 --seed 2 --temp 0.8 --kv-dtype f32 -v \
  >"$T/long.out" 2>"$T/long.err"
"$LLM" -m "$MODEL" -p "Once upon a time" -n 16 -c 64 -t 1 -s 2 --temp 0.8 --kv-dtype f32 -v \
  >"$T/short.out" 2>"$T/short.err"
check "a sampled run to compare with has ids" test -n "$(ids "$T/long.err")"
check_eq "-c, -t and -s are --ctx, --threads and --seed" "$(ids "$T/short.err")" "$(ids "$T/long.err")"
"$LLM" -m "$MODEL" -p "Once upon a time" -n 16 --ctx-size 64 -t 1 -s 2 --temp 0.8 --kv-dtype f32 -v -ngl 99 \
  >"$T/ngl.out" 2>"$T/ngl.err"
check_eq "-ngl 99 and --ctx-size change nothing" "$(ids "$T/ngl.err")" "$(ids "$T/long.err")"
check "... and -ngl says why it has no effect" grep -q "note: -ngl/--n-gpu-layers 99 is accepted and has no effect" "$T/ngl.err"
"$LLM" -m "$MODEL" -p "Once upon a time" --n-gpu-layers 12 -n 4 >/dev/null 2>"$T/ngl2.err"
check "--n-gpu-layers N is the same option" grep -q "n-gpu-layers 12 is accepted" "$T/ngl2.err"

"$LLM" -m "$MODEL" -p "Once upon a time" -n -1 -c 64 --kv-dtype f32 >"$T/end.out" 2>"$T/end.err"
generated=$(sed -n 's/.* generated_tokens=\([0-9]*\) .*/\1/p' "$T/end.err")
prompt=$(sed -n 's/.* prompt_tokens=\([0-9]*\) .*/\1/p' "$T/end.err")
check_eq "-n -1 generates until the context of 64 is full (no end of sequence comes first here)" \
  "$((prompt + generated))" 64
check "-n -1: the text ends with a newline" test "$(tail -c 1 "$T/end.out" | od -An -c | tr -d ' ')" = '\n'
"$LLM" -m "$MODEL" -p "Once upon a time" -n -2 >/dev/null 2>"$T/bad.err"
check "-n -2 is refused, naming what -n takes" grep -q "error: -n expects an integer from -1 to" "$T/bad.err"

# The server by host name, under an alias.
"$LLM" serve -m "$MODEL" --host localhost --port 0 --alias my-model --kv-dtype f32 --kv-blocks 64 --ctx 128 \
  2>"$T/serve.log" &
SPID=$!
URL=
for _ in $(seq 600); do
  URL=$(sed -n 's|^tiermem-llm: serving on \(http://.*\)$|\1|p' "$T/serve.log")
  [ -n "$URL" ] && break
  kill -0 $SPID 2>/dev/null || break
  sleep 0.1
done
check "--host localhost: the server listens on what the name resolves to ($URL)" \
  bash -c '[[ $1 =~ ^http://(127\.0\.0\.1|\[::1\]):[0-9]+$ ]]' _ "$URL"
check_eq "--alias names the model in /v1/models" "$(curl -s --max-time 10 "$URL/v1/models" | jq -r '.data[0].id')" my-model
check_eq "GET /v1/models/my-model is the model" "$(curl -s --max-time 10 "$URL/v1/models/my-model" | jq -c '[.id, .object]')" \
  '["my-model","model"]'
check_eq "GET /v1/models/other is 404" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$URL/v1/models/other")" 404
check_eq "... with an OpenAI-style error naming the parameter" \
  "$(curl -s --max-time 10 "$URL/v1/models/other" | jq -r '.error.param')" model
r=$(curl -s --max-time 60 "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":4,"temperature":0}')
check_eq "answers carry the alias" "$(jq -r .model <<<"$r")" my-model
kill -TERM $SPID; wait $SPID 2>/dev/null; SPID=
"$LLM" serve -m "$MODEL" --host no-such-host.invalid --port 0 --served-model-name x 2>"$T/host.err" >/dev/null
check "an unknown host name is refused, naming it" grep -q "error: --host 'no-such-host.invalid' is no address and no host name" "$T/host.err"
done_testing
