# tiermem — top-level build.
#
#   make            build everything into build/ (libraries in build/lib, programs in build/bin)
#   make test       build and run every test; the last line is "N passed, N failed"
#   make bench      run the benchmarks (ratios measured side by side in one run)
#   make bench-serve  tiermem-llm serve under multi-turn chat users, HBM-only KV against tiered
#   make demo       the headline: a model larger than device memory, run under the interposer
#   make deps       install the Debian packages the build needs (as root), else print the command
#   make deps-test  the same, and the npm packages the tests compare against (when npm is present)
#   make install    PREFIX=/usr/local DESTDIR=
#   make SAN=1 ...  AddressSanitizer + UndefinedBehaviorSanitizer build, in build-san/
#
# Each folder adds its own targets in a module.mk fragment; this file holds only what they share.

SHELL       := /bin/bash
.DEFAULT_GOAL := all

SAN         ?= 0
ifeq ($(SAN),1)
O           ?= build-san
else
O           ?= build
endif
PREFIX      ?= /usr/local
DESTDIR     ?=
CUDA_HOME   ?= /usr/local/cuda
NVCC        ?= $(CUDA_HOME)/bin/nvcc

# The release every program reports (--version) and the pkg-config file states.
TIERMEM_VERSION := 1.0

CC          ?= gcc
OPT         ?= -O2
WARN        := -Wall -Wextra -Werror
CPPFLAGS    += -D_GNU_SOURCE -I. -DTM_VERSION='"$(TIERMEM_VERSION)"'
CFLAGS      := -std=gnu11 $(OPT) -g -fPIC $(WARN) $(EXTRA_CFLAGS)
LDFLAGS     += -Wl,--as-needed
ifeq ($(SAN),1)
SANFLAGS    := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CFLAGS      += $(SANFLAGS)
LDFLAGS     += $(SANFLAGS)
endif

# Only the layers that talk to the driver see cuda.h (policy/ never does).
CUDA_CPPFLAGS := -I$(CUDA_HOME)/include

HAVE_NVCC   := $(shell test -x $(NVCC) && echo 1)

# Filled in by the module.mk fragments.
LIBS        :=
BINS        :=
TEST_PROGS  :=
TEST_SCRIPTS:=
BENCH_CMDS  :=
INSTALL_FILES :=

# Objects mirror the source tree under $(O)/obj; dependency files come with them.
$(O)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

include mk/deps.mk
deps-test: deps
include $(sort $(wildcard */module.mk */*/module.mk))

.PHONY: all test test-progs bench demo deps deps-test install clean
all: $(LIBS) $(BINS)

NPROC       := $(shell nproc 2>/dev/null || echo 2)

# `make test` is the one command CI and the README use: dependencies, build, run.
test:
	@$(MAKE) --no-print-directory deps-test
	@$(MAKE) --no-print-directory -j$(NPROC) all test-progs
	@O=$(O) SAN=$(SAN) CC=$(CC) tests/run.sh $(TEST_PROGS) $(TEST_SCRIPTS)

test-progs: $(TEST_PROGS)

# `make demo`: the headline on simcuda, from a fresh machine (dependencies, build, run).
demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@O=$(O) tools/demo/demo.sh

bench: all
	@set -e; for b in $(BENCH_CMDS); do O=$(O) $$b; done

# INSTALL_FILES holds "source:destination-relative-to-PREFIX" pairs.
install: all
	@set -e; for pair in $(INSTALL_FILES); do \
	  src=$${pair%%:*}; dst=$(DESTDIR)$(PREFIX)/$${pair#*:}; \
	  install -D -m $$(test -x $$src && echo 755 || echo 644) $$src $$dst; echo "  $$dst"; \
	done

clean:
	rm -rf build build-san

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
