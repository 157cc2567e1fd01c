/* prefetch_order.h — the order in which a program references its spilled chunks, learned
 * from its launches, and the chunks it will reference next. Pure C, no CUDA, no clock.
 *
 * Decode is cyclic: every step runs the same kernels over the same weights in the same
 * order. The order is learned as the distinct keys (chunk addresses) in the order of
 * their first reference; when the first key comes back, one cycle is complete and
 * predictions start. From then on each reference either follows the learned order (a
 * hit: the prediction moves on), jumps to another learned key (a miss: the prediction
 * resynchronises there), or names a key never seen (the order changed: learning starts
 * over from it). A key referenced twice in a row counts once. */
#ifndef TM_POLICY_PREFETCH_ORDER_H
#define TM_POLICY_PREFETCH_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#define TM_PREFETCH_ORDER_MAX (1u << 20) /* keys learned at most; beyond, learning stops */

typedef struct tm_prefetch_order {
    uint64_t *key;          /* [capacity] one cycle's keys, in the order first referenced */
    uint32_t len;           /* keys learned */
    uint32_t capacity;
    uint32_t at;            /* index of the key referenced last (valid when len > 0) */
    bool cyclic;            /* a whole cycle seen: predictions are made */
    uint32_t *index;        /* [slots] open addressing: position + 1 of a key, 0 empty */
    uint32_t slots;         /* a power of two, at least twice capacity */
    uint64_t hits;          /* references the prediction named */
    uint64_t misses;        /* references it did not, once cyclic */
    uint64_t restarts;      /* times learning started over */
} tm_prefetch_order;

/* An empty order; false without memory. Keys must not be 0. */
bool tm_prefetch_order_init(tm_prefetch_order *order);
void tm_prefetch_order_free(tm_prefetch_order *order);

/* A launch referenced `key`. */
void tm_prefetch_order_note(tm_prefetch_order *order, uint64_t key);

/* Up to `count` keys predicted to be referenced after the last one, nearest first, into
 * out[]; returns how many (0 until a cycle is complete). */
uint32_t tm_prefetch_order_next(const tm_prefetch_order *order, uint64_t *out, uint32_t count);

#endif /* TM_POLICY_PREFETCH_ORDER_H */
