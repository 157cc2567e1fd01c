/* test_load.c — the weight loader against a driver whose asynchronous copies really are
 * deferred: bytes of every tensor arrive exactly (unaligned heads and tails, tensors
 * spanning pieces, norms widened to f32, tensors left out), with io_uring and pread and
 * a staging ring small enough to be reused many times; the progress line and its rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/load.h"
#include "engine/load_internal.h"
#include "tests/engine/gguf_builder.h"

/* ----------------------------------------------------------------------------
 * A driver over host memory whose stream runs only when waited on */

#define MAX_PENDING 16384

typedef struct pending_copy {
    CUdeviceptr dst;
    const void *src;
    size_t n;
} pending_copy;

static pending_copy pending[MAX_PENDING];
static int n_pending, n_run;            /* queued; run so far (a prefix of the queue) */
static int event_mark[64], n_events;    /* queue position each event was recorded at */
static int event_waits, host_pinned;     /* host_pinned: registrations not undone */

static void run_until(int upto)
{
    for (; n_run < upto; n_run++) memcpy((void *)(uintptr_t)pending[n_run].dst, pending[n_run].src, pending[n_run].n);
}

static CUresult fake_copy_async(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    (void)s;
    if (n_pending == MAX_PENDING) return CUDA_ERROR_OUT_OF_MEMORY;
    pending[n_pending++] = (pending_copy){dst, src, n};
    return CUDA_SUCCESS;
}
static CUresult fake_copy(CUdeviceptr dst, const void *src, size_t n)
{
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}
static CUresult fake_host_register(void *p, size_t n, unsigned int flags)
{
    (void)p, (void)n, (void)flags;
    host_pinned++;
    return CUDA_SUCCESS;
}
static CUresult fake_host_unregister(void *p)
{
    (void)p;
    host_pinned--;
    return CUDA_SUCCESS;
}
static CUresult fake_stream_create(CUstream *s, unsigned int flags)
{
    (void)flags;
    *s = (CUstream)(uintptr_t)1;
    return CUDA_SUCCESS;
}
static CUresult fake_stream_destroy(CUstream s) { (void)s; return CUDA_SUCCESS; }
static CUresult fake_stream_sync(CUstream s)
{
    (void)s;
    run_until(n_pending);
    return CUDA_SUCCESS;
}
static CUresult fake_event_create(CUevent *e, unsigned int flags)
{
    (void)flags;
    if (n_events == 64) return CUDA_ERROR_OUT_OF_MEMORY;
    *e = (CUevent)(uintptr_t)(++n_events);
    return CUDA_SUCCESS;
}
static CUresult fake_event_record(CUevent e, CUstream s)
{
    (void)s;
    event_mark[(uintptr_t)e - 1] = n_pending;
    return CUDA_SUCCESS;
}
static CUresult fake_event_sync(CUevent e)
{
    event_waits++;
    run_until(event_mark[(uintptr_t)e - 1]);
    return CUDA_SUCCESS;
}
static CUresult fake_event_destroy(CUevent e) { (void)e; return CUDA_SUCCESS; }

static tm_driver fake_driver(void)
{
    tm_driver d = {0};
    d.cuMemcpyHtoDAsync = fake_copy_async;
    d.cuMemcpyHtoD = fake_copy;
    d.cuMemHostRegister = fake_host_register;
    d.cuMemHostUnregister = fake_host_unregister;
    d.cuStreamCreate = fake_stream_create;
    d.cuStreamDestroy = fake_stream_destroy;
    d.cuStreamSynchronize = fake_stream_sync;
    d.cuEventCreate = fake_event_create;
    d.cuEventRecord = fake_event_record;
    d.cuEventSynchronize = fake_event_sync;
    d.cuEventDestroy = fake_event_destroy;
    n_pending = n_run = n_events = event_waits = host_pinned = 0;
    return d;
}

/* ----------------------------------------------------------------------------
 * A model file: odd sizes, a tensor over many pieces, f16 and bf16 norms */

#define N_TENSORS 5
static const struct { const char *name; uint64_t d0, d1; uint32_t type; } shapes[N_TENSORS] = {
    {"skipped", 1000, 3, GGML_TYPE_F32},     /* 12000 bytes, not loaded: a gap */
    {"norm16", 77, 1, GGML_TYPE_F16},        /* 154 bytes, widened */
    {"big", 1000, 301, GGML_TYPE_F32},       /* 1204000 bytes over many pieces */
    {"normbf", 33, 1, GGML_TYPE_BF16},       /* 66 bytes, widened */
    {"tail", 5, 1, GGML_TYPE_F32},           /* 20 bytes, the end of the file */
};

static char path[64];

static int write_model(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, N_TENSORS, 0);
    uint64_t off = 0;
    for (int i = 0; i < N_TENSORS; i++) {
        img_tensor2(&b, shapes[i].name, shapes[i].d0, shapes[i].d1, shapes[i].type, off);
        off += shapes[i].d0 * shapes[i].d1 * (shapes[i].type == GGML_TYPE_F32 ? 4 : 2);
        off = (off + 31) / 32 * 32;
    }
    img_pad(&b, 32);
    srand(7);
    for (uint64_t i = 0; i < off; i++) img_u8(&b, (uint8_t)(rand() >> 7));
    snprintf(path, sizeof path, "/tmp/test_load_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    close(fd);
    free(b.data);
    return 0;
}

static int remove_model(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

/* Loads every tensor but the first, in reverse file order, and checks each byte. */
static void load_and_check(bool uring, int slots, int64_t piece_bytes)
{
    gguf_file f;
    char gerr[GGUF_ERROR_MAX], err[256];
    assert_int_equal(gguf_open(path, &f, gerr), 0);
    tm_driver drv = fake_driver();
    tm_load_item items[N_TENSORS - 1];
    void *dev[N_TENSORS - 1];
    for (int i = 1; i < N_TENSORS; i++) {
        const gguf_tensor *t = gguf_find_tensor(&f, shapes[i].name);
        assert_non_null(t);
        bool widen = t->type != GGML_TYPE_F32;
        int64_t bytes = widen ? t->dims[0] * 4 : (int64_t)t->n_bytes;
        dev[N_TENSORS - 1 - i] = calloc(1, (size_t)bytes);
        items[N_TENSORS - 1 - i] = (tm_load_item){t, (CUdeviceptr)(uintptr_t)dev[N_TENSORS - 1 - i], bytes, widen};
    }
    load_stream_options so = {path, uring, false, false, slots, piece_bytes};
    tm_load_result res = {0};
    assert_int_equal(tm_load_stream(&drv, &f, items, N_TENSORS - 1, &so, &res, err, sizeof err), 0);
    assert_int_equal(res.used, uring ? TM_LOAD_URING : TM_LOAD_PREAD);
    assert_int_equal(n_run, n_pending); /* every copy ran before the load returned */
    assert_int_equal(host_pinned, 0);   /* the staging ring was unpinned */
    if (slots && n_pending > slots) assert_true(event_waits > 0); /* the ring was reused */
    for (int i = 0; i < N_TENSORS - 1; i++) {
        const tm_load_item *it = &items[i];
        if (!it->widen) {
            assert_memory_equal(dev[i], it->t->data, it->t->n_bytes);
        } else {
            const float *got = dev[i];
            for (int64_t j = 0; j < it->t->dims[0]; j++) {
                uint16_t h;
                memcpy(&h, (const uint8_t *)it->t->data + 2 * j, 2);
                float want = tm_half_to_float(h, it->t->type == GGML_TYPE_BF16);
                assert_memory_equal(&got[j], &want, 4); /* NaN payloads too */
            }
        }
        free(dev[i]);
    }
    gguf_close(&f);
}

static void test_uring_small_ring(void **state) { (void)state; load_and_check(true, 3, 8192); }
static void test_pread_small_ring(void **state) { (void)state; load_and_check(false, 3, 5000); }
static void test_uring_default_ring(void **state) { (void)state; load_and_check(true, 0, 0); }
static void test_uring_one_slot(void **state) { (void)state; load_and_check(true, 1, 1000); }

static void test_missing_file(void **state)
{
    (void)state;
    gguf_file f;
    char gerr[GGUF_ERROR_MAX], err[256];
    assert_int_equal(gguf_open(path, &f, gerr), 0);
    tm_driver drv = fake_driver();
    load_stream_options so = {"/nonexistent/model.gguf", true, false, false, 0, 0};
    tm_load_result res = {0};
    assert_int_equal(tm_load_stream(&drv, &f, NULL, 0, &so, &res, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open '/nonexistent/model.gguf'"));
    gguf_close(&f);
}

/* ----------------------------------------------------------------------------
 * Progress, methods, half floats */

static void test_progress_format(void **state)
{
    (void)state;
    char line[200];
    tm_load_progress_format(line, sizeof line, 512LL << 20, 1LL << 30, 2.0, 10);
    assert_string_equal(line, "loading  50% [#####     ] 0.5/1.0 GiB   256 MiB/s");
    tm_load_progress_format(line, sizeof line, 0, 1LL << 30, 0.0, 4);
    assert_string_equal(line, "loading   0% [    ] 0.0/1.0 GiB     0 MiB/s");
    tm_load_progress_format(line, sizeof line, 5LL << 30, 1LL << 30, 1.0, 4); /* done past total: clamped */
    assert_string_equal(line, "loading 100% [####] 1.0/1.0 GiB  1024 MiB/s");
    tm_load_progress_format(line, 16, 1, 2, 1.0, 500);                       /* a short buffer stays terminated */
    assert_int_equal(strlen(line), 15);
}

/* What the line writes to a stream, fed (done, seconds since start) pairs. */
static char *progress_output(bool tty, const double *at, int n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    load_progress p;
    tm_load_progress_init(&p, out, tty, 100, 1000.0);
    for (int i = 0; i < n; i++) tm_load_progress_update(&p, (int64_t)(i + 1) * 100 / n, 1000.0 + at[i]);
    tm_load_progress_end(&p);
    fclose(out);
    return buf;
}

static void test_progress_rules(void **state)
{
    (void)state;
    const double slow[] = {0.5, 1.2, 1.25, 2.0}, fast[] = {0.2, 0.4, 0.9};
    char *s = progress_output(false, slow, 4);
    assert_string_equal(s, ""); /* not a terminal: never */
    free(s);
    s = progress_output(true, fast, 3);
    assert_string_equal(s, ""); /* under a second: nothing */
    free(s);
    s = progress_output(true, slow, 4);
    /* drawn at 1.2 s and at the end (1.25 s is too soon after), then a newline */
    assert_non_null(strstr(s, "\rloading  50% ["));
    assert_null(strstr(s, " 75% ["));
    assert_non_null(strstr(s, "\rloading 100% ["));
    assert_int_equal(s[strlen(s) - 1], '\n');
    free(s);
}

static void test_methods(void **state)
{
    (void)state;
    tm_load_method m;
    const char *names[] = {"auto", "uring", "pread", "mmap"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tm_load_method_parse(names[i], &m), 0);
        assert_int_equal(m, i);
        assert_string_equal(tm_load_method_name(m), names[i]);
    }
    assert_int_equal(tm_load_method_parse("io_uring", &m), -1);
    assert_int_equal(tm_load_method_parse("", &m), -1);
}

static void test_half_to_float(void **state)
{
    (void)state;
    assert_true(tm_half_to_float(0x3C00, false) == 1.0f);
    assert_true(tm_half_to_float(0xC000, false) == -2.0f);
    assert_true(tm_half_to_float(0x0001, false) == 5.9604644775390625e-8f); /* the smallest subnormal */
    assert_true(tm_half_to_float(0x3F80, true) == 1.0f);
    assert_true(tm_half_to_float(0x7C00, false) > 3e38f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uring_small_ring),
        cmocka_unit_test(test_pread_small_ring),
        cmocka_unit_test(test_uring_default_ring),
        cmocka_unit_test(test_uring_one_slot),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_progress_format),
        cmocka_unit_test(test_progress_rules),
        cmocka_unit_test(test_methods),
        cmocka_unit_test(test_half_to_float),
    };
    return cmocka_run_group_tests(tests, write_model, remove_model);
}
