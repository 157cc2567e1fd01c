/* spill_note.h — the first allocation of a run that does not fit HBM gets one warning line
 * saying what spilled where and how to see more; later spills are tiermem-stat's to show. */
#ifndef TM_PRELOAD_SPILL_NOTE_H
#define TM_PRELOAD_SPILL_NOTE_H

#include <stdint.h>

#include "policy/tier.h"

/* `chunks`: the allocation's chunks per tier, [TM_TIER_COUNT]. */
void tm_note_spill(uint64_t bytes, const uint64_t *chunks, uint64_t chunk_size);

#endif /* TM_PRELOAD_SPILL_NOTE_H */
