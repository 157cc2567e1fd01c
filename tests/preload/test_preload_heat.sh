#!/usr/bin/env bash
# The `launch` heat source on a program with a known access pattern (heat_probe): the
# ranking of its allocations, their classes, heat per chunk, the sources line at start-up,
# TIERMEM_HEAT=off and bad values, tiermem-stat --heat and --json, the heat policy taking
# a collector's fresh heat from the region (collector_probe), and a stats region of
# another layout version refused in one clear line.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
HEAT_PROBE=$B/tests/preload/heat_probe

# Runs heat_probe held under the interposer with the given variables; sets HOLD_JSON,
# HOLD_TABLE (tiermem-stat --heat), HOLD_READY and HOLD_ERR.
run_held_probe() {
  local hold=$SCRATCH/heat.go out=$SCRATCH/heat.out err=$SCRATCH/heat.err
  rm -f "$hold" "$out" "$err"
  env "$@" TIERMEM_STATS="$SCRATCH/heat.stats" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" \
    "$HEAT_PROBE" 1600 50 "$hold" >"$out" 2>"$err" &
  local pid=$!
  for _ in $(seq 600); do
    grep -q '^ready' "$out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  HOLD_READY=$(grep '^ready' "$out" || true)
  HOLD_JSON=$("$TIERMEM_STAT" --json "$SCRATCH/heat.stats" 2>&1 || true)
  HOLD_TABLE=$("$TIERMEM_STAT" --heat "$SCRATCH/heat.stats" 2>&1 || true)
  touch "$hold"
  wait "$pid"
  HOLD_ERR=$(cat "$err")
}
address_of() { sed -E "s/.* $1=0x([0-9a-f]+).*/\1/" <<<"$HOLD_READY"; }
# FIELD of the allocation at hex address ADDRESS in HOLD_JSON.
alloc_field() { jq -r --argjson a "$((16#$1))" ".allocations[] | select(.address == \$a) | $2" <<<"$HOLD_JSON"; }
valid_json() { jq -e . >/dev/null <<<"$1"; }
# True when a > b (floating point).
greater() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# --- launch heat, halved every 400 ms, intervals of 50 ms
run_held_probe TIERMEM_HEAT_HALFLIFE=400ms TIERMEM_LOG=info
check "the probe ran under the interposer" test -n "$HOLD_READY"
check "one start-up line says heat comes from launches" grep -q '^tiermem: heat: launch (kernel parameters of sampled launches, half-life 0.4s)' <<<"$HOLD_ERR"
check "tiermem-stat --json is valid JSON" valid_json "$HOLD_JSON"
check_eq "the region names its heat source" "$(jq -r .heat_source <<<"$HOLD_JSON")" launch
check_eq "the region holds the half-life" "$(jq -r .heat_halflife_ns <<<"$HOLD_JSON")" 400000000
check "launches were sampled" greater "$(jq -r .heat_samples <<<"$HOLD_JSON")" 20
hot=$(address_of hot) warm=$(address_of warm) rows=$(address_of rows) cold=$(address_of cold)
h_hot=$(alloc_field "$hot" .heat) h_warm=$(alloc_field "$warm" .heat) h_rows=$(alloc_field "$rows" .heat) h_cold=$(alloc_field "$cold" .heat)
echo "# heat: hot $h_hot, warm $h_warm, rows $h_rows, cold $h_cold"
check "launched every time over all of it: hotter than a quarter of the time" greater "$h_hot" "$h_warm"
check "a quarter of the time: hotter than a gather of one row at a time" greater "$h_warm" "$h_rows"
check "a gather of rows: hotter than never" greater "$h_rows" "$h_cold"
check_eq "never launched: no heat" "$h_cold" 0
check_eq "the always-launched allocation is hot" "$(alloc_field "$hot" .class)" hot
check_eq "the never-launched allocation is cold" "$(alloc_field "$cold" .class)" cold
check_eq "the source of the hot allocation's heat" "$(alloc_field "$hot" .heat_sources)" launch
check_eq "heat for each of its 4 chunks" "$(alloc_field "$hot" '.chunk_heat | length')" 4
check "launch heat reads, it cannot see writes" greater "$(alloc_field "$hot" .reads)" "$(alloc_field "$hot" .writes)"
check "every chunk of the gathered table got some heat" \
  test "$(alloc_field "$rows" '[.chunk_heat[] | select(.heat > 0)] | length')" = 4
check "--heat lists the hottest allocation first" \
  grep -qE "^0x$hot " <<<"$(grep -A1 '^address' <<<"$HOLD_TABLE" | tail -n 1)"
check "--heat lists the never-launched allocation last" \
  grep -qE "^0x$cold .* cold " <<<"$(grep -B2 '^calls:' <<<"$HOLD_TABLE" | head -n 1)"

# --- off
run_held_probe TIERMEM_HEAT=off TIERMEM_LOG=info
check "TIERMEM_HEAT=off says so at start-up" grep -q '^tiermem: heat: off (TIERMEM_HEAT=off)' <<<"$HOLD_ERR"
check_eq "with heat off, nothing is sampled" "$(jq -r .heat_samples <<<"$HOLD_JSON")" 0
check_eq "with heat off, allocations have no chunk heat" \
  "$(jq -r '[.allocations[].chunk_heat | length] | add' <<<"$HOLD_JSON")" 0

# --- the heat policy takes a collector's heat from the region while it is fresh
# (collector_probe plays the collector: launch heat says `a`, the collector says `b`)
out=$(env SIMCUDA_MEM=6M TIERMEM_POLICY=heat TIERMEM_STREAM=off TIERMEM_HEAT_SAMPLE=1 TIERMEM_LEDGER=off \
  TIERMEM_STATS="$SCRATCH/collector.stats" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" \
  "$B/tests/preload/collector_probe" "$SCRATCH/collector.stats" 2>&1)
check_eq "collector: the probe ran to its end" "$?" 0
sed 's/^/# /' <<<"$out"
check "collector: a starts in HBM, b below it" grep -q '^start a=2,0 b=0,2$' <<<"$out"
check "collector: by launch heat alone, a (launched at) stays in HBM" grep -q '^launch a=2,0 b=0,2$' <<<"$out"
check "collector: heat from a collector whose last write is 6 s old is not taken" \
  grep -q '^stale a=2,0 b=0,2$' <<<"$out"
check "collector: fresh collector heat brings b up and a down (its NaN and -inf counts read as none)" \
  grep -q '^fresh a=0,2 b=2,0$' <<<"$out"
check "collector: both allocations kept their bytes through the moves" grep -q '^bytes 1 2$' <<<"$out"

# --- a bad value: one line, pass-through
out=$(under_tiermem TIERMEM_HEAT=perf -- "$PROBE" exit 0 2>&1)
check "TIERMEM_HEAT=perf is refused in one line naming what it accepts" \
  grep -q "^tiermem: TIERMEM_HEAT='perf' is not valid: expected launch, ebpf or off;" <<<"$out"
out=$(under_tiermem TIERMEM_HEAT_HALFLIFE=soon -- "$PROBE" exit 0 2>&1)
check "TIERMEM_HEAT_HALFLIFE=soon is refused in one line" \
  grep -q "^tiermem: TIERMEM_HEAT_HALFLIFE='soon' is not valid: expected a duration" <<<"$out"

# --- a region of layout version 1 (no heat section) is refused clearly
old=$SCRATCH/old.stats
{ printf 'TIERMEM1'; printf '\x01\x00\x00\x00'; head -c 4084 /dev/zero; } >"$old"
out=$("$TIERMEM_STAT" "$old" 2>&1); rc=$?
check_eq "tiermem-stat exits 2 on a version 1 region" "$rc" 2
check "and says which version it found and which it reads" \
  grep -q "^tiermem-stat: $old: stats layout version 1, this tiermem-stat reads version 4 only" <<<"$out"
check_eq "in one line" "$(wc -l <<<"$out")" 1

done_testing
