/* proc_start.c — see proc_start.h. */
#include "preload/base/proc_start.h"
#include "preload/base/libc_real.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The fields of /proc/PID/stat from the third (state) on, in `text`; NULL when the
 * process is gone. */
static const char *stat_fields(pid_t pid, char *text, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = tm_libc_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    ssize_t n = tm_libc_read(fd, text, size - 1);
    tm_libc_close(fd);
    if (n <= 0)
        return NULL;
    text[n] = '\0';
    /* the command name may hold spaces and parentheses: the fields follow its last ')' */
    char *p = strrchr(text, ')');
    return p && p[1] ? p + 2 : NULL;
}

uint64_t tm_proc_start_time(pid_t pid)
{
    char text[1024];
    const char *fields = stat_fields(pid, text, sizeof text);
    unsigned long long start = 0;
    char state;
    /* fields 3 (state) to 22 (starttime) */
    if (!fields || sscanf(fields, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                          &state, &start) != 2)
        return 0;
    return state == 'Z' || state == 'X' ? 0 : start; /* a zombie holds nothing any more */
}

pid_t tm_proc_parent(pid_t pid)
{
    char text[1024];
    const char *fields = stat_fields(pid, text, sizeof text);
    int parent = 0;
    return fields && sscanf(fields, "%*c %d", &parent) == 1 ? (pid_t)parent : 0;
}

bool tm_proc_alive(pid_t pid, uint64_t start_time)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return false;
    uint64_t start = tm_proc_start_time(pid);
    return start != 0 && (start_time == 0 || start == start_time);
}
