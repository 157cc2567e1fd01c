#!/usr/bin/env bash
# The engine, unmodified, under libtiermem.so on a device too small for its model:
# token-for-token equality with an all-in-HBM run (f32 and fp8 KV), bytes per tier within
# the limits and adding up to what the engine allocated, nothing left behind at exit, a
# larger KV pool under the virtual memory view, and a KV pool under the default view when
# HBM holds nothing that can move.
source "$(dirname "$0")/../lib/tap.sh"

llm=$B/bin/tiermem-llm
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
export SIMCUDA_NUMA_NODES=0,1
preload=$(preload_value "$B/lib/libtiermem.so")
device=32M
limits=(TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=24M TIERMEM_DDR_NODE=0 TIERMEM_DDR_LIMIT=160M
        TIERMEM_HBM_RESERVE=4M)
mib=$((1 << 20))

# About 53 MiB of f32 weights (1.66 x the device); the 768-wide matrices are over 2 MiB,
# so they are placed chunk by chunk.
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --layers 2 --dim 768 --heads 12 --kv-heads 3 --ffn 2048 \
  --type f32 --seed 3 > "$T/mk.log" 2>&1
check "test model generated" test -s "$T/m.gguf"

summary_field() { sed -n "s/.*summary:.* $1=\([0-9]*\).*/\1/p" "$2"; }
ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
json_field() { grep -o "\"$1\":[0-9]*" "$2" | head -n 1 | cut -d: -f2; }
tier_field() { grep -o "{\"name\":\"$1\"[^}]*}" "$3" | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }

# -------------------------------------------------------------- the model does not fit alone
SIMCUDA_MEM=$device "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 4 > /dev/null 2> "$T/alone.err"
check_eq "without the interposer the engine exits 1" "$?" 1
check "  and names what it needed and what the device has" \
  grep -qE '^error: out of device memory while loading weights: need [0-9.]+ MiB, device has 32.0 MiB total' "$T/alone.err"

# -------------------------------------------------------------- same tokens as all in HBM
for kv in f32 fp8_e4m3; do
  SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype $kv -v \
    > /dev/null 2> "$T/ref-$kv.err"
  env SIMCUDA_MEM=$device "${limits[@]}" TIERMEM_MEMINFO=virtual TIERMEM_STATS="$T/stats-$kv" \
    SIMCUDA_LOG=info LD_PRELOAD="$preload" \
    "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype $kv -v > /dev/null 2> "$T/tiered-$kv.err"
  check_eq "$kv KV: the tiered run exits 0" "$?" 0
  check "$kv KV: the reference generated 24 tokens" test "$(ids "$T/ref-$kv.err" | wc -w)" -eq 24
  check_eq "$kv KV: token for token equal to the all-in-HBM run" "$(ids "$T/tiered-$kv.err")" "$(ids "$T/ref-$kv.err")"
done

# -------------------------------------------------------------- where the bytes went (f32 run)
stats=$T/stats-f32
"$B/bin/tiermem-stat" --json "$stats" > "$T/stats.json" 2> "$T/stat.err"
check "tiermem-stat reads the final stats region" test -s "$T/stats.json"
err=$T/tiered-f32.err
allocs=$(summary_field device_allocs "$err")
bytes=$(summary_field device_bytes "$err")
check_eq "the interposer saw every allocation the engine made" "$(json_field alloc_total "$T/stats.json")" "$allocs"
check_eq "  and every free" "$(json_field free_total "$T/stats.json")" "$allocs"
declare -A limit=([hbm]=$((32 * mib)) [cxl]=$((24 * mib)) [ddr]=$((160 * mib)))
sum=0
for tier in hbm cxl ddr; do
  peak=$(tier_field $tier peak "$T/stats.json")
  check "$tier: peak ${peak:-?} within its limit ${limit[$tier]}" test "${peak:-0}" -le "${limit[$tier]}"
  check "$tier: holds part of the model" test "${peak:-0}" -gt 0
  check_eq "$tier: nothing in use after exit" "$(tier_field $tier used "$T/stats.json")" 0
  sum=$((sum + ${peak:-0}))
done
# Every byte is placed once; chunked allocations round up to 2 MiB chunks, nothing more.
check "tiers add up to the engine's $bytes bytes (got $sum)" test "$sum" -ge "$bytes"
check "  with no more than chunk rounding on top" test "$sum" -le $((bytes + allocs * 2 * mib))
check "cxl is filled before ddr (tier order)" test "$(tier_field cxl peak "$T/stats.json")" -eq $((24 * mib))

# -------------------------------------------------------------- nothing left behind
check "simcuda reports no device memory in use at exit" \
  grep -q 'simcuda: exit: device memory in use 0 bytes' "$err"
env SIMCUDA_MEM=$device "${limits[@]}" TIERMEM_MEMINFO=virtual LD_PRELOAD="$preload" \
  "$llm" -m "$T/m.gguf" -p "Once" -n 2 -v > /dev/null 2> "$T/default-region.err" &
pid=$!
wait $pid
check_eq "a run with the default stats region exits 0" "$?" 0
check "its stats region /dev/shm/tiermem-$(id -u)/tiermem.$pid is gone after exit" test ! -e "/dev/shm/tiermem-$(id -u)/tiermem.$pid"

# -------------------------------------------------------------- the KV pool under each view
# physical: free leaves out the HBM reserve chunked allocations may not take, so with HBM
# full of weights nothing is free and the engine says so; virtual counts the lower tiers.
for view in physical virtual; do
  env SIMCUDA_MEM=$device "${limits[@]}" TIERMEM_MEMINFO=$view LD_PRELOAD="$preload" \
    "$llm" -m "$T/m.gguf" -p "Once" -n 1 --gpu-memory-utilization 0.9 > /dev/null 2> "$T/kv-$view.err"
  declare "rc_$view=$?"
  declare "blocks_$view=$(summary_field kv_blocks "$T/kv-$view.err")"
done
check_eq "TIERMEM_MEMINFO=physical: HBM is full, so the engine stops with one line about the KV cache" \
  "$rc_physical $(grep -c '^error: out of device memory for the KV cache: .* 90% of the 0.0 MiB free is 0.0 MiB' "$T/kv-physical.err")" \
  "1 1"
check_eq "TIERMEM_MEMINFO=virtual: the engine runs" "$rc_virtual" 0
check "  with a KV pool from the lower tiers (${blocks_virtual:-?} blocks)" test "${blocks_virtual:-0}" -gt 0

# available (the default), with HBM full of what cannot move: a model of small tensors
# (each under a chunk, so they pass through to HBM until it is full) leaves nothing that
# could move down, yet free reads what the lower tiers can take, up to 1/8 of HBM, so a
# pool sized from free memory is not empty and the engine runs as it does under virtual.
"$B/bin/tiermem-mkmodel" -o "$T/small.gguf" --target-size 24M > /dev/null
for view in available virtual; do
  env SIMCUDA_MEM=16M TIERMEM_MEMINFO=$view LD_PRELOAD="$preload" \
    "$llm" -m "$T/small.gguf" -p "Once" -n 4 --gpu-memory-utilization 0.9 -v > /dev/null 2> "$T/small-$view.err"
  declare "rc_small_$view=$?"
done
blocks_small=$(summary_field kv_blocks "$T/small-available.err")
check_eq "24 MiB of small tensors on 16 MiB, TIERMEM_MEMINFO=available: the engine runs" "$rc_small_available" 0
check "  with a KV pool (${blocks_small:-?} blocks) of at most 0.9 x 1/8 of HBM" \
  test "${blocks_small:-0}" -gt 0 -a "$(grep -c 'kv pool: .*(0.90 of 2.0 MiB free after weights)' "$T/small-available.err")" = 1
check_eq "  and the tokens of the virtual view" "$(ids "$T/small-available.err")" "$(ids "$T/small-virtual.err")"

done_testing
