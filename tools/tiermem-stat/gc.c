/* gc.c — see gc.h. A region is removed only when everything says it is a leftover: the
 * name is tiermem.<pid> in a region directory tiermem-<uid> that is that user's own (0700),
 * the file (opened without following a symlink) a regular one of that user, its header a valid region of that same pid, and no process has that pid.
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

#include "preload/region/region_path.h"
#include "tools/tiermem-stat/ledger_lock.h"
#include "tools/tiermem-stat/stats_read.h"

pid_t tm_stats_pid_of_name(const char *name)
{
    return tm_region_pid(name);
}

int tm_stats_each_dir(const char *root, void (*visit)(int dir_fd, const char *dir, uid_t uid, void *arg), void *arg)
{
    DIR *d = opendir(root);
    if (!d) {
        fprintf(stderr, "tiermem-stat: %s: %s\n", root, strerror(errno));
        return 0;
    }
    int visited = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long uid = tm_region_dir_uid(e->d_name);
        if (uid < 0 || (geteuid() != 0 && (uid_t)uid != geteuid()))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        const char *refusal = fd < 0 ? "not a directory" : fstat(fd, &st) != 0 ? strerror(errno)
                                                                        : tm_region_dir_refusal(&st, (uid_t)uid);
        if (refusal)
            fprintf(stderr, "tiermem-stat: %s is %s (uid %ld's must be its own, mode 0700): not used\n", dir, refusal,
                    uid);
        else {
            visit(fd, dir, (uid_t)uid, arg);
            visited++;
        }
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    return visited;
}

static bool gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* The region open as `fd` is a leftover of process `pid`, in the directory of `uid`; *st its
 * file. */
static bool leftover(int fd, const char *path, pid_t pid, uid_t uid, struct stat *st)
{
    if (fstat(fd, st) != 0 || tm_region_file_refusal(st, uid) || !gone(pid))
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

typedef struct sweep {
    tm_ledger_held *ledger;
    int removed;
} sweep;

/* The leftovers in one user's directory. */
static void sweep_dir(int dir_fd, const char *dir, uid_t uid, void *arg)
{
    sweep *w = arg;
    int fd_copy = dup(dir_fd); /* fdopendir takes the descriptor over */
    DIR *d = fd_copy >= 0 ? fdopendir(fd_copy) : NULL;
    if (!d) {
        if (fd_copy >= 0)
            close(fd_copy);
        fprintf(stderr, "tiermem-stat: %s: %s\n", dir, strerror(errno));
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        pid_t pid = tm_region_pid(e->d_name);
        if (!pid)
            continue;
        char path[4352];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        bool removed_one = fd >= 0 && leftover(fd, path, pid, uid, &st) &&
                           remove_checked(dirfd(d), e->d_name, pid, &st, w->ledger);
        if (fd >= 0)
            close(fd);
        if (removed_one) {
            printf("tiermem-stat: removed %s (process %d is gone)\n", path, (int)pid);
            w->removed++;
        }
    }
    closedir(d);
}

int tm_stats_gc(const char *root, const char *ledger_path)
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
    sweep w = { .ledger = ledger };
    tm_stats_each_dir(root, sweep_dir, &w);
    if (ledger)
        tm_ledger_unmap(ledger);
    return w.removed;
}
