/* staging_ring.h — where weights staged in HBM sit in the stream ring: extents of one span
 * of bytes (the ring's HBM chunks, mapped once at consecutive device addresses). Pure C,
 * no CUDA, no clock.
 *
 * A staged weight takes one contiguous extent, because a kernel handed a pointer into it
 * may read the whole weight from there. Extents are placed at a head that sweeps the span:
 * each goes where the last one ended, or at 0 when it does not fit before the end. The
 * older extents a new one overlaps are evicted, but only when each of them has been read
 * since it was filled (or, when forced, is merely not held by the launch in progress):
 * a placement that would overwrite a weight still waiting for its reader fails, and the
 * caller tries again after the next launch. The caller orders the copy into a new extent
 * after the last reader of every extent it evicted (their events, on the GPU).
 *
 * Entries keep their index while they live, so the caller can keep its own data per
 * entry (events) in an array of TM_STAGING_MAX. */
#ifndef TM_POLICY_STAGING_RING_H
#define TM_POLICY_STAGING_RING_H

#include <stdbool.h>
#include <stdint.h>

#define TM_STAGING_MAX 1024 /* extents at once; a ring of more small weights stages fewer */
/* Extents start 64 KiB apart: a staged weight keeps any alignment a kernel may count on
 * (vector loads, TMA), as an allocation's base has it. */
#define TM_STAGING_ALIGN ((uint64_t)64 << 10)

typedef struct tm_staged {
    uint64_t key;           /* what it holds (an allocation's base); 0: the entry is free */
    uint64_t offset;        /* where the extent starts in the span */
    uint64_t bytes;         /* its length, a multiple of the alignment */
    bool read;              /* a launch read it since it was filled */
    bool held;              /* the launch in progress reads it */
} tm_staged;

typedef struct tm_staging_ring {
    uint64_t capacity;      /* the span, in bytes */
    uint64_t align;         /* of every extent's offset and length */
    uint64_t head;          /* where the next extent goes, if it fits before the end */
    uint32_t used;          /* entries [0, used) may be live; the rest are free */
    tm_staged entry[TM_STAGING_MAX];
} tm_staging_ring;

/* An empty ring over `capacity` bytes; `align` a power of two. */
void tm_staging_init(tm_staging_ring *ring, uint64_t capacity, uint64_t align);

/* The entry holding `key`, or -1. */
int tm_staging_find(const tm_staging_ring *ring, uint64_t key);

/* Places an extent of `bytes` for `key` (not staged yet): its entry, or -1 when it cannot
 * go in now (longer than the span, no free entry, or an extent it would overlap is held,
 * or unread and `force` is false). The entries evicted to make room are written to
 * evicted[] (TM_STAGING_MAX at most), their count to *evicted_count: the caller waits for
 * their readers before it writes the new extent. The new entry may reuse one of them. */
int tm_staging_place(tm_staging_ring *ring, uint64_t key, uint64_t bytes, bool force, uint32_t *evicted,
                     uint32_t *evicted_count);

/* Drops entry `index` (its weight was freed, or streaming stops). */
void tm_staging_drop(tm_staging_ring *ring, int index);

/* Bytes an extent of `bytes` takes. */
uint64_t tm_staging_extent(const tm_staging_ring *ring, uint64_t bytes);

#endif /* TM_POLICY_STAGING_RING_H */
