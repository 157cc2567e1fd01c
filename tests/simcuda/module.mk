# tests/simcuda — conformance tests of the CUDA driver API, run against simcuda.
#
#   $(O)/tests/simcuda_conformance   written only against cuda.h; the same sources run on a
#                                     real GPU with tests/gpu/conformance.sh
#   $(O)/tests/simcuda_only          what only simcuda has (SIMCUDA_* settings, host-kernel
#                                     ABI, the time model, unimplemented functions,
#                                     undefined-behaviour answers)
#   $(O)/tests/simcuda_kernels.so    the test kernels as a simcuda module
#   $(O)/tests/simcuda_kernels_abi1.so  a module of host-kernel ABI 1
#
# Both programs link against simcuda's libcuda.so.1 with a RUNPATH to it, so they run as is.

SIMCUDA_TEST_DIR     := tests/simcuda
SIMCUDA_TEST_LIB     := $(O)/lib/simcuda/libcuda.so.1
SIMCUDA_TEST_GEN     := $(O)/gen/tests/simcuda
SIMCUDA_KERNELS_SO   := $(O)/tests/simcuda_kernels.so
SIMCUDA_NOT_MODULE_SO:= $(O)/tests/simcuda_not_a_module.so
SIMCUDA_ABI1_SO      := $(O)/tests/simcuda_kernels_abi1.so

CONFORMANCE_SRCS  := harness.c conformance_main.c test_init.c test_memory.c test_vmm.c \
                     test_stream_event.c test_module_launch.c test_proc_address.c test_graph.c test_ipc.c
SIMCUDA_ONLY_SRCS := harness.c simcuda_only_main.c test_simcuda_env.c test_simcuda_modules.c \
                     test_simcuda_handles.c test_simcuda_time.c test_simcuda_managed.c test_simcuda_ipc.c \
                     test_simcuda_export.c test_simcuda_library.c
CONFORMANCE_OBJS  := $(addprefix $(O)/obj/$(SIMCUDA_TEST_DIR)/,$(CONFORMANCE_SRCS:.c=.o))
SIMCUDA_ONLY_OBJS := $(addprefix $(O)/obj/$(SIMCUDA_TEST_DIR)/,$(SIMCUDA_ONLY_SRCS:.c=.o))

$(O)/obj/$(SIMCUDA_TEST_DIR)/%.o: CPPFLAGS += $(CUDA_CPPFLAGS) -I$(SIMCUDA_TEST_GEN) \
    -DCONFORMANCE_MODULE='"$(abspath $(SIMCUDA_KERNELS_SO))"' \
    -DSIMCUDA_NOT_A_MODULE='"$(abspath $(SIMCUDA_NOT_MODULE_SO))"' \
    -DSIMCUDA_ABI1_MODULE='"$(abspath $(SIMCUDA_ABI1_SO))"'

# Every CUresult of the cuda.h in use, for the error-name tests and failure messages.
$(SIMCUDA_TEST_GEN)/cu_results.inc: $(SIMCUDA_TEST_DIR)/gen-results.sh $(CUDA_HOME)/include/cuda.h
	@mkdir -p $(@D)
	$(SIMCUDA_TEST_DIR)/gen-results.sh $(CUDA_HOME)/include/cuda.h > $@.tmp && mv $@.tmp $@

$(O)/obj/$(SIMCUDA_TEST_DIR)/harness.o $(O)/obj/$(SIMCUDA_TEST_DIR)/test_proc_address.o: \
    $(SIMCUDA_TEST_GEN)/cu_results.inc

$(SIMCUDA_KERNELS_SO): $(O)/obj/$(SIMCUDA_TEST_DIR)/kernels_host.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared $^ -o $@

$(SIMCUDA_NOT_MODULE_SO): $(O)/obj/$(SIMCUDA_TEST_DIR)/not_a_module.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared $^ -o $@

$(SIMCUDA_ABI1_SO): $(O)/obj/$(SIMCUDA_TEST_DIR)/kernels_abi1.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared $^ -o $@

SIMCUDA_TEST_LINK := -L$(dir $(SIMCUDA_TEST_LIB)) -l:libcuda.so.1 \
                     -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../lib/simcuda' -lcmocka -lpthread -ldl

$(O)/tests/simcuda_conformance: $(CONFORMANCE_OBJS) $(SIMCUDA_TEST_LIB) | $(SIMCUDA_KERNELS_SO)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(CONFORMANCE_OBJS) -o $@ $(SIMCUDA_TEST_LINK)

# The export tests recompute the integrity answer with simcuda's own digest (sim_integrity.o);
# the library tests read the engine's nvcc-built fatbin when there is one.
SIMCUDA_ONLY_EXTRA := $(O)/obj/tools/simcuda/sim_integrity.o
ifeq ($(HAVE_NVCC),1)
$(O)/obj/$(SIMCUDA_TEST_DIR)/test_simcuda_library.o: \
    CPPFLAGS += -DSIMCUDA_NVCC_FATBIN='"$(abspath $(O)/kernels/tiermem-kernels.fatbin)"'
SIMCUDA_ONLY_ORDER := $(O)/kernels/tiermem-kernels.fatbin
endif

$(O)/tests/simcuda_only: $(SIMCUDA_ONLY_OBJS) $(SIMCUDA_ONLY_EXTRA) $(SIMCUDA_TEST_LIB) \
    | $(SIMCUDA_KERNELS_SO) $(SIMCUDA_NOT_MODULE_SO) $(SIMCUDA_ABI1_SO) $(SIMCUDA_ONLY_ORDER)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(SIMCUDA_ONLY_OBJS) $(SIMCUDA_ONLY_EXTRA) -o $@ $(SIMCUDA_TEST_LINK) -lnettle -lzstd

TEST_PROGS   += $(O)/tests/simcuda_conformance $(O)/tests/simcuda_only
TEST_SCRIPTS += $(SIMCUDA_TEST_DIR)/test_gpu_build.sh $(SIMCUDA_TEST_DIR)/test_touch_probe.sh \
                $(SIMCUDA_TEST_DIR)/test_async.sh

# The managed-memory model alone (plain C, no driver).
$(O)/tests/simcuda_uvm: $(O)/obj/$(SIMCUDA_TEST_DIR)/test_uvm.o $(O)/obj/tools/simcuda/sim_uvm.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ -lcmocka

TEST_PROGS   += $(O)/tests/simcuda_uvm

# The integrity answer's digest alone: nettle's MD2 against RFC 1319, HMAC-MD2 against a
# published answer the runtime accepted.
$(O)/tests/simcuda_integrity: $(O)/obj/$(SIMCUDA_TEST_DIR)/test_integrity.o $(O)/obj/tools/simcuda/sim_integrity.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ -lcmocka -lnettle

TEST_PROGS   += $(O)/tests/simcuda_integrity
