# tools/config-doc — the TIERMEM_* table of docs/configuration.md and libtiermem(7), generated
# from the code (policy/config.c and policy/doc/settings_doc.c). `make docs` rewrites both
# pages; tests/policy/test_settings_doc.sh fails when they differ from what it would write.
CONFIG_DOC := $(O)/tools/tiermem-config-doc
CONFIG_DOC_OBJS := $(O)/obj/tools/config-doc/config_doc.o $(O)/obj/policy/doc/settings_doc.o

$(CONFIG_DOC): $(CONFIG_DOC_OBJS) $(POLICY_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lm -o $@

docs: $(CONFIG_DOC)
	@CONFIG_DOC=$(CONFIG_DOC) tools/config-doc/update.sh

test-progs: $(CONFIG_DOC)
.PHONY: docs
