/* load_uring.c — the loader's io_uring reader: one ring as deep as the staging ring, the
 * staging buffers registered so each read lands in pinned memory without the kernel
 * mapping its pages again (READ_FIXED). */
#include "engine/load_internal.h"

#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

typedef struct uring_reader {
    load_reader base;
    struct io_uring ring;
    int fd;
    bool fixed;             /* the staging buffers are registered */
} uring_reader;

static int uring_submit(load_reader *r, int slot, void *buf, int64_t offset, size_t len)
{
    uring_reader *u = (uring_reader *)r;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    if (!sqe) return -1; /* never: the ring holds one entry per slot */
    if (u->fixed) io_uring_prep_read_fixed(sqe, u->fd, buf, (unsigned)len, (uint64_t)offset, slot);
    else io_uring_prep_read(sqe, u->fd, buf, (unsigned)len, (uint64_t)offset);
    io_uring_sqe_set_data(sqe, (void *)(uintptr_t)slot);
    return 0;
}

static int uring_flush(load_reader *r)
{
    int rc = io_uring_submit(&((uring_reader *)r)->ring);
    return rc < 0 ? rc : 0;
}

static int uring_wait(load_reader *r, int *slot, int64_t *result)
{
    uring_reader *u = (uring_reader *)r;
    struct io_uring_cqe *cqe;
    int rc = io_uring_wait_cqe(&u->ring, &cqe);
    if (rc < 0) return rc;
    *slot = (int)(uintptr_t)io_uring_cqe_get_data(cqe);
    *result = cqe->res;
    io_uring_cqe_seen(&u->ring, cqe);
    return 0;
}

static void uring_close(load_reader *r)
{
    uring_reader *u = (uring_reader *)r;
    io_uring_queue_exit(&u->ring); /* unregisters the buffers too */
    free(u);
}

load_reader *load_uring_open(int fd, void *staging, size_t slot_bytes, int slots, char *why, size_t whylen)
{
    uring_reader *u = calloc(1, sizeof *u);
    struct iovec *iov = calloc((size_t)slots, sizeof *iov);
    if (!u || !iov) {
        free(u);
        free(iov);
        snprintf(why, whylen, "out of host memory");
        return NULL;
    }
    int rc = io_uring_queue_init((unsigned)slots, &u->ring, 0);
    if (rc < 0) {
        snprintf(why, whylen, "io_uring_queue_init: %s", strerror(-rc));
        free(u);
        free(iov);
        return NULL;
    }
    for (int i = 0; i < slots; i++) iov[i] = (struct iovec){(char *)staging + (size_t)i * slot_bytes, slot_bytes};
    /* registering can fail under a small RLIMIT_MEMLOCK on older kernels: plain reads then */
    u->fixed = io_uring_register_buffers(&u->ring, iov, (unsigned)slots) == 0;
    free(iov);
    u->fd = fd;
    u->base = (load_reader){uring_submit, uring_flush, uring_wait, uring_close, false};
    return &u->base;
}
