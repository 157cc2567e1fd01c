#!/usr/bin/env bash
# tiermem-heat degrades with one clear line and never breaks its target: without
# privileges (the command still runs, unobserved), without BTF, on a target that is gone
# or exits while it attaches, on a process without a CUDA driver; a build without clang
# says why tiermem-heat is not built. And a plain program, without libtiermem.so, watched
# with --pid shows the engine's hot/cold split: the embedding table's chunks colder than
# the matrices'.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/heat_lib.sh"

out=$(make -s -C "$TM_ROOT" -n O="$T/nobuild" BPF_CLANG=no-such-clang all 2>&1 | grep 'not built')
check_eq "a build without clang says in one line why tiermem-heat is not built" "$out" \
  "tiermem-heat and the eBPF heat source are not built: no-such-clang not found"

need_ebpf

# --- not root: one line, and the command runs anyway
if command -v setpriv >/dev/null; then
  chmod 755 "$T" && mkdir -m 1777 "$T/open"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$HEAT" --json -- sh -c "echo ran > '$T/open/ran'" 2>&1)
  rc=$?
  check_eq "without privileges tiermem-heat exits 3" "$rc" 3
  check "and says why in one line" grep -q '^tiermem-heat: cannot use eBPF: cannot load the BPF programs: .*(needs root or CAP_BPF and CAP_PERFMON); in-process heat' <<<"$out"
  check_eq "in one line" "$(grep -c 'tiermem-heat' <<<"$out")" 1
  check "the command still ran" test -s "$T/open/ran"
else
  skip "without privileges" "setpriv is not installed"
fi

# --- no BTF (hidden in a private mount namespace)
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  out=$(unshare -m sh -c "mount --bind /dev/null /sys/kernel/btf/vmlinux && '$HEAT' -- true" 2>&1)
  rc=$?
  check_eq "without BTF tiermem-heat exits 3" "$rc" 3
  check "and says the kernel has no BTF" grep -q 'cannot use eBPF: this kernel has no BTF' <<<"$out"
else
  skip "without BTF" "no private mount namespace here (unshare -m)"
fi

# --- targets that are not there, or go
out=$("$HEAT" --pid 999999999 2>&1); rc=$?
check_eq "a process that does not exist: exit 2" "$rc" 2
check "with a clear line" grep -q '^tiermem-heat: no process 999999999' <<<"$out"
sleep 0.3 & gone=$!
out=$(timeout 20 "$HEAT" --pid "$gone" 2>&1); rc=$?
check_eq "a target that exits while tiermem-heat waits for its driver: exit 2, no hang" "$rc" 2
check "with a clear line" grep -qE "^tiermem-heat: no process $gone|has loaded no libcuda" <<<"$out"
"$MKMODEL" -o "$T/m.gguf" --vocab 32000 --dim 256 --layers 2 --heads 4 --kv-heads 4 --ffn 512 --ctx 1600 \
  --seed 5 >"$T/mk.log" 2>&1
"$LLM" -m "$T/m.gguf" -p "the quick brown fox" -n 40 --threads 1 --kv-blocks 100 >"$T/short.out" 2>&1 &
short=$!
sleep 0.3
out=$(timeout 30 "$HEAT" --json --interval 0.1 --pid "$short" 2>&1 >"$T/short.json"); rc=$?
wait "$short"; target_rc=$?
check "a target that exits mid-run: tiermem-heat ends on its own ($rc)" test "$rc" -eq 0 -o "$rc" -eq 2
check_eq "and the target was not disturbed" "$target_rc" 0
out=$("$HEAT" --bogus 2>&1); rc=$?
check_eq "a bad option: exit 1" "$rc" 1

# --- a plain program (no libtiermem.so), attached by pid
"$LLM" -m "$T/m.gguf" -p "the quick brown fox" -n 1500 --threads 1 --kv-blocks 100 >"$T/plain.out" 2>&1 &
plain=$!
sleep 0.5
"$HEAT" --json --interval 0.25 --halflife 2 --duration 4 --pid "$plain" >"$T/plain.json" 2>"$T/plain.err"
check_eq "tiermem-heat --pid --duration 4 on a plain engine" "$?" 0
kill "$plain" 2>/dev/null; wait "$plain" 2>/dev/null
check "--json is valid JSON" valid_json_file "$T/plain.json"
check "no extent comes from a stats region (there is none)" \
  test "$(jq '[.allocations[] | select(.extent == "region")] | length' "$T/plain.json")" = 0
check "launches were counted by the driver uprobes" test "$(jq .launches "$T/plain.json")" -gt 0
jq -r '.allocations[].chunks[] | "\(.kernel) \(.heat) \(.class)"' "$T/plain.json" >"$T/chunks.txt"
median() { awk -v k="$1" '$1 ~ k { print $2 }' "$T/chunks.txt" | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : -1 }'; }
embed=$(median '^tm_embed_f32$') matrix=$(median '^tm_mat(vec|mul)_f32$')
echo "# median chunk heat: token_embd $embed, matrices $matrix"
check "the embedding table's chunks were found" grep -q '^tm_embed_f32 ' "$T/chunks.txt"
check "the matrices' chunks are 10 times hotter than the embedding table's (medians)" \
  awk -v e="$embed" -v m="$matrix" 'BEGIN { exit !(e >= 0 && m > 10 * e) }'

# --- from the first call: extents learnt from the allocation return probes
"$HEAT" --json --interval 0.25 --record "$T/first.rec" -- sh -c "exec '$LLM' -m '$T/m.gguf' \
  -p 'the quick brown fox' -n 30 --threads 1 --kv-blocks 100 >/dev/null 2>&1" >"$T/first.json" 2>"$T/first.err"
check_eq "tiermem-heat -- COMMAND on a plain engine" "$?" 0
check "the allocation probes saw the engine's allocations" test "$(jq .allocs "$T/first.json")" -gt 10
check "token_embd's extent was learnt from them" \
  test "$(jq '[.allocations[] | select(.extent == "uprobe" and .size == 32768000)] | length' "$T/first.json")" -ge 1

# --- the heat map of the record
MAP=$TM_ROOT/tools/tiermem-heat/tiermem-heatmap
check "--record wrote MILLISECONDS 0xCHUNK HEAT lines" grep -qE '^[0-9]+ 0x[0-9a-f]+ [0-9.e-]+$' "$T/first.rec"
if command -v gnuplot >/dev/null; then
  out=$("$MAP" "$T/first.rec" "$T/first.png" 2>&1)
  check "tiermem-heatmap draws it" grep -q "^tiermem-heatmap: wrote $T/first.png" <<<"$out"
  check_eq "as a PNG" "$(head -c 4 "$T/first.png" | tail -c 3)" PNG
else
  skip "tiermem-heatmap" "gnuplot is not installed"
fi
out=$("$MAP" "$T/first.json" "$T/bad.png" 2>&1); rc=$?
check_eq "tiermem-heatmap refuses a file that is not a record: exit 2" "$rc" 2
check "in one line" grep -q "is not a tiermem-heat --record file" <<<"$out"
done_testing
