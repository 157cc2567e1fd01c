#!/usr/bin/env bash
# The server, unmodified, under libtiermem.so on simcuda: its KV pool sized from
# cuMemGetInfo grows into the lower tiers under TIERMEM_MEMINFO=virtual, it answers with
# the reference text, and tiermem-stat exports the interposer's figures to Prometheus,
# printed (--prometheus) and served (--serve).
source "$(dirname "$0")/../lib/tap.sh"
require_models stories260K.gguf
source "$(dirname "$0")/serve_lib.sh"
T=$(mktemp -d)
SPID= XPID=
trap '[ -n "$SPID" ] && kill -KILL $SPID 2>/dev/null; [ -n "$XPID" ] && kill -KILL $XPID 2>/dev/null; rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda SIMCUDA_MEM=16M SIMCUDA_NUMA_NODES=0,1
tiers=(TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=32M TIERMEM_DDR_NODE=0 TIERMEM_DDR_LIMIT=32M TIERMEM_HBM_RESERVE=2M)
blocks() { sed -n 's/^tiermem-llm: kv pool: kv_blocks=\([0-9]*\) .*/\1/p' "$1"; }
REF=", there was a little girl named Lily. She loved to play outside in the park. One day, she saw"

start_server "$T/plain.log" --kv-dtype f32 --gpu-memory-utilization 0.7
plain=$(blocks "$T/plain.log")
stop_server
SPID=
# 0.7 of the free memory: each layer's K and V pools round up to whole 2 MiB chunks
SERVER_ENV=("${tiers[@]}" TIERMEM_MEMINFO=virtual TIERMEM_STATS="$T/region"
            LD_PRELOAD="$(preload_value "$B/lib/libtiermem.so")")
start_server "$T/tiered.log" --kv-dtype f32 --gpu-memory-utilization 0.7
check "the server starts under libtiermem.so" test -n "$PORT"
tiered=$(blocks "$T/tiered.log")
echo "# KV pool: $plain blocks on the 16 MiB device alone, $tiered under libtiermem.so with the virtual view"
check "the virtual view gives the pool more blocks than HBM alone ($tiered > 2 x $plain)" test "${tiered:-0}" -gt $((2 * ${plain:-1}))
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":32,"temperature":0}')
check_eq "a completion through the tiered pool: the reference text" "$(jq -r '.choices[0].text' <<<"$r")" "$REF"

"$B/bin/tiermem-stat" --prometheus "$T/region" >"$T/prom" 2>"$T/prom.err"
check "tiermem-stat --prometheus exits 0" test $? -eq 0
check "  the process is running" grep -qE '^tiermem_process_running\{pid="[0-9]+",device="0",uuid="[^"]*"\} 1$' "$T/prom"
check "  bytes in HBM" grep -qE '^tiermem_tier_used_bytes\{pid="[0-9]+",.*,tier="hbm",node="[0-9-]+"\} [1-9][0-9]*$' "$T/prom"
check "  chunks spilled below HBM" \
  awk '/^tiermem_tier_chunks\{.*tier="(cxl|ddr)"/ { n += $2 } END { exit !(n > 0) }' "$T/prom"
check "  every sample line is name{labels} value" \
  bash -c "grep -v '^#' '$T/prom' | grep -vqE '^tiermem_[a-z_]+(\{[^}]*\})? [0-9.e+-]+$' && exit 1 || exit 0"
check "  HELP and TYPE for each family" test "$(grep -c '^# TYPE ' "$T/prom")" -eq "$(grep -c '^# HELP ' "$T/prom")"

"$B/bin/tiermem-stat" --serve 127.0.0.1:0 "$T/region" 2>"$T/x.log" &
XPID=$!
XURL=
for _ in $(seq 300); do
  XURL=$(sed -n 's|^tiermem-stat: serving .* at \(http://.*\)$|\1|p' "$T/x.log" 2>/dev/null)
  [ -n "$XURL" ] && break; sleep 0.1
done
check "tiermem-stat --serve listens" test -n "$XURL"
curl -s --max-time 10 "$XURL" >"$T/served"
check "  /metrics has the tier figures" grep -qE '^tiermem_tier_limit_bytes\{pid="[0-9]+",.*tier="hbm"' "$T/served"
check_eq "  another path: 404" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "${XURL%/metrics}/other")" 404
kill -TERM $XPID; wait $XPID
check_eq "  exits 0 on SIGTERM" "$?" 0
XPID=
"$B/bin/tiermem-stat" --serve 127.0.0.1:notaport "$T/region" 2>"$T/bad.err"
check_eq "--serve with a bad address: exit 1" "$?" 1
check "  says what it expects" grep -q "is not HOST:PORT, :PORT or PORT" "$T/bad.err"

stop_server
check_eq "the tiered server exits 0 on SIGTERM" "$SRC" 0
SPID=
"$B/bin/tiermem-stat" --prometheus "$T/region" >"$T/prom2"
check "after exit the region says so" grep -qE '^tiermem_process_running\{pid="[0-9]+",[^}]*\} 0$' "$T/prom2"
done_testing
