#!/usr/bin/env bash
# llama.cpp's CUDA build, unmodified, on simcuda under libtiermem.so: node-llama-cpp 3.22.1's
# prebuilt CUDA backend (ggml-cuda on libcudart.so.13 and libcublas.so.13) loads a 150 MiB
# model with every layer on a 64 MiB device (tests/llamacpp/load_cuda.mjs):
#   - under the default TIERMEM_MEMINFO=available it is told the device's free memory and
#     refuses before loading (InsufficientMemoryError), as it would on such a GPU;
#   - under TIERMEM_MEMINFO=virtual it loads the whole model and creates a context; held at
#     its first kernel launch (SIMCUDA_HOLD), tiermem-stat shows the weight buffer spread
#     over HBM and DDR; then simcuda refuses the launch (it cannot run GPU code) in one line
#     naming the kernel, and ggml aborts the process, which is its behaviour on any CUDA
#     error while computing;
#   - the stats region and ledger entry the abort leaves are removed by tiermem-stat --gc.
# The package comes from `make deps-test` (mk/deps.mk), never from this test.
source "$(dirname "$0")/../lib/tap.sh"
PKG=$TM_ROOT/build/llamacpp-cuda
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64
SIMCUDA_DIR=$B/lib/simcuda
TIERMEM=$B/lib/libtiermem.so
STAT=$B/bin/tiermem-stat
MIB=$((1 << 20))
DEVICE=$((64 * MIB))

if ! command -v node > /dev/null; then
  skip "llama.cpp CUDA build on simcuda" "node is not installed (the engine is node-llama-cpp)"; done_testing; exit
fi
if [ ! -d "$PKG/node_modules/@node-llama-cpp/linux-x64-cuda" ] || [ ! -d "$PKG/node_modules/node-llama-cpp" ]; then
  skip "llama.cpp CUDA build on simcuda" "node-llama-cpp's CUDA backend is not in $PKG (make deps-test installs it when npm is present)"
  done_testing; exit
fi
for lib in libcudart.so.13 libcublas.so.13; do
  if [ ! -e "$CUDA_LIB/$lib" ]; then
    skip "llama.cpp CUDA build on simcuda" "$lib is not in $CUDA_LIB (the CUDA 13 toolkit; set CUDA_HOME)"; done_testing; exit
  fi
done

T=$(mktemp -d)
SCRIPT=$PKG/load-cuda-$$.mjs # beside its node_modules, where node finds the package
trap 'rm -rf "$T" "$SCRIPT"' EXIT
cp "$TM_ROOT/tests/llamacpp/load_cuda.mjs" "$SCRIPT"
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --target-size 150M > /dev/null
model_bytes=$(stat -c %s "$T/m.gguf")
# A sanitizer build's runtime keeps node's allocations it cannot see as leaks: not ours.
printf 'leak:node\nleak:libnode\nleak:libcudart\nleak:libcublas\nleak:libggml\nleak:llama-addon\n' > "$T/lsan.supp"
export LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$T/lsan.supp

# engine NAME VAR=VALUE... : runs the script in the background; $T/NAME.out, $T/NAME.err.
# ggml's abort would attach gdb to print a backtrace (and gdb, started under the same
# LD_PRELOAD, hangs with the sanitizer runtime): GGML_NO_BACKTRACE turns that off.
engine() {
  local name=$1; shift
  env LD_LIBRARY_PATH="$SIMCUDA_DIR:$CUDA_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SIMCUDA_MEM=$DEVICE GGML_NO_BACKTRACE=1 \
    LD_PRELOAD="$(preload_value "$TIERMEM")" "$@" node "$SCRIPT" "$T/m.gguf" > "$T/$name.out" 2> "$T/$name.err" &
  ENGINE_PID=$!
}
field() { sed -n "s/^$2 //p" "$T/$1.out"; }
show_err() { sed 's/^/#   stderr: /' "$T/$1.err" | tail -n 15; }

# ------------------------------------------------------------- the default view: refused
engine available
wait "$ENGINE_PID"
rc=$?
read -r _ free _ total <<< "$(field available "gpu cuda")"
check_eq "available: node-llama-cpp chose CUDA and exits 0 after its refusal" "$rc" 0
check_eq "available: it is told the device's total, 64 MiB" "${total:-?}" "$DEVICE"
check "available: and free below the model's $((model_bytes / MIB)) MiB (${free:-?} bytes)" \
  test "${free:-$model_bytes}" -lt "$model_bytes"
check "available: it refuses with InsufficientMemoryError before loading" \
  grep -q '^refused InsufficientMemoryError: Not enough VRAM' "$T/available.out"
[ "$rc" = 0 ] || show_err available

# ------------------------------------------------------------- virtual: the whole load
engine virtual TIERMEM_MEMINFO=virtual SIMCUDA_HOLD=1:"$T/go"
pid=$ENGINE_PID
# The first launch comes after the context: wait for it there, then read the live region.
for _ in $(seq 600); do
  grep -q '^context ' "$T/virtual.out" && "$STAT" --json "$pid" > "$T/held.json" 2> /dev/null &&
    grep -q '"cuLaunchKernelEx":1\|"cuLaunchKernel":1' "$T/held.json" && break
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.1
done
touch "$T/go"
wait "$pid"
rc=$?
read -r _ vfree _ vtotal <<< "$(field virtual "gpu cuda")"
check "virtual: it is told HBM plus DDR (${vtotal:-?} bytes), more than the model" test "${vtotal:-0}" -gt "$model_bytes"
check "virtual: the whole model loads with every layer on the device" grep -q '^loaded ' "$T/virtual.out"
check_eq "virtual: a context of 256 positions is created" "$(field virtual context)" 256
check_eq "virtual: no token is evaluated (simcuda cannot run GPU code)" "$(grep -c '^evaluated' "$T/virtual.out")" 0
check_eq "virtual: ggml aborts at its first kernel (SIGABRT)" "$rc" 134
kernel_lines=$(grep -c '^simcuda: kernel .* has no host code: GPU code cannot run here (CUDA_ERROR_NO_BINARY_FOR_GPU)$' \
  "$T/virtual.err")
check_eq "virtual: simcuda names the refused kernel in one line" "$kernel_lines" 1
check "virtual: the kernel is ggml's first, an rms_norm_f32 instantiation" \
  grep -q '^simcuda: kernel _Z12rms_norm_f32.* (void rms_norm_f32<' "$T/virtual.err"
check "virtual: ggml says it aborts on a CUDA error" grep -qE 'ggml-cuda\.cu:[0-9]+: CUDA error$' "$T/virtual.err"
check_eq "virtual: simcuda said nothing is missing" "$(grep -E 'is not implemented|does not know it' "$T/virtual.err")" ""
[ "$rc" = 134 ] || show_err virtual

# ------------------------------------------------------------- where the weights were
check "held at the first launch: tiermem-stat read the live region" test -s "$T/held.json"
# The weights are one buffer named after its tensors (ggml allocates them together).
weights=$(jq -c '[.allocations[] | select(.tensors > 1)] | max_by(.size) // empty' "$T/held.json" 2> /dev/null)
w_size=$(jq -r '.size // 0' <<< "${weights:-{\}}")
w_hbm=$(jq -r '.chunks.hbm // 0' <<< "${weights:-{\}}")
w_ddr=$(jq -r '.chunks.ddr // 0' <<< "${weights:-{\}}")
check "the weight buffer holds the model ($((w_size / MIB)) MiB, named after $(jq -r '.tensors // 0' <<< "${weights:-{\}}") tensors)" \
  test "$w_size" -ge $((model_bytes - 8 * MIB))
check "its chunks are spread over HBM ($w_hbm) and DDR ($w_ddr)" test "$w_hbm" -gt 0 -a "$w_ddr" -gt 0
check "DDR holds at least what the 64 MiB device cannot ($((w_ddr * 2)) MiB)" \
  test $((w_ddr * 2 * MIB)) -ge $((w_size - DEVICE))
check "HBM holds no more than the device ($(jq -r '.tiers[0].used' "$T/held.json") bytes)" \
  test "$(jq -r '.tiers[] | select(.name == "hbm") | .used' "$T/held.json" 2> /dev/null || echo $DEVICE)" -le "$DEVICE"
echo "# weights: $((w_size / MIB)) MiB, $((w_hbm * 2)) MiB in HBM, $((w_ddr * 2)) MiB in DDR; told free ${free:-?} (available) / ${vfree:-?} (virtual)"

# ------------------------------------------------------------- what the abort left
region=/dev/shm/tiermem-$(id -u)/tiermem.$pid
if [ -e "$region" ]; then
  echo "# the abort left $region"
  "$STAT" --gc ${TIERMEM_LEDGER:+"$TIERMEM_LEDGER"} > "$T/gc.out" 2>&1
  check "tiermem-stat --gc names the region it removed" grep -q "removed $region (process $pid is gone)" "$T/gc.out"
fi
check "no stats region of the aborted engine is left" test ! -e "$region"
check "and no ledger entry of it" \
  bash -c '! "$1" --ledger ${2:+"$2"} 2>/dev/null | grep -qE "^ +$3 "' _ "$STAT" "${TIERMEM_LEDGER:-}" "$pid"

done_testing
