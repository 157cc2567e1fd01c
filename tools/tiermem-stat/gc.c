/* gc.c — see gc.h. A region is removed only when everything says it is a leftover: the
 * name is tiermem.<pid>, the file a regular one of this user, its header a valid region
 * of that same pid, and no process has that pid. */
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

#include "tools/tiermem-stat/stats_read.h"

pid_t tm_stats_pid_of_name(const char *name)
{
    if (strncmp(name, "tiermem.", 8) != 0 || name[8] < '1' || name[8] > '9')
        return 0;
    char *end;
    long pid = strtol(name + 8, &end, 10);
    return *end == '\0' && pid > 0 && pid <= 0x7fffffff ? (pid_t)pid : 0;
}

static int leftover(int dir_fd, const char *path, const char *name, pid_t pid)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return 0;
    if (geteuid() != 0 && st.st_uid != geteuid())
        return 0;
    if (kill(pid, 0) == 0 || errno != ESRCH)
        return 0;
    tm_stats_snapshot snapshot;
    char why[512];
    if (tm_stats_read(path, &snapshot, why, sizeof why) != 0)
        return 0;
    int match = snapshot.header.pid == (int32_t)pid;
    tm_stats_snapshot_free(&snapshot);
    return match;
}

int tm_stats_gc(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tiermem-stat: %s: %s\n", dir, strerror(errno));
        return 0;
    }
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        pid_t pid = tm_stats_pid_of_name(e->d_name);
        char path[4096];
        if (!pid)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!leftover(dirfd(d), path, e->d_name, pid))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
            printf("tiermem-stat: removed %s (process %d is gone)\n", path, (int)pid);
            removed++;
        }
    }
    closedir(d);
    return removed;
}
