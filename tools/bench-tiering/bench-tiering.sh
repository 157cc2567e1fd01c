#!/usr/bin/env bash
# bench-tiering — the yardstick for placement: simulated step time of every placement
# policy against the link bound, on simcuda's time model.
#
# Generated llama models (f32, dim 256, ffn 768, so that each FFN matmul reads 768 KiB and
# nearly fills a fault batch, as a kernel of a large model does) whose weights are 1.0x to 3x the emulated
# device; for each, on the h200-pcie5 and gh200-c2c profiles: decode at batch 1 and 16 and a
# prefill of about 512 tokens, with the model all in HBM (a device large enough), under
# libtiermem.so with each TIERMEM_POLICY it accepts (size, managed, managed-advised, ...).
# Each step time is divided by the link bound: the fastest any placement could be,
#   max(HBM bytes read per step / HBM bandwidth, bytes that must cross the link / link
#       bandwidth, FLOPs per step / peak compute)
# with perfect overlap, where what must cross is the weights that do not fit beside the HBM
# reserve, the KV pool and the activations (those count as resident), plus the rows an
# embedding gather reads (never the whole table); bound_ms below, printed beside each table. Then a 128k-token vocabulary (token_embd large and mostly cold) and
# a KV pool sized under TIERMEM_MEMINFO=virtual, and a model larger than HBM and DDR
# together under the file tier (TIERMEM_FILE_TIER=1). Table on stdout; the table, the raw rows
# and the plots (step time against oversubscription; tier occupancy over time) in
# $O/bench/. Ratios matter, not sizes: the device is small so that it runs in minutes. Every
# fixed cost is the profile's (launch, copy set-up, first access over the link, VMM calls):
# nothing is zeroed, so the small sweep models pay them as a sliver of a large model would
# not; the goal lines run on models shaped like real ones (matrices of 4 MiB and more).
# Host code is free (SIMCUDA_HOST_TIME=0: the program's own code on this machine, not a cost
# of the GPU's; the driver's VMM calls are still charged): figures depend on the work and
# the profile only.
# Decode is measured in steady state: the first BENCH_TIERING_WARMUP decode steps run but
# are left out (tiermem-llm --warmup), so a policy that moves memory while the program runs
# is timed once it has settled, and one that places at allocation loses nothing by it; the
# prefill column is the first pass, cold.
# The managed policies run with TIERMEM_MIN_TIERED=64K, so that every weight tensor is
# managed memory, as in llama.cpp's single managed weight buffer; the others keep the
# default (2 MiB, the chunk).
#
#   BENCH_TIERING_DEVICE_MIB (12), BENCH_TIERING_RATIOS ("1.0 1.25 1.5 1.75 2 2.5 3"),
#   BENCH_TIERING_PROFILES ("h200-pcie5 gh200-c2c"), BENCH_TIERING_DECODE (2 steps timed),
#   BENCH_TIERING_WARMUP (8 decode steps before them), BENCH_TIERING_KV_WARMUP (40: the same
#   for the KV pool, whose heat needs more passes to show), BENCH_TIERING_HEAT_SAMPLE (4: the
#   TIERMEM_HEAT_SAMPLE of every run, about what auto sampling settles at on an idle
#   host), BENCH_TIERING_ONLY (the sections
#   to run, of "sweep vocab kv goals file stream occupancy plots"; occupancy and plots read
#   what sweep and vocab measured: BENCH_TIERING_ONLY=kv runs the KV pool alone; goals runs
#   its own models and ends the output with the goal lines), BENCH_TIERING_GOAL_MIB (512:
#   the device of the real-shaped goal models)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
LLM=$B/bin/tiermem-llm MK=$B/bin/tiermem-mkmodel STAT=$B/bin/tiermem-stat LIB=$B/lib/libtiermem.so
OUT=$B/bench
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$OUT"
rm -f "$OUT"/tiering-failed-*.log
export LD_LIBRARY_PATH=$B/lib/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DEVICE_MIB=${BENCH_TIERING_DEVICE_MIB:-12}
RATIOS=${BENCH_TIERING_RATIOS:-1.0 1.25 1.5 1.75 2 2.5 3}
PROFILES=${BENCH_TIERING_PROFILES:-h200-pcie5 gh200-c2c}
DECODE=${BENCH_TIERING_DECODE:-2}
WARMUP=${BENCH_TIERING_WARMUP:-8}
KV_WARMUP=${BENCH_TIERING_KV_WARMUP:-40}
HEAT_SAMPLE=${BENCH_TIERING_HEAT_SAMPLE:-4}
ONLY=${BENCH_TIERING_ONLY:-sweep vocab kv goals file stream occupancy plots}
for s in $ONLY; do
  case " sweep vocab kv goals file stream occupancy plots " in *" $s "*) ;;
    *) echo "bench-tiering: BENCH_TIERING_ONLY: no section '$s' (sweep vocab kv goals file stream occupancy plots)" >&2
       exit 2 ;; esac
done
want() { [[ " $ONLY " == *" $1 "* ]]; }
STEADY=(-n $((WARMUP + DECODE + 1)) --warmup $WARMUP)
BIG_MIB=$((DEVICE_MIB * 8 + 256))     # "all in HBM": a device large enough for any model here
KV=(--kv-dtype f16 --kv-blocks 48)    # f16: no fp8 calibration pass; 48 blocks hold either run
SIM=(SIMCUDA_HOST_TIME=0)
# Runs that do not depend on the host: no ledger shared with other tiermem processes of
# this user (their chunks would shrink this run's DDR budget), and heat sampled from the
# same launches every run (auto sampling follows what a sample costs, which the host's load
# decides). The rebalancer budgets by simulated time on simcuda by itself.
SIM+=(TIERMEM_LEDGER=off TIERMEM_HEAT_SAMPLE=$HEAT_SAMPLE)
SHAPE=(--dim 256 --heads 4 --kv-heads 1 --ffn 768 --type f32)
# f32 bytes of that shape: per layer (q, o, k, v, three FFN matrices, two norms); per
# vocabulary token (an embedding row and an output row); the final norm. Whole layers come
# close to the ratio, the vocabulary (from 1024 tokens) makes up the rest.
LAYER_BYTES=$(((2 * 256 * 256 + 2 * 256 * 64 + 3 * 256 * 768 + 2 * 256) * 4))
TOKEN_BYTES=$((2 * 256 * 4))
BASE_BYTES=$((1024 * TOKEN_BYTES + 256 * 4))
start=$(date +%s)

for f in "$LLM" "$MK" "$STAT" "$LIB"; do
  [ -e "$f" ] || { echo "bench-tiering: $f is missing; run make first" >&2; exit 1; }
done
TIME_H=$ROOT/tools/simcuda/sim_time.h
[ -e "$TIME_H" ] || { echo "bench-tiering: simcuda has no time model ($TIME_H); nothing to measure" >&2; exit 1; }

# A profile's parameter, from the one table simcuda itself uses:
#   X(hbm_gbps, "HBM_GBPS", h200-pcie5, gh200-c2c, h100-pcie5)
param() {
  local col
  case $1 in h200-pcie5) col=3 ;; gh200-c2c) col=4 ;; h100-pcie5) col=5 ;; *) return 1 ;; esac
  grep -E "^ *X\($2," "$TIME_H" | sed -E 's/^ *X\(//; s/\).*//' | awk -F', *' -v c=$col '{ print $c }'
}
field() { sed -n "s/.*summary:.* $1=\([0-9.]*\).*/\1/p" "$2" | tail -n 1; }

# Every policy the interposer accepts, from its own error line for a value it does not.
policies=$(env TIERMEM_POLICY=- LD_PRELOAD="$LIB" SIMCUDA_MEM=64M "$LLM" -m /dev/null -n 1 -p x 2>&1 |
  sed -n "s/.*TIERMEM_POLICY='-' is not valid: expected \([^;]*\);.*/\1/p" | sed 's/,//g; s/ or / /')
[ -n "$policies" ] || policies="size managed managed-advised"
columns="hbm $policies"

# ------------------------------------------------------------------ inputs
for i in $(seq 1 16); do echo "once upon a time $i"; done >"$T/prompts16"
echo "once upon a time" >"$T/prompts1"
for i in $(seq 1 127); do printf 'once upon a time '; done >"$T/prompt512"
declare -A MODEL EMBD
for r in $RATIOS; do
  read -r layers vocab < <(awk -v r="$r" -v d=$((DEVICE_MIB << 20)) -v l=$LAYER_BYTES -v b=$BASE_BYTES \
    -v t=$TOKEN_BYTES 'BEGIN { n = int((r * d - b) / l); if (n < 1) n = 1
                               v = 1024 + int((r * d - b - n * l) / t); print n, (v < 1024 ? 1024 : v) }')
  MODEL[$r]=$T/m$r.gguf EMBD[$r]=$((vocab * 256 * 4))
  "$MK" -o "${MODEL[$r]}" --layers "$layers" --vocab "$vocab" "${SHAPE[@]}" | sed "s/^/# ${r}x: /"
done

# run_one PROFILE POLICY MODEL MODE [ENV...] (POLICY hbm: no interposer, a device large
# enough; plain: no interposer, the device of the bench) -> "step_ms weight_bytes device_bytes prompt_tokens tokens"
# (step: one decode step, or the whole prefill; tokens: a digest of every sequence's
# generated ids); "fail ..." when the run did not finish.
run_one() {
  local profile=$1 policy=$2 model=$3 mode=$4; shift 4
  local env=("${SIM[@]}" SIMCUDA_PROFILE="$profile" SIMCUDA_MEM=${DEVICE_MIB}M "$@")
  [ "$policy" = hbm ] && env=("${SIM[@]}" SIMCUDA_PROFILE="$profile" SIMCUDA_MEM=${BIG_MIB}M "$@")
  [ "$policy" != hbm ] && [ "$policy" != plain ] && env+=(LD_PRELOAD="$LIB" TIERMEM_POLICY="$policy")
  case $policy in managed*) env+=(TIERMEM_MIN_TIERED=64K) ;; esac
  local args
  case $mode in
    decode1) args=(--prompts-file "$T/prompts1" "${STEADY[@]}") ;;
    decode16) args=(--prompts-file "$T/prompts16" "${STEADY[@]}") ;;
    first) args=(--prompts-file "$T/prompts1" -n 3) ;; # the first decode steps, no warm-up
    long) args=(--prompts-file "$T/prompts1" -n 64) ;;
    prefill) args=(-p "$(cat "$T/prompt512")" -n 1) ;;
    step:*) args=(--prompts-file "$T/prompts1" -n $((${mode#step:} + 2)) --warmup "${mode#step:}") ;; # 2 steps after W
  esac
  if ! env "${env[@]}" "$LLM" -m "$model" "${args[@]}" "${KV[@]}" -v >/dev/null 2>"$T/run.err"; then
    echo "fail 0 0 0 -"; cp "$T/run.err" "$OUT/tiering-failed-$profile-$policy-$mode.log"; return
  fi
  local w d p step
  w=$(field weight_bytes "$T/run.err") d=$(field device_bytes "$T/run.err") p=$(field prompt_tokens "$T/run.err")
  if [ "$mode" = prefill ]; then
    step=$(awk -v t="$(field sim_prefill_tok_s "$T/run.err")" -v p="$p" 'BEGIN { if (t > 0) printf "%.6f", p / t * 1e3; else print "fail" }')
  else
    step=$(field sim_decode_step_ms "$T/run.err")
  fi
  echo "${step:-fail} ${w:-0} ${d:-0} ${p:-0} $(grep 'generated ids:' "$T/run.err" | md5sum | cut -c1-12)"
}

# speedup SLOW_MS FAST_MS: how many times faster, or "n/a"
speedup() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }

# same_tokens WHAT REFERENCE DIGEST: a run that did not produce the all-HBM tokens is said
# loudly (stderr and the table) and counted; the bench then exits 1.
MISMATCHES=0
same_tokens() {
  [ "$3" = "$2" ] && return 0
  echo "bench-tiering: TOKEN MISMATCH: $1 did not generate the all-HBM tokens" | tee -a "$T/mismatches" >&2
  MISMATCHES=$((MISMATCHES + 1))
}

# bound_ms PROFILE MODE WEIGHT_BYTES PROMPT_TOKENS EMBD_BYTES ROW_BYTES OTHER_BYTES [DEVICE_BYTES]
#   -> "bound_ms spilled_bytes"
# What must cross the link: the weights read whole each pass (all but the embedding table)
# that do not fit in HBM beside what counts as resident there (the interposer's HBM reserve,
# 1/64 of the device in whole chunks, and OTHER_BYTES, the engine's KV pool and activations),
# and the embedding rows the step gathers (ROW_BYTES each, one per token: the table itself
# can live anywhere). A prefill reads the weights once per pass of 128 prompt tokens, as the
# engine runs it, so the weight terms count once per pass.
bound_ms() {
  awk -v hbm="$(param "$1" hbm_gbps)" -v link="$(param "$1" h2d_gbps)" -v tf="$(param "$1" tflops)" \
      -v mode="$2" -v w="$3" -v p="$4" -v e="$5" -v row="$6" -v o="$7" -v dev="${8:-$((DEVICE_MIB << 20))}" 'BEGIN {
    chunk = 2097152; reserve = int((dev / 64 + chunk - 1) / chunk) * chunk
    rw = w - e; if (rw < 0) rw = 0
    room = dev - reserve - o; if (room < 0) room = 0
    spill = rw - room; if (spill < 0) spill = 0
    tokens = mode == "decode1" ? 1 : mode == "decode16" ? 16 : p
    passes = mode == "prefill" ? int((p + 127) / 128) : 1
    flops = 2 * (w / 4) * tokens                   # f32 weights: one multiply-add per weight per token
    t = passes * (rw - spill) / (hbm * 1e6); s = (passes * spill + tokens * row) / (link * 1e6); c = flops / (tf * 1e9)
    if (s > t) t = s; if (c > t) t = c
    printf "%.6f %.0f", t, spill }'
}

# ------------------------------------------------------------------ the sweep
ROWS=$OUT/tiering.tsv
printf 'profile\tmode\tratio\tpolicy\tstep_ms\tbound_ms\tspilled_bytes\tother_bytes\n' >"$ROWS"
want sweep && for profile in $PROFILES; do
  for r in $RATIOS; do
    for mode in decode1 decode16 prefill; do
      read -r step w d p ref < <(run_one "$profile" hbm "${MODEL[$r]}" $mode)
      read -r bound spill < <(bound_ms "$profile" $mode "$w" "$p" "${EMBD[$r]}" $((256 * 4)) $((d - w)))
      actual=$(awk -v w="$w" -v d=$((DEVICE_MIB << 20)) 'BEGIN { printf "%.2f", w / d }')
      row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$profile" $mode "$actual" "$1" "$2" "$bound" "$spill" $((d - w)) >>"$ROWS"; }
      row hbm "$step"
      for policy in $policies; do
        read -r step _ _ _ digest < <(run_one "$profile" "$policy" "${MODEL[$r]}" $mode)
        [ "$step" = fail ] || same_tokens "$profile $mode ${r}x $policy" "$ref" "$digest"
        row "$policy" "$step"
      done
    done
  done
done

# ------------------------------------------------------------------ the table
TABLE=$OUT/tiering.txt
: >"$TABLE"
want sweep && awk -F'\t' -v cols="$columns" -v dev="$DEVICE_MIB" 'NR > 1 {
    key = $1 "|" $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if (!(($1 "|" $2 "|" $3) in rseen)) { rseen[$1 "|" $2 "|" $3] = 1; rs[key] = rs[key] " " $3 }
    step[key "|" $3 "|" $4] = $5; bound[key "|" $3] = $6; spill[key "|" $3] = $7; other[key "|" $3] = $8 }
  END {
    nc = split(cols, c, " ")
    names["decode1"] = "decode, batch 1 (ms per step)"; names["decode16"] = "decode, batch 16 (ms per step)"
    names["prefill"] = "prefill of 512 tokens (ms)"
    for (i = 1; i <= n; i++) {
      split(order[i], k, "|")
      printf "\n%s, %s, device %d MiB: step time / link bound\n", k[1], names[k[2]], dev
      printf "(bound = max(resident weights / HBM_GBPS, spilled weights + embedding rows / H2D_GBPS, FLOPs / TFLOPS);\n"
      printf " spilled: the weights but the embedding beyond HBM less its reserve and the KV pool and activations)\n"
      printf "%-8s %12s %9s %9s", "weights", "bound ms", "spill MiB", "kv+act"
      for (j = 1; j <= nc; j++) printf " %15s", c[j]
      printf "\n"
      nr = split(rs[order[i]], rr, " ")
      for (q = 1; q <= nr; q++) {
        b = bound[order[i] "|" rr[q]]
        printf "%-8s %12.4f %9.1f %9.1f", rr[q] "x", b, spill[order[i] "|" rr[q]] / 1048576, other[order[i] "|" rr[q]] / 1048576
        for (j = 1; j <= nc; j++) {
          s = step[order[i] "|" rr[q] "|" c[j]]
          if (s == "fail" || s == "" || b <= 0) printf " %15s", "fail"
          else printf " %15.2f", s / b
        }
        printf "\n"
      }
    }
  }' "$ROWS" | tee "$TABLE"
# heat against size in every cell of the sweep: never slower is what heat promises
want sweep && awk -F'\t' 'NR > 1 { step[$1 "|" $2 "|" $3 "|" $4] = $5; if ($4 == "heat") cells[$1 "|" $2 "|" $3] = 1 }
  END {
    for (c in cells) {
      h = step[c "|heat"]; s = step[c "|size"]; n++
      if (h == "fail" || s == "fail") { failed++; continue }
      if (h > s * 1.0005) { slower++; list = list sprintf("  %s: heat %s ms, size %s ms\n", c, h, s) }
      else if (h < s * 0.9995) faster++
    }
    printf "\nheat against size, every cell of the sweep: faster in %d, slower in %d, equal in %d, failed in %d (of %d)\n",
      faster, slower, n - faster - slower - failed, failed, n
    printf "%s", list
  }' "$ROWS" | tee -a "$TABLE"

# ------------------------------------------------------------------ large vocabulary
first=${PROFILES%% *}
"$MK" -o "$T/v128k.gguf" --vocab 131072 --layers 2 --dim 32 --heads 2 --kv-heads 1 --ffn 64 --type f32 |
  sed 's/^/# /'
"$MK" -o "$T/v128k-wide.gguf" --vocab 131072 --layers 2 --dim 256 --heads 4 --kv-heads 1 --ffn 768 --type f32 |
  sed 's/^/# /'
want vocab && {
  printf '\n%s, 128k-token vocabulary (token_embd %s, mostly cold), decode batch 1:\n' "$first" \
    "$(awk 'BEGIN { printf "%.0f MiB", 131072 * 32 * 4 / 1048576 }')"
  read -r hstep w d p ref < <(run_one "$first" hbm "$T/v128k.gguf" decode1)
  read -r bound spill < <(bound_ms "$first" decode1 "$w" "$p" $((131072 * 32 * 4)) $((32 * 4)) $((d - w)))
  printf '%-16s %10s %8s\n' policy "step ms" "/ bound"
  printf '%-16s %10s %8s\n' "link bound" "$bound" 1.00
  declare -A vstep
  for policy in hbm $policies; do
    if [ $policy = hbm ]; then step=$hstep; else
      read -r step _ _ _ digest < <(run_one "$first" $policy "$T/v128k.gguf" decode1)
      [ "$step" = fail ] || same_tokens "128k vocabulary $policy" "$ref" "$digest"
    fi
    vstep[$policy]=$step
    printf '%-16s %10s %8s\n' $policy "$step" "$(awk -v s="$step" -v b="$bound" 'BEGIN { if (s + 0 > 0) printf "%.2f", s / b; else print "fail" }')"
  done
  echo "heat against size: $(speedup "${vstep[size]}" "${vstep[heat]}")x faster (goal: at least 1.3)"
  echo "link bound: $(awk -v s="$spill" 'BEGIN { printf "%.1f", s / 1048576 }') MiB of weights spilled (the embedding counts as its one row a step)"

} | tee -a "$TABLE"

# ------------------------------------------------------------------ the KV pool under TIERMEM_MEMINFO=virtual
# A server's shape: 16 sequences of about 130 tokens decoding together, full multi-head
# attention with f32 KV (16 KiB a token over 4 layers), so that the KV bytes a step reads
# (about 42 MiB) are close to the weights but the embedding (60 MiB); a 512-wide model
# whose matrices (1 to 8 MiB) span chunks as a real model's do, on a 64 MiB device, where
# TIERMEM_STREAM=auto takes the ring; a 4096-token vocabulary whose embedding (8 MiB,
# loaded first) is read a row per token. The engine sizes its pool from cuMemGetInfo (0.9
# of free, at most what the sequences use, as llama.cpp sizes to n_ctx): under `virtual`
# HBM plus DDR, under `physical` HBM's free bytes, none once the weights filled it. Its
# bound counts what a step reads: every weight but the embedding table (its rows are a
# sliver), and the KV of every position of every sequence; what does not fit in the device
# crosses the link. The reference row is `size` with the embedding placed in DDR by a rule
# (TIERMEM_RULES): the best any placement reaches with every spilled byte read in place.
# `heat` can pass it only by streaming: weights through the copy engines, KV kept in HBM.
# KV in HBM: the share of the pool's chunks in HBM in the last stats sample that holds
# every allocation (the pool holds only blocks in use by then).
KV_MIB=64 KV_SEQS=16 KV_DIM=512 KV_LAYERS=4 KV_VOCAB=4096
KV_TOKEN_BYTES=$((KV_LAYERS * 2 * KV_DIM * 4))
"$MK" -o "$T/kv.gguf" --layers $KV_LAYERS --vocab $KV_VOCAB --dim $KV_DIM --heads 8 --kv-heads 8 --ffn 1536 \
  --type f32 | sed 's/^/# kv: /'
for i in $(seq 1 $KV_SEQS); do for j in $(seq 1 30); do printf 'once upon a time '; done; echo "$i"; done >"$T/prompts-kv"

# run_kv VIEW POLICY [ENV...] -> the run's stderr in $T/kv.err, the last stats sample in $T/kv.json
run_kv() {
  local env=("${SIM[@]}" SIMCUDA_PROFILE="${KV_PROFILE:-$first}") pid
  if [ "$2" = hbm ]; then env+=(SIMCUDA_MEM=${BIG_MIB}M); else
    env+=(SIMCUDA_MEM=${KV_MIB}M LD_PRELOAD="$LIB" TIERMEM_MEMINFO=$1 TIERMEM_POLICY=$2 TIERMEM_DDR_LIMIT=192M); fi
  shift 2
  : >"$T/kv.json"
  env "${env[@]}" "$@" "$LLM" -m "$T/kv.gguf" --prompts-file "$T/prompts-kv" -n $((KV_WARMUP + DECODE + 1)) \
    --warmup $KV_WARMUP --kv-dtype f32 -v >/dev/null 2>"$T/kv.err" &
  pid=$!
  local most=0 n
  # the last sample that holds every allocation: the engine frees its memory before it exits
  while kill -0 $pid 2>/dev/null; do
    if "$STAT" --json $pid >"$T/kv.sample" 2>/dev/null && grep -q '"state":"running"' "$T/kv.sample"; then
      n=$(grep -o '"address"' "$T/kv.sample" | wc -l)
      [ "$n" -ge "$most" ] && most=$n && cp "$T/kv.sample" "$T/kv.json"
    fi
    sleep 0.2
  done
  wait $pid
}

want kv && {
  printf '\n%s, KV pool sized from free memory: %d sequences of about 130 tokens, f32 KV, decode batch 16\n' \
    "$first" $KV_SEQS
  printf '(%s of weights, device %d MiB, %d warm-up steps left out)\n' \
    "$(awk -v w="$(stat -c %s "$T/kv.gguf")" 'BEGIN { printf "%.0f MiB", w / 1048576 }')" $KV_MIB $KV_WARMUP
  printf '%-10s %-14s %9s %8s %10s %10s %8s %10s\n' meminfo policy kv_blocks "kv MiB" "KV MiB/step" "step ms" \
    "/ bound" "KV in HBM"
  declare -A kstep
  run_kv - hbm || cp "$T/kv.err" "$OUT/tiering-failed-kv-hbm.log"
  ref=$(grep 'generated ids:' "$T/kv.err" | md5sum | cut -c1-12)
  p=$(field prompt_tokens "$T/kv.err") w=$(field weight_bytes "$T/kv.err")
  # positions a timed step reads: the prompts, then each sequence's generated tokens
  kv_read=$(awk -v p="$p" -v s=$KV_SEQS -v n=$((KV_WARMUP + DECODE / 2 + 1)) -v t=$KV_TOKEN_BYTES \
    'BEGIN { printf "%d", (p + s * n) * t }')
  bound=$(awk -v hbm="$(param "$first" hbm_gbps)" -v link="$(param "$first" h2d_gbps)" -v tf="$(param "$first" tflops)" \
      -v w="$w" -v embd=$((KV_VOCAB * KV_DIM * 4)) -v kv="$kv_read" -v s=$KV_SEQS -v dev=$((KV_MIB << 20)) 'BEGIN {
    chunk = 2097152; reserve = int((dev / 64 + chunk - 1) / chunk) * chunk
    read = w - embd + kv; spill = read - (dev - reserve); if (spill < 0) spill = 0
    t = (read - spill) / (hbm * 1e6); l = spill / (link * 1e6); c = 2 * (w / 4) * s / (tf * 1e9)
    if (l > t) t = l; if (c > t) t = c; printf "%.6f", t }')
  for row in "virtual size" "virtual heat" "virtual size+rule" "physical size" "physical heat"; do
    read -r view policy <<<"$row"
    case $policy in
      size+rule) run_kv $view size TIERMEM_RULES=name=token_embd.weight=ddr ;;
      *) run_kv $view $policy ;;
    esac || cp "$T/kv.err" "$OUT/tiering-failed-kv-$view-$policy.log"
    if [ -z "$(field kv_blocks "$T/kv.err")" ]; then
      printf '%-10s %-14s %s\n' $view $policy "no KV pool: $(sed -n 's/^error: //p' "$T/kv.err" | head -n 1 | cut -c1-70)..."
      continue
    fi
    step=$(field sim_decode_step_ms "$T/kv.err")
    kstep[$view.$policy]=$step
    same_tokens "KV pool, $view $policy" "$ref" "$(grep 'generated ids:' "$T/kv.err" | md5sum | cut -c1-12)"
    # the pool: allocations of kv_bytes / (2 x layers) that hold no model-file tensor
    share=$(awk -v size=$(($(field kv_bytes "$T/kv.err") / (2 * KV_LAYERS))) '
      index($0, "\"size\":" size ",") && index($0, "\"tensor\":null") {
        match($0, /"hbm":[0-9]+/); h += substr($0, RSTART + 6, RLENGTH - 6)
        match($0, /"ddr":[0-9]+/); n += substr($0, RSTART + 6, RLENGTH - 6)
        match($0, /"cxl":[0-9]+/); n += substr($0, RSTART + 6, RLENGTH - 6) }
      END { if (h + n > 0) printf "%.0f%%", 100 * h / (h + n); else print "?" }' "$T/kv.json")
    printf '%-10s %-14s %9s %8.1f %10.1f %10s %8s %10s\n' $view $policy "$(field kv_blocks "$T/kv.err")" \
      "$(awk -v b="$(field kv_bytes "$T/kv.err")" 'BEGIN { print b / 1048576 }')" \
      "$(awk -v b="$kv_read" 'BEGIN { print b / 1048576 }')" "$step" \
      "$(awk -v s="$step" -v b="$bound" 'BEGIN { if (s + 0 > 0) printf "%.2f", s / b; else print "fail" }')" "$share"
  done
  echo "link bound $bound ms (weights but the embedding, and the KV, read once a step; what does not fit in HBM less its reserve crosses the link)"
  echo "virtual KV pool, heat against size: $(speedup "${kstep[virtual.size]}" "${kstep[virtual.heat]}")x faster" \
    "(goal: at least 1.3); size with the embedding in DDR by rule: $(speedup "${kstep[virtual.size]}" \
    "${kstep[virtual.size+rule]}")x"
} | tee -a "$TABLE"

# ------------------------------------------------------------------ the heat policy's goals
# Goal lines, one per goal, printed at the very end. P1 and P2 run on models shaped like a
# real one: an 8B llama layer scaled down four times in width (dim 1024, 8 heads of 128, 2 KV
# heads, FFN 3584: matrices of 1, 4 and 14 MiB in f32), whole layers to 1.75 and 3 times a
# BENCH_TIERING_GOAL_MIB device, the vocabulary making up the rest. P7.vocab runs a 128k
# vocabulary 256 wide (embedding and output 128 MiB each, as wide models carry one): 32 wide,
# a step is mostly launches, and all in HBM is only 1.17x faster than `size` on C2C, which
# no placement changes (both are printed). The device is 512 MiB:
# a kernel reads a matrix whole, so any streaming holds at least the largest one in HBM
# besides what stays resident (the ring: 14 MiB and a chunk), and that HBM's bytes cross the
# link too. At 512 MiB the ring is 3% of HBM; on a 141 GB GPU, a 120B model's 448 MiB FFN
# matrices make it 0.6%. At 128 MiB it would be 12.5%, and (spilled + ring) / spilled alone
# is 1.18 of the bound there (BENCH_TIERING_GOAL_MIB=128 measures it). P7.vocab: the 128k
# vocabulary on a device 1/1.25 of its weights; P7.kv: the KV pool section's case; P3.fits: a
# model that fits. On gh200-c2c the P1 targets are `heat` no slower than `size`. Beside
# `heat` and `size`, the baseline of vLLM's --cpu-offload-gb: whole layers from the first
# on left in host memory and read in place (the policy `size` with a rule per layer), as
# many as the bound's spilled bytes need, the rest in HBM (llama.cpp's -ot picks tensors by
# name the same way). A mixture of experts runs beside them, against llama.cpp's --cpu-moe
# and --n-cpu-moe.
GOAL_MIB=${BENCH_TIERING_GOAL_MIB:-512}
GOALS=$T/goals
: >"$GOALS"
"$MK" -o "$T/fits.gguf" --layers 1 --vocab 1024 "${SHAPE[@]}" | sed 's/^/# fits: /'
RS_SHAPE=(--dim 1024 --heads 8 --kv-heads 2 --ffn 3584 --type f32)
RS_LAYER=$(((2 * 1024 * 1024 + 2 * 1024 * 256 + 3 * 1024 * 3584 + 2 * 1024) * 4))
RS_TOKEN=$((2 * 1024 * 4))
declare -A RS RS_EMBD RS_LAYERS
want goals && for r in 1.75 3; do
  read -r layers vocab < <(awk -v r="$r" -v d=$((GOAL_MIB << 20)) -v l=$RS_LAYER -v t=$RS_TOKEN 'BEGIN {
    b = 1024 * t + 1024 * 4; n = int((r * d - b) / l); if (n < 1) n = 1
    v = 1024 + int((r * d - b - n * l) / t); print n, (v < 1024 ? 1024 : v) }')
  RS[$r]=$T/rs$r.gguf RS_EMBD[$r]=$((vocab * 1024 * 4)) RS_LAYERS[$r]=$layers
  "$MK" -o "${RS[$r]}" --layers "$layers" --vocab "$vocab" "${RS_SHAPE[@]}" | sed "s/^/# goals, ${r}x: /"
done
# A mixture of experts shaped like the P1 models (8 experts of FFN 1024, 2 a token, a router
# skewed toward a few): each layer's experts are three stacks of 32 MiB ([expert][rows][cols],
# 4 MiB an expert) of which a step reads the slices its router picked, on the device.
MOE_LAYER_EXPERTS=$((3 * 8 * 1024 * 1024 * 4))
want goals && "$MK" -o "$T/moe.gguf" --layers 6 --experts 8 --experts-used 2 --expert-ffn 1024 --expert-skew 4 \
  --vocab 1024 "${RS_SHAPE[@]}" | sed 's/^/# goals, experts: /'
# goal ID WHAT VALUE TARGET MET(0/1)
goal() {
  printf 'goal %s %s: %s (target %s) %s\n' "$1" "$2" "$3" "$4" "$([ "$5" = 1 ] && echo met || echo "not met")" >>"$GOALS"
}
ratio_ok() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > 0 && b + 0 > 0 && a <= b) }' && echo 1 || echo 0; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "n/a" && a + 0 >= b) }' && echo 1 || echo 0; }
over() { awk -v s="$1" -v b="$2" 'BEGIN { if (s + 0 > 0 && b > 0) printf "%.2f", s / b; else print "n/a" }'; }

# goals_for PROFILE SUFFIX: the runs of one profile's goal lines
goals_for() {
  local profile=$1 sfx=$2 big=$((GOAL_MIB * 4 + 256)) r mode
  declare -A at
  for case in "1.75 decode1 b1" "1.75 decode16 b16" "3 decode1 3x"; do
    read -r r mode id <<<"$case"
    local step w d p ref digest bound spill hs ss
    read -r step w d p ref < <(run_one "$profile" hbm "${RS[$r]}" $mode SIMCUDA_MEM=${big}M)
    read -r bound spill < <(bound_ms "$profile" $mode "$w" "$p" "${RS_EMBD[$r]}" $((1024 * 4)) $((d - w)) $((GOAL_MIB << 20)))
    read -r hs _ _ _ digest < <(run_one "$profile" heat "${RS[$r]}" $mode SIMCUDA_MEM=${GOAL_MIB}M)
    [ "$hs" = fail ] || same_tokens "goals $profile ${r}x $mode heat" "$ref" "$digest"
    read -r ss _ _ _ digest < <(run_one "$profile" size "${RS[$r]}" $mode SIMCUDA_MEM=${GOAL_MIB}M)
    [ "$ss" = fail ] || same_tokens "goals $profile ${r}x $mode size" "$ref" "$digest"
    local n_off rules="" l os
    n_off=$(awk -v s="$spill" -v l=$RS_LAYER -v n="${RS_LAYERS[$r]}" 'BEGIN { k = int((s + l - 1) / l); if (k > n) k = n; print k }')
    for ((l = 0; l < n_off; l++)); do rules+="${rules:+,}name=blk.$l.*=ddr"; done
    read -r os _ _ _ digest < <(run_one "$profile" size "${RS[$r]}" $mode SIMCUDA_MEM=${GOAL_MIB}M TIERMEM_RULES="$rules")
    [ "$os" = fail ] || same_tokens "goals $profile ${r}x $mode offload" "$ref" "$digest"
    local hb sb ob
    hb=$(over "$hs" "$bound") sb=$(over "$ss" "$bound") ob=$(over "$os" "$bound")
    echo "goals, $profile, ${r}x a $GOAL_MIB MiB device, $mode: bound $bound ms ($(awk -v s="$spill" 'BEGIN { printf "%.1f", s / 1048576 }') MiB spilled), heat $hs ms ($hb), size $ss ms ($sb), $n_off first layers offloaded $os ms ($ob)"
    local what="decode batch ${mode#decode} at ${r}x"
    if [ -z "$sfx" ]; then
      goal "P1.$id" "$what" "heat $hb of the link bound" "<= 1.15" "$(ratio_ok "$hb" 1.15)"
    else
      goal "P1.$id$sfx" "$what" "heat $hb of the link bound, size $sb" "<= size's $sb" "$(ratio_ok "$hb" "$sb")"
    fi
    at[$id]=$hs
  done
  local ms digest ref
  read -r _ _ _ _ ref < <(run_one "$profile" hbm "${RS[1.75]}" decode1 SIMCUDA_MEM=${big}M)
  read -r ms _ _ _ digest < <(run_one "$profile" managed "${RS[1.75]}" decode1 SIMCUDA_MEM=${GOAL_MIB}M)
  [ "$ms" = fail ] || same_tokens "goals $profile 1.75x managed" "$ref" "$digest"
  local x
  x=$(speedup "$ms" "${at[b1]}")
  echo "goals, $profile, 1.75x, decode1: managed $ms ms"
  goal "P2$sfx" "decode batch 1 at 1.75x, real-shaped model" "heat ${x}x faster than managed" ">= 8, aim 11" "$(at_least "$x" 8)"

  # the mixture of experts at 1.75x, beside llama.cpp's placements for it: --cpu-moe (every
  # expert stack in host memory, the rest in HBM) and --n-cpu-moe N (the stacks of the first
  # N layers, as many as the spilled bytes need), read in place (`size` with name rules)
  local mdev mall mh msz mc mn n_moe moe_rules="" spill_moe
  mdev=$(awk -v w="$(stat -c %s "$T/moe.gguf")" 'BEGIN { printf "%d", w / 1.75 / 1048576 }')
  read -r mall w d p ref < <(run_one "$profile" hbm "$T/moe.gguf" decode1 SIMCUDA_MEM=${big}M)
  read -r _ spill_moe < <(bound_ms "$profile" decode1 "$w" "$p" $((1024 * 1024 * 4)) $((1024 * 4)) $((d - w)) $((mdev << 20)))
  n_moe=$(awk -v s="$spill_moe" -v l=$MOE_LAYER_EXPERTS 'BEGIN { k = int((s + l - 1) / l); print (k > 6) ? 6 : k }')
  for ((l = 0; l < n_moe; l++)); do moe_rules+="${moe_rules:+,}name=blk.$l.ffn_*_exps.weight=ddr"; done
  read -r mh _ _ _ digest < <(run_one "$profile" heat "$T/moe.gguf" decode1 SIMCUDA_MEM=${mdev}M)
  [ "$mh" = fail ] || same_tokens "goals $profile experts heat" "$ref" "$digest"
  read -r msz _ _ _ digest < <(run_one "$profile" size "$T/moe.gguf" decode1 SIMCUDA_MEM=${mdev}M)
  [ "$msz" = fail ] || same_tokens "goals $profile experts size" "$ref" "$digest"
  read -r mc _ _ _ digest < <(run_one "$profile" size "$T/moe.gguf" decode1 SIMCUDA_MEM=${mdev}M \
    TIERMEM_RULES='name=*_exps.weight=ddr')
  [ "$mc" = fail ] || same_tokens "goals $profile experts --cpu-moe" "$ref" "$digest"
  read -r mn _ _ _ digest < <(run_one "$profile" size "$T/moe.gguf" decode1 SIMCUDA_MEM=${mdev}M TIERMEM_RULES="$moe_rules")
  [ "$mn" = fail ] || same_tokens "goals $profile experts --n-cpu-moe" "$ref" "$digest"
  echo "goals, $profile, mixture of experts (8 of FFN 1024, 2 a token, skewed), 1.75x a $mdev MiB device, decode1:" \
    "all in HBM $mall ms; heat $mh ms, size $msz ms, --cpu-moe $mc ms, --n-cpu-moe $n_moe $mn ms" \
    "(heat $(speedup "$msz" "$mh")x faster than size, $(speedup "$mn" "$mh")x than --n-cpu-moe)"

  # the 128k vocabulary at 1.25x: the goal on a model 256 wide (embedding and output 128 MiB
  # each); the 32-wide one of the vocabulary section beside it, whose steps are mostly launches
  local vdev vs vh vall m
  for m in v128k v128k-wide; do
    vdev=$(awk -v w="$(stat -c %s "$T/$m.gguf")" 'BEGIN { printf "%d", w / 1.25 / 1048576 }')
    read -r vall _ _ _ ref < <(run_one "$profile" hbm "$T/$m.gguf" decode1 SIMCUDA_MEM=$((vdev * 2 + 256))M)
    read -r vs _ _ _ digest < <(run_one "$profile" size "$T/$m.gguf" decode1 SIMCUDA_MEM=${vdev}M)
    [ "$vs" = fail ] || same_tokens "goals $profile $m size" "$ref" "$digest"
    read -r vh _ _ _ digest < <(run_one "$profile" heat "$T/$m.gguf" decode1 SIMCUDA_MEM=${vdev}M)
    [ "$vh" = fail ] || same_tokens "goals $profile $m heat" "$ref" "$digest"
    x=$(speedup "$vs" "$vh")
    echo "goals, $profile, 128k vocabulary, dim $([ $m = v128k ] && echo 32 || echo 256), on $vdev MiB: size $vs ms," \
      "heat $vh ms (${x}x); all in HBM $vall ms, so no placement is more than $(speedup "$vs" "$vall")x faster than size"
  done
  goal "P7.vocab$sfx" "large vocabulary at 1.25x" "heat ${x}x faster than size" ">= 1.3" "$(at_least "$x" 1.3)"

  # how fast heat follows a change in what is hot: from a cold start, placed as size places
  # (the embedding in HBM, the output matrix read whole every step below it), the decode
  # steps until heat's step is within 5% of its steady one (after 32 steps) and stays there
  local w steady settled="" steps="" st
  read -r steady _ _ _ _ < <(run_one "$profile" heat "$T/v128k-wide.gguf" step:32 SIMCUDA_MEM=${vdev}M)
  for w in 0 2 4 6 8 10 12 14 16; do
    read -r st _ _ _ _ < <(run_one "$profile" heat "$T/v128k-wide.gguf" step:$w SIMCUDA_MEM=${vdev}M)
    steps+="${steps:+ }$st"
    if awk -v a="$st" -v b="$steady" 'BEGIN { exit !(a + 0 > 0 && a <= 1.05 * b) }'; then
      [ -n "$settled" ] || settled=$((w + 1))
    else
      settled=""
    fi
  done
  echo "goals, $profile, 128k vocabulary, dim 256, cold start: the mean of decode steps W+1 and W+2 for W = 0 2 .. 16:" \
    "$steps ms; steady (after 32) $steady ms"
  goal "P4.converge$sfx" "heat follows what is hot, from a cold start" \
    "within 5% of its steady step from decode step ${settled:-(never)}" "<= 16" \
    "$([ -n "$settled" ] && [ "$settled" -le 16 ] && echo 1 || echo 0)"

  # the virtual KV pool
  local ks kh
  KV_PROFILE=$profile run_kv - hbm
  ref=$(grep 'generated ids:' "$T/kv.err" | md5sum | cut -c1-12)
  KV_PROFILE=$profile run_kv virtual size
  ks=$(field sim_decode_step_ms "$T/kv.err")
  same_tokens "goals $profile KV pool size" "$ref" "$(grep 'generated ids:' "$T/kv.err" | md5sum | cut -c1-12)"
  KV_PROFILE=$profile run_kv virtual heat
  kh=$(field sim_decode_step_ms "$T/kv.err")
  same_tokens "goals $profile KV pool heat" "$ref" "$(grep 'generated ids:' "$T/kv.err" | md5sum | cut -c1-12)"
  x=$(speedup "$ks" "$kh")
  echo "goals, $profile, virtual KV pool: size ${ks:-fail} ms, heat ${kh:-fail} ms"
  goal "P7.kv$sfx" "virtual-view KV pool" "heat ${x}x faster than size" ">= 1.3" "$(at_least "$x" 1.3)"

  # a model that fits: heat costs nothing and moves nothing
  local plain fstep moved
  read -r plain _ _ _ ref < <(run_one "$profile" plain "$T/fits.gguf" decode1)
  read -r fstep _ _ _ digest < <(run_one "$profile" heat "$T/fits.gguf" decode1 TIERMEM_STATS="$T/fits.stats")
  moved=$("$STAT" --json "$T/fits.stats" 2>/dev/null | grep -o '"migrations":[0-9]*' | cut -d: -f2)
  same_tokens "goals $profile, the model fits in HBM" "$ref" "$digest"
  x=$(speedup "$fstep" "$plain")
  goal "P3.fits$sfx" "a model that fits" "heat ${x}x of no interposer, ${moved:-?} migrations" ">= 0.99, 0" \
    "$([ "$(at_least "$x" 0.99)" = 1 ] && [ "${moved:-1}" = 0 ] && echo 1 || echo 0)"
}

want goals && {
  printf '\nthe goals: real-shaped models on a %d MiB device (steady-state decode, %d warm-up steps left out)\n' \
    "$GOAL_MIB" $WARMUP
  for profile in $PROFILES; do
    case $profile in h200-pcie5) goals_for "$profile" "" ;; gh200-c2c) goals_for "$profile" .gh200 ;;
      *) goals_for "$profile" ".$profile" ;; esac
  done
  # warm start: the first decode steps of the 128k vocabulary, cold and with the profile
  # an earlier run of 64 tokens wrote (3 tokens are too few launches for sampled heat)
  read -r _ _ _ _ ref < <(run_one "$first" hbm "$T/v128k.gguf" first)
  read -r cold _ _ _ digest < <(run_one "$first" heat "$T/v128k.gguf" first)
  same_tokens "heat, 128k vocabulary, first steps, cold" "$ref" "$digest"
  run_one "$first" heat "$T/v128k.gguf" long TIERMEM_PROFILE="$T/warm.profile" >/dev/null
  read -r warm _ _ _ digest < <(run_one "$first" heat "$T/v128k.gguf" first TIERMEM_PROFILE="$T/warm.profile")
  same_tokens "heat, 128k vocabulary, first steps, warm" "$ref" "$digest"
  echo "128k vocabulary, first 2 decode steps: $cold ms cold, $warm ms with TIERMEM_PROFILE of an earlier run" \
    "($(speedup "$cold" "$warm")x)"
  # f32 and fp8 KV: the heat policy's tokens are the all-HBM ones
  r=$(awk '{ print (NF > 3 ? $4 : $NF) }' <<<"$RATIOS")
  for kv in f32 fp8_e4m3; do
    KV=(--kv-dtype $kv --kv-blocks 48)
    read -r _ _ _ _ ref < <(run_one "$first" hbm "${MODEL[$r]}" decode16)
    read -r _ _ _ _ digest < <(run_one "$first" heat "${MODEL[$r]}" decode16)
    same_tokens "heat, ${r}x model, $kv KV" "$ref" "$digest" && echo "${r}x model, $kv KV, batch 16: heat generates the all-HBM tokens"
  done
  KV=(--kv-dtype f16 --kv-blocks 48)
} | tee -a "$TABLE"

# ------------------------------------------------------------------ the file tier
# A model whose weights exceed HBM and DDR together (53 MiB against 24 MiB of each): without
# the file tier it cannot load; with TIERMEM_FILE_TIER=1 the chunks that do not fit are
# dropped and read back from the model file as steps need them. Its matrices are 2.25 and
# 6 MiB (dim 768, FFN 2048), so that every weight is chunked: allocations under the chunk
# size pass through to HBM and cannot be dropped. Its bound adds the storage term: the weight
# bytes beyond HBM and DDR are read each step at NVME_GBPS (and cross the link with the DDR
# part).
FILE_MIB=24
"$MK" -o "$T/file.gguf" --layers 2 --dim 768 --heads 12 --kv-heads 3 --ffn 2048 --type f32 | sed 's/^/# /'
want file && {
  printf '\n%s, 53 MiB of weights, HBM %d MiB + DDR %d MiB, decode batch 1: the file tier (TIERMEM_FILE_TIER=1)\n' \
    "$first" $FILE_MIB $FILE_MIB
  printf '%-12s %10s %10s %8s %16s\n' run "step ms" "bound ms" "/ bound" "read back/step"
  for tier in 0 1; do
    env "${SIM[@]}" SIMCUDA_PROFILE="$first" SIMCUDA_MEM=${FILE_MIB}M LD_PRELOAD="$LIB" TIERMEM_FILE_TIER=$tier \
      TIERMEM_DDR_LIMIT=${FILE_MIB}M TIERMEM_STATS="$T/file.stats" "$LLM" -m "$T/file.gguf" \
      --prompts-file "$T/prompts1" -n $((DECODE * 4 + 1)) "${KV[@]}" >/dev/null 2>"$T/run.err"
    name=$([ $tier = 1 ] && echo "file tier" || echo "without")
    step=$(field sim_decode_step_ms "$T/run.err")
    if [ -z "$step" ]; then
      printf '%-12s %s\n' "$name" "fails: $(sed -n 's/^error: //p' "$T/run.err" | head -n 1 | cut -c1-50)..."
      continue
    fi
    w=$(field weight_bytes "$T/run.err")
    bound=$(awk -v hbm="$(param "$first" hbm_gbps)" -v link="$(param "$first" h2d_gbps)" \
      -v nvme="$(param "$first" nvme_gbps)" -v w="$w" -v dev=$((FILE_MIB << 20)) 'BEGIN {
        h = w < dev ? w : dev; low = w - h; file = low - dev; if (file < 0) file = 0
        t = h / (hbm * 1e6); s = low / (link * 1e6); f = file / (nvme * 1e6)
        if (s > t) t = s; if (f > t) t = f; printf "%.6f", t }')
    bytes=$("$STAT" --json "$T/file.stats" | grep -o '"file_fault_bytes":[0-9]*' | cut -d: -f2)
    printf '%-12s %10s %10s %8s %16s\n' "$name" "$step" "$bound" \
      "$(awk -v s="$step" -v b="$bound" 'BEGIN { printf "%.2f", s / b }')" \
      "$(awk -v b="${bytes:-0}" -v n=$((DECODE * 4 + 1)) 'BEGIN { printf "%.1f MiB", b / n / 1048576 }')"
  done
} | tee -a "$TABLE"

# ------------------------------------------------------------------ zero-copy against streaming
want stream && O=$O "$ROOT/tools/bench-tiering/bench-stream.sh" | tee -a "$TABLE"

# ------------------------------------------------------------------ tier occupancy over time
# The 1.75x model decoding at batch 16 under each policy, its stats region sampled.
OCC=$OUT/tiering-occupancy.tsv
printf 'policy\tseconds\thbm_mib\tddr_mib\tmanaged_mib\n' >"$OCC"
r=$(awk '{ print (NF > 3 ? $4 : $NF) }' <<<"$RATIOS")
want occupancy && for policy in $policies; do
  min=(); case $policy in managed*) min=(TIERMEM_MIN_TIERED=64K) ;; esac
  env "${SIM[@]}" "${min[@]}" SIMCUDA_PROFILE="$first" SIMCUDA_MEM=${DEVICE_MIB}M LD_PRELOAD="$LIB" TIERMEM_POLICY=$policy \
    "$LLM" -m "${MODEL[$r]}" --prompts-file "$T/prompts16" -n $((DECODE * 4)) "${KV[@]}" >/dev/null 2>&1 &
  pid=$! t0=$(date +%s.%N)
  while kill -0 $pid 2>/dev/null; do
    json=$("$STAT" --json $pid 2>/dev/null) || { sleep 0.05; continue; }
    awk -v p=$policy -v t0="$t0" -v now="$(date +%s.%N)" '
      /"name":"hbm"/ { match($0, /"used":[0-9]+/); h = substr($0, RSTART + 7, RLENGTH - 7) }
      /"name":"ddr"/ { match($0, /"used":[0-9]+/); d = substr($0, RSTART + 7, RLENGTH - 7) }
      /"managed_bytes":/ { match($0, /"managed_bytes":[0-9]+/); m = substr($0, RSTART + 16, RLENGTH - 16) }
      END { printf "%s\t%.2f\t%.2f\t%.2f\t%.2f\n", p, now - t0, h / 1048576, d / 1048576, m / 1048576 }' \
      <<<"$json" >>"$OCC"
    sleep 0.1
  done
  wait $pid
done

# The 128k-vocabulary model under size and heat: how much of HBM holds the hot tensor
# (output.weight, read whole every token) and how much the cold one (token_embd.weight).
HOT=$OUT/tiering-hot.tsv
printf 'policy\tseconds\toutput_hbm_mib\tembd_hbm_mib\n' >"$HOT"
want occupancy && for policy in size heat; do
  env "${SIM[@]}" SIMCUDA_PROFILE="$first" SIMCUDA_MEM=${DEVICE_MIB}M LD_PRELOAD="$LIB" TIERMEM_POLICY=$policy \
    "$LLM" -m "$T/v128k.gguf" --prompts-file "$T/prompts1" -n 400 "${KV[@]}" >/dev/null 2>&1 &
  pid=$! t0=$(date +%s.%N)
  while kill -0 $pid 2>/dev/null; do
    json=$("$STAT" --json $pid 2>/dev/null) || { sleep 0.05; continue; }
    awk -v p=$policy -v t0="$t0" -v now="$(date +%s.%N)" -v chunk=$((2 << 20)) '
      function hbm() { match($0, /"hbm":[0-9]+/); return substr($0, RSTART + 6, RLENGTH - 6) * chunk / 1048576 }
      /"tensor":"output.weight"/ { o = hbm() }
      /"tensor":"token_embd.weight"/ { e = hbm() }
      END { printf "%s\t%.2f\t%.2f\t%.2f\n", p, now - t0, o, e }' <<<"$json" >>"$HOT"
    sleep 0.05
  done
  wait $pid
done

# ------------------------------------------------------------------ plots
if want plots && command -v gnuplot >/dev/null; then
  np=$(wc -w <<<"$PROFILES")
  # one file per line of a plot: "ratio step/bound"
  mkdir -p "$T/series"
  awk -F'\t' -v dir="$T/series" 'NR > 1 && $5 != "fail" && $6 > 0 {
      print $3, $5 / $6 > (dir "/" $1 "." $2 "." $4) }' "$ROWS"
  {
    echo "set terminal pngcairo size 1500,$((420 * np)) font ',10'"
    echo "set output '$OUT/tiering-step-time.png'"
    echo "set multiplot layout $np,3 title 'simulated step time / link bound against oversubscription (device $DEVICE_MIB MiB)'"
    echo "set logscale y; set grid; set key below maxrows 1; set bmargin 6; set xlabel 'model weights / device memory'"
    echo "set ylabel 'step time / link bound'"
    for profile in $PROFILES; do
      for mode in decode1 decode16 prefill; do
        echo "set title '$profile, $mode'"
        plot="plot"
        for policy in $columns; do
          [ -s "$T/series/$profile.$mode.$policy" ] &&
            plot+=" '$T/series/$profile.$mode.$policy' using 1:2 with linespoints title '$policy',"
        done
        echo "${plot%,}"
      done
    done
    echo "unset multiplot"
    echo "set terminal pngcairo size 1100,420 font ',10'"
    echo "set output '$OUT/tiering-occupancy.png'"
    echo "unset logscale y; set datafile separator '\t'; set key inside right center maxrows 3; set bmargin 4; set yrange [0:*]; set offsets 0, 0, graph 0.1, 0"
    echo "set multiplot layout 1,$(wc -w <<<"$policies") title 'where the ${r}x model lives while it decodes ($first, device $DEVICE_MIB MiB)'"
    for policy in $policies; do
      echo "set title '$policy'; set xlabel 'seconds (wall)'; set ylabel 'MiB'"
      echo "plot '$OCC' using (strcol(1) eq '$policy' ? \$2 : 1/0):3 with lines title 'hbm', '' using (strcol(1) eq '$policy' ? \$2 : 1/0):4 with lines title 'ddr', '' using (strcol(1) eq '$policy' ? \$2 : 1/0):5 with lines title 'managed'"
    done
    echo "unset multiplot"
    echo "set output '$OUT/tiering-hot.png'"
    echo "set multiplot layout 1,2 title 'HBM held by the hot and the cold tensor of the 128k-vocabulary model ($first, device $DEVICE_MIB MiB)'"
    for policy in size heat; do
      echo "set title '$policy'; set xlabel 'seconds (wall)'; set ylabel 'MiB in HBM'"
      echo "plot '$HOT' using (strcol(1) eq '$policy' ? \$2 : 1/0):3 with lines title 'output.weight (hot)', '' using (strcol(1) eq '$policy' ? \$2 : 1/0):4 with lines title 'token_embd.weight (cold)'"
    done
    echo "unset multiplot"
  } >"$T/plot.gp"
  gnuplot "$T/plot.gp" 2>"$T/gnuplot.err" || sed 's/^/# gnuplot: /' "$T/gnuplot.err"
  echo "plots: $OUT/tiering-step-time.png $OUT/tiering-occupancy.png $OUT/tiering-hot.png"
fi
if [ -s "$GOALS" ]; then
  echo
  tee -a "$TABLE" <"$GOALS"
fi
echo "table: $TABLE; rows: $ROWS; bench-tiering took $(($(date +%s) - start)) s"
if [ -s "$T/mismatches" ]; then
  echo "bench-tiering: $(wc -l <"$T/mismatches") runs did not generate the all-HBM tokens:" >&2
  cat "$T/mismatches" >&2
  exit 1
fi
