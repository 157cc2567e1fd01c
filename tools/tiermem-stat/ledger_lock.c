/* ledger_lock.c — see ledger_lock.h. */
#include "tools/tiermem-stat/ledger_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/base/proc_start.h"

tm_ledger_file *tm_ledger_map(const char *path, bool *missing, char *why, size_t why_len)
{
    char fallback[64];
    if (!path) {
        snprintf(fallback, sizeof fallback, "/dev/shm/tiermem-ledger.u%u", (unsigned)geteuid());
        path = fallback;
    }
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    *missing = fd < 0 && errno == ENOENT;
    struct stat st;
    const char *reason = NULL;
    if (fd < 0)
        reason = errno == ELOOP ? "a symbolic link, not followed" : strerror(errno);
    else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        reason = "not a regular file";
    else if (geteuid() != 0 && st.st_uid != geteuid())
        reason = "it belongs to another user";
    else if (st.st_size != (off_t)sizeof(tm_ledger_file))
        reason = "not a tiermem ledger of this version (its size differs)";
    tm_ledger_file *ledger = NULL;
    if (!reason) {
        ledger = mmap(NULL, sizeof *ledger, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ledger == MAP_FAILED) {
            ledger = NULL;
            reason = "it cannot be mapped";
        } else if (memcmp(ledger->magic, TM_LEDGER_MAGIC, sizeof ledger->magic) != 0 ||
                   ledger->version != TM_LEDGER_VERSION || ledger->size != sizeof *ledger) {
            munmap(ledger, sizeof *ledger);
            ledger = NULL;
            reason = "not a tiermem ledger of this version";
        }
    }
    if (fd >= 0)
        close(fd);
    if (reason)
        snprintf(why, why_len, "%s: %s", path, reason);
    return ledger;
}

void tm_ledger_unmap(tm_ledger_file *ledger)
{
    munmap(ledger, sizeof *ledger);
}

void tm_ledger_take(tm_ledger_file *ledger)
{
    if (pthread_mutex_lock(&ledger->lock) == EOWNERDEAD)
        pthread_mutex_consistent(&ledger->lock); /* what the holder left is reclaimed by whoever looks */
}

void tm_ledger_give(tm_ledger_file *ledger)
{
    pthread_mutex_unlock(&ledger->lock);
}

bool tm_ledger_holds(const tm_ledger_file *ledger, pid_t pid)
{
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        const tm_ledger_entry *e = &ledger->entry[i];
        if (e->pid == (int32_t)pid && tm_proc_alive(e->pid, e->start_time))
            return true;
    }
    return false;
}

int tm_ledger_reclaim(tm_ledger_file *ledger, const char *path)
{
    int freed = 0;
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        tm_ledger_entry *e = &ledger->entry[i];
        if (e->pid <= 0 || tm_proc_alive(e->pid, e->start_time))
            continue;
        printf("tiermem-stat: freed the ledger entry of process %d in %s (it is gone)\n", (int)e->pid,
               path ? path : "this user's ledger");
        memset(e, 0, sizeof *e);
        freed++;
    }
    return freed;
}
