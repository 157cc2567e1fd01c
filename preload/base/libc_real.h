/* libc_real.h — the C library's own functions, for the interposer's use.
 *
 * libtiermem.so exports open, read, mmap and their kin (hooks/hook_file.c) and dlsym
 * (hooks/hook_resolve.c), and is linked -Bsymbolic: its own calls to those names would
 * reach its own hooks. Code of the library calls the functions here instead, which reach
 * the C library's definitions (tests/preload/check_layers.sh holds every object but the
 * hooks to that). glibc's dlsym and dlvsym themselves are found by reading the C
 * library's dynamic symbol table, since every lookup of them by name finds ours first. */
#ifndef TM_PRELOAD_BASE_LIBC_REAL_H
#define TM_PRELOAD_BASE_LIBC_REAL_H

#include <stddef.h>
#include <sys/types.h>

/* glibc's first symbol version on this architecture: dlsym and dlvsym have one there and
 * one at GLIBC_2.34, when libdl moved into libc. */
#if defined(__aarch64__)
#define TM_GLIBC_BASE "GLIBC_2.17"
#else
#define TM_GLIBC_BASE "GLIBC_2.2.5"
#endif

typedef void *(*tm_dlsym_fn)(void *handle, const char *symbol);
typedef void *(*tm_dlvsym_fn)(void *handle, const char *symbol, const char *version);

/* glibc's dlsym and dlvsym of both versions, once found (the dlsym entry points of
 * hooks/hook_resolve.c read these from assembly: keep the names and types). */
extern tm_dlsym_fn tm_glibc_dlsym_2_34, tm_glibc_dlsym_base;
extern tm_dlvsym_fn tm_glibc_dlvsym_2_34, tm_glibc_dlvsym_base;

/* Finds all four (any entry point that finds its slot empty calls this). It runs inside
 * the first dlsym of the process, possibly a sanitizer's, and calls nothing but glibc. */
void tm_resolve_glibc_dlsym(void);

/* glibc's own dlsym and dlvsym (never the interposer's). */
void *tm_real_dlsym(void *handle, const char *symbol);
void *tm_real_dlvsym(void *handle, const char *symbol, const char *version);

/* The C library's file functions, as it defines them. */
int tm_libc_open(const char *path, int flags, mode_t mode);
int tm_libc_close(int fd);
ssize_t tm_libc_read(int fd, void *buf, size_t count);
ssize_t tm_libc_pread(int fd, void *buf, size_t count, off_t offset);
void *tm_libc_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
int tm_libc_munmap(void *addr, size_t length);

#endif /* TM_PRELOAD_BASE_LIBC_REAL_H */
