/* collector_probe.c — the heat policy takes the heat a collector beside the process writes
 * into the stats region (as tiermem-heat does), while that heat is fresh.
 *
 *   collector_probe STATS_PATH      (under libtiermem.so, TIERMEM_POLICY=heat,
 *                                    TIERMEM_STATS=STATS_PATH, HBM room for 2 chunks)
 *
 * Two allocations of 2 chunks: `a` first, in HBM, `b` spilled below it. Kernels are
 * launched at `a` only, so the in-process launch heat says `a` is hot and `b` cold. The
 * program then writes heat into its own region as a collector would, saying the opposite:
 * `b` is read whole, `a` not at all (its counts written as NaN and -inf, which must read as
 * none). Three phases, each of 64 rounds of 256 launches (a rebalance pass comes every 256):
 *   launch     no collector: prints where a and b are (a stays in HBM)
 *   stale      the collector's last write 6 s old: its heat is not taken (a stays)
 *   fresh      the collector writes every round: b comes up, a goes down
 * After each phase one line "PHASE a=HBM,DDR b=HBM,DDR" gives the chunks per tier. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/region/stats_layout.h"
#include "tests/preload/probe_util.h"

#define CHUNK (2u << 20)

static tm_stats_header *region;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static tm_stats_record *records(void)
{
    return (tm_stats_record *)((char *)region + region->records_offset);
}

static int slot_of(CUdeviceptr address)
{
    for (uint32_t i = 0; i < region->record_capacity; i++)
        if (records()[i].in_use && records()[i].address == address)
            return (int)i;
    fprintf(stderr, "collector_probe: no record at 0x%llx\n", (unsigned long long)address);
    exit(4);
}

/* Writes `reads` bytes read into every heat chunk of the record at `address`, as of now. */
static void write_heat(CUdeviceptr address, double reads)
{
    int slot = slot_of(address);
    tm_stats_heat_record *hr = (tm_stats_heat_record *)((char *)region + region->heat_records_offset) + slot;
    tm_stats_heat_chunk *pool = (tm_stats_heat_chunk *)((char *)region + region->heat_chunks_offset);
    uint64_t tick = now_ns() / region->heat_tick_ns;
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_ACQ_REL);
    for (uint32_t c = 0; c < hr->chunk_count; c++)
        pool[hr->first_chunk + c] = (tm_stats_heat_chunk){ .tick = tick, .heat = isnan(reads) ? reads : 1.0,
                                                           .pending = 0, .reads = reads, .writes = -INFINITY };
    hr->sources |= TM_HEAT_FROM_USDT;
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_RELEASE);
}

static void print_tiers(const char *phase, CUdeviceptr a, CUdeviceptr b)
{
    tm_stats_record *ra = &records()[slot_of(a)], *rb = &records()[slot_of(b)];
    printf("%s a=%u,%u b=%u,%u\n", phase, ra->chunks[0], ra->chunks[2], rb->chunks[0], rb->chunks[2]);
    fflush(stdout);
}

static void rounds(CUfunction f, CUdeviceptr a, CUdeviceptr b, int collector)
{
    for (int r = 0; r < 64; r++) {
        if (collector) {
            __atomic_store_n(&region->heat_collector_pid, (int32_t)getpid(), __ATOMIC_RELEASE);
            __atomic_store_n(&region->heat_collector_ns, collector > 0 ? now_ns() : now_ns() - 6000000000ull,
                             __ATOMIC_RELEASE);
            write_heat(b, 1e12);
            write_heat(a, NAN);
        }
        for (int i = 0; i < 256; i++) {
            uint64_t n = 64;
            uint32_t delta = 1;
            void *params[] = { &a, &n, &delta };
            CHECK(cuLaunchKernel(f, 4096, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        }
        CHECK(cuCtxSynchronize());
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL); /* host time earns the budget */
    }
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 1;
    probe_init();
    CUfunction f = probe_kernel();
    CUdeviceptr a, b;
    CHECK(cuMemAlloc(&a, 2 * CHUNK));
    CHECK(cuMemAlloc(&b, 2 * CHUNK));
    CHECK(cuMemsetD8(a, 1, 2 * CHUNK));
    CHECK(cuMemsetD8(b, 2, 2 * CHUNK));
    int fd = open(argv[1], O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 4;
    }
    region = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (region == MAP_FAILED || region->magic != TM_STATS_MAGIC || region->version != TM_STATS_VERSION) {
        fprintf(stderr, "collector_probe: %s is not a stats region of this version\n", argv[1]);
        return 4;
    }
    print_tiers("start", a, b);
    rounds(f, a, b, 0);
    print_tiers("launch", a, b);
    rounds(f, a, b, -1);
    print_tiers("stale", a, b);
    rounds(f, a, b, 1);
    print_tiers("fresh", a, b);
    __atomic_store_n(&region->heat_collector_pid, 0, __ATOMIC_RELEASE);
    uint8_t first[2];
    CHECK(cuMemcpyDtoH(first, a, 1));
    CHECK(cuMemcpyDtoH(first + 1, b + 2 * CHUNK - 1, 1));
    printf("bytes %u %u\n", first[0], first[1]);
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    return 0;
}
