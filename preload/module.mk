# preload/ — libtiermem.so, the LD_PRELOAD interposer (with the policy objects).
PRELOAD_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(wildcard preload/*.c preload/*/*.c))
LIBS += $(O)/lib/libtiermem.so
# The oldest C library libtiermem.so runs on: the newest GLIBC_x.y it needs (dlopen, dlinfo
# and pthread moved into libc in 2.34). tests/preload/test_preload_glibc.sh holds the build to it.
TIERMEM_MIN_GLIBC := 2.34
INSTALL_FILES += $(O)/lib/libtiermem.so:lib/libtiermem.so

$(O)/obj/preload/%.o: CPPFLAGS += $(CUDA_CPPFLAGS)
$(O)/obj/preload/%.o: CFLAGS += -fvisibility=hidden

# glibc's first symbol version differs by architecture; the version script names x86-64's.
GLIBC_BASE_VERSION := $(if $(findstring aarch64,$(shell $(CC) -dumpmachine)),GLIBC_2.17,GLIBC_2.2.5)
$(O)/gen/libtiermem.map: preload/libtiermem.map
	@mkdir -p $(@D)
	sed 's/GLIBC_2\.2\.5/$(GLIBC_BASE_VERSION)/g' $< > $@

# -Bsymbolic: the library's own references never reach its exported hooks.
$(O)/lib/libtiermem.so: $(PRELOAD_OBJS) $(POLICY_OBJS) $(O)/gen/libtiermem.map
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-Bsymbolic -Wl,--version-script=$(O)/gen/libtiermem.map \
	  -Wl,-soname,libtiermem.so $(PRELOAD_OBJS) $(POLICY_OBJS) -lnuma -ljansson -luring -o $@

# The public header and a pkg-config file for it and the library, written for PREFIX (the
# file is rewritten only when PREFIX or CUDA_HOME change what it says).
TIERMEM_PC := $(O)/pkgconfig/libtiermem.pc
.PHONY: tiermem-pc-check
$(TIERMEM_PC): preload/libtiermem.pc.in tiermem-pc-check
	@mkdir -p $(@D)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(TIERMEM_VERSION)|' \
	  -e 's|@CUDA_INCLUDE@|$(CUDA_HOME)/include|' $< > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
all: $(TIERMEM_PC)
INSTALL_FILES += $(TIERMEM_PC):lib/pkgconfig/libtiermem.pc preload/tiermem.h:include/tiermem/tiermem.h
