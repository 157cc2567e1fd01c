/* region_write.c — heat into a target's stats region (see region_write.h). */
#include "tools/tiermem-heat/region_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/region/stats_layout.h"

struct tm_region_writer {
    void *map;
    size_t size;
    tm_stats_header *h;
};

static bool fits(uint64_t offset, uint64_t count, uint64_t item, uint64_t size)
{
    uint64_t bytes;
    return !__builtin_mul_overflow(count, item, &bytes) && offset <= size && bytes <= size - offset;
}

tm_region_writer *tm_region_writer_open(const char *path, int collector_pid, char *why, size_t why_len)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= sizeof(tm_stats_header))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(why, why_len, "%s: not a tiermem stats region", path);
        return NULL;
    }
    tm_stats_header *h = map;
    uint64_t size = (uint64_t)st.st_size;
    if (h->magic != TM_STATS_MAGIC || h->version != TM_STATS_VERSION || h->header_size != sizeof *h ||
        h->record_size != sizeof(tm_stats_record) || h->heat_record_size != sizeof(tm_stats_heat_record) ||
        h->heat_chunk_size != sizeof(tm_stats_heat_chunk) || !h->heat_tick_ns || !h->chunk_size ||
        !fits(h->records_offset, h->record_capacity, h->record_size, size) ||
        !fits(h->heat_records_offset, h->record_capacity, h->heat_record_size, size) ||
        !fits(h->heat_chunks_offset, h->heat_chunk_capacity, h->heat_chunk_size, size)) {
        snprintf(why, why_len, "%s: stats layout version %u, heat is written into version %d only", path,
                 h->version, TM_STATS_VERSION);
        munmap(map, (size_t)st.st_size);
        return NULL;
    }
    tm_region_writer *w = calloc(1, sizeof *w);
    if (!w) {
        munmap(map, (size_t)st.st_size);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    w->map = map;
    w->size = (size_t)st.st_size;
    w->h = h;
    __atomic_store_n(&h->heat_collector_pid, collector_pid, __ATOMIC_RELEASE);
    return w;
}

uint64_t tm_region_writer_tick_ns(const tm_region_writer *w)
{
    return w->h->heat_tick_ns;
}

size_t tm_region_writer_publish(tm_region_writer *w, tm_chunk_table *table, uint32_t source)
{
    tm_stats_header *h = w->h;
    tm_stats_record *records = (tm_stats_record *)((char *)w->map + h->records_offset);
    tm_stats_heat_record *heat = (tm_stats_heat_record *)((char *)w->map + h->heat_records_offset);
    tm_stats_heat_chunk *pool = (tm_stats_heat_chunk *)((char *)w->map + h->heat_chunks_offset);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    __atomic_store_n(&h->heat_collector_ns, (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec,
                     __ATOMIC_RELEASE);
    size_t written = 0;
    for (uint32_t i = 0; i < h->record_capacity; i++) {
        if (!__atomic_load_n(&records[i].in_use, __ATOMIC_ACQUIRE) || !records[i].address)
            continue;
        uint64_t base = records[i].address;
        uint32_t count = heat[i].chunk_count;
        uint64_t first = heat[i].first_chunk;
        if (!count || first > h->heat_chunk_capacity || count > h->heat_chunk_capacity - first)
            continue;
        __atomic_fetch_add(&heat[i].seq, 1, __ATOMIC_ACQ_REL);
        for (uint32_t c = 0; c < count; c++) {
            tm_heat_chunk chunk;
            if (tm_chunk_table_get(table, base + (uint64_t)c * h->chunk_size, &chunk)) {
                memcpy(&pool[first + c], &chunk, sizeof pool[first + c]);
                written++;
            }
        }
        heat[i].sources |= source;
        __atomic_fetch_add(&heat[i].seq, 1, __ATOMIC_RELEASE);
    }
    return written;
}

void tm_region_writer_close(tm_region_writer *w)
{
    if (!w)
        return;
    __atomic_store_n(&w->h->heat_collector_pid, 0, __ATOMIC_RELEASE);
    munmap(w->map, w->size);
    free(w);
}
