#!/usr/bin/env bash
# NVML reports the view cuMemGetInfo reports: simcuda's libnvidia-ml.so.1, reached by a
# program linked with it and by one that uses dlopen and dlsym, under each TIERMEM_MEMINFO
# view; before any context NVML's total is already the view's (before cuInit, NVML's own).
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"
MIB=$((1 << 20))
# The figures as `size` places (`heat` would add the 4 MiB of its staging ring to HBM's use)
SIM=(SIMCUDA_MEM=512M SIMCUDA_NUMA_NODES=0,1 TIERMEM_HBM_LIMIT=256M TIERMEM_CXL_NODE=1 TIERMEM_CXL_LIMIT=1G
     TIERMEM_DDR_LIMIT=256M TIERMEM_POLICY=size)

# "agree" when every info line has cuMemGetInfo's free and total in both NVML calls, and the
# before line has cuDeviceTotalMem's total in both; else the first line that differs.
agree() {
  awk '/^before / { if ($2 != $3 || $2 != $5) { print "differs: " $0; exit } }
       /^info /   { if ($2 != $4 || $2 != $6 || $3 != $5 || $3 != $7) { print "differs: " $0; exit } }
       END        { }' <<<"$1"
}
totals() { { grep '^before ' <<<"$1" | cut -d' ' -f2; grep '^info ' <<<"$1" | cut -d' ' -f3; } | sort -u | tr '\n' ' '; }
frees() { grep '^info ' <<<"$1" | cut -d' ' -f2 | tr '\n' ' '; }

declare -A want_total=([physical]=$((256 * MIB)) [available]=$((256 * MIB)) [virtual]=$((1536 * MIB)))
# free after nothing, 64 MiB, 600 MiB more, and after freeing (the reserve is 4 MiB; under
# available the chunks HBM holds can all move down, so HBM reads free throughout)
declare -A want_free=(
  [physical]="$((252 * MIB)) $((188 * MIB)) 0 $((252 * MIB)) "
  [available]="$((256 * MIB)) $((256 * MIB)) $((256 * MIB)) $((256 * MIB)) "
  [virtual]="$((1536 * MIB)) $((1472 * MIB)) $((872 * MIB)) $((1536 * MIB)) ")
for program in nvml_linked nvml_dlopen; do
  for view in physical available virtual; do
    out=$(under_tiermem "${SIM[@]}" TIERMEM_MEMINFO=$view -- "$B/tests/preload/$program" 64M 600M 2>&1)
    check_eq "$program, $view: the program ran" "$(grep -c '^FAIL' <<<"$out")" 0
    check_eq "$program, $view: NVML (both calls) and the driver agree before and in a context" "$(agree "$out")" ""
    check_eq "$program, $view: one total, before any context and after" "$(totals "$out")" "${want_total[$view]} "
    check_eq "$program, $view: free follows the view" "$(frees "$out")" "${want_free[$view]}"
    # before cuInit tiermem cannot plan the device (it never initialises the driver itself)
    check_eq "$program, $view: asked before cuInit, NVML gives its own answer, and the view holds after" \
      "$(grep '^early ' <<<"$out")" "early $((512 * MIB)) $((512 * MIB))"
  done
  out=$(without_tiermem SIMCUDA_MEM=512M -- "$B/tests/preload/$program" 64M 2>&1)
  check_eq "$program without the interposer: NVML's own answer is the device's" \
    "$(totals "$out")|$(agree "$out")" "$((512 * MIB)) |"
  check "$program: the device has a name and a handle by PCI bus id" grep -qx 'device simcuda emulated GPU .*)' <<<"$out"
done
out=$(under_tiermem "${SIM[@]}" TIERMEM_DISABLE=1 -- "$B/tests/preload/nvml_dlopen" 64M 2>&1)
check_eq "TIERMEM_DISABLE=1: NVML passes through" "$(totals "$out")" "$((512 * MIB)) "
done_testing
