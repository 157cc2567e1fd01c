/* region_write.c — heat into a target's stats region with pwrite (see region_write.h). */
#include "tools/tiermem-heat/region_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/region/region_path.h"
#include "preload/region/stats_layout.h"
#include "tools/tiermem-stat/stats_read.h"

#define BLOCK_RECORDS 256

/* What the writer took from the header once: the only offsets it ever uses. */
typedef struct layout {
    uint64_t records_offset, heat_records_offset, heat_chunks_offset;
    uint32_t record_capacity;
    uint64_t heat_chunk_capacity;
    uint64_t chunk_size, tick_ns;
    uint64_t end;                 /* bytes the sections need */
} layout;

struct tm_region_writer {
    int fd;
    layout l;
    tm_stats_record records[BLOCK_RECORDS];
    tm_stats_heat_record heat[BLOCK_RECORDS];
    tm_stats_heat_chunk *chunks;  /* [chunks_len], one record's chunks on their way out */
    size_t chunks_len;
};

static bool fits(uint64_t offset, uint64_t count, uint64_t item, uint64_t size, uint64_t *end)
{
    uint64_t bytes, last;
    if (__builtin_mul_overflow(count, item, &bytes) || __builtin_add_overflow(offset, bytes, &last) || last > size)
        return false;
    if (last > *end)
        *end = last;
    return true;
}

static uint64_t file_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

static bool read_at(int fd, void *buf, size_t len, uint64_t offset)
{
    return tm_stats_transfer(fd, buf, len, offset, false);
}

/* Writes [offset, offset + len), which the caller checked against the layout; the file
 * is measured again first, so a region that shrank is never written past its end. */
static bool write_at(const tm_region_writer *w, const void *buf, size_t len, uint64_t offset)
{
    return offset + len <= file_size(w->fd) && tm_stats_transfer(w->fd, (void *)buf, len, offset, true);
}

tm_region_writer *tm_region_writer_open(const char *path, long owner, int collector_pid, char *why, size_t why_len)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, why_len, "%s: %s", path, errno == ELOOP ? "a symbolic link, not followed" : strerror(errno));
        return NULL;
    }
    struct stat st;
    tm_stats_header h;
    const char *refusal = fstat(fd, &st) != 0 ? strerror(errno)
                          : owner >= 0        ? tm_region_file_refusal(&st, (uid_t)owner)
                          : !S_ISREG(st.st_mode) ? "not a regular file" : NULL;
    if (refusal) {
        snprintf(why, why_len, "%s: %s (the target runs as uid %ld)", path, refusal, owner);
        close(fd);
        return NULL;
    }
    uint64_t size = (uint64_t)st.st_size;
    layout l = { 0 };
    bool ok = size >= sizeof h && read_at(fd, &h, sizeof h, 0);
    if (!ok || h.magic != TM_STATS_MAGIC || h.version != TM_STATS_VERSION || h.header_size != sizeof h ||
        h.record_size != sizeof(tm_stats_record) || h.heat_record_size != sizeof(tm_stats_heat_record) ||
        h.heat_chunk_size != sizeof(tm_stats_heat_chunk) || !h.heat_tick_ns || !h.chunk_size ||
        h.record_capacity > TM_STATS_MAX_RECORDS || h.heat_chunk_capacity > TM_STATS_MAX_HEAT_CHUNKS ||
        h.records_offset < sizeof h || h.heat_records_offset < sizeof h || h.heat_chunks_offset < sizeof h ||
        h.records_offset % 8 || h.heat_records_offset % 8 || h.heat_chunks_offset % 8 ||
        !fits(h.records_offset, h.record_capacity, h.record_size, size, &l.end) ||
        !fits(h.heat_records_offset, h.record_capacity, h.heat_record_size, size, &l.end) ||
        !fits(h.heat_chunks_offset, h.heat_chunk_capacity, h.heat_chunk_size, size, &l.end)) {
        snprintf(why, why_len, "%s: stats layout version %u, heat is written into version %d only", path,
                 ok ? h.version : 0, TM_STATS_VERSION);
        close(fd);
        return NULL;
    }
    l.records_offset = h.records_offset;
    l.heat_records_offset = h.heat_records_offset;
    l.heat_chunks_offset = h.heat_chunks_offset;
    l.record_capacity = h.record_capacity;
    l.heat_chunk_capacity = h.heat_chunk_capacity;
    l.chunk_size = h.chunk_size;
    l.tick_ns = h.heat_tick_ns;
    tm_region_writer *w = calloc(1, sizeof *w);
    if (!w) {
        close(fd);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    w->fd = fd;
    w->l = l;
    int32_t pid = collector_pid;
    if (!write_at(w, &pid, sizeof pid, offsetof(tm_stats_header, heat_collector_pid))) {
        snprintf(why, why_len, "%s: cannot be written (%s)", path, strerror(errno));
        close(fd);
        free(w);
        return NULL;
    }
    return w;
}

bool tm_region_being_made(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return false;
    struct stat st;
    uint64_t magic = 1;
    bool making = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  (st.st_size < (off_t)sizeof magic || (read_at(fd, &magic, sizeof magic, 0) && magic == 0));
    close(fd);
    return making;
}

uint64_t tm_region_writer_tick_ns(const tm_region_writer *w)
{
    return w->l.tick_ns;
}

/* Writes the heat of one live record, whose heat record `hr` (at slot `slot`) was just
 * read: its span is checked against the copied capacity and the call's budget. */
static long publish_record(tm_region_writer *w, tm_chunk_table *table, uint32_t slot, uint64_t base,
                           const tm_stats_heat_record *hr, uint32_t source, uint64_t *budget)
{
    const layout *l = &w->l;
    uint64_t count = hr->chunk_count, first = hr->first_chunk;
    if (!count || (hr->seq & 1) || first > l->heat_chunk_capacity || count > l->heat_chunk_capacity - first ||
        count > *budget)
        return 0;
    *budget -= count;
    if (count > w->chunks_len) {
        tm_stats_heat_chunk *grown = realloc(w->chunks, count * sizeof *grown);
        if (!grown)
            return 0;
        w->chunks = grown;
        w->chunks_len = count;
    }
    uint64_t pool_at = l->heat_chunks_offset + first * sizeof(tm_stats_heat_chunk);
    /* chunks the collector has not measured keep what they hold */
    if (!read_at(w->fd, w->chunks, count * sizeof *w->chunks, pool_at))
        return -1;
    long written = 0;
    for (uint64_t c = 0; c < count; c++) {
        tm_heat_chunk chunk;
        if (tm_chunk_table_get(table, base + c * l->chunk_size, &chunk)) {
            memcpy(&w->chunks[c], &chunk, sizeof w->chunks[c]);
            written++;
        }
    }
    /* the record is marked the collector's even when nothing of it was measured yet */
    uint64_t record_at = l->heat_records_offset + (uint64_t)slot * sizeof(tm_stats_heat_record);
    uint64_t odd = hr->seq + 1, even = hr->seq + 2;
    uint32_t sources = hr->sources | source;
    if (!write_at(w, &odd, sizeof odd, record_at + offsetof(tm_stats_heat_record, seq)) ||
        (written && !write_at(w, w->chunks, count * sizeof *w->chunks, pool_at)) ||
        !write_at(w, &sources, sizeof sources, record_at + offsetof(tm_stats_heat_record, sources)) ||
        !write_at(w, &even, sizeof even, record_at + offsetof(tm_stats_heat_record, seq)))
        return -1;
    return written;
}

long tm_region_writer_publish(tm_region_writer *w, tm_chunk_table *table, uint32_t source, char *why, size_t why_len)
{
    const layout *l = &w->l;
    if (file_size(w->fd) < l->end) {
        snprintf(why, why_len, "the region shrank below its declared size");
        return -1;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    if (!write_at(w, &ns, sizeof ns, offsetof(tm_stats_header, heat_collector_ns))) {
        snprintf(why, why_len, "the region can no longer be written");
        return -1;
    }
    long written = 0;
    uint64_t budget = l->heat_chunk_capacity;
    for (uint32_t first = 0; first < l->record_capacity; first += BLOCK_RECORDS) {
        uint32_t n = l->record_capacity - first < BLOCK_RECORDS ? l->record_capacity - first : BLOCK_RECORDS;
        if (!read_at(w->fd, w->records, n * sizeof *w->records,
                     l->records_offset + (uint64_t)first * sizeof *w->records) ||
            !read_at(w->fd, w->heat, n * sizeof *w->heat,
                     l->heat_records_offset + (uint64_t)first * sizeof *w->heat)) {
            snprintf(why, why_len, "the region shrank while it was read");
            return -1;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (w->records[i].in_use != 1 || (w->records[i].seq & 1) || !w->records[i].address)
                continue;
            long got = publish_record(w, table, first + i, w->records[i].address, &w->heat[i], source, &budget);
            if (got < 0) {
                snprintf(why, why_len, "the region shrank while it was written");
                return -1;
            }
            written += got;
        }
    }
    return written;
}

void tm_region_writer_close(tm_region_writer *w)
{
    if (!w)
        return;
    int32_t none = 0;
    write_at(w, &none, sizeof none, offsetof(tm_stats_header, heat_collector_pid));
    close(w->fd);
    free(w->chunks);
    free(w);
}
