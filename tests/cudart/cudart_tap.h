/* cudart_tap.h — a tiny TAP writer for the CUDA runtime test programs (built by nvcc).
 *
 * Each check prints "ok - what" or "not ok - what" with a "#" line saying what was seen;
 * tap_plan() prints "1..N" at the end, so a program that dies half way is told apart
 * from one that finished (the script compares the plan with the lines it read).
 *   TAP_CHECK(cond, "what %d", x)    passes when cond holds
 *   TAP_CUDA(call, "what")           passes when the runtime call returns cudaSuccess
 *   TAP_CUDA_IS(call, error, "what") passes when it returns exactly `error`
 * The script numbers the lines; the program only says what it checked.
 *
 * Where the program runs: CUDART_TEST_DEVICE=gpu on a real GPU (tests/gpu/run.sh), unset
 * or "simcuda" on simcuda (test_cudart.sh). A case whose answer differs asks tap_on_gpu():
 * a kernel launch runs on a GPU and is refused on simcuda; the device is named and sized
 * by the driver there, by SIMCUDA_* here. */
#ifndef TESTS_CUDART_TAP_H
#define TESTS_CUDART_TAP_H

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count;
static int tap_failed;
static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;

static inline bool tap_result(bool passed, const char *detail, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline bool tap_result(bool passed, const char *detail, const char *fmt, ...)
{
    char what[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    pthread_mutex_lock(&tap_lock);
    tap_count++;
    if (!passed)
        tap_failed++;
    printf("%sok - %s\n", passed ? "" : "not ", what);
    if (!passed && detail && *detail)
        printf("#   %s\n", detail);
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
    return passed;
}

static inline bool tap_cuda_is(cudaError_t got, cudaError_t expected, const char *call, const char *what)
{
    char detail[384];
    snprintf(detail, sizeof detail, "%s returned %s (%s), expected %s", call, cudaGetErrorName(got),
             cudaGetErrorString(got), cudaGetErrorName(expected));
    return tap_result(got == expected, detail, "%s", what);
}

#define TAP_CHECK(cond, ...) tap_result((cond), "failed: " #cond, __VA_ARGS__)
#define TAP_CUDA(call, what) tap_cuda_is((call), cudaSuccess, #call, (what))
#define TAP_CUDA_IS(call, error, what) tap_cuda_is((call), (error), #call, (what))

/* true under CUDART_TEST_DEVICE=gpu; any value other than gpu or simcuda stops the program
 * (exit status 2) with a line naming it, so a mistyped setting never runs the wrong
 * expectations. */
static inline bool tap_on_gpu(void)
{
    const char *value = getenv("CUDART_TEST_DEVICE");
    if (!value || !*value || strcmp(value, "simcuda") == 0)
        return false;
    if (strcmp(value, "gpu") == 0)
        return true;
    fprintf(stderr, "CUDART_TEST_DEVICE='%s' is not gpu or simcuda\n", value);
    exit(2);
}

/* Prints the plan; the exit status says whether every check passed. */
static inline int tap_plan(void)
{
    printf("1..%d\n", tap_count);
    fflush(stdout);
    return tap_failed ? 1 : 0;
}

#endif /* TESTS_CUDART_TAP_H */
