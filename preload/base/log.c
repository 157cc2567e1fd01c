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
 * (and without blocking on a FIFO), and must be a regular file of this user with no other
 * name (a hard link would let lines land in a file of someone else's choosing). */
static const char *refuse_log_file(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "not a regular file";
    if (st.st_uid != geteuid())
        return "owned by another user";
    if (st.st_nlink > 1)
        return "it has other names (hard links)";
    return NULL;
}

bool tm_log_open(const tm_config *config)
{
    tm_log_threshold = config->log_level;
    if (!config->log_file[0])
        return true;
    int fd = tm_libc_open(config->log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                  0600);
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

size_t tm_log_escape(const char *text, char *out, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = 0;
    if (!size)
        return 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        char one[4] = { (char)*c };
        size_t n = 1;
        if (*c == '\n' || *c == '\r' || *c == '\t') {
            one[0] = '\\';
            one[1] = *c == '\n' ? 'n' : *c == '\r' ? 'r' : 't';
            n = 2;
        } else if (*c < 0x20 || *c == 0x7f) {
            one[0] = '\\';
            one[1] = 'x';
            one[2] = hex[*c >> 4];
            one[3] = hex[*c & 15];
            n = 4;
        }
        if (len + n >= size)
            break;
        memcpy(out + len, one, n);
        len += n;
    }
    out[len] = '\0';
    return len;
}

void tm_log(tm_log_level level, const char *fmt, ...)
{
    if (!tm_log_enabled(level))
        return;
    static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };
    char body[1024], line[1024];
    va_list ap;
    va_start(ap, fmt);
    int formatted = vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (formatted < 0)
        body[0] = '\0';
    int len = snprintf(line, sizeof line, "tiermem: %s", prefix[level]);
    /* names from model files and tensors come in here: none can start a line of its own */
    len += (int)tm_log_escape(body, line + len, sizeof line - (size_t)len - 1);
    line[len++] = '\n';
    int saved = errno;
    ssize_t ignored = write(log_fd, line, (size_t)len);
    (void)ignored;
    errno = saved;
}
