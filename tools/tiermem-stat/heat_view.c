/* heat_view.c — reading and ranking the heat section (see heat_view.h). */
#include "tools/tiermem-stat/heat_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t tm_heat_view_tick(uint64_t tick_ns)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return tick_ns ? ((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec) / tick_ns : 0;
}

/* A value shown: finite, whatever the chunk held. */
static double finite_or_zero(double value)
{
    return isfinite(value) ? value : 0;
}

bool tm_heat_view_fill(tm_heat_view *v, const tm_heat_chunk *chunks, uint32_t count, uint64_t tick,
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
        v->chunk_heat[c] = finite_or_zero(tm_heat_value(&chunks[c], tick, tm_heat_chunk_bytes(extent, chunk_size, c)));
        v->chunk_reads[c] = finite_or_zero(tm_heat_reads(&chunks[c], tick));
        v->chunk_writes[c] = finite_or_zero(tm_heat_writes(&chunks[c], tick));
        v->heat += v->chunk_heat[c];
        v->reads += v->chunk_reads[c];
        v->writes += v->chunk_writes[c];
    }
    v->heat = count ? finite_or_zero(v->heat / count) : 0;
    v->reads = finite_or_zero(v->reads);
    v->writes = finite_or_zero(v->writes);
    return true;
}

/* Classes: allocations among allocations, chunks among every chunk of the process. */
bool tm_heat_view_rank(tm_heat_view *views, size_t count)
{
    size_t chunks = 0;
    double *heat = calloc(count ? count : 1, sizeof *heat);
    tm_heat_class *cls = calloc(count ? count : 1, sizeof *cls);
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
    heat = calloc(chunks, sizeof *heat);
    cls = calloc(chunks, sizeof *cls);
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

size_t *tm_heat_view_order_new(const tm_heat_view *views, size_t count, bool by_heat)
{
    size_t *order = malloc((count ? count : 1) * sizeof *order);
    if (!order)
        return NULL;
    if (by_heat) {
        tm_heat_view_order(views, count, order);
    } else {
        for (size_t i = 0; i < count; i++)
            order[i] = i;
    }
    return order;
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
