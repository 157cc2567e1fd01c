#!/usr/bin/env bash
# bench-stream — spilled weights read in place (zero-copy) against streamed through the
# heat policy's HBM staging ring, side by side: the dense llama shape of bench-tiering at
# 1.75 times a larger device (the ring, the largest spilled weight and a chunk, is a small
# share of it, as on a real GPU), decode at batch 1 and 16, `heat` with TIERMEM_STREAM=off and =auto, each step
# time divided by the link bound. Where the time goes: the bytes the copy engine carries
# per decode step (two runs of different lengths, the difference per step), the copy
# engine's busy share of the step, and what is left (launches waiting for a copy, reads of
# what stays in place: the engine's activations and KV cache when they spill too).
# Every fixed cost is the profile's (launches, copy set-up, first access over the link, VMM
# calls); the last two columns are the streamed step again with all of them halved and
# doubled, how much the choice leans on them. Host code is free (SIMCUDA_HOST_TIME=0: the
# program's own code, not a cost of the GPU's; the driver's VMM calls are still charged).
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
SIM=(SIMCUDA_HOST_TIME=0 SIMCUDA_LOG=info SIMCUDA_PROFILE="$PROFILE" SIMCUDA_MEM=${DEVICE_MIB}M)
for f in "$LLM" "$MK" "$LIB" "$TIME_H"; do
  [ -e "$f" ] || { echo "bench-stream: $f is missing; run make first" >&2; exit 1; }
done
param() {
  local col
  case $1 in h200-pcie5) col=3 ;; gh200-c2c) col=4 ;; h100-pcie5) col=5 ;; *) return 1 ;; esac
  grep -E "^ *X\($2," "$TIME_H" | sed -E 's/^ *X\(//; s/\).*//' | awk -F', *' -v c=$col '{ print $c }'
}
# scaled_costs PROFILE FACTOR: every fixed cost of the profile (the *_US parameters) times
# FACTOR, as SIMCUDA_ settings
scaled_costs() {
  local col
  case $1 in h200-pcie5) col=3 ;; gh200-c2c) col=4 ;; h100-pcie5) col=5 ;; *) return 1 ;; esac
  grep -E '^ *X\([a-z_0-9]+, "[A-Z_0-9]+_US",' "$TIME_H" | sed -E 's/^ *X\(//; s/\).*//' |
    awk -F', *' -v c=$col -v f="$2" '{ gsub(/"/, "", $2); printf "SIMCUDA_%s=%g\n", $2, $c * f }'
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

# run MODE STREAM STEPS [TAG ENV...] -> the run's stderr in $T/run-MODE-STREAM-STEPS-TAG.err
run() {
  local out=$T/run-$1-$2-$3-${4:-profile}.err mode=$1 stream=$2 steps=$3
  shift 3
  [ $# -gt 0 ] && shift
  env "${SIM[@]}" "$@" LD_PRELOAD="$LIB" TIERMEM_POLICY=heat TIERMEM_STREAM="$stream" "$LLM" -m "$T/m.gguf" \
    --prompts-file "$T/prompts${mode#decode}" -n $((steps + 1)) --kv-dtype f16 --kv-blocks 48 >/dev/null 2>"$out" ||
    echo "bench-stream: $mode with TIERMEM_STREAM=$stream failed: $(grep -m1 error "$out")" >&2
  echo "$out"
}

printf '\n%s, dense model %.2fx a %d MiB device, heat policy: spilled weights read in place or streamed\n' \
  "$PROFILE" 1.75 "$DEVICE_MIB"
printf 'through its HBM ring; step time / link bound, and where a streamed step goes\n'
printf '%-9s %9s %10s %7s %10s %7s %12s %8s %8s %13s %8s %9s %9s\n' mode "bound ms" "zero-copy" "/bound" streamed \
  "/bound" "copied/step" "copy ms" "CE busy" "in place/step" "its ms" "costs/2" "costs*2"
EMBD=$((vocab * 256 * 4))
for mode in decode1 decode16; do
  zc=$(run $mode off 2) st=$(run $mode auto 2) st4=$(run $mode auto 4)
  mapfile -t half < <(scaled_costs "$PROFILE" 0.5)
  mapfile -t double < <(scaled_costs "$PROFILE" 2)
  sth=$(run $mode auto 2 half "${half[@]}") std=$(run $mode auto 2 double "${double[@]}")
  w=$(field weight_bytes "$st") tokens=${mode#decode}
  other=$(($(field device_bytes "$st") - w))
  # the link bound as bench-tiering computes it (bound_ms there): weights but the
  # embedding read whole, its rows gathered, the HBM reserve, KV pool and activations resident
  read -r bound spill < <(awk -v w="$w" -v e=$EMBD -v o="$other" -v d=$((DEVICE_MIB << 20)) -v hbm="$HBM" \
      -v link="$H2D" -v tf="$TF" -v n="$tokens" 'BEGIN {
    chunk = 2097152; r = int((d / 64 + chunk - 1) / chunk) * chunk
    rw = w - e; s = rw - (d - r - o); if (s < 0) s = 0; if (s > rw) s = rw
    t = (rw - s) / (hbm * 1e6); l = (s + n * 256 * 4) / (link * 1e6); c = 2 * (w / 4) * n / (tf * 1e9)
    if (l > t) t = l; if (c > t) t = c; printf "%.4f %.0f\n", t, s }')
  awk -v b="$bound" -v z="$(field sim_decode_step_ms "$zc")" -v s="$(field sim_decode_step_ms "$st")" \
      -v c2="$(copied "$st")" -v c4="$(copied "$st4")" -v r2="$(in_place "$st")" -v r4="$(in_place "$st4")" \
      -v h="$(field sim_decode_step_ms "$sth")" -v x2="$(field sim_decode_step_ms "$std")" \
      -v link="$H2D" -v zc="$ZC" -v m=$mode 'BEGIN {
    per = (c4 - c2) / 2; ms = per / (link * 1e6); rd = (r4 - r2) / 2 * 1073741824
    printf "%-9s %9.4f %10.4f %7.2f %10.4f %7.2f %8.1f MiB %8.4f %7.0f%% %9.1f MiB %8.4f %9.2f %9.2f\n", m, b, z, z / b,
      s, s / b, per / 1048576, ms, 100 * ms / s, rd / 1048576, rd / (zc * 1e6), h / b, x2 / b }'
  printf '  bound: max(%.1f MiB resident / HBM_GBPS %s, %.1f MiB spilled + %d embedding rows / H2D_GBPS %s, FLOPs / TFLOPS %s)\n' \
    "$(awk -v w="$w" -v e=$EMBD -v s="$spill" 'BEGIN { print (w - e - s) / 1048576 }')" "$HBM" \
    "$(awk -v s="$spill" 'BEGIN { print s / 1048576 }')" "$tokens" "$H2D" "$TF"
done
printf '  (weights %.1f MiB, of them the embedding %.1f MiB read a row per token; the HBM reserve, the KV pool\n' \
  "$(awk -v w="$w" 'BEGIN { print w / 1048576 }')" "$(awk -v e=$EMBD 'BEGIN { print e / 1048576 }')"
printf '   and the activations (%.1f MiB) count as resident; costs/2, costs*2: every *_US value of the profile scaled)\n' \
  "$(awk -v o="$other" -v d=$((DEVICE_MIB << 20)) 'BEGIN { c = 2097152; print (o + int((d / 64 + c - 1) / c) * c) / 1048576 }')"
printf '%s\n' "$(grep -h -o 'policy heat: spilled weights .*' "$T"/run-decode1-auto-2-profile.err | head -n 1)"
