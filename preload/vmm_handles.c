/* vmm_handles.c — the map of the program's own physical handles (see vmm_handles.h).
 * cuMemCreate and cuMemRelease are rare next to lookups of pointers, so one mutex over a
 * uthash table serves. */
#include "preload/vmm_handles.h"

#include <pthread.h>
#include <stdlib.h>
#include <uthash.h>

typedef struct entry {
    CUmemGenericAllocationHandle handle;
    tm_vmm_handle_info info;
    UT_hash_handle hh;
} entry;

static entry *handles;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

bool tm_vmm_handles_add(CUmemGenericAllocationHandle handle, const tm_vmm_handle_info *info)
{
    entry *e = malloc(sizeof *e);
    if (!e)
        return false;
    e->handle = handle;
    e->info = *info;
    pthread_mutex_lock(&lock);
    entry *old;
    HASH_FIND(hh, handles, &handle, sizeof handle, old);
    if (old) {
        HASH_DEL(handles, old);
        free(old);
    }
    HASH_ADD(hh, handles, handle, sizeof e->handle, e);
    pthread_mutex_unlock(&lock);
    return true;
}

static bool lookup(CUmemGenericAllocationHandle handle, tm_vmm_handle_info *info, bool take)
{
    pthread_mutex_lock(&lock);
    entry *e;
    HASH_FIND(hh, handles, &handle, sizeof handle, e);
    bool found = e != NULL;
    if (found) {
        *info = e->info;
        if (take) {
            HASH_DEL(handles, e);
            free(e);
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

bool tm_vmm_handles_take(CUmemGenericAllocationHandle handle, tm_vmm_handle_info *info)
{
    return lookup(handle, info, true);
}

bool tm_vmm_handles_find(CUmemGenericAllocationHandle handle, tm_vmm_handle_info *info)
{
    return lookup(handle, info, false);
}

void tm_vmm_handles_lock(void)
{
    pthread_mutex_lock(&lock);
}

void tm_vmm_handles_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

void tm_vmm_handles_forget_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    entry *e, *next;
    HASH_ITER(hh, handles, e, next) {
        HASH_DEL(handles, e);
        free(e);
    }
}
