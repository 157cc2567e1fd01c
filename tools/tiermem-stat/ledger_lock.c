/* ledger_lock.c — see ledger_lock.h. */
#include "tools/tiermem-stat/ledger_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/base/proc_start.h"
#include "preload/region/ledger_file.h"

tm_ledger_held *tm_ledger_map(const char *path, bool *missing, char *why, size_t why_len)
{
    char fallback[64];
    if (!path) {
        snprintf(fallback, sizeof fallback, "/dev/shm/tiermem-ledger.u%u", (unsigned)geteuid());
        path = fallback;
    }
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    *missing = fd < 0 && errno == ENOENT;
    const char *reason = NULL;
    bool damaged;
    tm_ledger_held *ledger = NULL;
    if (fd < 0)
        reason = errno == ELOOP ? "a symbolic link, not followed" : strerror(errno);
    else if ((reason = tm_ledger_file_refusal(fd, false, 0, geteuid() == 0)) == NULL && !(ledger = malloc(sizeof *ledger)))
        reason = "out of memory";
    else if (!reason)
        reason = tm_ledger_file_read(fd, &ledger->copy, &damaged);
    if (reason) {
        free(ledger);
        if (fd >= 0)
            close(fd);
        snprintf(why, why_len, "%s: %s", path, reason);
        return NULL;
    }
    ledger->fd = fd;
    ledger->stuck = false;
    return ledger;
}

void tm_ledger_unmap(tm_ledger_held *ledger)
{
    close(ledger->fd);
    free(ledger);
}

bool tm_ledger_take(tm_ledger_held *ledger)
{
    if (ledger->stuck)
        return false;
    ledger->stuck = true;
    if (!tm_ledger_file_lock(ledger->fd, TM_LEDGER_LOCK_WAIT_MS)) {
        fprintf(stderr, "tiermem-stat: the ledger's lock has been held by another process for %d ms; not waited for\n",
                TM_LEDGER_LOCK_WAIT_MS);
        return false;
    }
    bool damaged;
    const char *why = tm_ledger_file_read(ledger->fd, &ledger->copy, &damaged);
    if (why) {
        fprintf(stderr, "tiermem-stat: the ledger is no longer usable: %s\n", why);
        tm_ledger_file_unlock(ledger->fd);
        return false;
    }
    ledger->stuck = false;
    return true;
}

void tm_ledger_give(tm_ledger_held *ledger)
{
    tm_ledger_file_unlock(ledger->fd);
}

bool tm_ledger_holds(const tm_ledger_held *ledger, pid_t pid)
{
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        const tm_ledger_entry *e = &ledger->copy.entry[i];
        if (e->pid == (int32_t)pid && tm_proc_alive(e->pid, e->start_time))
            return true;
    }
    return false;
}

int tm_ledger_reclaim(tm_ledger_held *ledger, const char *path)
{
    int freed = 0;
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        tm_ledger_entry *e = &ledger->copy.entry[i];
        if (e->pid <= 0 || tm_proc_alive(e->pid, e->start_time))
            continue;
        printf("tiermem-stat: freed the ledger entry of process %d in %s (it is gone)\n", (int)e->pid,
               path ? path : "this user's ledger");
        memset(e, 0, sizeof *e);
        tm_ledger_file_write_entry(ledger->fd, i, e);
        freed++;
    }
    return freed;
}
