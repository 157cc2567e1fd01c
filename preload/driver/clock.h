/* clock.h — the time the rebalancer budgets migrations by: simcuda's simulated time when
 * the driver is simcuda (it exports simcuda_now_ns), CLOCK_MONOTONIC otherwise.
 *
 * On a GPU, wall time is what the link spends: a migration rate per wall second is the
 * share of it migrations may take. On simcuda the link is simulated, and wall time is how
 * busy the host running the emulation is; budgeting by it would make the same program
 * move different chunks at different points of its launch stream from one run to the
 * next. Heat intervals stay on CLOCK_MONOTONIC either way: a collector beside the process
 * (tiermem-heat) and tiermem-stat share them. */
#ifndef TM_PRELOAD_CLOCK_H
#define TM_PRELOAD_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Nanoseconds on the budget clock (simulated or CLOCK_MONOTONIC; any origin). */
uint64_t tm_clock_ns(void);

/* The budget clock is simcuda's simulated time. */
bool tm_clock_simulated(void);

#endif /* TM_PRELOAD_CLOCK_H */
