/* registry.h — every allocation the interposer tracks, found by any address inside it.
 *
 * Lookups must not serialise the process. The address space is cut into 2 MiB granules
 * and the granules are dealt round-robin to TM_REGISTRY_SHARDS shards; each shard is a
 * balanced tree (glibc tsearch) under its own reader-writer lock. An allocation is
 * entered in the shard of every granule it touches (at most all shards), so a lookup
 * reads exactly one shard: O(log n), shared with every other reader, and contended only
 * by writers of the same shard. Insert and remove lock the allocation's shards in
 * ascending order.
 *
 * The registry stores tm_range headers; callers embed one as the first member of their
 * record. It owns no memory of its records: a removed record belongs to its remover. */
#ifndef TM_PRELOAD_REGISTRY_H
#define TM_PRELOAD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_REGISTRY_SHARDS 64
#define TM_REGISTRY_GRANULE_SHIFT 21

typedef struct tm_range {
    uint64_t base;  /* first address */
    uint64_t size;  /* bytes; lookups match [base, base + size) */
} tm_range;

/* Adds a record. False when it overlaps a record already there, or memory ran out. */
bool tm_registry_insert(tm_range *record);

/* Removes and returns the record whose base is exactly `base`, or NULL. */
tm_range *tm_registry_remove(uint64_t base);

/* Finds the record containing `address` and calls `visit` on it while it cannot go away
 * (the record is the caller's own: what `visit` changes in it is guarded by the caller).
 * Returns false (without calling visit) when none contains it. */
bool tm_registry_find(uint64_t address, void (*visit)(tm_range *record, void *arg), void *arg);

/* Removes every record for which `match` is true and returns them in a malloc'd array
 * (*count entries; NULL when none). Should memory for the array run out, the records
 * that did not fit stay in the registry. */
tm_range **tm_registry_take(bool (*match)(const tm_range *record, void *arg), void *arg, size_t *count);

/* Calls `visit` on every record while none can go away (every shard locked: keep it short). */
void tm_registry_each(void (*visit)(tm_range *record, void *arg), void *arg);

/* Records held now (a hint for fast paths: 0 means "nothing to look up"). */
size_t tm_registry_count(void);

/* Fork handling: lock every shard before fork and unlock after it in the parent. The
 * child's one thread does not own the parent's locks: it gets fresh ones. */
void tm_registry_lock_all(void);
void tm_registry_unlock_all(void);
void tm_registry_reinit_locks_in_child(void);

/* Forgets every record without touching them. */
void tm_registry_forget_all(void);

#endif /* TM_PRELOAD_REGISTRY_H */
