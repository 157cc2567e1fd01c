#!/usr/bin/env bash
# TIERMEM_PROFILE: a heat-policy run (64 tokens: enough launches for sampled heat) writes
# the chunk heat of its allocations at exit; the next run reads it, places by it from the
# first launch (its first decode steps are as fast as a settled run's, where a cold run of
# 3 tokens has not moved yet) and generates the same tokens. A stale or damaged profile is
# ignored in one line; a symlink at the path is never followed and a file that is not a
# profile is never replaced. (FIFOs and other users' profiles: tests/preload/test_preload_untrusted.sh.)
source "$(dirname "$0")/../lib/tap.sh"

llm=$B/bin/tiermem-llm
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
preload=$(preload_value "$B/lib/libtiermem.so")
sim=(SIMCUDA_HOST_TIME=0 SIMCUDA_LAUNCH_US=0 SIMCUDA_COPY_US=0 SIMCUDA_HOST_LATENCY_US=0 SIMCUDA_PROFILE=h200-pcie5
     SIMCUDA_MEM=12M)
ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
step() { sed -n 's/.*sim_decode_step_ms=\([0-9.]*\).*/\1/p' "$1"; }
# run NAME [ENV...]: 3 tokens of the large-vocabulary model under the heat policy
run() {
  local name=$1; shift
  env "${sim[@]}" TIERMEM_POLICY=heat TIERMEM_LOG=info LD_PRELOAD="$preload" "$@" "$llm" -m "$T/v.gguf" \
    -p "Once upon a time" -n 3 --kv-dtype f16 --kv-blocks 48 -v > /dev/null 2> "$T/$name.err"
}

# token_embd (16 MiB, one row read per token) loads first and takes the HBM that
# output.weight (16 MiB, read whole every token) needs.
"$B/bin/tiermem-mkmodel" -o "$T/v.gguf" --vocab 131072 --layers 2 --dim 32 --heads 2 --kv-heads 1 --ffn 64 \
  --type f32 > "$T/mk.log" 2>&1
check "test model generated" test -s "$T/v.gguf"

run cold
env "${sim[@]}" TIERMEM_POLICY=heat TIERMEM_LOG=info LD_PRELOAD="$preload" TIERMEM_PROFILE="$T/p.profile" "$llm" \
  -m "$T/v.gguf" -p "Once upon a time" -n 64 --kv-dtype f16 --kv-blocks 48 > /dev/null 2> "$T/first.err"
check "no profile yet: one line says this run writes it" \
  grep -q "^tiermem: profile $T/p.profile: none yet; this run writes it at exit" "$T/first.err"
check "the profile was written at exit" grep -q "^tiermem: profile $T/p.profile: heat of 3 allocations written" "$T/first.err"
check "it starts with the profile magic" test "$(head -c 8 "$T/p.profile")" = TMHEATP1
run warm TIERMEM_PROFILE="$T/p.profile"
check "the next run reads it" \
  grep -q "^tiermem: profile $T/p.profile: heat of 3 allocations; placing by it from the first launch" "$T/warm.err"
check_eq "  and generates the same tokens" "$(ids "$T/warm.err")" "$(ids "$T/cold.err")"
check "  and its first decode steps are at least 2x faster ($(step "$T/cold.err") ms cold, $(step "$T/warm.err") ms warm)" \
  awk -v c="$(step "$T/cold.err")" -v w="$(step "$T/warm.err")" 'BEGIN { exit !(w > 0 && c >= 2 * w) }'

# A profile of another program: the sizes differ.
"$B/bin/tiermem-mkmodel" -o "$T/other.gguf" --vocab 65536 --layers 2 --dim 64 --heads 2 --kv-heads 1 --ffn 64 \
  --type f32 > "$T/mk.log" 2>&1
cp "$T/p.profile" "$T/stale.profile"
env "${sim[@]}" TIERMEM_POLICY=heat LD_PRELOAD="$preload" TIERMEM_PROFILE="$T/stale.profile" "$llm" -m "$T/other.gguf" \
  -p "Once upon a time" -n 3 --kv-dtype f16 --kv-blocks 48 > /dev/null 2> "$T/stale.err"
check_eq "a stale profile: exit 0" "$?" 0
check "  ignored, in one line naming what differs" \
  grep -q "^tiermem: warning: profile $T/stale.profile: stale (allocation [0-9]* is [0-9]* bytes here, [0-9]* in the profile); ignored" \
  "$T/stale.err"

# A damaged profile: its checksum fails.
cp "$T/p.profile" "$T/bad.profile"
printf 'xxxx' | dd of="$T/bad.profile" bs=1 seek=100 conv=notrunc 2> /dev/null
run bad TIERMEM_PROFILE="$T/bad.profile"
check "a damaged profile: ignored in one line" \
  grep -q "^tiermem: warning: profile $T/bad.profile: its checksum does not match (damaged or cut short); ignored" "$T/bad.err"
check_eq "  same tokens" "$(ids "$T/bad.err")" "$(ids "$T/cold.err")"
check "  and replaced by a good one at exit" grep -q "heat of 3 allocations written" "$T/bad.err"

# A symlink at the path: never followed, its target untouched.
echo "precious" > "$T/target"
ln -s "$T/target" "$T/link.profile"
run link TIERMEM_PROFILE="$T/link.profile"
check "a symlink: not read, nor written at exit, in one line" \
  grep -q "^tiermem: warning: profile $T/link.profile: cannot be opened (.*a symlink is never followed); starting cold, and it is not written at exit$" "$T/link.err"
check_eq "  one line in all" "$(grep -c "profile $T/link.profile" "$T/link.err")" 1
check_eq "  its target is untouched" "$(cat "$T/target")" precious
check "  still a symlink" test -L "$T/link.profile"

# A file that is not a profile: left alone.
echo "my notes" > "$T/notes.txt"
run notes TIERMEM_PROFILE="$T/notes.txt"
check "a file that is not a profile: ignored" grep -q "^tiermem: warning: profile $T/notes.txt: not a tiermem profile; ignored" "$T/notes.err"
check "  and never replaced" grep -q "not written (a file that is not a tiermem profile is there)" "$T/notes.err"
check_eq "  its bytes are unchanged" "$(cat "$T/notes.txt")" "my notes"
check_eq "no temporary file is left behind" "$(ls "$T" | grep -c '\.tmp$')" 0
done_testing
