#!/usr/bin/env bash
# The heat policy's staging ring on the engine, unmodified. With a model of 3 MiB matrices
# 1.75 times the device, TIERMEM_STREAM=auto sizes the ring once a decode step has shown
# which weights it reads (the largest below HBM and a chunk), copies spilled weights into it
# ahead of their kernels and hands those kernels the copy: the tokens stay those of an
# all-in-HBM run (f32 and fp8 KV, synchronous and asynchronous streams), kernels read
# little in place, and nothing is remapped while it runs. A long batched run under
# asynchronous streams, with the rebalancer on, dumps the same logits bit for bit and
# swaps no weight for another. A driver call failed mid-stream stops streaming with one
# line and the same tokens; a weight the program writes while it streams is read in place
# from then on; TIERMEM_STREAM_RING sets the ring; nothing streams when the
# model fits, when the ring would cost the link more than it saves (`auto`, one line
# saying so; `on` streams anyway) or with TIERMEM_STREAM=off.
source "$(dirname "$0")/../lib/tap.sh"

llm=$B/bin/tiermem-llm
stat=$B/bin/tiermem-stat
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
preload=$(preload_value "$B/lib/libtiermem.so")
ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
streamed() { sed -n 's/^tiermem: exit: stream: \([0-9]*\) weights streamed.*/\1/p' "$1"; }
pointed() { sed -n 's/^tiermem: exit: stream: .*; \([0-9]*\) parameters pointed at the ring.*/\1/p' "$1"; }
ring_line() { sed -n 's/^tiermem: policy heat: spilled weights stream through \(a ring of [0-9]* HBM chunks ([^)]*)\).*/\1/p' "$1"; }
no_leak() { grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' "$1"; }
calls() { sed -n "s/^simcuda: exit: \([0-9]*\) $1 calls cost.*/\1/p" "$2"; }
heat=(TIERMEM_POLICY=heat TIERMEM_LOG=info SIMCUDA_LOG=info LD_PRELOAD="$preload")

# 56 MiB of f32 weights (4 layers, matrices of 1 and 3 MiB) on a 32 MiB device.
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --layers 4 --vocab 1024 --dim 512 --heads 8 --kv-heads 8 --ffn 1536 \
  --type f32 --seed 5 > "$T/mk.log" 2>&1
check "test model generated" test -s "$T/m.gguf"
run() { # NAME [ENV...]: the model, 24 tokens, on the 32 MiB device
  local name=$1; shift
  env SIMCUDA_MEM=32M "${heat[@]}" "$@" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype "${KV_DTYPE:-f32}" \
    --kv-blocks 16 -v > /dev/null 2> "$T/$name.err"
}

for kv in f32 fp8_e4m3; do
  SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype $kv --kv-blocks 16 -v \
    > /dev/null 2> "$T/ref-$kv.err"
  check "$kv KV: the reference generated tokens" test -n "$(ids "$T/ref-$kv.err")"
  for async in 0 1; do
    KV_DTYPE=$kv run "s-$kv-$async" SIMCUDA_ASYNC=$async
    check_eq "$kv KV, SIMCUDA_ASYNC=$async: exit 0" "$?" 0
    check "$kv KV, SIMCUDA_ASYNC=$async: weights streamed through the ring ($(streamed "$T/s-$kv-$async.err"))" \
      test "$(streamed "$T/s-$kv-$async.err")" -gt 100
    check_eq "$kv KV, SIMCUDA_ASYNC=$async: the same tokens as all in HBM" \
      "$(ids "$T/s-$kv-$async.err")" "$(ids "$T/ref-$kv.err")"
    check "$kv KV, SIMCUDA_ASYNC=$async: nothing leaked" no_leak "$T/s-$kv-$async.err"
  done
done
s=$T/s-f32-0.err
echo "# $(grep -o 'policy heat: spilled weights stream.*' "$s")"
echo "# $(grep -o 'exit: stream: .*' "$s")"
check_eq "auto: a ring of the largest spilled weight (3 MiB) and a chunk, in whole chunks" "$(ring_line "$s")" \
  "a ring of 3 HBM chunks (6 MiB)"
check "the copies went through the copy engine, host to device" \
  grep -q '^simcuda: exit: copied host-numa -> device: [1-9]' "$s"
check "launches were handed the ring's copies ($(pointed "$s") parameters for $(streamed "$s") copies)" \
  test "$((10 * $(pointed "$s")))" -ge "$((9 * $(streamed "$s")))"
in_place=$(awk '/^simcuda: exit: kernels in host-numa: read/ { printf "%d", $7 * 1073741824 }' "$s")
copied=$(sed -n 's/^simcuda: exit: copied host-numa -> device: \([0-9]*\) bytes/\1/p' "$s")
check "kernels read in place ($in_place bytes) under 1/16 of what the copy engine brought (${copied:-0})" \
  test "${in_place:-1}" -gt 0 -a "$((16 * ${in_place:-1}))" -lt "${copied:-0}"
# nothing is remapped per weight streamed: beside a run reading in place, the ring adds its
# own mappings (3 chunks, once) and the moves that made room for them
run off TIERMEM_STREAM=off
extra=$(($(calls cuMemUnmap "$s") - $(calls cuMemUnmap "$T/off.err")))
check "no remap per weight streamed: $extra more cuMemUnmap calls than reading in place, for $(streamed "$s") weights" \
  test "$extra" -lt $(($(streamed "$s") / 20))

# Stress: 4 sequences, 64 steps, asynchronous streams, the rebalancer's passes on.
printf 'Once upon a time\nThe little dog\nA girl named Lily\nIn the park\n' > "$T/prompts"
SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" --prompts-file "$T/prompts" -n 64 --kv-dtype f32 --kv-blocks 64 \
  --dump-logits "$T/ref.logits" > /dev/null 2>&1
env SIMCUDA_MEM=32M SIMCUDA_ASYNC=1 TIERMEM_HEAT_HALFLIFE=1s TIERMEM_STATS="$T/stress.region" "${heat[@]}" \
  "$llm" -m "$T/m.gguf" --prompts-file "$T/prompts" -n 64 --kv-dtype f32 --kv-blocks 64 \
  --dump-logits "$T/stress.logits" > /dev/null 2> "$T/stress.err"
check_eq "stress: exit 0" "$?" 0
check "stress: over a thousand weights streamed ($(streamed "$T/stress.err"))" test "$(streamed "$T/stress.err")" -gt 1000
check "stress: the reference dumped logits" test -s "$T/ref.logits"
check "stress: every logit of every step bit for bit the reference's" cmp -s "$T/ref.logits" "$T/stress.logits"
check "stress: nothing leaked" no_leak "$T/stress.err"
moved=$("$stat" --json "$T/stress.region" | jq '.migrations')
check "stress: the rebalancer moved chunks while weights streamed ($moved)" test "${moved:-0}" -gt 0

# The ring's size from TIERMEM_STREAM_RING, in whole chunks, at least 2: rings of 4 and
# 8 MiB give the same logits under asynchronous streams; a ring smaller than the largest
# weight streams the ones that fit and reads the others in place.
for ring in 3M 8M; do
  env SIMCUDA_MEM=32M SIMCUDA_ASYNC=1 TIERMEM_STREAM_RING=$ring "${heat[@]}" "$llm" -m "$T/m.gguf" \
    --prompts-file "$T/prompts" -n 24 --kv-dtype f32 --kv-blocks 64 --dump-logits "$T/ring-$ring.logits" \
    > /dev/null 2> "$T/ring-$ring.err"
  check "TIERMEM_STREAM_RING=$ring: bit for bit the reference's logits" \
    cmp -s <(head -c "$(stat -c %s "$T/ring-$ring.logits")" "$T/ref.logits") "$T/ring-$ring.logits"
done
check_eq "TIERMEM_STREAM_RING=3M: a ring of 2 chunks" "$(ring_line "$T/ring-3M.err")" "a ring of 2 HBM chunks (4 MiB)"
check_eq "TIERMEM_STREAM_RING=8M: a ring of 4 chunks" "$(ring_line "$T/ring-8M.err")" "a ring of 4 HBM chunks (8 MiB)"
check "TIERMEM_STREAM_RING=3M: the 3 MiB matrices stream too (in a 4 MiB ring)" \
  test "$(streamed "$T/ring-3M.err")" -gt 100

# A driver call failing inside streaming: one line, streaming stops, the tokens stay right.
for fault in cuMemcpyDtoDAsync_v2:60 cuStreamWaitEvent:40 cuEventRecord:80; do
  run fail SIMCUDA_FAIL=$fault:CUDA_ERROR_UNKNOWN
  check_eq "SIMCUDA_FAIL=$fault: exit 0, the same tokens" "$? $(ids "$T/fail.err")" "0 $(ids "$T/ref-f32.err")"
  check_eq "SIMCUDA_FAIL=$fault: one line says streaming stopped" \
    "$(grep -c '^tiermem: warning: streaming stops: ' "$T/fail.err")" 1
  check "SIMCUDA_FAIL=$fault: nothing leaked" no_leak "$T/fail.err"
done

# Everything fits in HBM: no ring, nothing copied from a lower tier.
env SIMCUDA_MEM=1G "${heat[@]}" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype f32 --kv-blocks 16 -v \
  > /dev/null 2> "$T/fits.err"
check_eq "the model fits: no ring, the same tokens" "$(grep -c 'exit: stream:\|policy heat: spilled' "$T/fits.err") $(ids "$T/fits.err")" \
  "0 $(ids "$T/ref-f32.err")"
check "the model fits: no copy from a lower tier" bash -c "! grep -q 'copied host-numa -> device' '$T/fits.err'"

# A little below HBM (56 MiB on 48): a 6 MiB ring would cost the link more than streaming
# 11 MiB saves. `auto` says so in one line and reads them in place; `on` streams anyway.
env SIMCUDA_MEM=48M "${heat[@]}" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype f32 --kv-blocks 16 -v \
  > /dev/null 2> "$T/auto.err"
check "TIERMEM_STREAM=auto, little spilled: one line says why nothing streams" \
  grep -q '^tiermem: policy heat: spilled weights are read in place, not streamed: its HBM would cost the link more than streaming saves (a cycle reads [0-9]* weights below HBM, .*; TIERMEM_STREAM=on streams anyway)' "$T/auto.err"
check_eq "  the same tokens, no stream exit line" "$(ids "$T/auto.err") $(grep -c 'exit: stream:' "$T/auto.err")" \
  "$(ids "$T/ref-f32.err") 0"
env SIMCUDA_MEM=48M TIERMEM_STREAM=on "${heat[@]}" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype f32 \
  --kv-blocks 16 -v > /dev/null 2> "$T/on.err"
check "TIERMEM_STREAM=on, little spilled: it streams ($(streamed "$T/on.err") weights)" test "$(streamed "$T/on.err")" -gt 0
check_eq "  the same tokens" "$(ids "$T/on.err")" "$(ids "$T/ref-f32.err")"

# TIERMEM_STREAM=off: one line says so; spilled weights are read in place.
check "TIERMEM_STREAM=off: one line says spilled weights are read in place" \
  grep -q '^tiermem: policy heat: spilled weights are read in place, not streamed (TIERMEM_STREAM=off)' "$T/off.err"
check_eq "TIERMEM_STREAM=off: the same tokens, no stream exit line" \
  "$(ids "$T/off.err") $(grep -c 'exit: stream:' "$T/off.err")" "$(ids "$T/ref-f32.err") 0"
# A mixture of experts: each layer's experts are stacks of 8 MiB ([expert][rows][cols]) of which
# a step reads the 2 experts of 8 its router picked, on the device; a launch's parameters
# do not say which. Copying a stack whole would move four times what is read: stacks are read
# in place, never staged, and only the dense weights (1 MiB) stream. Before, the ring staged
# the stacks too (828 MiB copied in 14 tokens) and a step took twice as long.
"$B/bin/tiermem-mkmodel" -o "$T/moe.gguf" --layers 4 --vocab 1024 --dim 512 --heads 8 --kv-heads 2 --ffn 1536 \
  --experts 8 --experts-used 2 --expert-ffn 512 --expert-skew 4 --type f32 --seed 5 > "$T/mk.log" 2>&1
SIMCUDA_MEM=1G "$llm" -m "$T/moe.gguf" -p "Once upon a time" -n 14 --kv-dtype f32 --kv-blocks 16 -v \
  > /dev/null 2> "$T/moe-ref.err"
env SIMCUDA_MEM=64M SIMCUDA_HOST_TIME=0 TIERMEM_LEDGER=off TIERMEM_HEAT_SAMPLE=4 TIERMEM_STREAM=on "${heat[@]}" \
  TIERMEM_LOG=debug "$llm" -m "$T/moe.gguf" -p "Once upon a time" -n 14 --kv-dtype f32 --kv-blocks 16 -v \
  > /dev/null 2> "$T/moe.err"
copied() { sed -n 's/^tiermem: exit: stream: [0-9]* weights streamed (\([0-9.]*\) MiB copied).*/\1/p' "$1"; }
check "experts: the ring streams the dense weights ($(streamed "$T/moe.err") streamed)" \
  test "$(streamed "$T/moe.err")" -gt 0
check "  at most 1 MiB copied a weight streamed: no stack ($(copied "$T/moe.err") MiB for $(streamed "$T/moe.err"))" \
  awk -v c="$(copied "$T/moe.err")" -v n="$(streamed "$T/moe.err")" 'BEGIN { exit !(c != "" && n > 0 && c <= n) }'
check_eq "  no stack of experts (8 MiB) is in the cycle the ring streams from" \
  "$(grep -c '^tiermem: debug: stream: weight .* 8388608 bytes' "$T/moe.err")" 0
check_eq "  the tokens of all in HBM" "$(ids "$T/moe.err")" "$(ids "$T/moe-ref.err")"
# A weight written while it streams: the program sets every tensor to 1s with cuMemsetD8
# after four cycles of sums over them (filecopy rewrite). The staged copies of what they
# held must go, or the next launches are handed stale bytes (they were, before).
env SIMCUDA_MEM=32M TIERMEM_STREAM=on "${heat[@]}" "$B/tests/preload/filecopy" rewrite "$T/m.gguf" \
  > "$T/rewrite.out" 2> "$T/rewrite.err"
check_eq "weights written while they stream: every cycle's sums equal what the tensors hold" \
  "$(grep -c '^rewrite: cycle [0-9] sums equal$' "$T/rewrite.out") $(grep -c 'differ' "$T/rewrite.out")" "8 0"
check "  weights streamed before the write ($(streamed "$T/rewrite.err"))" test "$(streamed "$T/rewrite.err")" -gt 0
check "  the staged copies the write made stale were dropped" \
  grep -q '^tiermem: exit: stream: .*; [1-9][0-9]* copies dropped as their weight was written$' "$T/rewrite.err"
done_testing
