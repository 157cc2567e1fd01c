# tests/policy/ — cmocka unit tests of the policy layer.
POLICY_TESTS := $(O)/tests/policy/test_config $(O)/tests/policy/test_placement $(O)/tests/policy/test_managed \
                $(O)/tests/policy/test_heat $(O)/tests/policy/test_rebalance $(O)/tests/policy/test_prefetch_order \
                $(O)/tests/policy/test_profile $(O)/tests/policy/test_staging_ring $(O)/tests/policy/test_stream_plan
TEST_PROGS += $(POLICY_TESTS)

$(POLICY_TESTS): $(O)/tests/policy/%: $(O)/obj/tests/policy/%.o $(POLICY_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -o $@
TEST_SCRIPTS += tests/policy/test_settings_doc.sh
