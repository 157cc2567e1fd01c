/* gc.c — see gc.h. A region is removed only when everything says it is a leftover: the
 * name is tiermem.<pid>, the file (opened without following a symlink) a regular one of
 * this user, its header a valid region of that same pid, and no process has that pid.
 * The last two are checked again under the ledger's lock, with the name still naming the
 * file that was read: a process joins the ledger before it creates its region, so none
 * reusing the pid can replace the file between that check and the unlink. */
#include "tools/tiermem-stat/gc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/tiermem-stat/ledger_lock.h"
#include "tools/tiermem-stat/stats_read.h"

pid_t tm_stats_pid_of_name(const char *name)
{
    if (strncmp(name, "tiermem.", 8) != 0 || name[8] < '1' || name[8] > '9')
        return 0;
    char *end;
    long pid = strtol(name + 8, &end, 10);
    return *end == '\0' && pid > 0 && pid <= 0x7fffffff ? (pid_t)pid : 0;
}

static bool gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* The region open as `fd` is a leftover of process `pid`; *st its file. */
static bool leftover(int fd, const char *path, pid_t pid, struct stat *st)
{
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || (geteuid() != 0 && st->st_uid != geteuid()) || !gone(pid))
        return false;
    tm_stats_snapshot snapshot;
    char why[512];
    if (tm_stats_read_fd(fd, path, &snapshot, why, sizeof why) != 0)
        return false;
    bool match = snapshot.header.pid == (int32_t)pid;
    tm_stats_snapshot_free(&snapshot);
    return match;
}

/* Under the ledger's lock (when there is one): the owner is still gone and the name still
 * names the file read. */
static bool remove_checked(int dir_fd, const char *name, pid_t pid, const struct stat *read, tm_ledger_held *ledger)
{
    if (ledger && !tm_ledger_take(ledger))
        return false; /* not checked under the lock: left for a later run */
    struct stat now;
    bool removed = gone(pid) && !(ledger && tm_ledger_holds(ledger, pid)) &&
                   fstatat(dir_fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == read->st_dev &&
                   now.st_ino == read->st_ino && unlinkat(dir_fd, name, 0) == 0;
    if (ledger)
        tm_ledger_give(ledger);
    return removed;
}

int tm_stats_gc(const char *dir, const char *ledger_path)
{
    bool missing;
    char why[4200];
    tm_ledger_held *ledger = tm_ledger_map(ledger_path, &missing, why, sizeof why);
    if (!ledger && (ledger_path || !missing))
        fprintf(stderr, "tiermem-stat: the ledger %s; regions are removed without its lock\n", why);
    if (ledger && tm_ledger_take(ledger)) {
        tm_ledger_reclaim(ledger, ledger_path);
        tm_ledger_give(ledger);
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tiermem-stat: %s: %s\n", dir, strerror(errno));
        if (ledger)
            tm_ledger_unmap(ledger);
        return 0;
    }
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        pid_t pid = tm_stats_pid_of_name(e->d_name);
        if (!pid)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        bool removed_one =
            fd >= 0 && leftover(fd, path, pid, &st) && remove_checked(dirfd(d), e->d_name, pid, &st, ledger);
        if (fd >= 0)
            close(fd);
        if (removed_one) {
            printf("tiermem-stat: removed %s (process %d is gone)\n", path, (int)pid);
            removed++;
        }
    }
    closedir(d);
    if (ledger)
        tm_ledger_unmap(ledger);
    return removed;
}
