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
#   max(HBM bytes read per step / HBM bandwidth, bytes that cannot be resident / link
#       bandwidth, FLOPs per step / peak compute)
# with perfect overlap. Then a 128k-token vocabulary (token_embd large and mostly cold) and
# a KV pool sized under TIERMEM_MEMINFO=virtual. Table on stdout; the table, the raw rows
# and the plots (step time against oversubscription; tier occupancy over time) in
# $O/bench/. Ratios matter, not sizes: the device is small so that it runs in minutes, and
# the fixed per-operation costs (launch, copy set-up, first access over the link) are set
# to 0 so that a small model stands for a large one, where they are a sliver of a step.
# Host code is free (SIMCUDA_HOST_TIME=0): figures depend on the work and the profile only.
# The managed policies run with TIERMEM_MIN_TIERED=64K, so that every weight tensor is
# managed memory, as in llama.cpp's single managed weight buffer; the others keep the
# default (2 MiB, the chunk).
#
#   BENCH_TIERING_DEVICE_MIB (12), BENCH_TIERING_RATIOS ("1.0 1.25 1.5 1.75 2 2.5 3"),
#   BENCH_TIERING_PROFILES ("h200-pcie5 gh200-c2c"), BENCH_TIERING_DECODE (2 steps)
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
BIG_MIB=$((DEVICE_MIB * 8 + 256))     # "all in HBM": a device large enough for any model here
KV=(--kv-dtype f16 --kv-blocks 48)    # f16: no fp8 calibration pass; 48 blocks hold either run
SIM=(SIMCUDA_HOST_TIME=0 SIMCUDA_LAUNCH_US=0 SIMCUDA_COPY_US=0 SIMCUDA_HOST_LATENCY_US=0)
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
declare -A MODEL
for r in $RATIOS; do
  read -r layers vocab < <(awk -v r="$r" -v d=$((DEVICE_MIB << 20)) -v l=$LAYER_BYTES -v b=$BASE_BYTES \
    -v t=$TOKEN_BYTES 'BEGIN { n = int((r * d - b) / l); if (n < 1) n = 1
                               v = 1024 + int((r * d - b - n * l) / t); print n, (v < 1024 ? 1024 : v) }')
  MODEL[$r]=$T/m$r.gguf
  "$MK" -o "${MODEL[$r]}" --layers "$layers" --vocab "$vocab" "${SHAPE[@]}" | sed "s/^/# ${r}x: /"
done

# run_one PROFILE POLICY MODEL MODE [ENV...] -> "step_ms weight_bytes device_bytes prompt_tokens"
# (step: one decode step, or the whole prefill); "fail ..." when the run did not finish.
run_one() {
  local profile=$1 policy=$2 model=$3 mode=$4; shift 4
  local env=("${SIM[@]}" SIMCUDA_PROFILE="$profile" SIMCUDA_MEM=${DEVICE_MIB}M "$@")
  [ "$policy" = hbm ] && env=("${SIM[@]}" SIMCUDA_PROFILE="$profile" SIMCUDA_MEM=${BIG_MIB}M "$@")
  [ "$policy" != hbm ] && env+=(LD_PRELOAD="$LIB" TIERMEM_POLICY="$policy")
  case $policy in managed*) env+=(TIERMEM_MIN_TIERED=64K) ;; esac
  local args
  case $mode in
    decode1) args=(--prompts-file "$T/prompts1" -n $((DECODE + 1))) ;;
    decode16) args=(--prompts-file "$T/prompts16" -n $((DECODE + 1))) ;;
    prefill) args=(-p "$(cat "$T/prompt512")" -n 1) ;;
  esac
  if ! env "${env[@]}" "$LLM" -m "$model" "${args[@]}" "${KV[@]}" >/dev/null 2>"$T/run.err"; then
    echo "fail 0 0 0"; cp "$T/run.err" "$OUT/tiering-failed-$profile-$policy-$mode.log"; return
  fi
  local w d p step
  w=$(field weight_bytes "$T/run.err") d=$(field device_bytes "$T/run.err") p=$(field prompt_tokens "$T/run.err")
  if [ "$mode" = prefill ]; then
    step=$(awk -v t="$(field sim_prefill_tok_s "$T/run.err")" -v p="$p" 'BEGIN { if (t > 0) printf "%.6f", p / t * 1e3; else print "fail" }')
  else
    step=$(field sim_decode_step_ms "$T/run.err")
  fi
  echo "${step:-fail} ${w:-0} ${d:-0} ${p:-0}"
}

# bound_ms PROFILE MODE WEIGHT_BYTES PROMPT_TOKENS
# What cannot be resident: the weight bytes beyond the device's memory (the KV blocks and
# activations a step touches are small here; a placement may keep the rest of the engine's
# buffers anywhere). A prefill reads the weights once per pass of 128 prompt tokens, as the
# engine runs it, so both byte terms count once per pass.
bound_ms() {
  awk -v hbm="$(param "$1" hbm_gbps)" -v link="$(param "$1" h2d_gbps)" -v tf="$(param "$1" tflops)" \
      -v mode="$2" -v w="$3" -v p="$4" -v dev=$((DEVICE_MIB << 20)) 'BEGIN {
    spill = w - dev; if (spill < 0) spill = 0
    tokens = mode == "decode1" ? 1 : mode == "decode16" ? 16 : p
    passes = mode == "prefill" ? int((p + 127) / 128) : 1
    flops = 2 * (w / 4) * tokens                   # f32 weights: one multiply-add per weight per token
    t = passes * (w - spill) / (hbm * 1e6); s = passes * spill / (link * 1e6); c = flops / (tf * 1e9)
    if (s > t) t = s; if (c > t) t = c
    printf "%.6f", t }'
}

# ------------------------------------------------------------------ the sweep
ROWS=$OUT/tiering.tsv
printf 'profile\tmode\tratio\tpolicy\tstep_ms\tbound_ms\n' >"$ROWS"
for profile in $PROFILES; do
  for r in $RATIOS; do
    for mode in decode1 decode16 prefill; do
      read -r step w d p < <(run_one "$profile" hbm "${MODEL[$r]}" $mode)
      bound=$(bound_ms "$profile" $mode "$w" "$p")
      actual=$(awk -v w="$w" -v d=$((DEVICE_MIB << 20)) 'BEGIN { printf "%.2f", w / d }')
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$profile" $mode "$actual" hbm "$step" "$bound" >>"$ROWS"
      for policy in $policies; do
        read -r step _ < <(run_one "$profile" "$policy" "${MODEL[$r]}" $mode)
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$profile" $mode "$actual" "$policy" "$step" "$bound" >>"$ROWS"
      done
    done
  done
done

# ------------------------------------------------------------------ the table
TABLE=$OUT/tiering.txt
awk -F'\t' -v cols="$columns" -v dev="$DEVICE_MIB" 'NR > 1 {
    key = $1 "|" $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if (!(($1 "|" $2 "|" $3) in rseen)) { rseen[$1 "|" $2 "|" $3] = 1; rs[key] = rs[key] " " $3 }
    step[key "|" $3 "|" $4] = $5; bound[key "|" $3] = $6 }
  END {
    nc = split(cols, c, " ")
    names["decode1"] = "decode, batch 1 (ms per step)"; names["decode16"] = "decode, batch 16 (ms per step)"
    names["prefill"] = "prefill of 512 tokens (ms)"
    for (i = 1; i <= n; i++) {
      split(order[i], k, "|")
      printf "\n%s, %s, device %d MiB: step time / link bound\n", k[1], names[k[2]], dev
      printf "%-8s %12s", "weights", "bound ms"
      for (j = 1; j <= nc; j++) printf " %15s", c[j]
      printf "\n"
      nr = split(rs[order[i]], rr, " ")
      for (q = 1; q <= nr; q++) {
        b = bound[order[i] "|" rr[q]]
        printf "%-8s %12.4f", rr[q] "x", b
        for (j = 1; j <= nc; j++) {
          s = step[order[i] "|" rr[q] "|" c[j]]
          if (s == "fail" || s == "" || b <= 0) printf " %15s", "fail"
          else printf " %15.2f", s / b
        }
        printf "\n"
      }
    }
  }' "$ROWS" | tee "$TABLE"

# ------------------------------------------------------------------ large vocabulary, virtual KV
first=${PROFILES%% *}
"$MK" -o "$T/v128k.gguf" --vocab 131072 --layers 2 --dim 32 --heads 2 --kv-heads 1 --ffn 64 --type f32 |
  sed 's/^/# /'
{
  printf '\n%s, 128k-token vocabulary (token_embd %s, mostly cold), decode batch 1:\n' "$first" \
    "$(awk 'BEGIN { printf "%.0f MiB", 131072 * 32 * 4 / 1048576 }')"
  read -r hstep w d p < <(run_one "$first" hbm "$T/v128k.gguf" decode1)
  bound=$(bound_ms "$first" decode1 "$w" "$p")
  printf '%-16s %10s %8s\n' policy "step ms" "/ bound"
  printf '%-16s %10s %8s\n' "link bound" "$bound" 1.00
  for policy in hbm $policies; do
    if [ $policy = hbm ]; then step=$hstep; else read -r step _ < <(run_one "$first" $policy "$T/v128k.gguf" decode1); fi
    printf '%-16s %10s %8s\n' $policy "$step" "$(awk -v s="$step" -v b="$bound" 'BEGIN { if (s + 0 > 0) printf "%.2f", s / b; else print "fail" }')"
  done

  r=$(awk '{ print (NF > 1 ? $2 : $1) }' <<<"$RATIOS")
  printf '\n%s, %sx model, decode batch 16, KV pool sized by the engine from free memory (size policy):\n' "$first" $r
  printf '%-10s %10s %12s %10s\n' meminfo kv_blocks "kv MiB" "step ms"
  for view in physical virtual; do
    env "${SIM[@]}" SIMCUDA_PROFILE="$first" SIMCUDA_MEM=${DEVICE_MIB}M LD_PRELOAD="$LIB" TIERMEM_MEMINFO=$view \
      TIERMEM_DDR_LIMIT=$((DEVICE_MIB * 16))M "$LLM" -m "${MODEL[$r]}" --prompts-file "$T/prompts16" \
      -n $((DECODE + 1)) --kv-dtype f16 >/dev/null 2>"$T/run.err" || cp "$T/run.err" "$OUT/tiering-failed-kv-$view.log"
    if [ -z "$(field kv_blocks "$T/run.err")" ]; then
      printf '%-10s %s\n' $view "no KV pool: $(sed -n 's/^error: //p' "$T/run.err" | head -n 1)"
      continue
    fi
    printf '%-10s %10s %12s %10s\n' $view "$(field kv_blocks "$T/run.err")" \
      "$(awk -v b="$(field kv_bytes "$T/run.err")" 'BEGIN { printf "%.1f", b / 1048576 }')" \
      "$(field sim_decode_step_ms "$T/run.err")"
  done
} | tee -a "$TABLE"

# ------------------------------------------------------------------ zero-copy against streaming
O=$O "$ROOT/tools/bench-tiering/bench-stream.sh" | tee -a "$TABLE"

# ------------------------------------------------------------------ tier occupancy over time
# The 1.75x model decoding at batch 16 under each policy, its stats region sampled.
OCC=$OUT/tiering-occupancy.tsv
printf 'policy\tseconds\thbm_mib\tddr_mib\tmanaged_mib\n' >"$OCC"
r=$(awk '{ print (NF > 3 ? $4 : $NF) }' <<<"$RATIOS")
for policy in $policies; do
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

# ------------------------------------------------------------------ plots
if command -v gnuplot >/dev/null; then
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
  } >"$T/plot.gp"
  gnuplot "$T/plot.gp" 2>"$T/gnuplot.err" || sed 's/^/# gnuplot: /' "$T/gnuplot.err"
  echo "plots: $OUT/tiering-step-time.png $OUT/tiering-occupancy.png"
fi
echo "table: $TABLE; rows: $ROWS; bench-tiering took $(($(date +%s) - start)) s"
