# Helpers of the eBPF heat tests (sourced after tests/lib/tap.sh).
#   need_ebpf                   skips the whole script, saying why, when tiermem-heat cannot run
#   spearman FILE               Spearman's rank correlation of columns 2 and 3: values within
#                               10 % of each other tie, as in the classes; ties get their mean rank
#   at_least A B, valid_json_file FILE
HEAT=$B/bin/tiermem-heat
STAT=$B/bin/tiermem-stat
LLM=$B/bin/tiermem-llm
MKMODEL=$B/bin/tiermem-mkmodel
export LD_LIBRARY_PATH=$B/lib/simcuda
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

skip_all() { skip "$1" "$2"; done_testing; exit 0; }

need_ebpf() {
  [ -x "$HEAT" ] || skip_all "eBPF heat" "tiermem-heat was not built (clang, bpftool or the kernel's BTF was missing)"
  [ "$(id -u)" = 0 ] || skip_all "eBPF heat" "loading BPF programs needs root (or CAP_BPF and CAP_PERFMON)"
  local out
  out=$("$HEAT" --json --duration 0.2 --interval 0.1 -- sleep 0.1 2>&1 >/dev/null)
  [ $? -ne 3 ] || skip_all "eBPF heat" "$(grep 'cannot use eBPF' <<<"$out")"
}

spearman() {
  awk '
    # ranks, hottest first; a value within 10 % of the first of its run (going down) ties with
    # it, as in the classes (policy/heat.h): dense weights all read every step are one rank
    function rank(col, r,   i, j, k, n, idx, tmp) {
      n = 0
      for (i = 1; i <= N; i++) idx[++n] = i
      for (i = 2; i <= n; i++) { tmp = idx[i]; j = i - 1
        while (j >= 1 && v[col, idx[j]] < v[col, tmp]) { idx[j + 1] = idx[j]; j-- }
        idx[j + 1] = tmp }
      for (i = 1; i <= n; i = j + 1) {
        j = i; while (j < n && v[col, idx[j + 1]] >= v[col, idx[i]] * 0.9) j++
        for (k = i; k <= j; k++) r[idx[k]] = (i + j) / 2 }
    }
    { N++; v[2, N] = $2; v[3, N] = $3 }
    END {
      rank(2, a); rank(3, b)
      for (i = 1; i <= N; i++) { ma += a[i] / N; mb += b[i] / N }
      for (i = 1; i <= N; i++) { sab += (a[i] - ma) * (b[i] - mb); saa += (a[i] - ma) ^ 2; sbb += (b[i] - mb) ^ 2 }
      printf "%.3f\n", (saa > 0 && sbb > 0) ? sab / sqrt(saa * sbb) : 0 }' "$1"
}
# True when a >= b (floating point).
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
valid_json_file() { jq -e . "$1" >/dev/null; }
