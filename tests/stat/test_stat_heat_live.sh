#!/usr/bin/env bash
# tiermem-stat shows the heat of allocations the interposer is rewriting as it reads: the
# engine under libtiermem.so samples every launch (TIERMEM_HEAT_SAMPLE=1), so each layer
# matrix's heat record changes hundreds of times a second; once a matrix showed heat, no
# later view taken while it runs shows it with none (a record that changed since the reader
# gathered it is read again, and one that never settles is shown as unknown, not cold).
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
# the view holds, and each one's address and heat (null: not known in that view)
matrices() {
  jq -r '[.allocations[] | select(.size == 262144 or .size == 524288)] |
    (length | tostring), (.[] | "\(.address) \(.heat)")' "$1"
}
# A matrix shows heat once an interval in which it was read has ended (a step slower than an
# interval, as under a sanitizer, reaches the second layer an interval after the first);
# from then on its heat only decays, so a view that shows it with none read it torn.
declare -A warm_seen
views=0 cold_views=0 worst=""
for _ in $(seq 100); do
  kill -0 "$engine" 2>/dev/null || break
  sleep 0.05
  "$TIERMEM_STAT" --json "$T/region" >"$T/view.json" 2>/dev/null || continue
  { read -r held; mapfile -t rows; } < <(matrices "$T/view.json")
  [ "$held" = 14 ] || continue
  zero=0 warm=0
  for row in "${rows[@]}"; do
    read -r address heat <<<"$row"
    case $heat in
      null) ;;
      0) [ -n "${warm_seen[$address]:-}" ] && zero=$((zero + 1)) ;;
      *) warm_seen[$address]=1 warm=$((warm + 1)) ;;
    esac
  done
  [ "$warm" -ge 1 ] || continue # the first views may come before the first heat interval ends
  views=$((views + 1))
  if [ "$zero" != 0 ]; then
    cold_views=$((cold_views + 1))
    worst="$zero of 14"
  fi
done
wait "$engine"
check_eq "the engine ran to its end" "$?" 0
check "views were taken while it ran ($views)" test "$views" -ge 10
check "every matrix showed heat in some view (${#warm_seen[@]} of 14)" test "${#warm_seen[@]}" -eq 14
check_eq "no view showed a matrix that had heat with none (${worst:-none})" "$cold_views" 0
done_testing
