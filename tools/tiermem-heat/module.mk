# tools/tiermem-heat — the eBPF heat collector: its BPF programs (libbpf CO-RE, clang -target bpf),
# their skeleton (bpftool gen skeleton) and loader, and the tool that runs them beside a process.
# Skipped with a one-line reason where clang, bpftool or the kernel's BTF is
# missing; everything else builds and runs without them (heat comes from launches then).
BPF_CLANG   ?= clang
BPFTOOL     ?= bpftool
BTF_VMLINUX ?= /sys/kernel/btf/vmlinux
EBPF_GEN    := $(O)/gen/ebpf
EBPF_SKIP   := $(shell command -v $(BPF_CLANG) >/dev/null || echo "$(BPF_CLANG) not found"; \
                 command -v $(BPFTOOL) >/dev/null || echo "$(BPFTOOL) not found"; \
                 test -r $(BTF_VMLINUX) || echo "no kernel BTF at $(BTF_VMLINUX)")

ifeq ($(strip $(EBPF_SKIP)),)
TIERMEM_HEAT_OBJS := $(O)/obj/tools/tiermem-heat/main.o $(O)/obj/tools/tiermem-heat/chunk_heat.o \
                     $(O)/obj/tools/tiermem-heat/region_write.o \
                     $(O)/obj/tools/tiermem-heat/collector.o $(O)/obj/tools/tiermem-stat/stats_read.o \
                     $(O)/obj/tools/tiermem-stat/heat_view.o $(O)/obj/preload/region/region_path.o \
                     $(O)/obj/policy/heat.o $(O)/obj/policy/units.o
BINS += $(O)/bin/tiermem-heat $(O)/bin/tiermem-heatmap
INSTALL_FILES += $(O)/bin/tiermem-heat:bin/tiermem-heat $(O)/bin/tiermem-heatmap:bin/tiermem-heatmap

# the script with the version it came with (its --version)
$(O)/bin/tiermem-heatmap: tools/tiermem-heat/tiermem-heatmap Makefile
	@mkdir -p $(@D)
	sed 's/^version=.*/version=$(TIERMEM_VERSION)/' $< > $@.tmp && chmod 755 $@.tmp && mv $@.tmp $@

$(EBPF_GEN)/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file $(BTF_VMLINUX) format c > $@.tmp && mv $@.tmp $@

$(EBPF_GEN)/heat.bpf.o: tools/tiermem-heat/heat.bpf.c tools/tiermem-heat/heat_bpf.h $(EBPF_GEN)/vmlinux.h
	$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -I. -I$(EBPF_GEN) \
	  -I/usr/include/$(shell $(CC) -print-multiarch) -c $< -o $@

$(EBPF_GEN)/heat.skel.h: $(EBPF_GEN)/heat.bpf.o
	$(BPFTOOL) gen skeleton $< name tm_heat_bpf > $@.tmp && mv $@.tmp $@

$(O)/obj/tools/tiermem-heat/collector.o: $(EBPF_GEN)/heat.skel.h
$(O)/obj/tools/tiermem-heat/collector.o: CPPFLAGS += -I$(EBPF_GEN)

$(O)/bin/tiermem-heat: $(TIERMEM_HEAT_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lbpf -ldl -o $@
else
$(info tiermem-heat and the eBPF heat source are not built: $(strip $(EBPF_SKIP)))
endif

BENCH_CMDS += tools/tiermem-heat/bench-heat.sh
