#!/usr/bin/env bash
# Programs built with nvcc run on simcuda through the real CUDA runtime, statically
# linked (nvcc's default) and shared, each also with libtiermem.so in front: the export
# tables the runtime asks for (tools/simcuda/sim_export.c), memory, streams, events,
# stream-ordered allocation, a reset, threads on two devices, SIMCUDA_ASYNC=1, and a
# kernel launch that fails cleanly because simcuda cannot run GPU code (runtime_basics);
# 4x the device, cudaMemGetInfo against NVML in every TIERMEM_MEMINFO view, the kinds of
# pointer (cudart_memory); pools, capture and graph replays (cudart_pools); a PyTorch-style
# expandable segment (cudart_vmm); IPC with a fork+exec child (cudart_ipc); two devices,
# per-device limits, peer copies, a reset with everything live (cudart_devices); cuBLAS
# (cudart_cublas). docs/compatibility.md says what each proves.
#
# Each program prints "ok - what" / "not ok - what" and a plan; this script numbers them
# under a label naming the build, the case and the interposer, and checks that the plan
# was reached and the exit status is 0.
source "$(dirname "$0")/../lib/tap.sh"
cd "$TM_ROOT"

NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
SIMCUDA_DIR=$B/lib/simcuda
TIERMEM=$B/lib/libtiermem.so
PROGRAMS=$B/tests/cudart
MEM_BYTES=$((256 << 20))

if [ ! -x "$NVCC" ]; then
  skip "CUDA runtime programs on simcuda" "nvcc not found at $NVCC (set NVCC or CUDA_HOME)"
  done_testing
  exit
fi
for source in tests/cudart/*.cu; do
  name=$(basename "$source" .cu)
  for build in static shared; do
    check "${name}_$build was built by nvcc" test -x "$PROGRAMS/${name}_$build"
  done
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The runtime's own allocations live until exit (it frees nothing at teardown), and the
# static runtime sits in the program: LeakSanitizer is told about both under SAN=1.
# cuBLAS carries its own static runtimes.
printf 'leak:libcudart\nleak:libcublas\nleak:runtime_basics_\nleak:cudart_\n' >"$work/lsan.supp"
export LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$work/lsan.supp

# run_case LABEL INTERPOSER [VAR=VALUE...] -- PROGRAM ARGS...
# INTERPOSER is "none" or "tiermem". The program's stderr is left in $work/stderr.
run_case() {
  local label=$1 interposer=$2; shift 2
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  local preload=${TM_SAN_PRELOAD:-}
  if [ "$interposer" = tiermem ]; then
    preload=$(preload_value "$TIERMEM")
    # The physical view unless the case names one: free memory is what HBM has left, so
    # an allocation shows in cudaMemGetInfo (the default view also counts what chunks
    # could move to lower tiers).
    [[ " ${vars[*]} " == *" TIERMEM_MEMINFO="* ]] || vars+=(TIERMEM_MEMINFO=physical)
  fi
  env LD_LIBRARY_PATH="$SIMCUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ${preload:+LD_PRELOAD=$preload} \
      "${vars[@]}" "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$? seen=0 plan=""
  while IFS= read -r line; do
    case $line in
      "ok - "*) _tap_n=$((_tap_n + 1)); seen=$((seen + 1)); echo "ok $_tap_n - $label: ${line#ok - }" ;;
      "not ok - "*) _tap_n=$((_tap_n + 1)); seen=$((seen + 1)); _tap_failed=$((_tap_failed + 1))
                    echo "not ok $_tap_n - $label: ${line#not ok - }" ;;
      "#"*) echo "$line" ;;
      1..*) plan=${line#1..} ;;
    esac
  done <"$work/stdout"
  check_eq "$label: the program reached its plan" "$plan" "$seen"
  check_eq "$label: exit status" "$rc" "0"
  # Nothing the runtime called is missing from simcuda, nor any slot unknown to it, but
  # what the case expects ($expected_missing, a line).
  check_eq "$label: simcuda said nothing is missing${expected_missing:+ but the expected}" \
    "$(grep -E 'is not implemented|does not know it' "$work/stderr")" "${expected_missing:-}"
  if [ "$rc" != 0 ] || [ "$plan" != "$seen" ]; then sed 's/^/#   stderr: /' "$work/stderr" | tail -n 20; fi
}

kernel_line='simcuda: kernel _Z5scalePfi (scale(float*, int)) has no host code: GPU code cannot run here (CUDA_ERROR_NO_BINARY_FOR_GPU)'

for build in static shared; do
  program=$PROGRAMS/runtime_basics_$build
  [ -x "$program" ] || continue
  for interposer in none tiermem; do
    at="$build, interposer $interposer"
    run_case "basics ($at)" $interposer SIMCUDA_MEM=$MEM_BYTES -- "$program" basics 1 $MEM_BYTES
    run_case "basics, SIMCUDA_ASYNC=1 ($at)" $interposer SIMCUDA_MEM=$MEM_BYTES SIMCUDA_ASYNC=1 -- \
      "$program" basics 1 $MEM_BYTES
    run_case "basics, two devices ($at)" $interposer SIMCUDA_MEM=$MEM_BYTES SIMCUDA_DEVICES=2 -- \
      "$program" basics 2 $MEM_BYTES
    run_case "four threads on two devices ($at)" $interposer SIMCUDA_DEVICES=2 -- "$program" threads
    run_case "kernel ($at)" $interposer -- "$program" kernel
    check_eq "kernel ($at): one line names the refused kernel, for three launches" \
      "$(grep -cF "$kernel_line" "$work/stderr")" "1"
  done
done

# run_program NAME BUILD INTERPOSER: the cases of the other programs, each on simcuda with
# a device its case needs (64 MiB, so that 4x and the spills stay small).
small=(SIMCUDA_MEM=64M)
cublas_trap='simcuda: export table 42d85a81-23f6-cb47-8298-f6e78a3aecdc (TOOLS_TLS) slot 2 was called: simcuda does not know it (returns CUDA_ERROR_NOT_SUPPORTED)'
run_program() {
  local name=$1 build=$2 interposer=$3 program=$PROGRAMS/$1_$2 at="$2, interposer $3"
  [ -x "$program" ] || return 0
  case $name in
    cudart_memory)
      run_case "4x the device in pieces ($at)" $interposer "${small[@]}" -- "$program" oversubscribe
      if [ "$interposer" = tiermem ]; then
        for view in physical available virtual; do
          run_case "cudaMemGetInfo and NVML, view $view ($at)" $interposer "${small[@]}" TIERMEM_MEMINFO=$view -- \
            "$program" meminfo 64M
        done
      else
        run_case "cudaMemGetInfo and NVML ($at)" $interposer "${small[@]}" -- "$program" meminfo 64M
      fi
      run_case "pointer kinds and attributes ($at)" $interposer "${small[@]}" -- "$program" pointers ;;
    cudart_pools)
      run_case "memory pools ($at)" $interposer "${small[@]}" -- "$program" pools
      run_case "allocation in stream capture, graph replays ($at)" $interposer "${small[@]}" -- "$program" capture ;;
    cudart_vmm)
      run_case "an expandable segment past the device ($at)" $interposer "${small[@]}" -- "$program" segment 32M 64M ;;
    cudart_ipc)
      run_case "IPC with a fork+exec child ($at)" $interposer "${small[@]}" -- "$program" share ;;
    cudart_devices)
      if [ "$interposer" = tiermem ]; then
        run_case "two devices, limits 48M and 32M, peers ($at)" $interposer "${small[@]}" SIMCUDA_DEVICES=2 \
          TIERMEM_HBM_LIMIT=0:48M,1:32M -- "$program" peers 48M 32M
      else
        run_case "two devices, peers ($at)" $interposer "${small[@]}" SIMCUDA_DEVICES=2 -- "$program" peers 64M 64M
      fi
      # A DDR limit of 48 MiB: the second round fits only if the reset gave the first's back.
      run_case "cudaDeviceReset with everything live, twice ($at)" $interposer "${small[@]}" TIERMEM_DDR_LIMIT=48M -- \
        "$program" reset ;;
    cudart_cublas)
      expected_missing=$cublas_trap
      run_case "cuBLAS handle, workspace, GEMM ($at)" $interposer SIMCUDA_MEM=256M -- "$program" gemm
      expected_missing=
      run_case "cublasCreate on a 64 MiB device ($at)" $interposer "${small[@]}" -- "$program" create ;;
    runtime_basics) ;;
    *) check "tests/cudart/$name.cu has cases in test_cudart.sh" false ;;
  esac
}
for source in tests/cudart/*.cu; do
  for build in static shared; do
    for interposer in none tiermem; do run_program "$(basename "$source" .cu)" $build $interposer; done
  done
done

# SIMCUDA_EXPORT_TRACE=1 names every table the runtime asks for; =traps answers the one
# simcuda refuses (table 1) with traps: 13.0 calls none of its slots and runs the same.
program=$PROGRAMS/runtime_basics_shared
if [ -x "$program" ]; then
  run_case "basics, SIMCUDA_EXPORT_TRACE=1" none SIMCUDA_MEM=$MEM_BYTES SIMCUDA_EXPORT_TRACE=1 -- \
    "$program" basics 1 $MEM_BYTES
  check_eq "the trace names the seven tables 13.0 asks for" \
    "$(grep -c '^simcuda: cuGetExportTable ' "$work/stderr")" "7"
  check "the trace shows the integrity slot called with version 13002" \
    grep -q 'export table 7 (INTEGRITY_CHECK) slot 1 called: (version 13002' "$work/stderr"
  check "the trace counts calls at exit" grep -q 'CONTEXT_LOCAL_STORAGE) slot 2: [0-9]* calls' "$work/stderr"
  run_case "basics, SIMCUDA_EXPORT_TRACE=traps" none SIMCUDA_MEM=$MEM_BYTES SIMCUDA_EXPORT_TRACE=traps -- \
    "$program" basics 1 $MEM_BYTES
  check "traps: table 1 is answered with traps" \
    grep -q 'f8cff951-2146-8b4e-b9e2-fb469e7c0dd9: table 1 (unnamed 13.x table), answered with a table of traps' \
    "$work/stderr"
  env LD_LIBRARY_PATH="$SIMCUDA_DIR" ${TM_SAN_PRELOAD:+LD_PRELOAD=$TM_SAN_PRELOAD} SIMCUDA_EXPORT_TRACE=yes \
    "$program" kernel >"$work/stdout" 2>"$work/stderr"
  check "a bad SIMCUDA_EXPORT_TRACE is named when the driver starts" \
    grep -q "SIMCUDA_EXPORT_TRACE='yes' is not 0, 1 or traps" "$work/stderr"
  check "and the program's first call fails" grep -q '^not ok - cudaMalloc before the launch' "$work/stdout"
fi
done_testing
