#!/usr/bin/env bash
# tiermem-stat shows the heat of allocations the interposer is rewriting as it reads: the
# engine under libtiermem.so samples every launch (TIERMEM_HEAT_SAMPLE=1), so each layer
# matrix's heat record changes hundreds of times a second, and every view taken while it
# runs shows every one of the 14 matrices warm, none with no heat (a record that changed
# since the reader gathered it is read again, not shown as cold).
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/../preload/preload_lib.sh"
T=$SCRATCH
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --layers 2 --vocab 1024 --dim 256 --heads 4 --kv-heads 4 --ffn 512 \
  --ctx 3200 --seed 5 >"$T/mk.log" 2>&1
check "test model generated" test -s "$T/m.gguf"
env LD_PRELOAD="$(preload_value "$LIBTIERMEM")" TIERMEM_MIN_TIERED=64K TIERMEM_HEAT_SAMPLE=1 \
  TIERMEM_STATS="$T/region" "$B/bin/tiermem-llm" -m "$T/m.gguf" -p 'the quick brown fox' -n 3000 --threads 1 \
  --kv-blocks 192 >/dev/null 2>"$T/llm.err" &
engine=$!
# the layer matrices (256 and 512 KiB: q, k, v, o; gate, up, down of each layer): how many
# the view holds, how many have heat, how many none
counts() {
  jq -r '[.allocations[] | select(.size == 262144 or .size == 524288)] |
    "\(length) \(map(select(.heat > 0)) | length) \(map(select(.heat == 0)) | length)"' "$1"
}
views=0 cold_views=0 worst=""
for _ in $(seq 100); do
  kill -0 "$engine" 2>/dev/null || break
  sleep 0.05
  "$TIERMEM_STAT" --json "$T/region" >"$T/view.json" 2>/dev/null || continue
  read -r held warm zero < <(counts "$T/view.json")
  # the first views may come before the first heat interval ends
  [ "$held" = 14 ] && [ "$warm" -ge 1 ] || continue
  views=$((views + 1))
  if [ "$zero" != 0 ]; then
    cold_views=$((cold_views + 1))
    worst="$zero of 14"
  fi
done
wait "$engine"
check_eq "the engine ran to its end" "$?" 0
check "views were taken while it ran ($views)" test "$views" -ge 10
check_eq "no view showed a matrix with no heat (${worst:-none})" "$cold_views" 0
done_testing
