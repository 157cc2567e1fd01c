/* spill_note.h — the first allocation of a run that does not fit HBM gets one warning line
 * saying what spilled where and how to see more; later spills are tiermem-stat's to show. */
#ifndef TM_PRELOAD_SPILL_NOTE_H
#define TM_PRELOAD_SPILL_NOTE_H

#include <stdint.h>

#include "policy/tier.h"

/* Set once the line is out. */
extern bool tm_spill_noted;

void tm_note_spill_first(uint64_t bytes, const uint64_t *chunks, uint64_t chunk_size);

/* `chunks`: the allocation's chunks per tier, [TM_TIER_COUNT]. */
static inline void tm_note_spill(uint64_t bytes, const uint64_t *chunks, uint64_t chunk_size)
{
    if ((chunks[TM_TIER_CXL] || chunks[TM_TIER_DDR]) && !__atomic_load_n(&tm_spill_noted, __ATOMIC_RELAXED))
        tm_note_spill_first(bytes, chunks, chunk_size);
}

#endif /* TM_PRELOAD_SPILL_NOTE_H */
