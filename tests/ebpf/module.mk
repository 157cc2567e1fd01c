# tests/ebpf/ — the eBPF heat source and tiermem-heat against simcuda's touch probes (the
# ground truth), and how they degrade. They skip with a reason where tiermem-heat was not
# built or BPF cannot be loaded (not root, no BTF).
TEST_SCRIPTS += $(sort $(wildcard tests/ebpf/test_*.sh))
