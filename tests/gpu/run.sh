#!/usr/bin/env bash
# tests/gpu/run.sh — the checks that need a real GPU, in one script (under 10 minutes on an
# H200). Run it from anywhere in the repository:
#
#   tests/gpu/run.sh --package DIR   here: build, and assemble in DIR what a GPU machine
#                                    without the build's libraries needs (at most 64 MiB,
#                                    checked; tests/gpu/package.sh says what it holds)
#   tests/gpu/run.sh --from DIR      on the GPU machine, from a copy of the same tree: every
#                                    step from the package in DIR, nothing built there
#   tests/gpu/run.sh                 on a GPU machine that has the build's packages: build
#                                    into $O with make, then every step
#   tests/gpu/run.sh --sim           here: package into $O/gpu-package, then every step
#                                    that can run without a GPU from it, on simcuda
#   --steps a,b,...                  only those steps (names below; machine always runs)
#   --quick                          smaller calibration sizes (make test's check)
#
# Steps, each one TAP line with its checks indented under it:
#   machine      a GPU (nvidia-smi), or simcuda with --sim; nvcc when building
#   guard        nothing run here asks the GPU for managed memory (it can hang a GPU
#                whose managed memory outgrows what is free): the unified-memory
#                baseline stays a simcuda figure
#   package      (--package, --sim) build, and assemble the package
#   build        make the programs, or check the package's files against its MANIFEST
#   kernels      every CUDA kernel against its C twin on random inputs (kernel_check.c
#                states each tolerance and why)
#   conformance  the driver conformance tests of tests/simcuda on the real driver
#   engine       tiermem-llm on stories260K, greedy, --kv-dtype f32: the reference ids,
#                text and first-step logits of ../shared/models/README.md; fp8 KV runs
#   models       a generated Q4_K_M-style model and a mixture of experts, device against
#                simcuda's C twins
#   preload      under libtiermem.so on the same driver: tiermem-llm with every
#                allocation chunked, tiermem-llm streaming spilled weights through the
#                ring (TIERMEM_HBM_LIMIT), and the preload test programs that need no test
#                kernel (stream-ordered free, graph capture, context reset, memory info, IPC)
#   cudart       the CUDA runtime programs of tests/cudart (every NAME.cu, its cases in
#                tests/cudart/cases.txt), static and shared, with and without libtiermem.so
#   calibration  simcuda's h200-pcie5 prediction against the GPU's measured time, per line
#   torch        PyTorch under libtiermem.so, unmodified (tests/gpu/torch_tiering.py)
#
# Environment: O (build folder, default build), NVCC (default: $CUDA_HOME/bin/nvcc or nvcc
# on PATH), PYTHON (the one with torch; default python3), TM_SHARED (folder holding models/; default the package's, else ../shared beside
# the repository, else shared/ inside it). Settings of tiermem, simcuda and PyTorch's
# allocator that the caller has are cleared first: each step sets its own.
# Logs of each step: $O/gpu-logs/ (or DIR/gpu-logs/). The last line is
# "N passed, N failed, N skipped", counting steps.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
O=${O:-build}
case $O in /*) BUILD=$O ;; *) BUILD=$ROOT/$O ;; esac

SIM=0 FROM='' PACKAGE='' STEPS='' QUICK=0
usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --sim) SIM=1 ;;
    --from) FROM=${2:?--from needs a folder}; shift ;;
    --package) PACKAGE=${2:?--package needs a folder}; shift ;;
    --steps) STEPS=${2:?--steps needs a list}; shift ;;
    --quick) QUICK=1 ;;
    *) usage ;;
  esac
  shift
done
abs() { case $1 in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
[ -n "$FROM" ] && FROM=$(abs "$FROM")
[ -n "$PACKAGE" ] && PACKAGE=$(abs "$PACKAGE")
[ "$SIM" = 1 ] && [ -z "$PACKAGE" ] && [ -z "$FROM" ] && PACKAGE=$BUILD/gpu-package
# B is the tree every step runs from: the build folder, or the package (same layout).
B=$BUILD
[ -n "$PACKAGE" ] && B=$PACKAGE
[ -n "$FROM" ] && B=$FROM
LOGS=$B/gpu-logs
[ -n "$PACKAGE" ] && LOGS=$BUILD/gpu-logs   # the package is rebuilt from scratch
mkdir -p "$LOGS"

# Every setting the caller had for tiermem, simcuda, PyTorch's allocator or the runtime
# tests is cleared: each step sets what it runs with, so no inherited TIERMEM_POLICY (the
# managed baseline) or SIMCUDA_* reaches a run.
for v in $(compgen -e); do
  case $v in TIERMEM_*|SIMCUDA_*|PYTORCH_CUDA_ALLOC_CONF|CUDART_TEST_DEVICE) unset "$v" ;; esac
done
unset LD_PRELOAD
ledger_dir=$(mktemp -d)
trap 'rm -rf "$ledger_dir"' EXIT
export TIERMEM_LEDGER=$ledger_dir/ledger   # this run's own lower-tier budgets

JOBS=$(nproc 2>/dev/null || echo 2)
[ "$SIM" = 1 ] && JOBS=2   # a shared development machine
# On a GPU machine the compiler may be newer than the project's and warn about new
# things: warnings stay warnings there (this script checks kernels, not warnings).
WNOERR=-Wno-error
[ "$SIM" = 1 ] || [ -n "$PACKAGE" ] && WNOERR=

# ---------------------------------------------------------------- reporting

n=0 passed=0 failed=0 skipped=0
step_title='' s_ok=0 s_bad=0 s_skip=0 s_first='' s_why=''
begin_step() { step_title=$1 s_ok=0 s_bad=0 s_skip=0 s_first='' s_why=''; echo; echo "# == $1 =="; }
sub_ok() { s_ok=$((s_ok + 1)); echo "    ok - $*"; }
sub_bad() { s_bad=$((s_bad + 1)); s_first=${s_first:-$*}; echo "    not ok - $*"; }
sub_skip() { s_skip=$((s_skip + 1)); s_why=${s_why:-$2}; echo "    ok - $1 # SKIP $2"; }
# sub_check WHAT COMMAND...: passes when the command exits 0
sub_check() { local what=$1; shift; if "$@"; then sub_ok "$what"; else sub_bad "$what"; fi; }
note() { echo "    # $*"; }
indent() { sed 's/^/    /'; }
show_log() { echo "    #   last lines of ${1#$ROOT/}:"; tail -n "${2:-25}" "$1" | sed 's/^/    #   /'; }
checks() { [ "$1" -eq 1 ] && echo "1 check" || echo "$1 checks"; }
# One TAP line for the step just run.
end_step() {
  n=$((n + 1))
  if [ "$s_bad" -gt 0 ]; then
    failed=$((failed + 1))
    echo "not ok $n - $step_title: $s_bad of $((s_ok + s_bad)) checks failed (first: $s_first)"
  elif [ "$s_ok" -eq 0 ]; then
    skipped=$((skipped + 1))
    echo "ok $n - $step_title # SKIP ${s_why:-nothing was checked}"
  else
    passed=$((passed + 1))
    echo "ok $n - $step_title: $(checks "$s_ok") passed$( [ "$s_skip" -gt 0 ] && echo ", $s_skip skipped")"
  fi
}
skip_step() { begin_step "$1"; n=$((n + 1)); skipped=$((skipped + 1)); echo "ok $n - $1 # SKIP $2"; }
# A step whose main part cannot run here: skipped, with the checks it could make, unless
# one of those failed.
end_step_skip() {
  n=$((n + 1))
  if [ "$s_bad" -gt 0 ]; then
    failed=$((failed + 1))
    echo "not ok $n - $step_title: $s_bad of $((s_ok + s_bad)) checks failed (first: $s_first)"
  else
    skipped=$((skipped + 1))
    echo "ok $n - $step_title: $(checks "$s_ok") passed # SKIP $1"
  fi
}
finish() {
  echo
  echo "# $(($(date +%s) - start)) s"
  echo "1..$n"
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
  exit
}
wanted() { [ -z "$STEPS" ] || [[ ,$STEPS, == *,$1,* ]]; }
start=$(date +%s)

# ---------------------------------------------------------------- the machine's pieces

find_nvcc() {
  NVCC=${NVCC:-}
  if [ -z "$NVCC" ]; then
    for c in "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" "$(command -v nvcc 2>/dev/null)"; do
      [ -n "$c" ] && [ -x "$c" ] && { NVCC=$c; break; }
    done
  fi
  CUDA_HOME_USED=${CUDA_HOME:-$(dirname "$(dirname "${NVCC:-/usr/local/cuda/bin/nvcc}")")}
}
find_nvcc
# The driver the runs load: the real libcuda.so.1 from the linker's cache, or simcuda's.
# Test programs carry a RUNPATH to simcuda; LD_LIBRARY_PATH (searched first) points them,
# and the interposer, at the real driver.
if [ "$SIM" = 1 ]; then
  DRIVER_DIR=$B/lib/simcuda
else
  DRIVER_DIR=$(ldconfig -p 2>/dev/null | sed -n 's|.*libcuda\.so\.1 (libc6[^)]*) => \(.*\)/libcuda\.so\.1$|\1|p' | head -n 1)
fi
LIBTM=$B/lib/libtiermem.so
# LD_PRELOAD of the interposer (after the sanitizer's runtime when make test SAN=1 runs this)
tm_preload() { echo "${TM_SAN_PRELOAD:+$TM_SAN_PRELOAD:}$LIBTM"; }
# Under libtiermem.so on the step's driver; the managed policies never run on a GPU.
under_tm() {
  case ${TIERMEM_POLICY:-heat} in heat|size) ;; *)
    echo "run.sh: TIERMEM_POLICY=$TIERMEM_POLICY refused: only heat and size run here" >&2; return 97 ;;
  esac
  LD_LIBRARY_PATH=$DRIVER_DIR SIMCUDA_ASYNC=1 LD_PRELOAD=$(tm_preload) timeout 120 "$@"
}
# The same make for every build step (the file list is package.sh's).
make_targets() {
  make -j"$JOBS" O="$O" SAN="${SAN:-0}" NVCC="${NVCC:-/nonexistent/nvcc}" CUDA_HOME="$CUDA_HOME_USED" \
    EXTRA_CFLAGS="$WNOERR" "$@"
}
# models_dir [TREE]: where stories260K.gguf is, TREE's models/ first (the package's).
models_dir() {
  local d
  for d in ${1:+"$1/models"} ${TM_SHARED_IN:+"$TM_SHARED_IN/models"} "$ROOT/../shared/models" "$ROOT/shared/models"; do
    [ -f "$d/stories260K.gguf" ] && { echo "$d"; return; }
  done
  echo "${TM_SHARED_IN:-$ROOT/../shared}/models"
}
TM_SHARED_IN=${TM_SHARED:-}
MODEL=$(models_dir "$B")/stories260K.gguf

# ======================================================================================
# machine: what this run stands on.
step_machine() {
  begin_step "machine"
  if [ "$SIM" = 1 ]; then
    sub_ok "simulated run: the device side is simcuda (${DRIVER_DIR#$ROOT/}), not a GPU"
  elif [ -n "$PACKAGE" ]; then
    sub_ok "packaging only: nothing runs on a device"
  elif command -v nvidia-smi >/dev/null && nvidia-smi -L >"$LOGS/gpu.txt" 2>&1 && grep -q GPU "$LOGS/gpu.txt"; then
    sub_ok "GPU present: $(head -1 "$LOGS/gpu.txt")"
    sub_check "the real libcuda.so.1 is in the dynamic linker's cache (${DRIVER_DIR:-none})" test -n "$DRIVER_DIR"
  else
    sub_bad "no NVIDIA GPU visible (nvidia-smi -L); run with --sim to check the rest here"
    end_step; finish
  fi
  if [ -n "$FROM" ]; then
    sub_check "the package ${FROM#$ROOT/} is there ($(head -n 1 "$FROM/PACKAGE" 2>/dev/null))" test -f "$FROM/MANIFEST"
    [ -x "$NVCC" ] 2>/dev/null && note "nvcc $("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') (not needed: nothing is built)"
  elif [ -n "$NVCC" ] && [ -x "$NVCC" ]; then
    sub_ok "nvcc: $NVCC ($("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
  else
    sub_bad "nvcc not found (set NVCC or CUDA_HOME): the CUDA kernels cannot be built"
  fi
  end_step
}

# ======================================================================================
# guard: proves, before anything runs, that no program this script starts on the device
# allocates managed memory beyond a few known MiB, and that no run takes a managed policy.
# Managed memory larger than what the GPU has free can hang it; the unified-memory
# baseline is measured on simcuda only (make bench-tiering, tests/simcuda/test_uvm.c).
MANAGED_API='(cuMemAllocManaged|cudaMallocManaged)[[:space:]]*\('   # a call, not a mention
# The known managed allocations of the conformance tests, preload programs and runtime
# programs this script runs, per file: 256 KiB twice (and three refused calls) in
# test_memory.c, 4 MiB in test_ipc.c, 1 MiB in probe.c, 1 MiB in cudart_memory.cu. A
# change here needs its size checked first.
MANAGED_KNOWN="tests/cudart/cudart_memory.cu:1 tests/preload/probe.c:1 tests/simcuda/test_ipc.c:1 tests/simcuda/test_memory.c:5"
step_guard() {
  begin_step "guard: no managed memory on the device"
  local own
  own=$(grep -lE "$MANAGED_API" tests/gpu/*.c tests/gpu/*.cu tests/gpu/*.py \
          engine/*.c kernels/*.c kernels/*.cu 2>/dev/null | tr '\n' ' ')
  [ -z "$own" ] && sub_ok "the calibration, the torch runs, the engine and its kernels allocate no managed memory" ||
    sub_bad "managed memory allocated in: $own(never on the GPU: keep such cases to simcuda)"
  local portable files=() f counts=""
  portable=$(sed -n '/^PORTABLE_SOURCES=/,/"$/p' tests/gpu/conformance.sh | tr -d '"' | sed 's/PORTABLE_SOURCES=//')
  for f in $portable; do files+=("tests/simcuda/$f"); done
  files+=(tests/preload/serving.c tests/preload/probe.c tests/preload/ipc_peer.c tests/cudart/*.cu)
  for f in "${files[@]}"; do
    local c
    c=$(grep -cE "$MANAGED_API" "$f" 2>/dev/null)
    [ "${c:-0}" -gt 0 ] && counts+="$f:$c "
  done
  counts=$(tr ' ' '\n' <<<"$counts" | sort | grep . | tr '\n' ' ')
  [ "${counts% }" = "$(tr ' ' '\n' <<<"$MANAGED_KNOWN" | sort | tr '\n' ' ' | sed 's/ $//')" ] &&
    sub_ok "the conformance tests, preload and runtime programs make only the known small managed allocations ($MANAGED_KNOWN)" ||
    sub_bad "managed allocations changed: '${counts% }', known '$MANAGED_KNOWN': check each size is a few MiB, then update MANAGED_KNOWN"
  local pat="TIERMEM_""POLICY=" values
  values=$(grep -v '^ *#' tests/gpu/run.sh | grep -oE "${pat}[A-Za-z_-]+" | sort -u | sed "s/$pat//" | tr '\n' ' ')
  [[ " $values" =~ ^(\ (heat|size))*\ $ ]] &&
    sub_ok "this script sets TIERMEM_POLICY only to heat or size (${values:-none}); inherited settings are cleared" ||
    sub_bad "this script sets TIERMEM_POLICY to '$values'"
  end_step
}

# ======================================================================================
# package: what the GPU machine is sent, built here, at most 64 MiB (tests/gpu/package.sh).
step_package() {
  begin_step "package: ${PACKAGE#$ROOT/}"
  local targets=() f
  while read -r f; do
    case $f in gpu-conformance/*) ;; *) targets+=("$BUILD/$f") ;; esac
  done < <(bash tests/gpu/package.sh --list)
  if make_targets "${targets[@]}" >"$LOGS/package-build.log" 2>&1; then
    sub_ok "built the ${#targets[@]} programs and libraries it carries"
  else
    sub_bad "build (see ${LOGS#$ROOT/}/package-build.log)"; show_log "$LOGS/package-build.log" 15
  fi
  if O=$BUILD NVCC=${NVCC:-} CUDA_HOME=$CUDA_HOME_USED bash tests/gpu/conformance.sh --build-only \
       >"$LOGS/conformance-build.log" 2>&1; then
    sub_ok "built the conformance program and its fatbin (tests/gpu/conformance.sh --build-only)"
  else
    sub_bad "tests/gpu/conformance.sh --build-only"; show_log "$LOGS/conformance-build.log" 10
  fi
  TM_SHARED=$(dirname "$(models_dir)") bash tests/gpu/package.sh "$BUILD" "$PACKAGE" >"$LOGS/package.log" 2>&1
  local rc=$?
  while IFS= read -r line; do
    case $line in
      "ok - "*" # SKIP "*) line=${line#ok - }; sub_skip "${line%% # SKIP *}" "${line#* # SKIP }" ;;
      "ok - "*) sub_ok "${line#ok - }" ;;
      "not ok - "*) sub_bad "${line#not ok - }" ;;
      "# "*) note "${line#\# }" ;;
    esac
  done <"$LOGS/package.log"
  [ "$rc" -eq 0 ] || sub_bad "tests/gpu/package.sh exited with status $rc"
  [ -f "$PACKAGE/PACKAGE" ] && sed 's/^/    # /' "$PACKAGE/PACKAGE"
  MODEL=$(models_dir "$B")/stories260K.gguf   # the package's copy from now on
  end_step
}

# ======================================================================================
# build: the programs every later step runs exist, built here or carried unchanged.
step_build() {
  local fatbin=$B/kernels/tiermem-kernels.fatbin
  if [ -n "$FROM" ] || [ -n "$PACKAGE" ]; then
    begin_step "build: the package's files"
    if (cd "$B" && awk '{ print $3 "  " $1 }' MANIFEST | sha256sum --quiet -c -) >"$LOGS/manifest.log" 2>&1; then
      sub_ok "every file of MANIFEST is there with its sha256 ($(wc -l <"$B/MANIFEST") files)"
    else
      sub_bad "files differ from MANIFEST"; show_log "$LOGS/manifest.log" 10
    fi
  else
    begin_step "build with nvcc"
    local targets=() f
    while read -r f; do
      case $f in gpu-conformance/*) ;; *) targets+=("$B/$f") ;; esac
    done < <(bash tests/gpu/package.sh --list)
    if make_targets "${targets[@]}" >"$LOGS/build.log" 2>&1 && [ -s "$fatbin" ]; then
      sub_ok "built the twin library, the fatbin ($(stat -c %s "$fatbin") bytes) and the test programs"
    else
      sub_bad "build (make ${targets[*]#$ROOT/})"; show_log "$LOGS/build.log"
    fi
  fi
  local cuobjdump
  cuobjdump=$(dirname "${NVCC:-/x/x}")/cuobjdump
  if [ -x "$cuobjdump" ] && [ -s "$fatbin" ]; then
    "$cuobjdump" --list-elf --list-ptx "$fatbin" >"$LOGS/fatbin.txt" 2>&1
    grep -q sm_80 "$LOGS/fatbin.txt" && grep -q sm_90 "$LOGS/fatbin.txt" &&
      sub_ok "the engine's fatbin holds sm_80 and sm_90 code" || { sub_bad "fatbin lacks sm_80 or sm_90 code"; show_log "$LOGS/fatbin.txt"; }
  else
    sub_skip "fatbin architectures" "no cuobjdump beside nvcc"
  fi
  end_step
}

# ======================================================================================
# kernels: every CUDA kernel agrees with its C twin (kernel_check prints one line a case).
run_kernel_check() {
  local what=$1 log=$2; shift 2
  timeout 240 "$@" >"$log" 2>&1
  local rc=$? k_ok k_bad
  indent <"$log"
  k_ok=$(grep -c '^ok ' "$log")
  k_bad=$(grep -c '^not ok ' "$log")
  [ "$rc" -eq 0 ] && [ "$k_bad" -eq 0 ] && [ "$k_ok" -gt 0 ] && sub_ok "$what: $k_ok checks passed" ||
    sub_bad "$what: $k_ok passed, $k_bad failed, exit status $rc"
}
step_kernels() {
  begin_step "kernels: CUDA kernels against their C twins"
  local check=$B/tests/gpu/kernel_check twins=$B/lib/libtiermem-kernels.so emu=$B/tests/kernels/libtiermem-kernels-cuda-emu.so
  if [ ! -x "$check" ] || [ ! -f "$twins" ]; then
    sub_bad "kernel_check not built (build step)"
  elif [ "$SIM" = 1 ]; then
    # The device side is the twins themselves (every difference must be 0), then the CUDA
    # kernels compiled for the CPU (tests/kernels/cuda_emu.h).
    LD_LIBRARY_PATH=$DRIVER_DIR run_kernel_check "kernel_check, twins on simcuda" \
      "$LOGS/kernel_check.log" "$check" "$twins" --module "$twins"
    LD_LIBRARY_PATH=$DRIVER_DIR run_kernel_check "kernel_check, CUDA kernels emulated on the CPU" \
      "$LOGS/kernel_check_emu.log" "$check" "$twins" --module "$emu" --small
  else
    run_kernel_check "kernel_check, CUDA kernels from the embedded fatbin on the GPU" \
      "$LOGS/kernel_check.log" "$check" "$twins"
  fi
  end_step
}

# ======================================================================================
# conformance: the driver behaves as tests/simcuda says drivers do (exit status 77 means
# "no GPU": expected with --sim, where the package's build is all it checks).
step_conformance() {
  begin_step "conformance: tests/simcuda on the real driver"
  local args=()
  if [ "$SIM" = 1 ] || [ -n "$FROM" ]; then args=(--run-only); fi
  O=$B NVCC=${NVCC:-} CUDA_HOME=$CUDA_HOME_USED timeout 150 \
    bash tests/gpu/conformance.sh "${args[@]}" >"$LOGS/conformance.log" 2>&1
  local rc=$?
  indent <"$LOGS/conformance.log"
  if [ "$SIM" = 1 ] && [ "$rc" -eq 77 ]; then
    sub_ok "tests/gpu/conformance.sh --run-only found the program and its fatbin, and no GPU (exit status 77)"
  elif [ "$rc" -eq 0 ] && ! grep -q '^not ok' "$LOGS/conformance.log"; then
    sub_ok "tests/gpu/conformance.sh ${args[*]}"
  elif [ "$rc" -eq 77 ]; then
    sub_bad "tests/gpu/conformance.sh found no GPU to run on (exit status 77)"
  else
    sub_bad "tests/gpu/conformance.sh ${args[*]} (exit status $rc)"
  fi
  end_step
}

# ======================================================================================
# engine: tiermem-llm on the device gives the reference ids, text and logits.
LLM_WANT="432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 385 328 432 358 394"
run_llm() {
  if [ "$SIM" = 1 ]; then LD_LIBRARY_PATH=$DRIVER_DIR timeout 60 "$B/bin/tiermem-llm" "$@"
  else timeout 60 "$B/bin/tiermem-llm" "$@"; fi
}
step_engine() {
  local llm=$B/bin/tiermem-llm
  if [ ! -x "$llm" ]; then skip_step "engine: tiermem-llm on stories260K" "${llm#$ROOT/} is not built"; return; fi
  if [ ! -f "$MODEL" ]; then skip_step "engine: tiermem-llm on stories260K" "no $MODEL (set TM_SHARED)"; return; fi
  begin_step "engine: tiermem-llm on stories260K (greedy, --kv-dtype f32)"
  run_llm -m "$MODEL" -p "Once upon a time" -n 32 --kv-dtype f32 -v \
    --dump-logits "$LOGS/llm-f32.logits" >"$LOGS/llm-f32.out" 2>"$LOGS/llm-f32.err"
  local rc=$? got want_kernels
  grep -E '^tiermem-llm: (driver|kernels|summary)' "$LOGS/llm-f32.err" | indent
  if [ "$rc" -ne 0 ]; then
    sub_bad "tiermem-llm exited with status $rc"; show_log "$LOGS/llm-f32.err"; end_step; return
  fi
  sub_ok "tiermem-llm ran (exit status 0)"
  if [ "$SIM" = 1 ]; then want_kernels='libtiermem-kernels.so'; else want_kernels='embedded fatbin'; fi
  if grep -q "^tiermem-llm: kernels from .*$want_kernels" "$LOGS/llm-f32.err" &&
     { [ "$SIM" = 1 ] || ! grep -q 'using the emulated driver' "$LOGS/llm-f32.err"; }; then
    sub_ok "kernels from the $want_kernels, on the $([ "$SIM" = 1 ] && echo emulated || echo real) driver"
  else
    sub_bad "expected kernels from the $want_kernels"
  fi
  got=$(sed -n 's/^tiermem-llm: seq 0 prompt ids: //p' "$LOGS/llm-f32.err")
  [ "$got" = "1 403 407 261 378" ] && sub_ok "prompt ids 1 403 407 261 378" ||
    sub_bad "prompt ids: got '$got', want '1 403 407 261 378'"
  got=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-f32.err")
  [ "$got" = "$LLM_WANT" ] && sub_ok "32 generated ids equal the reference" ||
    { sub_bad "generated ids differ from the reference"; note "got:  $got"; note "want: $LLM_WANT"; }
  local text="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
  [ "$(cat "$LOGS/llm-f32.out")" = "$text" ] && sub_ok "streamed text equals the reference" ||
    { sub_bad "streamed text differs"; note "got: $(cat "$LOGS/llm-f32.out")"; }
  # First-step logits: field k+3 of the first line is id k (the engine's dump format).
  if [ -s "$LOGS/llm-f32.logits" ]; then
    local diff
    diff=$(awk 'NR == 1 { split("432 17.799397 383 14.281260 322 9.709650 353 9.587288 323 9.134243", r, " ")
               m = 0; for (i = 1; i < 10; i += 2) { d = $(r[i] + 3) - r[i + 1]; if (d < 0) d = -d; if (d > m) m = d }
               printf "%.3g", m }' "$LOGS/llm-f32.logits")
    awk -v d="$diff" 'BEGIN { exit !(d <= 1e-4) }' && sub_ok "first-step logits within 1e-4 of the reference (largest difference $diff)" ||
      sub_bad "first-step logits: largest difference $diff from the reference (bound 1e-4)"
  else
    sub_bad "no logits dumped (--dump-logits)"
  fi
  # fp8 KV on the device: it runs and agrees with f32 on the first token (the engine's own
  # tests bound the rest); how many of the 32 greedy ids agree is shown.
  local d ids same
  for d in fp8_e4m3 fp8_e5m2; do
    run_llm -m "$MODEL" -p "Once upon a time" -n 32 --kv-dtype $d -v >"$LOGS/llm-$d.out" 2>"$LOGS/llm-$d.err"
    rc=$?
    ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-$d.err")
    same=$(paste -d' ' <(tr ' ' '\n' <<<"$LLM_WANT") <(tr ' ' '\n' <<<"$ids") | awk '$1 == $2 { n++ } END { print n + 0 }')
    [ "$rc" -eq 0 ] && [ "${ids%% *}" = "432" ] &&
      sub_ok "--kv-dtype $d runs; first token agrees with f32 ($same of 32 greedy ids agree)" ||
      { sub_bad "--kv-dtype $d: exit status $rc, ids '$ids'"; show_log "$LOGS/llm-$d.err" 10; }
  done
  # With --sim: the engine once more, its kernels now the CUDA ones compiled for the CPU
  # (the engine finds them as its host-kernel library beside a copy of its binary). Slow,
  # so 8 tokens: the reference's first 8 ids.
  local emu=$B/tests/kernels/libtiermem-kernels-cuda-emu.so
  if [ "$SIM" = 1 ] && [ -f "$emu" ]; then
    local emu_dir
    emu_dir=$(mktemp -d)
    mkdir -p "$emu_dir/bin" "$emu_dir/lib"
    cp "$llm" "$emu_dir/bin/" && cp "$emu" "$emu_dir/lib/libtiermem-kernels.so"
    # the copy's RUNPATH ($ORIGIN/../deps) must still find the package's libraries
    ln -s "$B/deps" "$emu_dir/deps"
    LD_LIBRARY_PATH=$DRIVER_DIR timeout 300 "$emu_dir/bin/tiermem-llm" -m "$MODEL" -p "Once upon a time" -n 8 \
      --kv-dtype f32 --kv-blocks 64 -v >"$LOGS/llm-emu.out" 2>"$LOGS/llm-emu.err"
    rc=$?
    rm -rf "$emu_dir"
    got=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-emu.err")
    [ "$rc" -eq 0 ] && [ "$got" = "${LLM_WANT:0:31}" ] &&
      sub_ok "8 generated ids equal the reference with the CUDA kernels emulated on the CPU" ||
      { sub_bad "emulated CUDA kernels: exit status $rc, ids '$got', want '${LLM_WANT:0:31}'"; show_log "$LOGS/llm-emu.err" 10; }
  fi
  end_step
}

# ======================================================================================
# models: a quantised model and a mixture of experts give the same first-step logits
# (within 1e-3 of the largest: other summation orders, 4 layers) and first token on the
# device as on simcuda's C twins; how many of 16 greedy ids agree is shown (a random
# model's near-ties may part later).
step_models() {
  local llm=$B/bin/tiermem-llm mk=$B/bin/tiermem-mkmodel
  if [ ! -x "$llm" ] || [ ! -x "$mk" ]; then
    skip_step "models: Q4_K_M-style and MoE" "tiermem-llm or tiermem-mkmodel not built"; return
  fi
  begin_step "models: a Q4_K_M-style file and a mixture of experts, device against the twins"
  run_q() { # $1: log name; the rest: environment
    local name=$1; shift
    env "$@" timeout 120 "$llm" -m "$QM" -p "once upon a time the little girl" -n 16 --kv-dtype f32 \
      --kv-blocks 64 -v --dump-logits "$LOGS/$name.logits" >/dev/null 2>"$LOGS/$name.err"
  }
  local what rc_dev rc_twin diff dev_ids twin_ids same
  for what in q4_k_m moe; do
    QM=$LOGS/$what.gguf
    if [ $what = q4_k_m ]; then
      "$mk" -o "$QM" --type q4_k_m --layers 4 --dim 512 --heads 8 --kv-heads 2 --vocab 2048 --seed 3 >/dev/null
    else
      "$mk" -o "$QM" --type q4_k_m --experts 8 --experts-used 2 --expert-skew 4 --layers 2 --dim 512 --heads 8 \
        --kv-heads 2 --ffn 512 --vocab 2048 --seed 3 >/dev/null
    fi
    if [ "$SIM" = 1 ]; then run_q $what-dev LD_LIBRARY_PATH="$DRIVER_DIR"; else run_q $what-dev; fi
    rc_dev=$?
    run_q $what-twin LD_LIBRARY_PATH="$B/lib/simcuda"
    rc_twin=$?
    if [ $rc_dev -ne 0 ] || [ $rc_twin -ne 0 ]; then
      sub_bad "$what model: exit status $rc_dev (device), $rc_twin (twins)"; show_log "$LOGS/$what-dev.err" 10
      continue
    fi
    diff=$(paste -d' ' <(head -1 "$LOGS/$what-dev.logits") <(head -1 "$LOGS/$what-twin.logits") |
      awk '{ h = NF / 2; m = 0; d = 0
             for (k = 3; k <= h; k++) { a = $k < 0 ? -$k : $k; if (a > m) m = a
                                         e = $k - $(k + h); if (e < 0) e = -e; if (e > d) d = e }
             printf "%.3g %.3g", d, m }')
    awk -v d="${diff% *}" -v m="${diff#* }" 'BEGIN { exit !(d <= 1e-3 * m) }' &&
      sub_ok "$what first-step logits: device and twins within 1e-3 of the largest (difference ${diff% *}, largest ${diff#* })" ||
      sub_bad "$what first-step logits differ by ${diff% *} (largest logit ${diff#* })"
    dev_ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/$what-dev.err")
    twin_ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/$what-twin.err")
    same=$(paste -d' ' <(tr ' ' '\n' <<<"$dev_ids") <(tr ' ' '\n' <<<"$twin_ids") | awk '$1 == $2 { n++ } END { print n + 0 }')
    [ -n "$dev_ids" ] && [ "${dev_ids%% *}" = "${twin_ids%% *}" ] &&
      sub_ok "$what model: the same first token on the device and the twins ($same of 16 greedy ids agree)" ||
      sub_bad "$what model: first tokens differ: device '$dev_ids', twins '$twin_ids'"
    grep 'expert use' "$LOGS/$what-dev.err" | indent
  done
  end_step
}

# ======================================================================================
# preload: libtiermem.so in front of the engine and of the preload test programs, on the
# step's driver: the same ids with every allocation chunked; stream-ordered frees, graphs,
# resets, memory info and legacy IPC of chunked memory work as on simcuda.
run_preload() {
  local what=$1 expect=$2 log=$LOGS/preload-$3.log; shift 3
  under_tm "$@" >"$log" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] && grep -q -- "$expect" "$log" && sub_ok "$what" || { sub_bad "$what (exit status $rc)"; show_log "$log" 10; }
}
step_preload() {
  local serving=$B/tests/preload/serving llm=$B/bin/tiermem-llm
  if [ ! -f "$LIBTM" ] || [ ! -x "$serving" ]; then
    begin_step "preload: under libtiermem.so"; sub_bad "libtiermem.so and the preload test programs are not built"; end_step; return
  fi
  begin_step "preload: under libtiermem.so on the $([ "$SIM" = 1 ] && echo emulated || echo real) driver"
  if [ -x "$llm" ] && [ -f "$MODEL" ]; then
    # every allocation from 1 byte up chunked: the engine's buffers all go through the VMM path
    TIERMEM_MIN_TIERED=1 TIERMEM_LOG=info under_tm "$llm" -m "$MODEL" -p "Once upon a time" -n 32 \
      --kv-dtype f32 -v >"$LOGS/llm-tiermem.out" 2>"$LOGS/llm-tiermem.err"
    local rc=$? got
    grep -E '^tiermem(-llm: summary|: )' "$LOGS/llm-tiermem.err" | head -n 8 | indent
    got=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-tiermem.err")
    [ "$rc" -eq 0 ] && [ "$got" = "$LLM_WANT" ] && grep -q '^tiermem: ' "$LOGS/llm-tiermem.err" &&
      sub_ok "tiermem-llm under libtiermem.so: the 32 reference ids, with the interposer's start-up line" ||
      { sub_bad "tiermem-llm under libtiermem.so: exit status $rc, ids '$got'"; show_log "$LOGS/llm-tiermem.err" 15; }
  else
    sub_skip "tiermem-llm under libtiermem.so" "the engine or the model is missing"
  fi
  # the stream ring on the device: a model 1.75 times the HBM the interposer is given, its
  # spilled weights copied into the ring on the interposer's stream and the launches that
  # read them handed the copy (cuFuncGetParamInfo, a 12.4 driver or later)
  local mk=$B/bin/tiermem-mkmodel sm=$LOGS/stream.gguf
  if [ -x "$llm" ] && [ -x "$mk" ] &&
     "$mk" -o "$sm" --layers 4 --vocab 1024 --dim 512 --heads 8 --kv-heads 8 --ffn 1536 --type f32 --seed 5 \
       >"$LOGS/stream-mk.log" 2>&1; then
    LD_LIBRARY_PATH=$DRIVER_DIR SIMCUDA_ASYNC=1 timeout 120 "$llm" -m "$sm" -p "Once upon a time" -n 24 \
      --kv-dtype f32 --kv-blocks 16 -v >/dev/null 2>"$LOGS/stream-ref.err"
    TIERMEM_HBM_LIMIT=32M TIERMEM_STREAM=on TIERMEM_LOG=info under_tm "$llm" -m "$sm" -p "Once upon a time" -n 24 \
      --kv-dtype f32 --kv-blocks 16 -v >/dev/null 2>"$LOGS/stream.err"
    local src=$? want_ids got_ids streamed pointed
    want_ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/stream-ref.err")
    got_ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/stream.err")
    streamed=$(sed -n 's/^tiermem: exit: stream: \([0-9]*\) weights streamed.*/\1/p' "$LOGS/stream.err")
    pointed=$(sed -n 's/^tiermem: exit: stream: .*; \([0-9]*\) parameters pointed at the ring.*/\1/p' "$LOGS/stream.err")
    grep -E '^tiermem: (policy heat|exit: stream|warning)' "$LOGS/stream.err" | indent
    if [ "$src" -eq 0 ] && [ -n "$want_ids" ] && [ "$got_ids" = "$want_ids" ] && [ "${streamed:-0}" -gt 0 ] &&
       [ "${pointed:-0}" -gt 0 ] && ! grep -q 'streaming stops' "$LOGS/stream.err"; then
      sub_ok "the stream ring: $streamed weights streamed, $pointed parameters pointed at the ring, the tokens of a run without the interposer"
    else
      sub_bad "the stream ring: exit status $src, $streamed streamed, $pointed pointed, ids '$got_ids' against '$want_ids'"
      show_log "$LOGS/stream.err" 15
    fi
  else
    sub_skip "the stream ring" "the engine or tiermem-mkmodel is missing"
  fi
  run_preload "cuMemFreeAsync of chunked memory does not wait for the stream" \
    '^free returned while the stream was held' freeasync "$serving" freeasync 64M
  run_preload "a CUDA graph captured over chunked memory runs and every byte lands" \
    '^graph ran: every captured write landed' capture "$serving" capture 8M
  run_preload "a primary-context reset releases chunked memory" '^round 2 free' reset "$serving" reset 64M
  local log=$LOGS/preload-reset.log
  [ "$(sed -n 's/^round 1 free //p' "$log")" = "$(sed -n 's/^round 2 free //p' "$log")" ] &&
    sub_ok "after the reset the same allocation leaves the same free memory" ||
    sub_bad "free memory after the reset differs: $(grep '^round' "$log" | tr '\n' ' ')"
  run_preload "cuMemGetInfo and cuDeviceTotalMem around chunked allocations" '^info ' meminfo \
    "$B/tests/preload/probe" meminfo 64M 256M
  # legacy IPC of chunked memory between two tiermem processes (test_preload_ipc.sh on simcuda)
  local ipc_dir exporter importer ipc_rc
  ipc_dir=$(mktemp -d)
  under_tm "$B/tests/preload/ipc_peer" export 64M "$ipc_dir" >"$LOGS/preload-ipc-export.log" 2>&1 &
  exporter=$!
  under_tm "$B/tests/preload/ipc_peer" import "$ipc_dir" >"$LOGS/preload-ipc-import.log" 2>&1 &
  importer=$!
  for _ in $(seq 600); do
    { [ -e "$ipc_dir/imported" ] || ! kill -0 "$importer" 2>/dev/null; } && break
    sleep 0.1
  done
  touch "$ipc_dir/close"; wait "$importer"; ipc_rc=$?
  touch "$ipc_dir/finish"; wait "$exporter"; ipc_rc="$ipc_rc $?"
  if [ "$ipc_rc" = "0 0" ] && grep -q "^exporter: importer's bytes ok" "$LOGS/preload-ipc-export.log" &&
     grep -q "^importer: exporter's bytes ok" "$LOGS/preload-ipc-import.log"; then
    sub_ok "legacy CUDA IPC of chunked memory between two tiermem processes, both ways"
  else
    sub_bad "legacy CUDA IPC between two tiermem processes (exit statuses $ipc_rc)"
    show_log "$LOGS/preload-ipc-export.log" 10; show_log "$LOGS/preload-ipc-import.log" 10
  fi
  rm -rf "$ipc_dir"
  end_step
}

# ======================================================================================
# cudart: the CUDA runtime programs pass on the device, static and shared, with and
# without libtiermem.so. The programs are every tests/cudart/NAME.cu; their cases are the
# lines of tests/cudart/cases.txt (CUDART_CASES overrides it, for make test's planted
# check). On a GPU they run with CUDART_TEST_DEVICE=gpu, so a kernel launch must succeed.
CUDART_CASES=${CUDART_CASES:-$ROOT/tests/cudart/cases.txt}
# run_cudart LABEL INTERPOSER PROGRAM ARGS...: one check for one run of a program.
run_cudart() {
  local label=$1 interposer=$2 log=$LOGS/cudart.log; shift 2
  local env=()
  if [ "$SIM" = 1 ]; then env+=(LD_LIBRARY_PATH="$DRIVER_DIR" SIMCUDA_DEVICES=2 SIMCUDA_MEM=$((256 << 20)))
  else  # cuBLAS (cudart_cublas) from the toolkit, after whatever the machine sets
    env+=(CUDART_TEST_DEVICE=gpu LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${CUDA_HOME:-/usr/local/cuda}/lib64")
  fi
  # the physical view: free memory is what HBM has left, so an allocation shows (test_cudart.sh)
  if [ "$interposer" = tiermem ]; then env+=(LD_PRELOAD="$(tm_preload)" TIERMEM_MEMINFO=physical)
  elif [ -n "${TM_SAN_PRELOAD:-}" ]; then env+=(LD_PRELOAD="$TM_SAN_PRELOAD"); fi  # an instrumented simcuda
  env "${env[@]}" timeout 120 "$@" >"$log.out" 2>"$log.err"
  local rc=$? seen plan bad
  seen=$(grep -cE '^(not )?ok - ' "$log.out")
  plan=$(sed -n 's/^1\.\.//p' "$log.out")
  bad=$(grep -c '^not ok - ' "$log.out")
  if [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$plan" = "$seen" ] && [ "$seen" -gt 0 ]; then
    sub_ok "$label: $seen checks passed"
  else
    sub_bad "$label: $bad of $seen checks failed, plan ${plan:-none}, exit status $rc"
    grep -A1 '^not ok - ' "$log.out" | head -n 20 | sed 's/^/    #   /'
    tail -n 8 "$log.err" | sed 's/^/    #   stderr: /'
  fi
}
step_cudart() {
  begin_step "cudart: the CUDA runtime programs, static and shared, with and without libtiermem.so"
  local devices mem names=() name
  if [ "$SIM" = 1 ]; then devices=2 mem=$((256 << 20))
  else devices=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') mem=0; fi
  for name in tests/cudart/*.cu; do names+=("$(basename "$name" .cu)"); done
  local cases
  cases=$(grep -vE '^[[:space:]]*(#|$)' "$CUDART_CASES" 2>/dev/null)
  for name in "${names[@]}"; do
    grep -q "^$name " <<<"$cases" || sub_bad "tests/cudart/$name.cu has no case in ${CUDART_CASES#$ROOT/}"
  done
  local prog args build interposer line
  while read -r prog args; do
    [ -n "$prog" ] || continue
    args=${args//@DEVICES@/$devices}
    args=${args//@MEM@/$mem}
    if [ ! -f "tests/cudart/$prog.cu" ]; then
      sub_bad "${CUDART_CASES#$ROOT/} names $prog, which is no tests/cudart/$prog.cu"; continue
    fi
    for build in static shared; do
      if [ ! -x "$B/tests/cudart/${prog}_$build" ]; then
        sub_bad "$prog $args ($build): ${B#$ROOT/}/tests/cudart/${prog}_$build is not built"; continue
      fi
      for interposer in none tiermem; do
        # shellcheck disable=SC2086 # the case's arguments split as the program takes them
        run_cudart "$prog $args ($build, interposer $interposer)" $interposer "$B/tests/cudart/${prog}_$build" $args
      done
    done
  done <<<"$cases"
  end_step
}

# ======================================================================================
# calibration: simcuda's prediction on its h200-pcie5 profile against what the GPU
# measures, for the same operations timed by the same program (tests/gpu/calibrate.c):
# pinned copies both ways (2 MiB to 1 GiB), a kernel reading pinned and HOST_NUMA memory in
# place, and cuMemCreate/cuMemMap/cuMemSetAccess/cuMemUnmap per 2 MiB chunk. "predicted" is
# simcuda's simulated time (SIMCUDA_HOST_TIME=0: only what it charges counts), so whatever
# simcuda comes to charge (VMM calls) shows up here unchanged; "measured" is the GPU's
# (with --sim: simcuda again with host time on, which checks the plumbing).
#
# The profile's values live in SIM_PROFILE_PARAMS in tools/simcuda/sim_time.h (one row per
# parameter: h200-pcie5, gh200-c2c, h100-pcie5), their sources in tools/simcuda/sim_profile.c
# and docs/simcuda-profiles.md. The step prints the values it read and, on a
# GPU, what the measurements imply for them: update those three places together.
PROFILE_HEADER=tools/simcuda/sim_time.h
profile_value() { # the h200-pcie5 column of one SIM_PROFILE_PARAMS row
  sed -n "s/.*X([a-z_0-9]*, \"$1\", \([0-9.]*\),.*/\1/p" "$PROFILE_HEADER"
}
step_calibration() {
  local cal=$B/tests/gpu/calibrate sim_mod=$B/tests/gpu/calibrate_kernels.so gpu_mod=$B/tests/gpu/calibrate_kernels.fatbin
  if [ ! -x "$cal" ] || [ ! -f "$sim_mod" ]; then
    begin_step "calibration"; sub_bad "${cal#$ROOT/} or its simcuda module is not built"; end_step; return
  fi
  begin_step "calibration: simcuda's h200-pcie5 prediction against the $([ "$SIM" = 1 ] && echo "simulation (--sim)" || echo GPU)"
  local sizes=() pred=$LOGS/calibrate-predicted.txt meas=$LOGS/calibrate-measured.txt rc
  [ "$QUICK" = 1 ] && sizes=(--max-size $((32 << 20)))
  # simcuda's clocks are deterministic: two repetitions a figure suffice
  env SIMCUDA_PROFILE=h200-pcie5 SIMCUDA_HOST_TIME=0 SIMCUDA_MEM=$((4 << 30)) timeout 180 \
    "$cal" "$sim_mod" --reps 2 --chunks 64 "${sizes[@]}" >"$pred" 2>"$pred.err"
  rc=$?
  [ "$rc" -eq 0 ] && grep -q '^calib ' "$pred" && sub_ok "simcuda's prediction: $(grep -c '^calib ' "$pred") figures" ||
    { sub_bad "calibrate on simcuda: exit status $rc"; show_log "$pred.err" 10; }
  if [ "$SIM" = 1 ]; then
    env SIMCUDA_ASYNC=1 SIMCUDA_MEM=$((4 << 30)) timeout 180 "$cal" "$sim_mod" --reps 2 --chunks 64 "${sizes[@]}" \
      >"$meas" 2>"$meas.err"
  else
    env LD_LIBRARY_PATH="$DRIVER_DIR" timeout 240 "$cal" "$gpu_mod" "${sizes[@]}" >"$meas" 2>"$meas.err"
  fi
  rc=$?
  grep '^# calibrate: device' "$meas" | sed 's/^# /    # measured on: /'
  [ "$rc" -eq 0 ] && grep -q '^calib ' "$meas" && sub_ok "measured: $(grep -c '^calib ' "$meas") figures, every kernel's sum right" ||
    { sub_bad "calibrate on the $([ "$SIM" = 1 ] && echo simulation || echo GPU): exit status $rc"; show_log "$meas.err" 10; }
  if [ "$SIM" = 0 ] && grep -q 'simcuda' "$meas"; then sub_bad "the measured run loaded simcuda, not the GPU's driver"; fi
  grep '^skip ' "$meas" | while read -r _ op why; do echo "    # $op not measured: $why"; done

  # The profile's values, and a check that simcuda charges what they say: a copy queued
  # behind another (calibrate times back-to-back copies after a warm-up one) is bytes /
  # H2D_GBPS (D2H_GBPS), its COPY_US set-up overlapped by the copy before it; an in-place
  # read LAUNCH_US + HOST_LATENCY_US + bytes / ZERO_COPY_GBPS.
  # A VMM call of one 2 MiB chunk is its per-call value plus its per-2 MiB value.
  local h2d d2h zc lat cu lu vc vm va vu
  h2d=$(profile_value H2D_GBPS) d2h=$(profile_value D2H_GBPS) zc=$(profile_value ZERO_COPY_GBPS)
  lat=$(profile_value HOST_LATENCY_US) cu=$(profile_value COPY_US) lu=$(profile_value LAUNCH_US)
  vc=$(awk "BEGIN { print $(profile_value CREATE_US) + $(profile_value CREATE_2M_US) }")
  vm=$(awk "BEGIN { print $(profile_value MAP_US) + $(profile_value MAP_2M_US) }")
  va=$(awk "BEGIN { print $(profile_value SET_ACCESS_US) + $(profile_value SET_ACCESS_2M_US) }")
  vu=$(awk "BEGIN { print $(profile_value UNMAP_US) + $(profile_value UNMAP_2M_US) }")
  note "profile h200-pcie5 from $PROFILE_HEADER (SIM_PROFILE_PARAMS): H2D_GBPS $h2d, D2H_GBPS $d2h, ZERO_COPY_GBPS $zc, HOST_LATENCY_US $lat, COPY_US $cu, LAUNCH_US $lu; per 2 MiB chunk cuMemCreate $vc us, cuMemMap $vm, cuMemSetAccess $va, cuMemUnmap $vu"
  local off
  off=$(awk -v h2d="$h2d" -v d2h="$d2h" -v zc="$zc" -v lat="$lat" -v cu="$cu" -v lu="$lu" \
            -v vc="$vc" -v vm="$vm" -v va="$va" -v vu="$vu" '
    $1 == "calib" {
      want = -1
      if ($2 == "htod_pinned") want = $3 / (h2d * 1000)
      if ($2 == "dtoh_pinned") want = $3 / (d2h * 1000)
      if ($2 ~ /^read_/) want = lu + lat + $3 / (zc * 1000)
      if ($2 == "vmm_create") want = vc
      if ($2 == "vmm_map") want = vm
      if ($2 == "vmm_set_access") want = va
      if ($2 == "vmm_unmap") want = vu
      if (want > 0 && ($5 - want > 0.005 * want || want - $5 > 0.005 * want)) printf "%s %s: %s, profile %.3f; ", $2, $3, $5, want
    }' "$pred")
  [ -z "$off" ] && grep -q '^calib htod' "$pred" &&
    sub_ok "simcuda's copies, in-place reads and VMM calls cost what the profile's values say (within 0.5%)" ||
    sub_bad "simcuda's figures differ from the profile's values: ${off:-no figures}"

  # The table: one line per operation and size, measured / predicted.
  echo "    #"
  awk '
    function size(b) { return b >= 1073741824 ? sprintf("%d GiB", b / 1073741824) : sprintf("%d MiB", b / 1048576) }
    FNR == 1 { file++ }
    $1 == "calib" { key = $2 " " $3; if (file == 1) { p[key] = $5; order[++n] = key } else m[key] = $5 }
    END {
      printf "    # %-16s %8s %14s %14s %10s\n", "operation", "bytes", "predicted us", "measured us", "meas/pred"
      for (i = 1; i <= n; i++) {
        k = order[i]; split(k, f, " ")
        mv = (k in m) ? sprintf("%14.3f", m[k]) : sprintf("%14s", "-")
        if (!(k in m)) r = "-"
        else if (p[k] == 0) r = "not charged"
        else r = sprintf("%.3f", m[k] / p[k])
        printf "    # %-16s %8s %14.3f %s %10s\n", f[1], size(f[2]), p[k], mv, r
      }
    }' "$pred" "$meas"
  echo "    #"
  # On a GPU: the values the measurements imply (the largest size of each, and the 2 MiB
  # copy for what a queued copy's set-up leaves unoverlapped, which simcuda charges as 0),
  # to put into SIM_PROFILE_PARAMS.
  if [ "$SIM" = 0 ]; then
    awk -v lu="$lu" -v lat="$lat" '
      $1 == "calib" { if ($3 >= big[$2]) { big[$2] = $3; t[$2] = $5 } if ($3 == 2097152) small[$2] = $5 }
      END {
        if ("htod_pinned" in t) printf "    # implied: H2D_GBPS %.1f", big["htod_pinned"] / (t["htod_pinned"] * 1000)
        if ("dtoh_pinned" in t) printf ", D2H_GBPS %.1f", big["dtoh_pinned"] / (t["dtoh_pinned"] * 1000)
        if ("read_pinned" in t) printf ", ZERO_COPY_GBPS %.1f", big["read_pinned"] / ((t["read_pinned"] - lu - lat) * 1000)
        if ("htod_pinned" in small && "htod_pinned" in t)
          printf ", a queued copy'"'"'s set-up left unoverlapped %.2f us", small["htod_pinned"] - 2097152 * t["htod_pinned"] / big["htod_pinned"]
        printf "\n"
        for (op in t) if (op ~ /^vmm_/) printf "    # %s: %.2f us per 2 MiB chunk\n", op, t[op]
      }' "$meas"
  fi
  end_step
}

# ======================================================================================
# torch: PyTorch runs unmodified under libtiermem.so with 60% of an 8 GB model in HBM and
# gives the uncapped run's tokens, beside accelerate's offload (tests/gpu/torch_tiering.py).
step_torch() {
  begin_step "torch: PyTorch under libtiermem.so"
  local py=tests/gpu/torch_tiering.py python=${PYTHON:-python3}
  # (the byte code goes to the logs, not beside the script)
  sub_check "$py compiles (python3 -m py_compile)" env PYTHONPYCACHEPREFIX="$LOGS/pycache" "$python" -m py_compile "$py"
  # libtiermem.so's start-up and exit lines, from a run of it that spills, for the dry run
  # to read as the real runs read them.
  local tmlog=$LOGS/torch-tiermem-lines.log dry=(--dry-run)
  if [ "$SIM" = 1 ]; then
    TIERMEM_LOG=info TIERMEM_HBM_LIMIT=32M SIMCUDA_MEM=64M under_tm "$B/tests/preload/probe" meminfo 64M 256M \
      >/dev/null 2>"$tmlog" && dry+=(--tiermem-log "$tmlog")
  fi
  "$python" "$py" "${dry[@]}" >"$LOGS/torch-dry-run.log" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] && sub_ok "dry run without torch: the model's size, the limit, the runs' environments ($(grep -c '^ok - ' "$LOGS/torch-dry-run.log") checks)" ||
    { sub_bad "dry run (exit status $rc)"; show_log "$LOGS/torch-dry-run.log" 15; }
  grep -E '^# (model|[a-z]+ +(decode|accelerate|graph) +[A-Z(])' "$LOGS/torch-dry-run.log" | indent
  if [ "$SIM" = 1 ] || ! "$python" -c 'import torch, transformers, accelerate, safetensors' 2>/dev/null; then
    local why="torch not importable here"
    [ "$SIM" = 0 ] && why="torch, transformers, accelerate or safetensors is not importable by $python ($("$python" -c 'import torch, transformers, accelerate, safetensors' 2>&1 | tail -n 1))"
    note "the PyTorch runs need torch, transformers, accelerate and safetensors: $why"
    end_step_skip "$why"
    return
  fi
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/tiermem-torch.XXXXXX")
  # 330 s for the runs (they take about 4 minutes on an H200); the timeout is a backstop
  timeout 360 "$python" "$py" --libtiermem "$LIBTM" --work "$work" --deadline 330 >"$LOGS/torch.log" 2>&1
  rc=$?
  local line
  while IFS= read -r line; do
    case $line in
      "ok - "*) sub_ok "${line#ok - }" ;;
      "not ok - "*) sub_bad "${line#not ok - }" ;;
      "#"*) echo "    $line" ;;
    esac
  done <"$LOGS/torch.log"
  [ "$rc" -eq 0 ] || sub_bad "torch_tiering.py exited with status $rc"
  cp "$work"/*.err "$LOGS/" 2>/dev/null
  rm -rf "$work"
  end_step
}

# ======================================================================================
step_machine
wanted guard && step_guard
if [ -n "$PACKAGE" ]; then
  step_package
  if [ "$SIM" = 0 ]; then
    echo
    echo "# carry ${PACKAGE#$ROOT/} ($(du -sh "$PACKAGE" | cut -f1)) to a copy of this tree on the GPU machine, then run:"
    echo "#     tests/gpu/run.sh --from ${PACKAGE#$ROOT/}"
    finish
  fi
fi
wanted build && step_build
wanted kernels && step_kernels
wanted conformance && step_conformance
wanted engine && step_engine
wanted models && step_models
wanted preload && step_preload
wanted cudart && step_cudart
wanted calibration && step_calibration
wanted torch && step_torch
finish
