#!/usr/bin/env bash
# The engine's loader keeps weight allocations named under the interposer: with --load=pread
# the pread hook sees each read; with --load=uring (reads the C library never sees) the
# engine reports each piece through tiermem_note_file_read. tiermem-stat shows every
# weight's tensor name either way (read while the engine is held at its first launch,
# SIMCUDA_HOLD); a name rule places token_embd.weight's chunks in DDR though the loader's
# copies are asynchronous (each fills whole chunks); and the tokens equal the run without
# the interposer.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

S=$SCRATCH
llm=$B/bin/tiermem-llm
"$B/bin/tiermem-mkmodel" -o "$S/m.gguf" --layers 2 --dim 768 --heads 12 --kv-heads 3 --ffn 2048 \
  --type f32 --seed 3 > /dev/null 2>&1
# every tensor of the file, from the interposer's own reading of it
under_tiermem TIERMEM_MIN_TIERED=1 -- "$B/tests/preload/filecopy" mmap "$S/m.gguf" > "$S/tensors.out" 2>&1
tensors=$(grep -oE '^tensor [^ ]+' "$S/tensors.out" | cut -d' ' -f2)
check_eq "the model has 21 tensors" "$(wc -w <<<"$tensors")" 21

ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }
SIMCUDA_MEM=1G "$llm" -m "$S/m.gguf" -p "Once upon a time" -n 48 -v --load=mmap > /dev/null 2> "$S/ref.err"
check "the reference generated 48 tokens" test "$(ids "$S/ref.err" | wc -w)" -eq 48

for load in pread uring; do
  # held at its first kernel launch, once every weight is loaded, while the live region is read
  env SIMCUDA_MEM=1G SIMCUDA_HOLD=1:"$S/$load.go" TIERMEM_MIN_TIERED=1 TIERMEM_RULES='name=token_embd.weight=ddr' \
    TIERMEM_STATS="$S/$load.stats" LD_PRELOAD="$(preload_value "$LIBTIERMEM")" \
    "$llm" -m "$S/m.gguf" -p "Once upon a time" -n 48 -v --load=$load > /dev/null 2> "$S/$load.err" &
  pid=$!
  # polls the live region until the last weight is named and its moves are done
  for _ in $(seq 1 300); do
    "$TIERMEM_STAT" --json "$S/$load.stats" > "$S/$load.json" 2> /dev/null &&
      grep -q '"tensor":"blk.1.ffn_down.weight"' "$S/$load.json" &&
      grep -q '"chunks":{"hbm":0,"cxl":0,"ddr":2}[^}]*"tensor":"token_embd.weight"' "$S/$load.json" && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  touch "$S/$load.go"
  wait "$pid"
  check_eq "--load=$load: the engine exits 0" "$?" 0
  check "--load=$load: the weights were read with $load" grep -q "^tiermem-llm: load: method=$load " "$S/$load.err"
  missing=""
  for t in $tensors; do grep -q "\"tensor\":\"$t\"" "$S/$load.json" || missing="$missing $t"; done
  check_eq "--load=$load: tiermem-stat names every weight allocation" "$missing" ""
  embd=$(grep -o '{[^{]*"chunks":{[^}]*}[^}]*"tensor":"token_embd.weight"[^}]*}' "$S/$load.json")
  check "--load=$load: the name rule put token_embd.weight's chunks in ddr" \
    grep -q '"chunks":{"hbm":0,"cxl":0,"ddr":2}' <<<"$embd"
  check "--load=$load: output.weight, matched by no rule, stays in hbm" \
    grep -q '"chunks":{"hbm":2,"cxl":0,"ddr":0}.*"tensor":"output.weight"' "$S/$load.json"
  check_eq "--load=$load: tokens equal the run without the interposer" "$(ids "$S/$load.err")" "$(ids "$S/ref.err")"
done
done_testing
