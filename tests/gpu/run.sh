#!/usr/bin/env bash
# tests/gpu/run.sh — the checks that need a real GPU, in one script (under 5 minutes on
# an H200). Run it from anywhere in the repository on a machine with an NVIDIA GPU, its
# driver and nvcc:
#
#     tests/gpu/run.sh            the GPU checks
#     tests/gpu/run.sh --sim      the same steps on simcuda, here: checks the script, the
#                                 build and the C side; the device side runs the C twins,
#                                 then the CUDA kernels compiled for the CPU (cuda_emu.h)
#
# Steps, each reported as one TAP line (sub-results indented under it):
#   1. the machine: a GPU (nvidia-smi) and nvcc
#   2. build with nvcc: the twin library, the fatbin (sm_80 + sm_90), kernel_check
#   3. every CUDA kernel against its C twin on random inputs (tests/gpu/kernel_check.c
#      states each tolerance and why)
#   4. tests/gpu/conformance.sh, when it exists (with --sim: its build only)
#   5. tiermem-llm on stories260K, greedy, --kv-dtype f32: the reference prompt ids,
#      32 generated ids, text and first-step logits of ../shared/models/README.md
#   6. a generated Q4_K_M-style model (Q4_K and Q6_K tensors) and a mixture of experts on
#      the device against the same models on simcuda's C twins
#   7. under libtiermem.so on the same driver: tiermem-llm gives the same ids with every
#      allocation chunked, and the preload test programs that need no test kernel
#      (stream-ordered free, CUDA graph capture, context reset, memory info) pass
#
# Environment: O (build folder, default build), NVCC (default: $CUDA_HOME/bin/nvcc or
# nvcc on PATH), TM_SHARED (folder holding models/, default ../shared beside the
# repository, else shared/ inside it).
# Logs of each step: $O/gpu-logs/. The last line is "N passed, N failed, N skipped".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
TM_SHARED=${TM_SHARED:-$ROOT/../shared}
LOGS=$B/gpu-logs
SIM=0
[ "${1:-}" = --sim ] && SIM=1
mkdir -p "$LOGS"
JOBS=$(nproc 2>/dev/null || echo 2)
[ "$SIM" = 1 ] && JOBS=2   # a shared development machine
# On a GPU machine the compiler may be newer than the project's and warn about new
# things: warnings stay warnings there (this script checks kernels, not warnings).
WNOERR=-Wno-error
[ "$SIM" = 1 ] && WNOERR=

n=0 passed=0 failed=0 skipped=0
pass() { n=$((n + 1)); passed=$((passed + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); skipped=$((skipped + 1)); echo "ok $n - $1 # SKIP $2"; }
step() { echo; echo "# == $* =="; }
indent() { sed 's/^/    /'; }
show_log() { echo "#   last lines of $1:"; tail -n "${2:-25}" "$1" | sed 's/^/#   /'; }
start=$(date +%s)

# --------------------------------------------------------------------------------------
step "1. machine"
if [ "$SIM" = 1 ]; then
  pass "simulated run: the device side is simcuda ($O/lib/simcuda), not a GPU"
elif command -v nvidia-smi >/dev/null && nvidia-smi -L >"$LOGS/gpu.txt" 2>&1 && grep -q GPU "$LOGS/gpu.txt"; then
  pass "GPU present: $(head -1 "$LOGS/gpu.txt")"
else
  fail "no NVIDIA GPU visible (nvidia-smi -L); run with --sim to check the rest here"
  echo "1..$n"
  echo "$passed passed, $failed failed, $skipped skipped"
  exit 1
fi
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  for c in "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" "$(command -v nvcc 2>/dev/null)"; do
    [ -n "$c" ] && [ -x "$c" ] && { NVCC=$c; break; }
  done
fi
if [ -n "$NVCC" ] && [ -x "$NVCC" ]; then
  pass "nvcc: $NVCC ($("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
else
  fail "nvcc not found (set NVCC or CUDA_HOME): the CUDA kernels cannot be built"
fi
CUDA_HOME_USED=${CUDA_HOME:-$(dirname "$(dirname "${NVCC:-/usr/local/cuda/bin/nvcc}")")}

# --------------------------------------------------------------------------------------
step "2. build with nvcc"
FATBIN=$B/kernels/tiermem-kernels.fatbin
TWINS=$B/lib/libtiermem-kernels.so
CHECK=$B/tests/gpu/kernel_check
targets=("$TWINS" "$FATBIN" "$B/obj/kernels/fatbin_embed.o" "$CHECK")
EMU=$B/tests/kernels/libtiermem-kernels-cuda-emu.so
[ "$SIM" = 1 ] && targets+=("$B/lib/simcuda/libcuda.so.1" "$EMU")
if make -j"$JOBS" O="$O" NVCC="${NVCC:-/nonexistent/nvcc}" CUDA_HOME="$CUDA_HOME_USED" \
     EXTRA_CFLAGS="$WNOERR" "${targets[@]}" >"$LOGS/build.log" 2>&1 && [ -s "$FATBIN" ]; then
  pass "built the twin library, the fatbin ($(stat -c %s "$FATBIN") bytes) and kernel_check"
  cuobjdump=$(dirname "${NVCC:-/x/x}")/cuobjdump
  if [ -x "$cuobjdump" ]; then
    "$cuobjdump" --list-elf --list-ptx "$FATBIN" >"$LOGS/fatbin.txt" 2>&1
    if grep -q sm_80 "$LOGS/fatbin.txt" && grep -q sm_90 "$LOGS/fatbin.txt"; then
      pass "fatbin holds sm_80 and sm_90 code"
    else
      fail "fatbin lacks sm_80 or sm_90 code"; show_log "$LOGS/fatbin.txt"
    fi
  else
    skip "fatbin architectures" "no cuobjdump beside nvcc"
  fi
else
  fail "build (make ${targets[*]#$ROOT/})"; show_log "$LOGS/build.log"
fi

# --------------------------------------------------------------------------------------
step "3. CUDA kernels against their C twins"
# kernel_check prints one TAP line per kernel case (indented here); $1 names the run.
run_kernel_check() {
  local what=$1 log=$2; shift 2
  timeout 240 "$@" >"$log" 2>&1
  local rc=$?
  indent <"$log"
  local k_ok k_bad
  k_ok=$(grep -c '^ok ' "$log")
  k_bad=$(grep -c '^not ok ' "$log")
  if [ "$rc" -eq 0 ] && [ "$k_bad" -eq 0 ] && [ "$k_ok" -gt 0 ]; then
    pass "$what: $k_ok checks passed"
  else
    fail "$what: $k_ok passed, $k_bad failed, exit status $rc"
  fi
}
if [ -x "$CHECK" ] && [ -f "$TWINS" ]; then
  if [ "$SIM" = 1 ]; then
    # The device side is the twins themselves (every difference must be 0), then the
    # CUDA kernels compiled for the CPU (tests/kernels/cuda_emu.h).
    LD_LIBRARY_PATH=$B/lib/simcuda run_kernel_check "kernel_check, twins on simcuda" \
      "$LOGS/kernel_check.log" "$CHECK" "$TWINS" --module "$TWINS"
    LD_LIBRARY_PATH=$B/lib/simcuda run_kernel_check "kernel_check, CUDA kernels emulated on the CPU" \
      "$LOGS/kernel_check_emu.log" "$CHECK" "$TWINS" --module "$EMU" --small
  else
    run_kernel_check "kernel_check, CUDA kernels from the embedded fatbin on the GPU" \
      "$LOGS/kernel_check.log" "$CHECK" "$TWINS"
  fi
else
  fail "kernel_check not built (step 2)"
fi

# --------------------------------------------------------------------------------------
step "4. conformance"
# Its exit status 77 means "no GPU to run on": expected with --sim (only its build is
# checked then), a failure on a GPU machine.
if [ -f tests/gpu/conformance.sh ]; then
  conf_args=()
  [ "$SIM" = 1 ] && conf_args=(--build-only)
  O=$O TM_SHARED=$TM_SHARED NVCC=${NVCC:-} CUDA_HOME=$CUDA_HOME_USED timeout 150 \
    bash tests/gpu/conformance.sh "${conf_args[@]}" >"$LOGS/conformance.log" 2>&1
  rc=$?
  indent <"$LOGS/conformance.log"
  if [ "$rc" -eq 0 ] && ! grep -q '^not ok' "$LOGS/conformance.log"; then
    pass "tests/gpu/conformance.sh ${conf_args[*]}"
  elif [ "$rc" -eq 77 ]; then
    fail "tests/gpu/conformance.sh found no GPU to run on (exit status 77)"
  else
    fail "tests/gpu/conformance.sh ${conf_args[*]} (exit status $rc)"
  fi
else
  skip "tests/gpu/conformance.sh" "not in this tree yet"
fi

# --------------------------------------------------------------------------------------
step "5. tiermem-llm on stories260K (greedy, --kv-dtype f32)"
LLM=$B/bin/tiermem-llm
want="432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 385 328 432 358 394"
MODEL=$TM_SHARED/models/stories260K.gguf
# A machine that gets only a copy of the repository may hold the models in shared/ inside it.
[ -f "$MODEL" ] || [ ! -f "$ROOT/shared/models/stories260K.gguf" ] || MODEL=$ROOT/shared/models/stories260K.gguf
if [ -f engine/module.mk ]; then
  make -j"$JOBS" O="$O" NVCC="${NVCC:-/nonexistent/nvcc}" CUDA_HOME="$CUDA_HOME_USED" \
    EXTRA_CFLAGS="$WNOERR" "$LLM" \
    >"$LOGS/engine-build.log" 2>&1 || show_log "$LOGS/engine-build.log" 15
fi
if [ ! -x "$LLM" ]; then
  skip "tiermem-llm on stories260K" "the engine binary $O/bin/tiermem-llm does not exist (not built; see $O/gpu-logs/engine-build.log)"
elif [ ! -f "$MODEL" ]; then
  skip "tiermem-llm on stories260K" "model not found at $MODEL (set TM_SHARED to a folder holding models/stories260K.gguf)"
else
  run_llm() {
    if [ "$SIM" = 1 ]; then LD_LIBRARY_PATH=$B/lib/simcuda timeout 60 "$LLM" "$@"
    else timeout 60 "$LLM" "$@"; fi
  }
  run_llm -m "$MODEL" -p "Once upon a time" -n 32 --kv-dtype f32 -v \
    --dump-logits "$LOGS/llm-f32.logits" >"$LOGS/llm-f32.out" 2>"$LOGS/llm-f32.err"
  rc=$?
  grep -E '^tiermem-llm: (driver|kernels|summary)' "$LOGS/llm-f32.err" | indent
  if [ "$rc" -ne 0 ]; then
    fail "tiermem-llm exited with status $rc"; show_log "$LOGS/llm-f32.err"
  else
    pass "tiermem-llm ran (exit status 0)"
    if [ "$SIM" = 1 ]; then want_kernels='libtiermem-kernels.so'; else want_kernels='embedded fatbin'; fi
    if grep -q "^tiermem-llm: kernels from .*$want_kernels" "$LOGS/llm-f32.err" &&
       { [ "$SIM" = 1 ] || ! grep -q 'using the emulated driver' "$LOGS/llm-f32.err"; }; then
      pass "kernels from the $want_kernels, on the $([ "$SIM" = 1 ] && echo emulated || echo real) driver"
    else
      fail "expected kernels from the $want_kernels"
    fi
    got=$(sed -n 's/^tiermem-llm: seq 0 prompt ids: //p' "$LOGS/llm-f32.err")
    [ "$got" = "1 403 407 261 378" ] && pass "prompt ids 1 403 407 261 378" \
      || fail "prompt ids: got '$got', want '1 403 407 261 378'"
    got=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-f32.err")
    [ "$got" = "$want" ] && pass "32 generated ids equal the reference" \
      || { fail "generated ids differ from the reference"; echo "#   got:  $got"; echo "#   want: $want"; }
    text="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw"
    [ "$(cat "$LOGS/llm-f32.out")" = "$text" ] && pass "streamed text equals the reference" \
      || { fail "streamed text differs"; echo "#   got: $(cat "$LOGS/llm-f32.out")"; }
    # First-step logits: field k+3 of the first line is id k (the engine's dump format).
    if [ -s "$LOGS/llm-f32.logits" ]; then
      diff=$(awk 'NR == 1 { split("432 17.799397 383 14.281260 322 9.709650 353 9.587288 323 9.134243", r, " ")
                 m = 0; for (i = 1; i < 10; i += 2) { d = $(r[i] + 3) - r[i + 1]; if (d < 0) d = -d; if (d > m) m = d }
                 printf "%.3g", m }' "$LOGS/llm-f32.logits")
      awk -v d="$diff" 'BEGIN { exit !(d <= 1e-4) }' && pass "first-step logits within 1e-4 of the reference (largest difference $diff)" \
        || fail "first-step logits: largest difference $diff from the reference (bound 1e-4)"
    else
      fail "no logits dumped (--dump-logits)"
    fi
    # fp8 KV on the device: it runs and agrees with f32 on the first token (the engine's
    # own tests bound the rest); informational lines show the agreement.
    for d in fp8_e4m3 fp8_e5m2; do
      run_llm -m "$MODEL" -p "Once upon a time" -n 32 --kv-dtype $d -v >"$LOGS/llm-$d.out" 2>"$LOGS/llm-$d.err"
      rc=$?
      ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-$d.err")
      same=$(paste -d' ' <(tr ' ' '\n' <<<"$want") <(tr ' ' '\n' <<<"$ids") | awk '$1 == $2 { n++ } END { print n + 0 }')
      if [ "$rc" -eq 0 ] && [ "${ids%% *}" = "432" ]; then
        pass "--kv-dtype $d runs; first token agrees with f32 ($same of 32 greedy ids agree)"
      else
        fail "--kv-dtype $d: exit status $rc, ids '$ids'"; show_log "$LOGS/llm-$d.err" 10
      fi
    done
  fi
fi

# With --sim: the engine once more, its kernels now the CUDA ones compiled for the CPU
# (tests/kernels/cuda_emu.h; the engine finds them as its host-kernel library beside a
# copy of its binary). Slow, so 8 tokens: the reference's first 8 ids.
if [ "$SIM" = 1 ] && [ -x "$LLM" ] && [ -f "$MODEL" ] && [ -f "$EMU" ]; then
  step "5b. tiermem-llm on the CUDA kernels emulated on the CPU"
  emu_dir=$(mktemp -d)
  mkdir -p "$emu_dir/bin" "$emu_dir/lib"
  cp "$LLM" "$emu_dir/bin/" && cp "$EMU" "$emu_dir/lib/libtiermem-kernels.so"
  LD_LIBRARY_PATH=$B/lib/simcuda timeout 300 "$emu_dir/bin/tiermem-llm" -m "$MODEL" \
    -p "Once upon a time" -n 8 --kv-dtype f32 --kv-blocks 64 -v >"$LOGS/llm-emu.out" 2>"$LOGS/llm-emu.err"
  rc=$?
  rm -rf "$emu_dir"
  grep -E '^tiermem-llm: (kernels|summary)' "$LOGS/llm-emu.err" | indent
  got=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-emu.err")
  if [ "$rc" -eq 0 ] && [ "$got" = "432 383 286 261 376 298 315 421" ]; then
    pass "8 generated ids equal the reference with the emulated CUDA kernels"
  else
    fail "emulated CUDA kernels: exit status $rc, ids '$got', want '432 383 286 261 376 298 315 421'"
    show_log "$LOGS/llm-emu.err" 10
  fi
fi

# --------------------------------------------------------------------------------------
step "6. a Q4_K_M-style file and a mixture of experts on the device against the twins"
# The same generated model on the device and on simcuda with the C twins: first-step
# logits within 1e-3 of the largest logit (different summation orders, 4 layers), the
# same first token, and how many of 16 greedy ids agree (informational: a random model's
# near-ties may part later).
MK=$B/bin/tiermem-mkmodel
make -j"$JOBS" O="$O" NVCC="${NVCC:-/nonexistent/nvcc}" CUDA_HOME="$CUDA_HOME_USED" \
  EXTRA_CFLAGS="$WNOERR" "$MK" "$B/lib/simcuda/libcuda.so.1" >"$LOGS/mkmodel-build.log" 2>&1 ||
  show_log "$LOGS/mkmodel-build.log" 15
if [ ! -x "$LLM" ] || [ ! -x "$MK" ]; then
  skip "Q4_K_M-style model" "tiermem-llm or tiermem-mkmodel not built (see $O/gpu-logs/)"
else
  run_q() { # $1: log name; the rest: environment
    local name=$1; shift
    env "$@" timeout 120 "$LLM" -m "$QM" -p "once upon a time the little girl" -n 16 --kv-dtype f32 \
      --kv-blocks 64 -v --dump-logits "$LOGS/$name.logits" >/dev/null 2>"$LOGS/$name.err"
  }
  for what in q4_k_m moe; do
    QM=$LOGS/$what.gguf
    if [ $what = q4_k_m ]; then
      "$MK" -o "$QM" --type q4_k_m --layers 4 --dim 512 --heads 8 --kv-heads 2 --vocab 2048 --seed 3 >/dev/null
    else
      "$MK" -o "$QM" --type q4_k_m --experts 8 --experts-used 2 --expert-skew 4 --layers 2 --dim 512 --heads 8 \
        --kv-heads 2 --ffn 512 --vocab 2048 --seed 3 >/dev/null
    fi
    if [ "$SIM" = 1 ]; then run_q $what-dev LD_LIBRARY_PATH="$B/lib/simcuda"; else run_q $what-dev; fi
    rc_dev=$?
    run_q $what-twin LD_LIBRARY_PATH="$B/lib/simcuda"
    rc_twin=$?
    if [ $rc_dev -ne 0 ] || [ $rc_twin -ne 0 ]; then
      fail "$what model: exit status $rc_dev (device), $rc_twin (twins)"
      show_log "$LOGS/$what-dev.err" 10
      continue
    fi
    diff=$(paste -d' ' <(head -1 "$LOGS/$what-dev.logits") <(head -1 "$LOGS/$what-twin.logits") |
      awk '{ h = NF / 2; m = 0; d = 0
             for (k = 3; k <= h; k++) { a = $k < 0 ? -$k : $k; if (a > m) m = a
                                         e = $k - $(k + h); if (e < 0) e = -e; if (e > d) d = e }
             printf "%.3g %.3g", d, m }')
    awk -v d="${diff% *}" -v m="${diff#* }" 'BEGIN { exit !(d <= 1e-3 * m) }' &&
      pass "$what first-step logits: device and twins within 1e-3 of the largest (difference ${diff% *}, largest ${diff#* })" ||
      fail "$what first-step logits differ by ${diff% *} (largest logit ${diff#* })"
    dev_ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/$what-dev.err")
    twin_ids=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/$what-twin.err")
    same=$(paste -d' ' <(tr ' ' '\n' <<<"$dev_ids") <(tr ' ' '\n' <<<"$twin_ids") | awk '$1 == $2 { n++ } END { print n + 0 }')
    [ -n "$dev_ids" ] && [ "${dev_ids%% *}" = "${twin_ids%% *}" ] &&
      pass "$what model: the same first token on the device and the twins ($same of 16 greedy ids agree)" ||
      fail "$what model: first tokens differ: device '$dev_ids', twins '$twin_ids'"
    grep 'expert use' "$LOGS/$what-dev.err" | indent
  done
fi

# --------------------------------------------------------------------------------------
step "7. under libtiermem.so"
LIBTM=$B/lib/libtiermem.so
SERVING=$B/tests/preload/serving
make -j"$JOBS" O="$O" NVCC="${NVCC:-/nonexistent/nvcc}" CUDA_HOME="$CUDA_HOME_USED" EXTRA_CFLAGS="$WNOERR" \
  "$LIBTM" "$SERVING" "$B/tests/preload/probe" "$B/tests/preload/ipc_peer" >"$LOGS/preload-build.log" 2>&1 ||
  show_log "$LOGS/preload-build.log" 15
# The test programs carry a RUNPATH to simcuda: on a GPU, LD_LIBRARY_PATH (searched first)
# points them, and the interposer, at the real driver.
if [ "$SIM" = 1 ]; then
  DRIVER_DIR=$B/lib/simcuda
else
  DRIVER_DIR=$(ldconfig -p 2>/dev/null | sed -n 's|.*libcuda\.so\.1 (libc6[^)]*) => \(.*\)/libcuda\.so\.1$|\1|p' | head -n 1)
fi
under_tm() { LD_LIBRARY_PATH=$DRIVER_DIR SIMCUDA_ASYNC=1 LD_PRELOAD=$LIBTM timeout 120 "$@"; }
if [ ! -f "$LIBTM" ] || [ ! -x "$SERVING" ]; then
  fail "libtiermem.so and the preload test programs were not built (see $O/gpu-logs/preload-build.log)"
elif [ -z "$DRIVER_DIR" ]; then
  fail "the real libcuda.so.1 is not in the dynamic linker's cache (ldconfig -p)"
else
  if [ -x "$LLM" ] && [ -f "$MODEL" ]; then
    # every allocation from 1 byte up chunked: the engine's buffers all go through the VMM path
    TIERMEM_MIN_TIERED=1 TIERMEM_LOG=info under_tm "$LLM" -m "$MODEL" -p "Once upon a time" -n 32 \
      --kv-dtype f32 -v >"$LOGS/llm-tiermem.out" 2>"$LOGS/llm-tiermem.err"
    rc=$?
    grep -E '^tiermem(-llm: summary|: )' "$LOGS/llm-tiermem.err" | head -n 8 | indent
    got=$(sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$LOGS/llm-tiermem.err")
    if [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && grep -q '^tiermem: ' "$LOGS/llm-tiermem.err"; then
      pass "tiermem-llm under libtiermem.so: the 32 reference ids, with the interposer's start-up line"
    else
      fail "tiermem-llm under libtiermem.so: exit status $rc, ids '$got'"; show_log "$LOGS/llm-tiermem.err" 15
    fi
  else
    skip "tiermem-llm under libtiermem.so" "the engine or the model is missing (step 5)"
  fi
  run_preload() {
    local what=$1 expect=$2 log=$LOGS/preload-$3.log; shift 3
    under_tm "$@" >"$log" 2>&1
    local rc=$?
    if [ "$rc" -eq 0 ] && grep -q -- "$expect" "$log"; then pass "$what"
    else fail "$what (exit status $rc)"; show_log "$log" 10; fi
  }
  run_preload "cuMemFreeAsync of chunked memory does not wait for the stream" \
    '^free returned while the stream was held' freeasync "$SERVING" freeasync 64M
  run_preload "a CUDA graph captured over chunked memory runs and every byte lands" \
    '^graph ran: every captured write landed' capture "$SERVING" capture 8M
  run_preload "a primary-context reset releases chunked memory" '^round 2 free' reset "$SERVING" reset 64M
  log=$LOGS/preload-reset.log
  if [ "$(sed -n 's/^round 1 free //p' "$log")" = "$(sed -n 's/^round 2 free //p' "$log")" ]; then
    pass "after the reset the same allocation leaves the same free memory"
  else
    fail "free memory after the reset differs: $(grep '^round' "$log" | tr '\n' ' ')"
  fi
  run_preload "cuMemGetInfo and cuDeviceTotalMem around chunked allocations" '^info ' meminfo \
    "$B/tests/preload/probe" meminfo 64M 256M
  # legacy IPC of chunked memory between two tiermem processes (test_preload_ipc.sh on simcuda)
  ipc_dir=$(mktemp -d)
  under_tm "$B/tests/preload/ipc_peer" export 64M "$ipc_dir" >"$LOGS/preload-ipc-export.log" 2>&1 &
  ipc_exporter=$!
  under_tm "$B/tests/preload/ipc_peer" import "$ipc_dir" >"$LOGS/preload-ipc-import.log" 2>&1 &
  ipc_importer=$!
  for _ in $(seq 600); do
    { [ -e "$ipc_dir/imported" ] || ! kill -0 "$ipc_importer" 2>/dev/null; } && break
    sleep 0.1
  done
  touch "$ipc_dir/close"; wait "$ipc_importer"; ipc_rc=$?
  touch "$ipc_dir/finish"; wait "$ipc_exporter"; ipc_rc="$ipc_rc $?"
  if [ "$ipc_rc" = "0 0" ] && grep -q "^exporter: importer's bytes ok" "$LOGS/preload-ipc-export.log" &&
     grep -q "^importer: exporter's bytes ok" "$LOGS/preload-ipc-import.log"; then
    pass "legacy CUDA IPC of chunked memory between two tiermem processes, both ways"
  else
    fail "legacy CUDA IPC between two tiermem processes (exit statuses $ipc_rc)"
    show_log "$LOGS/preload-ipc-export.log" 10; show_log "$LOGS/preload-ipc-import.log" 10
  fi
  rm -rf "$ipc_dir"
fi

echo
echo "# $(( $(date +%s) - start )) s"
echo "1..$n"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
