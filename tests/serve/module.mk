# tests/serve: tiermem-llm serve driven by real clients: curl, and the official openai npm
# package, which `make deps` installs into $(O)/npm when npm is present (pinned version;
# the test says why it skips otherwise).
OPENAI_NPM_VERSION := 4.95.0

deps-test: deps-npm
.PHONY: deps-npm
deps-npm:
	@if ! command -v npm >/dev/null; then exit 0; fi; \
	if grep -qs '"version": "$(OPENAI_NPM_VERSION)"' $(O)/npm/node_modules/openai/package.json; then exit 0; fi; \
	echo "installing the openai npm package $(OPENAI_NPM_VERSION) into $(O)/npm"; \
	npm install --prefix $(O)/npm --no-audit --no-fund --silent --fetch-retries=1 --fetch-timeout=30000 \
	  openai@$(OPENAI_NPM_VERSION) || \
	  echo "warning: npm could not install openai@$(OPENAI_NPM_VERSION); tests/serve/test_serve_openai.sh will skip"

$(O)/tests/test_chat_template: $(O)/obj/tests/serve/test_chat_template.o $(O)/obj/engine/chat.o \
                               $(O)/obj/engine/gguf.o $(O)/obj/engine/error.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lcmocka -o $@

TEST_PROGS += $(O)/tests/test_chat_template
TEST_SCRIPTS += tests/serve/test_serve.sh tests/serve/test_serve_openai.sh tests/serve/test_serve_tiered.sh

# idle_clients: holds a server's connections open doing nothing (tests/serve/test_serve_idle.sh)
$(O)/tests/serve/idle_clients: $(O)/obj/tests/serve/idle_clients.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -o $@
test-progs: $(O)/tests/serve/idle_clients
TEST_SCRIPTS += tests/serve/test_serve_idle.sh
