# simcuda: the emulated CUDA driver, build/lib/simcuda/libcuda.so.1 (+ libcuda.so link).
# Built against the real cuda.h; depends on nothing else in the tree.

SIMCUDA_DIR  := $(O)/lib/simcuda
SIMCUDA_LIB  := $(SIMCUDA_DIR)/libcuda.so.1
SIMCUDA_GEN  := $(O)/gen/simcuda
SIMCUDA_SRCS := $(wildcard tools/simcuda/sim_*.c)
SIMCUDA_OBJS := $(SIMCUDA_SRCS:%.c=$(O)/obj/%.o)

$(O)/obj/tools/simcuda/%.o: CPPFLAGS += $(CUDA_CPPFLAGS) -I$(SIMCUDA_GEN)
$(O)/obj/tools/simcuda/%.o: CFLAGS += -fvisibility=hidden
$(SIMCUDA_OBJS): $(SIMCUDA_GEN)/driver_symbols.h $(SIMCUDA_GEN)/error_table.h

$(SIMCUDA_GEN)/driver_symbols.h: tools/simcuda/gen-driver-symbols.sh $(CUDA_HOME)/include/cudaTypedefs.h
	@mkdir -p $(@D)
	tools/simcuda/gen-driver-symbols.sh $(CUDA_HOME) > $@.tmp && mv $@.tmp $@

$(SIMCUDA_GEN)/error_table.h: tools/simcuda/gen-error-table.sh $(CUDA_HOME)/include/cuda.h
	@mkdir -p $(@D)
	tools/simcuda/gen-error-table.sh $(CUDA_HOME) > $@.tmp && mv $@.tmp $@

# -Bsymbolic: simcuda's own calls never leave the library (an interposer in front of it
# must see each application call once).
$(SIMCUDA_LIB): $(SIMCUDA_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs $(LDFLAGS) -o $@ $^ -lnuma -lnettle -lzstd -ldl -lpthread -lm
	ln -sf libcuda.so.1 $(SIMCUDA_DIR)/libcuda.so

LIBS += $(SIMCUDA_LIB)
INSTALL_FILES += $(SIMCUDA_LIB):lib/tiermem/simcuda/libcuda.so.1 tools/simcuda/simcuda.h:include/tiermem/simcuda.h

# simcuda's NVML: build/lib/simcuda/libnvidia-ml.so.1 (+ libnvidia-ml.so link), the same
# emulated device as libcuda.so.1, whose memory it reads (simcuda's flags above apply).
SIMCUDA_NVML := $(SIMCUDA_DIR)/libnvidia-ml.so.1
SIMCUDA_NVML_OBJS := $(O)/obj/tools/simcuda/nvml/nvml.o

$(SIMCUDA_NVML): $(SIMCUDA_NVML_OBJS) $(SIMCUDA_LIB)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,-z,defs $(LDFLAGS) -o $@ $(SIMCUDA_NVML_OBJS) \
	  -L$(SIMCUDA_DIR) -lcuda -lpthread
	ln -sf libnvidia-ml.so.1 $(SIMCUDA_DIR)/libnvidia-ml.so

LIBS += $(SIMCUDA_NVML)
INSTALL_FILES += $(SIMCUDA_NVML):lib/tiermem/simcuda/libnvidia-ml.so.1
