#!/usr/bin/env bash
# bench-serve — tiermem-llm serve under a multi-turn chat workload, side by side in one run.
#
# N users (BENCH_SERVE_USERS, default "1 2 4 8 16") each hold a conversation of
# BENCH_SERVE_TURNS turns (default 4) after a shared system prompt: every turn sends the
# whole conversation so far, waits for the answer (BENCH_SERVE_TOKENS tokens, default 16),
# thinks for BENCH_SERVE_THINK seconds (default 0.2) and comes back. The model is generated
# (4 layers, dim 256, f16, 5 MiB of weights; a KV block of 16 tokens is 64 KiB in f16) on simcuda with the
# time model (SIMCUDA_HOST_TIME=0: figures depend on the work, not on this machine).
#
# Configurations, same device (BENCH_SERVE_MEM, default 12M of HBM):
#   hbm      the engine alone: its KV pool is what HBM has left after the weights;
#   virtual  the same under libtiermem.so with TIERMEM_MEMINFO=virtual, TIERMEM_POLICY=size
#            and a DDR tier (BENCH_SERVE_DDR, default 128M): the pool, sized from cuMemGetInfo as before,
#            grows into DDR; prefixes of idle conversations stay cached there;
#   heat     as virtual with TIERMEM_POLICY=heat, when this build has that policy.
# Reported per configuration and N: time to first token p50/p99 in simulated device time
# (the steps the server ran between a request's arrival and its first token, from CUDA
# events), generated tokens per simulated second, the prefix hit rate (prompt tokens
# found in the cache), and the KV pool. A PNG plots p50 time to first token against N.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
LLM=$B/bin/tiermem-llm
OUT=$B/bench-serve
USERS=${BENCH_SERVE_USERS:-1 2 4 8 16}
TURNS=${BENCH_SERVE_TURNS:-4}
TOKENS=${BENCH_SERVE_TOKENS:-16}
THINK=${BENCH_SERVE_THINK:-0.2}
MEM=${BENCH_SERVE_MEM:-12M}
DDR=${BENCH_SERVE_DDR:-128M}
for tool in curl jq gnuplot; do
  command -v $tool >/dev/null || { echo "bench-serve: needs $tool (make deps installs it)"; exit 1; }
done
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/*.dat "$OUT"/ttft.png
export LD_LIBRARY_PATH=$B/lib/simcuda SIMCUDA_MEM=$MEM SIMCUDA_HOST_TIME=0
MODEL=$OUT/model.gguf
[ -s "$MODEL" ] || "$B/bin/tiermem-mkmodel" -o "$MODEL" --layers 4 --dim 256 --heads 8 --kv-heads 8 --ffn 512 \
  --type f16 --vocab 1024 --ctx 2048 --seed 7 >"$OUT/mkmodel.log" 2>&1 || { cat "$OUT/mkmodel.log"; exit 1; }

SYSTEM="You are a helpful storyteller. Answer every question with a short story about animals in a forest, told simply for small children, with a happy ending."
QUESTIONS=("Tell me about the fox." "What did the owl see at night?" "Where does the rabbit live?"
           "Why was the bear sad?" "Who found the lost key?" "How did the story end?")

# user ID: one conversation, TURNS turns, printing nothing (the server logs each request)
user() {
  local id=$1 msgs turn q ans
  msgs=$(jq -cn --arg s "$SYSTEM" '[{role: "system", content: $s}]')
  for turn in $(seq 1 "$TURNS"); do
    q="User $id asks: ${QUESTIONS[$(((id + turn) % ${#QUESTIONS[@]}))]}"
    msgs=$(jq -c --arg c "$q" '. + [{role: "user", content: $c}]' <<<"$msgs")
    ans=$(curl -s --max-time 600 "$URL/v1/chat/completions" \
            -d "{\"messages\": $msgs, \"max_tokens\": $TOKENS, \"temperature\": 0}" | jq -r '.choices[0].message.content')
    msgs=$(jq -c --arg c "$ans" '. + [{role: "assistant", content: $c}]' <<<"$msgs")
    sleep "$THINK"
  done
}

# run NAME N [VAR=value ...]: one server, N users, one line of figures into NAME.dat
run() {
  local name=$1 n=$2; shift 2
  local log=$OUT/$name.$n.log
  env "$@" "$LLM" serve -m "$MODEL" --port 0 --kv-dtype f16 -v 2>"$log" &
  local spid=$! port=
  for _ in $(seq 600); do
    port=$(sed -n 's|^tiermem-llm: serving on http://127.0.0.1:\([0-9]*\)$|\1|p' "$log" 2>/dev/null)
    [ -n "$port" ] && break
    kill -0 $spid 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then echo "bench-serve: $name server did not start:"; sed 's/^/  /' "$log"; return 1; fi
  URL=http://127.0.0.1:$port
  local pids=()
  for u in $(seq 1 "$n"); do user "$u" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
  kill -TERM $spid; wait $spid
  local blocks stopped
  blocks=$(sed -n 's/^tiermem-llm: kv pool: kv_blocks=\([0-9]*\) .*/\1/p' "$log")
  stopped=$(grep '^tiermem-llm: serve: stopped:' "$log")
  field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$stopped"; }
  # p50 and p99 (nearest rank) of the simulated time to first token over all requests
  sed -n 's/.* sim_ttft_ms=\([0-9.]*\)$/\1/p' "$log" | sort -g | awk -v n="$n" -v name="$name" -v blocks="$blocks" \
    -v gen="$(field generated_tokens)" -v dev="$(field device_ms)" -v pt="$(field prompt_tokens)" \
    -v ct="$(field cached_tokens)" -v ok="$(field ok)" '
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "# " name " " n ": no requests finished"; exit 1 }
      p50 = v[int(0.5 * (NR - 1)) + 1]; i = int(0.99 * NR + 0.999); if (i > NR) i = NR; p99 = v[i]
      tps = (dev > 0) ? gen / (dev / 1e3) : 0; hit = (pt > 0) ? ct / pt : 0
      printf "%d %.3f %.3f %.1f %.3f %d %d\n", n, p50, p99, tps, hit, blocks, ok
    }' >>"$OUT/$name.dat"
}

configs=(hbm virtual)
declare -A env_of=(
  [hbm]=""
  [virtual]="LD_PRELOAD=$B/lib/libtiermem.so TIERMEM_MEMINFO=virtual TIERMEM_DDR_NODE=0 TIERMEM_DDR_LIMIT=$DDR TIERMEM_TIER_ORDER=hbm,ddr TIERMEM_POLICY=size"
)
probe=$(env LD_PRELOAD="$B/lib/libtiermem.so" TIERMEM_POLICY=heat "$LLM" -m "$MODEL" -p hi -n 1 2>&1)
if grep -q "TIERMEM_POLICY='heat' is not valid" <<<"$probe"; then
  echo "# heat: skipped (this build's libtiermem.so has no TIERMEM_POLICY=heat yet)"
else
  configs+=(heat)
  env_of[heat]="${env_of[virtual]/TIERMEM_POLICY=size/TIERMEM_POLICY=heat}"
fi

echo "# $TURNS turns per user, $TOKENS tokens per answer, ${THINK}s think time; HBM $MEM, DDR tier $DDR;"
echo "# times are simulated device time (simcuda time model, profile ${SIMCUDA_PROFILE:-h200-pcie5}, CUDA events)"
printf '\n%-8s %5s %14s %14s %12s %10s %10s %9s\n' config users "ttft p50 ms" "ttft p99 ms" "tok/s (sim)" "prefix hit" "kv blocks" requests
for c in "${configs[@]}"; do
  for n in $USERS; do
    # shellcheck disable=SC2086
    run "$c" "$n" ${env_of[$c]} || exit 1
    tail -1 "$OUT/$c.dat" | awk -v c="$c" '{ printf "%-8s %5d %14.3f %14.3f %12.1f %9.0f%% %10d %9d\n", c, $1, $2, $3, $4, 100 * $5, $6, $7 }'
  done
done

# side by side at the largest N
last=$(echo $USERS | awk '{ print $NF }')
for c in "${configs[@]}"; do
  [ $c = hbm ] && continue
  paste <(tail -1 "$OUT/hbm.dat") <(tail -1 "$OUT/$c.dat") | awk -v c="$c" -v n="$last" '
    { r50 = ($2 > 0) ? $9 / $2 : 0; r99 = ($3 > 0) ? $10 / $3 : 0; rt = ($4 > 0) ? $11 / $4 : 0
      printf "at %d users, %s / hbm: ttft p50 %.2fx, p99 %.2fx, tokens/s %.2fx, prefix hit %.0f%% vs %.0f%%\n",
        n, c, r50, r99, rt, 100 * $12, 100 * $5 }'
done

plots=""
for c in "${configs[@]}"; do plots+="${plots:+, }'$OUT/$c.dat' using 1:2 with linespoints title '$c p50', '$OUT/$c.dat' using 1:3 with linespoints dashtype 2 title '$c p99'"; done
gnuplot <<GP
set terminal png size 800,500
set output '$OUT/ttft.png'
set title 'tiermem-llm serve: time to first token (simulated, ${SIMCUDA_PROFILE:-h200-pcie5}), $TURNS-turn chats'
set xlabel 'users'
set ylabel 'time to first token (ms)'
set logscale x 2
set key top left
set grid
plot $plots
GP
echo "plot: $OUT/ttft.png; server logs: $OUT/*.log"
