# tests/stat: the operator's tools: --version on every program, tiermem-stat's listing of
# every live process, its JSON, its two "no region" messages and the node exporter.
TEST_SCRIPTS += $(sort $(wildcard tests/stat/test_*.sh))
# test_versions.sh asks bench-kernels too, which only `make bench` builds otherwise
test-progs: $(O)/tools/bench-kernels/bench-kernels
