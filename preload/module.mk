# preload/ — libtiermem.so, the LD_PRELOAD interposer (with the policy objects).
PRELOAD_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(wildcard preload/*.c))
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
	  -Wl,-soname,libtiermem.so $(PRELOAD_OBJS) $(POLICY_OBJS) -lnuma -ljansson -o $@
