/* stat_json.c — see stat_json.h. The keys and their order are those tiermem-stat has
 * always printed; "command" is new. */
#include "tools/tiermem-stat/stat_json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/heat.h"

/* Counts beyond 2^63 - 1 (only a forged region has them) become reals rather than wrap. */
static json_t *count(uint64_t v)
{
    return v > INT64_MAX ? json_real((double)v) : json_integer((json_int_t)v);
}

/* Heat and decayed byte counts: null unless finite. */
static json_t *real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *rounded(double v)
{
    return isfinite(v) && fabs(v) < 9e18 ? json_integer((json_int_t)llround(v)) : json_null();
}

/* Text that is not valid UTF-8 (a path may be any bytes) keeps its ASCII, the rest '?'. */
static json_t *text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *c = copy; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

/* A fixed-size text field of the region (NUL-terminated by the reader). */
static json_t *field(const char *s, size_t size)
{
    return json_stringn(s, strnlen(s, size));
}

/* Appends `value` to `array`; a NULL value (or array) spoils the array: NULL is returned
 * from the builder, which makes the whole object fail rather than print a partial one. */
static json_t *append(json_t *array, json_t *value)
{
    if (!array) {
        json_decref(value);
        return NULL;
    }
    if (json_array_append_new(array, value) != 0) { /* it took `value` even so */
        json_decref(array);
        return NULL;
    }
    return array;
}

const char *tm_stats_path_name(uint32_t path)
{
    switch (path) {
    case TM_PATH_MEM_ALLOC: return "cuMemAlloc";
    case TM_PATH_MEM_ALLOC_PITCH: return "cuMemAllocPitch";
    case TM_PATH_MEM_ALLOC_ASYNC: return "cuMemAllocAsync";
    case TM_PATH_MEM_ALLOC_POOL: return "cuMemAllocFromPoolAsync";
    case TM_PATH_MEM_CREATE: return "cuMemCreate";
    case TM_PATH_MEM_ALLOC_MANAGED: return "cuMemAllocManaged";
    default: return "?";
    }
}

long long tm_stats_since_rebalance_ns(const tm_stats_header *h)
{
    struct timespec now;
    if (!h->last_rebalance_ns || h->state == TM_STATS_EXITED || clock_gettime(CLOCK_MONOTONIC, &now) != 0)
        return -1;
    uint64_t ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    return ns > h->last_rebalance_ns ? (long long)(ns - h->last_rebalance_ns) : 0;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi prints it, or "" when unknown. */
void tm_stats_uuid_text(const uint8_t uuid[16], char *buf, size_t len)
{
    static const uint8_t zero[16];
    if (!memcmp(uuid, zero, sizeof zero)) {
        snprintf(buf, len, "%s", "");
        return;
    }
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", uuid[0], uuid[1],
             uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9], uuid[10], uuid[11], uuid[12],
             uuid[13], uuid[14], uuid[15]);
}

static json_t *tiers_json(const tm_stats_header *h)
{
    json_t *tiers = json_array();
    for (int t = 0; t < TM_STATS_TIERS; t++) {
        const tm_stats_tier *tier = &h->tier[t];
        tiers = append(tiers, json_pack("{s:o,s:b,s:i,s:o,s:o,s:o,s:o}", "name",
                                               field(tier->name, sizeof tier->name), "present", tier->present != 0,
                                               "node", tier->numa_node, "limit", count(tier->limit), "used",
                                               count(tier->used), "peak", count(tier->peak), "chunks",
                                               count(tier->chunks)));
    }
    return tiers;
}

static json_t *devices_json(const tm_stats_header *h)
{
    json_t *devices = json_array();
    for (uint32_t d = 0; d < h->device_count && d < TM_STATS_DEVICES; d++) {
        const tm_stats_device *dev = &h->devices[d];
        char uuid[48];
        tm_stats_uuid_text(dev->uuid, uuid, sizeof uuid);
        devices = append(devices, json_pack("{s:i,s:i,s:s,s:o,s:o,s:o,s:o}", "ordinal", dev->ordinal,
                                                 "host_node", dev->host_node, "uuid", uuid, "hbm_limit",
                                                 count(dev->hbm_limit), "hbm_used", count(dev->hbm_used),
                                                 "hbm_peak", count(dev->hbm_peak), "hbm_chunks",
                                                 count(dev->hbm_chunks)));
    }
    return devices;
}

static json_t *migration_pairs_json(const tm_stats_header *h)
{
    json_t *pairs = json_object();
    for (int from = 0; pairs && from < TM_STATS_TIERS; from++)
        for (int slot = 0; slot < TM_STATS_TIERS - 1; slot++) {
            int to = slot < from ? slot : slot + 1; /* migrated_out leaves the tier itself out */
            char key[24];
            snprintf(key, sizeof key, "%.8s>%.8s", h->tier[from].name, h->tier[to].name);
            if (json_object_set_new(pairs, key, count(h->tier[from].migrated_out[slot])) != 0) {
                json_decref(pairs);
                return NULL;
            }
        }
    return pairs;
}

/* The heat fields of one allocation, added to its object. */
static int heat_json(json_t *a, const tm_heat_view *v)
{
    char sources[32];
    if (v->unsettled) /* not known in this view: neither hot nor cold */
        return json_object_set_new(a, "heat", json_null()) || json_object_set_new(a, "class", json_null()) ||
               json_object_set_new(a, "chunk_heat", json_array());
    json_object_set_new(a, "heat", real(v->heat));
    json_object_set_new(a, "reads", rounded(v->reads));
    json_object_set_new(a, "writes", rounded(v->writes));
    json_object_set_new(a, "class", json_string(tm_heat_class_name(v->cls)));
    json_object_set_new(a, "heat_sources", json_string(tm_heat_sources_name(v->sources, sources, sizeof sources)));
    json_t *chunks = json_array();
    for (uint32_t c = 0; c < v->chunk_count; c++)
        chunks = append(chunks, json_pack("{s:o,s:o,s:o,s:s}", "heat", real(v->chunk_heat[c]), "reads",
                                                rounded(v->chunk_reads[c]), "writes", rounded(v->chunk_writes[c]),
                                                "class", tm_heat_class_name(v->chunk_class[c])));
    return json_object_set_new(a, "chunk_heat", chunks);
}

static json_t *allocations_json(const tm_stats_snapshot *s, const size_t *order)
{
    json_t *allocations = json_array();
    for (size_t k = 0; k < s->record_count; k++) {
        size_t i = order[k];
        const tm_stats_record *r = &s->records[i];
        json_t *a = json_pack("{s:o,s:o,s:{s:i,s:i,s:i},s:s,s:b,s:b,s:b,s:o,s:i}", "address", count(r->address),
                              "size", count(r->size), "chunks", "hbm", (int)r->chunks[0], "cxl", (int)r->chunks[1],
                              "ddr", (int)r->chunks[2], "path", tm_stats_path_name(r->path), "pinned_host",
                              (r->flags & TM_STATS_RECORD_PINNED_HOST) != 0, "managed",
                              (r->flags & TM_STATS_RECORD_MANAGED) != 0, "read_mostly",
                              (r->flags & TM_STATS_RECORD_READ_MOSTLY) != 0, "tensor",
                              r->name[0] ? field(r->name, sizeof r->name) : json_null(), "tensors", (int)r->tensors);
        if (a && heat_json(a, &s->heat[i]) != 0) {
            json_decref(a);
            a = NULL;
        }
        allocations = append(allocations, a);
    }
    return allocations;
}

json_t *tm_stats_json(const tm_stats_snapshot *s, const char *path, const char *command, const char *state,
                      const size_t *order)
{
    const tm_stats_header *h = &s->header;
    json_t *o = json_object();
    if (!o)
        return NULL;
    int failed = 0;
#define SET(key, value) (failed |= json_object_set_new(o, key, value))
    SET("pid", json_integer(h->pid));
    SET("command", command ? text(command) : json_null());
    SET("state", json_string(state));
    SET("region", text(path));
    SET("device", json_integer(h->device));
    SET("device_memory", count(h->device_memory));
    SET("chunk_size", count(h->chunk_size));
    SET("min_tiered", count(h->min_tiered));
    SET("hbm_reserve", count(h->hbm_reserve));
    SET("policy", field(h->policy, sizeof h->policy));
    SET("tier_order", field(h->tier_order, sizeof h->tier_order));
    SET("meminfo", field(h->meminfo, sizeof h->meminfo));
    SET("backing", json_string(h->backing == TM_STATS_BACKING_PINNED_HOST ? "pinned_host" : "vmm"));
    SET("tiers", tiers_json(h));
    SET("devices", devices_json(h));
    SET("small_count", count(h->small_count));
    SET("small_bytes", count(h->small_bytes));
    SET("tiered_count", count(h->tiered_count));
    SET("tiered_bytes", count(h->tiered_bytes));
    SET("managed_count", count(h->managed_count));
    SET("managed_bytes", count(h->managed_bytes));
    SET("alloc_total", count(h->alloc_total));
    SET("free_total", count(h->free_total));
    SET("oom_total", count(h->oom_total));
    SET("passthrough_total", count(h->passthrough_total));
    SET("records_dropped", count(h->records_dropped));
    SET("heat_source", field(h->heat_source, sizeof h->heat_source));
    SET("heat_halflife_ns", count(h->heat_tick_ns * TM_HEAT_TICKS_PER_HALFLIFE));
    SET("heat_samples", count(h->heat_samples));
    SET("heat_launches", count(h->heat_launches));
    SET("heat_sample_every", count(h->heat_sample_every));
    SET("heat_sample_ns", count(h->heat_sample_ns));
    SET("heat_chunks_dropped", count(h->heat_chunks_dropped));
    SET("heat_collector_pid", json_integer(h->heat_collector_pid));
    SET("migrations", count(h->migrations));
    SET("migrated_bytes", count(h->migrated_bytes));
    SET("migration_rewrites", count(h->migration_rewrites));
    SET("pool_hits", count(h->pool_hits));
    SET("pool_misses", count(h->pool_misses));
    SET("ping_pongs", count(h->ping_pongs));
    SET("migrate_rate", count(h->migrate_rate));
    SET("last_rebalance_ns", count(h->last_rebalance_ns));
    SET("chunks_created", count(h->chunks_created));
    SET("chunks_reused", count(h->chunks_reused));
    SET("rebalance_budget", count(h->rebalance_budget));
    SET("since_rebalance_ns", json_integer(tm_stats_since_rebalance_ns(h)));
    SET("migrations_by_pair", migration_pairs_json(h));
    SET("streamed_bytes", count(h->streamed_bytes));
    SET("name_moves_queued", count(h->name_moves_queued));
    SET("name_moves_done", count(h->name_moves_done));
    SET("file_tier", json_boolean(h->file_tier != 0));
    SET("file_dropped", count(h->file_dropped));
    SET("file_drops", count(h->file_drops));
    SET("file_faults", count(h->file_faults));
    SET("file_fault_bytes", count(h->file_fault_bytes));
    SET("file_refused", count(h->file_refused));
    SET("allocations", allocations_json(s, order));
    json_t *calls = json_object();
    for (uint32_t i = 0; calls && i < h->call_count; i++) {
        char symbol[sizeof s->calls[i].symbol + 1];
        snprintf(symbol, sizeof symbol, "%.*s", (int)sizeof s->calls[i].symbol, s->calls[i].symbol);
        failed |= json_object_set_new(calls, symbol, count(s->calls[i].calls));
    }
    SET("calls", calls);
#undef SET
    if (failed) { /* out of memory: no partial object */
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---------------------------------------------------------------- writing */

#define DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6))

static int dump(const json_t *j, FILE *out)
{
    return json_dumpf(j, out, DUMP_FLAGS);
}

/* An object with the elements of its arrays one to a line. */
static int write_object(const json_t *o, FILE *out)
{
    const char *key;
    json_t *value;
    int rc = fputc('{', out) == EOF ? -1 : 0;
    size_t n = 0;
    json_object_foreach((json_t *)o, key, value) {
        json_t *k = json_string(key);
        rc |= fputs(n++ ? ",\n" : "", out) == EOF ? -1 : 0;
        rc |= k ? dump(k, out) : -1;
        json_decref(k);
        rc |= fputc(':', out) == EOF ? -1 : 0;
        if (json_is_array(value) && json_array_size(value) && json_is_object(json_array_get(value, 0))) {
            size_t i;
            json_t *e;
            rc |= fputs("[\n", out) == EOF ? -1 : 0;
            json_array_foreach(value, i, e) {
                rc |= dump(e, out);
                rc |= fputs(i + 1 < json_array_size(value) ? ",\n" : "\n", out) == EOF ? -1 : 0;
            }
            rc |= fputc(']', out) == EOF ? -1 : 0;
        } else {
            rc |= dump(value, out);
        }
    }
    rc |= fputc('}', out) == EOF ? -1 : 0;
    return rc ? -1 : 0;
}

int tm_stats_json_write(const json_t *doc, FILE *out)
{
    int rc = 0;
    if (json_is_array(doc)) {
        size_t i;
        json_t *e;
        rc |= fputs("[\n", out) == EOF ? -1 : 0;
        json_array_foreach(doc, i, e) {
            rc |= json_is_object(e) ? write_object(e, out) : dump(e, out);
            rc |= fputs(i + 1 < json_array_size(doc) ? ",\n" : "\n", out) == EOF ? -1 : 0;
        }
        rc |= fputs("]\n", out) == EOF ? -1 : 0;
    } else {
        rc |= json_is_object(doc) ? write_object(doc, out) : dump(doc, out);
        rc |= fputc('\n', out) == EOF ? -1 : 0;
    }
    return rc ? -1 : 0;
}
