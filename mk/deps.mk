# Debian packages the build and the tests need. `make deps` installs the missing ones as
# root and otherwise prints the exact command; with everything present it does nothing.
DEB_PACKAGES := build-essential pkg-config clang llvm libnuma-dev liburing-dev libcxl-dev \
                libbpf-dev bpftool uthash-dev libelf-dev zlib1g-dev libcmocka-dev numactl \
                systemtap-sdt-dev jq gnuplot-nox libmicrohttpd-dev libjansson-dev curl libpcre2-dev \
                groff-base man-db nettle-dev patchelf valgrind

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; \
	  done | tr '\n' ' '); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "installing: $$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else \
	  echo "missing packages; run as root:"; \
	  echo "  apt-get install -y $$missing"; exit 1; \
	fi

# llama.cpp as the tests' oracle (tools/oracle/oracle.mjs): node-llama-cpp's CPU build from
# npm, pinned, in build/oracle, when npm is present; without it the oracle tests say so
# and skip.
ORACLE_DIR := build/oracle
ORACLE_NPM := node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1
deps-test: deps-oracle
deps-oracle:
	@if [ -d $(ORACLE_DIR)/node_modules/node-llama-cpp ]; then exit 0; fi; \
	if ! command -v npm >/dev/null; then echo "oracle: npm not found: the llama.cpp comparisons will be skipped"; exit 0; fi; \
	echo "oracle: npm install $(ORACLE_NPM) into $(ORACLE_DIR)"; \
	mkdir -p $(ORACLE_DIR) && npm install --prefix $(ORACLE_DIR) --no-audit --no-fund --omit=optional \
	  $(ORACLE_NPM) >$(ORACLE_DIR)/npm.log 2>&1 || \
	  echo "oracle: npm install failed (see $(ORACLE_DIR)/npm.log): the llama.cpp comparisons will be skipped"
.PHONY: deps-oracle
