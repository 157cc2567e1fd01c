/* hook_ids.h — an id and the exported name of every hooked symbol, generated from
 * hooks.def: what the stats region counts calls by, without the hook table itself. */
#ifndef TM_PRELOAD_DRIVER_HOOK_IDS_H
#define TM_PRELOAD_DRIVER_HOOK_IDS_H

typedef enum tm_hook_id {
#define HOOK(symbol, pfn, base, version, variant) TM_HOOK_##symbol,
#include "preload/driver/hooks.def"
    TM_HOOK_COUNT
} tm_hook_id;

/* [TM_HOOK_COUNT] the exported name of each, in id order. */
static const char *const tm_hook_symbols[] = {
#define HOOK(symbol, pfn, base, version, variant) #symbol,
#include "preload/driver/hooks.def"
};

#endif /* TM_PRELOAD_DRIVER_HOOK_IDS_H */
