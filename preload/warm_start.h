/* warm_start.h — TIERMEM_PROFILE=PATH under the heat policy: the heat of every chunked
 * allocation is kept as it is freed (and at exit) and written to PATH at exit
 * (policy/profile.h); a profile found at PATH at start seeds the heat of the allocations
 * it knows, and the first launch runs a rebalance pass on it, so the first token already
 * finds hot chunks in HBM.
 *
 * A foreign or stale profile (another chunk size; an allocation of another size or with
 * another tensor) is ignored whole, in one line. PATH is never followed through a
 * symlink, and a file there that is not a tiermem profile is never replaced: the new one
 * is written to a fresh file beside it (O_EXCL) and renamed over the old. */
#ifndef TM_PRELOAD_WARM_START_H
#define TM_PRELOAD_WARM_START_H

#include <stdbool.h>

#include "policy/config.h"

typedef struct tm_alloc tm_alloc;

/* Reads the profile when TIERMEM_PROFILE is set (heat policy, heat on). */
void tm_warm_start_load(const tm_config *config);

/* A profile was read and allocations are waiting for its heat. */
bool tm_warm_start_pending(void);

/* Seeds the heat of allocations made since the last call (the rebalancer, before a pass). */
void tm_warm_start_apply(void);

/* Keeps the heat of a chunked allocation about to be freed. */
void tm_warm_start_note(const tm_alloc *alloc);

/* Writes the profile (at exit, after every allocation was noted). */
void tm_warm_start_save(void);

#endif /* TM_PRELOAD_WARM_START_H */
