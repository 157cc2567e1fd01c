#!/usr/bin/env bash
# KV heat per chunk, by simcuda's touch probes: two sequences in one batch, the first
# stopping after 100 tokens, the second running on to 1200 (over a second and a half of
# decoding alone on a fast machine: three half-lives of 0.5 s). KV blocks of 2048 positions
# in f32 are 2 MiB each, one chunk: the first sequence's block is chunk 0 of every K and V
# pool (the pool hands out low block ids first), the second's chunk 1. Once the first
# sequence is done its chunks cool while the running sequence's stay hot.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/heat_lib.sh"
need_ebpf
[ "${SAN:-0}" != 1 ] || skip_all "KV heat" "under the sanitizers the engine runs some 20 times slower, too few tokens per heat interval (test_heat_degrade runs the same code under them)"

"$MKMODEL" -o "$T/m.gguf" --vocab 32000 --dim 256 --layers 2 --heads 4 --kv-heads 4 --ffn 512 --ctx 1600 \
  --seed 5 >"$T/mk.log" 2>&1
printf 'the quick brown fox\nonce upon a time\n' >"$T/prompts"
"$HEAT" --json --interval 0.1 --halflife 0.5 --read-only --stats "$T/stats" --record "$T/kv.rec" -- sh -c "exec env \
  LD_PRELOAD='$(preload_value "$B/lib/libtiermem.so")' TIERMEM_MIN_TIERED=64K TIERMEM_STATS='$T/stats' \
  '$LLM' -m '$T/m.gguf' --prompts-file '$T/prompts' -n 100,1200 --threads 1 --kv-dtype f32 --block-size 2048 \
  --kv-blocks 2 >'$T/llm.out' 2>'$T/llm.err'" >"$T/kv.json" 2>"$T/kv.err"
check_eq "tiermem-heat ran to the end of the engine" "$?" 0
check "the engine ran both sequences, 1300 tokens" grep -q 'sequences=2 .*generated_tokens=1300 ' "$T/llm.err"
check "the touch probes were attached" grep -q 'touch probes on' "$T/kv.err"

# address of each K and V pool (2 blocks of 2 MiB)
jq -r '.allocations[] | select(.kernel == "tm_kv_append_f32" and .size == 4194304) | .address' "$T/kv.json" \
  >"$T/pools.txt"
check_eq "4 KV pools of 2 chunks found (K and V of 2 layers)" "$(wc -l <"$T/pools.txt")" 4
# chunk ADDRESS INDEX: "final_heat final_class peak_heat" of chunk INDEX of the pool at ADDRESS
chunk() {
  local hex final
  hex=$(printf '0x%x' $(($1 + $2 * 2097152)))
  final=$(jq -r --argjson a "$1" --argjson i "$2" \
    '.allocations[] | select(.address == $a) | .chunks[$i] | "\(.heat) \(.class)"' "$T/kv.json")
  echo "$final $(awk -v c="$hex" '$2 == c && $3 > m { m = $3 } END { print m + 0 }' "$T/kv.rec")"
}
ok_done=1 ok_running=1 ok_split=1
while read -r pool; do
  read -r done_heat done_class done_peak <<<"$(chunk "$pool" 0)"
  read -r run_heat run_class run_peak <<<"$(chunk "$pool" 1)"
  echo "# pool $pool: finished sequence's chunk $done_heat $done_class (peak $done_peak)," \
       "running sequence's chunk $run_heat $run_class (peak $run_peak)"
  awk -v h="$done_heat" -v p="$done_peak" 'BEGIN { exit !(p > 0 && h <= p / 4) }' && [ "$done_class" != hot ] || ok_done=0
  awk -v h="$run_heat" -v p="$run_peak" 'BEGIN { exit !(p > 0 && h >= p / 2) }' && [ "$run_class" != cold ] || ok_running=0
  awk -v d="$done_heat" -v r="$run_heat" 'BEGIN { exit !(r > 4 * d) }' || ok_split=0
done <"$T/pools.txt"
check "the finished sequence's KV chunks cooled to a quarter of their peak or less, none hot" test $ok_done = 1
# (hot by rank at speed; warm beside the weights when a loaded machine decodes few tokens an interval)
check "the running sequence's KV chunks stayed hot: half their peak or more, none cold" test $ok_running = 1
check "at the end the running sequence's chunks are 4 times hotter than the finished one's" test $ok_split = 1
done_testing
