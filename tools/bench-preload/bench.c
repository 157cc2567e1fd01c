/* bench.c — nanoseconds per driver call, for bench-preload.sh to run with and without
 * libtiermem.so in front. Prints "name nanoseconds" lines, each the best of 5 rounds:
 *
 *   launch            cuLaunchKernel of an empty kernel
 *   launch_params     cuLaunchKernel of an empty kernel given 4 pointers into two 8 MiB
 *                     allocations and 2 integers (what `launch` heat reads when it samples)
 *   alloc_free_small  cuMemAlloc + cuMemFree of 4 KiB (passed through, counted)
 *   alloc_free_tiered cuMemAlloc + cuMemFree of 8 MiB (4 chunks under the interposer)
 *   alloc_free_64m    cuMemAlloc + cuMemFree of 64 MiB (32 chunks)
 *   memcpy_htod_4k    cuMemcpyHtoD of 4 KiB
 *   lookup_10         cuMemGetAddressRange of an inner address, 10 live allocations
 *   lookup_100000     the same with 100 000 live allocations
 *
 * With --registry it measures the interposer's registry alone (no driver): a lookup at 10
 * and at 100 000 live records ("registry_10", "registry_100000"). With --rate N SECONDS it
 * launches the touch4 kernel N times a second for SECONDS (a steady load for a collector
 * to watch) and prints "rate LAUNCHES_PER_SECOND" and "launch_touch4 NS" (its launch cost).
 * With --launches N it only sets up and makes N launches of the empty kernel with the 4
 * pointers and 2 integers of launch_params (for an instruction count: bench-preload.sh runs
 * it under callgrind at two N, so that set-up cancels out). --version prints the version. */
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preload/model/model_files.h"
#include "preload/mem/registry.h"

#ifndef TM_BENCH_KERNELS
#error "TM_BENCH_KERNELS names the benchmark kernel module"
#endif

#define CHECK(call)                                                                  \
    do {                                                                             \
        CUresult r_ = (call);                                                        \
        if (r_ != CUDA_SUCCESS) {                                                    \
            fprintf(stderr, "bench-preload: %s failed (%d)\n", #call, (int)r_);      \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Runs body `iterations` times per round, 5 rounds; the best round's time per iteration. */
#define MEASURE(name, iterations, body)                                              \
    do {                                                                             \
        double best = 1e30;                                                          \
        for (int round = 0; round < 5; round++) {                                    \
            double start = now_ns();                                                 \
            for (long it = 0; it < (iterations); it++) {                             \
                body;                                                                \
            }                                                                        \
            double per = (now_ns() - start) / (double)(iterations);                  \
            if (per < best)                                                          \
                best = per;                                                          \
        }                                                                            \
        printf("%s %.1f\n", name, best);                                             \
    } while (0)

/* ---------------------------------------------------------------- the registry alone */

static void read_nothing(tm_range *range, void *arg)
{
    *(uint64_t *)arg += range->base;
}

static void bench_registry(void)
{
    enum { MANY = 100000 };
    tm_range *ranges = calloc(MANY, sizeof *ranges);
    uint64_t sink = 0;
    for (int live = 10; live <= MANY; live *= 10000) {
        for (int i = 0; i < live; i++) {
            ranges[i] = (tm_range){ .base = 0x100000000000ull + (uint64_t)i * 4096 * 3, .size = 4096 };
            tm_registry_insert(&ranges[i]);
        }
        unsigned int x = 1;
        char name[32];
        snprintf(name, sizeof name, "registry_%d", live);
        MEASURE(name, 2000000, {
            x = x * 1103515245u + 12345u;
            tm_registry_find(ranges[x % (unsigned)live].base + 100, read_nothing, &sink);
        });
        for (int i = 0; i < live; i++)
            tm_registry_remove(ranges[i].base);
    }
    free(ranges);
    if (sink == 42)
        printf("\n");
}

/* ---------------------------------------------------------------- provenance alone */

/* What a host-to-device copy of an unlabelled buffer adds: the check with no file range
 * recorded (one load), and the lookup that misses among 513 ranges (a model mapping and
 * 512 pread buffers). */
static void bench_host_ranges(void)
{
    /* a file whose one tensor spans the ranges, held for good (as by an open descriptor) */
    static tm_tensor tensor = { .name = "bench", .size = 1 << 20 };
    static tm_model_file file = { .refs = 1, .table = { .format = TM_FORMAT_GGUF, .count = 1, .tensor = &tensor } };
    static char buffer[4096];
    volatile int sink = 0;
    tm_model_file *f;
    uint64_t offset;
    size_t valid;
    MEASURE("unlabelled_no_ranges", 20000000, sink += tm_host_ranges_any());
    static char mapping[1 << 20];
    tm_host_range_filled(&file, mapping, sizeof mapping, 0);
    char *pieces[512];
    for (int i = 0; i < 512; i++) {
        pieces[i] = malloc(256);
        tm_host_range_filled(&file, pieces[i], 256, (uint64_t)i * 256);
    }
    MEASURE("unlabelled_513_ranges", 5000000,
            sink += tm_host_ranges_any() && tm_host_range_find(buffer, &f, &offset, &valid));
    MEASURE("labelled_513_ranges", 5000000,
            sink += tm_host_ranges_any() && tm_host_range_find(pieces[100] + 8, &f, &offset, &valid));
    for (int i = 0; i < 512; i++) {
        tm_host_range_forget(pieces[i], 256);
        free(pieces[i]);
    }
    if (sink == 42)
        printf("\n");
}

/* ---------------------------------------------------------------- driver calls */

static void bench_lookup(int live)
{
    CUdeviceptr *p = calloc((size_t)live, sizeof *p);
    for (int i = 0; i < live; i++)
        CHECK(cuMemAlloc(&p[i], 256));
    unsigned int x = 1;
    CUdeviceptr base;
    size_t size;
    char name[32];
    snprintf(name, sizeof name, "lookup_%d", live);
    MEASURE(name, 1000000, {
        x = x * 1103515245u + 12345u;
        CHECK(cuMemGetAddressRange(&base, &size, p[x % (unsigned)live] + 100));
    });
    for (int i = 0; i < live; i++)
        CHECK(cuMemFree(p[i]));
    free(p);
}

/* N launches a second of a kernel that declares what it touches, for `seconds`. */
static void bench_rate(CUmodule module, double rate, double seconds)
{
    CUfunction touch4;
    CHECK(cuModuleGetFunction(&touch4, module, "touch4"));
    uint64_t n = 512;
    CUdeviceptr out, x, w;
    CHECK(cuMemAlloc(&out, n * 4));
    CHECK(cuMemAlloc(&x, n * 4));
    CHECK(cuMemAlloc(&w, n * n * 4));
    void *params[] = { &out, &x, &w, &n };
    double start = now_ns(), spent = 0;
    long launches = 0;
    while (now_ns() - start < seconds * 1e9) {
        double due = start + (double)launches * 1e9 / rate;
        while (now_ns() < due)
            ;
        double before = now_ns();
        CHECK(cuLaunchKernel(touch4, 2, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        spent += now_ns() - before;
        launches++;
    }
    CHECK(cuCtxSynchronize());
    printf("rate %.0f\nlaunch_touch4 %.1f\n", (double)launches / ((now_ns() - start) / 1e9), spent / (double)launches);
    CHECK(cuMemFree(out));
    CHECK(cuMemFree(x));
    CHECK(cuMemFree(w));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("bench-preload %s\n", TM_VERSION);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--registry") == 0) {
        bench_registry();
        bench_host_ranges();
        return 0;
    }
    bool rate_mode = argc == 4 && strcmp(argv[1], "--rate") == 0;
    long count_launches = argc == 3 && strcmp(argv[1], "--launches") == 0 ? atol(argv[2]) : -1;
    CUdevice device;
    CUcontext ctx;
    CUmodule module;
    CUfunction noop;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&module, TM_BENCH_KERNELS));
    CHECK(cuModuleGetFunction(&noop, module, "noop"));
    if (rate_mode) {
        bench_rate(module, atof(argv[2]), atof(argv[3]));
        return 0;
    }
    if (count_launches >= 0) {
        CUdeviceptr a, b;
        CHECK(cuMemAlloc(&a, 8 << 20));
        CHECK(cuMemAlloc(&b, 8 << 20));
        struct { CUdeviceptr out, in, table, rows; int n, dim; } args = { a, b, a + (3 << 20), b + 4096, 64, 4096 };
        void *params[] = { &args.out, &args.in, &args.table, &args.rows, &args.n, &args.dim };
        for (long i = 0; i < count_launches; i++)
            CHECK(cuLaunchKernel(noop, 64, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        CHECK(cuMemFree(a));
        CHECK(cuMemFree(b));
        return 0;
    }

    MEASURE("launch", 500000, CHECK(cuLaunchKernel(noop, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)));
    CUdeviceptr a, b;
    CHECK(cuMemAlloc(&a, 8 << 20));
    CHECK(cuMemAlloc(&b, 8 << 20));
    struct { CUdeviceptr out, in, table, rows; int n, dim; } args = { a, b, a + (3 << 20), b + 4096, 64, 4096 };
    void *params[] = { &args.out, &args.in, &args.table, &args.rows, &args.n, &args.dim };
    MEASURE("launch_params", 500000, CHECK(cuLaunchKernel(noop, 64, 1, 1, 256, 1, 1, 0, NULL, params, NULL)));
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    CUdeviceptr p;
    MEASURE("alloc_free_small", 200000, {
        CHECK(cuMemAlloc(&p, 4096));
        CHECK(cuMemFree(p));
    });
    MEASURE("alloc_free_tiered", 2000, {
        CHECK(cuMemAlloc(&p, 8 << 20));
        CHECK(cuMemFree(p));
    });
    MEASURE("alloc_free_64m", 500, {
        CHECK(cuMemAlloc(&p, 64 << 20));
        CHECK(cuMemFree(p));
    });
    static char host[4096];
    CHECK(cuMemAlloc(&p, sizeof host));
    MEASURE("memcpy_htod_4k", 500000, CHECK(cuMemcpyHtoD(p, host, sizeof host)));
    CHECK(cuMemFree(p));
    bench_lookup(10);
    bench_lookup(100000);
    CHECK(cuModuleUnload(module));
    CHECK(cuDevicePrimaryCtxRelease_v2(device));
    return 0;
}
