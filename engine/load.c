/* load.c — choosing how the weights are read, the mapped-file path and norm widening (see
 * load.h; the staged pipeline is load_stream.c, the progress line load_progress.c). */
#include "engine/error.h"
#include "engine/load.h"
#include "engine/load_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const method_names[] = {"auto", "uring", "pread", "mmap"};

int tm_load_method_parse(const char *s, tm_load_method *out)
{
    for (size_t i = 0; i < sizeof method_names / sizeof *method_names; i++)
        if (!strcmp(s, method_names[i])) {
            *out = (tm_load_method)i;
            return 0;
        }
    return -1;
}

const char *tm_load_method_name(tm_load_method m)
{
    return (unsigned)m < sizeof method_names / sizeof *method_names ? method_names[m] : "unknown";
}

double tm_load_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ----------------------------------------------------------------------------
 * Norms: f16/bf16 in the file, f32 on the device */

float tm_half_to_float(uint16_t h, bool bf16)
{
    uint32_t bits;
    if (bf16) {
        bits = (uint32_t)h << 16;
    } else {
        uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
        if (exp == 0x1F) bits = sign | 0x7F800000 | man << 13;
        else if (exp) bits = sign | (exp + 112) << 23 | man << 13;
        else if (!man) bits = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            bits = sign | (uint32_t)(112 - e) << 23 | (man & 0x3FF) << 13;
        }
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float *tm_load_widen(const tm_load_item *it, const void *raw)
{
    float *v = malloc((size_t)it->t->dims[0] * sizeof *v);
    if (!v) return NULL;
    const uint8_t *src = raw;
    for (int64_t i = 0; i < it->t->dims[0]; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        v[i] = tm_half_to_float(h, it->t->type == GGML_TYPE_BF16);
    }
    return v;
}

/* ----------------------------------------------------------------------------
 * From the mapping */

static int load_mapped(const tm_driver *drv, const tm_load_item *items, int64_t n, tm_load_result *res,
                       char *err, size_t errlen)
{
    int64_t done = 0;
    for (int64_t i = 0; i < n; i++) {
        const tm_load_item *it = &items[i];
        float *wide = it->widen ? tm_load_widen(it, it->t->data) : NULL;
        if (it->widen && !wide) return tm_fail(err, errlen, "out of host memory");
        CUresult cr = drv->cuMemcpyHtoD(it->dst, wide ? (const void *)wide : it->t->data, (size_t)it->device_bytes);
        free(wide);
        if (cr != CUDA_SUCCESS)
            return tm_fail(err, errlen, "copying tensor '%s' to the device failed: %s", it->t->name,
                           tm_cu_name(drv, cr));
        done += (int64_t)it->t->n_bytes;
    }
    res->file_bytes = done;
    return 0;
}

/* ----------------------------------------------------------------------------
 * The choice */

int tm_load_weights(const tm_driver *drv, const gguf_file *f, const tm_load_item *items, int64_t n,
                    const tm_load_options *opt, tm_load_result *res, char *err, size_t errlen)
{
    *res = (tm_load_result){.used = opt->path ? opt->method : TM_LOAD_MMAP};
    if (res->used == TM_LOAD_AUTO) res->used = TM_LOAD_URING;
    double start = tm_load_now();
    int rc;
    if (res->used == TM_LOAD_MMAP) {
        rc = load_mapped(drv, items, n, res, err, errlen);
    } else {
        load_stream_options so = {opt->path, res->used == TM_LOAD_URING, opt->method == TM_LOAD_AUTO, opt->progress,
                                  0, 0};
        rc = tm_load_stream(drv, f, items, n, &so, res, err, errlen);
    }
    res->seconds = tm_load_now() - start;
    return rc;
}
