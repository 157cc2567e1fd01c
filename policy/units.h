/* units.h — byte sizes as people write them: "64M", "24G", "4096".
 *
 * Sizes are binary multiples (1K = 1024). Parsing is strict: one or more decimal digits,
 * then at most one suffix letter K, M, G or T (either case), nothing else: no sign, no
 * spaces, no fraction, no overflow past 2^64 - 1. */
#ifndef TM_POLICY_UNITS_H
#define TM_POLICY_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_KIB ((uint64_t)1 << 10)
#define TM_MIB ((uint64_t)1 << 20)
#define TM_GIB ((uint64_t)1 << 30)

/* Parses `text` into *bytes. Returns false (leaving *bytes alone) when it is not a size. */
bool tm_parse_size(const char *text, uint64_t *bytes);

/* Parses a duration: digits then `ms`, `s` or `m` (a bare number is seconds), into
 * nanoseconds; 0 is refused. */
bool tm_parse_duration(const char *text, uint64_t *ns);

/* Parses a plain non-negative decimal integer no larger than `max`. */
bool tm_parse_uint(const char *text, uint64_t max, uint64_t *value);

/* Writes `bytes` for people into buf: "512 B", "64 MiB", "1.50 GiB" (exact multiples
 * print without decimals). Returns buf. */
char *tm_format_size(uint64_t bytes, char *buf, size_t len);

static inline uint64_t tm_round_up(uint64_t value, uint64_t granule)
{
    return (value + granule - 1) / granule * granule;
}

#endif /* TM_POLICY_UNITS_H */
