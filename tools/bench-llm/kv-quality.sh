#!/usr/bin/env bash
# KV cache quality the way the field measures it: teacher forcing on the f32 trajectory.
# The f32-KV run's 64 greedy tokens are fed back (--force-ids) to runs with fp8 e4m3 and
# e5m2 KV, so every step sees the same context; per step, the KL divergence
# KL(p_f32 || p_fp8) of the next-token distributions and whether their argmax agrees.
# Reported: mean KL and top-1 agreement over the steps, on stories260K and on a generated
# model. Goal for e4m3: top-1 >= 99% and mean KL <= 0.01.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
LLM=$B/bin/tiermem-llm
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N=64

measure() { # NAME MODEL PROMPT
  local name=$1 model=$2 prompt=$3
  "$LLM" -m "$model" -p "$prompt" -n $N --kv-dtype f32 -v --kv-blocks 256 --dump-logits "$T/f32.logits" \
    >/dev/null 2>"$T/f32.err" || { echo "kv-quality: $name: the f32 run failed"; return 1; }
  local ids; ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$T/f32.err")
  for d in fp8_e4m3 fp8_e5m2; do
    "$LLM" -m "$model" -p "$prompt" -n $N --kv-dtype $d --kv-blocks 256 --force-ids "$ids" \
      --dump-logits "$T/$d.logits" >/dev/null 2>"$T/$d.err" || { echo "kv-quality: $name: the $d run failed"; return 1; }
    paste -d' ' "$T/f32.logits" "$T/$d.logits" | awk -v name="$name" -v d="$d" '
      { h = NF / 2; n = h - 2                  # fields: step seq logits... | step seq logits...
        mp = -1e30; mq = -1e30; ap = 0; aq = 0
        for (i = 0; i < n; i++) { p = $(3 + i); q = $(h + 3 + i)
          if (p > mp) { mp = p; ap = i } if (q > mq) { mq = q; aq = i } }
        zp = 0; zq = 0
        for (i = 0; i < n; i++) { zp += exp($(3 + i) - mp); zq += exp($(h + 3 + i) - mq) }
        kl = 0
        for (i = 0; i < n; i++) { lp = $(3 + i) - mp - log(zp); lq = $(h + 3 + i) - mq - log(zq)
          kl += exp(lp) * (lp - lq) }
        sum_kl += kl; agree += (ap == aq); steps++ }
      END { printf "kv-quality: %-14s %-9s steps=%d mean_kl=%.6f top1_agreement=%.4f\n", name, d, steps,
                   sum_kl / steps, agree / steps }'
  done
}

measure stories260K "$ROOT/../shared/models/stories260K.gguf" "Once upon a time"
"$B/bin/tiermem-mkmodel" -o "$T/gen.gguf" --layers 4 --dim 512 --heads 8 --kv-heads 2 --vocab 2048 --seed 9 >/dev/null
measure generated "$T/gen.gguf" "once upon a time the little girl"
