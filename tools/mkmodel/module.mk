# tiermem-mkmodel: random-weight llama GGUF files for tests, benchmarks and the demo.
MKMODEL_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(wildcard tools/mkmodel/*.c))

$(O)/bin/tiermem-mkmodel: $(MKMODEL_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lm -o $@

BINS += $(O)/bin/tiermem-mkmodel
INSTALL_FILES += $(O)/bin/tiermem-mkmodel:bin/tiermem-mkmodel
