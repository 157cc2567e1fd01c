#!/usr/bin/env bash
# tiermem-stat shows the heat of allocations the interposer is rewriting as it reads: the
# engine under libtiermem.so samples every launch (TIERMEM_HEAT_SAMPLE=1), so each layer
# matrix's heat record changes hundreds of times a second, and every view taken while it
# runs shows every one of the 14 matrices warm, none with no heat (a record that changed
# since the reader gathered it is read again, not shown as cold).
source "$(dirname "$0")/../lib/tap.sh"
T=$(mktemp -d)
trap 'kill "$engine" 2>/dev/null; rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
STAT=$B/bin/tiermem-stat
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --layers 2 --vocab 1024 --dim 256 --heads 4 --kv-heads 4 --ffn 512 \
  --ctx 3200 --seed 5 >"$T/mk.log" 2>&1
check "test model generated" test -s "$T/m.gguf"
env LD_PRELOAD="$(preload_value "$B/lib/libtiermem.so")" TIERMEM_MIN_TIERED=64K TIERMEM_HEAT_SAMPLE=1 \
  TIERMEM_STATS="$T/region" "$B/bin/tiermem-llm" -m "$T/m.gguf" -p 'the quick brown fox' -n 3000 --threads 1 \
  --kv-blocks 192 >/dev/null 2>"$T/llm.err" &
engine=$!
# the layer matrices: 256 and 512 KiB (q, k, v, o; gate, up, down of each layer)
matrices() { jq '[.allocations[] | select(.size == 262144 or .size == 524288)]' "$1"; }
views=0 cold_views=0 worst=""
for _ in $(seq 100); do
  kill -0 "$engine" 2>/dev/null || break
  "$STAT" --json "$T/region" >"$T/view.json" 2>/dev/null || { sleep 0.05; continue; }
  [ "$(matrices "$T/view.json" | jq length)" = 14 ] || { sleep 0.05; continue; }
  # the first views may come before the first heat interval ends
  [ "$(matrices "$T/view.json" | jq '[.[] | select(.heat > 0)] | length')" -ge 1 ] || { sleep 0.05; continue; }
  views=$((views + 1))
  zero=$(matrices "$T/view.json" | jq '[.[] | select(.heat == 0)] | length')
  if [ "$zero" != 0 ]; then
    cold_views=$((cold_views + 1))
    worst="$zero of 14"
  fi
  sleep 0.05
done
wait "$engine"
check_eq "the engine ran to its end" "$?" 0
check "views were taken while it ran ($views)" test "$views" -ge 10
check_eq "no view showed a matrix with no heat (${worst:-none})" "$cold_views" 0
done_testing
