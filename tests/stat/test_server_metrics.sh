#!/usr/bin/env bash
# tiermem-llm serve's /metrics comes from the Prometheus writer tiermem-stat's exporter
# uses: after a completion its text passes `promtool check metrics`, and a
# `tiermem-stat --prometheus` of the server's own region passes too.
source "$(dirname "$0")/../lib/tap.sh"
require_models stories260K.gguf
source "$(dirname "$0")/../serve/serve_lib.sh"
T=$(mktemp -d)
trap '[ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null; rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
SERVER_ENV=(LD_PRELOAD="$(preload_value "$B/lib/libtiermem.so")" SIMCUDA_MEM=64M TIERMEM_STATS="$T/region")
check "the server starts under libtiermem.so" start_server "$T/log" --kv-blocks 64
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":8,"temperature":0}')
check "a completion is served" test "$(jq -r '.choices[0].text | length' <<<"$r")" -gt 0
curl -s --max-time 10 "$URL/metrics" >"$T/server.prom"
check "the server's /metrics counts the request" grep -q '^tiermem_llm_requests_total{outcome="ok"} 1$' "$T/server.prom"
"$B/bin/tiermem-stat" --prometheus "$T/region" >"$T/stat.prom"
check "tiermem-stat --prometheus of the server's region: its pid label" \
  grep -qE "^tiermem_process_info\{pid=\"$SPID\",device=\"0\"" "$T/stat.prom"
if command -v promtool >/dev/null; then
  for f in server stat; do
    out=$(promtool check metrics <"$T/$f.prom" 2>&1); rc=$?
    check "promtool check metrics passes the $f text" test "$rc" -eq 0 -a -z "$out"
    [ -n "$out" ] && sed 's/^/#   /' <<<"$out"
  done
else
  skip "promtool check metrics passes the server's and tiermem-stat's text" \
    "promtool not installed (Debian package prometheus; make deps)"
fi
stop_server
check_eq "the server exits 0 on SIGTERM" "$SRC" 0
SPID=
done_testing
