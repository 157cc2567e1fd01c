#!/usr/bin/env bash
# Hostile model headers parsed inside the program's open(): each open stays bounded in time
# and memory (VmHWM of the process that opened the file), the file's tensors go unnamed in
# one line, and the program reads its bytes unchanged. Tensor tables live while the file is
# open and are freed when it is closed: four 65536-tensor GGUF files opened one after
# another cost one table's memory, held open four.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

HP=$B/tests/preload/header_probe
S=$SCRATCH
# freed memory goes back for reuse at once under ASan too, so the high-water mark measures
# what is kept
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0
MIB=1024

# opened FILE... : the probe's "hwm_growth_kb=K seconds=S" under the interposer (stderr: $S/err)
opened() { timeout 10 env TIERMEM_LOG=info LD_PRELOAD="$(preload_value "$LIBTIERMEM")" "$HP" open "$@" 2> "$S/err"; }
growth() { sed -n 's/^hwm_growth_kb=\([-0-9]*\) .*/\1/p' <<<"$1"; }
seconds_under() { awk -v s="$(sed -n 's/.* seconds=\([0-9.]*\)$/\1/p' <<<"$1")" -v limit="$2" 'BEGIN { exit !(s != "" && s < limit) }'; }
one_warning() {  # one_warning FILE PATTERN: stderr has one line, the warning naming FILE and PATTERN
  [ "$(grep -c "^tiermem: warning: model file $1: .*$2.*; its tensors are not named$" "$S/err")" = 1 ] &&
    [ "$(grep -c 'warning' "$S/err")" = 1 ] || { sed 's/^/#   /' "$S/err"; false; }
}

# -------------------------------------------------------------- one 94 MB integer array
"$HP" st-array "$S/array94.safetensors" 94000000
out=$(opened "$S/array94.safetensors")
check_eq "94 MB one-array header: the open returns" "$?" 0
check "  within 1 s" seconds_under "$out" 1
check "  its high-water mark grows by under 8 MiB (the header is never read)" test "$(growth "$out")" -lt $((8 * MIB))
check "  one line says the header is over 32 MiB" one_warning array94.safetensors "larger than 32 MiB"

# the same shape under the byte limit is scanned, and refused for what it is
"$HP" st-array "$S/array30.safetensors" 30000000
out=$(opened "$S/array30.safetensors")
check_eq "30 MB one-array header: the open returns" "$?" 0
check "  within 2 s" seconds_under "$out" 2
check "  its high-water mark grows by under 40 MiB (the header's bytes, no tree)" test "$(growth "$out")" -lt $((40 * MIB))
check "  one line says the entry is no tensor" one_warning array30.safetensors "lacks dtype, shape or data_offsets"

# -------------------------------------------------------------- many entries
"$HP" st-entries "$S/million.safetensors" 1000000
out=$(opened "$S/million.safetensors")
check_eq "1M-entry safetensors header: the open returns" "$?" 0
check "  within 1 s" seconds_under "$out" 1
check "  its high-water mark grows by under 8 MiB" test "$(growth "$out")" -lt $((8 * MIB))
check "  one line says why" one_warning million.safetensors "larger than 32 MiB"

"$HP" st-entries "$S/over.safetensors" 100000
out=$(opened "$S/over.safetensors")
check "100,000 entries in 7 MB: refused past 65536 tensors, within 2 s" seconds_under "$out" 2
check "  one line says so" one_warning over.safetensors "more than 65536 tensors"
check "  its high-water mark grows by under 40 MiB" test "$(growth "$out")" -lt $((40 * MIB))

"$HP" st-entries "$S/cap.safetensors" 65536
out=$(opened "$S/cap.safetensors")
check "65536 entries, the most a table holds: parsed" grep -q "model file cap.safetensors: safetensors, 65536 tensors" "$S/err"

# -------------------------------------------------------------- GGUF tables kept and freed
"$HP" gguf "$S/million.gguf" $((1 << 20))
out=$(opened "$S/million.gguf")
check "2^20-tensor GGUF: one line refuses it" one_warning million.gguf "more than 65536 tensors"
check "  its high-water mark grows by under 8 MiB" test "$(growth "$out")" -lt $((8 * MIB))

for i in 1 2 3 4; do "$HP" gguf "$S/big$i.gguf" 65536; done
big=("$S"/big[1-4].gguf)
out=$(opened "${big[@]}")
closed=$(growth "$out")
check_eq "four 65536-tensor GGUF files, each opened and closed: all four parsed" \
  "$(grep -c 'GGUF, 65536 tensors' "$S/err")" 4
check "  within 4 s" seconds_under "$out" 4
check "  the high-water mark grows by under 24 MiB: one table at a time (grew $closed KiB)" \
  test "$closed" -lt $((24 * MIB))
out=$(opened --hold "${big[@]}")
held=$(growth "$out")
check "  held open together instead, the four tables stay: over 40 MiB (grew $held KiB)" test "$held" -gt $((40 * MIB))
out=$(opened "${big[@]}" "${big[@]}")
check_eq "  opened again after a close, a file is parsed again" "$(grep -c 'GGUF, 65536 tensors' "$S/err")" 8

# tables kept at once are bounded (64 MiB, five of these): a sixth held with five goes unnamed
"$HP" gguf "$S/big5.gguf" 65536
"$HP" gguf "$S/big6.gguf" 65536
out=$(opened --hold "${big[@]}" "$S/big5.gguf" "$S/big6.gguf")
check "six held open: the sixth goes unnamed in one line" one_warning big6.gguf "past 64 MiB"

# -------------------------------------------------------------- the program is unaffected
for f in array30.safetensors over.safetensors big1.gguf; do
  plain=$("$B/tests/preload/filecopy" checksum "$S/$f" 2>&1)
  check_eq "$f: read returns the same bytes under the interposer" \
    "$(under_tiermem -- "$B/tests/preload/filecopy" checksum "$S/$f" 2> /dev/null)" "$plain"
done
done_testing
