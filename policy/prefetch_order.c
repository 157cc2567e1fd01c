/* prefetch_order.c — learning a cyclic reference order (see prefetch_order.h). */
#include "policy/prefetch_order.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_CAPACITY 64

static uint32_t slot_of(uint64_t key, uint32_t slots)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (slots - 1);
}

/* Position of `key` in the learned order, or -1. */
static int64_t find(const tm_prefetch_order *o, uint64_t key)
{
    for (uint32_t s = slot_of(key, o->slots);; s = (s + 1) & (o->slots - 1)) {
        uint32_t at = o->index[s];
        if (at == 0)
            return -1;
        if (o->key[at - 1] == key)
            return at - 1;
    }
}

static void index_put(tm_prefetch_order *o, uint64_t key, uint32_t position)
{
    uint32_t s = slot_of(key, o->slots);
    while (o->index[s] != 0)
        s = (s + 1) & (o->slots - 1);
    o->index[s] = position + 1;
}

/* Room for one more key; false when the order may not grow. */
static bool make_room(tm_prefetch_order *o)
{
    if (o->len < o->capacity)
        return true;
    if (o->capacity >= TM_PREFETCH_ORDER_MAX)
        return false;
    uint32_t capacity = 2 * o->capacity;
    uint64_t *key = realloc(o->key, capacity * sizeof *key);
    if (!key)
        return false;
    o->key = key;
    uint32_t *index = calloc(2 * (size_t)capacity, sizeof *index);
    if (!index)
        return false;
    free(o->index);
    o->index = index;
    o->slots = 2 * capacity;
    o->capacity = capacity;
    for (uint32_t i = 0; i < o->len; i++)
        index_put(o, o->key[i], i);
    return true;
}

bool tm_prefetch_order_init(tm_prefetch_order *o)
{
    memset(o, 0, sizeof *o);
    o->key = malloc(FIRST_CAPACITY * sizeof *o->key);
    o->index = calloc(2 * FIRST_CAPACITY, sizeof *o->index);
    if (!o->key || !o->index) {
        tm_prefetch_order_free(o);
        return false;
    }
    o->capacity = FIRST_CAPACITY;
    o->slots = 2 * FIRST_CAPACITY;
    return true;
}

void tm_prefetch_order_free(tm_prefetch_order *o)
{
    free(o->key);
    free(o->index);
    memset(o, 0, sizeof *o);
}

static void append(tm_prefetch_order *o, uint64_t key)
{
    if (!make_room(o))
        return; /* too long to learn: what was learned stays, unpredicted */
    o->key[o->len] = key;
    index_put(o, key, o->len);
    o->at = o->len++;
}

static void restart(tm_prefetch_order *o, uint64_t key)
{
    o->len = 0;
    o->cyclic = false;
    memset(o->index, 0, o->slots * sizeof *o->index);
    o->restarts++;
    append(o, key);
}

void tm_prefetch_order_note(tm_prefetch_order *o, uint64_t key)
{
    if (o->len > 0 && o->key[o->at] == key)
        return;
    if (o->cyclic && o->key[(o->at + 1) % o->len] == key) {
        o->at = (o->at + 1) % o->len;
        o->hits++;
        return;
    }
    int64_t at = o->len > 0 ? find(o, key) : -1;
    if (o->cyclic) {
        o->misses++;
        if (at >= 0)
            o->at = (uint32_t)at;
        else
            restart(o, key);
        return;
    }
    if (at < 0) {
        append(o, key);
    } else {
        /* the first key again closes the cycle; another one is a key read twice per
         * cycle, whose place the order keeps where it was first seen */
        o->cyclic = at == 0;
        o->at = (uint32_t)at;
    }
}

uint32_t tm_prefetch_order_next(const tm_prefetch_order *o, uint64_t *out, uint32_t count)
{
    if (!o->cyclic || o->len < 2)
        return 0;
    if (count > o->len - 1)
        count = o->len - 1;
    for (uint32_t i = 0; i < count; i++)
        out[i] = o->key[(o->at + 1 + i) % o->len];
    return count;
}
