/* kv_prefix.c — see kv_prefix.h. The index is a uthash table keyed by the prefix hash;
 * a hit is confirmed against the block's own tokens and its parent's hash, so a hash
 * collision costs a miss, never wrong KV. */
#include "engine/kv_prefix.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

typedef struct prefix_entry {
    uint64_t hash;
    int32_t block;
    UT_hash_handle hh;
} prefix_entry;

struct kv_prefix {
    int32_t *refs;              /* [n_blocks] sequences holding each block */
    uint64_t *hash;             /* [n_blocks] prefix hash of a cached block, 0 when none */
    uint64_t *parent;           /* [n_blocks] hash of the block before it (0 for the first) */
    int32_t *tokens;            /* [n_blocks][block_size] the tokens a cached block holds */
    int32_t *prev, *next;       /* [n_blocks] idle list links, -1 at the ends */
    int32_t lru_head, lru_tail; /* least and most recently used idle blocks */
    prefix_entry *entries;      /* [n_blocks] one per block, in the table while cached */
    prefix_entry *table;
    kv_prefix_stats st;
};

/* FNV-1a over the parent's hash and the block's tokens; 0 is kept for "none". */
static uint64_t block_hash(uint64_t parent, const int32_t *ids, int32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *p = (const unsigned char *)&parent;
    for (size_t i = 0; i < sizeof parent; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    p = (const unsigned char *)ids;
    for (size_t i = 0; i < (size_t)n * sizeof *ids; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h ? h : 1;
}

int kv_prefix_enable(kv_cache *kv)
{
    int64_t n = kv->layout.n_blocks;
    struct kv_prefix *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->refs = calloc((size_t)n, sizeof *p->refs);
    p->hash = calloc((size_t)n, sizeof *p->hash);
    p->parent = calloc((size_t)n, sizeof *p->parent);
    p->tokens = calloc((size_t)n * (size_t)kv->layout.block_size, sizeof *p->tokens);
    p->prev = malloc((size_t)n * sizeof *p->prev);
    p->next = malloc((size_t)n * sizeof *p->next);
    p->entries = calloc((size_t)n, sizeof *p->entries);
    kv->prefix = p;
    if (!p->refs || !p->hash || !p->parent || !p->tokens || !p->prev || !p->next || !p->entries) {
        kv_prefix_disable(kv);
        return -1;
    }
    p->lru_head = p->lru_tail = -1;
    return 0;
}

void kv_prefix_disable(kv_cache *kv)
{
    struct kv_prefix *p = kv->prefix;
    if (!p) return;
    HASH_CLEAR(hh, p->table);
    free(p->refs);
    free(p->hash);
    free(p->parent);
    free(p->tokens);
    free(p->prev);
    free(p->next);
    free(p->entries);
    free(p);
    kv->prefix = NULL;
}

/* ----------------------------------------------------------------------------
 * The idle list */

static void idle_remove(struct kv_prefix *p, int32_t b)
{
    if (p->prev[b] >= 0) p->next[p->prev[b]] = p->next[b]; else p->lru_head = p->next[b];
    if (p->next[b] >= 0) p->prev[p->next[b]] = p->prev[b]; else p->lru_tail = p->prev[b];
    p->st.idle--;
}

static void idle_append(struct kv_prefix *p, int32_t b)
{
    p->prev[b] = p->lru_tail;
    p->next[b] = -1;
    if (p->lru_tail >= 0) p->next[p->lru_tail] = b; else p->lru_head = b;
    p->lru_tail = b;
    p->st.idle++;
}

void kv_prefix_hold_new(kv_cache *kv, int32_t block)
{
    if (kv->prefix) kv->prefix->refs[block] = 1;
}

bool kv_prefix_drop(kv_cache *kv, int32_t block)
{
    struct kv_prefix *p = kv->prefix;
    if (!p) return false;
    if (--p->refs[block] > 0) return true;
    if (!p->hash[block]) return false;
    idle_append(p, block);
    return true;
}

int kv_prefix_evict(kv_cache *kv)
{
    struct kv_prefix *p = kv->prefix;
    if (!p || p->lru_head < 0) return -1;
    int32_t b = p->lru_head;
    idle_remove(p, b);
    HASH_DEL(p->table, &p->entries[b]);
    p->hash[b] = 0;
    p->st.cached--;
    p->st.evictions++;
    kv->free_blocks[kv->n_free++] = b;
    return 0;
}

/* ----------------------------------------------------------------------------
 * Lookup and publication */

static int32_t find_block(const struct kv_prefix *p, uint64_t hash, uint64_t parent, const int32_t *ids, int32_t bs)
{
    prefix_entry *e;
    HASH_FIND(hh, p->table, &hash, sizeof hash, e);
    if (!e || p->parent[e->block] != parent ||
        memcmp(p->tokens + (size_t)e->block * bs, ids, (size_t)bs * sizeof *ids))
        return -1;
    return e->block;
}

int32_t kv_prefix_match(kv_cache *kv, kv_sequence *s, const int32_t *ids, int32_t n)
{
    struct kv_prefix *p = kv->prefix;
    if (!p || s->n_blocks) return 0;
    int32_t bs = kv->layout.block_size, full = (n - 1) / bs;
    if (full > s->max_blocks) full = s->max_blocks;
    uint64_t parent = 0;
    for (int32_t i = 0; i < full; i++) {
        uint64_t h = block_hash(parent, ids + (size_t)i * bs, bs);
        int32_t b = find_block(p, h, parent, ids + (size_t)i * bs, bs);
        if (b < 0) break;
        if (p->refs[b]++ == 0) idle_remove(p, b);
        s->block_table[s->n_blocks++] = b;
        parent = h;
    }
    s->len = s->n_blocks * bs;
    p->st.query_tokens += n;
    p->st.hit_tokens += s->len;
    return s->len;
}

void kv_prefix_publish(kv_cache *kv, const kv_sequence *s, const int32_t *ids, int32_t n)
{
    struct kv_prefix *p = kv->prefix;
    if (!p) return;
    int32_t bs = kv->layout.block_size, full = n / bs;
    if (full > s->n_blocks) full = s->n_blocks;
    uint64_t parent = 0;
    for (int32_t i = 0; i < full; i++) {
        const int32_t *blk = ids + (size_t)i * bs;
        uint64_t h = block_hash(parent, blk, bs);
        int32_t b = s->block_table[i];
        if (!p->hash[b] && find_block(p, h, parent, blk, bs) < 0) {
            p->hash[b] = h;
            p->parent[b] = parent;
            memcpy(p->tokens + (size_t)b * bs, blk, (size_t)bs * sizeof *blk);
            p->entries[b] = (prefix_entry){.hash = h, .block = b};
            HASH_ADD(hh, p->table, hash, sizeof h, &p->entries[b]);
            p->st.cached++;
        } else if (p->hash[b] != h) {
            break; /* this block holds another prefix: the chain stops here */
        }
        parent = h;
    }
}

int64_t kv_prefix_available(const kv_cache *kv)
{
    return kv->n_free + (kv->prefix ? kv->prefix->st.idle : 0);
}

void kv_prefix_get_stats(const kv_cache *kv, kv_prefix_stats *st)
{
    if (kv->prefix) *st = kv->prefix->st; else memset(st, 0, sizeof *st);
}
