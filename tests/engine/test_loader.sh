#!/usr/bin/env bash
# The weight loader (--load): io_uring, pread and the mapping put the same bytes on the
# device, so every model gives the same tokens and logits whichever reads it (stories260K
# and generated models of every layout, f32 and fp8 KV, asynchronous streams too); a
# seccomp filter refusing io_uring makes the default fall back to pread with one line
# saying why, and an explicit --load=uring stop with one; no progress line reaches
# stderr that is not a terminal; a bad --load is named.
source "$(dirname "$0")/../lib/tap.sh"
require_models stories260K.gguf
LLM=$B/bin/tiermem-llm
MK=$B/bin/tiermem-mkmodel
NO_URING=$B/tests/engine/no_uring
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
STORIES=$TM_SHARED/models/stories260K.gguf

ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
method() { sed -n 's/^tiermem-llm: load: method=\([a-z]*\) .*/\1/p' "$1"; }
run() { # NAME MODEL KV LOAD [ENV...]: 16 greedy tokens, logits dumped
  local name=$1 model=$2 kv=$3 load=$4; shift 4
  env "$@" "$LLM" -m "$model" -p "once upon a time" -n 16 --kv-dtype "$kv" --kv-blocks 64 -v --load="$load" \
    --dump-logits "$T/$name.logits" > /dev/null 2> "$T/$name.err"
}
same_as_mmap() { # NAME MODEL KV: every method against the mapping
  local name=$1 model=$2 kv=$3
  run "$name-mmap" "$model" "$kv" mmap
  check "$name $kv: the mapped load generates 16 tokens" test "$(ids "$T/$name-mmap.err" | wc -w)" -eq 16
  for load in uring pread; do
    run "$name-$load" "$model" "$kv" $load
    check_eq "$name $kv, --load=$load: tokens equal the mapped load's" "$(ids "$T/$name-$load.err")" \
      "$(ids "$T/$name-mmap.err")"
    check "$name $kv, --load=$load: logits equal too" cmp -s "$T/$name-$load.logits" "$T/$name-mmap.logits"
  done
}

same_as_mmap stories260K "$STORIES" f32
same_as_mmap stories260K "$STORIES" fp8_e4m3
run stories260K-auto "$STORIES" fp8_e4m3 auto
check_eq "the default reads with io_uring here" "$(method "$T/stories260K-auto.err")" uring
check_eq "the default: tokens equal the mapped load's" "$(ids "$T/stories260K-auto.err")" \
  "$(ids "$T/stories260K-mmap.err")"
small="--layers 2 --dim 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512"
"$MK" -o "$T/f16.gguf" $small --type f16 > /dev/null
"$MK" -o "$T/qwen2.gguf" $small --type q4_k_m --arch qwen2 > /dev/null
"$MK" -o "$T/qwen3.gguf" $small --type bf16 --arch qwen3 --tied > /dev/null
"$MK" -o "$T/moe.gguf" $small --type q5_0 --experts 4 --experts-used 2 > /dev/null
for m in f16 qwen2 qwen3 moe; do same_as_mmap "$m" "$T/$m.gguf" fp8_e4m3; done
same_as_mmap f16 "$T/f16.gguf" f32

# reads and copies on asynchronous streams: a staging buffer reused too early would show
run f16-async "$T/f16.gguf" f32 uring SIMCUDA_ASYNC=1
check_eq "asynchronous streams: tokens unchanged" "$(ids "$T/f16-async.err")" "$(ids "$T/f16-mmap.err")"

# ---------------------------------------------------------------- io_uring refused
"$NO_URING" "$LLM" -m "$STORIES" -p "once upon a time" -n 16 --kv-dtype f32 --kv-blocks 64 -v \
  > /dev/null 2> "$T/refused.err"
check_eq "io_uring refused: the run still exits 0" "$?" 0
check_eq "io_uring refused: one line says why and what is used instead" \
  "$(grep -c '^tiermem-llm: io_uring is refused (io_uring_queue_init: Operation not permitted); loading with pread$' \
     "$T/refused.err")" 1
check_eq "io_uring refused: the weights were read with pread" "$(method "$T/refused.err")" pread
check_eq "io_uring refused: tokens equal the io_uring load's" "$(ids "$T/refused.err")" \
  "$(ids "$T/stories260K-uring.err")"
"$NO_URING" "$LLM" -m "$STORIES" -p "once" -n 4 --load=uring > /dev/null 2> "$T/refused-uring.err"
check_eq "--load=uring where io_uring is refused: exit status 1" "$?" 1
check_eq "--load=uring where io_uring is refused: one error line" \
  "$(grep -v '^tiermem-llm: no CUDA driver' "$T/refused-uring.err")" \
  "error: --load=uring: io_uring is refused here (io_uring_queue_init: Operation not permitted)"

# ---------------------------------------------------------------- output and options
check "stderr is no terminal: no progress line" \
  bash -c "! grep -q 'loading .*%' '$T/f16-uring.err' && ! grep -q $'\r' '$T/f16-uring.err'"
"$LLM" -m "$STORIES" -p "once" -n 4 --load=fast > /dev/null 2> "$T/bad.err"
check_eq "a bad --load: exit status 2" "$?" 2
check_eq "a bad --load: named in one line" "$(head -1 "$T/bad.err")" \
  "error: --load must be auto, uring, pread or mmap, got 'fast'"
done_testing
