# tests/cudart — programs built with nvcc against the CUDA runtime (libcudart), run on
# simcuda by test_cudart.sh, with and without libtiermem.so in front.
#
# Every tests/cudart/NAME.cu is built twice: $(O)/tests/cudart/NAME_static (nvcc's default,
# libcudart_static.a linked in) and NAME_shared (-cudart shared, libcudart.so.13 from the
# toolkit). Neither has a RUNPATH: the script puts simcuda first on LD_LIBRARY_PATH, the
# way a user runs a program on it. Without nvcc nothing is built and the script says so.
# Another program drops in as NAME.cu plus its cases in test_cudart.sh, and its line(s) in
# cases.txt: tests/gpu/run.sh runs those on a GPU (CUDART_TEST_DEVICE=gpu, cudart_tap.h),
# and make test fails on a program without one.

CUDART_TEST_DIR   := tests/cudart
CUDART_TEST_OUT   := $(O)/tests/cudart
CUDART_TEST_CU    := $(wildcard $(CUDART_TEST_DIR)/*.cu)
CUDART_TEST_NAMES := $(notdir $(CUDART_TEST_CU:.cu=))
CUDART_NVCC_FLAGS := -std=c++17 -O2 -I. -Xcompiler -Wall,-Wextra,-Werror -Xcompiler -pthread
# Libraries a program needs beyond the runtime: CUDART_LIBS_<name>.
CUDART_LIBS_cudart_cublas := -lcublas

ifeq ($(HAVE_NVCC),1)
CUDART_TEST_BINS := $(foreach n,$(CUDART_TEST_NAMES),$(CUDART_TEST_OUT)/$(n)_static $(CUDART_TEST_OUT)/$(n)_shared)

$(CUDART_TEST_OUT)/%_static: $(CUDART_TEST_DIR)/%.cu $(CUDART_TEST_DIR)/cudart_tap.h
	@mkdir -p $(@D)
	$(NVCC) $(CUDART_NVCC_FLAGS) -cudart static -o $@ $< $(CUDART_LIBS_$*)

$(CUDART_TEST_OUT)/%_shared: $(CUDART_TEST_DIR)/%.cu $(CUDART_TEST_DIR)/cudart_tap.h
	@mkdir -p $(@D)
	$(NVCC) $(CUDART_NVCC_FLAGS) -cudart shared -o $@ $< $(CUDART_LIBS_$*)

test-progs: $(CUDART_TEST_BINS)
endif

# The script needs simcuda and the interposer whether or not the programs exist.
test-progs: $(O)/lib/simcuda/libcuda.so.1 $(O)/lib/libtiermem.so
TEST_SCRIPTS += $(CUDART_TEST_DIR)/test_cudart.sh
