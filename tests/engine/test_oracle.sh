#!/usr/bin/env bash
# llama.cpp as the oracle (tools/oracle/oracle.mjs, node-llama-cpp's CPU build, installed
# by `make deps` when npm is present): for every weight type, architecture and mixture of
# experts tiermem-mkmodel writes, and for stories260K, the same prompt ids through both
# engines at f32 KV:
#   - first-step logits: max |tiermem - llama.cpp| <= TOL x max |logit|, TOL per type:
#     1e-4 for f32 (summation order only), 2e-3 for f16, 1e-2 for bf16 (llama.cpp rounds
#     the activations to bf16) and 3e-2 for the block types, whose llama.cpp CPU dot
#     products round the activations to 8 bits (Q8_0/Q8_K) first;
#   - 32 greedy ids equal for the float types and every architecture at f32; for the block
#     types, whose 8-bit activations move logits by ~1.5%, random models' near-ties part
#     sooner: the first 4 must agree and how many do is printed (8 to 32 here).
source "$(dirname "$0")/../lib/tap.sh"
LLM=$B/bin/tiermem-llm
MK=$B/bin/tiermem-mkmodel
ORACLE_DIR=$TM_ROOT/build/oracle
if ! command -v node >/dev/null; then
  skip "llama.cpp oracle" "node is not installed (the oracle is node-llama-cpp)"; done_testing; exit
fi
if [ ! -d "$ORACLE_DIR/node_modules/node-llama-cpp" ]; then
  skip "llama.cpp oracle" "node-llama-cpp is not in $ORACLE_DIR (make deps installs it when npm is present)"
  done_testing; exit
fi
T=$(mktemp -d)
trap 'rm -rf "$T" "$ORACLE_DIR/oracle-$$.mjs"' EXIT
cp "$TM_ROOT/tools/oracle/oracle.mjs" "$ORACLE_DIR/oracle-$$.mjs"
PROMPT="once upon a time the little girl"

# Every model: tiermem-llm first (its prompt ids are the oracle's input), then one
# llama.cpp process for all, then the comparisons.
NAMES=() FILES=() TOLS=()
add() { NAMES+=("$1"); FILES+=("$2"); TOLS+=("$3"); }
if [ -r "$TM_SHARED/models/stories260K.gguf" ]; then
  add stories260K "$TM_SHARED/models/stories260K.gguf" 1e-4
else
  skip "stories260K against llama.cpp" "test model stories260K.gguf not found in $TM_SHARED/models (set TM_SHARED; docs/install.md: Test data)"
fi
SHAPE="--layers 2 --dim 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seed 5"
for type in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m; do
  "$MK" -o "$T/$type.gguf" $SHAPE --type $type >/dev/null
  case $type in f32) tol=1e-4 ;; f16) tol=2e-3 ;; bf16) tol=1e-2 ;; *) tol=3e-2 ;; esac
  add "llama $type" "$T/$type.gguf" $tol
done
"$MK" -o "$T/llama31.gguf" $SHAPE --rope-freqs --rope-base 500000 >/dev/null && add "llama 3.1 (rope_freqs)" "$T/llama31.gguf" 1e-4
"$MK" -o "$T/tied.gguf" $SHAPE --tied >/dev/null && add "tied embeddings" "$T/tied.gguf" 1e-4
"$MK" -o "$T/qwen2.gguf" $SHAPE --arch qwen2 --rope-base 1000000 >/dev/null && add qwen2 "$T/qwen2.gguf" 1e-4
"$MK" -o "$T/qwen3.gguf" $SHAPE --arch qwen3 --head-dim 64 --heads 8 >/dev/null && add qwen3 "$T/qwen3.gguf" 1e-4
"$MK" -o "$T/moe.gguf" $SHAPE --experts 8 --experts-used 2 --expert-skew 2 >/dev/null &&
  add "mixtral-style MoE" "$T/moe.gguf" 1e-4
"$MK" -o "$T/moe_q.gguf" $SHAPE --experts 8 --experts-used 2 --expert-skew 2 --type q4_k_m >/dev/null &&
  add "mixtral-style MoE, Q4_K_M-style" "$T/moe_q.gguf" 3e-2
"$MK" -o "$T/qwen3moe.gguf" $SHAPE --arch qwen3moe --head-dim 64 --expert-ffn 256 >/dev/null &&
  add qwen3moe "$T/qwen3moe.gguf" 1e-4

: >"$T/jobs"
for i in "${!NAMES[@]}"; do
  "$LLM" -m "${FILES[$i]}" -p "$PROMPT" -n 32 --kv-dtype f32 --kv-blocks 64 -v --dump-logits "$T/$i.logits" \
    >/dev/null 2>"$T/$i.err"
  check "${NAMES[$i]}: tiermem-llm runs" test $? -eq 0
  printf '%s\t%s\t32\n' "${FILES[$i]}" "$(sed -n 's/^tiermem-llm: seq 0 prompt ids: //p' "$T/$i.err")" >>"$T/jobs"
done
timeout 600 node "$ORACLE_DIR/oracle-$$.mjs" <"$T/jobs" >"$T/oracle" 2>"$T/oracle.err"
check "llama.cpp ran every job (exit status $?)" test "$(grep -c '^ids ' "$T/oracle")" -eq "${#NAMES[@]}"
grep '^error' "$T/oracle" | sed 's/^/# llama.cpp: /'
tail -3 "$T/oracle.err" | sed 's/^/# /'

for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]} tol=${TOLS[$i]}
  theirs_logits=$(sed -n 's/^logits //p' "$T/oracle" | sed -n "$((i + 1))p")
  theirs=$(sed -n 's/^ids //p' "$T/oracle" | sed -n "$((i + 1))p")
  d=$(paste -d' ' <(head -1 "$T/$i.logits" | cut -d' ' -f3-) <(echo "$theirs_logits") |
    awk '{ h = NF / 2; m = 0; d = 0
           for (k = 1; k <= h; k++) { a = $k < 0 ? -$k : $k; if (a > m) m = a
                                       e = $k - $(k + h); if (e < 0) e = -e; if (e > d) d = e }
           printf "%.3g %.3g", d, (m > 0 ? d / m : 1) }')
  check "$name: first-step logits within $tol of the largest (max difference ${d% *}, ${d#* } of the largest)" \
    awk -v r="${d#* }" -v t="$tol" 'BEGIN { exit !(r <= t) }'
  ours=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$T/$i.err")
  same=$(paste -d' ' <(tr ' ' '\n' <<<"$ours") <(tr ' ' '\n' <<<"$theirs") | awk '$1 != $2 { exit } { n++ } END { print n + 0 }')
  if [ "$tol" = 1e-4 ]; then
    check_eq "$name: 32 greedy ids equal llama.cpp's" "$ours" "$theirs"
  else
    check "$name: the first 4 greedy ids equal llama.cpp's ($same of 32 in a row)" test "$same" -ge 4
  fi
done
done_testing
