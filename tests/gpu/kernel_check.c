/* kernel_check.c — every CUDA kernel against its C twin, on random inputs.
 *
 *   kernel_check TWIN_LIBRARY [--module PATH] [--small]
 *
 * The device side goes through the CUDA driver API exactly as the engine does: the
 * driver is libcuda.so.1 (dlopen), the kernels come from the fatbin embedded in this
 * program (cuModuleLoadData), or from PATH with --module. The twin side calls the
 * exported functions of TWIN_LIBRARY (dlopen) on host copies of the same inputs, with
 * the same kernelParams. Each case prints one TAP line with the largest difference
 * found, as a fraction of its tolerance.
 *
 * On simcuda (LD_LIBRARY_PATH=build/lib/simcuda, --module TWIN_LIBRARY) the device side
 * runs the twins too, so every difference must be zero: a check of this program and of
 * the launch path, runnable without a GPU. --small uses smaller shapes (for make test).
 *
 * Tolerances between the GPU and the twin (u = 2^-24) are twice the bound each side has
 * against exact arithmetic, as derived in tests/kernels (both sum in their own order):
 *   exact: embed, add, absmax, argmax, kv_append (bytes), the fp8/f16 codecs they use
 *   matvec, matmul: 2 gamma_{n_in+2} sum_i |w_i x_i|
 *   rmsnorm: 2 (dim + 8) u |y|;  softmax: 2 (n + 8) u |y|;  silu_mul: 16 u |y|
 *   rope: 16 u (|x0| + |x1|) (angles in double on both sides)
 *   attention: 4 (2 gamma_{head_dim+2} S + gamma_{n_pos + 8 tiles + 8}) V, with S the
 *     largest sum_d |q_d k_d| * attn_scale and V the largest |v| over the positions
 * Prefill and decode on the GPU must also agree bit for bit (the same device function).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "kernels/fatbin.h"
#include "kernels/kv_elem.h"
#include "kernels/kv_layout.h"
#include "tests/kernels/reference.h"
#include "tools/simcuda/simcuda.h"

/* ---------------------------------------------------------------------------------- */
/* The driver, through exact prototypes                                                */
/* ---------------------------------------------------------------------------------- */

/* X(name, symbol, ABI version of the PFN typedef in cudaTypedefs.h) */
#define DRIVER_FUNCS(X)                                                                 \
    X(cuInit, "cuInit", 2000)                                                           \
    X(cuDeviceGet, "cuDeviceGet", 2000)                                                 \
    X(cuDeviceGetName, "cuDeviceGetName", 2000)                                         \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000)                       \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", 4000)                                         \
    X(cuCtxSynchronize, "cuCtxSynchronize", 2000)                                       \
    X(cuModuleLoad, "cuModuleLoad", 2000)                                               \
    X(cuModuleLoadData, "cuModuleLoadData", 2000)                                       \
    X(cuModuleGetFunction, "cuModuleGetFunction", 2000)                                 \
    X(cuMemAlloc, "cuMemAlloc_v2", 3020)                                                \
    X(cuMemFree, "cuMemFree_v2", 3020)                                                  \
    X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 3020)                                            \
    X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 3020)                                            \
    X(cuLaunchKernel, "cuLaunchKernel", 4000)                                           \
    X(cuGetErrorName, "cuGetErrorName", 6000)

/* Members are named f_<name>: cuda.h #defines some names (cuMemAlloc -> cuMemAlloc_v2). */
static struct {
#define FIELD(name, symbol, ver) PFN_##name##_v##ver f_##name;
    DRIVER_FUNCS(FIELD)
#undef FIELD
} drv;

static CUfunction device_fn[TM_KERNEL_COUNT];
static simcuda_kernel_fn *twin_fn[TM_KERNEL_COUNT];

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("Bail out! ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    exit(1);
}

static void check_cu(CUresult rc, const char *what) {
    if (rc == CUDA_SUCCESS) return;
    const char *name = "unknown error";
    if (drv.f_cuGetErrorName) drv.f_cuGetErrorName(rc, &name);
    die("%s failed: %s (%d)", what, name, (int)rc);
}

static void open_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) die("cannot load the CUDA driver libcuda.so.1: %s", dlerror());
#define RESOLVE(name, symbol, ver)                                                      \
    {                                                                                   \
        void *sym = dlsym(lib, symbol);                                                 \
        if (!sym) die("driver lacks %s", symbol);                                       \
        memcpy(&drv.f_##name, &sym, sizeof sym);                                        \
    }
    DRIVER_FUNCS(RESOLVE)
#undef RESOLVE
    CUdevice dev;
    CUcontext ctx;
    char name[256];
    check_cu(drv.f_cuInit(0), "cuInit");
    check_cu(drv.f_cuDeviceGet(&dev, 0), "cuDeviceGet");
    check_cu(drv.f_cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
    check_cu(drv.f_cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check_cu(drv.f_cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    printf("# device 0: %s\n", name);
}

static void load_kernels(const char *module_path, const char *twin_path) {
    CUmodule module;
    if (module_path) {
        check_cu(drv.f_cuModuleLoad(&module, module_path), "cuModuleLoad");
        printf("# device kernels: %s\n", module_path);
    } else {
        if (tm_kernels_fatbin_size == 0)
            die("this build has no fatbin (no nvcc): give --module PATH");
        check_cu(drv.f_cuModuleLoadData(&module, tm_kernels_fatbin), "cuModuleLoadData (embedded fatbin)");
        printf("# device kernels: embedded fatbin, %zu bytes\n", tm_kernels_fatbin_size);
    }
    void *twins = dlopen(twin_path, RTLD_NOW);
    if (!twins) die("cannot load the twin library %s: %s", twin_path, dlerror());
    printf("# twins: %s\n", twin_path);
    for (int k = 0; k < TM_KERNEL_COUNT; k++) {
        char what[128];
        snprintf(what, sizeof what, "cuModuleGetFunction(%s)", tm_kernel_names[k]);
        check_cu(drv.f_cuModuleGetFunction(&device_fn[k], module, tm_kernel_names[k]), what);
        void *sym = dlsym(twins, tm_kernel_names[k]);
        if (!sym) die("twin library lacks %s", tm_kernel_names[k]);
        memcpy(&twin_fn[k], &sym, sizeof sym);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Buffers: a host copy (the twin's), a device copy, and the device result             */
/* ---------------------------------------------------------------------------------- */

#define MAX_BUFS 128

struct buf {
    void *host;     /* inputs; after a run, the twin's results */
    void *gpu;      /* after a run, the device's results */
    CUdeviceptr dev;
    size_t bytes;
};

static struct buf bufs[MAX_BUFS];
static int n_bufs;

static void *buf_new(size_t bytes) {
    if (n_bufs == MAX_BUFS) die("too many buffers in one case");
    struct buf *b = &bufs[n_bufs++];
    b->bytes = bytes ? bytes : 1;
    b->host = calloc(1, b->bytes);
    b->gpu = calloc(1, b->bytes);
    if (!b->host || !b->gpu) die("out of host memory");
    check_cu(drv.f_cuMemAlloc(&b->dev, b->bytes), "cuMemAlloc");
    return b->host;
}

static struct buf *buf_of(const void *host) {
    for (int i = 0; i < n_bufs; i++)
        if ((const char *)host >= (const char *)bufs[i].host &&
            (const char *)host < (const char *)bufs[i].host + bufs[i].bytes)
            return &bufs[i];
    die("pointer %p is in no buffer", host);
    return NULL;
}

/* The device's result for host array p (same offset in the device copy). */
static void *gpu_of(const void *p) {
    struct buf *b = buf_of(p);
    return (char *)b->gpu + ((const char *)p - (const char *)b->host);
}

static void bufs_free(void) {
    for (int i = 0; i < n_bufs; i++) {
        drv.f_cuMemFree(bufs[i].dev);
        free(bufs[i].host);
        free(bufs[i].gpu);
    }
    n_bufs = 0;
}

/* ---------------------------------------------------------------------------------- */
/* Running one kernel on both sides                                                    */
/* ---------------------------------------------------------------------------------- */

typedef void pack_fn(void *args, void **params);

/* Uploads every buffer, launches kernel k on the device with args whose pointers are
 * mapped to device addresses, runs the twin on the host copies, downloads the device
 * results. sizes[i] is the size of argument i (8-byte arguments are pointers or
 * int64_t counts; only values inside a buffer are mapped). */
static void run_both(int k, void *args, size_t args_bytes, int n_params, const size_t *sizes,
                     pack_fn *pack, struct tm_geom g) {
    for (int i = 0; i < n_bufs; i++)
        check_cu(drv.f_cuMemcpyHtoD(bufs[i].dev, bufs[i].host, bufs[i].bytes), "cuMemcpyHtoD");
    unsigned char dev_args[512];
    void *params[32];
    if (args_bytes > sizeof dev_args || n_params > 32) die("argument list too large");
    memcpy(dev_args, args, args_bytes);
    pack(dev_args, params);
    for (int i = 0; i < n_params; i++) {
        if (sizes[i] != 8) continue;
        uintptr_t v;
        memcpy(&v, params[i], 8);
        for (int b = 0; b < n_bufs; b++) {
            uintptr_t base = (uintptr_t)bufs[b].host;
            if (v >= base && v < base + bufs[b].bytes) {
                CUdeviceptr d = bufs[b].dev + (v - base);
                memcpy(params[i], &d, 8);
                break;
            }
        }
    }
    check_cu(drv.f_cuLaunchKernel(device_fn[k], g.grid[0], g.grid[1], g.grid[2], g.block[0],
                                g.block[1], g.block[2], g.shared_bytes, NULL, params, NULL),
             tm_kernel_names[k]);
    check_cu(drv.f_cuCtxSynchronize(), tm_kernel_names[k]);

    void *host_params[32];
    pack(args, host_params);
    simcuda_launch l = {.grid = {g.grid[0], g.grid[1], g.grid[2]},
                        .block = {g.block[0], g.block[1], g.block[2]},
                        .shared_mem_bytes = g.shared_bytes, .params = host_params};
    twin_fn[k](&l);
    for (int i = 0; i < n_bufs; i++)
        check_cu(drv.f_cuMemcpyDtoH(bufs[i].gpu, bufs[i].dev, bufs[i].bytes), "cuMemcpyDtoH");
}

#define TM_P_SIZE(type, name) sizeof(type),
#define SIZES(family) static const size_t sizes_##family[] = {TM_PARAMS_##family(TM_P_SIZE)};
SIZES(embed) SIZES(rmsnorm) SIZES(matmul) SIZES(rope) SIZES(silu_mul) SIZES(add)
SIZES(kv_append) SIZES(attn_decode) SIZES(attn_prefill) SIZES(softmax) SIZES(argmax)
SIZES(absmax) SIZES(set_threads) SIZES(moe_route) SIZES(moe_matvec) SIZES(moe_combine)

#define RUN_ID(id, family, geom, args)                                                  \
    run_both((id), &(args), sizeof(args), TM_NPARAMS_##family, sizes_##family,          \
             (pack_fn *)tm_params_##family, tm_geom_##geom(&(args)))
#define RUN(name, family, geom, args) RUN_ID(TM_K_##name, family, geom, args)

/* ---------------------------------------------------------------------------------- */
/* Comparisons and TAP                                                                 */
/* ---------------------------------------------------------------------------------- */

static int tap_n, tap_failed;

static void report(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!ok) tap_failed++;
    fflush(stdout);
}

/* Host (twin) and device results of array p must be equal byte for byte. */
static void expect_exact(const char *what, const void *p, size_t bytes) {
    const unsigned char *t = p, *g = gpu_of(p);
    size_t i = 0;
    while (i < bytes && t[i] == g[i]) i++;
    if (i == bytes) report(1, "%s: identical (%zu bytes)", what, bytes);
    else report(0, "%s: first difference at byte %zu: twin 0x%02x, gpu 0x%02x", what, i, t[i], g[i]);
}

/* |gpu - twin| <= tol[i] for every float of p (NaN must match NaN). */
static void expect_close(const char *what, const float *p, const double *tol, int64_t n) {
    const float *g = gpu_of(p);
    double worst = 0;
    int64_t worst_i = -1, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)g[i] - p[i]);
        double ratio = isnan(p[i]) || isnan(g[i]) ? (isnan(p[i]) && isnan(g[i]) ? 0 : INFINITY)
                                                  : tol[i] > 0 ? d / tol[i] : (d > 0 ? INFINITY : 0);
        if (ratio > 1) bad++;
        if (ratio > worst || worst_i < 0) worst = ratio, worst_i = i;
    }
    if (n == 0) {
        report(1, "%s: nothing to compare", what);
        return;
    }
    report(bad == 0, "%s: largest |gpu - twin| is %.3g of its tolerance (at [%lld]: twin %.9g, gpu %.9g)%s",
           what, worst, (long long)worst_i, p[worst_i], g[worst_i],
           bad ? " -- beyond tolerance" : "");
}

static double *tol_new(int64_t n) {
    double *t = calloc((size_t)(n ? n : 1), sizeof(double));
    if (!t) die("out of host memory");
    return t;
}

#define U 0x1p-24

/* ---------------------------------------------------------------------------------- */
/* Cases                                                                               */
/* ---------------------------------------------------------------------------------- */

static const struct {
    int32_t wtype;
    const char *name;
} WTYPES[] = {{TM_WTYPE_F32, "f32"},   {TM_WTYPE_F16, "f16"},   {TM_WTYPE_BF16, "bf16"},
              {TM_WTYPE_Q8_0, "q8_0"}, {TM_WTYPE_Q4_0, "q4_0"}, {TM_WTYPE_Q4_1, "q4_1"},
              {TM_WTYPE_Q5_0, "q5_0"}, {TM_WTYPE_Q5_1, "q5_1"}, {TM_WTYPE_Q2_K, "q2_k"},
              {TM_WTYPE_Q3_K, "q3_k"}, {TM_WTYPE_Q4_K, "q4_k"}, {TM_WTYPE_Q5_K, "q5_k"},
              {TM_WTYPE_Q6_K, "q6_k"}};
#define N_WTYPES (int)(sizeof WTYPES / sizeof WTYPES[0])
static const char *const KV_NAMES[] = {"f32", "f16", "fp8_e4m3", "fp8_e5m2"};

static void case_embed(uint64_t *rng) {
    const int32_t vocab = 1000, dim = 512, n = 37;
    for (int w = 0; w < N_WTYPES; w++) {
        int32_t wt = WTYPES[w].wtype;
        void *table = buf_new((size_t)tm_wtype_row_bytes(wt, dim) * vocab);
        float *dense = malloc(sizeof(float) * vocab * dim);
        make_weights(wt, table, dense, vocab, dim, rng);
        int32_t *ids = buf_new(sizeof(int32_t) * n);
        for (int i = 0; i < n; i++) ids[i] = (int32_t)(rng_next(rng) % (vocab + 2)) - 1;
        float *out = buf_new(sizeof(float) * n * dim);
        struct tm_args_embed a = {out, table, ids, n, dim, vocab};
        RUN_ID(tm_kernel_for_wtype(TM_K_tm_embed_f32, wt), embed, embed, a);
        char what[64];
        snprintf(what, sizeof what, "embed_%s", WTYPES[w].name);
        expect_exact(what, out, sizeof(float) * n * dim);
        free(dense);
        bufs_free();
    }
}

static void case_rmsnorm(uint64_t *rng) {
    const int32_t rows = 33, dim = 4096;
    float *x = buf_new(sizeof(float) * rows * dim), *w = buf_new(sizeof(float) * dim);
    float *out = buf_new(sizeof(float) * rows * dim);
    fill_normal(x, (int64_t)rows * dim, 2.0f, rng);
    fill_normal(w, dim, 1.0f, rng);
    struct tm_args_rmsnorm a = {out, x, w, rows, dim, 1e-5f};
    RUN(tm_rmsnorm, rmsnorm, rmsnorm, a);
    double *tol = tol_new((int64_t)rows * dim);
    for (int64_t i = 0; i < (int64_t)rows * dim; i++) tol[i] = 2 * (dim + 8) * U * fabsf(out[i]);
    expect_close("rmsnorm 33 x 4096", out, tol, (int64_t)rows * dim);
    free(tol);
    bufs_free();
}

static void case_matmul(uint64_t *rng, int32_t n_tokens, int32_t n_in, int32_t n_out,
                        int32_t out_stride, int matvec) {
    for (int w = 0; w < N_WTYPES; w++) {
        int32_t wt = WTYPES[w].wtype;
        void *wts = buf_new((size_t)tm_wtype_row_bytes(wt, n_in) * n_out);
        float *dense = malloc(sizeof(float) * (size_t)n_in * n_out);
        make_weights(wt, wts, dense, n_out, n_in, rng);
        float *x = buf_new(sizeof(float) * (size_t)n_tokens * n_in);
        fill_normal(x, (int64_t)n_tokens * n_in, 1.0f, rng);
        float *out = buf_new(sizeof(float) * (size_t)n_tokens * out_stride);
        struct tm_args_matmul a = {out, x, wts, n_tokens, n_in, n_out, out_stride};
        if (matvec) RUN_ID(tm_kernel_for_wtype(TM_K_tm_matvec_f32, wt), matmul, matvec, a);
        else RUN_ID(tm_kernel_for_wtype(TM_K_tm_matmul_f32, wt), matmul, matmul, a);
        double *tol = tol_new((int64_t)n_tokens * out_stride);
        for (int32_t t = 0; t < n_tokens; t++)
            for (int32_t o = 0; o < n_out; o++) {
                double mag = 0;
                for (int32_t i = 0; i < n_in; i++)
                    mag += fabs((double)dense[(int64_t)o * n_in + i] * x[(int64_t)t * n_in + i]);
                tol[(int64_t)t * out_stride + o] = 2 * gamma_n(n_in + 2) * mag;
            }
        char what[96];
        snprintf(what, sizeof what, "%s_%s %d x [%d x %d]", matvec ? "matvec" : "matmul",
                 WTYPES[w].name, n_tokens, n_out, n_in);
        expect_close(what, out, tol, (int64_t)n_tokens * out_stride);
        free(tol);
        free(dense);
        bufs_free();
    }
}

static void case_rope(uint64_t *rng) {
    const int32_t n = 50, heads = 32, hd = 128, stride = 32 * 128 + 64;
    float *x = buf_new(sizeof(float) * n * stride);
    int32_t *pos = buf_new(sizeof(int32_t) * n);
    fill_normal(x, (int64_t)n * stride, 1.0f, rng);
    for (int i = 0; i < n; i++) pos[i] = (int32_t)(rng_next(rng) % 8192);
    float *x0 = malloc(sizeof(float) * n * stride);
    memcpy(x0, x, sizeof(float) * n * stride);
    struct tm_args_rope a = {x, pos, n, heads, hd, hd, stride, 10000.0f, NULL, 0};
    RUN(tm_rope, rope, rope, a);
    double *tol = tol_new((int64_t)n * stride);
    for (int64_t i = 0; i < (int64_t)n * stride; i++) {
        int64_t pair = i - (i & 1);
        tol[i] = 16 * U * (fabsf(x0[pair]) + fabsf(x0[pair + 1]));
    }
    expect_close("rope 50 tokens x 32 heads x 128, positions < 8192", x, tol, (int64_t)n * stride);
    /* NEOX pairs and frequency factors (Qwen; Llama 3.1's rope_freqs): same bounds. */
    float *factors = buf_new(sizeof(float) * hd / 2);
    for (int i = 0; i < hd / 2; i++) factors[i] = 1.0f + (float)(rng_next(rng) % 32);
    memcpy(x, x0, sizeof(float) * n * stride);
    struct tm_args_rope b = {x, pos, n, heads, hd, hd, stride, 500000.0f, factors, 1};
    RUN(tm_rope, rope, rope, b);
    for (int64_t i = 0; i < (int64_t)n * stride; i++) {
        int64_t c = i % stride, d = c % hd, head0 = i - d, pair = d % (hd / 2);
        tol[i] = c >= heads * hd ? 0 /* past the heads: untouched */
                 : 16 * U * (fabsf(x0[head0 + pair]) + fabsf(x0[head0 + pair + hd / 2])) + 1e-37;
    }
    expect_close("rope, NEOX pairs with frequency factors", x, tol, (int64_t)n * stride);
    free(tol);
    free(x0);
    bufs_free();
}

static void case_elementwise(uint64_t *rng) {
    const int64_t n = 1000003;
    float *g = buf_new(sizeof(float) * n), *up = buf_new(sizeof(float) * n);
    float *out = buf_new(sizeof(float) * n);
    fill_normal(g, n, 4.0f, rng);
    fill_normal(up, n, 1.0f, rng);
    struct tm_args_silu_mul s = {out, g, up, n};
    RUN(tm_silu_mul, silu_mul, elementwise, s);
    double *tol = tol_new(n);
    for (int64_t i = 0; i < n; i++) tol[i] = 16 * U * fabsf(out[i]) + 1e-37;
    expect_close("silu_mul 1000003", out, tol, n);
    free(tol);
    struct tm_args_add a = {out, g, up, n};
    RUN(tm_add, add, elementwise, a);
    expect_exact("add 1000003", out, sizeof(float) * n);
    float *m = buf_new(sizeof(float));
    m[0] = 0.0f;
    g[12345] = -77.0f;
    struct tm_args_absmax x = {m, g, n};
    RUN(tm_absmax, absmax, absmax, x);
    expect_exact("absmax 1000003", m, sizeof(float));
    struct tm_args_set_threads t = {1};
    RUN(tm_set_threads, set_threads, single, t);
    report(1, "set_threads launches");
    t.n_threads = 0;
    RUN(tm_set_threads, set_threads, single, t);
    bufs_free();
}

static void case_rows(uint64_t *rng) {
    const int32_t rows = 9, cols = 32000;
    float *x = buf_new(sizeof(float) * rows * cols);
    fill_normal(x, (int64_t)rows * cols, 3.0f, rng);
    x[1 * cols + 5] = x[1 * cols + 900] = 50.0f; /* a tie: the lowest index */
    x[5 * cols + 36] = x[5 * cols + 33] = 50.0f; /* a tie inside one warp's shuffles */
    x[2 * cols + 0] = NAN;                       /* NaN is never chosen */
    for (int i = 0; i < cols; i++) x[3 * cols + i] = NAN;
    int32_t *idx = buf_new(sizeof(int32_t) * rows);
    struct tm_args_argmax am = {idx, x, rows, cols};
    RUN(tm_argmax, argmax, row, am);
    expect_exact("argmax 9 x 32000 (ties, NaN)", idx, sizeof(int32_t) * rows);
    for (int i = 0; i < cols; i++) x[2 * cols + i] = x[3 * cols + i] = 1.0f;
    struct tm_args_softmax sm = {x, rows, cols};
    RUN(tm_softmax, softmax, row, sm);
    double *tol = tol_new((int64_t)rows * cols);
    for (int64_t i = 0; i < (int64_t)rows * cols; i++) tol[i] = 2 * (cols + 8) * U * fabsf(x[i]) + 1e-45;
    expect_close("softmax 9 x 32000", x, tol, (int64_t)rows * cols);
    free(tol);
    bufs_free();
}

/* ---- paged KV: append, decode, prefill ---- */

struct kv_setup {
    int32_t dtype, n_heads, n_kv_heads, hd, bs, n_seqs, max_blocks;
    float k_scale, v_scale;
    int32_t *lens, *tables; /* [n_seqs], [n_seqs][max_blocks] (buffers) */
    void *k_pool, *v_pool;  /* buffers */
};

/* Fills every sequence's pages through kv_append on both sides (bytes compared). */
static struct kv_setup kv_fill(uint64_t *rng, int32_t dtype, int32_t n_heads, int32_t n_kv_heads,
                               int32_t hd, int32_t bs, const int32_t *lens, int32_t n_seqs) {
    struct kv_setup s = {dtype, n_heads, n_kv_heads, hd, bs, n_seqs, 1, 1.0f, 1.0f, NULL, NULL, NULL, NULL};
    if (dtype == TM_KV_FP8_E4M3) s.k_scale = 3.5f / 448, s.v_scale = 3.0f / 448; /* some saturate */
    int64_t total = 0;
    for (int i = 0; i < n_seqs; i++) {
        int64_t b = tm_kv_blocks_for(lens[i], bs);
        if (b > s.max_blocks) s.max_blocks = (int32_t)b;
        total += lens[i];
    }
    int64_t n_blocks = (int64_t)n_seqs * s.max_blocks;
    struct tm_kv_layout l = {1, n_kv_heads, hd, bs, n_blocks, dtype};
    s.k_pool = buf_new((size_t)tm_kv_pool_bytes(&l));
    s.v_pool = buf_new((size_t)tm_kv_pool_bytes(&l));
    s.lens = buf_new(sizeof(int32_t) * n_seqs);
    s.tables = buf_new(sizeof(int32_t) * n_blocks);
    memcpy(s.lens, lens, sizeof(int32_t) * n_seqs);
    for (int64_t i = 0; i < n_blocks; i++) s.tables[i] = (int32_t)i;
    for (int64_t i = n_blocks - 1; i > 0; i--) {
        int64_t j = (int64_t)(rng_next(rng) % (uint64_t)(i + 1));
        int32_t t = s.tables[i];
        s.tables[i] = s.tables[j], s.tables[j] = t;
    }
    int32_t width = n_kv_heads * hd;
    float *k = buf_new(sizeof(float) * total * width), *v = buf_new(sizeof(float) * total * width);
    int32_t *slots = buf_new(sizeof(int32_t) * total);
    fill_normal(k, total * width, 1.0f, rng);
    fill_normal(v, total * width, 1.0f, rng);
    int64_t t = 0;
    for (int i = 0; i < n_seqs; i++)
        for (int32_t p = 0; p < lens[i]; p++)
            slots[t++] = tm_kv_slot(s.tables + (int64_t)i * s.max_blocks, p, bs);
    struct tm_args_kv_append a = {s.k_pool, s.v_pool, k, v, slots, (int32_t)total, n_kv_heads,
                                  hd, bs, width, width, s.k_scale, s.v_scale};
    RUN_ID(tm_kernel_for_kv(TM_K_tm_kv_append_f32, dtype), kv_append, kv_append, a);
    char what[96];
    snprintf(what, sizeof what, "kv_append_%s %lld tokens x %d KV heads x %d: K pages",
             KV_NAMES[dtype], (long long)total, n_kv_heads, hd);
    expect_exact(what, s.k_pool, (size_t)tm_kv_pool_bytes(&l));
    snprintf(what, sizeof what, "kv_append_%s: V pages", KV_NAMES[dtype]);
    expect_exact(what, s.v_pool, (size_t)tm_kv_pool_bytes(&l));
    /* From here on both sides read the twin's pages (identical, or reported above). */
    return s;
}

static double kv_at(const struct kv_setup *s, const void *pool, float scale, int32_t seq,
                    int32_t p, int32_t g, int32_t d) {
    const int32_t *table = s->tables + (int64_t)seq * s->max_blocks;
    return (double)tm_kv_load(s->dtype, pool, tm_kv_index(table[p / s->bs], g, p % s->bs,
                                                          s->n_kv_heads, s->bs, s->hd) + d) * scale;
}

/* Attention tolerance for out[h][:] of query q[h][:] over n_pos positions of seq. */
static void attn_tol(const struct kv_setup *s, int32_t seq, int32_t n_pos, const float *q,
                     float attn_scale, double *tol /* [n_heads][hd] */) {
    int32_t group = s->n_heads / s->n_kv_heads;
    for (int32_t h = 0; h < s->n_heads; h++) {
        double S = 0, V = 0;
        for (int32_t j = 0; j < n_pos; j++) {
            double mag = 0;
            for (int32_t d = 0; d < s->hd; d++) {
                mag += fabs(q[h * s->hd + d] * kv_at(s, s->k_pool, s->k_scale, seq, j, h / group, d));
                V = fmax(V, fabs(kv_at(s, s->v_pool, s->v_scale, seq, j, h / group, d)));
            }
            S = fmax(S, mag * attn_scale);
        }
        int32_t tiles = (n_pos + TM_ATTN_TILE - 1) / TM_ATTN_TILE;
        double t = 4 * (2 * gamma_n(s->hd + 2) * S + gamma_n(n_pos + 8 * tiles + 8)) * V;
        for (int32_t d = 0; d < s->hd; d++) tol[h * s->hd + d] = n_pos > 0 ? t : 0;
    }
}

static void case_decode(uint64_t *rng, int32_t n_heads, int32_t n_kv_heads, int32_t hd,
                        const int32_t *lens, int32_t n_seqs) {
    for (int32_t dt = 0; dt < 4; dt++) {
        struct kv_setup s = kv_fill(rng, dt, n_heads, n_kv_heads, hd, 16, lens, n_seqs);
        int32_t width = n_heads * hd;
        float *q = buf_new(sizeof(float) * n_seqs * width), *out = buf_new(sizeof(float) * n_seqs * width);
        fill_normal(q, (int64_t)n_seqs * width, 1.0f, rng);
        float scale = 1.0f / sqrtf((float)hd);
        struct tm_args_attn_decode a = {out, q, s.k_pool, s.v_pool, s.tables, s.lens, n_seqs,
                                        s.max_blocks, n_heads, n_kv_heads, hd, 16, width, scale,
                                        s.k_scale, s.v_scale};
        RUN_ID(tm_kernel_for_kv(TM_K_tm_attn_decode_f32, dt), attn_decode, attn_decode, a);
        double *tol = tol_new((int64_t)n_seqs * width);
        for (int32_t i = 0; i < n_seqs; i++)
            attn_tol(&s, i, lens[i], q + (int64_t)i * width, scale, tol + (int64_t)i * width);
        char what[128];
        snprintf(what, sizeof what, "attn_decode_%s %d seqs up to %d positions, %d/%d heads x %d",
                 KV_NAMES[dt], n_seqs, lens[n_seqs - 1], n_heads, n_kv_heads, hd);
        expect_close(what, out, tol, (int64_t)n_seqs * width);
        free(tol);
        bufs_free();
    }
}

static void case_prefill(uint64_t *rng, int32_t len, int32_t start) {
    const int32_t n_heads = 16, n_kv_heads = 4, hd = 64;
    for (int32_t dt = 0; dt < 4; dt++) {
        struct kv_setup s = kv_fill(rng, dt, n_heads, n_kv_heads, hd, 16, &len, 1);
        int32_t n = len - start, width = n_heads * hd;
        float *q = buf_new(sizeof(float) * n * width), *out = buf_new(sizeof(float) * n * width);
        fill_normal(q, (int64_t)n * width, 1.0f, rng);
        float scale = 1.0f / sqrtf((float)hd);
        struct tm_args_attn_prefill a = {out, q, s.k_pool, s.v_pool, s.tables, n, start, n_heads,
                                         n_kv_heads, hd, 16, width, scale, s.k_scale, s.v_scale};
        RUN_ID(tm_kernel_for_kv(TM_K_tm_attn_prefill_f32, dt), attn_prefill, attn_prefill, a);
        double *tol = tol_new((int64_t)n * width);
        for (int32_t t = 0; t < n; t++)
            attn_tol(&s, 0, start + t + 1, q + (int64_t)t * width, scale, tol + (int64_t)t * width);
        char what[128];
        snprintf(what, sizeof what, "attn_prefill_%s tokens %d..%d", KV_NAMES[dt], start, len - 1);
        expect_close(what, out, tol, (int64_t)n * width);
        free(tol);

        /* Decode at every prompt position, on the GPU: the same bits as prefill there. */
        float *prefill_gpu = malloc(sizeof(float) * n * width);
        memcpy(prefill_gpu, gpu_of(out), sizeof(float) * n * width);
        int32_t *lens = buf_new(sizeof(int32_t) * n);
        int32_t *tables = buf_new(sizeof(int32_t) * (size_t)n * s.max_blocks);
        float *dout = buf_new(sizeof(float) * n * width);
        for (int32_t t = 0; t < n; t++) {
            lens[t] = start + t + 1;
            memcpy(tables + (int64_t)t * s.max_blocks, s.tables, sizeof(int32_t) * s.max_blocks);
        }
        struct tm_args_attn_decode d = {dout, q, s.k_pool, s.v_pool, tables, lens, n, s.max_blocks,
                                        n_heads, n_kv_heads, hd, 16, width, scale, s.k_scale, s.v_scale};
        RUN_ID(tm_kernel_for_kv(TM_K_tm_attn_decode_f32, dt), attn_decode, attn_decode, d);
        int same = memcmp(prefill_gpu, gpu_of(dout), sizeof(float) * n * width) == 0;
        report(same, "attn_prefill_%s equals attn_decode at each position on the device, bit for bit",
               KV_NAMES[dt]);
        free(prefill_gpu);
        bufs_free();
    }
}

/* Mixture of experts: routing (ids exact, weights to the softmax bound), the expert
 * matvec of every weight type (the matvec bound, per slot, with token and slot rows), and
 * the weighted combine (k products and sums: 2 gamma_{2k} sum |w y|). */
static void case_moe(uint64_t *rng) {
    const int32_t n = 9, n_expert = 8, top_k = 2, n_in = 256, n_out = 72;
    float *logits = buf_new(sizeof(float) * n * n_expert);
    fill_normal(logits, (int64_t)n * n_expert, 2.0f, rng);
    logits[3] = logits[5]; /* a tie: the lower id first on both sides */
    int32_t *ids = buf_new(sizeof(int32_t) * n * top_k);
    float *gate = buf_new(sizeof(float) * n * top_k);
    struct tm_args_moe_route r = {ids, gate, logits, n, n_expert, top_k};
    RUN(tm_moe_route, moe_route, moe_route, r);
    expect_exact("moe_route ids, 9 tokens over 8 experts, top 2", ids, sizeof(int32_t) * n * top_k);
    double *tol = tol_new((int64_t)n * top_k);
    for (int64_t i = 0; i < (int64_t)n * top_k; i++) tol[i] = 2 * (top_k + 8) * U * gate[i] + 1e-30;
    expect_close("moe_route weights", gate, tol, (int64_t)n * top_k);
    free(tol);
    /* The twin's ids feed both sides from here on (every run uploads the host copies). */
    for (int w = 0; w < N_WTYPES; w++) {
        int32_t wt = WTYPES[w].wtype;
        void *wts = buf_new((size_t)tm_wtype_row_bytes(wt, n_in) * n_out * n_expert);
        float *dense = malloc(sizeof(float) * (size_t)n_in * n_out * n_expert);
        make_weights(wt, wts, dense, (int64_t)n_out * n_expert, n_in, rng);
        for (int per_slot = 0; per_slot < 2; per_slot++) {
            int64_t x_rows = per_slot ? (int64_t)n * top_k : n;
            float *x = buf_new(sizeof(float) * x_rows * n_in);
            fill_normal(x, x_rows * n_in, 1.0f, rng);
            float *out = buf_new(sizeof(float) * n * top_k * n_out);
            struct tm_args_moe_matvec a = {out, x, wts, ids, n, top_k, n_expert, n_in, n_out, per_slot};
            RUN_ID(tm_kernel_for_wtype(TM_K_tm_moe_matvec_f32, wt), moe_matvec, moe_matvec, a);
            double *t2 = tol_new((int64_t)n * top_k * n_out);
            for (int64_t sl = 0; sl < (int64_t)n * top_k; sl++)
                for (int32_t o = 0; o < n_out; o++) {
                    const float *wr = dense + ((int64_t)ids[sl] * n_out + o) * n_in;
                    const float *xr = x + (per_slot ? sl : sl / top_k) * n_in;
                    double mag = 0;
                    for (int32_t i = 0; i < n_in; i++) mag += fabs((double)wr[i] * xr[i]);
                    t2[sl * n_out + o] = 2 * gamma_n(n_in + 2) * mag;
                }
            char what[96];
            snprintf(what, sizeof what, "moe_matvec_%s, x per %s", WTYPES[w].name, per_slot ? "slot" : "token");
            expect_close(what, out, t2, (int64_t)n * top_k * n_out);
            free(t2);
        }
        free(dense);
    }
    float *y = buf_new(sizeof(float) * n * top_k * n_out), *out = buf_new(sizeof(float) * n * n_out);
    fill_normal(y, (int64_t)n * top_k * n_out, 1.0f, rng);
    struct tm_args_moe_combine c = {out, y, gate, n, top_k, n_out};
    RUN(tm_moe_combine, moe_combine, moe_combine, c);
    expect_exact("moe_combine (no FMA on either side)", out, sizeof(float) * n * n_out);
    bufs_free();
}

/* Counts of zero still launch one block (a grid is never empty): nothing may be written. */
static void case_empty(void) {
    float *out = buf_new(4096), *x = buf_new(4096);
    int32_t *ids = buf_new(256);
    memset(out, 0x5a, 4096);
    for (int i = 0; i < 64; i++) ids[i] = 1;
    struct tm_args_embed e = {out, x, ids, 0, 16, 4};
    RUN(tm_embed_f32, embed, embed, e);
    struct tm_args_rmsnorm r = {out, x, x, 0, 16, 1e-5f};
    RUN(tm_rmsnorm, rmsnorm, rmsnorm, r);
    struct tm_args_rope ro = {out, ids, 0, 2, 8, 8, 16, 10000.0f, NULL, 0};
    RUN(tm_rope, rope, rope, ro);
    struct tm_args_kv_append k = {out, out, x, x, ids, 0, 2, 8, 16, 16, 16, 1, 1};
    RUN(tm_kv_append_f32, kv_append, kv_append, k);
    struct tm_args_attn_decode d = {out, x, x, x, ids, ids, 0, 1, 2, 1, 8, 16, 16, 0.35f, 1, 1};
    RUN(tm_attn_decode_f32, attn_decode, attn_decode, d);
    struct tm_args_attn_prefill p = {out, x, x, x, ids, 0, 0, 2, 1, 8, 16, 16, 0.35f, 1, 1};
    RUN(tm_attn_prefill_f32, attn_prefill, attn_prefill, p);
    struct tm_args_softmax sm = {out, 0, 16};
    RUN(tm_softmax, softmax, row, sm);
    struct tm_args_argmax am = {ids, x, 0, 16};
    RUN(tm_argmax, argmax, row, am);
    struct tm_args_matmul mv = {out, x, x, 0, 16, 8, 8};
    RUN(tm_matvec_f32, matmul, matvec, mv);
    RUN(tm_matmul_f32, matmul, matmul, mv);
    struct tm_args_silu_mul sl = {out, x, x, 0};
    RUN(tm_silu_mul, silu_mul, elementwise, sl);
    expect_exact("launches with a count of zero write nothing (outputs)", out, 4096);
    expect_exact("launches with a count of zero write nothing (ids)", ids, 256);
    bufs_free();
}

int main(int argc, char **argv) {
    const char *twin_path = NULL, *module_path = NULL;
    int small = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--module") && i + 1 < argc) module_path = argv[++i];
        else if (!strcmp(argv[i], "--small")) small = 1;
        else if (argv[i][0] != '-' && !twin_path) twin_path = argv[i];
        else die("usage: kernel_check TWIN_LIBRARY [--module PATH] [--small]");
    }
    if (!twin_path) die("usage: kernel_check TWIN_LIBRARY [--module PATH] [--small]");
    open_driver();
    load_kernels(module_path, twin_path);
    uint64_t rng = 20261129;
    case_embed(&rng);
    case_rmsnorm(&rng);
    case_matmul(&rng, 1, small ? 512 : 2048, small ? 100 : 1000, small ? 100 : 1000, 1);
    case_matmul(&rng, 13, small ? 256 : 2048, small ? 100 : 1000, small ? 104 : 1024, 1);
    case_matmul(&rng, small ? 70 : 100, small ? 256 : 1024, small ? 80 : 300, small ? 96 : 320, 0);
    case_matmul(&rng, 7, 512, 130, 130, 0);
    case_rope(&rng);
    case_elementwise(&rng);
    case_rows(&rng);
    const int32_t lens[] = {0, 1, 100, 128, 129, 1000, 2049};
    const int32_t small_lens[] = {0, 1, 100, 129, 300};
    if (small) case_decode(&rng, 8, 2, 64, small_lens, 5);
    else case_decode(&rng, 32, 8, 128, lens, 7);
    const int32_t short_lens[] = {5, 40, 300};
    case_decode(&rng, 8, 4, 8, short_lens, 3); /* stories260K's heads */
    case_decode(&rng, 8, 1, 256, short_lens, 3);
    case_prefill(&rng, small ? 150 : 300, 0);
    case_prefill(&rng, small ? 150 : 300, small ? 120 : 250);
    case_moe(&rng);
    case_empty();
    printf("1..%d\n", tap_n);
    if (tap_failed) printf("# %d of %d checks failed\n", tap_failed, tap_n);
    return tap_failed ? 1 : 0;
}
