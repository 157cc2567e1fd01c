/* vmm_handles.c — the map of the program's own physical handles and their mappings (see
 * vmm_handles.h). cuMemCreate, cuMemMap and their undoing are rare next to lookups of
 * pointers, so one mutex over two uthash tables serves. A handle's record is shared by
 * its entry and its mappings and counts them: the last one to go ends the memory. */
#include "preload/mem/vmm_handles.h"

#include <pthread.h>
#include <stdlib.h>
#include <uthash.h>

typedef struct held {
    tm_vmm_handle_info info;
    int refs;                       /* the handle itself (until released) + its mappings */
} held;

typedef struct entry {
    CUmemGenericAllocationHandle handle;
    held *memory;                   /* one reference of it, whatever `refs` */
    int refs;                       /* cuMemCreate's, and one per cuMemRetainAllocationHandle */
    UT_hash_handle hh;
} entry;

typedef struct mapping {
    CUdeviceptr va;                 /* key: where the mapping starts */
    size_t size;
    held *memory;
    UT_hash_handle hh;
} mapping;

static entry *handles;
static mapping *mappings;
static int spilled_mappings; /* mappings of handles outside HBM, read without the lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void count_spilled(const held *memory, int sign)
{
    if (memory->info.tier != TM_TIER_HBM)
        __atomic_add_fetch(&spilled_mappings, sign, __ATOMIC_RELAXED);
}

/* Drops one reference; true when it was the last (the record is freed, *info keeps it). */
static bool unref(held *memory, tm_vmm_handle_info *info)
{
    if (--memory->refs > 0)
        return false;
    *info = memory->info;
    free(memory);
    return true;
}

bool tm_vmm_handles_add(CUmemGenericAllocationHandle handle, const tm_vmm_handle_info *info)
{
    entry *e = malloc(sizeof *e);
    held *memory = malloc(sizeof *memory);
    if (!e || !memory) {
        free(e);
        free(memory);
        return false;
    }
    *memory = (held){ .info = *info, .refs = 1 };
    e->handle = handle;
    e->memory = memory;
    e->refs = 1;
    pthread_mutex_lock(&lock);
    entry *old;
    HASH_FIND(hh, handles, &handle, sizeof handle, old);
    if (old) { /* the driver reused the value: the old handle was released behind our back */
        tm_vmm_handle_info dropped;
        unref(old->memory, &dropped);
        HASH_DEL(handles, old);
        free(old);
    }
    HASH_ADD(hh, handles, handle, sizeof e->handle, e);
    pthread_mutex_unlock(&lock);
    return true;
}

bool tm_vmm_handles_find(CUmemGenericAllocationHandle handle, tm_vmm_handle_info *info)
{
    pthread_mutex_lock(&lock);
    entry *e;
    HASH_FIND(hh, handles, &handle, sizeof handle, e);
    if (e)
        *info = e->memory->info;
    pthread_mutex_unlock(&lock);
    return e != NULL;
}

bool tm_vmm_handles_released(CUmemGenericAllocationHandle handle, tm_vmm_handle_info *info)
{
    pthread_mutex_lock(&lock);
    entry *e;
    HASH_FIND(hh, handles, &handle, sizeof handle, e);
    bool gone = false;
    if (e && --e->refs == 0) {
        HASH_DEL(handles, e);
        gone = unref(e->memory, info);
        free(e);
    }
    pthread_mutex_unlock(&lock);
    return gone;
}

void tm_vmm_handles_retained(CUmemGenericAllocationHandle handle, CUdeviceptr va)
{
    entry *fresh = malloc(sizeof *fresh);
    pthread_mutex_lock(&lock);
    entry *e;
    HASH_FIND(hh, handles, &handle, sizeof handle, e);
    mapping *m = NULL, *next;
    if (!e) /* released while mapped: the mapping holding `va` knows its memory */
        HASH_ITER(hh, mappings, m, next) {
            if (va >= m->va && va - m->va < m->size)
                break;
        }
    if (e) {
        e->refs++;
    } else if (m && fresh) {
        *fresh = (entry){ .handle = handle, .memory = m->memory, .refs = 1 };
        m->memory->refs++;
        HASH_ADD(hh, handles, handle, sizeof fresh->handle, fresh);
        fresh = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(fresh);
}

void tm_vmm_handles_mapped(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle handle)
{
    mapping *m = malloc(sizeof *m);
    if (!m)
        return; /* uncounted: the charge then ends at release, as it did before mappings counted */
    pthread_mutex_lock(&lock);
    entry *e;
    HASH_FIND(hh, handles, &handle, sizeof handle, e);
    mapping *old;
    HASH_FIND(hh, mappings, &va, sizeof va, old);
    if (!e || old) {
        pthread_mutex_unlock(&lock);
        free(m);
        return;
    }
    *m = (mapping){ .va = va, .size = size, .memory = e->memory };
    e->memory->refs++;
    count_spilled(e->memory, +1);
    HASH_ADD(hh, mappings, va, sizeof m->va, m);
    pthread_mutex_unlock(&lock);
}

void tm_vmm_handles_unmapped(CUdeviceptr va, size_t size, void (*gone)(const tm_vmm_handle_info *info))
{
    if (__atomic_load_n(&mappings, __ATOMIC_RELAXED) == NULL)
        return;
    enum { BATCH = 64 };
    tm_vmm_handle_info ended[BATCH];
    int count;
    do { /* `gone` runs outside the lock, a batch at a time */
        count = 0;
        pthread_mutex_lock(&lock);
        mapping *m, *next;
        HASH_ITER(hh, mappings, m, next) {
            if (count == BATCH)
                break;
            if (m->va < va || m->va - va >= size)
                continue;
            HASH_DEL(mappings, m);
            count_spilled(m->memory, -1);
            if (unref(m->memory, &ended[count]))
                count++;
            free(m);
        }
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < count; i++)
            gone(&ended[i]);
    } while (count == BATCH);
}

bool tm_vmm_handles_spilled_at(CUdeviceptr ptr, tm_vmm_handle_info *info)
{
    if (__atomic_load_n(&spilled_mappings, __ATOMIC_RELAXED) == 0)
        return false;
    bool found = false;
    pthread_mutex_lock(&lock);
    mapping *m, *next;
    HASH_ITER(hh, mappings, m, next) {
        if (ptr >= m->va && ptr - m->va < m->size && m->memory->info.tier != TM_TIER_HBM) {
            *info = m->memory->info;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
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
        tm_vmm_handle_info dropped;
        unref(e->memory, &dropped);
        free(e);
    }
    mapping *m, *after;
    HASH_ITER(hh, mappings, m, after) {
        HASH_DEL(mappings, m);
        count_spilled(m->memory, -1);
        tm_vmm_handle_info dropped;
        unref(m->memory, &dropped);
        free(m);
    }
}
