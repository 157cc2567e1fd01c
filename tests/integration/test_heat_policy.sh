#!/usr/bin/env bash
# TIERMEM_POLICY=heat on the engine, unmodified: the rebalancer moves chunks while it
# decodes, and the tokens stay those of an all-in-HBM run (f32 and fp8 KV); nothing
# leaks; nothing moves when the model fits in HBM or with TIERMEM_MIGRATE_RATE=0; a rule
# keeps its allocations where it sends them and demotions stay in the tier order. Passes
# come every 256 launches of a thread, so even a run of a few tokens gets some, at the
# same points every time. Spilled weights are read in place here (TIERMEM_STREAM=off): while
# they stream, weights read whole are never swapped for one another (test_stream.sh).
source "$(dirname "$0")/../lib/tap.sh"

llm=$B/bin/tiermem-llm
stat=$B/bin/tiermem-stat
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
export SIMCUDA_NUMA_NODES=0,1
preload=$(preload_value "$B/lib/libtiermem.so")
limits=(TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=24M TIERMEM_DDR_NODE=0 TIERMEM_DDR_LIMIT=160M
        TIERMEM_HBM_RESERVE=4M TIERMEM_MEMINFO=virtual TIERMEM_HEAT_HALFLIFE=1s TIERMEM_STREAM=off)
ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
json_field() { grep -o "\"$1\":[0-9]*" "$2" | head -n 1 | cut -d: -f2; }

# About 53 MiB of f32 weights on a 32 MiB device.
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --layers 2 --dim 768 --heads 12 --kv-heads 3 --ffn 2048 \
  --type f32 --seed 3 > "$T/mk.log" 2>&1
check "test model generated" test -s "$T/m.gguf"

for kv in f32 fp8_e4m3; do
  SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 96 --kv-dtype $kv -v > /dev/null 2> "$T/ref-$kv.err"
  env SIMCUDA_MEM=32M SIMCUDA_LOG=info "${limits[@]}" TIERMEM_POLICY=heat TIERMEM_STATS="$T/heat-$kv" \
    LD_PRELOAD="$preload" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 96 --kv-dtype $kv -v \
    > /dev/null 2> "$T/heat-$kv.err"
  check_eq "heat, $kv KV: exit 0" "$?" 0
  check "heat, $kv KV: the reference generated tokens" test -n "$(ids "$T/ref-$kv.err")"
  check_eq "heat, $kv KV: the same tokens as all in HBM" "$(ids "$T/heat-$kv.err")" "$(ids "$T/ref-$kv.err")"
  "$stat" --json "$T/heat-$kv" > "$T/heat-$kv.json"
  check "heat, $kv KV: chunks moved while it ran" test "$(json_field migrations "$T/heat-$kv.json")" -gt 0
  check_eq "heat, $kv KV: the budget is the default 4 GiB/s" "$(json_field migrate_rate "$T/heat-$kv.json")" \
    $((4 << 30))
  check "heat, $kv KV: tiermem-stat counts the moves per tier pair" \
    test $(($(json_field 'ddr>hbm' "$T/heat-$kv.json") + $(json_field 'cxl>hbm' "$T/heat-$kv.json"))) -gt 0
  check "heat, $kv KV: the last pass's budget is shown" test "$(json_field rebalance_budget "$T/heat-$kv.json")" -gt 0
  check "heat, $kv KV: nothing leaked" \
    grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' "$T/heat-$kv.err"
done

# A run of 8 tokens ends long before the 100 ms timer: the launch trigger still moves.
env SIMCUDA_MEM=32M "${limits[@]}" TIERMEM_POLICY=heat TIERMEM_STATS="$T/short" LD_PRELOAD="$preload" \
  "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 8 --kv-dtype f32 -v > /dev/null 2> "$T/short.err"
"$stat" --json "$T/short" > "$T/short.json"
check "a run of 8 tokens: chunks moved, same tokens" \
  test "$(json_field migrations "$T/short.json")" -gt 0 -a "$(ids "$T/short.err")" = "$(ids "$T/ref-f32.err" | cut -d' ' -f1-8)"

# A rule keeps every chunked allocation in DDR: HBM has room, yet nothing goes up.
env SIMCUDA_MEM=32M "${limits[@]}" TIERMEM_POLICY=heat TIERMEM_RULES=size\>=2M=ddr TIERMEM_STATS="$T/rule" \
  LD_PRELOAD="$preload" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 16 --kv-dtype f32 -v > /dev/null 2> "$T/rule.err"
"$stat" --json "$T/rule" > "$T/rule.json"
check_eq "TIERMEM_RULES=size>=2M=ddr: 0 migrations, same tokens" \
  "$(json_field migrations "$T/rule.json") $(ids "$T/rule.err")" "0 $(ids "$T/ref-f32.err" | cut -d' ' -f1-16)"

# The tier order leaves CXL out: chunks move, never into CXL.
env SIMCUDA_MEM=32M "${limits[@]}" TIERMEM_POLICY=heat TIERMEM_TIER_ORDER=hbm,ddr TIERMEM_STATS="$T/order" \
  LD_PRELOAD="$preload" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 16 --kv-dtype f32 -v > /dev/null 2> "$T/order.err"
"$stat" --json "$T/order" > "$T/order.json"
check "TIERMEM_TIER_ORDER=hbm,ddr: chunks moved" test "$(json_field migrations "$T/order.json")" -gt 0
check_eq "  none into or out of CXL, same tokens" \
  "$(($(json_field 'hbm>cxl' "$T/order.json") + $(json_field 'cxl>hbm' "$T/order.json"))) $(ids "$T/order.err")" \
  "0 $(ids "$T/ref-f32.err" | cut -d' ' -f1-16)"

# Everything fits in HBM: no migration at all.
env SIMCUDA_MEM=1G TIERMEM_POLICY=heat TIERMEM_HEAT_HALFLIFE=1s TIERMEM_STATS="$T/fits" LD_PRELOAD="$preload" \
  "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 96 --kv-dtype f32 -v > /dev/null 2> "$T/fits.err"
"$stat" --json "$T/fits" > "$T/fits.json"
check_eq "the model fits in HBM: 0 migrations, same tokens" \
  "$(json_field migrations "$T/fits.json") $(ids "$T/fits.err")" "0 $(ids "$T/ref-f32.err")"

# A rate of 0: the policy says so, and nothing moves.
env SIMCUDA_MEM=32M "${limits[@]}" TIERMEM_POLICY=heat TIERMEM_MIGRATE_RATE=0 TIERMEM_LOG=info \
  TIERMEM_STATS="$T/still" LD_PRELOAD="$preload" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 8 \
  > /dev/null 2> "$T/still.err"
check "TIERMEM_MIGRATE_RATE=0: one line says chunks stay" \
  grep -q '^tiermem: policy heat: chunks stay where they were placed (TIERMEM_MIGRATE_RATE=0)' "$T/still.err"
"$stat" --json "$T/still" > "$T/still.json"
check_eq "  and nothing moved" "$(json_field migrations "$T/still.json")" 0
# --warmup leaves the first decode steps out of the figures, and must leave some in.
SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 4 --warmup 4 > /dev/null 2> "$T/warm.err"
check_eq "--warmup as long as -n: refused in one line" "$(cat "$T/warm.err")" \
  "error: --warmup 4 leaves no decode step of -n 4 to measure"
SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 6 --warmup 4 --kv-dtype f32 -v > /dev/null 2> "$T/warm.err"
check_eq "--warmup 4 of -n 6: the tokens of a plain run, the figures of 1 decode step" \
  "$(ids "$T/warm.err") $(sed -n 's/.* decode_tok_s=[0-9.]* .*sim_decode_tok_s=\([0-9.]*\) sim_decode_step_ms=\([0-9.]*\).*/\1 \2/p' "$T/warm.err" | awk '{ printf "%.0f", $1 * $2 / 1000 }')" \
  "$(ids "$T/ref-f32.err" | cut -d' ' -f1-6) 1"
# A device too small for any ring (12 MiB: a quarter holds no two chunks) still has its
# launches watched until a cycle shows which weights are read whole: those are then never
# swapped for one another (each crosses the link once a step whichever stays), only for a
# gathered one. So the cold first passes of a prefill move nothing they cannot earn back,
# and heat is never slower than size, in simulated time (the same every run): the model of
# bench-tiering's sweep at 2.5x, on the C2C profile, where a swap of the output matrix for
# an FFN matrix cost a prefill of 512 tokens a third of its speed.
"$B/bin/tiermem-mkmodel" -o "$T/sweep.gguf" --layers 9 --vocab 2102 --dim 256 --heads 4 --kv-heads 1 --ffn 768 \
  --type f32 > "$T/mk.log" 2>&1
for i in $(seq 1 127); do printf 'once upon a time '; done > "$T/long"
small=(SIMCUDA_MEM=12M SIMCUDA_PROFILE=gh200-c2c SIMCUDA_HOST_TIME=0 TIERMEM_LEDGER=off TIERMEM_HEAT_SAMPLE=4
       LD_PRELOAD="$preload")
sim() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" "$2"; }
for policy in size heat; do
  env "${small[@]}" TIERMEM_POLICY=$policy TIERMEM_LOG=debug "$llm" -m "$T/sweep.gguf" -p "$(cat "$T/long")" -n 1 \
    --kv-dtype f16 --kv-blocks 48 -v > /dev/null 2> "$T/prefill-$policy.err"
  env "${small[@]}" TIERMEM_POLICY=$policy "$llm" -m "$T/sweep.gguf" -p "Once upon a time" -n 11 --warmup 8 \
    --kv-dtype f16 --kv-blocks 48 -v > /dev/null 2> "$T/decode-$policy.err"
done
check "12 MiB device: one line says no ring fits" grep -q \
  '^tiermem: policy heat: spilled weights are read in place, not streamed (HBM is too small for a ring of two chunks in a quarter of it)$' \
  "$T/prefill-heat.err"
check_eq "  and says it once" "$(grep -c 'not streamed' "$T/prefill-heat.err")" 1
p_size=$(sim sim_prefill_tok_s "$T/prefill-size.err") p_heat=$(sim sim_prefill_tok_s "$T/prefill-heat.err")
check "  a cold prefill of 512 tokens: heat ($p_heat tok/s) not slower than size ($p_size)" \
  awk -v h="$p_heat" -v s="$p_size" 'BEGIN { exit !(s > 0 && h >= s) }'
check_eq "  no weight read whole went below HBM for another" \
  "$(grep -c 'rebalance: .* to ddr' "$T/prefill-heat.err")" 0
d_size=$(sim sim_decode_step_ms "$T/decode-size.err") d_heat=$(sim sim_decode_step_ms "$T/decode-heat.err")
check "  decode after 8 steps: heat ($d_heat ms a step) faster than size ($d_size)" \
  awk -v h="$d_heat" -v s="$d_size" 'BEGIN { exit !(h > 0 && h < s) }'
check_eq "  the same tokens" "$(ids "$T/decode-heat.err")" "$(ids "$T/decode-size.err")"
done_testing
