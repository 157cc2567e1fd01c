# Debian packages the build and the tests need. `make deps` installs the missing ones as
# root and otherwise prints the exact command; with everything present it does nothing.
DEB_PACKAGES := build-essential pkg-config clang llvm libnuma-dev liburing-dev libcxl-dev \
                libbpf-dev bpftool uthash-dev libelf-dev zlib1g-dev libcmocka-dev numactl \
                systemtap-sdt-dev jq gnuplot-nox libmicrohttpd-dev libjansson-dev curl

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
