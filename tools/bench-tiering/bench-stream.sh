#!/usr/bin/env bash
# bench-stream — spilled weights read in place (zero-copy) against streamed through the
# heat policy's HBM staging ring, side by side: the dense llama shape of bench-tiering at
# 1.75 times a larger device (the ring's two 2 MiB chunks are a small share of it, as on a
# real GPU), decode at batch 1 and 16, `heat` with TIERMEM_STREAM=off and =auto, each step
# time divided by the link bound. Where the time goes: the bytes the copy engine carries
# per decode step (two runs of different lengths, the difference per step), the copy
# engine's busy share of the step, and what is left (launches waiting for a copy, reads of
# what stays in place: the engine's activations and KV cache when they spill too).
# Run by bench-tiering.sh, or alone.
#
#   BENCH_TIERING_STREAM_MIB (128), BENCH_TIERING_PROFILES (its first profile is used)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
LLM=$B/bin/tiermem-llm MK=$B/bin/tiermem-mkmodel LIB=$B/lib/libtiermem.so
TIME_H=$ROOT/tools/simcuda/sim_time.h
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DEVICE_MIB=${BENCH_TIERING_STREAM_MIB:-128}
PROFILE=$(awk '{ print $1 }' <<<"${BENCH_TIERING_PROFILES:-h200-pcie5}")
SIM=(SIMCUDA_HOST_TIME=0 SIMCUDA_LAUNCH_US=0 SIMCUDA_COPY_US=0 SIMCUDA_HOST_LATENCY_US=0 SIMCUDA_LOG=info
     SIMCUDA_PROFILE="$PROFILE" SIMCUDA_MEM=${DEVICE_MIB}M)
for f in "$LLM" "$MK" "$LIB" "$TIME_H"; do
  [ -e "$f" ] || { echo "bench-stream: $f is missing; run make first" >&2; exit 1; }
done
param() {
  local col
  case $1 in h200-pcie5) col=3 ;; gh200-c2c) col=4 ;; h100-pcie5) col=5 ;; *) return 1 ;; esac
  grep -E "^ *X\($2," "$TIME_H" | sed -E 's/^ *X\(//; s/\).*//' | awk -F', *' -v c=$col '{ print $c }'
}
field() { sed -n "s/.*summary:.* $1=\([0-9.]*\).*/\1/p" "$2" | tail -n 1; }
copied() { sed -n 's/^simcuda: exit: copied host-numa -> device: \([0-9]*\) bytes/\1/p' "$1"; }
# GiB kernels read in place (host-numa), from simcuda's exit summary
in_place() { sed -n 's/^simcuda: exit: kernels in host-numa: read \([0-9.]*\) GiB.*/\1/p' "$1"; }
H2D=$(param "$PROFILE" h2d_gbps) ZC=$(param "$PROFILE" zero_copy_gbps) HBM=$(param "$PROFILE" hbm_gbps) TF=$(param "$PROFILE" tflops)

# The bench-tiering shape: whole layers to 1.75x, the vocabulary making up the rest.
LAYER_BYTES=$(((2 * 256 * 256 + 2 * 256 * 64 + 3 * 256 * 768 + 2 * 256) * 4))
TOKEN_BYTES=$((2 * 256 * 4))
BASE_BYTES=$((1024 * TOKEN_BYTES + 256 * 4))
read -r layers vocab < <(awk -v d=$((DEVICE_MIB << 20)) -v l=$LAYER_BYTES -v b=$BASE_BYTES -v t=$TOKEN_BYTES \
  'BEGIN { n = int((1.75 * d - b) / l); v = 1024 + int((1.75 * d - b - n * l) / t); print n, (v < 1024 ? 1024 : v) }')
"$MK" -o "$T/m.gguf" --layers "$layers" --vocab "$vocab" --dim 256 --heads 4 --kv-heads 1 --ffn 768 --type f32 |
  sed 's/^/# /'
for i in $(seq 1 16); do echo "once upon a time $i"; done >"$T/prompts16"
echo "once upon a time" >"$T/prompts1"

# run MODE STREAM STEPS -> the run's stderr in $T/run-MODE-STREAM-STEPS.err
run() {
  local out=$T/run-$1-$2-$3.err
  env "${SIM[@]}" LD_PRELOAD="$LIB" TIERMEM_POLICY=heat TIERMEM_STREAM="$2" "$LLM" -m "$T/m.gguf" \
    --prompts-file "$T/prompts${1#decode}" -n $(($3 + 1)) --kv-dtype f16 --kv-blocks 48 >/dev/null 2>"$out" ||
    echo "bench-stream: $1 with TIERMEM_STREAM=$2 failed: $(grep -m1 error "$out")" >&2
  echo "$out"
}

printf '\n%s, dense model %.2fx a %d MiB device, heat policy: spilled weights read in place or streamed\n' \
  "$PROFILE" 1.75 "$DEVICE_MIB"
printf 'through a ring of 2 HBM chunks; step time / link bound, and where a streamed step goes\n'
printf '%-9s %9s %10s %7s %10s %7s %12s %8s %8s %13s %8s\n' mode "bound ms" "zero-copy" "/bound" streamed "/bound" \
  "copied/step" "copy ms" "CE busy" "in place/step" "its ms"
for mode in decode1 decode16; do
  zc=$(run $mode off 2) st=$(run $mode auto 2) st4=$(run $mode auto 4)
  w=$(field weight_bytes "$st") tokens=${mode#decode}
  bound=$(awk -v w="$w" -v d=$((DEVICE_MIB << 20)) -v hbm="$HBM" -v link="$H2D" -v tf="$TF" -v n="$tokens" 'BEGIN {
    s = w - d; if (s < 0) s = 0; t = (w - s) / (hbm * 1e6); l = s / (link * 1e6); c = 2 * (w / 4) * n / (tf * 1e9)
    if (l > t) t = l; if (c > t) t = c; printf "%.4f", t }')
  awk -v b="$bound" -v z="$(field sim_decode_step_ms "$zc")" -v s="$(field sim_decode_step_ms "$st")" \
      -v c2="$(copied "$st")" -v c4="$(copied "$st4")" -v r2="$(in_place "$st")" -v r4="$(in_place "$st4")" \
      -v link="$H2D" -v zc="$ZC" -v m=$mode 'BEGIN {
    per = (c4 - c2) / 2; ms = per / (link * 1e6); rd = (r4 - r2) / 2 * 1073741824
    printf "%-9s %9.4f %10.4f %7.2f %10.4f %7.2f %8.1f MiB %8.4f %7.0f%% %9.1f MiB %8.4f\n", m, b, z, z / b, s, s / b,
      per / 1048576, ms, 100 * ms / s, rd / 1048576, rd / (zc * 1e6) }'
done
