#!/usr/bin/env bash
# The heat policy's staging ring on the engine, unmodified: with a model 1.75 times the
# device, spilled weights stream through the ring and the tokens stay those of an
# all-in-HBM run (f32 and fp8 KV, synchronous and asynchronous streams); a long batched
# run under asynchronous streams, with the rebalancer migrating as well, dumps the same
# logits bit for bit (every weight byte every kernel read, checked); a driver call failed
# mid-stream stops streaming with one line and the same tokens; a weight of several chunks
# streams whole; the ring's size follows HBM or TIERMEM_STREAM_RING; nothing streams when the model fits, when the ring would be a large share
# of HBM (TIERMEM_STREAM=auto) or with TIERMEM_STREAM=off; under `auto` the ring gives its
# HBM back where a remap costs more than streaming a chunk saves (the profile's VMM costs),
# and streams where remaps are cheap.
source "$(dirname "$0")/../lib/tap.sh"

llm=$B/bin/tiermem-llm
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/lib/simcuda
preload=$(preload_value "$B/lib/libtiermem.so")
ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
streamed() { sed -n 's/^tiermem: exit: stream: \([0-9]*\) chunks streamed.*/\1/p' "$1"; }
heat=(TIERMEM_POLICY=heat TIERMEM_LOG=info SIMCUDA_LOG=info LD_PRELOAD="$preload")
# the ring's 4 MiB are a third of this small device: `auto` would not take it, `on` does
on=(TIERMEM_STREAM=on "${heat[@]}")

# 21 MiB of f32 weights (6 layers of 768 KiB matrices) on a 12 MiB device.
"$B/bin/tiermem-mkmodel" -o "$T/m.gguf" --layers 6 --vocab 1913 --dim 256 --heads 4 --kv-heads 1 --ffn 768 \
  --type f32 --seed 5 > "$T/mk.log" 2>&1
check "test model generated" test -s "$T/m.gguf"

for kv in f32 fp8_e4m3; do
  SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype $kv --kv-blocks 64 -v > /dev/null 2> "$T/ref-$kv.err"
  check "$kv KV: the reference generated tokens" test -n "$(ids "$T/ref-$kv.err")"
  for async in 0 1; do
    env SIMCUDA_MEM=12M SIMCUDA_ASYNC=$async "${on[@]}" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 \
      --kv-dtype $kv --kv-blocks 64 -v > /dev/null 2> "$T/s-$kv-$async.err"
    check_eq "$kv KV, SIMCUDA_ASYNC=$async: exit 0" "$?" 0
    check "$kv KV, SIMCUDA_ASYNC=$async: chunks streamed through the ring" test "$(streamed "$T/s-$kv-$async.err")" -gt 100
    check_eq "$kv KV, SIMCUDA_ASYNC=$async: the same tokens as all in HBM" \
      "$(ids "$T/s-$kv-$async.err")" "$(ids "$T/ref-$kv.err")"
    check "$kv KV, SIMCUDA_ASYNC=$async: nothing leaked" \
      grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' "$T/s-$kv-$async.err"
  done
done
check "the copies went through the copy engine, host to device" \
  grep -q '^simcuda: exit: copied host-numa -> device: [1-9]' "$T/s-f32-0.err"

# Stress: 4 sequences, 64 steps, asynchronous streams, the rebalancer moving chunks too.
printf 'Once upon a time\nThe little dog\nA girl named Lily\nIn the park\n' > "$T/prompts"
SIMCUDA_MEM=1G "$llm" -m "$T/m.gguf" --prompts-file "$T/prompts" -n 64 --kv-dtype f32 --kv-blocks 64 \
  --dump-logits "$T/ref.logits" > /dev/null 2>&1
env SIMCUDA_MEM=12M SIMCUDA_ASYNC=1 TIERMEM_HEAT_HALFLIFE=1s "${on[@]}" "$llm" -m "$T/m.gguf" \
  --prompts-file "$T/prompts" -n 64 --kv-dtype f32 --kv-blocks 64 --dump-logits "$T/stress.logits" > /dev/null 2> "$T/stress.err"
check_eq "stress: exit 0" "$?" 0
check "stress: over a thousand chunks streamed ($(streamed "$T/stress.err"))" test "$(streamed "$T/stress.err")" -gt 1000
check "stress: the reference dumped logits" test -s "$T/ref.logits"
check "stress: every logit of every step bit for bit the reference's" cmp -s "$T/ref.logits" "$T/stress.logits"
check "stress: nothing leaked" \
  grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' "$T/stress.err"

# Weights of more than one chunk (3 MiB matrices of a 512-wide model): a kernel handed one
# reads it whole, so every chunk of it streams, not only the one its pointer falls in; the
# bytes kernels read in place stay under half of what the copy engine brought (reading
# each matrix's second chunk in place, they were more than it), and the logits of an
# asynchronous run stay bit for bit the reference's.
"$B/bin/tiermem-mkmodel" -o "$T/wide.gguf" --layers 2 --vocab 1024 --dim 512 --heads 8 --kv-heads 8 --ffn 1536 \
  --type f32 --seed 5 > "$T/mk-wide.log" 2>&1
SIMCUDA_MEM=1G "$llm" -m "$T/wide.gguf" -p "Once upon a time" -n 24 --kv-dtype f32 --kv-blocks 16 \
  --dump-logits "$T/wide-ref.logits" > /dev/null 2>&1
env SIMCUDA_MEM=12M SIMCUDA_ASYNC=1 "${on[@]}" "$llm" -m "$T/wide.gguf" -p "Once upon a time" -n 24 \
  --kv-dtype f32 --kv-blocks 16 --dump-logits "$T/wide.logits" > /dev/null 2> "$T/wide.err"
check_eq "weights over a chunk: exit 0" "$?" 0
in_place=$(awk '/^simcuda: exit: kernels in host-numa: read/ { printf "%d", $7 * 1073741824 }' "$T/wide.err")
copied=$(sed -n 's/^simcuda: exit: copied host-numa -> device: \([0-9]*\) bytes/\1/p' "$T/wide.err")
echo "# weights over a chunk: $(grep -o 'stream: .*' "$T/wide.err"); read in place $in_place bytes, copied $copied"
check "weights over a chunk: read in place ($in_place bytes) under half of what was copied (${copied:-0})" \
  test "${in_place:-1}" -gt 0 -a "$((2 * ${in_place:-1}))" -lt "${copied:-0}"
check "weights over a chunk: every logit bit for bit the reference's" cmp -s "$T/wide-ref.logits" "$T/wide.logits"
check "weights over a chunk: nothing leaked" \
  grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' "$T/wide.err"

# The ring's size: 1/256 of HBM by default (8 chunks on a 4 GiB device), TIERMEM_STREAM_RING
# in whole chunks (at least 2); rings of 2 and 4 chunks give the same logits under
# asynchronous streams.
ring_line() { sed -n 's/^tiermem: policy heat: spilled weights stream through \(a ring of [0-9]* HBM chunks ([^)]*)\)$/\1/p' "$1"; }
env SIMCUDA_MEM=4G "${heat[@]}" "$llm" -m "$T/wide.gguf" -p "Once upon a time" -n 2 --kv-blocks 16 > /dev/null 2> "$T/ring-default.err"
check_eq "TIERMEM_STREAM_RING unset on a 4 GiB device: 1/256 of it" "$(ring_line "$T/ring-default.err")" \
  "a ring of 8 HBM chunks (16 MiB)"
env SIMCUDA_MEM=4G TIERMEM_STREAM_RING=1M "${heat[@]}" "$llm" -m "$T/wide.gguf" -p "Once upon a time" -n 2 \
  --kv-blocks 16 > /dev/null 2> "$T/ring-small.err"
check_eq "TIERMEM_STREAM_RING=1M: the ring's 2 chunks at least" "$(ring_line "$T/ring-small.err")" \
  "a ring of 2 HBM chunks (4 MiB)"
for ring in 4M 8M; do
  env SIMCUDA_MEM=24M SIMCUDA_ASYNC=1 TIERMEM_STREAM_RING=$ring "${on[@]}" "$llm" -m "$T/wide.gguf" \
    -p "Once upon a time" -n 24 --kv-dtype f32 --kv-blocks 16 --dump-logits "$T/ring-$ring.logits" \
    > /dev/null 2> "$T/ring-$ring.err"
  check "TIERMEM_STREAM_RING=$ring: bit for bit the reference's logits" cmp -s "$T/wide-ref.logits" "$T/ring-$ring.logits"
done
check_eq "TIERMEM_STREAM_RING=8M: a ring of 4 chunks" "$(ring_line "$T/ring-8M.err")" "a ring of 4 HBM chunks (8 MiB)"

# A driver call failing inside streaming: one line, streaming stops, the tokens stay right.
for fault in cuMemMap:200 cuMemcpyDtoDAsync_v2:60 cuEventSynchronize:40 cuMemSetAccess:200; do
  env SIMCUDA_MEM=12M SIMCUDA_FAIL=$fault:CUDA_ERROR_UNKNOWN "${on[@]}" "$llm" -m "$T/m.gguf" \
    -p "Once upon a time" -n 24 --kv-dtype f32 --kv-blocks 64 -v > /dev/null 2> "$T/fail.err"
  check_eq "SIMCUDA_FAIL=$fault: exit 0, the same tokens" "$? $(ids "$T/fail.err")" "0 $(ids "$T/ref-f32.err")"
  check_eq "SIMCUDA_FAIL=$fault: one line says streaming stopped" \
    "$(grep -c '^tiermem: warning: streaming stops: ' "$T/fail.err")" 1
  check "SIMCUDA_FAIL=$fault: nothing leaked" \
    grep -q '^simcuda: exit: 0 physical allocations and 0 address reservations live' "$T/fail.err"
done

# Everything fits in HBM: the ring is set up, nothing streams, nothing is read in place.
env SIMCUDA_MEM=1G "${heat[@]}" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype f32 --kv-blocks 64 -v \
  > /dev/null 2> "$T/fits.err"
check_eq "the model fits: nothing streamed, the same tokens" \
  "$(grep -o 'stream: 0 chunks streamed (0 B copied), 0 read in place' "$T/fits.err") $(ids "$T/fits.err")" \
  "stream: 0 chunks streamed (0 B copied), 0 read in place $(ids "$T/ref-f32.err")"
check "the model fits: no copy from a lower tier" bash -c "! grep -q 'copied host-numa -> device' '$T/fits.err'"

# TIERMEM_STREAM=auto (the default) on this small device: one line says why there is no ring.
env SIMCUDA_MEM=12M "${heat[@]}" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 --kv-dtype f32 --kv-blocks 64 -v \
  > /dev/null 2> "$T/auto.err"
check "TIERMEM_STREAM=auto on a 12 MiB device: no ring, and one line says why" \
  grep -q '^tiermem: policy heat: spilled chunks are read in place, not streamed (its 4 MiB would be more than 1/16 of HBM; TIERMEM_STREAM=on streams anyway)' "$T/auto.err"
check_eq "TIERMEM_STREAM=auto on a 12 MiB device: the same tokens" "$(ids "$T/auto.err")" "$(ids "$T/ref-f32.err")"

# TIERMEM_STREAM=off: one line says so; spilled chunks are read in place.
env SIMCUDA_MEM=12M TIERMEM_STREAM=off "${heat[@]}" "$llm" -m "$T/m.gguf" -p "Once upon a time" -n 24 \
  --kv-dtype f32 --kv-blocks 64 -v > /dev/null 2> "$T/off.err"
check "TIERMEM_STREAM=off: one line says spilled chunks are read in place" \
  grep -q '^tiermem: policy heat: spilled chunks are read in place, not streamed (TIERMEM_STREAM=off)' "$T/off.err"
check_eq "TIERMEM_STREAM=off: the same tokens, no stream line" \
  "$(ids "$T/off.err") $(grep -c 'exit: stream:' "$T/off.err")" "$(ids "$T/ref-f32.err") 0"

# TIERMEM_STREAM=auto where the ring is a small share of HBM: 124 MiB of weights on a 72 MiB
# device. At the profile's VMM costs two remaps (126 us) cost more than a chunk's copy saves
# over reading it in place (20 us): the ring times one of each, gives its chunks back and
# spilled chunks are read in place. With the VMM calls made free, it streams.
"$B/bin/tiermem-mkmodel" -o "$T/big.gguf" --layers 36 --dim 256 --heads 4 --kv-heads 1 --ffn 768 --type f32 \
  > /dev/null 2>&1
SIMCUDA_MEM=1G "$llm" -m "$T/big.gguf" -p "Once upon a time" -n 6 --kv-dtype f16 --kv-blocks 16 -v \
  > /dev/null 2> "$T/big-ref.err"
env SIMCUDA_MEM=72M SIMCUDA_HOST_TIME=0 "${heat[@]}" "$llm" -m "$T/big.gguf" -p "Once upon a time" -n 6 \
  --kv-dtype f16 --kv-blocks 16 -v > /dev/null 2> "$T/auto-costs.err"
check "TIERMEM_STREAM=auto at the profile's costs: one line gives the remap's cost against the copy's saving" \
  grep -q '^tiermem: policy heat: spilled chunks are read in place, not streamed: a remap costs 63.0 us, two a chunk, against the 19.7 us its copy saves over reading it in place (its copy takes 45.9 us); the ring.s 2 HBM chunks go back' "$T/auto-costs.err"
check_eq "  the same tokens, no stream exit line" \
  "$(ids "$T/auto-costs.err") $(grep -c 'exit: stream:' "$T/auto-costs.err")" "$(ids "$T/big-ref.err") 0"
free_vmm=(SIMCUDA_MAP_US=0 SIMCUDA_MAP_2M_US=0 SIMCUDA_UNMAP_US=0 SIMCUDA_UNMAP_2M_US=0 SIMCUDA_SET_ACCESS_US=0
  SIMCUDA_SET_ACCESS_2M_US=0)
env SIMCUDA_MEM=72M SIMCUDA_HOST_TIME=0 "${free_vmm[@]}" "${heat[@]}" "$llm" -m "$T/big.gguf" \
  -p "Once upon a time" -n 6 --kv-dtype f16 --kv-blocks 16 -v > /dev/null 2> "$T/auto-free.err"
check "TIERMEM_STREAM=auto with free remaps: it streams ($(streamed "$T/auto-free.err") chunks)" \
  test "$(streamed "$T/auto-free.err")" -gt 0
check_eq "  the same tokens" "$(ids "$T/auto-free.err")" "$(ids "$T/big-ref.err")"
done_testing
