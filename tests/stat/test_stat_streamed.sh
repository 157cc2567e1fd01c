#!/usr/bin/env bash
# The stream ring's bytes reach the region: an engine whose weights spill past a small
# device streams them through the ring, and its kept region says how many bytes were copied:
# the table says what the exit line says, --json and --prometheus the exact count; with
# TIERMEM_STREAM=off nothing is counted.
source "$(dirname "$0")/../lib/tap.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
STAT=$B/bin/tiermem-stat
# 56 MiB of f32 weights on a 32 MiB device (the model of tests/integration/test_stream.sh)
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --layers 4 --vocab 1024 --dim 512 --heads 8 --kv-heads 8 --ffn 1536 \
  --type f32 --seed 5 >"$T/mk.log" 2>&1
check "test model generated" test -s "$T/m.gguf"
run() {
  env SIMCUDA_MEM=32M TIERMEM_POLICY=heat TIERMEM_LOG=info TIERMEM_STATS="$T/$1.region" TIERMEM_STREAM="$2" \
    LD_PRELOAD="$(preload_value "$B/lib/libtiermem.so")" "$B/bin/tiermem-llm" -m "$T/m.gguf" -p "Once upon a time" \
    -n 8 --kv-blocks 16 >/dev/null 2>"$T/$1.err"
}
run on on
check_eq "the engine streams under TIERMEM_STREAM=on: exit 0" "$?" 0
logged=$(sed -n 's/^tiermem: exit: stream: [0-9]* weights streamed (\(.*\) copied).*/\1/p' "$T/on.err")
check "its exit line counts bytes copied ($logged)" test -n "$logged" -a "$logged" != "0 B"
check_eq "the table shows the same bytes" \
  "$("$STAT" "$T/on.region" | sed -n 's/^stream ring: \(.*\) copied into the HBM staging ring$/\1/p')" "$logged"
json=$("$STAT" --json "$T/on.region" | jq .streamed_bytes)
prom=$("$STAT" --prometheus "$T/on.region" | sed -n 's/^tiermem_streamed_bytes_total{[^}]*} //p')
check "--json counts them ($json bytes)" test "${json:-0}" -gt 0
check_eq "--prometheus has the same count" "$prom" "$json"
run off off
check_eq "TIERMEM_STREAM=off: exit 0" "$?" 0
check_eq "  nothing streamed: 0 in --json, no line in the table" \
  "$("$STAT" --json "$T/off.region" | jq .streamed_bytes) $("$STAT" "$T/off.region" | grep -c '^stream ring:')" "0 0"
done_testing
