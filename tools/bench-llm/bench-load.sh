#!/usr/bin/env bash
# bench-load — how fast tiermem-llm puts a model's weights on the device, against how fast
# the same file reads sequentially, side by side in one run. A generated f16 model
# (BENCH_LOAD_SIZE, default 1G; deleted afterwards) is read BENCH_LOAD_RUNS times (default
# 7) by `dd bs=4M` and by `dd bs=4M iflag=direct` (O_DIRECT: no page cache at all, what the
# storage gives one sequential reader) to /dev/null and loaded with --load=uring, pread and
# mmap; before each read its pages are dropped from the page cache (posix_fadvise DONTNEED
# through dd iflag=nocache, after an fsync), so every figure comes from the storage. The
# best run and the median of each are kept (a virtual disk's rate varies by half from one
# read to the next); the goal is uring >= 90% of `dd iflag=direct`, judged on the median of
# each uring load against the direct read just before it. The engine runs on
# whatever driver it finds (simcuda with asynchronous streams here, where a copy to the
# device is a memcpy into fresh pages: it competes with the reads for the CPU, where a
# GPU's copy engines would not).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
LLM=$B/bin/tiermem-llm MK=$B/bin/tiermem-mkmodel
T=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-load.XXXXXX")
trap 'rm -rf "$T"' EXIT
SIZE=${BENCH_LOAD_SIZE:-1G}
RUNS=${BENCH_LOAD_RUNS:-7}
M=$T/m.gguf

"$MK" -o "$M" --target-size "$SIZE" --type f16 | sed 's/^/# /'
sync "$M"
bytes=$(stat -c %s "$M")
uncache() { dd if="$M" iflag=nocache count=0 status=none; }
now() { date +%s.%N; }
declare -A best=([dd]=0 [direct]=0 [uring]=0 [pread]=0 [mmap]=0)
load() { # NAME LOAD: one load, its MiB/s kept and printed
  SIMCUDA_ASYNC=1 "$LLM" -m "$M" -p "once" -n 1 --kv-blocks 16 -v --load=$2 > /dev/null 2> "$T/run.err"
  rate=$(sed -n 's/^tiermem-llm: load: .* mib_s=\([0-9.]*\)$/\1/p' "$T/run.err")
  keep "$1" "$rate"
}
declare -A all
keep() {
  best[$1]=$(awk -v a="${best[$1]}" -v b="$2" 'BEGIN { print (b > a) ? b : a }')
  all[$1]+=" $2"
}
median() { tr ' ' '\n' <<<"${all[$1]}" | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print 0 }'; }

printf '%-6s %-22s %10s\n' run reader "MiB/s"
for run in $(seq 1 "$RUNS"); do
  uncache
  t0=$(now)
  dd if="$M" of=/dev/null bs=4M status=none
  t1=$(now)
  rate=$(awk -v b="$bytes" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.1f", b / (e - s) / 1048576 }')
  keep dd "$rate"
  printf '%-6s %-22s %10s\n' "$run" "dd bs=4M (sequential)" "$rate"
  uncache
  t0=$(now)
  dd if="$M" of=/dev/null bs=4M iflag=direct status=none
  t1=$(now)
  rate=$(awk -v b="$bytes" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.1f", b / (e - s) / 1048576 }')
  keep direct "$rate"
  direct=$rate
  printf '%-6s %-22s %10s\n' "$run" "dd bs=4M iflag=direct" "$rate"
  for l in uring pread mmap; do
    uncache
    load $l $l
    printf '%-6s %-22s %10s\n' "$run" "tiermem-llm --load=$l" "$rate"
    # the read right after dd's: a pair that saw about the same storage
    [ $l = uring ] && all[pair]+=" $(awk -v a="$rate" -v b="$direct" 'BEGIN { print (b > 0) ? 100 * a / b : 0 }')"
  done
done
printf '\n%.1f MiB file, best of %d: sequential read %.1f MiB/s, with iflag=direct %.1f MiB/s; medians %.1f and %.1f\n' \
  "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" "$RUNS" "${best[dd]}" "${best[direct]}" "$(median dd)" \
  "$(median direct)"
pct() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > 0) ? 100 * a / b : 0 }'; }
for l in uring pread mmap; do
  printf 'load --load=%-5s best %7.1f MiB/s %5.1f%% of dd iflag=direct, %5.1f%% of dd; median %7.1f MiB/s %5.1f%% of dd iflag=direct%s\n' \
    $l "${best[$l]}" "$(pct "${best[$l]}" "${best[direct]}")" "$(pct "${best[$l]}" "${best[dd]}")" "$(median $l)" \
    "$(pct "$(median $l)" "$(median direct)")"
done
pair=$(median pair)
printf 'load --load=uring against the dd iflag=direct just before it, median of %d runs: %.1f%% (goal: >= 90%%) %s\n' \
  "$RUNS" "$pair" "$(awk -v p="$pair" 'BEGIN { print (p >= 90) ? "met" : "not met" }')"
