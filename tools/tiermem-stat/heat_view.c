/* heat_view.c — reading and ranking the heat section (see heat_view.h). */
#include "tools/tiermem-stat/heat_view.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool fits(uint64_t offset, uint64_t count, uint64_t item, uint64_t size)
{
    uint64_t bytes;
    return !__builtin_mul_overflow(count, item, &bytes) && offset <= size && bytes <= size - offset;
}

/* Copies a heat record and its chunks under the record's seq. */
static bool copy_heat(const tm_stats_heat_record *shared, const tm_stats_heat_chunk *pool, uint64_t capacity,
                      tm_stats_heat_record *record, tm_heat_chunk **chunks)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint64_t before = __atomic_load_n(&shared->seq, __ATOMIC_ACQUIRE);
        if (before & 1) {
            sched_yield();
            continue;
        }
        memcpy(record, shared, sizeof *record);
        if (record->chunk_count && (record->first_chunk > capacity || record->chunk_count > capacity - record->first_chunk))
            return false;
        free(*chunks);
        *chunks = record->chunk_count ? malloc(record->chunk_count * sizeof **chunks) : NULL;
        if (record->chunk_count && !*chunks)
            return false;
        if (record->chunk_count)
            memcpy(*chunks, &pool[record->first_chunk], record->chunk_count * sizeof **chunks);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&shared->seq, __ATOMIC_RELAXED) == before)
            return true;
    }
    return false;
}

static bool fill_view(tm_heat_view *v, const tm_heat_chunk *chunks, uint32_t count, uint64_t tick,
                      uint64_t chunk_size, uint64_t extent)
{
    v->chunk_count = count;
    v->chunk_heat = calloc(count, sizeof *v->chunk_heat);
    v->chunk_reads = calloc(count, sizeof *v->chunk_reads);
    v->chunk_writes = calloc(count, sizeof *v->chunk_writes);
    v->chunk_class = calloc(count, sizeof *v->chunk_class);
    if (!v->chunk_heat || !v->chunk_reads || !v->chunk_writes || !v->chunk_class)
        return false;
    for (uint32_t c = 0; c < count; c++) {
        v->chunk_heat[c] = tm_heat_value(&chunks[c], tick, tm_heat_chunk_bytes(extent, chunk_size, c));
        v->chunk_reads[c] = tm_heat_reads(&chunks[c], tick);
        v->chunk_writes[c] = tm_heat_writes(&chunks[c], tick);
        v->heat += v->chunk_heat[c];
        v->reads += v->chunk_reads[c];
        v->writes += v->chunk_writes[c];
    }
    v->heat /= count;
    return true;
}

/* Classes: allocations among allocations, chunks among every chunk of the process. */
static bool rank(tm_heat_view *views, size_t count)
{
    size_t chunks = 0;
    double *heat = malloc((count ? count : 1) * sizeof *heat);
    tm_heat_class *cls = malloc((count ? count : 1) * sizeof *cls);
    bool ok = heat && cls;
    for (size_t i = 0; ok && i < count; i++) {
        heat[i] = views[i].heat;
        chunks += views[i].chunk_count;
    }
    ok = ok && tm_heat_classify(heat, count, cls);
    for (size_t i = 0; ok && i < count; i++)
        views[i].cls = cls[i];
    free(heat);
    free(cls);
    if (!ok || !chunks)
        return ok;
    heat = malloc(chunks * sizeof *heat);
    cls = malloc(chunks * sizeof *cls);
    ok = heat && cls;
    size_t at = 0;
    for (size_t i = 0; ok && i < count; i++)
        for (uint32_t c = 0; c < views[i].chunk_count; c++)
            heat[at++] = views[i].chunk_heat[c];
    ok = ok && tm_heat_classify(heat, chunks, cls);
    at = 0;
    for (size_t i = 0; ok && i < count; i++)
        for (uint32_t c = 0; c < views[i].chunk_count; c++)
            views[i].chunk_class[c] = cls[at++];
    free(heat);
    free(cls);
    return ok;
}

tm_heat_view *tm_heat_view_read(const void *map, uint64_t size, const tm_stats_header *h, const uint32_t *slots,
                                const tm_stats_record *records_of, size_t count, char *why, size_t why_len)
{
    if (h->heat_record_size != sizeof(tm_stats_heat_record) || h->heat_chunk_size != sizeof(tm_stats_heat_chunk) ||
        !h->heat_tick_ns) {
        snprintf(why, why_len, "the heat section has an unknown layout");
        return NULL;
    }
    if (!fits(h->heat_records_offset, h->record_capacity, h->heat_record_size, size) ||
        !fits(h->heat_chunks_offset, h->heat_chunk_capacity, h->heat_chunk_size, size)) {
        snprintf(why, why_len, "stats region is truncated (heat section)");
        return NULL;
    }
    const tm_stats_heat_record *records =
        (const tm_stats_heat_record *)((const char *)map + h->heat_records_offset);
    const tm_stats_heat_chunk *pool = (const tm_stats_heat_chunk *)((const char *)map + h->heat_chunks_offset);
    tm_heat_view *views = calloc(count ? count : 1, sizeof *views);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t tick = ((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec) / h->heat_tick_ns;
    bool ok = views != NULL;
    tm_heat_chunk *chunks = NULL;
    for (size_t i = 0; ok && i < count; i++) {
        tm_stats_heat_record record;
        if (slots[i] >= h->record_capacity ||
            !copy_heat(&records[slots[i]], pool, h->heat_chunk_capacity, &record, &chunks))
            continue; /* no heat shown for a record being rewritten all along */
        views[i].sources = record.sources;
        if (record.chunk_count)
            ok = fill_view(&views[i], chunks, record.chunk_count, tick, h->chunk_size ? h->chunk_size : 2u << 20,
                           records_of[i].size);
    }
    free(chunks);
    if (ok)
        ok = rank(views, count);
    if (!ok) {
        tm_heat_view_free(views, count);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    return views;
}

void tm_heat_view_free(tm_heat_view *views, size_t count)
{
    if (!views)
        return;
    for (size_t i = 0; i < count; i++) {
        free(views[i].chunk_heat);
        free(views[i].chunk_reads);
        free(views[i].chunk_writes);
        free(views[i].chunk_class);
    }
    free(views);
}

static __thread const tm_heat_view *order_views;

static int hotter_first(const void *a, const void *b)
{
    double x = order_views[*(const size_t *)a].heat, y = order_views[*(const size_t *)b].heat;
    if (x != y)
        return (x < y) - (x > y);
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

void tm_heat_view_order(const tm_heat_view *views, size_t count, size_t *order)
{
    for (size_t i = 0; i < count; i++)
        order[i] = i;
    order_views = views;
    qsort(order, count, sizeof *order, hotter_first);
}

const char *tm_heat_sources_name(uint32_t sources, char *buf, size_t len)
{
    static const char *const names[] = { "launch", "ebpf", "usdt" };
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < 3; i++)
        if (sources & (1u << i) && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "+" : "", names[i]);
    if (!at)
        snprintf(buf, len, "-");
    return buf;
}

void tm_heat_view_json(FILE *out, const tm_heat_view *v)
{
    char sources[32];
    fprintf(out, ",\"heat\":%.6g,\"reads\":%.0f,\"writes\":%.0f,\"class\":\"%s\",\"heat_sources\":\"%s\"", v->heat,
            v->reads, v->writes, tm_heat_class_name(v->cls), tm_heat_sources_name(v->sources, sources, sizeof sources));
    fprintf(out, ",\"chunk_heat\":[");
    for (uint32_t c = 0; c < v->chunk_count; c++)
        fprintf(out, "%s{\"heat\":%.6g,\"reads\":%.0f,\"writes\":%.0f,\"class\":\"%s\"}", c ? "," : "",
                v->chunk_heat[c], v->chunk_reads[c], v->chunk_writes[c], tm_heat_class_name(v->chunk_class[c]));
    fputc(']', out);
}
