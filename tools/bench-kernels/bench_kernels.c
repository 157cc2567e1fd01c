/* bench_kernels.c — speed of the C twins (the engine's kernels on simcuda), as ratios
 * measured side by side in one run:
 *   1. decode attention at context 2048 with f32, f16, fp8_e4m3 and fp8_e5m2 KV pages
 *      (a llama-7B-like layer: 32 query heads, 8 KV heads of 128, blocks of 16), at
 *      batch 1 and batch 8; the fp8 / f16 time ratio is the headline.
 *   2. matvec GB/s of weights per weight type, at 1 token (decode) and 16 tokens (a
 *      decode batch), against the machine's read bandwidth measured the same way (a
 *      float sum over as many bytes).
 * Each figure is the median of interleaved repetitions (the variants take turns, so
 * drifting clocks or a neighbour's load hit them alike). Everything runs on one thread
 * (the per-core figures, steady on a busy machine) and then on OpenMP's default count.
 *
 *   bench-kernels [--quick]      (--quick: fewer repetitions)
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kv_layout.h"
#include "tests/kernels/reference.h"
#include "tests/kernels/twin_launch.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "bench-kernels: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static int32_t bench_threads; /* what tm_set_threads was given; 0: OpenMP's default */
static int threads_now(void) { return bench_threads > 0 ? bench_threads : omp_get_max_threads(); }

/* ---------------------------------------------------------------------------------- */
/* Decode attention: fp8 against f16 KV                                                */
/* ---------------------------------------------------------------------------------- */

#define N_KV 4
static const char *const KV_NAMES[N_KV] = {"f32", "f16", "fp8_e4m3", "fp8_e5m2"};
static simcuda_kernel_fn *const KV_APPEND[N_KV] = {tm_kv_append_f32, tm_kv_append_f16,
                                                   tm_kv_append_fp8_e4m3, tm_kv_append_fp8_e5m2};
static simcuda_kernel_fn *const KV_DECODE[N_KV] = {tm_attn_decode_f32, tm_attn_decode_f16,
                                                   tm_attn_decode_fp8_e4m3, tm_attn_decode_fp8_e5m2};

static void bench_attention(int32_t n_seqs, int reps) {
    const int32_t n_heads = 32, n_kv_heads = 8, hd = 128, bs = 16, ctx = 2048;
    const int32_t max_blocks = ctx / bs, width = n_heads * hd, kv_width = n_kv_heads * hd;
    const int64_t n_blocks = (int64_t)n_seqs * max_blocks;
    uint64_t rng = 1;
    int32_t *tables = xmalloc(sizeof(int32_t) * n_blocks), *lens = xmalloc(sizeof(int32_t) * n_seqs);
    for (int64_t i = 0; i < n_blocks; i++) tables[i] = (int32_t)i;
    for (int64_t i = n_blocks - 1; i > 0; i--) { /* scattered pages, as after many sequences */
        int64_t j = (int64_t)(rng_next(&rng) % (uint64_t)(i + 1));
        int32_t t = tables[i];
        tables[i] = tables[j], tables[j] = t;
    }
    for (int32_t s = 0; s < n_seqs; s++) lens[s] = ctx;
    float *q = xmalloc(sizeof(float) * n_seqs * width), *out = xmalloc(sizeof(float) * n_seqs * width);
    fill_normal(q, (int64_t)n_seqs * width, 1.0f, &rng);
    void *k_pool[N_KV], *v_pool[N_KV];
    int64_t pool_bytes[N_KV];
    {
        int64_t n_tok = (int64_t)n_seqs * ctx;
        float *k = xmalloc(sizeof(float) * n_tok * kv_width), *v = xmalloc(sizeof(float) * n_tok * kv_width);
        int32_t *slots = xmalloc(sizeof(int32_t) * n_tok);
        fill_normal(k, n_tok * kv_width, 1.0f, &rng);
        fill_normal(v, n_tok * kv_width, 1.0f, &rng);
        for (int32_t s = 0; s < n_seqs; s++)
            for (int32_t p = 0; p < ctx; p++)
                slots[(int64_t)s * ctx + p] = tm_kv_slot(tables + (int64_t)s * max_blocks, p, bs);
        for (int d = 0; d < N_KV; d++) {
            struct tm_kv_layout l = {1, n_kv_heads, hd, bs, n_blocks, d};
            pool_bytes[d] = tm_kv_pool_bytes(&l);
            k_pool[d] = xmalloc((size_t)pool_bytes[d]);
            v_pool[d] = xmalloc((size_t)pool_bytes[d]);
            float scale = d == TM_KV_FP8_E4M3 ? 4.0f / 448 : 1.0f;
            struct tm_args_kv_append a = {k_pool[d], v_pool[d], k, v, slots, (int32_t)n_tok,
                                          n_kv_heads, hd, bs, kv_width, kv_width, scale, scale};
            TWIN_LAUNCH(KV_APPEND[d], kv_append, kv_append, a);
        }
        free(k), free(v), free(slots);
    }
    double *t[N_KV];
    for (int d = 0; d < N_KV; d++) t[d] = xmalloc(sizeof(double) * reps);
    for (int r = -1; r < reps; r++) /* r = -1 warms up */
        for (int d = 0; d < N_KV; d++) {
            float scale = d == TM_KV_FP8_E4M3 ? 4.0f / 448 : 1.0f;
            struct tm_args_attn_decode a = {out, q, k_pool[d], v_pool[d], tables, lens, n_seqs,
                                            max_blocks, n_heads, n_kv_heads, hd, bs, width,
                                            0.088388f, scale, scale};
            double t0 = now();
            TWIN_LAUNCH(KV_DECODE[d], attn_decode, attn_decode, a);
            if (r >= 0) t[d][r] = now() - t0;
        }
    printf("decode attention, context %d, batch %d: %d heads / %d KV heads x %d, blocks of %d, "
           "%d threads, median of %d\n", ctx, n_seqs, n_heads, n_kv_heads, hd, bs,
           threads_now(), reps);
    double med[N_KV];
    for (int d = 0; d < N_KV; d++) {
        med[d] = median(t[d], reps);
        double bytes = 2.0 * pool_bytes[d]; /* K and V, every page read once */
        printf("  kv %-9s %8.3f ms  (K+V %6.1f MB read, %6.2f GB/s)\n", KV_NAMES[d],
               med[d] * 1e3, bytes / 1e6, bytes / med[d] / 1e9);
    }
    printf("  ratio fp8_e4m3 / f16 time: %.3f   fp8_e5m2 / f16: %.3f   f16 / f32: %.3f\n",
           med[TM_KV_FP8_E4M3] / med[TM_KV_F16], med[TM_KV_FP8_E5M2] / med[TM_KV_F16],
           med[TM_KV_F16] / med[TM_KV_F32]);
    for (int d = 0; d < N_KV; d++) free(k_pool[d]), free(v_pool[d]), free(t[d]);
    free(tables), free(lens), free(q), free(out);
}

/* ---------------------------------------------------------------------------------- */
/* matvec bandwidth per weight type                                                    */
/* ---------------------------------------------------------------------------------- */

/* The machine's read bandwidth for the same threads: a float sum over `bytes`. */
static float read_sink;
static double time_read(const float *a, int64_t n) {
    double t0 = now();
    float s = 0.0f;
#pragma omp parallel for simd reduction(+ : s) schedule(static) num_threads(threads_now())
    for (int64_t i = 0; i < n; i++) s += a[i];
    read_sink += s;
    return now() - t0;
}

static void bench_matvec(int32_t n_tokens, int reps) {
    static const struct {
        int32_t wtype;
        const char *name;
        simcuda_kernel_fn *fn;
    } W[] = {{TM_WTYPE_F32, "f32", tm_matvec_f32},
             {TM_WTYPE_F16, "f16", tm_matvec_f16},
             {TM_WTYPE_BF16, "bf16", tm_matvec_bf16},
             {TM_WTYPE_Q8_0, "q8_0", tm_matvec_q8_0}};
    enum { NW = 4 };
    const int32_t n_in = 4096, n_out = 8192; /* 128 MiB of f32, well past any cache */
    uint64_t rng = 2;
    float *x = xmalloc(sizeof(float) * n_in * n_tokens);
    float *out = xmalloc(sizeof(float) * n_out * n_tokens);
    fill_normal(x, (int64_t)n_in * n_tokens, 1.0f, &rng);
    void *w[NW];
    int64_t bytes[NW];
    for (int i = 0; i < NW; i++) {
        bytes[i] = tm_wtype_row_bytes(W[i].wtype, n_in) * n_out;
        w[i] = xmalloc((size_t)bytes[i]);
        /* Random-looking but cheap to make: weights' values do not change the speed. */
        for (int64_t b = 0; b < bytes[i]; b++) ((uint8_t *)w[i])[b] = (uint8_t)(rng_next(&rng) & 0x3b);
    }
    int64_t read_n = bytes[0] / 4;
    float *big = xmalloc((size_t)bytes[0]);
    for (int64_t i = 0; i < read_n; i++) big[i] = (float)(i & 7);
    double *t[NW + 1];
    for (int i = 0; i <= NW; i++) t[i] = xmalloc(sizeof(double) * reps);
    for (int r = -1; r < reps; r++) {
        double tr = time_read(big, read_n);
        if (r >= 0) t[NW][r] = tr;
        for (int i = 0; i < NW; i++) {
            struct tm_args_matmul a = {out, x, w[i], n_tokens, n_in, n_out, n_out};
            double t0 = now();
            TWIN_LAUNCH(W[i].fn, matmul, matvec, a);
            if (r >= 0) t[i][r] = now() - t0;
        }
    }
    double read_bw = (double)bytes[0] / median(t[NW], reps);
    printf("matvec, %d token%s, [%d x %d], %d threads, median of %d\n", n_tokens,
           n_tokens > 1 ? "s" : "", n_out, n_in, threads_now(), reps);
    printf("  read bandwidth (float sum over %.0f MB): %.2f GB/s\n", bytes[0] / 1e6, read_bw / 1e9);
    for (int i = 0; i < NW; i++) {
        double m = median(t[i], reps), bw = (double)bytes[i] / m;
        printf("  %-5s %8.2f ms  %6.2f GB/s of weights  (%.2f of read bandwidth)  %6.2f G multiply-adds/s\n",
               W[i].name, m * 1e3, bw / 1e9, bw / read_bw, (double)n_in * n_out * n_tokens / m / 1e9);
    }
    for (int i = 0; i < NW; i++) free(w[i]);
    for (int i = 0; i <= NW; i++) free(t[i]);
    free(big), free(x), free(out);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--version")) {
        printf("bench-kernels %s\n", TM_VERSION);
        return 0;
    }
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    printf("bench-kernels: the C twins of libtiermem-kernels.so\n");
    int32_t counts[2] = {1, 0};
    for (int c = 0; c < 2; c++) {
        if (c == 1 && omp_get_max_threads() == 1) break;
        bench_threads = counts[c];
        twin_set_threads(bench_threads);
        printf("\n== %d thread%s ==\n", threads_now(), threads_now() > 1 ? "s" : "");
        bench_attention(1, quick ? 5 : 15);
        bench_attention(8, quick ? 3 : 7);
        bench_matvec(1, quick ? 3 : 9);
        bench_matvec(16, quick ? 3 : 5);
    }
    return read_sink == 12345.0f; /* keeps the read loop */
}
