/* registry.c — the sharded allocation registry (see registry.h). */
#include "preload/mem/registry.h"

#include <pthread.h>
#include <search.h>
#include <stdlib.h>

typedef struct shard {
    pthread_rwlock_t lock;
    void *root;                     /* tsearch tree of tm_range * */
} __attribute__((aligned(64))) shard; /* one cache line each: readers of different shards
                                       * never share a line */

static shard shards[TM_REGISTRY_SHARDS] = {
    [0 ... TM_REGISTRY_SHARDS - 1] = { .lock = PTHREAD_RWLOCK_INITIALIZER },
};
static size_t record_count;

/* ---------------------------------------------------------------- shards of a range */

static unsigned shard_of(uint64_t address)
{
    return (unsigned)((address >> TM_REGISTRY_GRANULE_SHIFT) % TM_REGISTRY_SHARDS);
}

/* The shards a range touches, as a bit set (bit i: shard i). */
static uint64_t shard_set(const tm_range *range)
{
    uint64_t first = range->base >> TM_REGISTRY_GRANULE_SHIFT;
    uint64_t last = (range->base + range->size - 1) >> TM_REGISTRY_GRANULE_SHIFT;
    if (last - first + 1 >= TM_REGISTRY_SHARDS)
        return ~(uint64_t)0;
    uint64_t set = 0;
    for (uint64_t g = first; g <= last; g++)
        set |= (uint64_t)1 << (g % TM_REGISTRY_SHARDS);
    return set;
}

/* Visits the shards of a set in ascending order (the lock order). */
#define FOR_EACH_SHARD(i, set) \
    for (uint64_t rest_ = (set), i; rest_ && ((i = (uint64_t)__builtin_ctzll(rest_)), 1); rest_ &= rest_ - 1)

static void lock_set(uint64_t set)
{
    FOR_EACH_SHARD(i, set)
        pthread_rwlock_wrlock(&shards[i].lock);
}

static void unlock_set(uint64_t set)
{
    FOR_EACH_SHARD(i, set)
        pthread_rwlock_unlock(&shards[i].lock);
}

/* ---------------------------------------------------------------- tree order */

/* Records never overlap, so "overlapping" is "equal": a one-byte key finds the record
 * containing it. */
static int compare_ranges(const void *a, const void *b)
{
    const tm_range *x = a, *y = b;
    if (x->base + x->size <= y->base)
        return -1;
    if (y->base + y->size <= x->base)
        return 1;
    return 0;
}

static tm_range *find_in(shard *s, uint64_t address)
{
    tm_range key = { .base = address, .size = 1 };
    void *node = tfind(&key, &s->root, compare_ranges);
    return node ? *(tm_range **)node : NULL;
}

/* ---------------------------------------------------------------- operations */

bool tm_registry_insert(tm_range *record)
{
    if (record->size == 0 || record->base + record->size < record->base)
        return false;
    uint64_t set = shard_set(record), inserted = 0;
    lock_set(set);
    FOR_EACH_SHARD(i, set) {
        void *node = tsearch(record, &shards[i].root, compare_ranges);
        if (!node || *(tm_range **)node != record)
            break; /* out of memory, or an overlapping record is there */
        inserted |= (uint64_t)1 << i;
    }
    bool ok = inserted == set;
    if (ok) {
        __atomic_fetch_add(&record_count, 1, __ATOMIC_RELAXED);
    } else {
        FOR_EACH_SHARD(i, inserted)
            tdelete(record, &shards[i].root, compare_ranges);
    }
    unlock_set(set);
    return ok;
}

static void delete_from_set(tm_range *record, uint64_t set)
{
    FOR_EACH_SHARD(i, set)
        tdelete(record, &shards[i].root, compare_ranges);
    __atomic_fetch_sub(&record_count, 1, __ATOMIC_RELAXED);
}

tm_range *tm_registry_remove(uint64_t base)
{
    unsigned home_index = shard_of(base);
    shard *home = &shards[home_index];
    uint64_t home_set = (uint64_t)1 << home_index;

    /* most records sit in one shard: take them out under that shard's lock alone */
    pthread_rwlock_wrlock(&home->lock);
    tm_range *record = find_in(home, base);
    if (!record || record->base != base) {
        pthread_rwlock_unlock(&home->lock);
        return NULL;
    }
    tm_range extent = *record;
    if (shard_set(&extent) == home_set) {
        delete_from_set(record, home_set);
        pthread_rwlock_unlock(&home->lock);
        return record;
    }
    pthread_rwlock_unlock(&home->lock);

    for (;;) {
        /* lock all the record's shards, in order, and check it is still the same record */
        uint64_t set = shard_set(&extent);
        lock_set(set);
        record = find_in(home, base);
        if (record && record->base == extent.base && record->size == extent.size) {
            delete_from_set(record, set);
            unlock_set(set);
            return record;
        }
        unlock_set(set);
        if (!record || record->base != base)
            return NULL;
        /* replaced by another record at the same base meanwhile: look again */
        pthread_rwlock_rdlock(&home->lock);
        record = find_in(home, base);
        bool same_base = record && record->base == base;
        if (same_base)
            extent = *record;
        pthread_rwlock_unlock(&home->lock);
        if (!same_base)
            return NULL;
    }
}

bool tm_registry_find(uint64_t address, void (*visit)(tm_range *record, void *arg), void *arg)
{
    shard *s = &shards[shard_of(address)];
    pthread_rwlock_rdlock(&s->lock);
    tm_range *record = find_in(s, address);
    if (record)
        visit(record, arg);
    pthread_rwlock_unlock(&s->lock);
    return record != NULL;
}

size_t tm_registry_count(void)
{
    return __atomic_load_n(&record_count, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- bulk operations */

typedef struct take_walk {
    unsigned shard;
    bool (*match)(const tm_range *record, void *arg);
    void *arg;
    tm_range **found;
    size_t count, capacity;
    bool out_of_memory;
} take_walk;

static void collect(const void *node, VISIT which, void *closure)
{
    take_walk *walk = closure;
    if (which != postorder && which != leaf)
        return;
    tm_range *record = *(tm_range *const *)node;
    /* a record sits in several shards: collect it from the shard of its base only */
    if (shard_of(record->base) != walk->shard || !walk->match(record, walk->arg))
        return;
    if (walk->count == walk->capacity) {
        size_t capacity = walk->capacity ? 2 * walk->capacity : 16;
        tm_range **grown = realloc(walk->found, capacity * sizeof *grown);
        if (!grown) {
            walk->out_of_memory = true;
            return;
        }
        walk->found = grown;
        walk->capacity = capacity;
    }
    walk->found[walk->count++] = record;
}

tm_range **tm_registry_take(bool (*match)(const tm_range *record, void *arg), void *arg, size_t *count)
{
    take_walk walk = { .match = match, .arg = arg };
    tm_registry_lock_all();
    for (walk.shard = 0; walk.shard < TM_REGISTRY_SHARDS; walk.shard++)
        twalk_r(shards[walk.shard].root, collect, &walk);
    for (size_t i = 0; i < walk.count; i++)
        delete_from_set(walk.found[i], shard_set(walk.found[i]));
    tm_registry_unlock_all();
    *count = walk.count;
    return walk.found;
}

typedef struct each_walk {
    unsigned shard;
    void (*visit)(tm_range *record, void *arg);
    void *arg;
} each_walk;

static void visit_node(const void *node, VISIT which, void *closure)
{
    each_walk *walk = closure;
    if (which != postorder && which != leaf)
        return;
    tm_range *record = *(tm_range *const *)node;
    if (shard_of(record->base) == walk->shard) /* once, from the shard of its base */
        walk->visit(record, walk->arg);
}

void tm_registry_each(void (*visit)(tm_range *record, void *arg), void *arg)
{
    each_walk walk = { .visit = visit, .arg = arg };
    tm_registry_lock_all();
    for (walk.shard = 0; walk.shard < TM_REGISTRY_SHARDS; walk.shard++)
        twalk_r(shards[walk.shard].root, visit_node, &walk);
    tm_registry_unlock_all();
}

void tm_registry_lock_all(void)
{
    lock_set(~(uint64_t)0);
}

void tm_registry_unlock_all(void)
{
    unlock_set(~(uint64_t)0);
}

void tm_registry_reinit_locks_in_child(void)
{
    for (unsigned i = 0; i < TM_REGISTRY_SHARDS; i++)
        pthread_rwlock_init(&shards[i].lock, NULL);
}

static void drop_node(void *record)
{
    (void)record;
}

void tm_registry_forget_all(void)
{
    for (unsigned i = 0; i < TM_REGISTRY_SHARDS; i++) {
        tdestroy(shards[i].root, drop_node);
        shards[i].root = NULL;
    }
    __atomic_store_n(&record_count, 0, __ATOMIC_RELAXED);
}
