#!/usr/bin/env bash
# Writes one CU_RESULT(NAME) line per CUresult value declared in cuda.h, so the tests
# can check cuGetErrorName/cuGetErrorString against every code of the header in use.
#   gen-results.sh /usr/local/cuda/include/cuda.h > cu_results.inc
set -euo pipefail
header=${1:?usage: gen-results.sh path/to/cuda.h}
awk '/^typedef enum cudaError_enum/,/^} CUresult;/' "$header" |
  sed -n 's/^[[:space:]]*\(CUDA_[A-Z0-9_]*\)[[:space:]]*=[[:space:]]*[0-9][0-9]*.*/CU_RESULT(\1)/p'
