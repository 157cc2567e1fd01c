/* log.c — see log.h. */
#include "preload/base/log.h"
#include "preload/base/libc_real.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int log_fd = STDERR_FILENO;
tm_log_level tm_log_threshold = TM_LOG_WARN;

/* Why the log file must not be used, or NULL: it is opened without following a symlink
 * (and without blocking on a FIFO), and must be a regular file of this user. */
static const char *refuse_log_file(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "not a regular file";
    if (st.st_uid != geteuid())
        return "owned by another user";
    return NULL;
}

bool tm_log_open(const tm_config *config)
{
    tm_log_threshold = config->log_level;
    if (!config->log_file[0])
        return true;
    int fd = tm_libc_open(config->log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                  0644);
    const char *why = fd < 0 ? (errno == ELOOP ? "a symbolic link" : strerror(errno)) : refuse_log_file(fd);
    if (why) {
        if (fd >= 0)
            tm_libc_close(fd);
        char shown[96];
        tm_printable(config->log_file, shown, sizeof shown);
        dprintf(STDERR_FILENO, "tiermem: TIERMEM_LOG_FILE='%s' cannot be opened (%s); tiering is "
                               "disabled, every call passes through to the driver\n",
                shown, why);
        return false;
    }
    log_fd = fd;
    return true;
}

void tm_log(tm_log_level level, const char *fmt, ...)
{
    if (!tm_log_enabled(level))
        return;
    static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };
    char line[1024];
    int len = snprintf(line, sizeof line, "tiermem: %s", prefix[level]);
    va_list ap;
    va_start(ap, fmt);
    int body = vsnprintf(line + len, sizeof line - (size_t)len - 1, fmt, ap);
    va_end(ap);
    if (body < 0)
        body = 0;
    len += body;
    if (len > (int)sizeof line - 2)
        len = (int)sizeof line - 2;
    line[len++] = '\n';
    int saved = errno;
    ssize_t ignored = write(log_fd, line, (size_t)len);
    (void)ignored;
    errno = saved;
}
