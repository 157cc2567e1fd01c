/* staging_ring.c — extents of the stream ring (see staging_ring.h). */
#include "policy/staging_ring.h"

#include <string.h>

void tm_staging_init(tm_staging_ring *ring, uint64_t capacity, uint64_t align)
{
    memset(ring, 0, sizeof *ring);
    ring->align = align ? align : 1;
    ring->capacity = capacity / ring->align * ring->align;
}

uint64_t tm_staging_extent(const tm_staging_ring *ring, uint64_t bytes)
{
    return (bytes + ring->align - 1) / ring->align * ring->align;
}

int tm_staging_find(const tm_staging_ring *ring, uint64_t key)
{
    if (!key)
        return -1;
    for (uint32_t i = 0; i < ring->used; i++)
        if (ring->entry[i].key == key)
            return (int)i;
    return -1;
}

static bool overlaps(const tm_staged *e, uint64_t offset, uint64_t bytes)
{
    return e->key && e->offset < offset + bytes && offset < e->offset + e->bytes;
}

void tm_staging_drop(tm_staging_ring *ring, int index)
{
    if (index < 0 || (uint32_t)index >= ring->used)
        return;
    memset(&ring->entry[index], 0, sizeof ring->entry[index]);
    while (ring->used > 0 && !ring->entry[ring->used - 1].key)
        ring->used--;
}

int tm_staging_place(tm_staging_ring *ring, uint64_t key, uint64_t bytes, bool force, uint32_t *evicted,
                     uint32_t *evicted_count)
{
    *evicted_count = 0;
    uint64_t extent = tm_staging_extent(ring, bytes);
    if (!key || extent == 0 || extent > ring->capacity || tm_staging_find(ring, key) >= 0)
        return -1;
    uint64_t offset = ring->head + extent <= ring->capacity ? ring->head : 0;
    /* every extent in the way must be one that may go */
    int free_entry = -1;
    for (uint32_t i = 0; i < TM_STAGING_MAX; i++) {
        const tm_staged *e = &ring->entry[i];
        if (i >= ring->used) {
            if (free_entry < 0)
                free_entry = (int)i;
            break;
        }
        if (!e->key) {
            if (free_entry < 0)
                free_entry = (int)i;
            continue;
        }
        if (overlaps(e, offset, extent) && (e->held || (!e->read && !force)))
            return -1;
    }
    uint32_t evictions = 0;
    for (uint32_t i = 0; i < ring->used; i++) {
        if (!overlaps(&ring->entry[i], offset, extent))
            continue;
        evicted[evictions++] = i;
        memset(&ring->entry[i], 0, sizeof ring->entry[i]);
        if (free_entry < 0 || (int)i < free_entry)
            free_entry = (int)i;
    }
    if (free_entry < 0)
        return -1; /* every entry is live and none was in the way */
    *evicted_count = evictions;
    ring->entry[free_entry] = (tm_staged){ .key = key, .offset = offset, .bytes = extent };
    if ((uint32_t)free_entry >= ring->used)
        ring->used = (uint32_t)free_entry + 1;
    while (ring->used > 0 && !ring->entry[ring->used - 1].key)
        ring->used--;
    ring->head = offset + extent == ring->capacity ? 0 : offset + extent;
    return free_entry;
}
