/* list.c — see list.h. Only regions whose process is alive and that read as that
 * process's own (tm_stats_read_pid) are listed; leftovers are --gc's business. The
 * processes are found in /proc, and each one's region where the reader says it is. */
#include "tools/tiermem-stat/list.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/units.h"
#include "tools/tiermem-stat/stat_json.h"

void tm_stats_command(pid_t pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) {
        buf[0] = '\0';
        return;
    }
    buf[n] = '\0';
    if (buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
}

static int by_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* The pid a /proc entry names, or 0. */
static pid_t pid_of_proc_entry(const char *name)
{
    char *end;
    errno = 0;
    long pid = strtol(name, &end, 10);
    return !errno && end != name && !*end && pid > 0 && pid <= 0x3fffffff ? (pid_t)pid : 0;
}

int tm_stats_read_live(tm_stats_live **live)
{
    *live = NULL;
    /* every live process is asked for its default region (stats_read.h decides where that
     * is), so the listing follows wherever the regions live */
    DIR *d = opendir("/proc");
    if (!d) {
        fprintf(stderr, "tiermem-stat: /proc: %s\n", strerror(errno));
        return -1;
    }
    size_t n = 0, cap = 0;
    pid_t *pids = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        pid_t pid = pid_of_proc_entry(e->d_name);
        if (!pid)
            continue;
        if (n == cap) {
            size_t more = cap ? cap * 2 : 256;
            pid_t *grown = realloc(pids, more * sizeof *pids);
            if (!grown)
                break;
            pids = grown;
            cap = more;
        }
        pids[n++] = pid;
    }
    closedir(d);
    if (n)
        qsort(pids, n, sizeof *pids, by_pid);
    int count = 0;
    tm_stats_live *out = n ? calloc(n < TM_STATS_LIVE_MAX ? n : TM_STATS_LIVE_MAX, sizeof *out) : NULL;
    for (size_t i = 0; out && i < n && count < TM_STATS_LIVE_MAX; i++) {
        tm_stats_live *l = &out[count];
        char why[512];
        if (tm_stats_read_pid(pids[i], &l->snapshot, why, sizeof why) != 0)
            continue;
        l->pid = pids[i];
        tm_stats_command(pids[i], l->command, sizeof l->command);
        tm_stats_default_path(pids[i], l->path, sizeof l->path);
        count++;
    }
    free(pids);
    if (!count) {
        free(out);
        out = NULL;
    }
    *live = out;
    return count;
}

void tm_stats_live_free(tm_stats_live *live, int count)
{
    for (int i = 0; i < count; i++)
        tm_stats_snapshot_free(&live[i].snapshot);
    free(live);
}

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

int tm_stats_list(void)
{
    tm_stats_live *live;
    int count = tm_stats_read_live(&live);
    if (count < 0)
        return -1;
    if (!count) {
        printf("tiermem-stat: no live process under libtiermem.so (none has a region this user may read)\n");
        return 0;
    }
    printf("%8s  %6s  %-23s  %-23s  %-23s  %-15s  %10s  %8s  %s\n", "PID", "DEVICE", "HBM USED/LIMIT",
           "CXL USED/LIMIT", "DDR USED/LIMIT", "COMMAND", "MIGRATIONS", "CHUNKED", "POLICY");
    for (int i = 0; i < count; i++) {
        const tm_stats_header *h = &live[i].snapshot.header;
        char tiers[TM_STATS_TIERS][64];
        printf("%8d  %6d  %-23s  %-23s  %-23s  %-15.15s  %10llu  %8llu  %.16s\n", (int)live[i].pid, (int)h->device,
               tier_usage(&h->tier[0], tiers[0], sizeof tiers[0]), tier_usage(&h->tier[1], tiers[1], sizeof tiers[1]),
               tier_usage(&h->tier[2], tiers[2], sizeof tiers[2]), live[i].command[0] ? live[i].command : "-",
               (unsigned long long)h->migrations, (unsigned long long)h->tiered_count, h->policy);
    }
    tm_stats_live_free(live, count);
    return count;
}

int tm_stats_list_json(bool by_heat)
{
    tm_stats_live *live;
    int count = tm_stats_read_live(&live);
    if (count < 0)
        return -1;
    json_t *all = json_array();
    for (int i = 0; all && i < count; i++) {
        const tm_stats_snapshot *s = &live[i].snapshot;
        size_t *order = tm_heat_view_order_new(s->heat, s->record_count, by_heat);
        json_t *one = NULL;
        if (order) {
            one = tm_stats_json(s, live[i].path, live[i].command,
                                s->header.state == TM_STATS_EXITED ? "exited" : "running", order);
            free(order);
        }
        if (!one || json_array_append_new(all, one) != 0) {
            json_decref(all);
            all = NULL;
        }
    }
    tm_stats_live_free(live, count);
    if (!all) {
        fprintf(stderr, "tiermem-stat: out of memory\n");
        return -1;
    }
    int rc = tm_stats_json_write(all, stdout);
    json_decref(all);
    return rc;
}
