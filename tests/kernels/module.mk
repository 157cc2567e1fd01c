# tests/kernels/ — cmocka tests of the kernels: number formats (exact), the fp8 codec
# against NVIDIA's cuda_fp8.h, and every C twin against a plain scalar reference
# (called through its exported symbol with a simcuda_launch, as simcuda calls it), and
# the ranges each twin declares to simcuda's time model.
KERNEL_TESTS := $(O)/tests/kernels/test_kernel_formats $(O)/tests/kernels/test_kernel_fp8_nvidia \
                $(O)/tests/kernels/test_kernel_twins $(O)/tests/kernels/test_kernel_matmul \
                $(O)/tests/kernels/test_kernel_attention $(O)/tests/kernels/test_kernel_touch \
                $(O)/tests/kernels/test_kernel_quants $(O)/tests/kernels/test_kernel_moe
TEST_PROGS += $(KERNEL_TESTS)

$(O)/tests/kernels/test_kernel_formats $(O)/tests/kernels/test_kernel_quants: $(O)/tests/kernels/%: $(O)/obj/tests/kernels/%.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -lm -o $@

# cuda_fp8.h is C++; its host conversions are the reference.
$(O)/tests/kernels/test_kernel_fp8_nvidia: tests/kernels/test_kernel_fp8_nvidia.cc kernels/fp8.h kernels/f16.h
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(OPT) -g $(WARN) $(SANFLAGS) -I. $(CUDA_CPPFLAGS) $< $(LDFLAGS) -lcmocka -o $@

# The twin tests link the kernel library itself (rpath: build/lib beside build/tests).
$(O)/tests/kernels/test_kernel_twins $(O)/tests/kernels/test_kernel_matmul \
$(O)/tests/kernels/test_kernel_attention $(O)/tests/kernels/test_kernel_touch \
$(O)/tests/kernels/test_kernel_moe: $(O)/tests/kernels/%: $(O)/obj/tests/kernels/%.o $(O)/lib/libtiermem-kernels.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $< -L$(O)/lib -ltiermem-kernels -Wl,-rpath,'$$ORIGIN/../../lib' -lcmocka -lm -o $@

# The GPU check program, run on simcuda (test_kernel_driver.sh): built with the tests.
TEST_SCRIPTS += tests/kernels/test_kernel_driver.sh
test-progs: $(O)/tests/gpu/kernel_check $(O)/lib/simcuda/libcuda.so.1

# The CUDA kernels themselves, run on the CPU (cuda_emu.h) as a simcuda module, checked
# against the twins by kernel_check (test_kernel_cuda_emu.sh). No sanitizers: it switches
# stacks (ucontext), which they do not follow.
KERNELS_CUDA_EMU := $(O)/tests/kernels/libtiermem-kernels-cuda-emu.so
$(KERNELS_CUDA_EMU): tests/kernels/cuda_emu_module.cc tests/kernels/cuda_emu.h \
                     $(wildcard kernels/*.cu kernels/*.cuh kernels/*.h)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(OPT) -g -fPIC -shared $(WARN) -Wno-unknown-pragmas -I. $< -o $@
TEST_SCRIPTS += tests/kernels/test_kernel_cuda_emu.sh
test-progs: $(KERNELS_CUDA_EMU)
