/* pool_probe.c — chunked allocations freed and made again, the pattern pooled chunks serve
 * (preload/chunk_pool.h). An ordinary CUDA program: it knows nothing of the interposer.
 *
 *   pool_probe loop COUNT SIZE   COUNT rounds of cuMemAlloc SIZE, a checked round trip,
 *                                cuMemFree; prints "loop ok"
 *   pool_probe alias SIZE        allocates, checks and frees one allocation, then makes two
 *                                live ones: their ranges must not overlap and each must keep
 *                                its own bytes while the other is written; "alias ok"
 *   pool_probe steps STEP...     each STEP a size to allocate (and check), or -K to free the
 *                                Kth allocation made; the rest stays live; "steps ok"
 *   pool_probe info SIZE         cuMemGetInfo's free before an allocation and after freeing
 *                                it ("info before FREE", "info after FREE")
 *   pool_probe fork SIZE         keeps one allocation and frees another (filling the pool);
 *                                a child allocates SIZE ("child alloc: RESULT") and fills it;
 *                                then the parent's kept bytes are checked and it allocates
 *                                again; "fork ok" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/preload/probe_util.h"

static int fail(const char *why)
{
    printf("FAIL: %s\n", why);
    return 4;
}

static int run_loop(int count, size_t size)
{
    probe_init();
    for (int i = 0; i < count; i++) {
        CUdeviceptr p;
        CHECK(cuMemAlloc(&p, size));
        if (probe_round_trip(p, size, (uint32_t)i))
            return fail("a round trip through a reused allocation went wrong");
        CHECK(cuMemFree(p));
    }
    printf("loop ok\n");
    return 0;
}

static int run_alias(size_t size)
{
    probe_init();
    CUdeviceptr first, b, c;
    CHECK(cuMemAlloc(&first, size));
    if (probe_round_trip(first, size, 1))
        return fail("the first allocation");
    CHECK(cuMemFree(first));
    CHECK(cuMemAlloc(&b, size));
    CHECK(cuMemAlloc(&c, size));
    if (b < c + size && c < b + size)
        return fail("two live allocations overlap");
    if (probe_round_trip(b, size, 2) || probe_round_trip(c, size, 3))
        return fail("a round trip through a live allocation");
    if (probe_verify(b, size, 2))
        return fail("writing one live allocation changed the other");
    CHECK(cuMemFree(b));
    CHECK(cuMemFree(c));
    printf("alias ok\n");
    return 0;
}

static int run_steps(int count, char **step)
{
    probe_init();
    CUdeviceptr made[64];
    int n = 0;
    for (int i = 0; i < count && n < 64; i++) {
        if (step[i][0] == '-') {
            int k = atoi(step[i] + 1);
            if (k < 1 || k > n || !made[k - 1])
                return fail("a step frees an allocation not made");
            CHECK(cuMemFree(made[k - 1]));
            made[k - 1] = 0;
            continue;
        }
        size_t size = probe_parse_size(step[i]);
        CHECK(cuMemAlloc(&made[n], size));
        if (probe_round_trip(made[n], size, (uint32_t)n + 11))
            return fail("a round trip");
        n++;
    }
    for (int i = 0; i < n; i++)
        if (made[i] && probe_verify(made[i], 4096, (uint32_t)i + 11))
            return fail("a live allocation changed");
    printf("steps ok\n");
    return 0; /* what is live is the driver's to take back */
}

static int run_info(size_t size)
{
    probe_init();
    size_t free_bytes, total;
    CHECK(cuMemGetInfo(&free_bytes, &total));
    printf("info before %zu\n", free_bytes);
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, size));
    CHECK(cuMemFree(p));
    CHECK(cuMemGetInfo(&free_bytes, &total));
    printf("info after %zu\n", free_bytes);
    return 0;
}

static int run_fork(size_t size)
{
    probe_init();
    CUdeviceptr kept, freed;
    CHECK(cuMemAlloc(&kept, size));
    if (probe_round_trip(kept, size, 7))
        return fail("the parent's allocation");
    CHECK(cuMemAlloc(&freed, size));
    CHECK(cuMemFree(freed)); /* its chunks are the parent's to reuse */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* the driver cannot be initialised again here; its context is still current */
        CUdeviceptr mine;
        CUresult r = cuMemAlloc(&mine, size);
        printf("child alloc: %s\n", probe_error_name(r));
        if (r == CUDA_SUCCESS)
            CHECK(cuMemsetD8(mine, 0x5a, size));
        exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail("the child failed");
    CUdeviceptr again;
    CHECK(cuMemAlloc(&again, size));
    if (probe_verify(kept, size, 7) || probe_round_trip(again, size, 8))
        return fail("the parent's memory changed when a child allocated");
    CHECK(cuMemFree(again));
    CHECK(cuMemFree(kept));
    printf("fork ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "loop") == 0)
        return run_loop(atoi(argv[2]), probe_parse_size(argv[3]));
    if (argc == 3 && strcmp(argv[1], "alias") == 0)
        return run_alias(probe_parse_size(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "steps") == 0)
        return run_steps(argc - 2, argv + 2);
    if (argc == 3 && strcmp(argv[1], "info") == 0)
        return run_info(probe_parse_size(argv[2]));
    if (argc == 3 && strcmp(argv[1], "fork") == 0)
        return run_fork(probe_parse_size(argv[2]));
    fprintf(stderr, "usage: see the comment at the top of tests/preload/pool_probe.c\n");
    return 1;
}
