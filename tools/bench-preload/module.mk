# tools/bench-preload — make bench: libtiermem.so's cost per driver call, with and without it.
BENCH_PRELOAD_KERNELS := $(O)/lib/bench-preload-kernels.so
BINS += $(O)/bin/bench-preload
LIBS += $(BENCH_PRELOAD_KERNELS)
BENCH_CMDS += tools/bench-preload/bench-preload.sh

$(O)/obj/tools/bench-preload/%.o: CPPFLAGS += $(CUDA_CPPFLAGS) \
    -DTM_BENCH_KERNELS='"$(abspath $(BENCH_PRELOAD_KERNELS))"'

$(BENCH_PRELOAD_KERNELS): $(O)/obj/tools/bench-preload/kernels.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared $^ -o $@

$(O)/bin/bench-preload: $(O)/obj/tools/bench-preload/bench.o $(O)/obj/preload/mem/registry.o $(O)/obj/preload/model/host_ranges.o \
    $(O)/obj/preload/model/file_refs.o $(O)/obj/preload/model/tensor_table.o $(O)/obj/preload/model/parse_gguf.o \
    $(O)/obj/preload/model/parse_safetensors.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(BENCH_PRELOAD_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ -L$(O)/lib/simcuda -l:libcuda.so.1 \
	      -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../lib/simcuda' -lpthread
