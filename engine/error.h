/* error.h — how the engine reports a failure: one message written into the caller's
 * buffer, and -1, so a caller can `return tm_fail(err, errlen, "...", ...)`. */
#ifndef TM_ENGINE_ERROR_H
#define TM_ENGINE_ERROR_H

#include <stddef.h>

#define TM_MIB(bytes) ((double)(bytes) / 1048576.0)

__attribute__((format(printf, 3, 4))) int tm_fail(char *err, size_t errlen, const char *fmt, ...);

#endif /* TM_ENGINE_ERROR_H */
