# tests/fuzz: libFuzzer targets, built with clang (ASan + UBSan):
#   fuzz_gguf   the GGUF reader, metadata accessors, model config of every architecture,
#               tensor checks, quantised-block decoding and tokenizers
#   fuzz_model  a GGUF file through config, tokenizer set-up, weight checks and model_load's
#               sizing, on a host-memory device
#   fuzz_stats  the stats-region reader of tiermem-stat
#   fuzz_header the interposer's GGUF and safetensors header parsers (tensor tables)
#   fuzz_profile the warm-start profile decoder (TIERMEM_PROFILE; seeds: tests/fuzz/corpus-profile)
# `make fuzz` fuzzes each for FUZZ_SECONDS from its seed corpus (tests/fuzz/corpus: generated
# GGUF files; tests/fuzz/corpus-stats: a small region; fuzz_header starts from
# tests/fuzz/corpus-safetensors and the GGUF corpus). `make fuzz-long` runs FUZZ_LONG_RUNS
# inputs in all, split evenly, one process at a time. tests/fuzz/test_fuzz_corpus.sh replays
# the corpora and fuzzes briefly as part of `make test`.

FUZZ_SECONDS   ?= 60
FUZZ_LONG_RUNS ?= 10000000
FUZZ_DIR       := $(O)/fuzz
FUZZ_CFLAGS    := -std=gnu11 -g -O1 -D_GNU_SOURCE -I. $(CUDA_CPPFLAGS) -fsanitize=fuzzer,address,undefined \
                  -fno-sanitize-recover=all
FUZZ_ENGINE    := engine/error.c engine/gguf.c engine/tokenizer.c engine/tokenizer_spm.c \
                  engine/tokenizer_bpe.c engine/tokenizer_pre.c engine/model_config.c

FUZZ_LOAD      := engine/load.c engine/load_stream.c engine/load_uring.c engine/load_pread.c engine/load_progress.c
FUZZ_gguf_SRCS  := tests/fuzz/fuzz_gguf.c $(FUZZ_ENGINE) engine/weights.c $(FUZZ_LOAD) engine/driver.c \
                   kernels/fatbin_embed.S
FUZZ_model_SRCS := tests/fuzz/fuzz_model.c $(FUZZ_ENGINE) engine/weights.c $(FUZZ_LOAD) engine/model.c \
                   engine/kv_cache.c engine/kv_prefix.c
FUZZ_stats_SRCS := tests/fuzz/fuzz_stats.c tools/tiermem-stat/stats_read.c tools/tiermem-stat/heat_view.c \
                   preload/region/region_path.c policy/heat.c
FUZZ_gguf_LIBS  := -lpcre2-8 -luring
FUZZ_model_LIBS := -lpcre2-8 -luring
FUZZ_gguf_CORPUS  := tests/fuzz/corpus
FUZZ_model_CORPUS := tests/fuzz/corpus
FUZZ_stats_CORPUS := tests/fuzz/corpus-stats
FUZZ_header_SRCS  := tests/fuzz/fuzz_header.c preload/model/tensor_table.c preload/model/parse_gguf.c preload/model/parse_safetensors.c
FUZZ_header_CORPUS := tests/fuzz/corpus-safetensors tests/fuzz/corpus
FUZZ_header_LIBS  :=
FUZZ_profile_SRCS := tests/fuzz/fuzz_profile.c policy/profile.c
FUZZ_profile_CORPUS := tests/fuzz/corpus-profile
FUZZ_profile_LIBS := -lm
FUZZ_TARGETS   := gguf model stats header profile
FUZZ_BINS      := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

define fuzz-target
$(FUZZ_DIR)/fuzz_$(1): $(FUZZ_$(1)_SRCS) $(wildcard engine/*.h kernels/*.h tools/tiermem-stat/*.h) \
    preload/region/stats_layout.h preload/model/tensor_table.h tests/fuzz/module.mk
	@mkdir -p $$(@D)
	clang $(FUZZ_CFLAGS) $(FUZZ_$(1)_SRCS) $(FUZZ_$(1)_LIBS) -o $$@
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz-target,$(t))))

# fuzz-run TARGET FLAGS: fuzzes one target from a working copy of its seed corpus
define fuzz-run
	@mkdir -p $(FUZZ_DIR)/corpus-$(1)
	cp -n $(addsuffix /*,$(FUZZ_$(1)_CORPUS)) $(FUZZ_DIR)/corpus-$(1)/ 2>/dev/null || true
	$(FUZZ_DIR)/fuzz_$(1) $(2) -max_len=131072 -print_final_stats=1 $(FUZZ_DIR)/corpus-$(1)

endef

.PHONY: fuzz fuzz-long
fuzz: $(FUZZ_BINS)
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz-run,$(t),-max_total_time=$(FUZZ_SECONDS)))

fuzz-long: $(FUZZ_BINS)
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz-run,$(t),-runs=$(shell echo $$(( ($(FUZZ_LONG_RUNS) + $(words $(FUZZ_TARGETS)) - 1) / $(words $(FUZZ_TARGETS)) )))))

TEST_SCRIPTS += tests/fuzz/test_fuzz_corpus.sh
