/* prom_text.h — the Prometheus text exposition format (version 0.0.4), written into a
 * growing buffer. The one writer of both exporters: tiermem-stat (--prometheus, --serve)
 * and tiermem-llm serve's /metrics.
 *
 * A family is announced once (HELP and TYPE) and its samples follow it; label values are
 * escaped (backslash, quote, newline) and counts are printed as exact integers. A failed
 * allocation is remembered and reported by tm_prom_finish. */
#ifndef TM_PROM_TEXT_H
#define TM_PROM_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tm_prom {
    char *buf;
    size_t len, cap;
    int failed;
} tm_prom;

typedef struct tm_prom_label {
    const char *name;         /* [a-zA-Z_][a-zA-Z0-9_]*, as written in the code */
    const char *value;        /* any text: escaped when written */
} tm_prom_label;

/* Up to this many labels per sample. */
#define TM_PROM_MAX_LABELS 12

/* "# HELP name help" and "# TYPE name type" (counter, gauge, histogram). */
void tm_prom_family(tm_prom *p, const char *name, const char *type, const char *help);

/* One sample: name{labels} value. `labels` holds `count` entries (NULL when 0). */
void tm_prom_u64(tm_prom *p, const char *name, const tm_prom_label *labels, size_t count, uint64_t value);
void tm_prom_i64(tm_prom *p, const char *name, const tm_prom_label *labels, size_t count, int64_t value);
/* Not-a-number and infinities are written as Prometheus spells them (NaN, +Inf, -Inf). */
void tm_prom_double(tm_prom *p, const char *name, const tm_prom_label *labels, size_t count, double value);

/* A histogram family: cumulative buckets at the `nbounds` upper bounds, the +Inf bucket
 * (`counts` has nbounds + 1 entries, not cumulative), _sum and _count. */
void tm_prom_histogram(tm_prom *p, const char *name, const char *help, const double *bounds, size_t nbounds,
                       const uint64_t *counts, double sum);

/* The text written (NUL-terminated, malloc'd, the caller frees it; *len its length when
 * `len` is not NULL), or NULL when memory ran out. Leaves `p` empty. */
char *tm_prom_finish(tm_prom *p, size_t *len);

#endif /* TM_PROM_TEXT_H */
