# tests/stat: the operator's tools: --version on every program, tiermem-stat's listing of
# every live process, its JSON, its two "no region" messages and the node exporter.
TEST_SCRIPTS += $(sort $(wildcard tests/stat/test_*.sh))
# test_versions.sh asks bench-kernels too, which only `make bench` builds otherwise
test-progs: $(O)/tools/bench-kernels/bench-kernels

# the Prometheus text writer and the server's metrics written through it
TEST_PROGS += $(O)/tests/stat/test_prom_text
$(O)/tests/stat/test_prom_text: $(O)/obj/tests/stat/test_prom_text.o $(O)/obj/tools/tiermem-stat/prom_text.o \
                                $(O)/obj/engine/serve_metrics.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -o $@
