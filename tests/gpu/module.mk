# tests/gpu/ — checks for a real GPU (tests/gpu/run.sh). kernel_check runs every CUDA
# kernel against its C twin through the driver API; it needs only libc, libdl and libm,
# since the GPU machine may lack the packages the rest of the build uses. On simcuda it
# checks itself (tests/kernels/test_kernel_driver.sh, part of make test).
#
# calibrate times what simcuda's time model charges (copies, in-place host reads, VMM
# calls) on whichever libcuda.so.1 it finds: linked with simcuda's, with a RUNPATH to it,
# as the preload test programs are, so LD_LIBRARY_PATH points it at the real driver. Its
# kernel is calibrate_kernels.fatbin on a GPU, calibrate_kernels.so on simcuda.
# test_gpu_script.sh (make test) checks run.sh, its package and these programs on simcuda.
KERNEL_CHECK := $(O)/tests/gpu/kernel_check
GPU_CALIBRATE := $(O)/tests/gpu/calibrate
GPU_CALIBRATE_SIM := $(O)/tests/gpu/calibrate_kernels.so
GPU_CALIBRATE_FATBIN := $(O)/tests/gpu/calibrate_kernels.fatbin

$(O)/obj/tests/gpu/kernel_check.o: CPPFLAGS += $(CUDA_CPPFLAGS)
$(O)/obj/tests/gpu/calibrate.o: CPPFLAGS += $(CUDA_CPPFLAGS)

$(KERNEL_CHECK): $(O)/obj/tests/gpu/kernel_check.o $(O)/obj/kernels/fatbin_embed.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -ldl -lm -o $@

$(GPU_CALIBRATE): $(O)/obj/tests/gpu/calibrate.o $(O)/lib/simcuda/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ -L$(O)/lib/simcuda -l:libcuda.so.1 \
	    -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../../lib/simcuda' -ldl

$(GPU_CALIBRATE_SIM): $(O)/obj/tests/gpu/calibrate_kernels_sim.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared $^ -o $@

test-progs: $(GPU_CALIBRATE) $(GPU_CALIBRATE_SIM) $(KERNEL_CHECK)
TEST_SCRIPTS += tests/gpu/test_gpu_script.sh

ifeq ($(HAVE_NVCC),1)
$(GPU_CALIBRATE_FATBIN): tests/gpu/calibrate_kernels.cu
	@mkdir -p $(@D)
	$(NVCC) -O3 -Xcompiler -Wall,-Wextra,-Werror -gencode arch=compute_80,code=sm_80 \
	    -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin -o $@ $<
test-progs: $(GPU_CALIBRATE_FATBIN)
endif
