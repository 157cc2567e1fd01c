/* hook_file.c — the C library's file calls, seen on their way through: which model files
 * are open, and which host memory their reads and mappings fill. Not part of the driver
 * hook table (hooks.def): these are libc symbols, exported at glibc's base version so
 * that the program's references bind here (libtiermem.map).
 *
 * Every hook calls the real function first and returns exactly what it returned, with
 * errno as it left it; recording happens after, and only for descriptors of recognised
 * model files (model_files.h). Reads behind stdio (fread) never reach these symbols; the
 * eBPF file tracepoints see those. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload/driver/cuda_api.h"
#include "preload/base/libc_real.h"
#include "preload/model/model_files.h"

#define LIBC_CALLS(X)                                                                         \
    X(open, int, (const char *, int, ...))                                                    \
    X(open64, int, (const char *, int, ...))                                                  \
    X(openat, int, (int, const char *, int, ...))                                             \
    X(openat64, int, (int, const char *, int, ...))                                           \
    X(read, ssize_t, (int, void *, size_t))                                                   \
    X(pread, ssize_t, (int, void *, size_t, off_t))                                           \
    X(pread64, ssize_t, (int, void *, size_t, off_t))                                         \
    X(readv, ssize_t, (int, const struct iovec *, int))                                       \
    X(preadv, ssize_t, (int, const struct iovec *, int, off_t))                               \
    X(preadv64, ssize_t, (int, const struct iovec *, int, off_t))                             \
    X(mmap, void *, (void *, size_t, int, int, int, off_t))                                   \
    X(mmap64, void *, (void *, size_t, int, int, int, off_t))                                 \
    X(munmap, int, (void *, size_t))                                                          \
    X(close, int, (int))                                                                      \
    X(lseek, off_t, (int, off_t, int))

#define DECLARE(name, ret, args) typedef ret (*name##_fn) args; static name##_fn real_##name;
LIBC_CALLS(DECLARE)
#undef DECLARE

/* Looks a function up once; the lookups race harmlessly (same answer). */
#define REAL(name)                                                                            \
    (__atomic_load_n(&real_##name, __ATOMIC_ACQUIRE)                                          \
         ? real_##name                                                                        \
         : (__atomic_store_n(&real_##name, (name##_fn)tm_real_dlsym(RTLD_NEXT, #name),        \
                             __ATOMIC_RELEASE),                                               \
            real_##name))

/* ---------------------------------------------------------------- open and close */

/* The mode argument exists only with O_CREAT or O_TMPFILE. */
#define MODE_OF(flags, last)                                                                  \
    mode_t mode = 0;                                                                          \
    if ((flags) & (O_CREAT | __O_TMPFILE)) {                                                  \
        va_list ap;                                                                           \
        va_start(ap, last);                                                                   \
        mode = va_arg(ap, mode_t);                                                            \
        va_end(ap);                                                                           \
    }

static int opened(int fd, const char *path, int flags)
{
    if (fd >= 0) {
        int saved = errno;
        tm_model_files_opened(fd, path, flags);
        errno = saved;
    }
    return fd;
}

TM_EXPORT int open(const char *path, int flags, ...)
{
    MODE_OF(flags, flags);
    open_fn f = REAL(open);
    if (!f) { errno = ENOSYS; return -1; }
    return opened(f(path, flags, mode), path, flags);
}

TM_EXPORT int open64(const char *path, int flags, ...)
{
    MODE_OF(flags, flags);
    open64_fn f = REAL(open64);
    if (!f) { errno = ENOSYS; return -1; }
    return opened(f(path, flags, mode), path, flags);
}

TM_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    MODE_OF(flags, flags);
    openat_fn f = REAL(openat);
    if (!f) { errno = ENOSYS; return -1; }
    return opened(f(dirfd, path, flags, mode), path, flags);
}

TM_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    MODE_OF(flags, flags);
    openat64_fn f = REAL(openat64);
    if (!f) { errno = ENOSYS; return -1; }
    return opened(f(dirfd, path, flags, mode), path, flags);
}

TM_EXPORT int close(int fd)
{
    tm_model_files_closed(fd);
    close_fn f = REAL(close);
    if (!f) { errno = ENOSYS; return -1; }
    return f(fd);
}

/* ---------------------------------------------------------------- reads */

/* After `got` bytes were read at file offset `at` into the buffers of `iov`. */
static void filled_iov(tm_model_file *file, const struct iovec *iov, int iovcnt, ssize_t got, uint64_t at)
{
    size_t left = (size_t)got;
    for (int i = 0; i < iovcnt && left; i++) {
        size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
        tm_host_range_filled(file, iov[i].iov_base, n, at);
        at += n;
        left -= n;
    }
}

/* read and readv move the offset: where the read started is the offset after it, less
 * what it read. */
static uint64_t started_at(int fd, ssize_t got)
{
    lseek_fn seek = REAL(lseek);
    off_t now = seek ? seek(fd, 0, SEEK_CUR) : -1;
    return now >= got ? (uint64_t)(now - got) : UINT64_MAX;
}

TM_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
    read_fn f = REAL(read);
    if (!f) { errno = ENOSYS; return -1; }
    ssize_t got = f(fd, buf, count);
    tm_model_file *file;
    if (got > 0 && (file = tm_model_file_of_fd(fd))) {
        int saved = errno;
        uint64_t at = started_at(fd, got);
        if (at != UINT64_MAX) tm_host_range_filled(file, buf, (size_t)got, at);
        errno = saved;
    }
    return got;
}

static ssize_t pread_common(pread_fn f, int fd, void *buf, size_t count, off_t offset)
{
    if (!f) { errno = ENOSYS; return -1; }
    ssize_t got = f(fd, buf, count, offset);
    tm_model_file *file;
    if (got > 0 && offset >= 0 && (file = tm_model_file_of_fd(fd)))
        tm_host_range_filled(file, buf, (size_t)got, (uint64_t)offset);
    return got;
}

TM_EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t offset)
{
    return pread_common(REAL(pread), fd, buf, count, offset);
}

TM_EXPORT ssize_t pread64(int fd, void *buf, size_t count, off_t offset)
{
    return pread_common(REAL(pread64), fd, buf, count, offset);
}

TM_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    readv_fn f = REAL(readv);
    if (!f) { errno = ENOSYS; return -1; }
    ssize_t got = f(fd, iov, iovcnt);
    tm_model_file *file;
    if (got > 0 && (file = tm_model_file_of_fd(fd))) {
        int saved = errno;
        uint64_t at = started_at(fd, got);
        if (at != UINT64_MAX) filled_iov(file, iov, iovcnt, got, at);
        errno = saved;
    }
    return got;
}

static ssize_t preadv_common(preadv_fn f, int fd, const struct iovec *iov, int iovcnt, off_t offset)
{
    if (!f) { errno = ENOSYS; return -1; }
    ssize_t got = f(fd, iov, iovcnt, offset);
    tm_model_file *file;
    if (got > 0 && offset >= 0 && (file = tm_model_file_of_fd(fd)))
        filled_iov(file, iov, iovcnt, got, (uint64_t)offset);
    return got;
}

TM_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset)
{
    return preadv_common(REAL(preadv), fd, iov, iovcnt, offset);
}

TM_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt, off_t offset)
{
    return preadv_common(REAL(preadv64), fd, iov, iovcnt, offset);
}

/* ---------------------------------------------------------------- mappings */

static void *mmap_common(mmap_fn f, void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    if (!f) { errno = ENOSYS; return MAP_FAILED; }
    void *p = f(addr, length, prot, flags, fd, offset);
    if (p != MAP_FAILED && (flags & (MAP_FIXED | MAP_ANONYMOUS)) != MAP_ANONYMOUS) {
        int saved = errno;
        tm_model_file *file = (flags & MAP_ANONYMOUS) || offset < 0 ? NULL : tm_model_file_of_fd(fd);
        if (file)
            tm_host_range_filled(file, p, length, (uint64_t)offset);
        else if (flags & MAP_FIXED)
            tm_host_range_forget(p, length);
        errno = saved;
    }
    return p;
}

TM_EXPORT void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    return mmap_common(REAL(mmap), addr, length, prot, flags, fd, offset);
}

TM_EXPORT void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    return mmap_common(REAL(mmap64), addr, length, prot, flags, fd, offset);
}

TM_EXPORT int munmap(void *addr, size_t length)
{
    munmap_fn f = REAL(munmap);
    if (!f) { errno = ENOSYS; return -1; }
    int rc = f(addr, length);
    if (rc == 0) {
        int saved = errno;
        tm_host_range_forget(addr, length);
        errno = saved;
    }
    return rc;
}
