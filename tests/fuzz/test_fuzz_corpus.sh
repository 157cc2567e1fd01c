#!/usr/bin/env bash
# Replays the GGUF fuzzer's seed corpus, then fuzzes for a few seconds: the reader and
# tokenizers must survive everything under ASan/UBSan (the long run is `make fuzz`).
source "$(dirname "$0")/../lib/tap.sh"
FUZZ=$B/fuzz/fuzz_gguf
if ! command -v clang >/dev/null; then
  skip "GGUF fuzzer" "clang is not installed"
  done_testing; exit
fi
make -s -C "$TM_ROOT" O="$O" "$O/fuzz/fuzz_gguf" >/dev/null
check "the fuzzer builds" test -x "$FUZZ"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
seeds=("$TM_ROOT"/tests/fuzz/corpus/*)
check "the seed corpus has files" test "${#seeds[@]}" -ge 5
"$FUZZ" -runs=0 "${seeds[@]}" >"$T/replay.log" 2>&1
check "every seed replays cleanly" test $? -eq 0
cp "${seeds[@]}" "$T/"
"$FUZZ" -max_total_time=10 -max_len=131072 "$T" >"$T/fuzz.log" 2>&1
rc=$?
check "10 s of fuzzing finds no crash" test $rc -eq 0
grep -E '^#[0-9]+ +DONE' "$T/fuzz.log" | sed 's/^/# /'
[ $rc -eq 0 ] || tail -30 "$T/fuzz.log" | sed 's/^/# /'
done_testing
