#!/usr/bin/env bash
# The headline, end to end: a model larger than device memory runs unmodified under
# libtiermem.so. Runs on simcuda (no GPU needed); `make demo` builds everything first.
#
#   tools/demo/demo.sh            (O=build by default; the generated model is cached in $O/demo)
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${O:-build}
B=$PWD/$O
SHARED=${TM_SHARED:-$PWD/../shared}
work=$B/demo
mkdir -p "$work"
start=$(date +%s)

# ------------------------------------------------------------------ the setting
device_mem=128M            # the emulated device's memory (SIMCUDA_MEM)
big_device_mem=1G          # a device large enough to hold everything, for the reference
hbm_reserve=16M            # HBM kept free for small allocations and the driver
cxl_limit=96M              # the CXL tier: emulated on NUMA node 1
ddr_limit=512M             # host DDR on node 0
prompt="Once upon a time"
tokens=32
model=$work/demo-1.75x.gguf

llm=$B/bin/tiermem-llm
mkmodel=$B/bin/tiermem-mkmodel
stat=$B/bin/tiermem-stat
interposer=$B/lib/libtiermem.so
for f in "$llm" "$mkmodel" "$stat" "$interposer"; do
  [ -e "$f" ] || { echo "demo: $f is missing; run 'make demo' (it builds everything first)" >&2; exit 1; }
done

# Every run sees the emulated driver as libcuda.so.1, exactly as a GPU machine's loader would
# find the real one; node 1 exists for HOST_NUMA allocations even on a one-node machine.
export LD_LIBRARY_PATH=$B/lib/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SIMCUDA_NUMA_NODES=0,1
# simcuda's time model: node 1 is charged as CXL memory, and host code costs no simulated
# time, so the simulated figures repeat from run to run (profile h200-pcie5).
export SIMCUDA_CXL_NODES=1 SIMCUDA_HOST_TIME=0
tiering=(TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=$cxl_limit TIERMEM_DDR_NODE=0 TIERMEM_DDR_LIMIT=$ddr_limit
         TIERMEM_HBM_RESERVE=$hbm_reserve)

say() { printf '%s\n' "$*"; }
indent() { sed 's/^/      /'; }
field() { sed -n "s/.*[ :]$1=\([^ ]*\).*/\1/p" | head -n 1; }   # key=value from tiermem-llm lines
ids_of() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# ------------------------------------------------------------------ the model
# 5 layers of dim 1024 in f32: every matrix is at least 2 MiB, so each is placed chunk by
# chunk. About 223 MiB of weights: 1.75 times the 128 MiB device, as a 56 GB model on a
# 32 GB card.
if [ ! -s "$model" ]; then
  "$mkmodel" -o "$model" --layers 5 --dim 1024 --heads 16 --kv-heads 4 --ffn 2816 --type f32 \
    --seed 7 > "$work/mkmodel.log" 2>&1 || { cat "$work/mkmodel.log"; exit 1; }
fi
weights=$(sed -n 's/.*: \([0-9.]* MiB\) of .*/\1/p' "$work/mkmodel.log" 2>/dev/null)
[ -n "$weights" ] || weights=$(du -m "$model" | cut -f1)" MiB (file)"

say "tiermem demo: a model larger than device memory, run unmodified under libtiermem.so"
say
say "  device  simcuda, an emulated GPU with ${device_mem%M} MiB of device memory (no GPU is needed)"
say "  model   $(basename "$model"): $weights of f32 weights, 5 layers of dim 1024 (generated),"
say "          1.75 times the device, plus its KV cache"
say "  tiers   HBM ${device_mem%M} MiB (${hbm_reserve%M} MiB kept free), CXL ${cxl_limit%M} MiB on NUMA node 1 (emulated), DDR ${ddr_limit%M} MiB on node 0"
say "  run     tiermem-llm -m $(basename "$model") -p \"$prompt\" -n $tokens   (greedy; the same command every time)"
say

run_llm() {  # run_llm LOG ENV... -- ARGS...: the engine with the given environment
  local log=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$llm" "$@" > "$log.out" 2> "$log"
}

# ------------------------------------------------------------------ 1. without tiermem
say "[1/4] The engine alone on the ${device_mem%M} MiB device"
run_llm "$work/alone.log" SIMCUDA_MEM=$device_mem -- -m "$model" -p "$prompt" -n $tokens -v
rc=$?
grep '^error:' "$work/alone.log" | indent
say "      exit status $rc: the weights do not fit, as with any engine on a card that is too small."
[ $rc -ne 0 ] || { say "demo: expected the engine to fail without tiermem" >&2; exit 1; }
say

# ------------------------------------------------------------------ 2. reference
say "[2/4] Reference: the same run on a device that holds everything (SIMCUDA_MEM=$big_device_mem)"
run_llm "$work/reference.log" SIMCUDA_MEM=$big_device_mem -- -m "$model" -p "$prompt" -n $tokens -v ||
  { tail -n 5 "$work/reference.log"; exit 1; }
reference_ids=$(ids_of "$work/reference.log")
reference_step=$(grep 'summary:' "$work/reference.log" | field sim_decode_step_ms)
say "      generated ids: $reference_ids"
say "      simulated on an H200 (PCIe 5): $reference_step ms per decode step, all of it in HBM"
say

# ------------------------------------------------------------------ 3. with tiermem
say "[3/4] The same command on the ${device_mem%M} MiB device, with LD_PRELOAD=$O/lib/libtiermem.so"
stats=$work/tiered.stats
rm -f "$stats"
run_llm "$work/tiered.log" SIMCUDA_MEM=$device_mem "${tiering[@]}" TIERMEM_MEMINFO=virtual \
  TIERMEM_STATS="$stats" LD_PRELOAD="$interposer" -- -m "$model" -p "$prompt" -n $tokens -v ||
  { tail -n 5 "$work/tiered.log"; exit 1; }
tiered_ids=$(ids_of "$work/tiered.log")
same=$(paste <(tr ' ' '\n' <<<"$reference_ids") <(tr ' ' '\n' <<<"$tiered_ids") | awk '$1 == $2' | wc -l)
say "      generated ids: $tiered_ids"
if [ "$tiered_ids" = "$reference_ids" ]; then
  say "      identical to the reference: $same of $tokens tokens"
else
  say "      DIFFERENT from the reference ($same of $tokens tokens agree)"; exit 1
fi
summary=$(grep 'summary:' "$work/tiered.log")
say "      decode $(field decode_tok_s <<<"$summary") tokens/s on simcuda's host kernels (wall clock)"
tiered_step=$(field sim_decode_step_ms <<<"$summary")
say "      simulated on an H200 (PCIe 5): $tiered_step ms per decode step ($(field sim_decode_tok_s <<<"$summary") tokens/s)," \
    "$(awk -v t="$tiered_step" -v r="$reference_step" 'BEGIN { printf "%.1f", t / r }')x the all-HBM step:" \
    "what spills is read over the link"
say "      where its memory went (peak per tier, read from the stats region with tiermem-stat --json):"
"$stat" --json "$stats" | awk -F'[:,{}"]+' '/"name":/ {
    for (i = 1; i < NF; i++) v[$i] = $(i + 1)
    where = v["name"] == "hbm" ? "device " v["node"] : "node " v["node"]
    printf "        %-4s %-9s %10.1f MiB of %6.0f MiB\n", v["name"], where, v["peak"] / 1048576, v["limit"] / 1048576
  }'
say "        for $(mib "$(field weight_bytes <<<"$summary")") of weights, $(mib "$(field kv_bytes <<<"$summary")") of KV cache" \
    "in $(field device_allocs <<<"$summary") allocations (large ones placed in 2 MiB chunks)"
say
say "      The KV pool the engine sized from cuMemGetInfo (90% of what it reports free):"
for view in physical available virtual; do
  run_llm "$work/kv-$view.log" SIMCUDA_MEM=$device_mem "${tiering[@]}" TIERMEM_MEMINFO=$view \
    LD_PRELOAD="$interposer" -- -m "$model" -p "$prompt" -n 1 --gpu-memory-utilization 0.9
  pool=$(grep 'kv pool:' "$work/kv-$view.log")
  blocks=$(field kv_blocks <<<"$pool")
  bytes=$(field kv_bytes <<<"$pool")
  if [ -n "$blocks" ]; then
    printf '        TIERMEM_MEMINFO=%-9s %7s blocks of 16 tokens (%s)\n' "$view" "$blocks" "$(mib "$bytes")"
  else
    printf '        TIERMEM_MEMINFO=%-9s no pool: %s\n' "$view" "$(grep '^error:' "$work/kv-$view.log")"
  fi
done
say "      physical: only what HBM has left; available (the default): also the HBM chunks could leave"
say "      by moving down; virtual: HBM plus the tiers the process may spill into."
say
say "      With no settings at all (LD_PRELOAD only, no TIERMEM_* variables, no engine flags but -m -p -n):"
run_llm "$work/default.log" SIMCUDA_MEM=$device_mem LD_PRELOAD="$interposer" -- -m "$model" -p "$prompt" -n $tokens -v ||
  { tail -n 5 "$work/default.log"; exit 1; }
default_ids=$(ids_of "$work/default.log")
say "        $(grep 'kv pool:' "$work/default.log" | sed 's/^tiermem-llm: //' | cut -c1-100)"
default_summary=$(grep 'summary:' "$work/default.log")
if [ "$default_ids" = "$reference_ids" ]; then
  say "        the same $tokens tokens as the reference, $(field sim_decode_tok_s <<<"$default_summary") tokens/s" \
      "simulated (policy heat, the default)"
else
  say "        generated ids: $default_ids (NOT the reference's)"
fi
say "      Placement policies side by side (simulated decode tokens/s on an H200, PCIe 5):"
for policy in size heat; do
  run_llm "$work/policy-$policy.log" SIMCUDA_MEM=$device_mem "${tiering[@]}" TIERMEM_POLICY=$policy \
    LD_PRELOAD="$interposer" -- -m "$model" -p "$prompt" -n $tokens -v
  printf '        TIERMEM_POLICY=%-5s %8s tokens/s%s\n' "$policy" \
    "$(grep 'summary:' "$work/policy-$policy.log" | field sim_decode_tok_s)" \
    "$([ "$(ids_of "$work/policy-$policy.log")" = "$reference_ids" ] && echo ", tokens as the reference")"
done
say

# ------------------------------------------------------------------ 4. a real model
stories=$SHARED/models/stories260K.gguf
if [ -r "$stories" ]; then
  say "[4/4] A real model: stories260K ($(du -k "$stories" | cut -f1) KiB of weights) on a 1 MiB device"
  run_llm "$work/stories-alone.log" SIMCUDA_MEM=1M -- -m "$stories" -p "$prompt" -n 48
  say "      alone:        $(grep '^error:' "$work/stories-alone.log" | cut -c1-100)..."
  run_llm "$work/stories.log" SIMCUDA_MEM=1M "${tiering[@]}" TIERMEM_MEMINFO=virtual \
    LD_PRELOAD="$interposer" -- -m "$stories" -p "$prompt" -n 48 || { tail -n 5 "$work/stories.log"; exit 1; }
  say "      with tiermem: $(tr -d '\n' < "$work/stories.log.out")"
else
  say "[4/4] A real model: skipped, stories260K.gguf is not in $SHARED/models (TM_SHARED names the folder"
  say "      holding models/; docs/install.md, Test data, says where the file comes from)"
fi
say

say "Done in $(( $(date +%s) - start )) s. Logs are in $O/demo/."
say "On a real GPU the same holds for any CUDA program, unchanged:"
say "  LD_PRELOAD=/usr/local/lib/libtiermem.so TIERMEM_HBM_LIMIT=70G TIERMEM_MEMINFO=virtual your-server ..."
