#!/usr/bin/env bash
# Models from tiermem-mkmodel: every weight type loads and generates sane tokens (finite
# logits that vary, tokens that are not all one id), a tied embedding works, the gpt2
# vocabulary works, and a model of a few hundred MB loads and generates.
source "$(dirname "$0")/../lib/tap.sh"
LLM=$B/bin/tiermem-llm
MK=$B/bin/tiermem-mkmodel
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ids_of() { sed -n "s/^tiermem-llm: seq 0 generated ids: //p" "$1"; }
# sane FILE.logits FILE.err: finite logits with spread at every step, >= 3 distinct ids
sane() {
  awk '{ lo = 1e30; hi = -1e30; for (k = 3; k <= NF; k++) { v = $k + 0
         if (v != v || $k ~ /nan|inf/) { print "# step " $1 ": non-finite logit"; exit 1 }
         if (v < lo) lo = v; if (v > hi) hi = v }
         if (hi - lo < 1e-3) { print "# step " $1 ": constant logits"; exit 1 } }' "$1" || return 1
  [ "$(ids_of "$2" | tr ' ' '\n' | sort -u | wc -l)" -ge 3 ]
}

for type in f32 f16 bf16 q8_0; do
  "$MK" -o "$T/$type.gguf" --type $type --layers 2 --dim 128 --heads 4 --kv-heads 2 --ffn 256 --vocab 512 --seed 7 >/dev/null
  "$LLM" -m "$T/$type.gguf" -p "once upon a time the little girl" -n 16 --kv-blocks 64 -v \
    --dump-logits "$T/$type.logits" >/dev/null 2>"$T/$type.err"
  check "$type model generates" test $? -eq 0
  check "$type model: finite, varied logits and tokens" sane "$T/$type.logits" "$T/$type.err"
done
# lower-precision weights of the same random model stay close to f32: step-0 top token
top() { head -1 "$1" | awk '{ m = -1e30; for (k = 3; k <= NF; k++) if ($k + 0 > m) { m = $k + 0; id = k - 3 } print id }'; }
check_eq "f16 weights pick f32's first token" "$(top "$T/f16.logits")" "$(top "$T/f32.logits")"
check_eq "q8_0 weights pick f32's first token" "$(top "$T/q8_0.logits")" "$(top "$T/f32.logits")"

# The block-quantised types (rows of whole 256-value blocks for the k-quants), and a
# Q4_K_M-style file that mixes Q4_K and Q6_K tensors.
mk_q() { "$MK" -o "$T/$1.gguf" --type $1 --layers 2 --dim 256 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --seed 7 >/dev/null; }
for type in f32 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k q4_k_m; do
  mk_q $type
  "$LLM" -m "$T/$type.gguf" -p "once upon a time the little girl" -n 16 --kv-blocks 64 -v \
    --dump-logits "$T/k_$type.logits" >/dev/null 2>"$T/k_$type.err"
  check "$type model generates" test $? -eq 0
  [ $type = f32 ] || check "$type model: finite, varied logits and tokens" sane "$T/k_$type.logits" "$T/k_$type.err"
done
# Q6_K for output, attn_v and ffn_down: strictly between the all-Q4_K and all-Q6_K files.
size() { stat -c %s "$T/$1.gguf"; }
check "the q4_k_m file is larger than q4_k and smaller than q6_k" \
  test "$(size q4_k_m)" -gt "$(size q4_k)" -a "$(size q4_k_m)" -lt "$(size q6_k)"
for type in q6_k q5_k q5_1 q4_1; do
  check_eq "$type weights pick f32's first token" "$(top "$T/k_$type.logits")" "$(top "$T/k_f32.logits")"
done

"$MK" -o "$T/tied.gguf" --tied --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --vocab 512 >/dev/null
"$LLM" -m "$T/tied.gguf" -p "the dog" -n 8 --kv-blocks 16 -v --dump-logits "$T/tied.logits" >/dev/null 2>"$T/tied.err"
check "without output.weight the model runs" test $? -eq 0
# With the embedding as output matrix, a random one-layer model's residual is dominated by
# the input token's own embedding, so greedy decoding repeats the last prompt token.
check_eq "without output.weight the embedding serves as output" "$(ids_of "$T/tied.err" | cut -d' ' -f1)" \
  "$(sed -n 's/^tiermem-llm: seq 0 prompt ids: //p' "$T/tied.err" | awk '{ print $NF }')"

# Teacher forcing: the forced ids are the generated ones; an id outside the vocabulary is refused.
"$LLM" -m "$T/tied.gguf" -p "the dog" -n 3 --kv-blocks 16 -v --force-ids "5 6 7" >/dev/null 2>"$T/forced.err"
check_eq "--force-ids: the tokens taken are the forced ones" "$(ids_of "$T/forced.err")" "5 6 7"
"$LLM" -m "$T/tied.gguf" -p "the dog" -n 3 --kv-blocks 16 --force-ids "5 99999" >/dev/null 2>"$T/forced.err"
check "--force-ids with an id outside the vocabulary: exit 1, named" \
  grep -q "force-ids: token 99999 is outside the vocabulary" "$T/forced.err"

"$MK" -o "$T/gpt2.gguf" --vocab-type gpt2 --layers 1 --dim 64 --heads 2 --kv-heads 1 --ffn 128 --vocab 700 >/dev/null
"$LLM" -m "$T/gpt2.gguf" -p "the little girl" -n 8 --kv-blocks 16 -v >"$T/gpt2.out" 2>"$T/gpt2.err"
check "a gpt2-vocabulary model runs" test $? -eq 0
check_eq "its prompt is BOS + 3 merged words" "$(sed -n 's/^tiermem-llm: seq 0 prompt ids: //p' "$T/gpt2.err" | wc -w)" 4

# A few hundred MB: loads (one allocation per tensor) and generates.
start=$(date +%s)
"$MK" -o "$T/big.gguf" --target-size 300M --type f16 >"$T/mk.out"
check "mkmodel writes ~300 MB in seconds" test $(( $(date +%s) - start )) -lt 30
size=$(stat -c %s "$T/big.gguf")
check "the file is about 300 MiB" test "$size" -gt 280000000 -a "$size" -lt 350000000
"$LLM" -m "$T/big.gguf" -p "once upon a time" -n 8 -v --dump-logits "$T/big.logits" >/dev/null 2>"$T/big.err"
check "the ~300 MB model loads and generates" test $? -eq 0
check "its tokens and logits are sane" sane "$T/big.logits" "$T/big.err"
grep '^tiermem-llm: summary' "$T/big.err" | sed 's/^/# /'
check "all of its weights went to the device" \
  awk -v s="$size" '/summary:/ { for (i = 1; i <= NF; i++) if ($i ~ /^weight_bytes=/) { split($i, a, "="); w = a[2] } }
                    END { exit !(w > 0.99 * s - 4000000 && w <= s) }' "$T/big.err"

# The output is never written through a symlink, nor into something other than a file.
echo keep >"$T/target"
ln -s "$T/target" "$T/link.gguf"
"$MK" -o "$T/link.gguf" --target-size 1M 2>"$T/err"
check_eq "mkmodel refuses an output that is a symlink" "$?" "1"
check "naming it" grep -q "cannot create '$T/link.gguf': it is a symlink" "$T/err"
check_eq "and leaves what it points to alone" "$(cat "$T/target")" "keep"
mkfifo "$T/fifo.gguf"
"$MK" -o "$T/fifo.gguf" --target-size 1M 2>"$T/err"
check_eq "mkmodel refuses an output that is a FIFO" "$?" "1"
check "naming it" grep -q "cannot write '$T/fifo.gguf': not a regular file" "$T/err"
done_testing
