#!/usr/bin/env bash
# bench-llm — tiermem-llm speed, side by side in one run:
#  1. a generated ~500 MB f16 model (BENCH_LLM_SIZE): prefill and decode tokens/s at batch 1 and batch 16,
#     for each KV dtype;
#  2. decode attention at context 2048: a model made almost only of attention (wide KV,
#     tiny FFN) decoding after a 2000-token prompt, fp8 against f16 KV.
# Runs on whatever driver the engine finds (simcuda here). Ratios are within this run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
LLM=$B/bin/tiermem-llm MK=$B/bin/tiermem-mkmodel
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N_DECODE=${BENCH_LLM_DECODE:-4}
SIZE=${BENCH_LLM_SIZE:-500M}

field() { sed -n "s/.*summary:.* $1=\([0-9.]*\).*/\1/p" "$2"; }

"$MK" -o "$T/m500.gguf" --target-size "$SIZE" --type f16 | sed 's/^/# /'
for i in $(seq 1 16); do echo "once upon a time $i"; done > "$T/prompts16"
head -1 "$T/prompts16" > "$T/prompts1"

printf '\n%-10s %6s %14s %14s\n' "kv dtype" batch "prefill tok/s" "decode tok/s"
declare -A dec
for batch in 1 16; do
  for d in f32 f16 fp8_e4m3 fp8_e5m2; do
    "$LLM" -m "$T/m500.gguf" --prompts-file "$T/prompts$batch" -n $((N_DECODE + 1)) --kv-dtype $d \
      --kv-blocks 4096 >/dev/null 2>"$T/run.err"
    p=$(field prefill_tok_s "$T/run.err") q=$(field decode_tok_s "$T/run.err")
    dec[$d.$batch]=$q
    printf '%-10s %6d %14s %14s\n' $d $batch "$p" "$q"
  done
done
for d in f32 f16 fp8_e4m3 fp8_e5m2; do
  printf 'batch 16 / batch 1 decode throughput, %-9s %5.2fx\n' $d \
    "$(awk -v a="${dec[$d.16]}" -v b="${dec[$d.1]}" 'BEGIN { print (b > 0) ? a / b : 0 }')"
done

# Attention-bound decode at context 2048.
"$MK" -o "$T/attn.gguf" --layers 2 --dim 1024 --heads 16 --kv-heads 16 --ffn 64 --vocab 512 | sed 's/^/# /'
prompt=$(for i in $(seq 1 500); do printf 'once upon a time '; done)
printf '\n%-10s %10s %16s\n' "kv dtype" context "decode tok/s"
declare -A att
for d in f16 fp8_e4m3 fp8_e5m2; do
  "$LLM" -m "$T/attn.gguf" -p "$prompt" -n 32 --ctx 2100 --kv-dtype $d --kv-blocks 256 >/dev/null 2>"$T/run.err"
  att[$d]=$(field decode_tok_s "$T/run.err")
  printf '%-10s %10s %16s\n' $d "~2040" "${att[$d]}"
done
for d in fp8_e4m3 fp8_e5m2; do
  printf 'attention decode at context 2048, %s / f16: %.2fx tokens/s\n' $d \
    "$(awk -v a="${att[$d]}" -v b="${att[f16]}" 'BEGIN { print (b > 0) ? a / b : 0 }')"
done
