/* list.c — see list.h. Only regions whose process is alive and that read as that
 * process's own (tm_stats_read_pid) are listed; leftovers are --gc's business. */
#include "tools/tiermem-stat/list.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/units.h"
#include "tools/tiermem-stat/gc.h"
#include "tools/tiermem-stat/stats_read.h"

/* "12.0 GiB/70.0 GiB" for a present tier, "-" for an absent one. */
static const char *tier_usage(const tm_stats_tier *tier, char *buf, size_t len)
{
    if (!tier->present)
        return "-";
    char used[32], limit[32];
    snprintf(buf, len, "%s/%s", tm_format_size(tier->used, used, sizeof used),
             tm_format_size(tier->limit, limit, sizeof limit));
    return buf;
}

typedef struct listing {
    int listed;
} listing;

static void list_dir(int dir_fd, const char *dir, uid_t uid, void *arg)
{
    (void)dir;
    (void)uid;
    listing *l = arg;
    int fd_copy = dup(dir_fd); /* fdopendir takes the descriptor over */
    DIR *d = fd_copy >= 0 ? fdopendir(fd_copy) : NULL;
    if (!d) {
        if (fd_copy >= 0)
            close(fd_copy);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        pid_t pid = tm_stats_pid_of_name(e->d_name);
        if (!pid || (kill(pid, 0) != 0 && errno == ESRCH))
            continue;
        tm_stats_snapshot s;
        char why[512];
        if (tm_stats_read_pid(pid, &s, why, sizeof why) != 0)
            continue;
        if (l->listed++ == 0)
            printf("%8s  %6s  %-23s  %-23s  %-23s  %8s  %s\n", "PID", "DEVICE", "HBM USED/LIMIT",
                   "CXL USED/LIMIT", "DDR USED/LIMIT", "CHUNKED", "POLICY");
        char tiers[TM_STATS_TIERS][64];
        printf("%8d  %6d  %-23s  %-23s  %-23s  %8llu  %.16s\n", (int)pid, (int)s.header.device,
               tier_usage(&s.header.tier[0], tiers[0], sizeof tiers[0]),
               tier_usage(&s.header.tier[1], tiers[1], sizeof tiers[1]),
               tier_usage(&s.header.tier[2], tiers[2], sizeof tiers[2]),
               (unsigned long long)s.header.tiered_count, s.header.policy);
        tm_stats_snapshot_free(&s);
    }
    closedir(d);
}

int tm_stats_list(const char *root)
{
    listing l = { 0 };
    tm_stats_each_dir(root, list_dir, &l);
    if (!l.listed)
        printf("tiermem-stat: no live process under libtiermem.so (no readable region in %s/tiermem-<uid>)\n", root);
    return l.listed;
}
