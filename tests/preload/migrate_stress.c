/* migrate_stress.c — chunks migrate continuously while streams read and write
 * checksummed data in them.
 *
 *   migrate_stress MIGRATIONS [STREAMS [CHUNKS_PER_STREAM]]
 *
 * One chunked allocation holds a region per stream. A thread per stream launches the
 * check_stamp kernel on its region over and over (each launch checks the previous
 * version of every word and writes the next); a migrator thread meanwhile moves random
 * runs of 1 to 4 chunks to random tiers through tiermem_migrate, until MIGRATIONS chunks
 * have moved. After every other launch the stream's thread also reads its region back
 * with cuMemcpyDtoHAsync and checks every word (a read-back that meets a chunk being
 * remapped fails or reads wrong bytes), and a reader thread copies pieces of two chunks
 * no kernel writes back with cuMemcpyDtoH in a tight loop, so that some copy is issued
 * while a chunk is unmapped unless the copies wait for the migration. A setter thread sets
 * a chunk to a new value with cuMemsetD32Async, copies it to another with cuMemcpyDtoD
 * and checks a piece of the copy (a write a migration's copy missed is
 * lost at the remap). At the end the host checks every word too. Prints
 *   "migrations N refused N failed N launches N reads N corrupted bytes N"
 * (refused: the tier was full or absent; failed: another error, as under fault injection;
 * corrupted counts bytes the kernels, the read-backs and the final check found wrong)
 * and exits 0 only when nothing was corrupted. Needs libtiermem.so preloaded. */
#include <cuda.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/preload/probe_util.h"
#include "tests/preload/stamp.h"

#define CHUNK (2ull << 20)
#define MAX_STREAMS 64
#define STILL_CHUNKS 2             /* written once, then only read */
#define PIECE_WORDS 64             /* words of one read of them */

typedef CUresult (*migrate_fn)(CUdeviceptr address, size_t bytes, const char *tier);

static CUcontext ctx;
static CUfunction kernel;
static CUdeviceptr data;           /* streams * chunks_per_stream chunks, then STILL_CHUNKS,
                                    * then the setter's two */
static CUdeviceptr bad;            /* [1] uint64_t: bytes found wrong by the kernels */
static uint64_t region_words;      /* uint32_t words per stream */
static int stop;
static uint64_t reads;             /* read-backs done */
static uint64_t read_corrupted;    /* bytes the read-backs found wrong */

struct launcher {
    pthread_t thread;
    int index;
    CUstream stream;
    uint32_t version;              /* versions written so far */
    uint32_t *readback;            /* [region_words] */
};

/* Bytes of `words`, words `first` on of the region of `seed`, that differ from it at `version`. */
static uint64_t wrong_bytes(const uint32_t *words, uint64_t first, uint64_t count, uint32_t seed, uint32_t version)
{
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < count; i++)
        for (uint32_t diff = words[i] ^ test_stamp(seed, first + i, version); diff; diff >>= 8)
            wrong += (diff & 0xff) != 0;
    return wrong;
}

static void *launch_loop(void *arg)
{
    struct launcher *l = arg;
    CHECK(cuCtxSetCurrent(ctx));
    CUdeviceptr region = data + (uint64_t)l->index * region_words * 4;
    uint32_t seed = (uint32_t)l->index + 1;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        void *params[] = { &region, &region_words, &seed, &l->version, &bad };
        CHECK(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, l->stream, params, NULL));
        l->version++;
        if (l->version % 2 == 0) { /* a few launches in flight, not an unbounded queue */
            CHECK(cuMemcpyDtoHAsync(l->readback, region, region_words * 4, l->stream));
            CHECK(cuStreamSynchronize(l->stream));
            __atomic_fetch_add(&read_corrupted, wrong_bytes(l->readback, 0, region_words, seed, l->version),
                               __ATOMIC_RELAXED);
            __atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
        }
    }
    CHECK(cuStreamSynchronize(l->stream));
    return NULL;
}

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Reads pieces of the still chunks (seed `streams + 1`, version 0) until told to stop. */
static void *read_loop(void *arg)
{
    int streams = *(const int *)arg;
    CHECK(cuCtxSetCurrent(ctx));
    CUdeviceptr still = data + (uint64_t)streams * region_words * 4;
    uint64_t pieces = STILL_CHUNKS * CHUNK / 4 / PIECE_WORDS;
    uint32_t piece[PIECE_WORDS];
    for (uint64_t n = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); n++) {
        uint64_t first = n * 7 % pieces * PIECE_WORDS; /* strides over both chunks */
        CHECK(cuMemcpyDtoH(piece, still + first * 4, sizeof piece));
        __atomic_fetch_add(&read_corrupted, wrong_bytes(piece, first, PIECE_WORDS, (uint32_t)streams + 1, 0),
                           __ATOMIC_RELAXED);
        __atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Sets a piece of the first of its chunks to 1, 2, 3, ... (a piece further on each time),
 * copies the piece to the second chunk and reads it back from there, until told to stop.
 * Small pieces, so that many writes are issued while a migration copies. */
static void *set_loop(void *arg)
{
    CUdeviceptr set = *(const CUdeviceptr *)arg, copy = set + CHUNK;
    CHECK(cuCtxSetCurrent(ctx));
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    uint32_t piece[PIECE_WORDS];
    for (uint32_t value = 1; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); value++) {
        uint64_t at = value * 7ull % (CHUNK / sizeof piece) * sizeof piece;
        CHECK(cuMemsetD32Async(set + at, value, PIECE_WORDS, stream));
        CHECK(cuStreamSynchronize(stream));
        /* the synchronous form: the migration's own copies are the only cuMemcpyDtoDAsync
         * calls, which the fault injection counts */
        CHECK(cuMemcpyDtoD(copy + at, set + at, sizeof piece));
        CHECK(cuMemcpyDtoH(piece, copy + at, sizeof piece));
        uint64_t wrong = 0;
        for (uint64_t i = 0; i < PIECE_WORDS; i++)
            for (uint32_t diff = piece[i] ^ value; diff; diff >>= 8)
                wrong += (diff & 0xff) != 0;
        __atomic_fetch_add(&read_corrupted, wrong, __ATOMIC_RELAXED);
        __atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
    }
    CHECK(cuStreamDestroy(stream));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: migrate_stress MIGRATIONS [STREAMS [CHUNKS_PER_STREAM]]\n");
        return 2;
    }
    uint64_t target = strtoull(argv[1], NULL, 10);
    int streams = argc > 2 ? atoi(argv[2]) : 8;
    uint64_t per_stream = argc > 3 ? strtoull(argv[3], NULL, 10) : 2;
    if (streams < 1 || streams > MAX_STREAMS || per_stream < 1) {
        fprintf(stderr, "migrate_stress: STREAMS must be 1 to %d, CHUNKS_PER_STREAM at least 1\n", MAX_STREAMS);
        return 2;
    }
    migrate_fn migrate = (migrate_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "tiermem_migrate");
    if (!migrate) {
        fprintf(stderr, "migrate_stress: tiermem_migrate is not there (run it with libtiermem.so preloaded)\n");
        return 2;
    }
    ctx = probe_init();
    CUmodule module;
    CHECK(cuModuleLoad(&module, TM_TEST_KERNELS));
    CHECK(cuModuleGetFunction(&kernel, module, "check_stamp"));

    uint64_t chunks = (uint64_t)streams * per_stream + STILL_CHUNKS + 2;
    region_words = per_stream * CHUNK / 4;
    CHECK(cuMemAlloc(&data, chunks * CHUNK));
    CHECK(cuMemAlloc(&bad, sizeof(uint64_t)));
    CHECK(cuMemsetD8(bad, 0, sizeof(uint64_t)));
    uint32_t *host = malloc(region_words * 4);
    if (!host)
        return 3;
    for (int s = 0; s < streams; s++) {
        for (uint64_t i = 0; i < region_words; i++)
            host[i] = test_stamp((uint32_t)s + 1, i, 0);
        CHECK(cuMemcpyHtoD(data + (uint64_t)s * region_words * 4, host, region_words * 4));
    }
    uint32_t *still = malloc(STILL_CHUNKS * CHUNK);
    if (!still)
        return 3;
    for (uint64_t i = 0; i < STILL_CHUNKS * CHUNK / 4; i++)
        still[i] = test_stamp((uint32_t)streams + 1, i, 0);
    CHECK(cuMemcpyHtoD(data + (uint64_t)streams * region_words * 4, still, STILL_CHUNKS * CHUNK));
    free(still);
    pthread_t reader, setter;
    pthread_create(&reader, NULL, read_loop, &streams);
    CUdeviceptr set = data + (chunks - 2) * CHUNK;
    pthread_create(&setter, NULL, set_loop, &set);

    struct launcher launcher[MAX_STREAMS];
    for (int s = 0; s < streams; s++) {
        launcher[s] = (struct launcher){ .index = s, .readback = malloc(region_words * 4) };
        if (!launcher[s].readback)
            return 3;
        CHECK(cuStreamCreate(&launcher[s].stream, CU_STREAM_NON_BLOCKING));
        pthread_create(&launcher[s].thread, NULL, launch_loop, &launcher[s]);
    }

    /* the migrator: the tier of each chunk is known here, so moves are counted exactly */
    static const char *const tiers[] = { "hbm", "cxl", "ddr" };
    char *where = calloc(chunks, 1); /* index into tiers; starts unknown (-1 below) */
    memset(where, -1, chunks);
    uint64_t moved = 0, refused = 0, failed = 0, state = 0x2545f4914f6cdd1dull;
    while (moved < target) {
        uint64_t first = next_random(&state) % chunks;
        uint64_t count = 1 + next_random(&state) % 4;
        if (first + count > chunks)
            count = chunks - first;
        int tier = (int)(next_random(&state) % 3);
        CUresult r = migrate(data + first * CHUNK, count * CHUNK, tiers[tier]);
        if (r != CUDA_SUCCESS) {
            /* the tier is full or absent, or (under fault injection) the driver failed */
            if (r == CUDA_ERROR_OUT_OF_MEMORY || r == CUDA_ERROR_INVALID_VALUE)
                refused++;
            else
                failed++;
            for (uint64_t c = first; c < first + count; c++)
                where[c] = -1; /* some may have moved before that */
            if (failed > 1000)
                break;
            continue;
        }
        for (uint64_t c = first; c < first + count; c++) {
            moved += where[c] != tier;
            where[c] = (char)tier;
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(reader, NULL);
    pthread_join(setter, NULL);
    uint64_t launches = 0;
    for (int s = 0; s < streams; s++) {
        pthread_join(launcher[s].thread, NULL);
        launches += launcher[s].version;
    }
    CHECK(cuCtxSynchronize());

    uint64_t corrupted = 0;
    CHECK(cuMemcpyDtoH(&corrupted, bad, sizeof corrupted));
    for (int s = 0; s < streams; s++) {
        CHECK(cuMemcpyDtoH(host, data + (uint64_t)s * region_words * 4, region_words * 4));
        corrupted += wrong_bytes(host, 0, region_words, (uint32_t)s + 1, launcher[s].version);
        CHECK(cuStreamDestroy(launcher[s].stream));
        free(launcher[s].readback);
    }
    corrupted += read_corrupted;
    printf("migrations %" PRIu64 " refused %" PRIu64 " failed %" PRIu64 " launches %" PRIu64 " reads %" PRIu64
           " corrupted bytes %" PRIu64 "\n", moved, refused, failed, launches, reads, corrupted);
    CHECK(cuMemFree(data));
    CHECK(cuMemFree(bad));
    CHECK(cuModuleUnload(module));
    free(host);
    free(where);
    return corrupted ? 1 : 0;
}
