/* load_stream.c — the staged pipeline behind --load=uring and --load=pread.
 *
 * Each tensor, in file order, is cut into pieces of LOAD_PIECE_BYTES (the last one
 * shorter); a piece is read as the LOAD_ALIGN-aligned file range around it into a slot of
 * a ring of pinned buffers, then copied with cuMemcpyHtoDAsync on one stream, and an
 * event is recorded behind the copy. A slot takes its next read only once that event
 * completed; meanwhile the other slots' reads are in flight. Reading aligned ranges lets
 * O_DIRECT serve tensors whose offsets and sizes are not aligned (their heads and tails
 * come with a few neighbouring bytes, dropped). Pieces start at multiples of 2 MiB of
 * their tensor, so each copy fills whole chunks of a tiered allocation: an interposer
 * placing chunks by tensor name may then replace them instead of migrating them. A
 * tensor's first copy allocates it and the items before it still without memory
 * (tm_load_alloc, with this stream as what is in flight).
 *
 * The ring is anonymous memory pinned with cuMemHostRegister, so the copies are true DMA.
 * Memory from cuMemHostAlloc would be pinned too, but it is a mapping of the driver's
 * device file: kernels before 6.x refuse to register it with io_uring (EOPNOTSUPP), and
 * O_DIRECT into it can fail (EFAULT).
 *
 * io_uring reads pass the C library by, so a program watching reads (libtiermem.so, to
 * name device memory after tensors) cannot see them. When such a library offers
 * tiermem_note_file_read, each piece is reported to it before its copies are queued.
 */
#include "engine/error.h"
#include "engine/load_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Staging buffers, and reads in flight: 32 MiB in flight keeps a drive's queue busy; twice
 * that pinned twice the memory at set-up (18 against 9 ms for a 1 GiB model here) and
 * loaded slower from a virtual disk (median 1160 against 1374 MiB/s over 10 runs of each). */
#define LOAD_SLOTS 16
#define LOAD_PIECE_BYTES ((int64_t)2 << 20) /* tensor bytes a piece carries: the VMM granularity */
#define LOAD_ALIGN 4096                     /* O_DIRECT: a multiple of any logical block size */

/* `bytes` of host memory at `host` now hold the file open as `fd` from `offset` on. */
typedef int (*note_read_fn)(int fd, const void *host, size_t bytes, int64_t offset);

typedef struct span {
    int64_t start, end;     /* [start, end) in the file */
    int64_t item;           /* index into items */
} span;

typedef struct piece {
    int64_t offset, len;    /* the aligned read; it may reach past the end of the file */
    int64_t lo, hi;         /* [lo, hi) the file bytes of its tensor it carries */
    int64_t span;           /* index into spans */
} piece;

typedef struct stream {
    const tm_driver *drv;
    tm_load_item *items;    /* [n_items] */
    int64_t n_items;
    int64_t allocated;      /* items[0, allocated) have their memory */
    const char *path;
    span *spans;            /* [n_spans] by file offset */
    int64_t n_spans;
    piece *pieces;          /* [n_pieces] in file order */
    int64_t n_pieces;
    int64_t file_size;
    int fd, fd_direct;      /* buffered; O_DIRECT or -1 */
    char *staging;          /* [slots][slot_bytes] anonymous, pinned when `pinned` */
    bool pinned;
    int slots;
    int64_t piece_bytes;    /* tensor bytes per piece */
    int64_t slot_bytes;     /* the largest aligned read of a piece */
    int64_t *slot_piece;    /* [slots] the piece a slot holds */
    CUevent *done;          /* [slots] recorded behind a slot's copies */
    bool *copying;          /* [slots] done was recorded */
    int *idle;              /* [slots] FIFO of slots not reading */
    int idle_head, idle_count, in_flight;
    CUstream stream;
    load_reader *reader;
    note_read_fn note;
    uint8_t **raw;          /* [n_items] widened norms: their file bytes, gathered */
    int64_t *raw_filled;    /* [n_items] */
    int64_t bytes_read;
    load_progress progress;
    char *err;
    size_t errlen;
} stream;

static char *slot_buf(const stream *s, int k) { return s->staging + (size_t)k * (size_t)s->slot_bytes; }
static int64_t align_down(int64_t x) { return x / LOAD_ALIGN * LOAD_ALIGN; }
static int64_t align_up(int64_t x) { return (x + LOAD_ALIGN - 1) / LOAD_ALIGN * LOAD_ALIGN; }

static int by_start(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* The spans in file order, and the pieces covering them. */
static int plan_pieces(stream *s, const gguf_file *f, int64_t n)
{
    s->spans = calloc((size_t)(n ? n : 1), sizeof *s->spans);
    if (!s->spans) return -1;
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!s->items[i].t->n_bytes) continue;
        int64_t start = (int64_t)(f->data_offset + s->items[i].t->offset), bytes = (int64_t)s->items[i].t->n_bytes;
        s->spans[s->n_spans++] = (span){start, start + bytes, i};
        count += (bytes + s->piece_bytes - 1) / s->piece_bytes;
    }
    qsort(s->spans, (size_t)s->n_spans, sizeof *s->spans, by_start);
    if (!(s->pieces = calloc((size_t)(count ? count : 1), sizeof *s->pieces))) return -1;
    for (int64_t i = 0; i < s->n_spans; i++)
        for (int64_t lo = s->spans[i].start; lo < s->spans[i].end; lo += s->piece_bytes) {
            int64_t hi = lo + s->piece_bytes < s->spans[i].end ? lo + s->piece_bytes : s->spans[i].end;
            s->pieces[s->n_pieces++] = (piece){align_down(lo), align_up(hi) - align_down(lo), lo, hi, i};
        }
    return 0;
}

/* ----------------------------------------------------------------------------
 * A finished piece */

/* Part [lo, hi) of a widened norm: gathered on the host, converted and copied once whole. */
static int feed_widened(stream *s, const span *sp, const uint8_t *src, int64_t lo, int64_t hi)
{
    const tm_load_item *it = &s->items[sp->item];
    uint8_t **raw = &s->raw[sp->item];
    if (!*raw && !(*raw = malloc(it->t->n_bytes))) return tm_fail(s->err, s->errlen, "out of host memory");
    memcpy(*raw + (lo - sp->start), src, (size_t)(hi - lo));
    if ((s->raw_filled[sp->item] += hi - lo) < (int64_t)it->t->n_bytes) return 0;
    float *wide = tm_load_widen(it, *raw);
    if (!wide) return tm_fail(s->err, s->errlen, "out of host memory");
    CUresult cr = s->drv->cuMemcpyHtoD(it->dst, wide, (size_t)it->device_bytes);
    free(wide);
    return cr == CUDA_SUCCESS ? 0 : tm_fail(s->err, s->errlen, "copying tensor '%s' to the device failed: %s",
                                           it->t->name, tm_cu_name(s->drv, cr));
}

/* Queues the copy of the tensor part slot `k` holds (`got` bytes read), then its event; the
 * tensor's first copy allocates it (and the items before it). */
static int copy_out(stream *s, int k, int64_t got)
{
    const piece *p = &s->pieces[s->slot_piece[k]];
    const span *sp = &s->spans[p->span];
    const tm_load_item *it = &s->items[sp->item];
    const uint8_t *buf = (const uint8_t *)slot_buf(s, k);
    if (tm_load_alloc(s->drv, s->items, s->n_items, sp->item, &s->allocated, s->stream, s->err, s->errlen))
        return -1;
    if (s->note) s->note(s->fd, buf, (size_t)got, p->offset);
    if (it->widen) {
        if (feed_widened(s, sp, buf + (p->lo - p->offset), p->lo, p->hi)) return -1;
    } else {
        CUresult cr = s->drv->cuMemcpyHtoDAsync(it->dst + (CUdeviceptr)(p->lo - sp->start), buf + (p->lo - p->offset),
                                                (size_t)(p->hi - p->lo), s->stream);
        if (cr != CUDA_SUCCESS)
            return tm_fail(s->err, s->errlen, "copying tensor '%s' to the device failed: %s", it->t->name,
                           tm_cu_name(s->drv, cr));
    }
    CUresult cr = s->drv->cuEventRecord(s->done[k], s->stream);
    if (cr != CUDA_SUCCESS)
        return tm_fail(s->err, s->errlen, "cuEventRecord after the weight copies failed: %s", tm_cu_name(s->drv, cr));
    s->copying[k] = true;
    return 0;
}

/* A read came back with `result`: completes it with buffered preads where it fell short
 * (O_DIRECT refused for this piece, or a short read), then copies it out. */
static int finish_read(stream *s, int k, int64_t result)
{
    const piece *p = &s->pieces[s->slot_piece[k]];
    char *buf = slot_buf(s, k);
    int64_t want = s->file_size - p->offset < p->len ? s->file_size - p->offset : p->len;
    /* O_DIRECT refused for this piece (a coarser alignment, a buffer it cannot map): buffered */
    if ((result == -EINVAL || result == -EFAULT || result == -EOPNOTSUPP) && s->fd_direct >= 0) result = 0;
    if (result < 0)
        return tm_fail(s->err, s->errlen, "reading '%s' at offset %" PRId64 " failed: %s", s->path, p->offset,
                       strerror((int)-result));
    if (result < want) {
        int64_t more = tm_load_pread_full(s->fd, buf + result, (size_t)(want - result), p->offset + result);
        if (more < 0)
            return tm_fail(s->err, s->errlen, "reading '%s' at offset %" PRId64 " failed: %s", s->path,
                           p->offset + result, strerror((int)-more));
        result += more;
        if (result < want)
            return tm_fail(s->err, s->errlen, "'%s' ended at %" PRId64 " bytes while being read; was it changed?",
                           s->path, p->offset + result);
    }
    s->bytes_read += want;
    tm_load_progress_update(&s->progress, s->bytes_read, tm_load_now());
    return copy_out(s, k, want);
}

/* ----------------------------------------------------------------------------
 * The ring */

static int run(stream *s)
{
    int64_t next = 0, finished = 0;
    while (finished < s->n_pieces) {
        while (next < s->n_pieces && s->idle_count) {
            int k = s->idle[s->idle_head];
            s->idle_head = (s->idle_head + 1) % s->slots;
            s->idle_count--;
            if (s->copying[k]) { /* its last copies must be done before new bytes land */
                CUresult cr = s->drv->cuEventSynchronize(s->done[k]);
                if (cr != CUDA_SUCCESS)
                    return tm_fail(s->err, s->errlen, "waiting for the weight copies failed: %s",
                                   tm_cu_name(s->drv, cr));
                s->copying[k] = false;
            }
            s->slot_piece[k] = next;
            const piece *p = &s->pieces[next++];
            if (s->reader->submit(s->reader, k, slot_buf(s, k), p->offset, (size_t)p->len))
                return tm_fail(s->err, s->errlen, "internal: the read queue is full");
            s->in_flight++;
        }
        int rc = s->reader->flush(s->reader);
        if (rc < 0) return tm_fail(s->err, s->errlen, "submitting reads of '%s' failed: %s", s->path, strerror(-rc));
        int k;
        int64_t result;
        if ((rc = s->reader->wait(s->reader, &k, &result)) < 0)
            return tm_fail(s->err, s->errlen, "waiting for reads of '%s' failed: %s", s->path, strerror(-rc));
        s->in_flight--;
        if (finish_read(s, k, result)) return -1;
        s->idle[(s->idle_head + s->idle_count++) % s->slots] = k;
        finished++;
    }
    return 0;
}

/* Opens the reader: io_uring when asked (or pread after one line, for auto). */
static int open_reader(stream *s, const load_stream_options *opt, tm_load_result *res)
{
    int fd = s->fd_direct >= 0 ? s->fd_direct : s->fd;
    if (opt->uring) {
        char why[256];
        if ((s->reader = load_uring_open(fd, s->staging, (size_t)s->slot_bytes, s->slots, why, sizeof why))) {
            res->used = TM_LOAD_URING;
            return 0;
        }
        if (!opt->fall_back) return tm_fail(s->err, s->errlen, "--load=uring: io_uring is refused here (%s)", why);
        fprintf(stderr, "tiermem-llm: io_uring is refused (%s); loading with pread\n", why);
    }
    res->used = TM_LOAD_PREAD;
    if (!(s->reader = load_pread_open(fd, s->slots))) return tm_fail(s->err, s->errlen, "out of host memory");
    return 0;
}

static int open_files(stream *s)
{
    s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) return tm_fail(s->err, s->errlen, "cannot open '%s': %s", s->path, strerror(errno));
    struct stat st;
    if (fstat(s->fd, &st) != 0) return tm_fail(s->err, s->errlen, "cannot stat '%s': %s", s->path, strerror(errno));
    s->file_size = st.st_size;
    /* a file system without O_DIRECT (tmpfs before 6.6) gets buffered reads */
    s->fd_direct = open(s->path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    return 0;
}

static int setup(stream *s, const gguf_file *f, int64_t n, const load_stream_options *opt, tm_load_result *res)
{
    const tm_driver *drv = s->drv;
    if (plan_pieces(s, f, n)) return tm_fail(s->err, s->errlen, "out of host memory");
    if (open_files(s)) return -1;
    if ((size_t)s->file_size != f->size)
        return tm_fail(s->err, s->errlen, "'%s' changed since it was opened (%" PRId64 " bytes, was %zu)", s->path,
                       s->file_size, f->size);
    int slots = opt->slots > 0 ? opt->slots : LOAD_SLOTS;
    s->slots = s->n_pieces < slots ? (int)(s->n_pieces ? s->n_pieces : 1) : slots;
    size_t ring = (size_t)s->slots * (size_t)s->slot_bytes;
    void *mem = mmap(NULL, ring, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return tm_fail(s->err, s->errlen, "cannot map %.1f MiB of staging buffers: %s", TM_MIB((int64_t)ring),
                       strerror(errno));
    s->staging = mem;
    CUresult cr = drv->cuMemHostRegister(s->staging, ring, 0);
    s->pinned = cr == CUDA_SUCCESS;
    if (!s->pinned) /* still correct: the driver stages pageable copies itself, synchronously */
        fprintf(stderr, "tiermem-llm: cannot pin the staging buffers (cuMemHostRegister: %s); copies from them "
                "wait for the host\n", tm_cu_name(drv, cr));
    s->slot_piece = calloc((size_t)s->slots, sizeof *s->slot_piece);
    s->done = calloc((size_t)s->slots, sizeof *s->done);
    s->copying = calloc((size_t)s->slots, sizeof *s->copying);
    s->idle = calloc((size_t)s->slots, sizeof *s->idle);
    s->raw = calloc((size_t)(n ? n : 1), sizeof *s->raw);
    s->raw_filled = calloc((size_t)(n ? n : 1), sizeof *s->raw_filled);
    if (!s->slot_piece || !s->done || !s->copying || !s->idle || !s->raw || !s->raw_filled)
        return tm_fail(s->err, s->errlen, "out of host memory");
    if ((cr = drv->cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
        return tm_fail(s->err, s->errlen, "cuStreamCreate for loading failed: %s", tm_cu_name(drv, cr));
    for (int k = 0; k < s->slots; k++) {
        if ((cr = drv->cuEventCreate(&s->done[k], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
            return tm_fail(s->err, s->errlen, "cuEventCreate for loading failed: %s", tm_cu_name(drv, cr));
        s->idle[s->idle_count++] = k;
    }
    res->direct = s->fd_direct >= 0;
    if (open_reader(s, opt, res)) return -1;
    /* only reads the C library does not see need reporting */
    if (!s->reader->seen_by_libc) s->note = (note_read_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "tiermem_note_file_read");
    return 0;
}

static void teardown(stream *s)
{
    const tm_driver *drv = s->drv;
    /* the kernel may still be writing into the staging buffers: let every read finish */
    while (s->reader && s->in_flight > 0) {
        int k;
        int64_t result;
        if (s->reader->wait(s->reader, &k, &result) < 0) break;
        s->in_flight--;
    }
    if (s->reader) s->reader->close(s->reader);
    if (s->stream) {
        drv->cuStreamSynchronize(s->stream);
        drv->cuStreamDestroy(s->stream);
    }
    for (int k = 0; s->done && k < s->slots; k++)
        if (s->done[k]) drv->cuEventDestroy(s->done[k]);
    if (s->pinned) drv->cuMemHostUnregister(s->staging);
    if (s->staging) munmap(s->staging, (size_t)s->slots * (size_t)s->slot_bytes);
    if (s->fd >= 0) close(s->fd);
    if (s->fd_direct >= 0) close(s->fd_direct);
    for (int64_t i = 0; s->raw && i < s->n_spans; i++) free(s->raw[s->spans[i].item]);
    free(s->raw);
    free(s->raw_filled);
    free(s->slot_piece);
    free(s->done);
    free(s->copying);
    free(s->idle);
    free(s->spans);
    free(s->pieces);
}

int tm_load_stream(const tm_driver *drv, const gguf_file *f, tm_load_item *items, int64_t n,
                   const load_stream_options *opt, tm_load_result *res, char *err, size_t errlen)
{
    stream s = {.drv = drv, .items = items, .n_items = n, .path = opt->path, .fd = -1, .fd_direct = -1, .err = err,
                .errlen = errlen, .piece_bytes = opt->piece_bytes > 0 ? opt->piece_bytes : LOAD_PIECE_BYTES};
    s.slot_bytes = align_up(s.piece_bytes) + LOAD_ALIGN;
    int rc = setup(&s, f, n, opt, res);
    if (!rc) {
        int64_t total = 0;
        for (int64_t i = 0; i < s.n_pieces; i++)
            total += s.file_size - s.pieces[i].offset < s.pieces[i].len ? s.file_size - s.pieces[i].offset
                                                                         : s.pieces[i].len;
        tm_load_progress_init(&s.progress, stderr, opt->progress && isatty(STDERR_FILENO), total, tm_load_now());
        rc = run(&s);
        tm_load_progress_end(&s.progress);
    }
    if (!rc && s.stream) {
        CUresult cr = drv->cuStreamSynchronize(s.stream);
        if (cr != CUDA_SUCCESS)
            rc = tm_fail(err, errlen, "waiting for the weight copies failed: %s", tm_cu_name(drv, cr));
    }
    res->file_bytes = s.bytes_read;
    teardown(&s);
    return rc;
}
