/* spill_note.c — see spill_note.h. */
#include "preload/mem/spill_note.h"

#include <unistd.h>

#include "policy/units.h"
#include "preload/base/log.h"

void tm_note_spill(uint64_t bytes, const uint64_t *chunks, uint64_t chunk_size)
{
    if (chunks[TM_TIER_CXL] == 0 && chunks[TM_TIER_DDR] == 0)
        return;
    char size[32], cxl[32], ddr[32];
    tm_log_once(TM_LOG_WARN,
                "HBM is full: an allocation of %s spilled %s to cxl and %s to ddr (later ones are not "
                "logged; `tiermem-stat %d` shows where everything lives, TIERMEM_LOG=debug logs each)",
                tm_format_size(bytes, size, sizeof size), tm_format_size(chunks[TM_TIER_CXL] * chunk_size, cxl, sizeof cxl),
                tm_format_size(chunks[TM_TIER_DDR] * chunk_size, ddr, sizeof ddr), (int)getpid());
}
