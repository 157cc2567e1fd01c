#!/usr/bin/env bash
# The architectures beside llama, on generated models: Qwen 2 (q/k/v biases, NEOX RoPE),
# Qwen 3 (per-head q/k RMSNorm, a head size other than dim / heads), Llama 3.1's
# rope_freqs.weight, Mistral's shape (llama architecture, 4:1 grouped-query attention,
# rope base 1e6), and the errors a wrong file gets: an unknown architecture, a missing
# key, a missing tensor, each named. The kernels' arithmetic for NEOX pairs and frequency
# factors is checked exactly in tests/kernels; here the engine must wire them in.
source "$(dirname "$0")/../lib/tap.sh"
LLM=$B/bin/tiermem-llm
MK=$B/bin/tiermem-mkmodel
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SHAPE="--layers 2 --dim 256 --heads 8 --kv-heads 2 --ffn 512 --vocab 512 --seed 11"
ids_of() { sed -n "s/^tiermem-llm: seq 0 generated ids: //p" "$1"; }
run() { # run NAME ARGS...: generate, then 12 greedy tokens at f32 KV with logits dumped
  local name=$1; shift
  "$MK" -o "$T/$name.gguf" $SHAPE "$@" >/dev/null || return 1
  "$LLM" -m "$T/$name.gguf" -p "once upon a time the little girl" -n 12 --kv-dtype f32 --kv-blocks 64 -v \
    --dump-logits "$T/$name.logits" >/dev/null 2>"$T/$name.err"
}
finite() { ! grep -qi 'nan\|inf' "$1" && [ -s "$1" ]; }
# Two runs differ at step 0 (their logits, as text).
differ() { [ "$(head -1 "$T/$1.logits")" != "$(head -1 "$T/$2.logits")" ]; }

run llama
check "llama: runs" test $? -eq 0
run mistral --rope-base 1000000 --heads 8 --kv-heads 2
check "Mistral's shape (llama architecture, rope base 1e6): runs" test $? -eq 0
run llama31 --rope-freqs --rope-base 500000
check "Llama 3.1 with rope_freqs.weight: runs" test $? -eq 0
run llama31_plain --rope-base 500000
check "rope_freqs.weight changes the logits (same weights otherwise)" differ llama31 llama31_plain
run qwen2 --arch qwen2 --rope-base 1000000
check "qwen2 (biases, NEOX RoPE): runs" test $? -eq 0
check "qwen2: the biases and NEOX pairs change the logits of the same weights" differ qwen2 mistral
run qwen3 --arch qwen3 --head-dim 64
check "qwen3 (q/k norms, head size 64 with dim 256 and 8 heads): runs" test $? -eq 0
run qwen3_q4km --arch qwen3 --head-dim 64 --type q4_k_m
check "qwen3 with Q4_K_M-style weights: runs" test $? -eq 0
for m in llama mistral llama31 qwen2 qwen3 qwen3_q4km; do
  check "$m: finite logits and 12 generated ids" eval 'finite "$T/$m.logits" && [ "$(ids_of "$T/$m.err" | wc -w)" -eq 12 ]'
done
check "qwen3: the engine reads arch, head size and NEOX RoPE from the metadata" grep -q 'model: arch=qwen3 .* head_dim=64 .* rope=neox' "$T/qwen3.err"
check "llama31: the engine found rope_freqs.weight" grep -q 'model: arch=llama .*rope_freqs=yes' "$T/llama31.err"

# Errors, each naming what is wrong (the files are patched in place, same lengths).
expect_fail() { # NAME PATTERN FILE
  "$LLM" -m "$3" -p hi -n 1 >/dev/null 2>"$T/err"
  local rc=$?
  check "$1: exits 1" test $rc -eq 1
  check "$1: says '$2'" grep -q -- "$2" "$T/err"
}
cp "$T/qwen2.gguf" "$T/bad_arch.gguf"
sed -i 's/qwen2/qwen9/g' "$T/bad_arch.gguf"
expect_fail "unknown architecture" "architecture 'qwen9' is not supported" "$T/bad_arch.gguf"
cp "$T/llama.gguf" "$T/bad_key.gguf"
sed -i '0,/llama\.block_count/s//llama.block_cOunt/' "$T/bad_key.gguf"
expect_fail "missing key" "missing metadata key llama.block_count" "$T/bad_key.gguf"
cp "$T/qwen2.gguf" "$T/bad_bias.gguf"
sed -i 's/blk\.1\.attn_v\.bias/blk.1.attn_v.bia_/' "$T/bad_bias.gguf"
expect_fail "qwen2 without a bias" "tensor 'blk.1.attn_v.bias' is missing" "$T/bad_bias.gguf"
cp "$T/qwen3.gguf" "$T/bad_norm.gguf"
sed -i 's/blk\.0\.attn_k_norm/blk.0.attn_k_nOrm/' "$T/bad_norm.gguf"
expect_fail "qwen3 without a k norm" "tensor 'blk.0.attn_k_norm.weight' is missing" "$T/bad_norm.gguf"
done_testing
