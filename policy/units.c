/* units.c — parsing and printing byte sizes (see units.h). */
#include "policy/units.h"

#include <stdio.h>
#include <string.h>

static bool parse_digits(const char **cursor, uint64_t *value)
{
    const char *p = *cursor;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return false;
    }
    *cursor = p;
    *value = v;
    return true;
}

bool tm_parse_uint(const char *text, uint64_t max, uint64_t *value)
{
    uint64_t v;
    if (!text || !parse_digits(&text, &v) || *text != '\0' || v > max)
        return false;
    *value = v;
    return true;
}

bool tm_parse_size(const char *text, uint64_t *bytes)
{
    uint64_t v;
    if (!text || !parse_digits(&text, &v))
        return false;
    unsigned shift = 0;
    switch (*text) {
    case '\0': break;
    case 'K': case 'k': shift = 10; text++; break;
    case 'M': case 'm': shift = 20; text++; break;
    case 'G': case 'g': shift = 30; text++; break;
    case 'T': case 't': shift = 40; text++; break;
    default: return false;
    }
    if (*text != '\0')
        return false;
    if (shift && v > (UINT64_MAX >> shift))
        return false;
    *bytes = v << shift;
    return true;
}

bool tm_parse_duration(const char *text, uint64_t *ns)
{
    uint64_t v, scale;
    if (!text || !parse_digits(&text, &v))
        return false;
    if (strcmp(text, "ms") == 0)
        scale = 1000000ull;
    else if (strcmp(text, "s") == 0 || *text == '\0')
        scale = 1000000000ull;
    else if (strcmp(text, "m") == 0)
        scale = 60ull * 1000000000ull;
    else
        return false;
    if (v == 0 || __builtin_mul_overflow(v, scale, &v))
        return false;
    *ns = v;
    return true;
}

char *tm_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    unsigned u = 0;
    while (u < 6 && bytes >= ((uint64_t)1 << (10 * (u + 1))))
        u++;
    if (u == 0) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    } else {
        uint64_t scale = (uint64_t)1 << (10 * u);
        if (bytes % scale == 0)
            snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / scale), unit[u]);
        else
            snprintf(buf, len, "%.2f %s", (double)bytes / (double)scale, unit[u]);
    }
    return buf;
}
