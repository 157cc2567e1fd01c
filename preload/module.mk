# preload/ — libtiermem.so, the LD_PRELOAD interposer (with the policy objects).
PRELOAD_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(wildcard preload/*.c))
LIBS += $(O)/lib/libtiermem.so
INSTALL_FILES += $(O)/lib/libtiermem.so:lib/libtiermem.so

$(O)/obj/preload/%.o: CPPFLAGS += $(CUDA_CPPFLAGS)
$(O)/obj/preload/%.o: CFLAGS += -fvisibility=hidden

# -Bsymbolic: the library's own references never reach its exported hooks.
$(O)/lib/libtiermem.so: $(PRELOAD_OBJS) $(POLICY_OBJS) preload/libtiermem.map
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-Bsymbolic -Wl,--version-script=preload/libtiermem.map \
	  -Wl,-soname,libtiermem.so $(PRELOAD_OBJS) $(POLICY_OBJS) -lnuma -ljansson -o $@

# The public header and a pkg-config file for it and the library, written for PREFIX (the
# file is rewritten only when PREFIX or CUDA_HOME change what it says).
TIERMEM_VERSION := 1.0
TIERMEM_PC := $(O)/pkgconfig/libtiermem.pc
.PHONY: tiermem-pc-check
$(TIERMEM_PC): preload/libtiermem.pc.in tiermem-pc-check
	@mkdir -p $(@D)
	@sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(TIERMEM_VERSION)|' \
	  -e 's|@CUDA_INCLUDE@|$(CUDA_HOME)/include|' $< > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
all: $(TIERMEM_PC)
INSTALL_FILES += $(TIERMEM_PC):lib/pkgconfig/libtiermem.pc preload/tiermem.h:include/tiermem/tiermem.h
