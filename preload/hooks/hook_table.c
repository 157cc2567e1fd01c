/* hook_table.c — the hook descriptors generated from hooks.def, the dlsym name map and the
 * cuGetProcAddress address map (see hook_table.h). */
#include "preload/hooks/hook_table.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "preload/driver/driver.h"

const tm_hook tm_hooks[TM_HOOK_COUNT] = {
#define HOOK(symbol, pfn, base, version, variant) \
    { #symbol, #base, version, TM_VARIANT_##variant, (void *)&symbol, offsetof(tm_driver_table, symbol) },
#include "preload/driver/hooks.def"
};

void *tm_hook_real(const tm_hook *hook)
{
    return *(void **)((char *)&tm_real + hook->real_offset);
}

const tm_hook *tm_hook_by_symbol(const char *symbol)
{
    for (int i = 0; i < TM_HOOK_COUNT; i++)
        if (strcmp(tm_hooks[i].symbol, symbol) == 0)
            return &tm_hooks[i];
    return NULL;
}

/* ---------------------------------------------------------------- address map */

/* Real driver function -> hook. Each hook contributes the driver's export of its symbol
 * and what the driver's resolver answers for its base name, version and stream variant
 * (a driver may hand out internal entry points that are not its exports). */
typedef struct address_entry {
    uintptr_t real;
    int hook;
} address_entry;

static address_entry address_map[2 * TM_HOOK_COUNT];
static int address_count;

static int compare_entries(const void *a, const void *b)
{
    uintptr_t x = ((const address_entry *)a)->real, y = ((const address_entry *)b)->real;
    return (x > y) - (x < y);
}

static bool address_known(uintptr_t real)
{
    for (int i = 0; i < address_count; i++)
        if (address_map[i].real == real)
            return true;
    return false;
}

static void add_address(void *real, int hook)
{
    uintptr_t address = (uintptr_t)real;
    /* an address already mapped keeps its first (export) meaning; our own wrappers are
     * never mapped, so a confused driver cannot make a hook call itself */
    if (!real || real == tm_hooks[hook].wrapper || address_known(address))
        return;
    address_map[address_count++] = (address_entry){ address, hook };
}

static void build_address_map(void)
{
    for (int i = 0; i < TM_HOOK_COUNT; i++)
        add_address(tm_hook_real(&tm_hooks[i]), i);
    if (tm_real.cuGetProcAddress_v2) {
        for (int i = 0; i < TM_HOOK_COUNT; i++) {
            void *fn = NULL;
            CUdriverProcAddressQueryResult found;
            cuuint64_t flags = tm_hooks[i].variant == TM_VARIANT_PLAIN
                                   ? CU_GET_PROC_ADDRESS_LEGACY_STREAM
                                   : CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
            if (tm_real.cuGetProcAddress_v2(tm_hooks[i].base, &fn, tm_hooks[i].version, flags, &found) ==
                    CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS)
                add_address(fn, i);
        }
    }
    qsort(address_map, (size_t)address_count, sizeof address_map[0], compare_entries);
}

void *tm_hook_wrapper_for(void *real)
{
    static pthread_once_t built = PTHREAD_ONCE_INIT;
    pthread_once(&built, build_address_map);
    uintptr_t address = (uintptr_t)real;
    int lo = 0, hi = address_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (address_map[mid].real == address)
            return tm_hooks[address_map[mid].hook].wrapper;
        if (address_map[mid].real < address)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}
