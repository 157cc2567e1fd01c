#!/usr/bin/env bash
# The file tier (TIERMEM_FILE_TIER=1): tiermem-llm, unmodified, runs a model whose weights
# exceed the HBM and DDR limits together, token for token equal to the run on a device that
# holds it all: chunks copied whole from the model file are dropped when no tier has room
# and read back from the file before a launch needs them. Without the tier the same run is
# out of memory; a file changed under the running process is refused with one error line,
# never served; a CUDA graph captured over file-tier memory replays on its own bytes.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

S=$SCRATCH
llm=$B/bin/tiermem-llm
# 2 layers of dim 768, f32: 53 MiB of weights against 20 MiB of HBM and 20 MiB of DDR
"$B/bin/tiermem-mkmodel" -o "$S/m.gguf" --layers 2 --dim 768 --heads 12 --kv-heads 3 --ffn 2048 \
  --type f32 --seed 3 > /dev/null 2>&1
limits=(SIMCUDA_MEM=1G TIERMEM_HBM_LIMIT=20M TIERMEM_DDR_LIMIT=20M)
ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
weights() { sed -n 's/.* weight_bytes=\([0-9]*\).*/\1/p' "$1"; }

SIMCUDA_MEM=1G "$llm" -m "$S/m.gguf" -p "Once upon a time" -n 12 -v > /dev/null 2> "$S/ref.err"
check "the reference run generated 12 tokens" test "$(ids "$S/ref.err" | wc -w)" -eq 12
check "the weights exceed the HBM and DDR limits together" test "$(weights "$S/ref.err")" -gt $((40 << 20))

under_tiermem "${limits[@]}" -- "$llm" -m "$S/m.gguf" -p "Once upon a time" -n 12 -v > /dev/null 2> "$S/off.err"
check "without the file tier the load runs out of memory" grep -q 'out of device memory while loading weights' \
  "$S/off.err"

under_tiermem "${limits[@]}" TIERMEM_FILE_TIER=1 TIERMEM_STATS="$S/on.stats" -- \
  "$llm" -m "$S/m.gguf" -p "Once upon a time" -n 12 -v > /dev/null 2> "$S/on.err"
check_eq "with the file tier the engine exits 0" "$?" 0
check_eq "its tokens equal the reference's" "$(ids "$S/on.err")" "$(ids "$S/ref.err")"
# the default loader: io_uring, whose reads only tiermem_note_file_read tells the tier of
# (pread where the kernel refuses io_uring, after one line saying so)
if grep -q 'io_uring is refused' "$S/on.err"; then
  check "the default loader fell back to pread" grep -q 'load: method=pread ' "$S/on.err"
else
  check "the default loader read with io_uring" grep -q 'load: method=uring ' "$S/on.err"
fi
json=$("$TIERMEM_STAT" --json "$S/on.stats")
check_eq "tiermem-stat says the file tier is on" "$(grep -o '"file_tier":[a-z]*' <<<"$json")" '"file_tier":true'
check "chunks were dropped" test "$(json_value "$json" file_drops)" -gt 0
check "chunks were read back before launches (file_faults)" test "$(json_value "$json" file_faults)" -gt 0
check_eq "each read back a whole chunk or a tensor's last part" \
  "$(( $(json_value "$json" file_fault_bytes) <= $(json_value "$json" file_faults) * (2 << 20) ))" 1
check_eq "no read-back was refused" "$(json_value "$json" file_refused)" 0
check "hbm never held more than its limit" test "$(json_tier "$json" hbm peak)" -le $((20 << 20))
check "ddr never held more than its limit" test "$(json_tier "$json" ddr peak)" -le $((20 << 20))
check "the table shows the tier's counts" \
  grep -q '^file tier: 0 chunks dropped now ([1-9][0-9]* in all), [1-9][0-9]* read back' \
  <<<"$("$TIERMEM_STAT" "$S/on.stats")"

for method in pread mmap; do
  under_tiermem "${limits[@]}" TIERMEM_FILE_TIER=1 -- \
    "$llm" -m "$S/m.gguf" -p "Once upon a time" -n 12 -v --load "$method" > /dev/null 2> "$S/$method.err"
  check_eq "--load=$method: the same tokens under the file tier" "$(ids "$S/$method.err")" "$(ids "$S/ref.err")"
done

# under heat with TIERMEM_STREAM=on the staging ring stays off: it would map chunks the tier drops
under_tiermem "${limits[@]}" TIERMEM_FILE_TIER=1 TIERMEM_POLICY=heat TIERMEM_STREAM=on TIERMEM_LOG=info -- \
  "$llm" -m "$S/m.gguf" -p "Once upon a time" -n 12 -v > /dev/null 2> "$S/heat.err"
check_eq "heat: the same tokens under the file tier" "$(ids "$S/heat.err")" "$(ids "$S/ref.err")"
check "heat: the staging ring is not taken, with one line saying why" \
  grep -q 'not streamed (TIERMEM_FILE_TIER=1 drops chunks the ring would copy)' "$S/heat.err"

# -------------------------------------------------------------- a loader that reads its tensors back
# filecopy copies every tensor from a mapping of the file into 16 MiB of HBM and DDR, then
# reads each back with cuMemcpyDtoH: the dropped ones are read back from the file first
under_tiermem TIERMEM_MIN_TIERED=1 TIERMEM_HBM_LIMIT=8M TIERMEM_DDR_LIMIT=8M TIERMEM_FILE_TIER=1 \
  TIERMEM_MEMINFO=physical TIERMEM_STATS="$S/copy.stats" -- "$B/tests/preload/filecopy" mmap "$S/m.gguf" > "$S/copy.out" 2>&1
check_eq "filecopy: the loader exits 0" "$?" 0
check "filecopy: every byte it reads back equals the file" grep -q '^copied 21 tensors, every byte equal$' "$S/copy.out"
json=$("$TIERMEM_STAT" --json "$S/copy.stats")
check "filecopy: its device-to-host copies read dropped chunks back" test "$(json_value "$json" file_faults)" -gt 0
# drops and read-backs are charged to the device like any chunk: once every tensor is freed
# the device holds no chunk, its HBM is the pool's alone, and cuMemGetInfo (HBM alone, in
# the physical view) reads as before
check_eq "filecopy: the device holds no chunk after the frees" "$(jq -r '.devices[0].hbm_chunks' <<<"$json")" 0
check_eq "filecopy: the device's HBM bytes equal the hbm tier's" "$(jq -r '.devices[0].hbm_used' <<<"$json")" \
  "$(json_tier "$json" hbm used)"
check "filecopy: cuMemGetInfo's free memory after the frees equals that before the first allocation" \
  grep -Eq '^meminfo free before=([0-9]+) after=\1$' "$S/copy.out"

# -------------------------------------------------------------- a CUDA graph over file-tier memory
# a graph captures a launch over a tensor; ordinary launches over every other tensor then
# read theirs back, dropping chunks to make room; the replay must find its tensor whole
graph_env=(TIERMEM_MIN_TIERED=1 TIERMEM_HBM_LIMIT=8M TIERMEM_DDR_LIMIT=8M TIERMEM_FILE_TIER=1 TIERMEM_LOG=info
           TIERMEM_STATS="$S/graph.stats")
under_tiermem "${graph_env[@]}" -- timeout 120 "$B/tests/preload/filecopy" graph "$S/m.gguf" > "$S/graph.out" 2>&1
check_eq "graph: the probe exits 0" "$?" 0
sed 's/^/# /' "$S/graph.out" | grep -v '^# tiermem: debug'
check "graph: the captured tensor spans chunks" grep -Eq '^graph: .* of [2-9][0-9]* chunks$' "$S/graph.out"
check_eq "graph: every replay summed the file's bytes" "$(grep -c '^graph: replay [123] sum equal$' "$S/graph.out")" 3
check "graph: one line says captured memory keeps its chunks" \
  grep -q '^tiermem: file tier: memory that launches captured into a graph point into keeps its chunks' "$S/graph.out"
check "graph: the ordinary launches dropped and read back chunks meanwhile" \
  test "$(json_value "$("$TIERMEM_STAT" --json "$S/graph.stats")" file_faults)" -gt 0

# -------------------------------------------------------------- IPC of memory with dropped chunks
# the exporter's handle names a tensor some of whose chunks were dropped: the export reads
# them back, and the importer maps memory holding the file's bytes, never a hole
mkdir "$S/ipc"
copy_env=(TIERMEM_MIN_TIERED=1 TIERMEM_HBM_LIMIT=8M TIERMEM_DDR_LIMIT=8M TIERMEM_FILE_TIER=1)
under_tiermem "${copy_env[@]}" -- timeout 120 "$B/tests/preload/filecopy" export "$S/m.gguf" "$S/ipc" \
  > "$S/ipc/exp.out" 2>&1 &
exporter=$!
for _ in $(seq 600); do [ -e "$S/ipc/handle" ] || ! kill -0 "$exporter" 2> /dev/null && break; sleep 0.1; done
under_tiermem "${copy_env[@]}" -- timeout 120 "$B/tests/preload/filecopy" import "$S/m.gguf" "$S/ipc" \
  > "$S/ipc/imp.out" 2>&1
wait "$exporter"
check_eq "ipc: the exporter exits 0" "$?" 0
check "ipc: the exported tensor had chunks dropped" grep -Eq '^exporter: .* placed [0-9]+ of [0-9]+ chunks$' \
  "$S/ipc/exp.out"
check_eq "ipc: the handle is made" "$(sed -n 's/^exporter: export //p' "$S/ipc/exp.out")" CUDA_SUCCESS
check_eq "ipc: the importer opens it" "$(sed -n 's/^importer: open //p' "$S/ipc/imp.out")" CUDA_SUCCESS
check "ipc: the importer reads the file's bytes" grep -q '^importer: every byte equal$' "$S/ipc/imp.out"

# -------------------------------------------------------------- a file changed underneath
cp "$S/m.gguf" "$S/changed.gguf"
under_tiermem "${limits[@]}" TIERMEM_FILE_TIER=1 TIERMEM_STATS="$S/changed.stats" -- \
  "$llm" -m "$S/changed.gguf" -p "Once upon a time" -n 400 -v > /dev/null 2> "$S/changed.err" &
pid=$!
for _ in $(seq 1 600); do   # until decoding reads chunks back
  faults=$(json_value "$("$TIERMEM_STAT" --json "$S/changed.stats" 2> /dev/null)" file_faults)
  [ "${faults:-0}" -gt 0 ] && break
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.1
done
touch -d '2001-01-01' "$S/changed.gguf"   # same bytes, another modification time
wait "$pid"
check "the engine fails instead of running on bytes from a changed file" test $? -ne 0
refusal='^tiermem: error: file tier: model file changed.gguf: it changed since it was loaded (size, time or inode); '
check_eq "one error line names the file and what changed" "$(grep -c "$refusal" "$S/changed.err")" 1
check "the refusal is counted" test "$(json_value "$("$TIERMEM_STAT" --json "$S/changed.stats")" file_refused)" -ge 1
done_testing
