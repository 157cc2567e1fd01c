/* migrate_stress.c — chunks migrate continuously while streams read and write
 * checksummed data in them.
 *
 *   migrate_stress MIGRATIONS [STREAMS [CHUNKS_PER_STREAM]]
 *   migrate_stress path TIER...   moves the first chunk of a 2-chunk allocation to each
 *                                 TIER in turn, with no kernels; prints "path ok" or the
 *                                 move that failed
 *
 * One chunked allocation holds a region per stream, cut in 256 KiB slices, each with its
 * own seed and version. A thread per stream launches the check_stamp kernel on its
 * slices in turn (each launch checks the previous version of every word of the slice and
 * writes the next); a migrator thread meanwhile moves random runs of 1 to 4 chunks to
 * random tiers through tiermem_migrate, until MIGRATIONS chunks have moved. Launches are
 * paced by the migrations: LAUNCHES_PER_MIGRATION launches per migration started, the
 * streams taking turns, so kernels run during every migration and the work per migration
 * does not depend on the machine's speed. After every other launch a stream's thread reads
 * the slice back with cuMemcpyDtoHAsync and checks every word (a read-back that meets a
 * chunk being remapped fails or reads wrong bytes). With each migration started, a reader
 * thread copies a piece of two chunks no kernel writes back with cuMemcpyDtoH, and a
 * setter thread sets a piece of a chunk to a new value with cuMemsetD32Async (every other
 * time from a graph captured around it, with cuGraphLaunch), copies it to
 * another with cuMemcpyDtoD and checks the copy (a write a migration's copy missed is lost
 * at the remap). At the end the host checks every word too. Prints
 *   "migrations N refused N failed N launches N reads N corrupted bytes N"
 * (refused: the tier was full or absent; failed: another error, as under fault injection;
 * corrupted counts bytes the kernels, the read-backs and the final check found wrong)
 * and exits 0 only when nothing was corrupted. Needs libtiermem.so preloaded. */
#include <cuda.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/preload/probe_util.h"
#include "tests/preload/stamp.h"

#define CHUNK (2ull << 20)
#define SLICE_WORDS ((256ull << 10) / 4) /* uint32_t words one launch checks */
#define MAX_STREAMS 64
#define LAUNCHES_PER_MIGRATION 2
#define STILL_CHUNKS 2             /* written once, then only read */
#define PIECE_WORDS 64             /* words of one read or set of the helpers' chunks */

typedef CUresult (*migrate_fn)(CUdeviceptr address, size_t bytes, const char *tier);

static CUcontext ctx;
static CUfunction kernel;
static CUdeviceptr data;           /* streams * chunks_per_stream chunks, then STILL_CHUNKS,
                                    * then the setter's two */
static CUdeviceptr bad;            /* [1] uint64_t: bytes found wrong by the kernels */
static int streams;
static uint64_t slices;            /* per stream */
static uint32_t *version;          /* [streams * slices] versions each slice has had written */
static uint64_t reads;             /* read-backs done */
static uint64_t read_corrupted;    /* bytes the read-backs found wrong */

/* the pace: migrations started so far, and whether the migrator is done */
static pthread_mutex_t pace_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pace_moved = PTHREAD_COND_INITIALIZER;
static uint64_t started;
static bool stop;

struct launcher {
    pthread_t thread;
    int index;
    CUstream stream;
    uint64_t launches;
    uint32_t *readback;            /* [SLICE_WORDS] */
};

/* Slice `slice` of all streams' slices: where it is and the seed its words are stamped with. */
static CUdeviceptr slice_at(uint64_t slice)
{
    return data + slice * SLICE_WORDS * 4;
}

static uint32_t slice_seed(uint64_t slice)
{
    return (uint32_t)slice + 1;
}

/* Bytes of `words`, words `first` on of a region stamped with `seed`, that differ from it at `version`. */
static uint64_t wrong_bytes(const uint32_t *words, uint64_t first, uint64_t count, uint32_t seed, uint32_t version)
{
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < count; i++)
        for (uint32_t diff = words[i] ^ test_stamp(seed, first + i, version); diff; diff >>= 8)
            wrong += (diff & 0xff) != 0;
    return wrong;
}

static void note_read(uint64_t wrong)
{
    __atomic_fetch_add(&read_corrupted, wrong, __ATOMIC_RELAXED);
    __atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
}

/* Waits until a migration beyond `*seen` has started; false once the migrator is done. */
static bool wait_next_migration(uint64_t *seen)
{
    pthread_mutex_lock(&pace_lock);
    while (!stop && started <= *seen)
        pthread_cond_wait(&pace_moved, &pace_lock);
    bool go = !stop;
    *seen = started;
    pthread_mutex_unlock(&pace_lock);
    return go;
}

static void *launch_loop(void *arg)
{
    struct launcher *l = arg;
    CHECK(cuCtxSetCurrent(ctx));
    uint64_t words = SLICE_WORDS;
    for (;;) {
        pthread_mutex_lock(&pace_lock);
        /* its turn: the launches of all streams so far stay within the pace */
        while (!stop && l->launches * (uint64_t)streams + (uint64_t)l->index >= started * LAUNCHES_PER_MIGRATION)
            pthread_cond_wait(&pace_moved, &pace_lock);
        bool done = stop;
        pthread_mutex_unlock(&pace_lock);
        if (done)
            break;
        uint64_t slice = (uint64_t)l->index * slices + l->launches % slices;
        CUdeviceptr at = slice_at(slice);
        uint32_t seed = slice_seed(slice);
        void *params[] = { &at, &words, &seed, &version[slice], &bad };
        CHECK(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, l->stream, params, NULL));
        version[slice]++;
        l->launches++;
        if (l->launches % 2 == 0) { /* a few launches in flight, not an unbounded queue */
            CHECK(cuMemcpyDtoHAsync(l->readback, at, SLICE_WORDS * 4, l->stream));
            CHECK(cuStreamSynchronize(l->stream));
            note_read(wrong_bytes(l->readback, 0, SLICE_WORDS, seed, version[slice]));
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

/* Reads a piece of the still chunks (seed `still_seed`, version 0) per migration started. */
static void *read_loop(void *arg)
{
    CUdeviceptr still = *(const CUdeviceptr *)arg;
    uint32_t still_seed = (uint32_t)((uint64_t)streams * slices) + 1;
    CHECK(cuCtxSetCurrent(ctx));
    uint64_t pieces = STILL_CHUNKS * CHUNK / 4 / PIECE_WORDS;
    uint32_t piece[PIECE_WORDS];
    for (uint64_t n = 0, seen = 0; wait_next_migration(&seen); n++) {
        uint64_t first = n * 7 % pieces * PIECE_WORDS; /* strides over both chunks */
        CHECK(cuMemcpyDtoH(piece, still + first * 4, sizeof piece));
        note_read(wrong_bytes(piece, first, PIECE_WORDS, still_seed, 0));
    }
    return NULL;
}

/* Per migration started: sets a piece of the first of its chunks to 1, 2, 3, ... (a piece
 * further on each time), copies the piece to the second chunk and reads it back from there.
 * Small pieces, so that the writes land while a migration copies. */
static void *set_loop(void *arg)
{
    CUdeviceptr set = *(const CUdeviceptr *)arg, copy = set + CHUNK;
    CHECK(cuCtxSetCurrent(ctx));
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    uint32_t piece[PIECE_WORDS];
    uint64_t seen = 0;
    for (uint32_t value = 1; wait_next_migration(&seen); value++) {
        uint64_t at = value * 7ull % (CHUNK / sizeof piece) * sizeof piece;
        if (value % 2) { /* a graph launch sets it, past the same gate as the memset */
            CUgraph graph;
            CUgraphExec exec;
            CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
            CHECK(cuMemsetD32Async(set + at, value, PIECE_WORDS, stream));
            CHECK(cuStreamEndCapture(stream, &graph));
            CHECK(cuGraphInstantiate(&exec, graph, 0));
            CHECK(cuGraphLaunch(exec, stream));
            CHECK(cuStreamSynchronize(stream));
            CHECK(cuGraphExecDestroy(exec));
            CHECK(cuGraphDestroy(graph));
        } else {
            CHECK(cuMemsetD32Async(set + at, value, PIECE_WORDS, stream));
            CHECK(cuStreamSynchronize(stream));
        }
        /* the synchronous form: the migration's own copies are the only cuMemcpyDtoDAsync
         * calls, which the fault injection counts */
        CHECK(cuMemcpyDtoD(copy + at, set + at, sizeof piece));
        CHECK(cuMemcpyDtoH(piece, copy + at, sizeof piece));
        uint64_t wrong = 0;
        for (uint64_t i = 0; i < PIECE_WORDS; i++)
            for (uint32_t diff = piece[i] ^ value; diff; diff >>= 8)
                wrong += (diff & 0xff) != 0;
        note_read(wrong);
    }
    CHECK(cuStreamDestroy(stream));
    return NULL;
}

/* `path`: one chunk through the tiers given, for counts that must come out exact. */
static int move_along(migrate_fn migrate, int count, char **tiers)
{
    ctx = probe_init();
    CUdeviceptr two;
    CHECK(cuMemAlloc(&two, 2 * CHUNK));
    for (int i = 0; i < count; i++) {
        CUresult r = migrate(two, CHUNK, tiers[i]);
        if (r != CUDA_SUCCESS) {
            printf("path: move %d to %s: %d\n", i + 1, tiers[i], (int)r);
            return 1;
        }
    }
    CHECK(cuMemFree(two));
    printf("path ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    migrate_fn migrate = (migrate_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "tiermem_migrate");
    if (argc >= 2 && strcmp(argv[1], "path") == 0 && migrate)
        return move_along(migrate, argc - 2, argv + 2);
    if (argc < 2) {
        fprintf(stderr, "usage: migrate_stress MIGRATIONS [STREAMS [CHUNKS_PER_STREAM]]\n");
        return 2;
    }
    uint64_t target = strtoull(argv[1], NULL, 10);
    streams = argc > 2 ? atoi(argv[2]) : 8;
    uint64_t per_stream = argc > 3 ? strtoull(argv[3], NULL, 10) : 2;
    if (streams < 1 || streams > MAX_STREAMS || per_stream < 1) {
        fprintf(stderr, "migrate_stress: STREAMS must be 1 to %d, CHUNKS_PER_STREAM at least 1\n", MAX_STREAMS);
        return 2;
    }
    if (!migrate) {
        fprintf(stderr, "migrate_stress: tiermem_migrate is not there (run it with libtiermem.so preloaded)\n");
        return 2;
    }
    ctx = probe_init();
    CUmodule module;
    CHECK(cuModuleLoad(&module, TM_TEST_KERNELS));
    CHECK(cuModuleGetFunction(&kernel, module, "check_stamp"));

    uint64_t chunks = (uint64_t)streams * per_stream + STILL_CHUNKS + 2;
    slices = per_stream * CHUNK / (SLICE_WORDS * 4);
    uint64_t all_slices = (uint64_t)streams * slices;
    CHECK(cuMemAlloc(&data, chunks * CHUNK));
    CHECK(cuMemAlloc(&bad, sizeof(uint64_t)));
    CHECK(cuMemsetD8(bad, 0, sizeof(uint64_t)));
    uint32_t *host = malloc(SLICE_WORDS * 4);
    version = calloc(all_slices, sizeof *version);
    if (!host || !version)
        return 3;
    for (uint64_t slice = 0; slice < all_slices; slice++) {
        for (uint64_t i = 0; i < SLICE_WORDS; i++)
            host[i] = test_stamp(slice_seed(slice), i, 0);
        CHECK(cuMemcpyHtoD(slice_at(slice), host, SLICE_WORDS * 4));
    }
    CUdeviceptr still = slice_at(all_slices), set = data + (chunks - 2) * CHUNK;
    uint32_t *still_words = malloc(STILL_CHUNKS * CHUNK);
    if (!still_words)
        return 3;
    for (uint64_t i = 0; i < STILL_CHUNKS * CHUNK / 4; i++)
        still_words[i] = test_stamp(slice_seed(all_slices), i, 0);
    CHECK(cuMemcpyHtoD(still, still_words, STILL_CHUNKS * CHUNK));
    free(still_words);
    pthread_t reader, setter;
    pthread_create(&reader, NULL, read_loop, &still);
    pthread_create(&setter, NULL, set_loop, &set);

    struct launcher launcher[MAX_STREAMS];
    for (int s = 0; s < streams; s++) {
        launcher[s] = (struct launcher){ .index = s, .readback = malloc(SLICE_WORDS * 4) };
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
        pthread_mutex_lock(&pace_lock);
        started++;
        pthread_cond_broadcast(&pace_moved);
        pthread_mutex_unlock(&pace_lock);
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
    pthread_mutex_lock(&pace_lock);
    stop = true;
    pthread_cond_broadcast(&pace_moved);
    pthread_mutex_unlock(&pace_lock);
    pthread_join(reader, NULL);
    pthread_join(setter, NULL);
    uint64_t launches = 0;
    for (int s = 0; s < streams; s++) {
        pthread_join(launcher[s].thread, NULL);
        launches += launcher[s].launches;
        CHECK(cuStreamDestroy(launcher[s].stream));
        free(launcher[s].readback);
    }
    CHECK(cuCtxSynchronize());

    uint64_t corrupted = 0;
    CHECK(cuMemcpyDtoH(&corrupted, bad, sizeof corrupted));
    for (uint64_t slice = 0; slice < all_slices; slice++) {
        CHECK(cuMemcpyDtoH(host, slice_at(slice), SLICE_WORDS * 4));
        corrupted += wrong_bytes(host, 0, SLICE_WORDS, slice_seed(slice), version[slice]);
    }
    corrupted += read_corrupted;
    printf("migrations %" PRIu64 " refused %" PRIu64 " failed %" PRIu64 " launches %" PRIu64 " reads %" PRIu64
           " corrupted bytes %" PRIu64 "\n", moved, refused, failed, launches, reads, corrupted);
    CHECK(cuMemFree(data));
    CHECK(cuMemFree(bad));
    CHECK(cuModuleUnload(module));
    free(host);
    free(version);
    free(where);
    return corrupted ? 1 : 0;
}
