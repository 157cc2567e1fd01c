#!/usr/bin/env bash
# Replays each fuzzer's seed corpus, then fuzzes each for a few seconds: the GGUF reader and
# tokenizers, the model load behind them, the stats-region reader and the interposer's
# model-header parsers (on the safetensors seeds and the GGUF ones) and the warm-start
# profile decoder must survive everything under ASan/UBSan (the long runs are `make fuzz`
# and `make fuzz-long`).
source "$(dirname "$0")/../lib/tap.sh"
if ! command -v clang >/dev/null; then
  skip "fuzzers" "clang is not installed"
  done_testing; exit
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for target in gguf:corpus model:corpus stats:corpus-stats header:corpus-safetensors,corpus profile:corpus-profile; do
  name=${target%%:*} corpora=${target#*:}
  FUZZ=$B/fuzz/fuzz_$name
  make -s -C "$TM_ROOT" O="$O" "$O/fuzz/fuzz_$name" >/dev/null
  check "fuzz_$name builds" test -x "$FUZZ"
  seeds=()
  for c in ${corpora//,/ }; do seeds+=("$TM_ROOT/tests/fuzz/$c"/*); done
  check "fuzz_$name: the seed corpus has files" test -f "${seeds[0]}"
  "$FUZZ" -runs=0 "${seeds[@]}" >"$T/replay-$name.log" 2>&1
  check "fuzz_$name: every seed replays cleanly" test $? -eq 0
  mkdir -p "$T/$name" && cp "${seeds[@]}" "$T/$name/"
  "$FUZZ" -max_total_time=5 -max_len=131072 "$T/$name" >"$T/fuzz-$name.log" 2>&1
  rc=$?
  check "fuzz_$name: 5 s of fuzzing finds no crash" test $rc -eq 0
  grep -E '^#[0-9]+ +DONE' "$T/fuzz-$name.log" | sed 's/^/# /'
  [ $rc -eq 0 ] || tail -30 "$T/fuzz-$name.log" | sed 's/^/# /'
done
done_testing
