# tests/engine: unit tests of the engine's parts (cmocka) and of the whole engine on
# simcuda (shell). Test models are read from ../shared/models (TM_SHARED_DIR).

ENGINE_TEST_NAMES := test_gguf test_tokenizer test_kv_sampler test_load
ENGINE_TEST_PROGS := $(ENGINE_TEST_NAMES:%=$(O)/tests/%)

$(O)/obj/tests/engine/%.o: CPPFLAGS += $(CUDA_CPPFLAGS) -DTM_SHARED_DIR='"$(abspath $(CURDIR)/../shared)"'

$(O)/tests/test_tokenizer: $(O)/obj/tools/mkmodel/gguf_writer.o $(O)/obj/tools/mkmodel/vocab.o

$(ENGINE_TEST_PROGS): $(O)/tests/%: $(O)/obj/tests/engine/%.o $(ENGINE_LIB_OBJS) $(ENGINE_FATBIN_OBJ)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(filter %.o,$^) -lcmocka $(ENGINE_LIB_LIBS) -o $@

TEST_PROGS += $(ENGINE_TEST_PROGS)
# The engine on simcuda; they need the engine, the model generator, simcuda and the
# host-kernel library built (all part of `make`).
TEST_SCRIPTS += tests/engine/test_engine.sh tests/engine/test_engine_errors.sh tests/engine/test_generated_model.sh \
                tests/engine/test_oracle.sh \
                tests/engine/test_architectures.sh tests/engine/test_tokenize_cmd.sh \
                tests/engine/test_chat.sh tests/engine/test_moe.sh

# no_uring: runs a command under a seccomp filter that refuses io_uring (the loader's fallback).
$(O)/tests/engine/no_uring: $(O)/obj/tests/engine/no_uring.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@
test-progs: $(O)/tests/engine/no_uring
TEST_SCRIPTS += tests/engine/test_loader.sh tests/engine/test_llama_habits.sh
