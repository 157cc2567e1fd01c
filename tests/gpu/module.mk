# tests/gpu/ — checks for a real GPU (tests/gpu/run.sh). kernel_check runs every CUDA
# kernel against its C twin through the driver API; it needs only libc, libdl and libm,
# since the GPU machine may lack the packages the rest of the build uses. On simcuda it
# checks itself (tests/kernels/test_kernel_driver.sh, part of make test).
KERNEL_CHECK := $(O)/tests/gpu/kernel_check

$(O)/obj/tests/gpu/kernel_check.o: CPPFLAGS += $(CUDA_CPPFLAGS)

$(KERNEL_CHECK): $(O)/obj/tests/gpu/kernel_check.o $(O)/obj/kernels/fatbin_embed.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -ldl -lm -o $@
