#!/usr/bin/env bash
# tests/gpu/conformance.sh — runs the portable driver conformance tests (tests/simcuda, the
# program simcuda_conformance runs on simcuda) against the real CUDA driver of a GPU machine.
#
#   tests/gpu/conformance.sh               build into $O/gpu-conformance/, then run on the GPU
#   tests/gpu/conformance.sh --build-only  build only (any machine with nvcc; no GPU needed)
#   tests/gpu/conformance.sh --run-only    run what is in $O/gpu-conformance/ (a package made
#                                          by tests/gpu/run.sh --package: no nvcc, no cmocka.h)
#
# The program is compiled with the toolkit's cuda.h and linked with -lcuda from the toolkit's
# stub library at link time only (a RUNPATH may name the libraries a package carries, never
# simcuda), so at run time the system's libcuda.so.1, the real driver, is the one loaded. Its
# kernels are tests/simcuda/kernels.cu compiled with nvcc into a fatbin for the GPU's
# architecture (the host-kernel library is for simcuda only), found beside the program: it
# runs in $O/gpu-conformance/. The simcuda-only tests (simcuda_only) are not run here.
#
# Exit status: 0 when everything passed (or was built with --build-only), 1 on a failure,
# 77 when there is no GPU to run on (the build is done and the reason printed).
# Environment: O (build folder, default build), CUDA_HOME, NVCC, CC, CUDA_ARCH (e.g. 90;
# default: the GPU's compute capability, or 90 without a GPU).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
O=${O:-build}
case $O in /*) B=$O ;; *) B=$ROOT/$O ;; esac
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
CC=${CC:-cc}
OUT=$B/gpu-conformance
SRC=tests/simcuda
PORTABLE_SOURCES="harness.c conformance_main.c test_init.c test_memory.c test_vmm.c
                  test_stream_event.c test_module_launch.c test_proc_address.c test_graph.c test_ipc.c"

build_only=0 run_only=0
case ${1:-} in
  --build-only) build_only=1 ;;
  --run-only) run_only=1 ;;
  "") ;;
  *) echo "usage: $0 [--build-only | --run-only]" >&2; exit 2 ;;
esac

say() { echo "conformance.sh: $*"; }
die() { echo "conformance.sh: $*" >&2; exit 1; }

# ---- Is there a GPU the real driver can use? ---------------------------------------------
gpu_reason=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
  gpu_reason="nvidia-smi is not installed"
elif ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  gpu_reason="nvidia-smi -L lists no GPU"
elif ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  gpu_reason="the dynamic linker knows no libcuda.so.1 (driver not installed)"
fi

# ---- Build -------------------------------------------------------------------------------
build() {
  [ -f "$CUDA_HOME/include/cuda.h" ] || die "no $CUDA_HOME/include/cuda.h (set CUDA_HOME)"
  [ -x "$NVCC" ] || die "no nvcc at $NVCC: the GPU kernels cannot be built (set NVCC or CUDA_HOME)"
  stubs=""
  for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs"; do
    if [ -f "$d/libcuda.so" ]; then stubs=$d; break; fi
  done
  [ -n "$stubs" ] || die "no libcuda.so stub under $CUDA_HOME (needed to link)"
  printf '#include <stdarg.h>\n#include <stddef.h>\n#include <setjmp.h>\n#include <cmocka.h>\n' |
    "$CC" -x c -fsyntax-only - 2>/dev/null || die "no cmocka.h: install libcmocka-dev (make deps)"

  arch=${CUDA_ARCH:-}
  if [ -z "$arch" ] && [ -z "$gpu_reason" ]; then
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')
  fi
  arch=${arch:-90}

  mkdir -p "$OUT"
  "$SRC/gen-results.sh" "$CUDA_HOME/include/cuda.h" > "$OUT/cu_results.inc"
  say "nvcc: kernels for sm_$arch"
  "$NVCC" -fatbin -gencode "arch=compute_$arch,code=[sm_$arch,compute_$arch]" -I"$SRC" \
    "$SRC/kernels.cu" -o "$OUT/conformance_kernels.fatbin"
  sources=()
  for f in $PORTABLE_SOURCES; do sources+=("$SRC/$f"); done
  say "cc: $OUT/cuda_conformance against $stubs/libcuda.so (link time only)"
  "$CC" -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I. -I"$CUDA_HOME/include" -I"$OUT" \
    -DCONFORMANCE_MODULE='"conformance_kernels.fatbin"' "${sources[@]}" \
    -o "$OUT/cuda_conformance" -L"$stubs" -lcuda -lcmocka -lpthread -ldl
}
[ "$run_only" = 1 ] || build
[ -x "$OUT/cuda_conformance" ] && [ -f "$OUT/conformance_kernels.fatbin" ] ||
  die "no $OUT/cuda_conformance and conformance_kernels.fatbin beside it (build without --run-only)"
if readelf -d "$OUT/cuda_conformance" | grep -E 'RUNPATH|RPATH' | grep -q simcuda; then
  die "$OUT/cuda_conformance has a RUNPATH to simcuda; it must load the system's driver"
fi

if [ "$build_only" = 1 ]; then
  say "built $OUT/cuda_conformance and $OUT/conformance_kernels.fatbin (--build-only: not run)"
  exit 0
fi

# ---- Run ---------------------------------------------------------------------------------
if [ -n "$gpu_reason" ]; then
  say "NOT RUN: no NVIDIA GPU on this machine ($gpu_reason)."
  say "The program is built ($OUT/cuda_conformance); run this script on a GPU machine."
  exit 77
fi
# Keep simcuda out of the way: the real driver must be the libcuda.so.1 that loads.
if [ -n "${LD_LIBRARY_PATH:-}" ]; then
  LD_LIBRARY_PATH=$(tr ':' '\n' <<<"$LD_LIBRARY_PATH" | grep -v 'simcuda' | paste -sd: -)
  export LD_LIBRARY_PATH
fi
unset LD_PRELOAD
loaded=$(ldd "$OUT/cuda_conformance" | awk '/libcuda\.so\.1/ {print $3}')
say "driver: ${loaded:-?}; $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -n1)"
case $loaded in *simcuda*) die "libcuda.so.1 resolves to simcuda ($loaded)";; esac
# The program names its kernels' fatbin relative to where it runs.
cd "$OUT"
O=$B "$ROOT/tests/run.sh" ./cuda_conformance
