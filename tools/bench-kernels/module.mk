# tools/bench-kernels: speed of the C twins (decode attention fp8 vs f16 KV at context
# 2048; matvec GB/s per weight type), run by `make bench`.
BENCH_KERNELS := $(O)/tools/bench-kernels/bench-kernels
BENCH_CMDS += $(BENCH_KERNELS)
bench: $(BENCH_KERNELS)

$(O)/obj/tools/bench-kernels/%.o: CFLAGS += -O3 -fopenmp

$(BENCH_KERNELS): $(O)/obj/tools/bench-kernels/bench_kernels.o $(O)/lib/libtiermem-kernels.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fopenmp $< -L$(O)/lib -ltiermem-kernels -Wl,-rpath,'$$ORIGIN/../../lib' -lm -o $@
