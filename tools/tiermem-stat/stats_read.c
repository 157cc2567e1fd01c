/* stats_read.c — see stats_read.h. The writer updates the region in place; the reader
 * copies it section by section (pread at offsets checked against the file's size, fstat
 * before each read), streams the records through a small buffer keeping only the live
 * ones, and reads each block's seqs again: a record that was being written (odd seq, or a
 * seq that moved) is read again, within a budget for the whole call. */
#include "tools/tiermem-stat/stats_read.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/region/region_path.h"

/* Records read per block, and the records a call may read again in all. */
#define BLOCK_RECORDS 256
#define RETRY_BUDGET  4096
#define RETRY_PASSES  4

/* ---------------------------------------------------------------- paths */

/* The effective uid process `pid` runs as (from /proc/PID/status), or -1. */
long tm_stats_uid_of_pid(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long uid = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long real, effective;
        if (sscanf(line, "Uid: %lu %lu", &real, &effective) == 2) {
            uid = (long)effective;
            break;
        }
    }
    fclose(f);
    return uid;
}

void tm_stats_default_path(pid_t pid, char *buf, size_t len)
{
    long uid = tm_stats_uid_of_pid(pid);
    tm_region_path(pid, uid >= 0 ? (uid_t)uid : geteuid(), buf, len);
}

/* ---------------------------------------------------------------- where the bytes come from */

/* A region as bytes in memory (a copy made elsewhere) or an open file. */
typedef struct source {
    const char *bytes;          /* [size] when fd < 0 */
    uint64_t size;
    int fd;
} source;

/* Copies [offset, offset + len) of the region. A file is measured again first: a region
 * that shrank below what is asked for is an error, never a short copy. */
static bool source_read(const source *src, void *buf, size_t len, uint64_t offset)
{
    uint64_t size = src->size;
    if (src->fd >= 0) {
        struct stat st;
        if (fstat(src->fd, &st) != 0 || st.st_size < 0)
            return false;
        size = (uint64_t)st.st_size;
    }
    if (offset > size || len > size - offset)
        return false;
    if (src->fd < 0) {
        memcpy(buf, src->bytes + offset, len);
        return true;
    }
    return tm_stats_transfer(src->fd, buf, len, offset, false);
}

bool tm_stats_transfer(int fd, void *buf, size_t len, uint64_t offset, bool write)
{
    size_t done = 0;
    while (done < len) {
        char *at = (char *)buf + done;
        off_t where = (off_t)(offset + done);
        ssize_t n = write ? pwrite(fd, at, len - done, where) : pread(fd, at, len - done, where);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += (size_t)n;
    }
    return true;
}

static uint64_t source_size(const source *src)
{
    struct stat st;
    if (src->fd < 0)
        return src->size;
    return fstat(src->fd, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

/* ---------------------------------------------------------------- validation */

/* The end of [offset, offset + count * size), or 0 when it overflows. */
static uint64_t span_end(uint64_t offset, uint64_t count, uint64_t size)
{
    uint64_t bytes, end;
    if (__builtin_mul_overflow(count, size, &bytes) || __builtin_add_overflow(offset, bytes, &end))
        return 0;
    return end;
}

/* Checks a header's shape; on success *needed is the bytes the region must have. */
static int header_ok(const tm_stats_header *h, uint64_t *needed, char *why, size_t why_len)
{
    if (h->magic != TM_STATS_MAGIC) {
        snprintf(why, why_len, "not a tiermem stats region");
        return 0;
    }
    if (h->version != TM_STATS_VERSION || h->header_size != sizeof(tm_stats_header) ||
        h->call_size != sizeof(tm_stats_call) || h->record_size != sizeof(tm_stats_record)) {
        snprintf(why, why_len, "stats layout version %u, this tiermem-stat reads version %d only (use the "
                 "tiermem-stat that came with the process's libtiermem.so)", h->version, TM_STATS_VERSION);
        return 0;
    }
    if (h->call_count > TM_STATS_MAX_CALLS || h->record_capacity > TM_STATS_MAX_RECORDS) {
        snprintf(why, why_len, "stats region claims %u calls and %u records (at most %d and %u)", h->call_count,
                 h->record_capacity, TM_STATS_MAX_CALLS, TM_STATS_MAX_RECORDS);
        return 0;
    }
    if (h->heat_chunk_capacity > TM_STATS_MAX_HEAT_CHUNKS) {
        snprintf(why, why_len, "stats region claims %llu heat chunks (at most %llu)",
                 (unsigned long long)h->heat_chunk_capacity, (unsigned long long)TM_STATS_MAX_HEAT_CHUNKS);
        return 0;
    }
    if (h->heat_record_size != sizeof(tm_stats_heat_record) || h->heat_chunk_size != sizeof(tm_stats_heat_chunk) ||
        !h->heat_tick_ns) {
        snprintf(why, why_len, "the heat section has an unknown layout");
        return 0;
    }
    uint64_t ends[4] = {
        span_end(h->calls_offset, h->call_count, h->call_size),
        span_end(h->records_offset, h->record_capacity, h->record_size),
        span_end(h->heat_records_offset, h->record_capacity, h->heat_record_size),
        span_end(h->heat_chunks_offset, h->heat_chunk_capacity, h->heat_chunk_size),
    };
    if (h->calls_offset < sizeof *h || h->records_offset < sizeof *h || h->heat_records_offset < sizeof *h ||
        h->heat_chunks_offset < sizeof *h || !ends[0] || !ends[1] || !ends[2] || !ends[3] || h->calls_offset % 8 ||
        h->records_offset % 8 || h->heat_records_offset % 8 || h->heat_chunks_offset % 8) {
        snprintf(why, why_len, "stats region has a bad layout");
        return 0;
    }
    *needed = 0;
    for (int i = 0; i < 4; i++)
        if (ends[i] > *needed)
            *needed = ends[i];
    return 1;
}

/* A text field as the display may print it: NUL-terminated, printable ASCII, no quote or
 * backslash (anything else becomes '?'). */
static void clean_text(char *text, size_t size)
{
    text[size - 1] = '\0';
    for (size_t i = 0; text[i]; i++)
        if (text[i] < 0x20 || text[i] > 0x7e || text[i] == '"' || text[i] == '\\')
            text[i] = '?';
}

/* ---------------------------------------------------------------- records */

/* The live records as they are being gathered: the record, its slot, its heat record. */
typedef struct gathered {
    tm_stats_record *records;       /* [count] */
    tm_stats_heat_record *heat;     /* [count] */
    uint32_t *slots;                /* [count] */
    size_t count, capacity;
} gathered;

static bool gathered_add(gathered *g, uint32_t slot, const tm_stats_record *r, const tm_stats_heat_record *hr)
{
    if (g->count == g->capacity) {
        size_t grown = g->capacity ? g->capacity * 2 : 64;
        tm_stats_record *records = realloc(g->records, grown * sizeof *records);
        if (records)
            g->records = records;
        tm_stats_heat_record *heat = realloc(g->heat, grown * sizeof *heat);
        if (heat)
            g->heat = heat;
        uint32_t *slots = realloc(g->slots, grown * sizeof *slots);
        if (slots)
            g->slots = slots;
        if (!records || !heat || !slots)
            return false;
        g->capacity = grown;
    }
    g->records[g->count] = *r;
    g->heat[g->count] = *hr;
    g->slots[g->count++] = slot;
    return true;
}

static void gathered_free(gathered *g)
{
    free(g->records);
    free(g->heat);
    free(g->slots);
}

/* Buffers for one block of records, read twice, and their heat records. */
typedef struct block {
    tm_stats_record first[BLOCK_RECORDS], again[BLOCK_RECORDS];
    tm_stats_heat_record heat[BLOCK_RECORDS];
} block;

/* Records [first, first + n) and their heat records, with the seqs read again after: a
 * record is settled when its seq was even and did not move. Unsettled slots go to `retry`
 * (up to RETRY_BUDGET of them); settled live records to `g`. */
static bool read_block(const source *src, const tm_stats_header *h, uint32_t first, uint32_t n, block *b,
                       gathered *g, uint32_t *retry, size_t *retry_count, size_t *unsettled, char *why,
                       size_t why_len)
{
    uint64_t at = h->records_offset + (uint64_t)first * sizeof(tm_stats_record);
    if (!source_read(src, b->first, n * sizeof *b->first, at) ||
        !source_read(src, b->heat, n * sizeof *b->heat, h->heat_records_offset + (uint64_t)first * sizeof *b->heat) ||
        !source_read(src, b->again, n * sizeof *b->again, at)) {
        snprintf(why, why_len, "stats region is truncated");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!(b->first[i].seq & 1) && b->first[i].seq == b->again[i].seq) {
            if (b->first[i].in_use == 1 && !gathered_add(g, first + i, &b->first[i], &b->heat[i])) {
                snprintf(why, why_len, "out of memory");
                return false;
            }
        } else if (*retry_count < RETRY_BUDGET) {
            retry[(*retry_count)++] = first + i;
        } else {
            (*unsettled)++;
        }
    }
    return true;
}

/* Reads the slots in `retry` again, one by one, in a few passes: those that settle are
 * kept, the rest left out (counted in *unsettled). */
static bool settle(const source *src, const tm_stats_header *h, uint32_t *retry, size_t retry_count, gathered *g,
                   size_t *unsettled, char *why, size_t why_len)
{
    for (int pass = 0; pass < RETRY_PASSES && retry_count; pass++) {
        sched_yield();
        size_t left = 0;
        for (size_t i = 0; i < retry_count; i++) {
            uint32_t slot = retry[i];
            uint64_t at = h->records_offset + (uint64_t)slot * sizeof(tm_stats_record);
            tm_stats_record r;
            tm_stats_heat_record hr;
            uint64_t seq;
            if (!source_read(src, &r, sizeof r, at) ||
                !source_read(src, &hr, sizeof hr, h->heat_records_offset + (uint64_t)slot * sizeof hr) ||
                !source_read(src, &seq, sizeof seq, at)) {
                snprintf(why, why_len, "stats region is truncated");
                return false;
            }
            if ((r.seq & 1) || seq != r.seq) {
                retry[left++] = slot;
            } else if (r.in_use == 1 && !gathered_add(g, slot, &r, &hr)) {
                snprintf(why, why_len, "out of memory");
                return false;
            }
        }
        retry_count = left;
    }
    *unsettled += retry_count;
    return true;
}

/* ---------------------------------------------------------------- heat */

/* A heat value another process wrote, as one a decayed count can take: not finite or
 * negative reads as 0, and none above `max`. */
static double sane(double value, double max)
{
    return !isfinite(value) || value < 0 ? 0 : value > max ? max : value;
}

/* The heat sources a view names. */
#define SHOWN_SOURCES (TM_HEAT_FROM_LAUNCH | TM_HEAT_FROM_EBPF | TM_HEAT_FROM_USDT)

/* Copies the heat chunks of live record i into views[i] (none when its heat record is out
 * of bounds, is given another span, kept changing for RETRY_PASSES reads, or the call's
 * chunk budget is spent). The interposer rewrites a hot record's chunks at every launch it
 * samples, so the record gathered with the others is likely stale by now: each further
 * read takes the heat record afresh, and the chunks count only when its seq is even and
 * the same after them. */
static bool read_heat(const source *src, const tm_stats_header *h, const gathered *g, size_t i, uint64_t tick,
                      uint64_t *budget, tm_heat_chunk **chunks, size_t *chunks_len, tm_heat_view *view)
{
    const tm_stats_heat_record *gathered_hr = &g->heat[i];
    uint64_t record_at = h->heat_records_offset + (uint64_t)g->slots[i] * sizeof *gathered_hr;
    uint64_t count = gathered_hr->chunk_count, first = gathered_hr->first_chunk;
    view->sources = gathered_hr->sources & SHOWN_SOURCES;
    if (!count || first > h->heat_chunk_capacity || count > h->heat_chunk_capacity - first)
        return true;
    if (count > *chunks_len) {
        tm_heat_chunk *grown = realloc(*chunks, count * sizeof **chunks);
        if (!grown)
            return false;
        *chunks = grown;
        *chunks_len = count;
    }
    _Static_assert(sizeof(tm_heat_chunk) == sizeof(tm_stats_heat_chunk), "a heat chunk is copied as it is");
    bool settled = false;
    for (int pass = 0; pass < RETRY_PASSES && !settled; pass++) {
        tm_stats_heat_record now = *gathered_hr;
        if (pass > 0) {
            sched_yield(); /* as settle() does: a writer mid-record may finish first */
            if (!source_read(src, &now, sizeof now, record_at))
                return true;
        }
        if (now.first_chunk != first || now.chunk_count != count)
            return true; /* another allocation's span now: no heat shown */
        if (now.seq & 1)
            continue;
        if (count > *budget)
            return true;
        *budget -= count;
        uint64_t seq;
        if (!source_read(src, *chunks, count * sizeof **chunks, h->heat_chunks_offset + first * sizeof **chunks) ||
            !source_read(src, &seq, sizeof seq, record_at))
            return true;
        settled = seq == now.seq;
        if (settled)
            view->sources = now.sources & SHOWN_SOURCES;
    }
    if (!settled) { /* no heat shown for a record rewritten at every read */
        view->unsettled = true;
        return true;
    }
    for (uint64_t c = 0; c < count; c++) {
        tm_heat_chunk *k = &(*chunks)[c];
        k->heat = sane(k->heat, 1);
        k->pending = sane(k->pending, 0x1p64);
        k->reads = sane(k->reads, 0x1p64);
        k->writes = sane(k->writes, 0x1p64);
    }
    return tm_heat_view_fill(view, *chunks, (uint32_t)count, tick, h->chunk_size ? h->chunk_size : 2u << 20,
                             g->records[i].size);
}

/* ---------------------------------------------------------------- a whole region */

static int parse_source(const source *src, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    memset(snapshot, 0, sizeof *snapshot);
    tm_stats_header *h = &snapshot->header;
    uint64_t needed = 0;
    if (!source_read(src, h, sizeof *h, 0)) {
        snprintf(why, why_len, "not a tiermem stats region (too small)");
        return -1;
    }
    if (!header_ok(h, &needed, why, why_len))
        return -1;
    if (needed > source_size(src)) {
        snprintf(why, why_len, "stats region is truncated");
        return -1;
    }
    clean_text(h->policy, sizeof h->policy);
    clean_text(h->meminfo, sizeof h->meminfo);
    clean_text(h->tier_order, sizeof h->tier_order);
    clean_text(h->heat_source, sizeof h->heat_source);
    for (int t = 0; t < TM_STATS_TIERS; t++)
        clean_text(h->tier[t].name, sizeof h->tier[t].name);
    if (h->device_count > TM_STATS_DEVICES)
        h->device_count = TM_STATS_DEVICES;

    snapshot->calls = calloc(h->call_count ? h->call_count : 1, sizeof *snapshot->calls);
    uint32_t *retry = malloc(RETRY_BUDGET * sizeof *retry);
    block *b = malloc(sizeof *b);
    gathered g = { 0 };
    int result = -1;
    if (!snapshot->calls || !retry || !b) {
        snprintf(why, why_len, "out of memory");
        goto out;
    }
    if (!source_read(src, snapshot->calls, (size_t)h->call_count * sizeof *snapshot->calls, h->calls_offset)) {
        snprintf(why, why_len, "stats region is truncated");
        goto out;
    }
    for (uint32_t i = 0; i < h->call_count; i++)
        clean_text(snapshot->calls[i].symbol, sizeof snapshot->calls[i].symbol);

    size_t retry_count = 0, unsettled = 0;
    for (uint32_t first = 0; first < h->record_capacity; first += BLOCK_RECORDS) {
        uint32_t n = h->record_capacity - first < BLOCK_RECORDS ? h->record_capacity - first : BLOCK_RECORDS;
        if (!read_block(src, h, first, n, b, &g, retry, &retry_count, &unsettled, why, why_len))
            goto out;
    }
    if (!settle(src, h, retry, retry_count, &g, &unsettled, why, why_len))
        goto out;
    snapshot->records_unsettled = unsettled;

    snapshot->heat = calloc(g.count ? g.count : 1, sizeof *snapshot->heat);
    if (!snapshot->heat || (!g.records && !(g.records = malloc(sizeof *g.records)))) {
        snprintf(why, why_len, "out of memory");
        goto out;
    }
    snapshot->records = g.records; /* handed over, not copied: memory stays one copy */
    snapshot->record_count = g.count;
    for (size_t i = 0; i < g.count; i++)
        clean_text(snapshot->records[i].name, sizeof snapshot->records[i].name);
    uint64_t tick = tm_heat_view_tick(h->heat_tick_ns);
    uint64_t budget = h->heat_chunk_capacity;
    tm_heat_chunk *chunks = NULL;
    size_t chunks_len = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < g.count; i++)
        ok = read_heat(src, h, &g, i, tick, &budget, &chunks, &chunks_len, &snapshot->heat[i]);
    free(chunks);
    if (!ok || !tm_heat_view_rank(snapshot->heat, g.count)) {
        snprintf(why, why_len, "out of memory");
        goto out;
    }
    result = 0;
out:
    free(retry);
    free(b);
    if (snapshot->records == g.records)
        g.records = NULL;
    gathered_free(&g);
    if (result != 0)
        tm_stats_snapshot_free(snapshot);
    return result;
}

int tm_stats_parse(const void *bytes, size_t size, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    source src = { .bytes = bytes, .size = size, .fd = -1 };
    return parse_source(&src, snapshot, why, why_len);
}

/* ---------------------------------------------------------------- reading a file */

/* Reads the region open as `fd` (-1: opening it failed with errno); a regular file only.
 * `owner` >= 0: the file must belong to that uid. */
static int read_open(int fd, const char *path, long owner, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    memset(snapshot, 0, sizeof *snapshot);
    char reason[256];
    struct stat st;
    int result = -1;
    if (fd < 0) {
        snprintf(reason, sizeof reason, "%s", errno == ELOOP ? "a symbolic link, not followed" : strerror(errno));
    } else if (fstat(fd, &st) != 0) {
        snprintf(reason, sizeof reason, "%s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(reason, sizeof reason, "not a regular file");
    } else if (owner >= 0 && (long)st.st_uid != owner) {
        snprintf(reason, sizeof reason, "owned by uid %ld, but the process runs as uid %ld: not its region",
                 (long)st.st_uid, owner);
    } else {
        source src = { .fd = fd };
        result = parse_source(&src, snapshot, reason, sizeof reason);
    }
    if (result != 0)
        snprintf(why, why_len, "%s: %s", path, reason);
    return result;
}

/* Opens a region without following a symlink or blocking on a FIFO. */
static int read_region(const char *path, long owner, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    int result = read_open(fd, path, owner, snapshot, why, why_len);
    if (fd >= 0)
        close(fd);
    return result;
}

int tm_stats_read_fd(int fd, const char *path, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    return read_open(fd, path, -1, snapshot, why, why_len);
}

/* A region in a region directory (<root>/tiermem-<uid>/NAME) is read only when that
 * directory passes region_path.h's checks and the file belongs to <uid>, whoever names it. */
static int read_in_region_dir(const char *path, uid_t owner, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    char dir[64];
    tm_region_dir(owner, dir, sizeof dir);
    struct stat st;
    if (lstat(dir, &st) != 0) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    const char *refusal = tm_region_dir_refusal(&st, owner);
    if (refusal) {
        snprintf(why, why_len, "%s: its directory %s is %s (uid %ld's must be its own, mode 0700): not used", path,
                 dir, refusal, (long)owner);
        return -1;
    }
    return read_region(path, (long)owner, snapshot, why, why_len);
}

int tm_stats_read(const char *path, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    memset(snapshot, 0, sizeof *snapshot);
    static const char prefix[] = TM_REGION_ROOT "/";
    if (strncmp(path, prefix, sizeof prefix - 1) == 0) {
        char dir_name[32];
        const char *name = path + sizeof prefix - 1, *slash = strchr(name, '/');
        size_t len = slash ? (size_t)(slash - name) : 0;
        long uid = -1;
        if (slash && len < sizeof dir_name && !strchr(slash + 1, '/')) {
            memcpy(dir_name, name, len);
            dir_name[len] = '\0';
            uid = tm_region_dir_uid(dir_name);
        }
        if (uid >= 0)
            return read_in_region_dir(path, (uid_t)uid, snapshot, why, why_len);
    }
    return read_region(path, -1, snapshot, why, why_len);
}

int tm_stats_read_pid(pid_t pid, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    memset(snapshot, 0, sizeof *snapshot);
    long uid = tm_stats_uid_of_pid(pid);
    /* a process that is gone can own nothing: a leftover of ours is read as a file */
    uid_t owner = uid >= 0 ? (uid_t)uid : geteuid();
    char path[96];
    tm_region_path(pid, owner, path, sizeof path);
    return read_in_region_dir(path, owner, snapshot, why, why_len);
}

void tm_stats_snapshot_free(tm_stats_snapshot *snapshot)
{
    free(snapshot->calls);
    free(snapshot->records);
    tm_heat_view_free(snapshot->heat, snapshot->record_count);
    snapshot->heat = NULL;
    snapshot->calls = NULL;
    snapshot->records = NULL;
    snapshot->record_count = 0;
}

unsigned long long tm_stats_calls_of(const tm_stats_snapshot *snapshot, const char *symbol)
{
    for (uint32_t i = 0; i < snapshot->header.call_count; i++)
        if (strncmp(snapshot->calls[i].symbol, symbol, sizeof snapshot->calls[i].symbol) == 0)
            return (unsigned long long)snapshot->calls[i].calls;
    return 0;
}
