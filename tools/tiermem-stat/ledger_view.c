/* ledger_view.c — see ledger_view.h. The file is trusted for nothing: it is read (never
 * mapped) into a private copy, as the stats region is, and refused in one line when it is
 * not a regular ledger file of this version. */
#include "tools/tiermem-stat/ledger_view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/units.h"
#include "preload/region/ledger_file.h"
#include "preload/region/ledger_layout.h"
#include "preload/base/proc_start.h"

static int refuse(const char *path, const char *why)
{
    fprintf(stderr, "tiermem-stat: %s: %s\n", path, why);
    return 2;
}

static int read_ledger(const char *path, tm_ledger_file *out)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return refuse(path, errno == ELOOP ? "a symbolic link, not read" : strerror(errno));
    bool damaged;
    const char *why = tm_ledger_file_refusal(fd, false, 0, true);
    if (!why)
        why = tm_ledger_file_read(fd, out, &damaged);
    close(fd);
    return why ? refuse(path, why) : 0;
}

int tm_ledger_print(const char *path)
{
    char default_path[64];
    if (!path) {
        snprintf(default_path, sizeof default_path, "/dev/shm/tiermem-ledger.u%u", (unsigned)geteuid());
        path = default_path;
    }
    tm_ledger_file *ledger = malloc(sizeof *ledger);
    if (!ledger)
        return refuse(path, "out of memory");
    int status = read_ledger(path, ledger);
    if (status) {
        free(ledger);
        return status;
    }
    bool alive[TM_LEDGER_PROCESSES] = { false };
    int processes = 0;
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        const tm_ledger_entry *e = &ledger->entry[i];
        alive[i] = e->pid > 0 && tm_proc_alive(e->pid, e->start_time);
        processes += e->pid > 0;
    }
    printf("ledger %s: %d processes\n", path, processes);
    printf("%-8s %14s %14s\n", "node", "held", "limit");
    for (int n = 0; n < TM_LEDGER_NODES; n++) {
        if (ledger->node[n] < 0)
            continue;
        uint64_t held = 0, limit = 0;
        for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
            const tm_ledger_entry *e = &ledger->entry[i];
            if (!alive[i])
                continue;
            held += e->bytes[n];
            if (e->limit[n] && (!limit || e->limit[n] < limit))
                limit = e->limit[n];
        }
        char h[32], l[32];
        printf("%-8d %14s %14s\n", (int)ledger->node[n], tm_format_size(held, h, sizeof h),
               limit ? tm_format_size(limit, l, sizeof l) : "-");
    }
    printf("%8s  %-5s", "PID", "STATE");
    for (int n = 0; n < TM_LEDGER_NODES; n++)
        if (ledger->node[n] >= 0)
            printf(" %13s%-2d", "node ", (int)ledger->node[n]);
    printf("  BUDGET\n");
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        const tm_ledger_entry *e = &ledger->entry[i];
        if (e->pid <= 0)
            continue;
        printf("%8d  %-5s", (int)e->pid, alive[i] ? "live" : "gone");
        for (int n = 0; n < TM_LEDGER_NODES; n++) {
            char h[32];
            if (ledger->node[n] >= 0)
                printf(" %15s", tm_format_size(e->bytes[n], h, sizeof h));
        }
        /* whose budget it counts against: a group's, its own, or its server's */
        if (e->family == 0)
            printf("  group\n");
        else if (e->family == e->pid)
            printf("  own\n");
        else
            printf("  process %d's\n", (int)e->family);
    }
    free(ledger);
    return 0;
}
