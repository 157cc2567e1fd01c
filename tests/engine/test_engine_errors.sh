#!/usr/bin/env bash
# tiermem-llm's failures: each gets one clear message and a non-zero exit, and nothing
# crashes: a missing or broken model file, an unsupported weight type, bad options, a
# context overflow, a KV pool too small for a sequence, weights larger than the device,
# an absurd context_length (sized from the run instead) and weights that are not finite.
source "$(dirname "$0")/../lib/tap.sh"
require_models stories260K.gguf
LLM=$B/bin/tiermem-llm
MODEL=$TM_SHARED/models/stories260K.gguf
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# expect_fail NAME PATTERN -- command...: exits 1 or 2 (not a signal) and stderr matches
expect_fail() {
  local name=$1 pattern=$2; shift 3
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then echo "# exit status $rc"; sed 's/^/#   /' "$T/err"; fi
  check "$name: exits 1 or 2" test $rc -eq 1 -o $rc -eq 2
  check "$name: says '$pattern'" grep -q -- "$pattern" "$T/err"
}

expect_fail "missing model" "error: cannot open '/nonexistent.gguf': No such file or directory" -- \
  "$LLM" -m /nonexistent.gguf -p hi
echo "not a model" > "$T/text.gguf"
expect_fail "not a GGUF file" "not a GGUF file (bad magic" -- "$LLM" -m "$T/text.gguf" -p hi
head -c 600000 "$MODEL" > "$T/truncated.gguf"
expect_fail "truncated model" "runs past the end of the file" -- "$LLM" -m "$T/truncated.gguf" -p hi
expect_fail "vocabulary-only file" "tensor 'token_embd.weight' is missing" -- \
  "$LLM" -m "$TM_SHARED/models/ggml-vocab-llama-spm.gguf" -p hi
expect_fail "no prompt" "exactly one of -p PROMPT or --prompts-file" -- "$LLM" -m "$MODEL"
expect_fail "bad kv dtype" "--kv-dtype must be f32, f16, fp8_e4m3 or fp8_e5m2, got 'fp4'" -- \
  "$LLM" -m "$MODEL" -p hi --kv-dtype fp4
expect_fail "bad number" "-n expects an integer" -- "$LLM" -m "$MODEL" -p hi -n many
expect_fail "missing prompts file" "cannot open prompts file" -- "$LLM" -m "$MODEL" --prompts-file /nonexistent
expect_fail "context overflow" "prompt 1 has 5 tokens; with -n 60 that is 65 positions, past the context of 64 (--ctx)" -- \
  "$LLM" -m "$MODEL" -p "Once upon a time" -n 60 --ctx 64
expect_fail "sequence outgrows the KV pool" "KV cache full: sequence 0 needs a block for position 32, and all 2 blocks of 16 tokens are in use" -- \
  "$LLM" -m "$MODEL" -p "Once upon a time" -n 100 --kv-blocks 2 --kv-dtype f32
check "the text up to the full pool was printed" grep -q "^Once upon a time, there was" "$T/out"

# An unsupported weight type, rejected by name before the device is touched: a generated
# F32 model whose token_embd type field is changed to I32 (same 4 bytes per element, so
# the file stays well-formed). The type field follows the name, n_dims (4) and 2 dims (16).
"$B/bin/tiermem-mkmodel" -o "$T/small.gguf" --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 64 --vocab 400 >/dev/null
cp "$T/small.gguf" "$T/small.gguf.orig"
off=$(grep -boa 'token_embd.weight' "$T/small.gguf" | head -1 | cut -d: -f1)
printf '\x1a' | dd of="$T/small.gguf" bs=1 seek=$((off + 17 + 4 + 16)) conv=notrunc status=none
expect_fail "unsupported weight type" "tensor 'token_embd.weight' has type I32; tiermem-llm supports F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K" -- \
  "$LLM" -m "$T/small.gguf" -p hi

# Weights larger than the device: the message names what was needed and what the device has.
"$B/bin/tiermem-mkmodel" -o "$T/big.gguf" --layers 4 --dim 512 --heads 8 --kv-heads 2 --ffn 1536 --vocab 2048 >/dev/null
expect_fail "weights larger than the device" \
  "error: out of device memory while loading weights: need 54.0 MiB, device has 16.0 MiB total (cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY" -- \
  env SIMCUDA_MEM=16M "$LLM" -m "$T/big.gguf" -p "once upon a time"
expect_fail "KV pool that does not fit" "out of device memory while allocating the KV cache" -- \
  env SIMCUDA_MEM=80M "$LLM" -m "$T/big.gguf" -p "once upon a time" --kv-blocks 100000

# A context_length of 2^31-1: one warning line, and the context and KV pool are what the run
# needs (a 2-token prompt and -n 4 fit the 16 positions of the fp8 calibration text).
cp "$T/small.gguf.orig" "$T/huge-ctx.gguf"
off=$(grep -boa 'llama.context_length' "$T/huge-ctx.gguf" | head -1 | cut -d: -f1)
printf '\377\377\377\177' | dd of="$T/huge-ctx.gguf" bs=1 seek=$((off + 20 + 4)) conv=notrunc status=none
"$LLM" -m "$T/huge-ctx.gguf" -p hi -n 4 >"$T/out" 2>"$T/err"
check_eq "context_length 2^31-1: the run succeeds" "$?" 0
check "context_length 2^31-1: one warning line says the context is sized from the run" \
  test "$(grep -c "^warning: .*huge-ctx.gguf: llama.context_length 2147483647 is beyond any trained model's; the context is sized from the prompt and -n$" "$T/err")" -eq 1
check "context_length 2^31-1: a pool of one block for one sequence of 16 positions" \
  grep -q '^tiermem-llm: kv pool: kv_blocks=1 kv_block_size=16 kv_tokens=16 .*(what 1 sequence of 16 positions need;' "$T/err"
"$LLM" -m "$MODEL" -p hi -n 4 2>"$T/err" >/dev/null
check "a one-shot run's KV pool holds what it needs, not 90% of the device" grep -q '^tiermem-llm: kv pool: kv_blocks=1 ' "$T/err"
"$LLM" -m "$MODEL" -p hi -n 40 --kv-dtype f32 2>"$T/err" >/dev/null
check "  -n 40 after a 2-token prompt: 3 blocks of 16" grep -q '^tiermem-llm: kv pool: kv_blocks=3 ' "$T/err"
SIMCUDA_MEM=64M "$LLM" -m "$MODEL" -p hi -n 4 --gpu-memory-utilization 0.5 2>"$T/err" >/dev/null
check "--gpu-memory-utilization keeps sizing from free memory" \
  grep -qE '^tiermem-llm: kv pool: kv_blocks=[0-9]{3,} .*\(0.50 of [0-9.]+ MiB free after weights\)' "$T/err"

# Weights holding NaN: the first logits say so instead of printing <unk> to the end.
cp "$T/small.gguf.orig" "$T/nan.gguf"
size=$(stat -c %s "$T/nan.gguf")
head -c 8192 /dev/zero | tr '\0' '\377' | dd of="$T/nan.gguf" bs=1 seek=$((size - 8192)) conv=notrunc status=none
expect_fail "NaN weights" "error: the model produced NaN or Inf logits for the first prompt (are its weights finite?)" -- \
  "$LLM" -m "$T/nan.gguf" -p hi -n 4

done_testing
