/* spill_note.c — see spill_note.h. */
#include "preload/mem/spill_note.h"

#include <unistd.h>

#include "policy/units.h"
#include "preload/base/log.h"

bool tm_spill_noted;

void tm_note_spill_first(uint64_t bytes, const uint64_t *chunks, uint64_t chunk_size)
{
    if (__atomic_exchange_n(&tm_spill_noted, true, __ATOMIC_RELAXED))
        return;
    char size[32], cxl[32], ddr[32];
    tm_warn("HBM is full: an allocation of %s spilled %s to cxl and %s to ddr (later ones are not "
            "logged; `tiermem-stat %d` shows where everything lives, TIERMEM_LOG=debug logs each)",
            tm_format_size(bytes, size, sizeof size), tm_format_size(chunks[TM_TIER_CXL] * chunk_size, cxl, sizeof cxl),
            tm_format_size(chunks[TM_TIER_DDR] * chunk_size, ddr, sizeof ddr), (int)getpid());
}
