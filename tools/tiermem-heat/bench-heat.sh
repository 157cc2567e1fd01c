#!/usr/bin/env bash
# make bench: what the eBPF collector costs. bench-preload launches a kernel that declares
# three ranges (each a simcuda:touch event) 10 000 times a second for 5 s, alone and under
# tiermem-heat, with the touch probes and with the launch uprobes only (--no-touch: what a
# real driver allows); reported: the collector's CPU time as a share of one core (goal: 1 %
# or less) and the launch cost with and without the probes attached, side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
O=${O:-build}
heat=$O/bin/tiermem-heat bench=$O/bin/bench-preload
export LD_LIBRARY_PATH=$O/lib/simcuda SIMCUDA_MEM=${SIMCUDA_MEM:-16G}
if [ ! -x "$heat" ]; then echo "bench-heat: skipped: tiermem-heat was not built"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "bench-heat: skipped: the eBPF collector needs root"; exit 0; fi
err=$(mktemp)
trap 'rm -f "$err"' EXIT
value() { awk -v k="$2" '$1 == k { print $2 }' <<<"$1"; }
alone=$("$bench" --rate 10000 5)
echo "bench-heat: the eBPF collector (tiermem-heat) watching 10 000 launches/s on simcuda, 3 touch events each"
# watched LABEL [tiermem-heat options]: one side-by-side row against the launches alone
watched() {
  local label=$1 out cpu
  shift
  out=$("$heat" --json --interval 1 "$@" -- "$bench" --rate 10000 5 2>"$err" | grep -E '^(rate|launch_touch4) ')
  if grep -q 'cannot use eBPF' "$err"; then echo "bench-heat: skipped: $(grep 'cannot use eBPF' "$err")"; exit 0; fi
  cpu=$(sed -n 's/.*(\([0-9.]*\)% of one core).*/\1/p' "$err")
  awk -v l="$label" -v a="$(value "$alone" launch_touch4)" -v b="$(value "$out" launch_touch4)" \
      -v ra="$(value "$alone" rate)" -v rb="$(value "$out" rate)" -v cpu="$cpu" 'BEGIN {
    printf "%s: launch %.1f ns alone, %.1f ns watched (+%.1f ns: the probes'"'"' traps); %d launches/s alone, %d watched\n", l, a, b, b - a, ra, rb
    printf "goal: collector CPU at most 1%% of one core (%s): %s%%\n", l, cpu }'
}
watched "touch probes and launch uprobes"
watched "launch uprobes only (--no-touch)" --no-touch
