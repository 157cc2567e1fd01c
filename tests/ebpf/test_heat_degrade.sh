#!/usr/bin/env bash
# tiermem-heat degrades with one clear line and never breaks its target: without
# privileges (the command still runs, unobserved), without BTF, on a target that is gone
# or exits while it attaches, on a process without a CUDA driver, beside a stats region of
# another layout version (left as it was); a build without clang says why tiermem-heat is
# not built. And a plain program, without libtiermem.so, watched with --pid shows the same
# hot/cold split as the engine under libtiermem.so: no chunk of the embedding table hot,
# no chunk of the matrices cold.
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
  out=$(unshare -m sh -c "mount --bind /dev/null /sys/kernel/btf/vmlinux && '$HEAT' -- sh -c 'echo ran > $T/btf_ran'" 2>&1)
  rc=$?
  check_eq "without BTF tiermem-heat exits 3" "$rc" 3
  check "and says the kernel has no BTF" grep -q 'cannot use eBPF: this kernel has no BTF' <<<"$out"
  check_eq "in one line" "$(grep -c 'tiermem-heat' <<<"$out")" 1
  check "the command still ran" test -s "$T/btf_ran"
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
# the driver is mapped, then the probes attach while the target finishes its few tokens
"$LLM" -m "$T/m.gguf" -p "the quick brown fox" -n 3 --threads 1 --kv-blocks 100 >"$T/brief.out" 2>&1 &
brief=$!
for _ in $(seq 200); do grep -q libcuda "/proc/$brief/maps" 2>/dev/null && break; sleep 0.01; done
out=$(timeout 30 "$HEAT" --json --interval 0.1 --pid "$brief" 2>&1 >"$T/brief.json"); rc=$?
wait "$brief"; target_rc=$?
echo "# attached as the target finished: exit $rc"
check "a target that exits while the probes attach: tiermem-heat ends on its own ($rc)" test "$rc" -eq 0 -o "$rc" -eq 2
check "with at most one line of its own before the collector's CPU line" \
  test "$(grep -vc -e 'collector CPU' -e 'touch probes' <<<"$out")" -le 1
check_eq "and the target was not disturbed" "$target_rc" 0
out=$("$HEAT" --bogus 2>&1); rc=$?
check_eq "a bad option: exit 1" "$rc" 1
check_eq "--version prints the version the build was given" "$("$HEAT" --version)" \
  "tiermem-heat $(sed -n 's/^TIERMEM_VERSION *:= *//p' "$TM_ROOT/Makefile")"
check "--help says the region is only read unless --feed" grep -q 'only read, unless --feed' <<<"$("$HEAT" --help)"

# --- a stats region of another layout version: one line, left as it was, the target runs
{ printf 'TIERMEM1'; printf '\x01\x00\x00\x00'; head -c 4084 /dev/zero; } >"$T/old.stats"
cp "$T/old.stats" "$T/old.copy"
out=$("$HEAT" --json --interval 0.1 --stats "$T/old.stats" -- sh -c "sleep 0.4; echo ran > '$T/old_ran'" 2>&1 >/dev/null)
check_eq "without --feed it does not try to write into the region, and says in one line it does not use it" \
  "$(grep -c 'not writing heat' <<<"$out") $(grep -c "not using the target's stats region: $T/old.stats: stats layout version 1" <<<"$out")" "0 1"
out=$("$HEAT" --json --interval 0.1 --feed --stats "$T/old.stats" -- sh -c "sleep 0.4; echo ran > '$T/old_ran'" 2>&1 >/dev/null)
check_eq "beside a region of version 1 tiermem-heat --feed still exits 0" "$?" 0
version=$(sed -n 's/^#define TM_STATS_VERSION *\([0-9]*\).*/\1/p' "$TM_ROOT/preload/region/stats_layout.h")
check "and says in one line it does not write into it" grep -q \
  "^tiermem-heat: not writing heat into the target's stats region: $T/old.stats: stats layout version 1, heat is written into version $version only" <<<"$out"
check_eq "one line" "$(grep -c 'old.stats' <<<"$out")" 1
check "the region is left as it was" cmp -s "$T/old.stats" "$T/old.copy"
check "the command ran" test -s "$T/old_ran"

# --- a plain program (no libtiermem.so), attached by pid. A half-life of 8 s makes intervals
# of 1 s, which hold a few tokens even under the sanitizers on a loaded machine: every matrix
# is then read in every interval, as it is at speed.
"$LLM" -m "$T/m.gguf" -p "the quick brown fox" -n 1500 --threads 1 --kv-blocks 100 >"$T/plain.out" 2>&1 &
plain=$!
sleep 0.5
"$HEAT" --json --interval 0.25 --halflife 8 --duration 4 --pid "$plain" >"$T/plain.json" 2>"$T/plain.err"
check_eq "tiermem-heat --pid --duration 4 on a plain engine" "$?" 0
kill "$plain" 2>/dev/null; wait "$plain" 2>/dev/null
check "--json is valid JSON" valid_json_file "$T/plain.json"
check "no extent comes from a stats region (there is none)" \
  test "$(jq '[.allocations[] | select(.extent == "region")] | length' "$T/plain.json")" = 0
check "launches were counted by the driver uprobes" test "$(jq .launches "$T/plain.json")" -gt 0
# same_split NAME ENDS: the hot/cold split of NAME.json by chunk, over the chunks nothing
# wrote (weights; each named after the first kernel that touched it, so the activations the
# embed and matrix kernels write are left out): the matrices' chunks 10 times hotter than
# the embedding table's (medians), no matrix chunk cold (a chunk that holds a matrix and
# something colder may be warm), no embedding chunk hot but at most ENDS where the table
# shares a chunk with its neighbours (without libtiermem.so's chunk-aligned extents).
same_split() {
  jq -r '.allocations[].chunks[] | select(.writes == 0) | "\(.kernel) \(.heat) \(.class)"' "$T/$1.json" \
    >"$T/$1.chunks"
  local embed matrix hot_embed cold_matrix
  embed=$(median '^tm_embed_f32$' "$1") matrix=$(median '^tm_mat(vec|mul)_f32$' "$1")
  hot_embed=$(awk '$1 == "tm_embed_f32" && $3 == "hot"' "$T/$1.chunks" | wc -l)
  cold_matrix=$(awk '$1 ~ /^tm_mat(vec|mul)_f32$/ && $3 == "cold"' "$T/$1.chunks" | wc -l)
  echo "# $1: median chunk heat: token_embd $embed, matrices $matrix; embedding chunks hot: $hot_embed," \
       "matrix chunks cold: $cold_matrix"
  check "$1: the embedding table's chunks were found" grep -q '^tm_embed_f32 ' "$T/$1.chunks"
  check "$1: the matrices' chunks are 10 times hotter than the embedding table's (medians)" \
    awk -v e="$embed" -v m="$matrix" 'BEGIN { exit !(e >= 0 && m > 10 * e) }'
  check_eq "$1: no matrix chunk is cold" "$cold_matrix" 0
  check "$1: no embedding chunk is hot but at the table's ends ($hot_embed)" test "$hot_embed" -le "$2"
}
median() { awk -v k="$1" '$1 ~ k { print $2 }' "$T/$2.chunks" | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : -1 }'; }
same_split plain 2

# --- the same engine under libtiermem.so, attached alike: the same split, and its extents
# chunk-aligned, no embedding chunk hot at all
env LD_PRELOAD="$(preload_value "$B/lib/libtiermem.so")" TIERMEM_MIN_TIERED=64K TIERMEM_STATS="$T/with.stats" \
  "$LLM" -m "$T/m.gguf" -p "the quick brown fox" -n 1500 --threads 1 --kv-blocks 100 >"$T/with.out" 2>&1 &
with=$!
sleep 0.5
"$HEAT" --json --interval 0.25 --halflife 8 --duration 4 --read-only --stats "$T/with.stats" --pid "$with" \
  >"$T/with.json" 2>"$T/with.err"
check_eq "tiermem-heat --pid on the engine under libtiermem.so" "$?" 0
kill "$with" 2>/dev/null; wait "$with" 2>/dev/null
same_split with 0

# --- from the first call: extents learnt from the allocation return probes
"$HEAT" --json --interval 0.25 --record "$T/first.rec" -- sh -c "exec '$LLM' -m '$T/m.gguf' \
  -p 'the quick brown fox' -n 30 --threads 1 --kv-blocks 100 >/dev/null 2>&1" >"$T/first.json" 2>"$T/first.err"
check_eq "tiermem-heat -- COMMAND on a plain engine" "$?" 0
check "the allocation probes saw the engine's allocations" test "$(jq .allocs "$T/first.json")" -gt 10
check "token_embd's extent was learnt from them" \
  test "$(jq '[.allocations[] | select(.extent == "uprobe" and .size == 32768000)] | length' "$T/first.json")" -ge 1

# --- the heat map of the record
MAP=$B/bin/tiermem-heatmap
check_eq "tiermem-heatmap --version prints the version the build was given" "$("$MAP" --version)" \
  "tiermem-heatmap $(sed -n 's/^TIERMEM_VERSION *:= *//p' "$TM_ROOT/Makefile")"
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
