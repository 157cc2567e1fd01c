# Debian packages the build and the tests need (prometheus: its promtool checks the
# exporters' text). `make deps` installs the missing ones as
# root and otherwise prints the exact command; with everything present it does nothing.
DEB_PACKAGES := build-essential pkg-config clang llvm libnuma-dev liburing-dev libcxl-dev \
                libbpf-dev bpftool uthash-dev libelf-dev zlib1g-dev libcmocka-dev numactl \
                systemtap-sdt-dev jq gnuplot-nox libmicrohttpd-dev libjansson-dev curl libpcre2-dev \
                groff-base man-db nettle-dev patchelf prometheus libzstd-dev valgrind

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

# llama.cpp's CUDA build as a real engine on simcuda (tests/llamacpp): node-llama-cpp with
# its prebuilt CUDA backend, pinned, in build/llamacpp-cuda, when npm is present. Its install
# script is not run: it would build llama.cpp from source where no GPU answers its probe.
# The backend links libcudart.so.13 and libcublas.so.13 of the CUDA 13 toolkit. Without
# npm or the package the test says so and skips.
LLAMACPP_CUDA_DIR := build/llamacpp-cuda
LLAMACPP_CUDA_NPM := node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64-cuda@3.22.1
deps-test: deps-llamacpp-cuda
deps-llamacpp-cuda:
	@if [ -d $(LLAMACPP_CUDA_DIR)/node_modules/@node-llama-cpp/linux-x64-cuda ]; then exit 0; fi; \
	if ! command -v npm >/dev/null; then echo "llamacpp-cuda: npm not found: the llama.cpp CUDA test will be skipped"; exit 0; fi; \
	echo "llamacpp-cuda: npm install $(LLAMACPP_CUDA_NPM) into $(LLAMACPP_CUDA_DIR)"; \
	mkdir -p $(LLAMACPP_CUDA_DIR) && npm install --prefix $(LLAMACPP_CUDA_DIR) --no-audit --no-fund --omit=optional \
	  --ignore-scripts $(LLAMACPP_CUDA_NPM) >$(LLAMACPP_CUDA_DIR)/npm.log 2>&1 || \
	  echo "llamacpp-cuda: npm install failed (see $(LLAMACPP_CUDA_DIR)/npm.log): the llama.cpp CUDA test will be skipped"
.PHONY: deps-llamacpp-cuda
