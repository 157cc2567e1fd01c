#!/usr/bin/env bash
# Writes an X-macro header listing every exported driver symbol of the CUDA headers:
#   SIMCUDA_SYMBOL(exported_name, base_name, api_version, stream_variant)
# with stream_variant PLAIN, PTSZ or PTDS.
# Each PFN_<base>_v<version>[_ptsz|_ptds] typedef in cudaTypedefs.h is one ABI of <base>.
# The exported names follow the driver's rule: the k-th plain version of a base is
# <base> (k = 1) or <base>_v<k>; a per-thread variant takes the name of the newest plain
# version at or below its own version, plus _ptsz/_ptds.
# Functions declared in cuda.h or cudaProfiler.h whose name is no base of a PFN typedef
# (a few recent ones) are added with version 0: exported and resolvable at any version.
# Usage: gen-driver-symbols.sh [CUDA_HOME] > driver_symbols.h
set -euo pipefail
cuda=${1:-/usr/local/cuda}

derived=$(grep -oE 'typedef CUresult \(CUDAAPI \*PFN_[A-Za-z0-9_]+\)' "$cuda/include/cudaTypedefs.h" |
  sed -E 's/.*PFN_//; s/\)$//' | sort -u |
  awk '
    match($0, /_v[0-9]+(_ptsz|_ptds)?$/) {
      base = substr($0, 1, RSTART - 1); rest = substr($0, RSTART + 2)
      variant = "plain"
      if (rest ~ /_pt(sz|ds)$/) { variant = substr(rest, length(rest) - 3); rest = substr(rest, 1, length(rest) - 5) }
      n++; B[n] = base; V[n] = rest + 0; K[n] = variant
      if (variant == "plain") plain[base] = plain[base] " " rest
    }
    END {
      for (i = 1; i <= n; i++) {
        cnt = split(plain[B[i]], pv, " ")
        for (a = 1; a <= cnt; a++) for (b = a + 1; b <= cnt; b++) if (pv[b] + 0 < pv[a] + 0) { t = pv[a]; pv[a] = pv[b]; pv[b] = t }
        k = 0
        for (a = 1; a <= cnt; a++) if (pv[a] + 0 <= V[i]) k = a
        if (k == 0) continue
        name = (k == 1) ? B[i] : B[i] "_v" k
        if (K[i] != "plain") name = name "_" K[i]
        printf "SIMCUDA_SYMBOL(%s, %s, %d, %s)\n", name, B[i], V[i], toupper(K[i])
      }
    }')

bases=$(sed -E 's/^SIMCUDA_SYMBOL\([^,]+, ([^,]+),.*/\1/' <<<"$derived" | sort -u)
extra=$(grep -ohE 'CUresult CUDAAPI cu[A-Za-z0-9_]+\(' "$cuda/include/cuda.h" "$cuda/include/cudaProfiler.h" |
  sed -E 's/CUresult CUDAAPI //; s/\($//' | sort -u | grep -vxF -f <(echo "$bases") |
  grep -vE '_v[0-9]+$|_pt(sz|ds)$' |
  awk '{ printf "SIMCUDA_SYMBOL(%s, %s, 0, PLAIN)\n", $1, $1 }' || true)

printf '%s\n%s\n' "$derived" "$extra" | grep . | sort -u
