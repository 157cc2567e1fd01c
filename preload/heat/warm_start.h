/* warm_start.h — TIERMEM_PROFILE=PATH under the heat policy: the heat of every chunked
 * allocation is kept as it is freed (and at exit) and written to PATH at exit
 * (policy/profile.h); a profile found at PATH at start lends its heat to the allocations
 * it knows (a chunk ranks by the larger of the profile's heat and its own), and the first
 * launch runs a rebalance pass on it, so the first token already finds hot chunks in HBM.
 * What is written is, per chunk, the larger of this run's heat and what it was lent: a
 * short run that sampled a chunk too rarely keeps what earlier runs knew, and heat does
 * not pile up run after run.
 *
 * A foreign or stale profile (another chunk size; an allocation of another size or with
 * another tensor) is ignored whole, in one line. PATH is never followed through a
 * symlink, and a file there that is not a tiermem profile is never replaced: the new one
 * is written to a fresh file beside it (O_EXCL) and renamed over the old. */
#ifndef TM_PRELOAD_WARM_START_H
#define TM_PRELOAD_WARM_START_H

#include <stdbool.h>

#include "policy/config.h"
#include "preload/mem/alloc.h"


/* Reads the profile when TIERMEM_PROFILE is set (heat policy, heat on). */
void tm_warm_start_load(const tm_config *config);

/* A profile was read and allocations are waiting for its heat. */
bool tm_warm_start_pending(void);

/* Checks the allocations made since the last call against the profile, and drops it when
 * one does not match (the rebalancer, before a pass; passes never overlap). */
void tm_warm_start_check(void);

/* The profile's heat of a checked allocation, [its heat chunks], or NULL. */
const float *tm_warm_start_heat(const tm_alloc *alloc);

/* Keeps the heat of a chunked allocation about to be freed. */
void tm_warm_start_note(const tm_alloc *alloc);
/* ... as a watcher of allocations. */
extern const tm_alloc_watcher tm_warm_start_alloc_watcher;

/* Writes the profile at exit: the allocations freed before, and those still live. */
void tm_warm_start_save(void);

#endif /* TM_PRELOAD_WARM_START_H */
