/* prom_text.c — see prom_text.h. */
#include "tools/tiermem-stat/prom_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(tm_prom *p, size_t more)
{
    if (p->failed)
        return 0;
    if (p->len + more < p->cap)
        return 1;
    size_t cap = p->cap ? p->cap : 4096;
    while (cap <= p->len + more)
        cap *= 2;
    char *b = realloc(p->buf, cap);
    if (!b) {
        p->failed = 1;
        return 0;
    }
    p->buf = b;
    p->cap = cap;
    return 1;
}

static void put_bytes(tm_prom *p, const char *s, size_t n)
{
    if (!reserve(p, n + 1))
        return;
    memcpy(p->buf + p->len, s, n);
    p->len += n;
    p->buf[p->len] = '\0';
}

static void put(tm_prom *p, const char *s)
{
    put_bytes(p, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void putf(tm_prom *p, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        p->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        put_bytes(p, small, (size_t)n);
        return;
    }
    if (!reserve(p, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf(p->buf + p->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    p->len += (size_t)n;
}

/* HELP text escapes backslash and newline; a label value escapes the quote too. */
static void put_escaped(tm_prom *p, const char *s, int quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(p, "\\\\");
        else if (*s == '\n')
            put(p, "\\n");
        else if (quote && *s == '"')
            put(p, "\\\"");
        else
            put_bytes(p, s, 1);
    }
}

void tm_prom_family(tm_prom *p, const char *name, const char *type, const char *help)
{
    putf(p, "# HELP %s ", name);
    put_escaped(p, help, 0);
    putf(p, "\n# TYPE %s %s\n", name, type);
}

static void put_series(tm_prom *p, const char *name, const tm_prom_label *labels, size_t count)
{
    put(p, name);
    if (!count)
        return;
    put(p, "{");
    for (size_t i = 0; i < count; i++) {
        putf(p, "%s%s=\"", i ? "," : "", labels[i].name);
        put_escaped(p, labels[i].value ? labels[i].value : "", 1);
        put(p, "\"");
    }
    put(p, "}");
}

void tm_prom_u64(tm_prom *p, const char *name, const tm_prom_label *labels, size_t count, uint64_t value)
{
    put_series(p, name, labels, count);
    putf(p, " %llu\n", (unsigned long long)value);
}

void tm_prom_i64(tm_prom *p, const char *name, const tm_prom_label *labels, size_t count, int64_t value)
{
    put_series(p, name, labels, count);
    putf(p, " %lld\n", (long long)value);
}

static void put_double(tm_prom *p, double value)
{
    if (isnan(value))
        put(p, "NaN");
    else if (isinf(value))
        put(p, value > 0 ? "+Inf" : "-Inf");
    else
        putf(p, "%.17g", value);
}

void tm_prom_double(tm_prom *p, const char *name, const tm_prom_label *labels, size_t count, double value)
{
    put_series(p, name, labels, count);
    put(p, " ");
    put_double(p, value);
    put(p, "\n");
}

void tm_prom_histogram(tm_prom *p, const char *name, const char *help, const double *bounds, size_t nbounds,
                       const uint64_t *counts, double sum)
{
    tm_prom_family(p, name, "histogram", help);
    char series[160], le[32];
    uint64_t cumulative = 0;
    snprintf(series, sizeof series, "%s_bucket", name);
    for (size_t b = 0; b <= nbounds; b++) {
        cumulative += counts[b];
        if (b < nbounds)
            snprintf(le, sizeof le, "%g", bounds[b]);
        else
            snprintf(le, sizeof le, "+Inf");
        tm_prom_u64(p, series, &(tm_prom_label){"le", le}, 1, cumulative);
    }
    snprintf(series, sizeof series, "%s_sum", name);
    tm_prom_double(p, series, NULL, 0, sum);
    snprintf(series, sizeof series, "%s_count", name);
    tm_prom_u64(p, series, NULL, 0, cumulative);
}

char *tm_prom_finish(tm_prom *p, size_t *len)
{
    char *text = p->failed ? NULL : p->buf;
    if (!text && !p->failed)
        text = calloc(1, 1); /* nothing written: an empty text */
    if (p->failed)
        free(p->buf);
    if (len)
        *len = text ? p->len : 0;
    *p = (tm_prom){0};
    return text;
}
