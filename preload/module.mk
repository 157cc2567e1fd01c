# preload/ — libtiermem.so, the LD_PRELOAD interposer (with the policy objects).
PRELOAD_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(wildcard preload/*.c))
LIBS += $(O)/lib/libtiermem.so
# The oldest C library libtiermem.so runs on: the newest GLIBC_x.y it needs (dlopen, dlinfo
# and pthread moved into libc in 2.34). tests/preload/test_preload_glibc.sh holds the build to it.
TIERMEM_MIN_GLIBC := 2.34
INSTALL_FILES += $(O)/lib/libtiermem.so:lib/libtiermem.so

$(O)/obj/preload/%.o: CPPFLAGS += $(CUDA_CPPFLAGS)
$(O)/obj/preload/%.o: CFLAGS += -fvisibility=hidden

# -Bsymbolic: the library's own references never reach its exported hooks.
$(O)/lib/libtiermem.so: $(PRELOAD_OBJS) $(POLICY_OBJS) preload/libtiermem.map
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-Bsymbolic -Wl,--version-script=preload/libtiermem.map \
	  -Wl,-soname,libtiermem.so $(PRELOAD_OBJS) $(POLICY_OBJS) -lnuma -ljansson -o $@
