/* load_pread.c — the loader's pread reader, for where io_uring is refused: the queued
 * reads run one at a time, in order, when the stream waits for one. */
#include "engine/load_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct queued_read {
    int slot;
    void *buf;              /* [len] */
    int64_t offset;
    size_t len;
} queued_read;

typedef struct pread_reader {
    load_reader base;
    int fd;
    int cap, head, count;   /* a FIFO of queued reads */
    queued_read q[];        /* [cap] */
} pread_reader;

static int pread_submit(load_reader *r, int slot, void *buf, int64_t offset, size_t len)
{
    pread_reader *p = (pread_reader *)r;
    if (p->count == p->cap) return -1; /* never: one read per slot */
    p->q[(p->head + p->count++) % p->cap] = (queued_read){slot, buf, offset, len};
    return 0;
}

static int pread_flush(load_reader *r)
{
    (void)r;
    return 0;
}

int64_t tm_load_pread_full(int fd, void *buf, size_t len, int64_t offset)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(offset + (int64_t)got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -errno;
        if (n == 0) break;
        got += (size_t)n;
    }
    return (int64_t)got;
}

static int pread_wait(load_reader *r, int *slot, int64_t *result)
{
    pread_reader *p = (pread_reader *)r;
    if (!p->count) return -EINVAL;
    queued_read q = p->q[p->head];
    p->head = (p->head + 1) % p->cap;
    p->count--;
    *slot = q.slot;
    *result = tm_load_pread_full(p->fd, q.buf, q.len, q.offset);
    return 0;
}

static void pread_close(load_reader *r)
{
    free(r);
}

load_reader *load_pread_open(int fd, int slots)
{
    pread_reader *p = calloc(1, sizeof *p + (size_t)slots * sizeof p->q[0]);
    if (!p) return NULL;
    p->fd = fd;
    p->cap = slots;
    p->base = (load_reader){pread_submit, pread_flush, pread_wait, pread_close, true};
    return &p->base;
}
