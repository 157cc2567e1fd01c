/* heat_probe.c — a driver-API program with a known access pattern, for the heat tests.
 *
 *   heat_probe MILLISECONDS TICK_MS HOLD_FILE
 *
 * Four 8 MiB allocations, launched at for MILLISECONDS with the add_bytes test kernel:
 *   hot    every iteration, 4096 x 256 threads (a launch that reaches all of it)
 *   warm   the same, but only in one interval of TICK_MS out of four
 *   rows   every 16th iteration, one thread at a 4 KiB row that walks the whole buffer (a
 *          gather, as an embedding lookup once per token)
 *   cold   never
 * Then it prints "ready hot=0x.. warm=0x.. rows=0x.. cold=0x..", waits for HOLD_FILE and
 * frees everything. The kernel touches only 64 bytes per launch: the heat the `launch`
 * source reports comes from parameters and launch sizes, which is what is checked. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/preload/probe_util.h"

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void launch(CUfunction f, CUdeviceptr at, unsigned blocks, unsigned threads)
{
    uint64_t n = 64;
    uint32_t delta = 1;
    void *params[] = { &at, &n, &delta };
    CHECK(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, NULL, params, NULL));
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 1;
    uint64_t duration = strtoull(argv[1], NULL, 10), tick = strtoull(argv[2], NULL, 10);
    if (!duration || !tick)
        return 1;
    probe_init();
    CUfunction f = probe_kernel();
    enum { HOT, WARM, ROWS, COLD, COUNT };
    CUdeviceptr p[COUNT];
    for (int i = 0; i < COUNT; i++) {
        CHECK(cuMemAlloc(&p[i], 8 << 20));
        CHECK(cuMemsetD8(p[i], 0, 8 << 20));
    }
    uint64_t start = now_ms();
    for (uint64_t it = 0; now_ms() - start < duration; it++) {
        launch(f, p[HOT], 4096, 256);
        if ((now_ms() / tick) % 4 == 0)
            launch(f, p[WARM], 4096, 256);
        if (it % 16 == 0)
            launch(f, p[ROWS] + (it / 16 % 2048) * 4096, 1, 1);
    }
    CHECK(cuCtxSynchronize());
    printf("ready hot=0x%llx warm=0x%llx rows=0x%llx cold=0x%llx\n", (unsigned long long)p[HOT],
           (unsigned long long)p[WARM], (unsigned long long)p[ROWS], (unsigned long long)p[COLD]);
    fflush(stdout);
    struct stat st;
    for (int i = 0; i < 6000 && stat(argv[3], &st) != 0; i++)
        nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
    for (int i = 0; i < COUNT; i++)
        CHECK(cuMemFree(p[i]));
    return 0;
}
