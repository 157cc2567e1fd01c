#!/usr/bin/env bash
# tiermem-stat --serve ADDR with no pid: one exporter for every process under libtiermem on
# the node. Two live processes are served at once, each sample labelled with its pid,
# device and uuid; one that exits drops out of the next scrape; the text passes
# `promtool check metrics`; /health answers; 1,000 idle connections leave /health and a
# scrape each answering within 1 s; an idle connection is closed after the timeout; a
# flood of connections past its limit costs a few log lines at most, not one each.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/../preload/preload_lib.sh"
source "$(dirname "$0")/stat_lib.sh"
SIM=(SIMCUDA_MEM=64M SIMCUDA_NUMA_NODES=0,1 TIERMEM_POLICY=size)
scrape() { curl -s --max-time 10 "$XURL/metrics"; }
# the samples of one process: its pid label
of_pid() { grep -E "^[a-z_]+\{pid=\"$1\"" <<<"$2"; }
trap 'for n in "${!HOLD_PID[@]}"; do touch "$SCRATCH/$n.go"; done; [ -n "${XPID:-}" ] && kill "$XPID" 2>/dev/null; rm -rf "$SCRATCH"' EXIT

check "the exporter starts with no pid" start_exporter "$SCRATCH/x.log"
check "  and says it serves every process" grep -q '^tiermem-stat: serving every process under libtiermem at ' "$SCRATCH/x.log"
check_eq "/health: 200 ok" "$(curl -s --max-time 10 -w '%{http_code}' "$XURL/health" | tr '\n' ' ')" "ok 200"

# ---------------------------------------------------------------- two processes, one exits
hold a "${SIM[@]}" -- "$PROBE" pieces 24M 4M; started_a=$?
hold b "${SIM[@]}" -- "$PROBE" pieces 8M 4M; started_b=$?
check "two processes under libtiermem hold their memory" test "$started_a$started_b" = 00
A=${HOLD_PID[a]} Bp=${HOLD_PID[b]}
m=$(scrape)
uuid_re='GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
for p in "$A" "$Bp"; do
  check "process $p: an info sample with its pid, device, uuid and command" \
    grep -qE "^tiermem_process_info\{pid=\"$p\",device=\"0\",uuid=\"$uuid_re\",command=\"probe\",policy=\"size\"" <<<"$m"
  check "process $p: tier samples labelled pid, device, uuid, tier and node" \
    grep -qE "^tiermem_tier_used_bytes\{pid=\"$p\",device=\"0\",uuid=\"$uuid_re\",tier=\"hbm\",node=\"[0-9]+\"\} [0-9]+$" <<<"$m"
done
check_eq "their HBM bytes: 24 MiB and 8 MiB" \
  "$(of_pid "$A" "$m" | sed -n 's/^tiermem_tier_used_bytes{.*tier="hbm".*} //p') $(of_pid "$Bp" "$m" | sed -n 's/^tiermem_tier_used_bytes{.*tier="hbm".*} //p')" \
  "$((24 << 20)) $((8 << 20))"
check "the uuid is simcuda's device 0 (cuDeviceGetUuid)" \
  grep -q "uuid=\"GPU-73696d63-7564-612d-6465-766963652d30\"" <<<"$(of_pid "$A" "$m")"
for family in tiermem_migrations_total tiermem_migrated_bytes_total tiermem_streamed_bytes_total \
              tiermem_tier_migrated_chunks_total tiermem_heat_allocations tiermem_heat_chunks \
              tiermem_driver_calls_total tiermem_allocations_total; do
  check "$family is exported for process $A" grep -qE "^$family\{pid=\"$A\"" <<<"$m"
done
check_eq "the migrations by pair: six, hbm>cxl to ddr>cxl" \
  "$(of_pid "$A" "$m" | grep -c '^tiermem_tier_migrated_chunks_total{.*from="[a-z]*",to="[a-z]*"} [0-9]*$')" 6
check_eq "heat classes: hot, warm and cold, for allocations and chunks" \
  "$(of_pid "$A" "$m" | grep -cE '^tiermem_heat_(allocations|chunks)\{.*class="(hot|warm|cold)"\}')" 6
check "each family is announced once" test -z "$(grep '^# TYPE' <<<"$m" | sort | uniq -d)"
check "the exporter counts the processes it serves (at least these two)" \
  test "$(sed -n 's/^tiermem_exporter_processes //p' <<<"$m")" -ge 2
if command -v promtool >/dev/null; then
  out=$(promtool check metrics <<<"$m" 2>&1); rc=$?
  check "promtool check metrics passes the two processes' exposition" test "$rc" -eq 0 -a -z "$out"
  [ -n "$out" ] && sed 's/^/#   /' <<<"$out"
else
  skip "promtool check metrics passes the exposition" "promtool not installed (Debian package prometheus; make deps)"
fi
unhold a
m=$(scrape)
check "after process $A exits, its samples are gone" test -z "$(of_pid "$A" "$m")"
check "  and process $Bp is still served" grep -qE "^tiermem_process_running\{pid=\"$Bp\",[^}]*\} 1$" <<<"$m"
hold c "${SIM[@]}" -- "$PROBE" pieces 4M 4M
C=${HOLD_PID[c]}
check "a process that starts later joins the next scrape" grep -qE "^tiermem_process_info\{pid=\"$C\"" <<<"$(scrape)"
unhold c
unhold b

# ---------------------------------------------------------------- idle connections
fds=()
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 1100 ]; then
  skip "1,000 idle connections" "the descriptor hard limit is $(ulimit -Hn) (under 1,100)"
else
  ulimit -Sn "$( [ "$(ulimit -Hn)" = unlimited ] && echo 4096 || { h=$(ulimit -Hn); echo $((h < 4096 ? h : 4096)); })"
  port=${XURL##*:}
  for i in $(seq 1000); do
    exec {fd}<>"/dev/tcp/127.0.0.1/$port" || break
    fds+=("$fd")
    # every other one starts a request and stops (slowloris)
    (( i % 2 )) && printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n' >&"$fd"
  done
  check_eq "1,000 connections opened and left idle" "${#fds[@]}" 1000
  t=$(curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}' "$XURL/health")
  check "with them open, /health answers 200 within 1 s ($t)" awk -v t="$t" 'BEGIN { split(t, a, " "); exit !(a[1] == 200 && a[2] < 1) }'
  t=$(curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}' "$XURL/metrics")
  check "with them open, a scrape answers 200 within 1 s ($t)" awk -v t="$t" 'BEGIN { split(t, a, " "); exit !(a[1] == 200 && a[2] < 1) }'
  start=$(date +%s.%N)
  read -r -t 20 -u "${fds[1]}" _; rc=$?
  waited=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  check "an idle connection is closed by the server after its timeout (EOF after $waited s)" \
    awk -v rc="$rc" -v w="$waited" 'BEGIN { exit !(rc == 1 && w < 15) }'
  for fd in "${fds[@]}"; do exec {fd}>&-; done
fi
stop_exporter
check_eq "the exporter exits 0 on SIGTERM" "$XRC" 0
check "it logged no line per connection" test "$(grep -vc '^tiermem-stat: serving' "$SCRATCH/x.log")" -le 6

# ---------------------------------------------------------------- refused connections
# an exporter allowed 200 descriptors takes 136 connections; the rest of 600 wait or are
# refused, and none of them is a log line of its own
( ulimit -n 200; exec "$TIERMEM_STAT" --serve 127.0.0.1:0 ) 2>"$SCRATCH/small.log" &
XPID=$!
XURL=
for _ in $(seq 300); do
  XURL=$(sed -n 's|^tiermem-stat: serving .* at \(http://[0-9.:]*\)/metrics$|\1|p' "$SCRATCH/small.log")
  [ -n "$XURL" ] && break; sleep 0.1
done
check "an exporter with 200 descriptors starts" test -n "$XURL"
fds=()
port=${XURL##*:}
for i in $(seq 600); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null || break
  fds+=("$fd")
done
sleep 1
for fd in "${fds[@]}"; do exec {fd}>&-; done
lines=$(grep -vc '^tiermem-stat: serving' "$SCRATCH/small.log")
sed 's/^/# exporter: /' "$SCRATCH/small.log"
check "600 connections to an exporter that takes 136: $lines log lines (at most 6)" test "$lines" -le 6
check_eq "once they are gone, /health answers" "$(curl -s --max-time 10 -w '%{http_code}' "$XURL/health" | tr '\n' ' ')" "ok 200"
stop_exporter
check_eq "  and it exits 0 on SIGTERM" "$XRC" 0
done_testing
