/* libc_real.h — the C library's own file functions, for the interposer's use. The
 * library is linked -Bsymbolic, so its own calls to open or pread would reach its hooks
 * (hook_file.c); code here that reads files calls these instead. */
#ifndef TM_PRELOAD_LIBC_REAL_H
#define TM_PRELOAD_LIBC_REAL_H

#include <sys/types.h>

ssize_t tm_libc_pread(int fd, void *buf, size_t count, off_t offset);

#endif /* TM_PRELOAD_LIBC_REAL_H */
