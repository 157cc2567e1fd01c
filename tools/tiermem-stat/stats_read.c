/* stats_read.c — see stats_read.h. The writer updates the region in place; the reader
 * copies it with pread, then reads each record's seq again: a record that was being
 * written (odd seq, or a seq that moved) is read again on its own. */
#include "tools/tiermem-stat/stats_read.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void tm_stats_default_path(pid_t pid, char *buf, size_t len)
{
    snprintf(buf, len, "/dev/shm/tiermem.%d", (int)pid);
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

int tm_stats_parse(const void *bytes, size_t size, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    memset(snapshot, 0, sizeof *snapshot);
    uint64_t needed = 0;
    if (size < sizeof(tm_stats_header)) {
        snprintf(why, why_len, "not a tiermem stats region (too small)");
        return -1;
    }
    tm_stats_header *h = &snapshot->header;
    memcpy(h, bytes, sizeof *h);
    if (!header_ok(h, &needed, why, why_len))
        return -1;
    if (needed > size) {
        snprintf(why, why_len, "stats region is truncated");
        return -1;
    }
    clean_text(h->policy, sizeof h->policy);
    clean_text(h->meminfo, sizeof h->meminfo);
    clean_text(h->tier_order, sizeof h->tier_order);
    for (int t = 0; t < TM_STATS_TIERS; t++)
        clean_text(h->tier[t].name, sizeof h->tier[t].name);

    snapshot->calls = calloc(h->call_count ? h->call_count : 1, sizeof *snapshot->calls);
    snapshot->records = calloc(h->record_capacity ? h->record_capacity : 1, sizeof *snapshot->records);
    if (!snapshot->calls || !snapshot->records) {
        tm_stats_snapshot_free(snapshot);
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    memcpy(snapshot->calls, (const char *)bytes + h->calls_offset, (size_t)h->call_count * sizeof *snapshot->calls);
    for (uint32_t i = 0; i < h->call_count; i++)
        clean_text(snapshot->calls[i].symbol, sizeof snapshot->calls[i].symbol);
    uint32_t *slots = calloc(h->record_capacity ? h->record_capacity : 1, sizeof *slots);
    if (!slots) {
        tm_stats_snapshot_free(snapshot);
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    const char *records = (const char *)bytes + h->records_offset;
    for (uint32_t i = 0; i < h->record_capacity; i++) {
        tm_stats_record r;
        memcpy(&r, records + (size_t)i * sizeof r, sizeof r);
        if (!(r.seq & 1) && r.in_use == 1) {
            clean_text(r.name, sizeof r.name);
            slots[snapshot->record_count] = i;
            snapshot->records[snapshot->record_count++] = r;
        }
    }
    snapshot->heat = tm_heat_view_read(bytes, size, h, slots, snapshot->records, snapshot->record_count, why, why_len);
    free(slots);
    if (!snapshot->heat) {
        tm_stats_snapshot_free(snapshot);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- reading a file */

static int read_exactly(int fd, void *buf, size_t len, uint64_t offset)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        done += (size_t)n;
    }
    return 1;
}

/* Reads a record again until its seq is even and the same before and after. */
static void settle_record(int fd, uint64_t offset, tm_stats_record *record)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint64_t after;
        if (!(record->seq & 1) && read_exactly(fd, &after, sizeof after, offset) && after == record->seq)
            return;
        sched_yield();
        if (!read_exactly(fd, record, sizeof *record, offset))
            break;
    }
    record->seq = 1; /* never consistent: left out */
}

/* The region at `fd` into a private buffer of *size bytes (freed by the caller). */
static char *copy_region(int fd, size_t *size, char *why, size_t why_len)
{
    tm_stats_header h;
    uint64_t needed;
    if (!read_exactly(fd, &h, sizeof h, 0)) {
        snprintf(why, why_len, "not a tiermem stats region (too small)");
        return NULL;
    }
    if (!header_ok(&h, &needed, why, why_len))
        return NULL;
    char *copy = malloc((size_t)needed);
    if (!copy) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    if (!read_exactly(fd, copy, (size_t)needed, 0)) {
        snprintf(why, why_len, "stats region is truncated");
        free(copy);
        return NULL;
    }
    memcpy(copy, &h, sizeof h); /* the header that was validated, not a later one */
    for (uint32_t i = 0; i < h.record_capacity; i++) {
        uint64_t offset = h.records_offset + (uint64_t)i * sizeof(tm_stats_record);
        tm_stats_record *r = (tm_stats_record *)(copy + offset);
        uint64_t seq;
        if ((r->seq & 1) || !read_exactly(fd, &seq, sizeof seq, offset) || seq != r->seq)
            settle_record(fd, offset, r);
    }
    *size = (size_t)needed;
    return copy;
}

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
        size_t size = 0;
        char *copy = copy_region(fd, &size, reason, sizeof reason);
        if (copy)
            result = tm_stats_parse(copy, size, snapshot, reason, sizeof reason);
        free(copy);
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

int tm_stats_read(const char *path, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    return read_region(path, -1, snapshot, why, why_len);
}

int tm_stats_read_pid(pid_t pid, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    char path[64], proc[64];
    tm_stats_default_path(pid, path, sizeof path);
    snprintf(proc, sizeof proc, "/proc/%d", (int)pid);
    struct stat st;
    if (stat(proc, &st) != 0) {
        /* a process that is gone can own nothing: its leftover is read as a file */
        return read_region(path, -1, snapshot, why, why_len);
    }
    return read_region(path, (long)st.st_uid, snapshot, why, why_len);
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
