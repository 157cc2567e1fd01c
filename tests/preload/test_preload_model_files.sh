#!/usr/bin/env bash
# Model files the program reads name its device memory: a safetensors file from a small
# generator and a GGUF file, copied from a mapping, from pread buffers and through pinned
# staging; name rules place the named chunks without changing a byte; a hostile header is
# named in one line and changes nothing the program reads; and the engine, unmodified,
# shows every weight by name in tiermem-stat and keeps its tokens under a name rule.
source "$(dirname "$0")/../lib/tap.sh"
source "$(dirname "$0")/preload_lib.sh"

FILECOPY=$B/tests/preload/filecopy
S=$SCRATCH
small=(TIERMEM_MIN_TIERED=1)   # every tensor chunked, so each has a stats record

# -------------------------------------------------------------- safetensors, three ways in
"$FILECOPY" safetensors "$S/model.safetensors"
check "the generator wrote a safetensors file" test -s "$S/model.safetensors"
for mode in mmap pread staging; do
  under_tiermem "${small[@]}" -- "$FILECOPY" $mode "$S/model.safetensors" > "$S/st-$mode.out" 2>&1
  check_eq "safetensors, $mode: the loader exits 0" "$?" 0
  check "safetensors, $mode: every byte arrived" grep -q 'copied 3 tensors, every byte equal' "$S/st-$mode.out"
  for t in model.embed_tokens.weight model.norm.weight lm_head.weight; do
    check "safetensors, $mode: $t is named in the stats region" grep -q "^tensor $t stats-name=$t " "$S/st-$mode.out"
  done
done

# -------------------------------------------------------------- GGUF from a mapping
"$B/bin/tiermem-mkmodel" -o "$S/m.gguf" --layers 2 --dim 768 --heads 12 --kv-heads 3 --ffn 2048 \
  --type f32 --seed 3 > /dev/null 2>&1
under_tiermem "${small[@]}" -- "$FILECOPY" mmap "$S/m.gguf" > "$S/gguf.out" 2>&1
check_eq "GGUF, mmap: the loader exits 0" "$?" 0
tensors=$(grep -c '^tensor ' "$S/gguf.out")
named=$(grep -cE '^tensor ([^ ]+) stats-name=\1 ' "$S/gguf.out")
check_eq "GGUF, mmap: all 21 tensors are named after themselves" "$named/$tensors" "21/21"

# -------------------------------------------------------------- name rules
# mmap and pread copy each tensor whole and synchronously (its old bytes are dead: the chunks
# are replaced); staging copies 1 MiB pieces asynchronously, so the chunks already hold live
# bytes and migrate on the interposer's thread, off the copy's path
for mode in mmap pread staging; do
  under_tiermem "${small[@]}" TIERMEM_RULES='name=*embed*=ddr,name=lm_*=ddr' -- \
    "$FILECOPY" $mode "$S/model.safetensors" > "$S/rule-$mode.out" 2>&1
  check "rule, $mode: every byte still equal" grep -q 'every byte equal' "$S/rule-$mode.out"
  check "rule, $mode: the embedding's chunks are all in ddr" \
    grep -q '^tensor model.embed_tokens.weight .* hbm=0 cxl=0 ddr=2$' "$S/rule-$mode.out"
  check "rule, $mode: lm_head too" grep -q '^tensor lm_head.weight .* hbm=0 cxl=0 ddr=2$' "$S/rule-$mode.out"
  check "rule, $mode: the norm, matched by no rule, stays in hbm" \
    grep -q '^tensor model.norm.weight .* hbm=1 cxl=0 ddr=0$' "$S/rule-$mode.out"
done
check "rule, staging: the chunks holding live bytes moved by migration" \
  grep -q 'name_moves=[1-9][0-9]* migrations=[1-9][0-9]*$' "$S/rule-staging.out"
check "rule, mmap: whole synchronous copies replaced the chunks without migrating" \
  grep -q 'name_moves=0 migrations=0$' "$S/rule-mmap.out"
under_tiermem "${small[@]}" TIERMEM_RULES='name=nothing.matches=ddr' -- "$FILECOPY" mmap "$S/model.safetensors" \
  > "$S/norule.out" 2>&1
check "a rule matching no tensor moves nothing" grep -q '^tensor model.embed_tokens.weight .* hbm=2 cxl=0 ddr=0$' \
  "$S/norule.out"

# -------------------------------------------------------------- hostile headers
# GGUF v3 claiming 2^40 tensors; a safetensors header that is not JSON
printf 'GGUF\003\000\000\000\000\000\000\000\000\001\000\000\000\000\000\000\000\000\000\000' > "$S/hostile.gguf"
head -c 100000 /dev/urandom >> "$S/hostile.gguf"
printf '\040\000\000\000\000\000\000\000{"a": [1, 2, 3 oops, not json!!}' > "$S/hostile.safetensors"
head -c 4096 /dev/zero >> "$S/hostile.safetensors"
for f in hostile.gguf hostile.safetensors; do
  plain=$("$FILECOPY" checksum "$S/$f" 2>&1)
  under_tiermem -- "$FILECOPY" checksum "$S/$f" > "$S/$f.out" 2> "$S/$f.err"
  check_eq "$f: read returns the same bytes under the interposer" "$(cat "$S/$f.out")" "$plain"
  check_eq "$f: one line names the file and why it is ignored" \
    "$(grep -c "^tiermem: warning: model file $f: .*; its tensors are not named$" "$S/$f.err")/$(wc -l < "$S/$f.err")" "1/1"
done

# -------------------------------------------------------------- the engine, unmodified
llm=$B/bin/tiermem-llm
# The engine is held at its first kernel launch, after every weight is loaded
# (SIMCUDA_HOLD), while the live region is read; then it decodes 32 sequences (the
# reference runs the same).
for _ in $(seq 32); do echo "Once upon a time"; done > "$S/prompts.txt"
run_engine() {  # run_engine NAME ENV... : -n 48 in the background, held, stats at $S/NAME.stats
  local name=$1; shift
  ENGINE_GO=$S/$name.go
  env SIMCUDA_MEM=1G SIMCUDA_HOLD=1:"$ENGINE_GO" "$@" TIERMEM_STATS="$S/$name.stats" \
    LD_PRELOAD="$(preload_value "$LIBTIERMEM")" \
    "$llm" -m "$S/m.gguf" --prompts-file "$S/prompts.txt" -n 48 -v > /dev/null 2> "$S/$name.err" &
  ENGINE_PID=$!
}
# Polls the live region until the last weight is named, then lets the engine go on.
named_json() {
  local named=1
  for _ in $(seq 1 300); do
    "$TIERMEM_STAT" --json "$1" > "$2" 2> /dev/null && grep -q '"tensor":"blk.1.ffn_down.weight"' "$2" &&
      named=0 && break
    kill -0 "$ENGINE_PID" 2> /dev/null || break
    sleep 0.1
  done
  touch "$ENGINE_GO"
  return $named
}
ids() { sed -n 's/^tiermem-llm: seq 0 generated ids: //p' "$1"; }

SIMCUDA_MEM=1G "$llm" -m "$S/m.gguf" --prompts-file "$S/prompts.txt" -n 48 -v > /dev/null 2> "$S/ref.err"
run_engine names TIERMEM_MIN_TIERED=1
named_json "$S/names.stats" "$S/names.json"
check "engine: tiermem-stat shows the weights by name while it runs" test -s "$S/names.json"
missing=""
for t in $(grep -oE '^tensor [^ ]+' "$S/gguf.out" | cut -d' ' -f2); do
  grep -q "\"tensor\":\"$t\"" "$S/names.json" || missing="$missing $t"
done
check_eq "engine: every weight allocation carries its tensor's name" "$missing" ""
wait "$ENGINE_PID"
check_eq "engine: tokens unchanged by naming" "$(ids "$S/names.err")" "$(ids "$S/ref.err")"

run_engine rule TIERMEM_MIN_TIERED=1 TIERMEM_RULES='name=token_embd.weight=ddr'
named_json "$S/rule.stats" "$S/rule.json"
embd=$(grep -o '{[^{]*"chunks":{[^}]*}[^}]*"tensor":"token_embd.weight"[^}]*}' "$S/rule.json")
check "engine rule: token_embd.weight's chunks are all in ddr" grep -q '"chunks":{"hbm":0,"cxl":0,"ddr":2}' <<<"$embd"
check "engine rule: output.weight stays in hbm" \
  grep -q '"chunks":{"hbm":2,"cxl":0,"ddr":0}.*"tensor":"output.weight"' "$S/rule.json"
wait "$ENGINE_PID"
check_eq "engine rule: token for token equal to the run without the interposer" "$(ids "$S/rule.err")" \
  "$(ids "$S/ref.err")"
check "engine rule: the reference generated 48 tokens" test "$(ids "$S/ref.err" | wc -w)" -eq 48
done_testing
