#!/usr/bin/env bash
# `tiermem-llm --chat`: turns from stdin, each rendered with the whole conversation in the
# model's chat template (ChatML for a file without one), replies streamed; -p runs one
# turn. The conversation grows by the reply and the next message each turn.
source "$(dirname "$0")/../lib/tap.sh"
LLM=$B/bin/tiermem-llm
MK=$B/bin/tiermem-mkmodel
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$MK" -o "$T/m.gguf" --arch qwen2 --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --vocab-type gpt2 \
  --vocab 700 >/dev/null
printf 'hello there\n\nhow are you\n' | "$LLM" --chat -m "$T/m.gguf" -n 6 --kv-blocks 64 -v >"$T/out" 2>"$T/err"
check "two turns from stdin: exit 0" test $? -eq 0
check "the template is ChatML (the file names none)" grep -q 'chat template: chatml' "$T/err"
check_eq "two replies (the empty line is no turn)" "$(grep -c 'prompt ids' "$T/err")" 2
lens=$(sed -n 's/^tiermem-llm: seq 0 prompt ids: //p' "$T/err" | awk '{ print NF }' | tr '\n' ' ')
check "the second turn's prompt holds the first turn and its reply" \
  awk -v l="$lens" 'BEGIN { split(l, a, " "); exit !(a[2] > a[1] + 6) }'
check_eq "one reply line per turn on stdout" "$(wc -l <"$T/out")" 2
"$LLM" --chat -m "$T/m.gguf" -p "hi" -n 4 --kv-blocks 64 >"$T/one" 2>"$T/err1" </dev/null
check "-p runs one turn: exit 0, one line" test $? -eq 0 -a "$(wc -l <"$T/one")" -eq 1
"$LLM" --chat -m "$T/m.gguf" --prompts-file /dev/null >/dev/null 2>"$T/err2"
check "--chat with --prompts-file: exit status 2" test $? -eq 2
done_testing
