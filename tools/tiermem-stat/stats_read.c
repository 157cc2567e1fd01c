/* stats_read.c — see stats_read.h. The writer updates the region in place; each record
 * is copied under its sequence number, retried while a write is in progress. */
#include "tools/tiermem-stat/stats_read.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void tm_stats_default_path(pid_t pid, char *buf, size_t len)
{
    snprintf(buf, len, "/dev/shm/tiermem.%d", (int)pid);
}

/* Is [offset, offset + count * size) inside a file of `file_size` bytes? */
static int fits(uint64_t offset, uint64_t count, uint64_t size, uint64_t file_size)
{
    uint64_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || offset > file_size)
        return 0;
    return bytes <= file_size - offset;
}

static int copy_record(const tm_stats_record *shared, tm_stats_record *copy)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint64_t before = __atomic_load_n(&shared->seq, __ATOMIC_ACQUIRE);
        if (before & 1) {
            sched_yield();
            continue;
        }
        memcpy(copy, shared, sizeof *copy);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&shared->seq, __ATOMIC_RELAXED) == before)
            return 1;
    }
    return 0;
}

int tm_stats_read(const char *path, tm_stats_snapshot *snapshot, char *why, size_t why_len)
{
    memset(snapshot, 0, sizeof *snapshot);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(tm_stats_header))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(why, why_len, "%s: not a tiermem stats region (too small)", path);
        return -1;
    }
    const tm_stats_header *h = map;
    uint64_t size = (uint64_t)st.st_size;
    int result = -1;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != TM_STATS_MAGIC) {
        snprintf(why, why_len, "%s: not a tiermem stats region", path);
    } else if (h->version != TM_STATS_VERSION || h->header_size != sizeof(tm_stats_header) ||
               h->call_size != sizeof(tm_stats_call) || h->record_size != sizeof(tm_stats_record)) {
        snprintf(why, why_len, "%s: stats layout version %u, this tiermem-stat reads version %d only (use the "
                 "tiermem-stat that came with the process's libtiermem.so)", path, h->version, TM_STATS_VERSION);
    } else if (!fits(h->calls_offset, h->call_count, h->call_size, size) ||
               !fits(h->records_offset, h->record_capacity, h->record_size, size)) {
        snprintf(why, why_len, "%s: stats region is truncated", path);
    } else {
        memcpy(&snapshot->header, h, sizeof *h);
        const tm_stats_call *calls = (const tm_stats_call *)((const char *)map + h->calls_offset);
        const tm_stats_record *records = (const tm_stats_record *)((const char *)map + h->records_offset);
        snapshot->calls = calloc(h->call_count ? h->call_count : 1, sizeof *snapshot->calls);
        snapshot->records = calloc(h->record_capacity ? h->record_capacity : 1, sizeof *snapshot->records);
        uint32_t *slots = calloc(h->record_capacity ? h->record_capacity : 1, sizeof *slots);
        if (!snapshot->calls || !snapshot->records || !slots) {
            snprintf(why, why_len, "out of memory");
        } else {
            memcpy(snapshot->calls, calls, (size_t)h->call_count * sizeof *calls);
            for (uint32_t i = 0; i < h->record_capacity; i++) {
                tm_stats_record r;
                if (copy_record(&records[i], &r) && r.in_use) {
                    slots[snapshot->record_count] = i;
                    snapshot->records[snapshot->record_count++] = r;
                }
            }
            char heat_why[128];
            snapshot->heat = tm_heat_view_read(map, size, h, slots, snapshot->records, snapshot->record_count, heat_why,
                                               sizeof heat_why);
            if (snapshot->heat)
                result = 0;
            else
                snprintf(why, why_len, "%s: %s", path, heat_why);
        }
        free(slots);
    }
    munmap(map, (size_t)st.st_size);
    if (result != 0)
        tm_stats_snapshot_free(snapshot);
    return result;
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
