/* launch_params.c — the pointer-sized parameters of a kernel launch (see launch_params.h). */
#include "preload/driver/launch_params.h"

#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload/driver/driver.h"

#define MAX_PARAMS 64
#define SCAN_PARAMS 16         /* argument array entries read when the layout is unknown */
#define SCAN_SPAN 4096         /* ... and only while they point close to the first one */
#define SCAN_BUFFER 4096       /* bytes of a CU_LAUNCH_PARAM_BUFFER scanned */
#define EXTRA_MAX 32           /* entries of `extra` read before its end must have come */

/* ---------------------------------------------------------------- parameter layouts */

typedef struct param_layout {
    CUfunction f;              /* the key; stored last */
    bool scan;                 /* the driver gave no layout: scan the arguments */
    bool complete;             /* the driver described every parameter (count is exact) */
    uint32_t count;            /* parameters with a known layout; with `scan`, entries the
                                * first scan found (0: not scanned yet) */
    uint64_t wide;             /* bit i: parameter i is pointer-sized */
    uint16_t offset[MAX_PARAMS];
} param_layout;

#define LAYOUT_SLOTS 1024      /* a power of two */
#define LAYOUT_PROBES 8
static param_layout layouts[LAYOUT_SLOTS];
static pthread_mutex_t layout_lock = PTHREAD_MUTEX_INITIALIZER;

static void query_layout(CUfunction f, param_layout *out)
{
    memset(out, 0, sizeof *out);
    out->f = f;
    out->scan = true;
    if (!tm_real.cuFuncGetParamInfo)
        return;
    for (size_t i = 0; i < MAX_PARAMS; i++) {
        size_t offset, size;
        CUresult rc = tm_real.cuFuncGetParamInfo(f, i, &offset, &size);
        if (rc != CUDA_SUCCESS) {
            /* an index past the last parameter is INVALID_VALUE; anything else at the
             * first one means this driver keeps no layouts */
            if (i > 0 || rc == CUDA_ERROR_INVALID_VALUE)
                out->scan = false;
            out->complete = rc == CUDA_ERROR_INVALID_VALUE;
            return;
        }
        if (offset > UINT16_MAX) {
            out->scan = false;
            return;
        }
        out->offset[i] = (uint16_t)offset;
        if (size == sizeof(uint64_t))
            out->wide |= (uint64_t)1 << i;
        out->count = (uint32_t)i + 1;
    }
    out->scan = false;
}

static size_t slot_of(CUfunction f)
{
    return (size_t)(((uintptr_t)f >> 4) * 0x9E3779B97F4A7C15ull >> 32) & (LAYOUT_SLOTS - 1);
}

/* The cached layout of f, or a fresh one in *scratch when the cache is full; *queried
 * says whether the driver was asked. */
static param_layout *layout_of(CUfunction f, param_layout *scratch, bool *queried)
{
    size_t home = slot_of(f);
    for (size_t p = 0; p < LAYOUT_PROBES; p++) {
        param_layout *l = &layouts[(home + p) & (LAYOUT_SLOTS - 1)];
        CUfunction key = __atomic_load_n(&l->f, __ATOMIC_ACQUIRE);
        if (key == f)
            return l;
        if (!key)
            break;
    }
    query_layout(f, scratch);
    *queried = true;
    param_layout *result = scratch;
    pthread_mutex_lock(&layout_lock);
    for (size_t p = 0; p < LAYOUT_PROBES; p++) {
        param_layout *l = &layouts[(home + p) & (LAYOUT_SLOTS - 1)];
        if (l->f == f) {
            result = l;
            break;
        }
        if (!l->f) {
            memcpy(l->offset, scratch->offset, sizeof l->offset);
            l->scan = scratch->scan;
            l->complete = scratch->complete;
            l->count = scratch->count;
            l->wide = scratch->wide;
            __atomic_store_n(&l->f, f, __ATOMIC_RELEASE);
            result = l;
            break;
        }
    }
    pthread_mutex_unlock(&layout_lock);
    return result;
}

/* ---------------------------------------------------------------- parameter values */

/* Reads memory of this process that may not be mapped, without a fault. */
static bool read_own(const void *address, void *out, size_t len)
{
    struct iovec local = { .iov_base = out, .iov_len = len };
    struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = len };
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static bool same_page(const void *a, const void *b)
{
    return ((uintptr_t)a >> 12) == ((uintptr_t)b >> 12);
}

/* The top of this thread's stack: arguments a caller keeps in its own frames lie between
 * the current frame and it, where every page is mapped. */
static __thread uintptr_t stack_top;

static bool in_caller_frames(const void *address, size_t len)
{
    if (!stack_top) {
        pthread_attr_t attr;
        void *base;
        size_t size;
        stack_top = 1; /* unknown: never matches */
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            if (pthread_attr_getstack(&attr, &base, &size) == 0)
                stack_top = (uintptr_t)base + size;
            pthread_attr_destroy(&attr);
        }
    }
    uintptr_t here = (uintptr_t)__builtin_frame_address(0), at = (uintptr_t)address;
    return at >= here && at + len <= stack_top && at + len > at;
}

/* A copy that sanitizers leave alone: past the end of an argument array the scan reads
 * whatever the caller's frame holds there, which may be a sanitizer's red zone. */
__attribute__((no_sanitize("address"))) static void copy_unchecked(void *out, const void *from, size_t len)
{
    volatile const unsigned char *src = from;
    unsigned char *dst = out;
    for (size_t i = 0; i < len; i++)
        dst[i] = src[i];
}

/* Reads memory on the page of `known` (readable) or in the caller's frames directly;
 * other memory safely. */
static bool read_near(const void *known, const void *address, void *out, size_t len)
{
    if ((same_page(known, address) && same_page(known, (const char *)address + len - 1)) ||
        in_caller_frames(address, len)) {
        copy_unchecked(out, address, len);
        return true;
    }
    return read_own(address, out, len);
}

/* The argument array has no length: read entries while they can be read and point near
 * the first (arguments of one launch live together). The first scan of a function reads
 * everything safely and learns how many entries there are (*learned); later ones trust
 * the first entry and read what shares a page with it directly. */
static size_t scan_params(void **params, uint64_t *values, uint32_t known, uint32_t *learned)
{
    size_t n = 0;
    void *first = NULL;
    size_t limit = known ? known : SCAN_PARAMS;
    for (size_t i = 0; i < limit; i++) {
        void *entry;
        bool ok = known ? (i == 0 ? (entry = params[0], true) : read_near(&params[0], &params[i], &entry, sizeof entry))
                        : read_own(&params[i], &entry, sizeof entry);
        if (!ok || !entry)
            break;
        if (i == 0)
            first = entry;
        else if ((uintptr_t)entry - (uintptr_t)first + SCAN_SPAN > 2 * SCAN_SPAN)
            break;
        ok = known ? read_near(first, entry, &values[n], sizeof values[n])
                   : read_own(entry, &values[n], sizeof values[n]);
        if (!ok)
            break;
        n++;
    }
    *learned = (uint32_t)n;
    return n;
}

/* The argument buffer of `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER) and its size; the
 * number of entries before CU_LAUNCH_PARAM_END, or 0 when there is none within EXTRA_MAX. */
static size_t extra_buffer(void **extra, const char **buffer, size_t *buffer_size)
{
    *buffer = NULL;
    *buffer_size = 0;
    for (size_t i = 0; i < EXTRA_MAX; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_END)
            return i + 1;
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            *buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            *buffer_size = *(const size_t *)extra[i + 1];
    }
    return 0;
}

/* Where pointer-sized parameter i of a known layout lies: in the argument array, or in
 * an argument buffer of `size` bytes; NULL when it is not pointer-sized or lies past the
 * buffer's end. */
static const void *wide_param(const param_layout *l, uint32_t i, void **params, const char *buffer, size_t size)
{
    if (!(l->wide >> i & 1))
        return NULL;
    if (params)
        return params[i];
    return (size_t)l->offset[i] + sizeof(uint64_t) <= size ? buffer + l->offset[i] : NULL;
}

/* *learning: this launch taught the cache something (a first scan), at a one-time cost. */
static size_t gather_values(param_layout *l, void **params, void **extra, uint64_t *values, bool *learning)
{
    const char *buffer = NULL;
    size_t buffer_size = 0;
    if (!params && extra) {
        extra_buffer(extra, &buffer, &buffer_size);
        if (!buffer)
            return 0;
    }
    size_t n = 0;
    if (!l->scan) {
        for (uint32_t i = 0; i < l->count; i++) {
            const void *at = wide_param(l, i, params, buffer, buffer_size);
            if (at)
                memcpy(&values[n++], at, sizeof *values);
        }
        return n;
    }
    if (params) {
        uint32_t learned;
        uint32_t known = __atomic_load_n(&l->count, __ATOMIC_RELAXED);
        n = scan_params(params, values, known, &learned);
        if (!known && learned)
            __atomic_store_n(&l->count, learned, __ATOMIC_RELAXED);
        if (!known)
            *learning = true;
        return n;
    }
    size_t end = buffer_size < SCAN_BUFFER ? buffer_size : SCAN_BUFFER;
    for (size_t off = 0; off + sizeof *values <= end && n < MAX_PARAMS; off += sizeof *values)
        memcpy(&values[n++], buffer + off, sizeof *values);
    return n;
}

size_t tm_launch_pointers(CUfunction f, void **params, void **extra, uint64_t *values, bool *learned)
{
    _Static_assert(TM_LAUNCH_MAX_POINTERS >= MAX_PARAMS, "room for every parameter");
    bool learning = false;
    if (learned)
        *learned = false;
    if (!params && !extra)
        return 0;
    param_layout scratch;
    param_layout *l = layout_of(f, &scratch, &learning);
    size_t n = gather_values(l, params, extra, values, &learning);
    if (learned)
        *learned = learning;
    return n;
}

/* ---------------------------------------------------------------- replacing values */

/* The parameters of `l` in the argument array, values replaced where `replace` says. */
static size_t replace_in_params(const param_layout *l, void ***params, tm_launch_replace replace, void *arg,
                                tm_launch_args *args)
{
    size_t replaced = 0;
    void **from = *params;
    for (uint32_t i = 0; i < l->count; i++) {
        args->params[i] = from[i];
        const void *at = wide_param(l, i, from, NULL, 0);
        if (!at)
            continue;
        uint64_t value, now;
        memcpy(&value, at, sizeof value);
        if ((now = replace(value, arg)) == value)
            continue;
        args->value[i] = now;
        args->params[i] = &args->value[i];
        replaced++;
    }
    if (replaced)
        *params = args->params;
    return replaced;
}

/* The same in a CU_LAUNCH_PARAM_BUFFER, copied into args; `extra` then names the copy. */
static size_t replace_in_buffer(const param_layout *l, void ***extra, tm_launch_replace replace, void *arg,
                                tm_launch_args *args)
{
    const char *buffer;
    size_t size, entries = extra_buffer(*extra, &buffer, &size);
    if (!buffer || entries == 0 || entries > TM_LAUNCH_ARGS_EXTRA || size > sizeof args->buffer)
        return 0;
    memcpy(args->buffer, buffer, size);
    size_t replaced = 0;
    for (uint32_t i = 0; i < l->count; i++) {
        void *at = (void *)wide_param(l, i, NULL, args->buffer, size); /* in args' own copy */
        if (!at)
            continue;
        uint64_t value, now;
        memcpy(&value, at, sizeof value);
        if ((now = replace(value, arg)) == value)
            continue;
        memcpy(at, &now, sizeof now);
        replaced++;
    }
    if (!replaced)
        return 0;
    args->buffer_size = size;
    for (size_t i = 0; i < entries; i++) {
        void *entry = (*extra)[i];
        bool value = i % 2 == 1;
        args->extra[i] = value && (*extra)[i - 1] == CU_LAUNCH_PARAM_BUFFER_POINTER ? (void *)args->buffer
                         : value && (*extra)[i - 1] == CU_LAUNCH_PARAM_BUFFER_SIZE ? (void *)&args->buffer_size
                                                                                    : entry;
    }
    *extra = args->extra;
    return replaced;
}

size_t tm_launch_replace_pointers(CUfunction f, void ***params, void ***extra, tm_launch_replace replace, void *arg,
                                  tm_launch_args *args)
{
    if (!*params && !*extra)
        return 0;
    bool learning = false;
    param_layout scratch;
    const param_layout *l = layout_of(f, &scratch, &learning);
    if (l->scan || !l->complete || l->count > TM_LAUNCH_MAX_POINTERS)
        return 0; /* the size of some parameter is not known: nothing is rewritten */
    return *params ? replace_in_params(l, params, replace, arg, args) : replace_in_buffer(l, extra, replace, arg, args);
}
