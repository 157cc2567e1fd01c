/* proc_start.c — see proc_start.h. */
#include "preload/base/proc_start.h"
#include "preload/base/libc_real.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

uint64_t tm_proc_start_time(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = tm_libc_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    ssize_t n = tm_libc_read(fd, text, sizeof text - 1);
    tm_libc_close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    /* the command name may hold spaces and parentheses: the fields follow its last ')' */
    char *p = strrchr(text, ')');
    if (!p || !p[1])
        return 0;
    unsigned long long start = 0;
    char state;
    /* fields 3 (state) to 22 (starttime) */
    if (sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &state,
               &start) != 2)
        return 0;
    return state == 'Z' || state == 'X' ? 0 : start; /* a zombie holds nothing any more */
}

bool tm_proc_alive(pid_t pid, uint64_t start_time)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return false;
    uint64_t start = tm_proc_start_time(pid);
    return start != 0 && (start_time == 0 || start == start_time);
}
