#!/usr/bin/env bash
# Writes an X-macro header of every CUresult in cuda.h with the first sentence of its
# documentation:  SIMCUDA_ERROR(CUDA_ERROR_INVALID_VALUE, "This indicates that ...")
# Usage: gen-error-table.sh [CUDA_HOME] > error_table.h
set -euo pipefail
cuda=${1:-/usr/local/cuda}
awk '
  /typedef enum cudaError_enum/ { inside = 1; next }
  inside && /} CUresult;/ { exit }
  !inside { next }
  /\/\*\*/ { doc = ""; indoc = 1; next }
  indoc && /\*\// { indoc = 0; next }
  indoc { line = $0; sub(/^[ \t]*\*[ \t]?/, "", line); doc = doc (doc == "" ? "" : " ") line; next }
  /^[ \t]*CUDA_[A-Z0-9_]+[ \t]*=[ \t]*[0-9]+/ {
    name = $1; sub(/=.*/, "", name)
    text = doc; gsub(/::/, "", text); gsub(/\\p /, "", text); gsub(/\\deprecated /, "Deprecated: ", text); gsub(/\\/, "", text); gsub(/"/, "\\\"", text)
    if (match(text, /\.( |$)/)) text = substr(text, 1, RSTART)
    printf "SIMCUDA_ERROR(%s, \"%s\")\n", name, text
    doc = ""
  }' "$cuda/include/cuda.h"
