#!/usr/bin/env bash
# tests/gpu/run.sh cannot rot while no GPU runs it: its scripts parse, its package is
# assembled within the 64 MiB a GPU machine is sent, and the cheap steps of --sim pass from
# that package on simcuda (the managed-memory guard, the runtime programs of every
# tests/cudart case, the calibration table, the torch script's compile and dry run). Then
# planted faults: a runtime program without a case, a package over its limit, and the
# GPU expectation of a runtime program, which simcuda must fail.
source "$(dirname "$0")/../lib/tap.sh"
cd "$TM_ROOT"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
if [ ! -x "$NVCC" ]; then
  skip "tests/gpu/run.sh --sim and its package" "nvcc not found at $NVCC (set NVCC or CUDA_HOME): the package holds nvcc builds"
  done_testing
  exit
fi
for script in tests/gpu/run.sh tests/gpu/package.sh tests/gpu/conformance.sh; do
  check "$script parses (bash -n)" bash -n "$script"
done
check "tests/gpu/torch_tiering.py compiles (python3 -m py_compile)" \
  env PYTHONPYCACHEPREFIX="$work/pycache" python3 -m py_compile tests/gpu/torch_tiering.py

# Under SAN=1 simcuda and libtiermem.so are instrumented and the nvcc programs are not:
# the sanitizer's runtime comes first (run.sh puts TM_SAN_PRELOAD there), told about the
# runtime's allocations that live until exit (as in test_cudart.sh).
printf 'leak:libcudart\nleak:runtime_basics_\n' >"$work/lsan.supp"
export LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$work/lsan.supp
steps=guard,cudart,calibration,torch
tests/gpu/run.sh --sim --quick --package "$work/pkg" --steps "$steps" >"$work/sim.log" 2>&1
rc=$?
sed 's/^/# /' "$work/sim.log" | grep -vE '^#     ok - ' | tail -n 60
check_eq "run.sh --sim --steps $steps exits 0" "$rc" 0
check "its last line counts the steps: N passed, 0 failed, N skipped" \
  grep -qE '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' <(tail -n 1 "$work/sim.log")
for step in machine guard package calibration; do
  check "step $step: one TAP line, ok" grep -qE "^ok [0-9]+ - $step" "$work/sim.log"
done
check "step cudart ran every case of tests/cudart/cases.txt, both builds, both ways" \
  grep -qE "^ok [0-9]+ - cudart: .*: $((4 * $(grep -cvE '^[[:space:]]*(#|$)' tests/cudart/cases.txt))) checks passed" "$work/sim.log"
check "step torch is a skip whose reason is: torch not importable here" \
  grep -qE '^ok [0-9]+ - torch: .* # SKIP torch not importable here$' "$work/sim.log"
bytes=$(find "$work/pkg" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
check "the package is within 64 MiB ($bytes bytes)" test "$bytes" -gt 0 -a "$bytes" -le $((64 << 20))
check "the package says how to run it on the GPU machine" grep -q 'tests/gpu/run.sh --from' "$work/pkg/PACKAGE"
check "the calibration table has a line per operation" \
  grep -qE '^    # vmm_unmap +2 MiB' "$work/sim.log"
check "MANIFEST names every file with its sha256" \
  bash -c 'cd "$1" && awk "{ print \$3 \"  \" \$1 }" MANIFEST | sha256sum --quiet -c -' _ "$work/pkg"

# Planted: a program with no case is a failure, not a silent gap.
: >"$work/no-cases.txt"
CUDART_CASES=$work/no-cases.txt tests/gpu/run.sh --sim --from "$work/pkg" --steps cudart >"$work/planted.log" 2>&1
rc=$?
check_eq "a tests/cudart program without a case fails run.sh" "$rc" 1
check "and the cudart step names it" grep -q 'not ok - tests/cudart/runtime_basics.cu has no case' "$work/planted.log"

# Planted: a package over its limit is refused, saying so.
PACKAGE_LIMIT=$((1 << 20)) bash tests/gpu/package.sh "$B" "$work/small" >"$work/small.log" 2>&1
rc=$?
check_eq "package.sh refuses a package over PACKAGE_LIMIT" "$rc" 1
check "and says how large it is" grep -q 'is over the 1 MiB the GPU machine is sent' "$work/small.log"

# The GPU expectation (CUDART_TEST_DEVICE=gpu) asks for a launch that runs: simcuda refuses
# it, so there the case must fail; a value that is neither stops the program.
program=$work/pkg/tests/cudart/runtime_basics_static
if [ -x "$program" ]; then
  env LD_LIBRARY_PATH="$work/pkg/lib/simcuda" ${TM_SAN_PRELOAD:+LD_PRELOAD=$TM_SAN_PRELOAD} CUDART_TEST_DEVICE=gpu "$program" kernel >"$work/gpu.out" 2>&1
  rc=$?
  check_eq "on simcuda, the kernel case's GPU expectation fails (exit status)" "$rc" 1
  check "with 'not ok - the launch succeeds'" grep -q '^not ok - the launch succeeds' "$work/gpu.out"
  env LD_LIBRARY_PATH="$work/pkg/lib/simcuda" ${TM_SAN_PRELOAD:+LD_PRELOAD=$TM_SAN_PRELOAD} CUDART_TEST_DEVICE=gpus "$program" kernel >"$work/bad.out" 2>&1
  rc=$?
  check_eq "CUDART_TEST_DEVICE=gpus stops the program (exit status 2)" "$rc" 2
  check "naming the setting" grep -q "CUDART_TEST_DEVICE='gpus' is not gpu or simcuda" "$work/bad.out"
else
  skip "the GPU expectation on simcuda" "no nvcc: the runtime programs are not built"
fi
done_testing
