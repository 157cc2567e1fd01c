#!/usr/bin/env bash
# make bench: the cost of libtiermem.so on the calls that matter, measured side by side in
# one run on simcuda — the same program without and with the interposer — as ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
O=${O:-build}
bench=$O/bin/bench-preload
export LD_LIBRARY_PATH=$O/lib/simcuda SIMCUDA_MEM=${SIMCUDA_MEM:-16G}
preload=$O/lib/libtiermem.so
if [ "${SAN:-0}" = 1 ]; then preload="$(${CC:-gcc} -print-file-name=libasan.so):$preload"; fi

without=$("$bench")
with=$(LD_PRELOAD=$preload "$bench")
heat_off=$(LD_PRELOAD=$preload TIERMEM_HEAT=off "$bench")
registry=$("$bench" --registry)

value() { awk -v k="$2" '$1 == k { print $2 }' <<<"$1"; }
echo "bench-preload: nanoseconds per call on simcuda, without and with libtiermem.so (best of 5 rounds)"
printf '%-36s %10s %10s %10s %8s\n' call without with added ratio
row() {
  local a b
  a=$(value "$without" "$1"); b=$(value "$with" "$1")
  awk -v l="$2" -v a="$a" -v b="$b" 'BEGIN { printf "%-36s %10.1f %10.1f %10.1f %8.2f\n", l, a, b, b - a, b / a }'
}
row launch "cuLaunchKernel"
row launch_params "cuLaunchKernel, 4 pointers (heat on)"
row alloc_free_small "cuMemAlloc+cuMemFree 4 KiB"
row alloc_free_tiered "cuMemAlloc+cuMemFree 8 MiB (chunked)"
row alloc_free_64m "cuMemAlloc+cuMemFree 64 MiB (chunked)"
row memcpy_htod_4k "cuMemcpyHtoD 4 KiB"
row lookup_10 "cuMemGetAddressRange, 10 live"
row lookup_100000 "cuMemGetAddressRange, 100000 live"
r10=$(value "$registry" registry_10); r100k=$(value "$registry" registry_100000)
awk -v a="$r10" -v b="$r100k" 'BEGIN {
  printf "registry lookup alone: %.1f ns at 10 live allocations, %.1f ns at 100000: ratio %.2f for 10000 times the\nallocations (a pure O(log n) cost gives log(100000)/log(10) = %.1f; linear would give 10000; the rest is cache misses)\n",
         a, b, b / a, log(100000) / log(10) }'
added=$(awk -v a="$(value "$without" launch)" -v b="$(value "$with" launch)" 'BEGIN { printf "%.1f", b - a }')
echo "goal: under 50 ns added to a launch: $added ns"
# launch heat: the same launch with pointer parameters, heat on (sampled, adaptive) and off
off=$(value "$heat_off" launch_params); on=$(value "$with" launch_params)
awk -v a="$off" -v b="$on" 'BEGIN {
  printf "launch heat: cuLaunchKernel with 4 pointers into chunked memory, TIERMEM_HEAT=off %.1f ns, launch %.1f ns\n", a, b
  printf "goal: under 50 ns added to a launch by launch heat: %.1f ns\n", b - a }'
echo "goal: under 50 ns added to a copy of an unlabelled buffer by provenance: $(value "$registry" \
  unlabelled_no_ranges) ns with no file range recorded, $(value "$registry" unlabelled_513_ranges) ns among 513" \
  "(a model mapping and 512 read buffers; a labelled source is found in $(value "$registry" labelled_513_ranges) ns)"
# Instructions per launch, counted by callgrind (stable where wall time is not): runs of
# 2000 and 12000 launches with 4 pointers, their difference over 10000, without and with
# the interposer (heat on, and TIERMEM_HEAT=off).
instructions() { # ENV... -> instructions of `bench --launches N` for N=2000 and 12000, per launch
  local lo hi
  lo=$(env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --launches 2000 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  hi=$(env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --launches 12000 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  awk -v a="$lo" -v b="$hi" 'BEGIN { if (a > 0 && b > a) printf "%.0f", (b - a) / 10000; else print "n/a" }'
}
if command -v valgrind >/dev/null && [ "${SAN:-0}" != 1 ]; then
  i_without=$(instructions LD_PRELOAD=) i_with=$(instructions LD_PRELOAD="$preload")
  i_off=$(instructions LD_PRELOAD="$preload" TIERMEM_HEAT=off)
  awk -v a="$i_without" -v b="$i_with" -v c="$i_off" 'BEGIN {
    printf "instructions per cuLaunchKernel with 4 pointers (callgrind): without %s, with %s (added %s), with TIERMEM_HEAT=off %s (added %s)\n",
      a, b, (a + 0 > 0 && b + 0 > 0) ? b - a : "n/a", c, (a + 0 > 0 && c + 0 > 0) ? c - a : "n/a" }'
else
  echo "instructions per launch: not counted (valgrind is not installed, or SAN=1)"
fi
