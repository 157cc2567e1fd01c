#!/usr/bin/env bash
# Mixture of experts on generated models: the Mixtral layout (llama with expert_count,
# ffn_gate_inp + ffn_{gate,up,down}_exps) in a Q4_K_M-style mix and Qwen 3 MoE run and
# write sane tokens; the router skew of tiermem-mkmodel shows in the per-expert counts of
# -v (spread at skew 0, two experts taking most tokens at skew 4); expert counts and
# tensor shapes that disagree with the metadata are refused, named.
source "$(dirname "$0")/../lib/tap.sh"
LLM=$B/bin/tiermem-llm
MK=$B/bin/tiermem-mkmodel
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SHAPE="--layers 2 --dim 256 --heads 4 --kv-heads 2 --ffn 256 --vocab 512 --experts 8 --experts-used 2"
run() { # NAME MKMODEL-ARGS...: 24 greedy tokens with expert counts
  local name=$1; shift
  "$MK" -o "$T/$name.gguf" "$@" >/dev/null || return 1
  "$LLM" -m "$T/$name.gguf" -p "once upon a time the little girl went to the park" -n 24 --kv-blocks 64 -v \
    --dump-logits "$T/$name.logits" >/dev/null 2>"$T/$name.err"
}
# Share of the routed slots the two busiest experts of layer 0 took, in percent.
top2() { sed -n 's/^tiermem-llm: expert use: layer 0: //p' "$T/$1.err" |
         tr ' ' '\n' | sort -rn | awk '{ s += $1; if (NR <= 2) t += $1 } END { print int(100 * t / s) }'; }
sane() { ! grep -qi 'nan\|inf' "$T/$1.logits" && [ "$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$T/$1.err" | wc -w)" -eq 24 ]; }

run flat $SHAPE --type q4_k_m --expert-skew 0
check "Mixtral layout, Q4_K_M-style mix: runs" test $? -eq 0
check "its logits are finite and it writes 24 tokens" sane flat
check_eq "every layer reports its experts' use" "$(grep -c 'expert use: layer' "$T/flat.err")" 2
check "skew 0: the two busiest experts take under half the slots ($(top2 flat)%)" test "$(top2 flat)" -lt 50
run skewed $SHAPE --type q4_k_m --expert-skew 4
check "skew 4: the two busiest experts take over 70% of the slots ($(top2 skewed)%)" test "$(top2 skewed)" -gt 70
check "the skewed model writes sane tokens too" sane skewed
run qwen3moe --arch qwen3moe --head-dim 64 --expert-ffn 256 --layers 1 --dim 256 --heads 4 --kv-heads 2 \
  --ffn 512 --vocab 512
check "qwen3moe (q/k norms, expert_feed_forward_length): runs" test $? -eq 0
check "qwen3moe: sane" sane qwen3moe

# expert_count patched from 8 to 7 (its u32 follows the key and its type): the router's
# shape no longer matches.
off=$(grep -boa 'llama.expert_count' "$T/flat.gguf" | head -1 | cut -d: -f1)
cp "$T/flat.gguf" "$T/bad.gguf"
printf '\x07' | dd of="$T/bad.gguf" bs=1 seek=$((off + 18 + 4)) conv=notrunc status=none
"$LLM" -m "$T/bad.gguf" -p hi -n 1 >/dev/null 2>"$T/err"
check "expert_count disagreeing with the tensors: exit 1" test $? -eq 1
check "the message names the tensor and the shape the metadata implies" \
  grep -q "tensor 'blk.0.ffn_gate_inp.weight' has shape \[256, 8, 1, 1\], expected \[256, 7, 1\] from the metadata" "$T/err"
cp "$T/flat.gguf" "$T/nokey.gguf"
sed -i 's/llama\.expert_used_count/llama.expert_used_cOunt/' "$T/nokey.gguf"
"$LLM" -m "$T/nokey.gguf" -p hi -n 1 >/dev/null 2>"$T/err"
check "a MoE file without expert_used_count names the key" grep -q "missing metadata key llama.expert_used_count" "$T/err"
done_testing
