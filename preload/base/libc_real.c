/* libc_real.c — glibc's own dlsym and dlvsym, and the C library's file functions for the
 * interposer's own use (see libc_real.h). */
#include "preload/base/libc_real.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------- glibc's dlsym */

tm_dlsym_fn tm_glibc_dlsym_2_34;
tm_dlsym_fn tm_glibc_dlsym_base;
tm_dlvsym_fn tm_glibc_dlvsym_2_34;
tm_dlvsym_fn tm_glibc_dlvsym_base;

/* The code below runs inside the first dlsym of the process, possibly a sanitizer's while
 * it sets itself up, before its shadow memory and interceptors exist: it is left
 * uninstrumented and calls no library function but glibc's dlvsym. */
#define TM_RUNS_BEFORE_SANITIZERS __attribute__((no_sanitize_address, no_sanitize_undefined, noinline))

TM_RUNS_BEFORE_SANITIZERS static bool same_name(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* Where the C library defines `name` (its default version), read from its dynamic
 * symbol table. This is how glibc's dlvsym is reached at all: every lookup of dlvsym by
 * name and version, this library's own calls included, finds our entry point first. */
TM_RUNS_BEFORE_SANITIZERS static void *libc_definition(const char *name)
{
    struct link_map *map = _r_debug.r_map; /* the loader's list of objects, read without a call */
    for (; map; map = map->l_next) {
        const char *base = map->l_name;
        for (const char *c = map->l_name; c && *c; c++)
            if (*c == '/')
                base = c + 1;
        if (base && same_name(base, LIBC_SO))
            break;
    }
    if (!map)
        return NULL;
    const ElfW(Sym) *symbols = NULL;
    const char *strings = NULL;
    const ElfW(Versym) *versions = NULL;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        /* the loader relocates these in place on x86-64 and aarch64, not everywhere */
        uintptr_t at = d->d_un.d_ptr < map->l_addr ? map->l_addr + d->d_un.d_ptr : d->d_un.d_ptr;
        if (d->d_tag == DT_SYMTAB)
            symbols = (const ElfW(Sym) *)at;
        else if (d->d_tag == DT_STRTAB)
            strings = (const char *)at;
        else if (d->d_tag == DT_VERSYM)
            versions = (const ElfW(Versym) *)at;
    }
    void *found = NULL;
    /* the symbol table ends where the string table starts, as linkers lay them out */
    for (const ElfW(Sym) *s = symbols; s && strings && (const char *)s < strings; s++) {
        if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || !same_name(strings + s->st_name, name))
            continue;
        found = (void *)(map->l_addr + s->st_value);
        if (!versions || !(versions[s - symbols] & 0x8000)) /* the default version, not a hidden one */
            break;
    }
    return found;
}

/* All four at once: any entry point that finds its slot empty calls this. */
TM_RUNS_BEFORE_SANITIZERS void tm_resolve_glibc_dlsym(void)
{
    tm_dlvsym_fn glibc_dlvsym = (tm_dlvsym_fn)libc_definition("dlvsym");
    if (!glibc_dlvsym)
        return;
    tm_dlsym_fn newer = (tm_dlsym_fn)glibc_dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    tm_dlsym_fn older = (tm_dlsym_fn)glibc_dlvsym(RTLD_NEXT, "dlsym", TM_GLIBC_BASE);
    tm_dlvsym_fn vnewer = (tm_dlvsym_fn)glibc_dlvsym(RTLD_NEXT, "dlvsym", "GLIBC_2.34");
    tm_dlvsym_fn volder = (tm_dlvsym_fn)glibc_dlvsym(RTLD_NEXT, "dlvsym", TM_GLIBC_BASE);
    /* a C library with only one of the two serves both */
    __atomic_store_n(&tm_glibc_dlvsym_base, volder ? volder : vnewer, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_glibc_dlvsym_2_34, vnewer ? vnewer : volder, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_glibc_dlsym_base, older ? older : newer, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_glibc_dlsym_2_34, newer ? newer : older, __ATOMIC_RELEASE);
}

void *tm_real_dlsym(void *handle, const char *symbol)
{
    tm_dlsym_fn real = __atomic_load_n(&tm_glibc_dlsym_2_34, __ATOMIC_ACQUIRE);
    if (!real) {
        tm_resolve_glibc_dlsym();
        real = __atomic_load_n(&tm_glibc_dlsym_2_34, __ATOMIC_ACQUIRE);
    }
    return real ? real(handle, symbol) : NULL;
}

void *tm_real_dlvsym(void *handle, const char *symbol, const char *version)
{
    tm_dlvsym_fn real = __atomic_load_n(&tm_glibc_dlvsym_2_34, __ATOMIC_ACQUIRE);
    if (!real) {
        tm_resolve_glibc_dlsym();
        real = __atomic_load_n(&tm_glibc_dlvsym_2_34, __ATOMIC_ACQUIRE);
    }
    return real ? real(handle, symbol, version) : NULL;
}


/* ---------------------------------------------------------------- the C library's file functions */

/* The C library's definition of `name`, found once (the lookups race harmlessly: same
 * answer); NULL when it has none. */
#define LIBC_NEXT(slot, name)                                                                     \
    (__atomic_load_n(&(slot), __ATOMIC_ACQUIRE)                                                  \
         ? (slot)                                                                                  \
         : (__atomic_store_n(&(slot), (__typeof__(slot))tm_real_dlsym(RTLD_NEXT, name), __ATOMIC_RELEASE), \
            (slot)))

int tm_libc_open(const char *path, int flags, mode_t mode)
{
    static int (*real)(const char *, int, ...);
    if (!LIBC_NEXT(real, "open")) {
        errno = ENOSYS;
        return -1;
    }
    return real(path, flags, mode);
}

int tm_libc_close(int fd)
{
    static int (*real)(int);
    if (!LIBC_NEXT(real, "close")) {
        errno = ENOSYS;
        return -1;
    }
    return real(fd);
}

ssize_t tm_libc_read(int fd, void *buf, size_t count)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!LIBC_NEXT(real, "read")) {
        errno = ENOSYS;
        return -1;
    }
    return real(fd, buf, count);
}

ssize_t tm_libc_pread(int fd, void *buf, size_t count, off_t offset)
{
    static ssize_t (*real)(int, void *, size_t, off_t);
    if (!LIBC_NEXT(real, "pread")) {
        errno = ENOSYS;
        return -1;
    }
    return real(fd, buf, count, offset);
}

void *tm_libc_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    static void *(*real)(void *, size_t, int, int, int, off_t);
    if (!LIBC_NEXT(real, "mmap")) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    return real(addr, length, prot, flags, fd, offset);
}

int tm_libc_munmap(void *addr, size_t length)
{
    static int (*real)(void *, size_t);
    if (!LIBC_NEXT(real, "munmap")) {
        errno = ENOSYS;
        return -1;
    }
    return real(addr, length);
}
