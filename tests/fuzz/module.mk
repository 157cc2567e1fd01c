# tests/fuzz: libFuzzer target for the GGUF reader, metadata accessors, model config,
# tensor checks, quantised-block decoding and tokenizers. `make fuzz` builds it with clang
# and fuzzes for FUZZ_SECONDS from the seed corpus (tests/fuzz/corpus, generated GGUF
# files: llama, qwen2 and qwen3, float and quantised); tests/fuzz/test_fuzz_corpus.sh replays
# the corpus and fuzzes briefly as part of `make test`.

FUZZ_SECONDS ?= 60
FUZZ_SRCS    := tests/fuzz/fuzz_gguf.c engine/error.c engine/gguf.c engine/tokenizer.c engine/tokenizer_spm.c \
                engine/tokenizer_bpe.c engine/tokenizer_pre.c engine/model_config.c engine/weights.c engine/driver.c \
                kernels/fatbin_embed.S
FUZZ_BIN     := $(O)/fuzz/fuzz_gguf

$(FUZZ_BIN): $(FUZZ_SRCS) $(wildcard engine/*.h kernels/*.h) tests/fuzz/module.mk
	@mkdir -p $(@D)
	clang -std=gnu11 -g -O1 -D_GNU_SOURCE -I. $(CUDA_CPPFLAGS) -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all $(FUZZ_SRCS) -lpcre2-8 -o $@

.PHONY: fuzz
fuzz: $(FUZZ_BIN)
	@mkdir -p $(O)/fuzz/corpus
	cp -n tests/fuzz/corpus/* $(O)/fuzz/corpus/ 2>/dev/null || true
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=131072 $(O)/fuzz/corpus

TEST_SCRIPTS += tests/fuzz/test_fuzz_corpus.sh
