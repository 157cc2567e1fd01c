/* error.c — see error.h. */
#include <stdarg.h>
#include <stdio.h>

#include "engine/error.h"

int tm_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
