# tools/tiermem-stat — prints the stats regions of processes under libtiermem.so, and
# exports them to Prometheus (one exporter per node).
TIERMEM_STAT_OBJS := $(O)/obj/tools/tiermem-stat/main.o $(O)/obj/tools/tiermem-stat/stats_read.o \
                     $(O)/obj/tools/tiermem-stat/gc.o $(O)/obj/tools/tiermem-stat/heat_view.o \
                     $(O)/obj/tools/tiermem-stat/list.o $(O)/obj/tools/tiermem-stat/prometheus.o \
                     $(O)/obj/tools/tiermem-stat/prom_text.o $(O)/obj/tools/tiermem-stat/stat_json.o \
                     $(O)/obj/tools/tiermem-stat/ledger_view.o $(O)/obj/tools/tiermem-stat/ledger_lock.o \
                     $(O)/obj/preload/base/proc_start.o $(O)/obj/preload/base/libc_real.o \
                     $(O)/obj/preload/region/ledger_file.o \
                     $(O)/obj/policy/units.o $(O)/obj/policy/heat.o $(O)/obj/preload/region/region_path.o
BINS += $(O)/bin/tiermem-stat
INSTALL_FILES += $(O)/bin/tiermem-stat:bin/tiermem-stat

$(O)/bin/tiermem-stat: $(TIERMEM_STAT_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $^ -lmicrohttpd -ljansson -lpthread -lm -ldl -o $@
