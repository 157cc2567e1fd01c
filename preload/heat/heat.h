/* heat.h — access heat inside the interposer: which source feeds it (TIERMEM_HEAT), the
 * heat of each tracked allocation's chunks (policy/heat.h), and its copy in the stats
 * region where tiermem-stat and the placement policy read it. */
#ifndef TM_PRELOAD_HEAT_H
#define TM_PRELOAD_HEAT_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/config.h"
#include "policy/heat.h"
#include "preload/mem/alloc.h"


/* Chooses the in-process source from the configuration and says which, in one info line
 * (and why, when a better one is not used). */
void tm_heat_start(const tm_config *config);

/* The source in use: TM_HEAT_SOURCE_LAUNCH or TM_HEAT_SOURCE_OFF. */
tm_heat_source tm_heat_source_active(void);

/* CLOCK_MONOTONIC now, as a heat interval. */
uint64_t tm_heat_now_tick(void);
/* The length of one heat interval. */
uint64_t tm_heat_tick_ns(void);

/* Allocations get their heat chunks when recorded and lose them as they go. */
extern const tm_alloc_watcher tm_heat_alloc_watcher;

/* Gives a recorded allocation its heat chunks (memory the program cannot reach is never
 * credited: `extent` bytes, whole chunks). Nothing happens with heat off. */
void tm_heat_alloc_attach(tm_alloc *alloc, uint64_t extent, uint64_t chunk_size);
void tm_heat_alloc_detach(tm_alloc *alloc);

/* The span of addresses allocations with heat have ever covered: values outside it are
 * not worth a registry lookup. */
extern uint64_t tm_heat_span_lo, tm_heat_span_hi;

/* Credits `bytes` read over [offset, offset + length) of the allocation and publishes the
 * chunks it touched. Safe from any thread while the allocation is registered. */
void tm_heat_alloc_credit(tm_alloc *alloc, uint64_t offset, uint64_t length, double bytes, uint64_t tick);

/* Decayed bytes accessed per byte of heat chunk `h` as of interval `tick`, as the
 * collector beside the process (tiermem-heat) measured them while its writes are fresh,
 * else as the in-process source did. Not the 0..1
 * score of policy/heat.h: that one saturates once a chunk is read whole in an interval,
 * and a weight read every step must rank above a buffer written once a step. */
double tm_heat_alloc_density(const tm_alloc *alloc, uint32_t h, uint64_t tick);

#endif /* TM_PRELOAD_HEAT_H */
