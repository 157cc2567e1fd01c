/* cudart_tap.h — a tiny TAP writer for the CUDA runtime test programs (built by nvcc).
 *
 * Each check prints "ok - what" or "not ok - what" with a "#" line saying what was seen;
 * tap_plan() prints "1..N" at the end, so a program that dies half way is told apart
 * from one that finished (the script compares the plan with the lines it read).
 *   TAP_CHECK(cond, "what %d", x)    passes when cond holds
 *   TAP_CUDA(call, "what")           passes when the runtime call returns cudaSuccess
 *   TAP_CUDA_IS(call, error, "what") passes when it returns exactly `error`
 *   TAP_SKIP("reason", "what")       a check that cannot run here, with the reason
 * The script numbers the lines; the program only says what it checked.
 *
 * Where the program runs: CUDART_TEST_DEVICE=gpu on a real GPU (tests/gpu/run.sh), unset
 * or "simcuda" on simcuda (test_cudart.sh). A case whose answer differs asks tap_on_gpu():
 * a kernel launch runs on a GPU and is refused on simcuda; the device is named and sized
 * by the driver there, by SIMCUDA_* here. */
#ifndef TESTS_CUDART_TAP_H
#define TESTS_CUDART_TAP_H

#include <cuda_runtime.h>
#include <dlfcn.h>
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

/* "ok - what # SKIP reason": counted in the plan, never silent. */
static inline void tap_skip(const char *reason, const char *what)
{
    pthread_mutex_lock(&tap_lock);
    tap_count++;
    printf("ok - %s # SKIP %s\n", what, reason);
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
}
#define TAP_SKIP(reason, what) tap_skip((reason), (what))

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

/* true when libtiermem.so sits in front of the driver: it exports tiermem_migrate, which a
 * program finds with dlsym so that it runs without it too (preload/tiermem.h). */
static inline bool tap_tiered(void) { return dlsym(RTLD_DEFAULT, "tiermem_migrate") != NULL; }

/* A byte count from the command line: digits with an optional K, M or G (binary units).
 * Anything else stops the program (exit status 2) naming the argument. */
static inline size_t tap_size_arg(const char *text)
{
    char *end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    int shift = 0;
    if (end && *end == 'K')
        shift = 10;
    else if (end && *end == 'M')
        shift = 20;
    else if (end && *end == 'G')
        shift = 30;
    if (end == text || (shift && end[1] != '\0') || (!shift && *end != '\0')) {
        fprintf(stderr, "'%s' is not a size in bytes (digits with an optional K, M or G)\n", text);
        exit(2);
    }
    return (size_t)value << shift;
}

/* A byte pattern no two neighbouring offsets share, so a shifted or misplaced copy shows;
 * `seed` tells one buffer from another. */
static inline unsigned char tap_pattern_byte(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u + seed) ^ (i >> 9));
}

static inline void tap_pattern_fill(unsigned char *bytes, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        bytes[i] = tap_pattern_byte(i, seed);
}

static inline bool tap_pattern_holds(const unsigned char *bytes, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (bytes[i] != tap_pattern_byte(i, seed))
            return false;
    return true;
}

/* Prints the plan; the exit status says whether every check passed. */
static inline int tap_plan(void)
{
    printf("1..%d\n", tap_count);
    fflush(stdout);
    return tap_failed ? 1 : 0;
}

#endif /* TESTS_CUDART_TAP_H */
