/* region_scribble.c — what the owner of a stats region can do to it, for the tests of its
 * readers (test_region_untrusted.sh). It never maps the file.
 *
 *   region_scribble set PATH FIELD VALUE       writes one header field (a name below)
 *   region_scribble oddseq PATH                every record in use, with an odd seq
 *   region_scribble badheat PATH               record 0 live, its one heat chunk NaN and
 *                                              infinities (what no decayed count can be)
 *   region_scribble rewrite PATH COUNT SEED PAUSE_US
 *                                              COUNT random rewrites (header fields set to
 *                                              hostile values, random bytes in the header,
 *                                              records and heat records), pausing PAUSE_US
 *                                              every 50; prints "rewrote COUNT" at the end
 * Exit status: 0, 1 bad arguments, 2 the file could not be written. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/region/stats_layout.h"

typedef struct field {
    const char *name;
    size_t offset, size;
} field;

#define FIELD(f) { #f, offsetof(tm_stats_header, f), sizeof(((tm_stats_header *)0)->f) }
static const field fields[] = {
    FIELD(magic),          FIELD(version),             FIELD(call_count),         FIELD(calls_offset),
    FIELD(record_capacity), FIELD(records_offset),     FIELD(heat_records_offset), FIELD(heat_chunks_offset),
    FIELD(heat_chunk_capacity), FIELD(heat_tick_ns),   FIELD(chunk_size),         FIELD(device_count),
    FIELD(heat_collector_pid),
};
#define FIELD_COUNT (sizeof fields / sizeof fields[0])

static const field *field_named(const char *name)
{
    for (size_t i = 0; i < FIELD_COUNT; i++)
        if (strcmp(fields[i].name, name) == 0)
            return &fields[i];
    return NULL;
}

static int put(int fd, const void *bytes, size_t len, uint64_t offset)
{
    return pwrite(fd, bytes, len, (off_t)offset) == (ssize_t)len ? 0 : -1;
}

static int put_field(int fd, const field *f, uint64_t value)
{
    uint32_t narrow = (uint32_t)value; /* little-endian: the low bytes first */
    return f->size == 8 ? put(fd, &value, 8, f->offset) : put(fd, &narrow, f->size, f->offset);
}

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Values a hostile owner would try: huge, just past the end, odd, zero. */
static uint64_t hostile_value(uint64_t *state, uint64_t size)
{
    static const uint64_t picks[] = { 0, 1, 7, 0xffffffffull, 1ull << 33, 1ull << 40, ~0ull, 1ull << 63 };
    uint64_t r = next_random(state);
    switch (r % 4) {
    case 0: return picks[(r >> 8) % (sizeof picks / sizeof picks[0])];
    case 1: return size - (r >> 8) % 4096;
    case 2: return size + (r >> 8) % 4096;
    default: return next_random(state);
    }
}

static int rewrite(int fd, long count, uint64_t seed, long pause_us)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < sizeof(tm_stats_header))
        return -1;
    uint64_t size = (uint64_t)st.st_size, state = seed | 1;
    tm_stats_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        return -1;
    /* the layout as it was at the start: records and heat records are aimed at through it */
    uint64_t records = h.records_offset, heat = h.heat_records_offset, capacity = h.record_capacity;
    for (long i = 0; i < count; i++) {
        if (pause_us && i && i % 50 == 0)
            nanosleep(&(struct timespec){ .tv_sec = pause_us / 1000000, .tv_nsec = pause_us % 1000000 * 1000 }, NULL);
        uint64_t r = next_random(&state);
        unsigned char bytes[64];
        size_t len = 1 + (r >> 8) % sizeof bytes;
        for (size_t b = 0; b < len; b++)
            bytes[b] = (unsigned char)next_random(&state);
        uint64_t at;
        switch (r % 5) {
        case 0:
            if (put_field(fd, &fields[(r >> 16) % FIELD_COUNT], hostile_value(&state, size)) != 0)
                return -1;
            continue;
        case 1: at = (r >> 16) % sizeof h; break;
        case 2: at = records + (r >> 16) % (capacity ? capacity : 1) * sizeof(tm_stats_record); break;
        case 3: at = heat + (r >> 16) % (capacity ? capacity : 1) * sizeof(tm_stats_heat_record); break;
        default: {
            /* a live record, odd or even, and heat that points anywhere */
            uint64_t slot = (r >> 16) % (capacity ? capacity : 1);
            tm_stats_record rec = { .seq = next_random(&state) % 3, .in_use = 1, .address = 1ull << 40,
                                    .size = hostile_value(&state, size) };
            tm_stats_heat_record hr = { .seq = next_random(&state) % 3, .first_chunk = hostile_value(&state, size),
                                        .chunk_count = (uint32_t)hostile_value(&state, size) };
            if (put(fd, &rec, sizeof rec, records + slot * sizeof rec) != 0 ||
                put(fd, &hr, sizeof hr, heat + slot * sizeof hr) != 0)
                return -1;
            continue;
        }
        }
        if (at + len > size)
            len = size - at;
        if (put(fd, bytes, len, at) != 0)
            return -1;
    }
    printf("rewrote %ld\n", count);
    return 0;
}

static int odd_seqs(int fd)
{
    tm_stats_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        return -1;
    tm_stats_record r = { .seq = 1, .in_use = 1, .size = 2u << 20 };
    for (uint64_t i = 0; i < h.record_capacity; i++)
        if (put(fd, &r, sizeof r, h.records_offset + i * sizeof r) != 0)
            return -1;
    return 0;
}

static int bad_heat(int fd)
{
    tm_stats_header h;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        return -1;
    tm_stats_record r = { .in_use = 1, .address = 1ull << 40, .size = 2u << 20, .chunks = { 1, 0, 0 } };
    tm_stats_heat_record hr = { .chunk_count = 1, .sources = TM_HEAT_FROM_EBPF };
    tm_stats_heat_chunk c = { .tick = 1, .heat = __builtin_nan(""), .pending = __builtin_inf(),
                              .reads = -__builtin_inf(), .writes = __builtin_nan("") };
    return put(fd, &r, sizeof r, h.records_offset) || put(fd, &hr, sizeof hr, h.heat_records_offset) ||
                   put(fd, &c, sizeof c, h.heat_chunks_offset)
               ? -1
               : 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: region_scribble set PATH FIELD VALUE | oddseq PATH | badheat PATH |\n"
                    "                       rewrite PATH COUNT SEED PAUSE_US\n");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *verb = argv[1], *path = argv[2];
    const field *f = NULL;
    if (strcmp(verb, "set") == 0 && (argc != 5 || !(f = field_named(argv[3]))))
        return usage();
    if (((strcmp(verb, "oddseq") == 0 || strcmp(verb, "badheat") == 0) && argc != 3) ||
        (strcmp(verb, "rewrite") == 0 && argc != 6))
        return usage();
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return 2;
    }
    int failed;
    if (f)
        failed = put_field(fd, f, strtoull(argv[4], NULL, 0));
    else if (strcmp(verb, "oddseq") == 0)
        failed = odd_seqs(fd);
    else if (strcmp(verb, "badheat") == 0)
        failed = bad_heat(fd);
    else if (strcmp(verb, "rewrite") == 0)
        failed = rewrite(fd, atol(argv[3]), strtoull(argv[4], NULL, 0), atol(argv[5]));
    else
        return usage();
    close(fd);
    if (failed) {
        fprintf(stderr, "region_scribble: %s could not be written\n", path);
        return 2;
    }
    return 0;
}
