/* chunk_heat.c — heat per chunk and per allocation for tiermem-heat (see chunk_heat.h). */
#include "tools/tiermem-heat/chunk_heat.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define CHUNK_SHIFT 21
#define CHUNK ((uint64_t)1 << CHUNK_SHIFT)

typedef struct chunk_entry {
    uint64_t address;            /* key */
    tm_heat_chunk heat;
    char kernel[32];
    uint64_t bytes;              /* of it in an allocation: a known one's overlap, else all */
    tm_heat_class cls;           /* from the last ranking */
    UT_hash_handle hh;
} chunk_entry;

typedef struct known_alloc {
    uint64_t address;            /* key */
    uint64_t size;
    tm_extent_from from;
    UT_hash_handle hh;
} known_alloc;

struct tm_chunk_table {
    tm_heat_clock clock;
    chunk_entry *chunks;
    known_alloc *known;
};

tm_chunk_table *tm_chunk_table_new(uint64_t halflife_ns)
{
    tm_chunk_table *t = calloc(1, sizeof *t);
    if (t)
        tm_heat_clock_init(&t->clock, halflife_ns);
    return t;
}

void tm_chunk_table_free(tm_chunk_table *t)
{
    if (!t)
        return;
    chunk_entry *c, *ctmp;
    HASH_ITER(hh, t->chunks, c, ctmp) {
        HASH_DEL(t->chunks, c);
        free(c);
    }
    known_alloc *k, *ktmp;
    HASH_ITER(hh, t->known, k, ktmp) {
        HASH_DEL(t->known, k);
        free(k);
    }
    free(t);
}

uint64_t tm_chunk_table_tick(const tm_chunk_table *t, uint64_t now_ns)
{
    return tm_heat_tick(&t->clock, now_ns);
}

/* A chunk is measured against the bytes of it an allocation holds (policy/heat.h). */
static bool overlap_into(chunk_entry *c, const known_alloc *k)
{
    if (c->address + CHUNK <= k->address || c->address >= k->address + k->size)
        return false;
    uint64_t from = k->address > c->address ? k->address : c->address;
    uint64_t to = k->address + k->size < c->address + CHUNK ? k->address + k->size : c->address + CHUNK;
    c->bytes = to - from;
    return true;
}

static chunk_entry *chunk_get(tm_chunk_table *t, uint64_t address, bool create)
{
    chunk_entry *c;
    HASH_FIND(hh, t->chunks, &address, sizeof address, c);
    if (c || !create)
        return c;
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->address = address;
    c->bytes = CHUNK;
    for (known_alloc *k = t->known; k; k = k->hh.next)
        if (overlap_into(c, k))
            break;
    HASH_ADD(hh, t->chunks, address, sizeof c->address, c);
    return c;
}

void tm_chunk_table_add(tm_chunk_table *t, uint64_t address, uint64_t reads, uint64_t writes, const char *kernel,
                        uint64_t tick)
{
    chunk_entry *c = chunk_get(t, address, true);
    if (!c)
        return;
    if (reads)
        tm_heat_touch(&c->heat, tick, c->bytes, (double)reads, false);
    if (writes)
        tm_heat_touch(&c->heat, tick, c->bytes, (double)writes, true);
    if (!c->kernel[0] && kernel && kernel[0])
        snprintf(c->kernel, sizeof c->kernel, "%s", kernel);
}

bool tm_chunk_table_get(tm_chunk_table *t, uint64_t address, tm_heat_chunk *out)
{
    chunk_entry *c = chunk_get(t, address, false);
    if (c)
        *out = c->heat;
    return c != NULL;
}

bool tm_chunk_table_empty(const tm_chunk_table *t)
{
    return t->chunks == NULL;
}

void tm_chunk_table_set_halflife(tm_chunk_table *t, uint64_t halflife_ns)
{
    tm_heat_clock_init(&t->clock, halflife_ns);
}

const char *tm_extent_name(tm_extent_from from)
{
    return from == TM_EXTENT_REGION ? "region" : from == TM_EXTENT_UPROBE ? "uprobe" : "inferred";
}

void tm_chunk_table_known(tm_chunk_table *t, uint64_t address, uint64_t size, tm_extent_from from)
{
    known_alloc *k;
    HASH_FIND(hh, t->known, &address, sizeof address, k);
    if (k) {
        k->size = size;
        if (from > k->from)
            k->from = from;
        return;
    }
    k = calloc(1, sizeof *k);
    if (!k)
        return;
    k->address = address;
    k->size = size;
    k->from = from;
    HASH_ADD(hh, t->known, address, sizeof k->address, k);
    /* chunks touched before their allocation was known were measured against all 2 MiB */
    for (uint64_t a = address & ~(CHUNK - 1); a < address + size; a += CHUNK) {
        chunk_entry *c = chunk_get(t, a, false);
        if (c && c->bytes == CHUNK)
            overlap_into(c, k);
    }
}

void tm_chunk_table_record(const tm_chunk_table *t, FILE *out, uint64_t ms, uint64_t tick)
{
    for (const chunk_entry *c = t->chunks; c; c = c->hh.next) {
        double heat = tm_heat_value(&c->heat, tick, c->bytes);
        if (heat > 0)
            fprintf(out, "%llu 0x%llx %.6g\n", (unsigned long long)ms, (unsigned long long)c->address, heat);
    }
}

/* ---------------------------------------------------------------- allocations */

static int by_address(const void *a, const void *b)
{
    uint64_t x = ((const tm_heat_alloc_view *)a)->address, y = ((const tm_heat_alloc_view *)b)->address;
    return (x > y) - (x < y);
}

static int chunk_by_address(const chunk_entry *a, const chunk_entry *b)
{
    return (a->address > b->address) - (a->address < b->address);
}

static void add_chunks(tm_chunk_table *t, tm_heat_alloc_view *v, uint64_t tick)
{
    uint64_t first = v->address & ~(CHUNK - 1), end = v->address + (v->size ? v->size : 1);
    v->first_chunk = first;
    v->chunk_count = (uint32_t)((end - first + CHUNK - 1) / CHUNK);
    for (uint64_t a = first; a < end; a += CHUNK) {
        chunk_entry *c = chunk_get(t, a, false);
        if (!c)
            continue;
        v->heat += tm_heat_value(&c->heat, tick, c->bytes);
        v->reads += tm_heat_reads(&c->heat, tick);
        v->writes += tm_heat_writes(&c->heat, tick);
        if (!v->kernel[0] && c->kernel[0])
            snprintf(v->kernel, sizeof v->kernel, "%s", c->kernel);
    }
    v->heat /= v->chunk_count ? v->chunk_count : 1;
}

static bool inside_known(const tm_heat_alloc_view *views, size_t known, uint64_t address)
{
    for (size_t i = 0; i < known; i++)
        if (address + CHUNK > views[i].address && address < views[i].address + views[i].size)
            return true;
    return false;
}

static void rank_chunks(tm_chunk_table *t, uint64_t tick)
{
    size_t n = HASH_COUNT(t->chunks);
    double *heat = malloc((n ? n : 1) * sizeof *heat);
    tm_heat_class *cls = malloc((n ? n : 1) * sizeof *cls);
    if (heat && cls) {
        size_t i = 0;
        for (chunk_entry *c = t->chunks; c; c = c->hh.next)
            heat[i++] = tm_heat_value(&c->heat, tick, c->bytes);
        if (tm_heat_classify(heat, n, cls)) {
            i = 0;
            for (chunk_entry *c = t->chunks; c; c = c->hh.next)
                c->cls = cls[i++];
        }
    }
    free(heat);
    free(cls);
}

tm_heat_alloc_view *tm_chunk_table_allocations(tm_chunk_table *t, uint64_t tick, size_t *count)
{
    size_t capacity = HASH_COUNT(t->known) + HASH_COUNT(t->chunks) + 1, n = 0;
    tm_heat_alloc_view *v = calloc(capacity, sizeof *v);
    *count = 0;
    if (!v)
        return NULL;
    for (known_alloc *k = t->known; k; k = k->hh.next)
        v[n++] = (tm_heat_alloc_view){ .address = k->address, .size = k->size, .from = k->from };
    size_t known = n;
    /* chunks outside every known allocation: runs of neighbours make inferred ones */
    HASH_SORT(t->chunks, chunk_by_address);
    for (chunk_entry *c = t->chunks; c; c = c->hh.next) {
        if (inside_known(v, known, c->address))
            continue;
        if (n > known && v[n - 1].address + v[n - 1].size == c->address)
            v[n - 1].size += CHUNK;
        else
            v[n++] = (tm_heat_alloc_view){ .address = c->address, .size = CHUNK, .from = TM_EXTENT_INFERRED };
    }
    for (size_t i = 0; i < n; i++)
        add_chunks(t, &v[i], tick);
    qsort(v, n, sizeof *v, by_address);
    double *heat = malloc((n ? n : 1) * sizeof *heat);
    tm_heat_class *cls = malloc((n ? n : 1) * sizeof *cls);
    if (heat && cls) {
        for (size_t i = 0; i < n; i++)
            heat[i] = v[i].heat;
        if (tm_heat_classify(heat, n, cls))
            for (size_t i = 0; i < n; i++)
                v[i].cls = cls[i];
    }
    free(heat);
    free(cls);
    rank_chunks(t, tick);
    *count = n;
    return v;
}

void tm_chunk_table_chunk_json(tm_chunk_table *t, FILE *out, uint64_t address, uint64_t tick)
{
    chunk_entry *c = chunk_get(t, address, false);
    if (!c) {
        fprintf(out, "{\"address\":%llu,\"heat\":0,\"reads\":0,\"writes\":0,\"class\":\"cold\",\"kernel\":\"\"}",
                (unsigned long long)address);
        return;
    }
    fprintf(out, "{\"address\":%llu,\"heat\":%.6g,\"reads\":%.0f,\"writes\":%.0f,\"class\":\"%s\",\"kernel\":\"%s\"}",
            (unsigned long long)address, tm_heat_value(&c->heat, tick, c->bytes), tm_heat_reads(&c->heat, tick),
            tm_heat_writes(&c->heat, tick), tm_heat_class_name(c->cls), c->kernel);
}
