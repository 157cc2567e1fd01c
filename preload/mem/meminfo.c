/* meminfo.c — the memory a program is told of (see meminfo.h). */
#include "preload/mem/meminfo.h"

#include "policy/tier.h"
#include "preload/base/settings.h"
#include "preload/mem/chunk_pool.h"

void tm_meminfo_view_of(const tm_device *d, uint64_t driver_free, uint64_t driver_total, uint64_t *free,
                        uint64_t *total)
{
    tm_tiers now;
    tm_device_tiers_now(d, &now);
    /* pooled chunks are room any allocation may have (chunk_pool.h) */
    uint64_t pooled = tm_chunk_pool_bytes(d, TM_TIER_HBM);
    now.tier[TM_TIER_HBM].used -= pooled < now.tier[TM_TIER_HBM].used ? pooled : now.tier[TM_TIER_HBM].used;
    driver_free = driver_free + pooled < driver_total ? driver_free + pooled : driver_total;
    tm_meminfo(&now, &d->policy.order, tm_settings()->meminfo, driver_free, driver_total, free, total);
}
