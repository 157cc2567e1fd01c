# tests/preload/unit/ — unit tests of preload/'s core rooms, each linked with the objects of
# the room it tests and of the rooms below it (preload/rooms.txt) and policy/, never with
# preload/hooks/ or preload/lifecycle.c: a core room that still needed a room above it
# would not link. They run on fake_driver.c (simcuda behind counting, failing wrappers).
#
#   $(O)/tests/preload/unit/test_unit_mem    mem/: accounting, the pool, refusals, routing, watchers
#   $(O)/tests/preload/unit/test_unit_move   move/: migration, its rollback, ping-pongs, the rebalancer
#   $(O)/tests/preload/unit/test_unit_heat   heat/: heat per allocation, the launch source, collectors
# (included by tests/preload/module.mk)

UNIT_TEST_DIR := $(O)/tests/preload/unit
unit_rooms = $(patsubst %.c,$(O)/obj/%.o,$(foreach room,$(1),$(wildcard preload/$(room)/*.c)))
UNIT_MEM_OBJS := $(call unit_rooms,base driver region tiers model mem) $(POLICY_OBJS)
UNIT_HEAT_OBJS := $(UNIT_MEM_OBJS) $(call unit_rooms,heat)
UNIT_MOVE_OBJS := $(UNIT_HEAT_OBJS) $(call unit_rooms,move)
UNIT_LINK := -L$(O)/lib/simcuda -l:libcuda.so.1 -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../../../lib/simcuda' \
             -lcmocka -lnuma -ljansson -lpthread -ldl

$(O)/obj/tests/preload/unit/%.o: CPPFLAGS += -DFAKE_SIMCUDA='"$(abspath $(O)/lib/simcuda/libcuda.so.1)"'

$(UNIT_TEST_DIR)/test_unit_mem: $(O)/obj/tests/preload/unit/test_unit_mem.o $(O)/obj/tests/preload/unit/fake_driver.o \
    $(UNIT_MEM_OBJS) $(O)/lib/simcuda/libcuda.so.1
$(UNIT_TEST_DIR)/test_unit_heat: $(O)/obj/tests/preload/unit/test_unit_heat.o $(O)/obj/tests/preload/unit/fake_driver.o \
    $(UNIT_HEAT_OBJS) $(O)/lib/simcuda/libcuda.so.1 | $(PRELOAD_TEST_KERNELS)
$(UNIT_TEST_DIR)/test_unit_move: $(O)/obj/tests/preload/unit/test_unit_move.o $(O)/obj/tests/preload/unit/fake_driver.o \
    $(UNIT_MOVE_OBJS) $(O)/lib/simcuda/libcuda.so.1

UNIT_TESTS := $(UNIT_TEST_DIR)/test_unit_mem $(UNIT_TEST_DIR)/test_unit_move $(UNIT_TEST_DIR)/test_unit_heat
$(UNIT_TESTS):
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) -o $@ $(UNIT_LINK)

TEST_PROGS += $(UNIT_TESTS)
