/* kv_prefix.h — prefix caching over the paged KV pool.
 *
 * A full block is named by the hash of every token up to its end (the parent block's
 * hash chained with its own tokens), so two requests that start with the same tokens
 * share the blocks of that prefix instead of computing them again. Blocks carry a
 * reference count; a cached block nobody holds is idle and stays in the pool, in LRU
 * order, until a sequence needs a block and none is free. Off unless enabled (the CLI
 * runs without it); every function here is a no-op on a pool without it.
 */
#ifndef TM_ENGINE_KV_PREFIX_H
#define TM_ENGINE_KV_PREFIX_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/kv_cache.h"

typedef struct kv_prefix_stats {
    int64_t cached;             /* blocks with a prefix hash (held or idle) */
    int64_t idle;               /* cached blocks no sequence holds: evictable */
    int64_t query_tokens;       /* prompt tokens looked up */
    int64_t hit_tokens;         /* of those, found in the cache */
    int64_t evictions;
} kv_prefix_stats;

/* Turns the cache on for an initialised pool with every block free. 0, or -1 (host memory). */
int kv_prefix_enable(kv_cache *kv);
void kv_prefix_disable(kv_cache *kv);

/* Attaches to the empty sequence s the cached blocks of the longest cached prefix of
 * ids[n], in whole blocks, always leaving the last token to compute (its logits are
 * needed). Returns the number of tokens covered; s->len is set to it. */
int32_t kv_prefix_match(kv_cache *kv, kv_sequence *s, const int32_t *ids, int32_t n);
/* Names s's full blocks after ids[0 .. n) (the tokens whose KV they hold), so later
 * requests can find them. A prefix already cached in another block is left alone. */
void kv_prefix_publish(kv_cache *kv, const kv_sequence *s, const int32_t *ids, int32_t n);

/* Blocks a sequence could get now: free plus idle cached ones. */
int64_t kv_prefix_available(const kv_cache *kv);
void kv_prefix_get_stats(const kv_cache *kv, kv_prefix_stats *st);

/* For kv_cache.c: the first reference to a block just taken from the free stack; one
 * reference dropped (true when the block stays cached or held, false when it is free
 * again and goes back on the stack); moving the least recently used idle block onto the
 * free stack (0, or -1 when there is none or the cache is off). */
void kv_prefix_hold_new(kv_cache *kv, int32_t block);
bool kv_prefix_drop(kv_cache *kv, int32_t block);
int kv_prefix_evict(kv_cache *kv);

#endif /* TM_ENGINE_KV_PREFIX_H */
