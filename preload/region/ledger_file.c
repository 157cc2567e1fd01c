/* ledger_file.c — see ledger_file.h. */
#include "preload/region/ledger_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/base/libc_real.h"

const char *tm_ledger_file_refusal(int fd, bool group, gid_t gid, bool any_owner)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "it is not a regular file";
    if (group)
        return st.st_gid != gid || (st.st_mode & 0007) ? "it does not belong to the group, or others may use it"
                                                        : NULL;
    if (!any_owner && st.st_uid != geteuid())
        return "it belongs to another user";
    return NULL;
}

/* ---------------------------------------------------------------- the lock */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int set_lock(int fd, short type)
{
    struct flock lock = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
    return fcntl(fd, F_OFD_SETLK, &lock);
}

bool tm_ledger_file_lock(int fd, int wait_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)(wait_ms > 0 ? wait_ms : 0);
    long pause_us = 100; /* doubled up to 20 ms: a short hold costs little, a long one no CPU */
    for (;;) {
        if (set_lock(fd, F_WRLCK) == 0)
            return true;
        if ((errno != EAGAIN && errno != EACCES && errno != EINTR) || now_ms() >= deadline)
            return false;
        struct timespec pause = { 0, pause_us * 1000 };
        nanosleep(&pause, NULL);
        if (pause_us < 20000)
            pause_us *= 2;
    }
}

void tm_ledger_file_unlock(int fd)
{
    set_lock(fd, F_UNLCK);
}

/* ---------------------------------------------------------------- copies */

static const char *check_fields(const tm_ledger_file *f)
{
    for (int i = 0; i < TM_LEDGER_NODES; i++) {
        if (f->node[i] < -1 || f->node[i] > TM_LEDGER_MAX_NODE)
            return "a node column names no NUMA node";
        for (int j = 0; j < i; j++)
            if (f->node[i] >= 0 && f->node[j] == f->node[i])
                return "two node columns name one node";
    }
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        const tm_ledger_entry *e = &f->entry[i];
        if (e->pid < 0 || e->family < 0)
            return "an entry holds a negative pid";
        if (e->pid > 0 && e->family == 0 && e->family_start != 0)
            return "an entry names no budget";
    }
    return NULL;
}

const char *tm_ledger_file_read(int fd, tm_ledger_file *copy, bool *damaged)
{
    *damaged = false;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return strerror(errno);
    size_t want = sizeof *copy;
    size_t have = st.st_size < 0 ? 0 : (uint64_t)st.st_size < want ? (size_t)st.st_size : want;
    ssize_t got = tm_libc_pread(fd, copy, have, 0);
    if (got < 0)
        return strerror(errno);
    bool ledger = (size_t)got >= offsetof(tm_ledger_file, size) &&
                  memcmp(copy->magic, TM_LEDGER_MAGIC, sizeof copy->magic) == 0;
    if (!ledger)
        return "it is not a tiermem ledger";
    if (copy->version != TM_LEDGER_VERSION)
        return "it is a tiermem ledger of another version";
    *damaged = true;
    if (st.st_size != (off_t)want || (size_t)got != want || copy->size != want)
        return "its size is not a ledger's";
    const char *why = check_fields(copy);
    if (why)
        return why;
    *damaged = false;
    return NULL;
}

void tm_ledger_file_init(tm_ledger_file *image)
{
    memset(image, 0, sizeof *image);
    memcpy(image->magic, TM_LEDGER_MAGIC, sizeof image->magic);
    image->version = TM_LEDGER_VERSION;
    image->size = sizeof *image;
    for (int i = 0; i < TM_LEDGER_NODES; i++)
        image->node[i] = -1;
}

static bool write_at(int fd, const void *data, size_t size, size_t offset)
{
    return pwrite(fd, data, size, (off_t)offset) == (ssize_t)size;
}

bool tm_ledger_file_write_entry(int fd, int slot, const tm_ledger_entry *entry)
{
    return slot >= 0 && slot < TM_LEDGER_PROCESSES &&
           write_at(fd, entry, sizeof *entry, offsetof(tm_ledger_file, entry) + (size_t)slot * sizeof *entry);
}

bool tm_ledger_file_write_nodes(int fd, const tm_ledger_file *copy)
{
    return write_at(fd, copy->node, sizeof copy->node, offsetof(tm_ledger_file, node));
}
