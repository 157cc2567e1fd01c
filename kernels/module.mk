# kernels/: the C twins as a simcuda module (build/lib/libtiermem-kernels.so) and the CUDA
# kernels as one fatbin for sm_80 and sm_90 (+ compute_90 PTX for newer GPUs), embedded in
# an object the engine links: $(O)/obj/kernels/fatbin_embed.o, which defines
# tm_kernels_fatbin[] and tm_kernels_fatbin_size (kernels/fatbin.h; size 0 without nvcc).
# Other fragments must name these paths literally: make expands prerequisites when it
# reads a fragment, and this one may be read after theirs.

KERNELS_TWIN_SRCS := $(filter-out kernels/fatbin_embed.%,$(wildcard kernels/*.c))
KERNELS_TWIN_OBJS := $(KERNELS_TWIN_SRCS:%.c=$(O)/obj/%.o)
KERNELS_LIB       := $(O)/lib/libtiermem-kernels.so
KERNELS_CU        := $(wildcard kernels/*.cu)
KERNELS_FATBIN    := $(O)/kernels/tiermem-kernels.fatbin
KERNELS_FATBIN_OBJ := $(O)/obj/kernels/fatbin_embed.o
# IEEE division and square root and no flushing of denormals (nvcc's defaults, spelled
# out): the twins compute the same way, and fp8.h/f16.h decode subnormals through f32
# denormals.
KERNELS_NVCC_FLAGS := -std=c++17 -O3 -I. -Xcompiler -Wall \
    -ftz=false -prec-div=true -prec-sqrt=true \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -gencode arch=compute_90,code=compute_90

# The twins are the engine's CPU speed on simcuda: -O3 for the vectoriser, OpenMP for
# threads, and only the kernels (SIMCUDA_KERNEL) exported. No contraction into FMA: the
# compiler would fuse differently in the one- and two-token paths (and in the x86-64-v3
# clone), and a result must not depend on the batch around it.
$(KERNELS_TWIN_OBJS): CFLAGS += -O3 -fopenmp -fvisibility=hidden -ffp-contract=off

# -z nodelete: a module unload (dlclose) must not unmap code that libgomp's idle worker
# threads still sit in.
$(KERNELS_LIB): $(KERNELS_TWIN_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared $(CFLAGS) -O3 -fopenmp $(LDFLAGS) -Wl,-z,nodelete -o $@ $^ -lm

ifeq ($(HAVE_NVCC),1)
# kernels/module.cu includes every .cu file: one translation unit gives one cubin per
# architecture, hence one CUmodule holding every kernel.
$(KERNELS_FATBIN): kernels/module.cu $(KERNELS_CU) $(wildcard kernels/*.h)
	@mkdir -p $(@D)
	$(NVCC) $(KERNELS_NVCC_FLAGS) -fatbin -o $@ kernels/module.cu

$(KERNELS_FATBIN_OBJ): kernels/fatbin_embed.S $(KERNELS_FATBIN)
	@mkdir -p $(@D)
	$(CC) -c -DTM_FATBIN_PATH='"$(abspath $(KERNELS_FATBIN))"' -o $@ $<
else
$(KERNELS_FATBIN_OBJ): kernels/fatbin_embed.S
	@mkdir -p $(@D)
	@echo "kernels: no nvcc at $(NVCC): the .cu kernels are skipped (embedded fatbin is empty)"
	@$(CC) -c -o $@ $<
endif

LIBS += $(KERNELS_LIB) $(KERNELS_FATBIN_OBJ)
INSTALL_FILES += $(KERNELS_LIB):lib/tiermem/libtiermem-kernels.so
