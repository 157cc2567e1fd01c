/* file_hint.c — tiermem_note_file_read: a program that reads a model file past the C
 * library (io_uring, whose reads the kernel does from its own queue) says which host
 * memory now holds which bytes of the file, so copies from it name device memory as a
 * pread's would (provenance.h). The reads themselves leave no trace the interposer could
 * follow: the io_uring submission and completion tracepoints carry neither the buffer nor
 * the file offset, and liburing makes its system calls without the C library. */
#include <errno.h>
#include <stdint.h>

#include "preload/model/model_files.h"
#include "preload/tiermem.h"

/* declared, with its contract, in the public tiermem.h */
int tiermem_note_file_read(int fd, const void *host, size_t bytes, int64_t offset)
{
    tm_model_file *file = tm_model_file_of_fd(fd);
    if (!file || !host || offset < 0)
        return -1;
    int saved = errno;
    tm_host_range_filled(file, host, bytes, (uint64_t)offset);
    errno = saved;
    return 0;
}
