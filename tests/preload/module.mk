# tests/preload/ — the interposer's tests: unit tests of its pieces, and driver-API programs
# run on simcuda with and without libtiermem.so in front (shell tests drive them).
#
#   $(O)/tests/preload/probe          an ordinary CUDA program (links libcuda.so.1)
#   $(O)/tests/preload/doors          reaches the driver through every door
#   $(O)/tests/preload/devices        two devices: a stray context, per-device limits, peer access
#   $(O)/tests/preload/serving        what serving stacks do: pools of their own, stream-ordered
#                                     frees, graphs
#   $(O)/tests/preload/migrate_stress chunks migrate while 8 streams check their data
#   $(O)/tests/preload/kernels.so     its host kernels (a simcuda module)
#   $(O)/tests/preload/filecopy       loads a model file as programs do (mmap, pread, staging)
#   $(O)/tests/preload/header_probe   writes hostile model headers; opens files and says what it cost
#   $(O)/tests/preload/ipc_peer       one side of a legacy CUDA IPC exchange between processes
#   $(O)/tests/preload/pool_probe     chunked allocations freed and made again (pooled chunks)
#   $(O)/tests/preload/collector_probe the heat policy on heat written into its region by a collector
#   $(O)/tests/preload/region_scribble what a region's owner can write into it (hostile fields, random rewrites)
#   $(O)/tests/preload/vmm_retain     cuMemRetainAllocationHandle on chunked memory and own handles
#   $(O)/tests/preload/nvml_linked    NVML's memory answers beside cuMemGetInfo's, linked with
#   $(O)/tests/preload/nvml_dlopen    libnvidia-ml.so.1, or reaching it with dlopen and dlsym
#   $(O)/tests/preload/ledger_hold    holds a ledger's lock as a hung process would
#   $(O)/tests/preload/unit/...       the core rooms linked alone on a fake driver (unit/module.mk)

PRELOAD_TEST_DIR := $(O)/tests/preload
PRELOAD_TEST_KERNELS := $(PRELOAD_TEST_DIR)/kernels.so
PRELOAD_TEST_LINK := -L$(O)/lib/simcuda -l:libcuda.so.1 \
                     -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../../lib/simcuda' -lpthread -ldl

$(O)/obj/tests/preload/%.o: CPPFLAGS += $(CUDA_CPPFLAGS) \
    -DTM_TEST_KERNELS='"$(abspath $(PRELOAD_TEST_KERNELS))"'

$(PRELOAD_TEST_KERNELS): $(O)/obj/tests/preload/kernels.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared $^ -o $@

$(PRELOAD_TEST_DIR)/probe: $(O)/obj/tests/preload/probe.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/obj/tools/tiermem-stat/stats_read.o $(O)/obj/tools/tiermem-stat/heat_view.o $(O)/obj/preload/region/region_path.o $(O)/obj/policy/heat.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/doors: $(O)/obj/tests/preload/doors.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/obj/tools/tiermem-stat/stats_read.o $(O)/obj/tools/tiermem-stat/heat_view.o $(O)/obj/preload/region/region_path.o $(O)/obj/policy/heat.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/heat_probe: $(O)/obj/tests/preload/heat_probe.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/migrate_stress: $(O)/obj/tests/preload/migrate_stress.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/devices: $(O)/obj/tests/preload/devices.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/serving: $(O)/obj/tests/preload/serving.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/ipc_peer: $(O)/obj/tests/preload/ipc_peer.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/pool_probe: $(O)/obj/tests/preload/pool_probe.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/region_scribble: $(O)/obj/tests/preload/region_scribble.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@

$(PRELOAD_TEST_DIR)/collector_probe: $(O)/obj/tests/preload/collector_probe.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/vmm_retain: $(O)/obj/tests/preload/vmm_retain.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/obj/tools/tiermem-stat/stats_read.o $(O)/obj/tools/tiermem-stat/heat_view.o $(O)/obj/preload/region/region_path.o $(O)/obj/policy/heat.o \
    $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/ledger_hold: $(O)/obj/tests/preload/ledger_hold.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@

NVML_VIEW_OBJS := $(O)/obj/tests/preload/nvml_view.o $(O)/obj/tests/preload/probe_util.o

$(PRELOAD_TEST_DIR)/nvml_linked: $(O)/obj/tests/preload/nvml_linked.o $(NVML_VIEW_OBJS) \
    $(O)/lib/simcuda/libcuda.so.1 $(O)/lib/simcuda/libnvidia-ml.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ -L$(O)/lib/simcuda -l:libnvidia-ml.so.1 $(PRELOAD_TEST_LINK)

$(PRELOAD_TEST_DIR)/nvml_dlopen: $(O)/obj/tests/preload/nvml_dlopen.o $(NVML_VIEW_OBJS) \
    $(O)/lib/simcuda/libcuda.so.1 $(O)/lib/simcuda/libnvidia-ml.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK)

TENSOR_TABLE_OBJS := $(O)/obj/preload/model/tensor_table.o $(O)/obj/preload/model/parse_gguf.o \
                     $(O)/obj/preload/model/parse_safetensors.o

$(PRELOAD_TEST_DIR)/filecopy: $(O)/obj/tests/preload/filecopy.o $(O)/obj/tests/preload/probe_util.o \
    $(O)/obj/tools/tiermem-stat/stats_read.o $(O)/obj/tools/tiermem-stat/heat_view.o $(O)/obj/preload/region/region_path.o $(O)/obj/policy/heat.o \
    $(TENSOR_TABLE_OBJS) $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(PRELOAD_TEST_LINK) -ljansson

$(PRELOAD_TEST_DIR)/header_probe: $(O)/obj/tests/preload/header_probe.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@

# Unit tests of the pieces that need no driver.
$(PRELOAD_TEST_DIR)/test_registry: $(O)/obj/tests/preload/test_registry.o $(O)/obj/preload/mem/registry.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -lpthread -o $@

TEST_PROGS += $(PRELOAD_TEST_DIR)/test_registry

$(PRELOAD_TEST_DIR)/test_tensor_table: $(O)/obj/tests/preload/test_tensor_table.o $(TENSOR_TABLE_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -ljansson -o $@

TEST_PROGS += $(PRELOAD_TEST_DIR)/test_tensor_table

$(PRELOAD_TEST_DIR)/test_ledger_file: $(O)/obj/tests/preload/test_ledger_file.o $(O)/obj/preload/region/ledger_file.o \
    $(O)/obj/preload/base/libc_real.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -ldl -o $@

$(PRELOAD_TEST_DIR)/test_log_escape: $(O)/obj/tests/preload/test_log_escape.o $(O)/obj/preload/base/log.o \
    $(O)/obj/preload/base/libc_real.o $(POLICY_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -ldl -o $@

TEST_PROGS += $(PRELOAD_TEST_DIR)/test_ledger_file $(PRELOAD_TEST_DIR)/test_log_escape
TEST_SCRIPTS += $(sort $(wildcard tests/preload/test_*.sh))

# The shell tests need these built by `make test`.
test-progs: $(PRELOAD_TEST_DIR)/probe $(PRELOAD_TEST_DIR)/doors $(PRELOAD_TEST_DIR)/heat_probe \
            $(PRELOAD_TEST_DIR)/serving $(PRELOAD_TEST_DIR)/devices $(PRELOAD_TEST_DIR)/filecopy $(PRELOAD_TEST_DIR)/migrate_stress \
            $(PRELOAD_TEST_DIR)/ipc_peer $(PRELOAD_TEST_DIR)/pool_probe $(PRELOAD_TEST_DIR)/vmm_retain \
            $(PRELOAD_TEST_DIR)/collector_probe $(PRELOAD_TEST_DIR)/ledger_hold $(PRELOAD_TEST_DIR)/region_scribble $(PRELOAD_TEST_DIR)/header_probe \
            $(PRELOAD_TEST_DIR)/nvml_linked $(PRELOAD_TEST_DIR)/nvml_dlopen \
            $(PRELOAD_TEST_KERNELS) \
            $(O)/lib/libtiermem.so $(O)/bin/tiermem-stat

# `make test-aarch64`: the aarch64 (GH200) cross-build of libtiermem.so and the preload
# tests under qemu-user (tests/preload/test_preload_aarch64.sh, also part of `make test`,
# where it skips without the toolchain); `make deps-aarch64` installs the toolchain, kept
# out of DEB_PACKAGES for its size.
AARCH64_DEB_PACKAGES := gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libnuma-dev:arm64 \
                        libjansson-dev:arm64 liburing-dev:arm64 systemtap-sdt-dev:arm64
.PHONY: test-aarch64 deps-aarch64
test-aarch64: all test-progs
	@O=$(O) AARCH64_TESTS=all tests/run.sh tests/preload/test_preload_aarch64.sh
deps-aarch64:
	@if [ "$$(id -u)" != 0 ]; then echo "as root: dpkg --add-architecture arm64; apt-get update;" \
	  "apt-get install -y $(AARCH64_DEB_PACKAGES)"; exit 1; fi; \
	dpkg --add-architecture arm64 && DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(AARCH64_DEB_PACKAGES)

# `make stress`: the migration integrity test at full length (10^6 chunk migrations).
.PHONY: stress
stress: all $(PRELOAD_TEST_DIR)/migrate_stress $(PRELOAD_TEST_KERNELS) $(O)/bin/tiermem-stat
	@O=$(O) TM_STRESS_MIGRATIONS=$${TM_STRESS_MIGRATIONS:-1000000} tests/run.sh tests/preload/test_preload_migrate.sh

# The core rooms' unit tests, each linked without the hooks.
include tests/preload/unit/module.mk
