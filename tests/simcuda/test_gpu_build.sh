#!/usr/bin/env bash
# The GPU conformance run (tests/gpu/conformance.sh) builds here too: the portable tests
# compile against the real driver's stub with nvcc-built kernels, without a RUNPATH to
# simcuda; and without a GPU the script says so instead of running.
source "$(dirname "$0")/../lib/tap.sh"
cd "$TM_ROOT"

NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
OUT=$B/gpu-conformance
if [ ! -x "$NVCC" ]; then
  skip "GPU conformance program builds" "no nvcc at $NVCC"
  done_testing
  exit
fi

log=$(O=$O tests/gpu/conformance.sh --build-only 2>&1)
rc=$?
check_eq "conformance.sh --build-only exits 0" "$rc" "0"
[ "$rc" = 0 ] || echo "$log" | sed 's/^/#   /'
check "the program and the kernel fatbin exist" test -x "$OUT/cuda_conformance" -a -s "$OUT/conformance_kernels.fatbin"
check "it needs libcuda.so.1" bash -c "readelf -d '$OUT/cuda_conformance' | grep -q 'NEEDED.*\[libcuda.so.1\]'"
check "it has no RUNPATH (the system driver loads)" bash -c "! readelf -d '$OUT/cuda_conformance' | grep -qE 'RUNPATH|RPATH'"
check "the fatbin holds the three test kernels" bash -c \
  "for k in probe fill_u32 gate; do grep -qa \"\$k\" '$OUT/conformance_kernels.fatbin' || exit 1; done"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  skip "without a GPU the script says so" "this machine has a GPU: run tests/gpu/conformance.sh"
else
  log=$(O=$O tests/gpu/conformance.sh 2>&1)
  rc=$?
  check_eq "without a GPU conformance.sh exits 77 (not run)" "$rc" "77"
  check "and says there is no GPU" grep -q "NOT RUN: no NVIDIA GPU" <<<"$log"
fi
done_testing
