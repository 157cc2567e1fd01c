/* log.h — the interposer's messages: one line each, "tiermem: ...", to standard error or
 * TIERMEM_LOG_FILE, filtered by TIERMEM_LOG. Written with one write(2) per line, so lines
 * from several threads never interleave, and never through stdio or malloc. */
#ifndef TM_PRELOAD_LOG_H
#define TM_PRELOAD_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/config.h"

/* Opens the log file of the configuration (if any). False when it cannot be opened: the
 * reason has been written to standard error. */
bool tm_log_open(const tm_config *config);

/* The most detailed level logged (TIERMEM_LOG); set once, by tm_log_open. */
extern tm_log_level tm_log_threshold;

static inline bool tm_log_enabled(tm_log_level level)
{
    return level <= tm_log_threshold;
}

/* Writes one line. Control characters in what the format makes (a newline in a tensor's
 * name, say) are escaped by tm_log_escape, so no argument can forge a line. */
void tm_log(tm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `text` with newlines, tabs and other control characters written as \n, \t, \xHH, cut
 * to fit `size` bytes with the terminator; returns the length written. */
size_t tm_log_escape(const char *text, char *out, size_t size);

/* A line below the threshold costs one comparison: its arguments are not even evaluated. */
#define tm_log_at(level, ...) (tm_log_enabled(level) ? tm_log(level, __VA_ARGS__) : (void)0)
#define tm_error(...) tm_log_at(TM_LOG_ERROR, __VA_ARGS__)
#define tm_warn(...)  tm_log_at(TM_LOG_WARN, __VA_ARGS__)
#define tm_info(...)  tm_log_at(TM_LOG_INFO, __VA_ARGS__)
#define tm_debug(...) tm_log_at(TM_LOG_DEBUG, __VA_ARGS__)

/* Logs only the first time this line is reached. */
#define tm_log_once(level, ...)                                              \
    do {                                                                     \
        static int tm_logged_;                                               \
        if (!__atomic_exchange_n(&tm_logged_, 1, __ATOMIC_RELAXED))          \
            tm_log(level, __VA_ARGS__);                                      \
    } while (0)

#endif /* TM_PRELOAD_LOG_H */
