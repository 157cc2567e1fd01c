# engine/: tiermem-llm, the reference inference engine (GGUF llama models, paged KV cache,
# kernels through the driver API loaded at run time).
#
# ENGINE_LIB_OBJS are the parts tests link (with ENGINE_LIB_LIBS); cli.o adds main, and the server's objects
# bring libmicrohttpd and jansson. The fatbin object comes from
# kernels/module.mk, named literally because that fragment is read after this one.

ENGINE_LIB_SRCS := engine/error.c engine/gguf.c engine/tokenizer.c engine/tokenizer_spm.c engine/tokenizer_bpe.c \
                   engine/tokenizer_pre.c engine/model_config.c engine/weights.c engine/driver.c engine/kv_cache.c \
                   engine/kv_prefix.c engine/model.c engine/forward.c engine/sampler.c engine/device_timer.c \
                   engine/text.c engine/step.c engine/generate.c engine/tokenize_cmd.c engine/chat.c engine/chat_cmd.c \
                   engine/load.c engine/load_stream.c engine/load_uring.c engine/load_pread.c engine/load_progress.c
ENGINE_LIB_OBJS := $(ENGINE_LIB_SRCS:%.c=$(O)/obj/%.o)
ENGINE_LIB_LIBS := -luring -lpcre2-8 -ldl -lm
ENGINE_FATBIN_OBJ := $(O)/obj/kernels/fatbin_embed.o
ENGINE_SERVE_SRCS := engine/serve_loop.c engine/serve_http.c engine/serve_api.c engine/serve_metrics.c \
                     tools/tiermem-stat/prom_text.c
ENGINE_SERVE_OBJS := $(ENGINE_SERVE_SRCS:%.c=$(O)/obj/%.o)

$(O)/obj/engine/%.o: CPPFLAGS += $(CUDA_CPPFLAGS)

# The engine finds simcuda and the host-kernel library relative to itself, so a plain
# build runs without LD_LIBRARY_PATH; they are order-only prerequisites of the binary.
$(O)/bin/tiermem-llm: $(ENGINE_LIB_OBJS) $(ENGINE_SERVE_OBJS) $(O)/obj/engine/cli.o $(ENGINE_FATBIN_OBJ) \
                      | $(O)/lib/simcuda/libcuda.so.1 $(O)/lib/libtiermem-kernels.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(ENGINE_LIB_OBJS) $(ENGINE_SERVE_OBJS) $(O)/obj/engine/cli.o $(ENGINE_FATBIN_OBJ) \
	      -lmicrohttpd -ljansson -lpthread $(ENGINE_LIB_LIBS) -o $@

BINS += $(O)/bin/tiermem-llm
INSTALL_FILES += $(O)/bin/tiermem-llm:bin/tiermem-llm
