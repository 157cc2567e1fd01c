#!/usr/bin/env bash
# `tiermem-llm --tokenize`: token ids on one line, from vocabulary-only GGUF files (no
# weights, no device), with BOS unless --no-bos; every vocabulary in ../shared/models
# tokenises its first reference case as its .out says; an unknown pre-tokenizer warns
# with its name; a file without a vocabulary is one clear error.
source "$(dirname "$0")/../lib/tap.sh"
require_models ggml-vocab-llama-spm.gguf ggml-vocab-gpt-2.gguf ggml-vocab-deepseek-llm.gguf ggml-vocab-phi-3.gguf
LLM=$B/bin/tiermem-llm
MODELS=$TM_SHARED/models
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

check_eq "llama-spm: BOS and two words" "$("$LLM" --tokenize -m "$MODELS/ggml-vocab-llama-spm.gguf" -p "Hello world")" \
  "1 15043 3186"
check_eq "gpt-2: --no-bos" "$("$LLM" --tokenize --no-bos -m "$MODELS/ggml-vocab-gpt-2.gguf" -p "Hello world")" "15496 995"
for v in "$MODELS"/ggml-vocab-*.gguf; do
  name=$(basename "$v" .gguf)
  first=$(awk 'BEGIN { RS = "\n__ggml_vocab_test__\n" } NR == 1 { printf "%s", $0 }' "$v.inp")
  want=$(head -1 "$v.out" | sed 's/^ *//')
  check_eq "$name: the first reference case" "$("$LLM" --tokenize --no-bos -m "$v" -p "$first")" "$want"
done

# An unknown tokenizer.ggml.pre (patched in a copy, same length): GPT-2's splitter, a warning.
cp "$MODELS/ggml-vocab-deepseek-llm.gguf" "$T/pre.gguf"
sed -i 's/deepseek-llm/deepseek-xyz/g' "$T/pre.gguf"
"$LLM" --tokenize -m "$T/pre.gguf" -p "Hello world" >"$T/out" 2>"$T/err"
check "an unknown pre-tokenizer still tokenizes" test $? -eq 0 -a -s "$T/out"
check "and warns naming it" grep -q "pre-tokenizer 'deepseek-xyz' (tokenizer.ggml.pre) is not known" "$T/err"

printf 'GGUF\003\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' >"$T/empty.gguf"
"$LLM" --tokenize -m "$T/empty.gguf" -p hi >/dev/null 2>"$T/err"
check "a file without a vocabulary: exit status 1" test $? -eq 1
check "and the message names the missing key" grep -q "tokenizer.ggml.model is missing" "$T/err"
"$LLM" --tokenize -m "$MODELS/ggml-vocab-gpt-2.gguf" >/dev/null 2>"$T/err"
check "--tokenize without -p: exit status 2" test $? -eq 2
done_testing
