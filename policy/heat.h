/* heat.h — access heat per 2 MiB chunk: how much of a chunk was touched, recently.
 *
 * Time is cut into intervals of 1/8 of the half-life (TIERMEM_HEAT_HALFLIFE). In each
 * interval a chunk scores the share of its bytes that were accessed (its bytes: those of
 * the allocation, so the tail chunk of an allocation, or a small allocation alone in a
 * chunk, is measured against what it holds), capped at 1 (reading
 * the whole chunk twice scores no more than reading it once), and its heat is the
 * exponentially decayed average of those scores: 1.0 means "the whole chunk was touched
 * in every recent interval", 0.5 "half of it", or "all of it in every other interval".
 * The cap is what keeps a burst from faking heat: one interval of frantic access adds at
 * most 1/12 to a chunk, while a chunk touched every interval stays near 1.
 *
 * Reads and writes are also kept as decayed byte counts of their own, so a policy can
 * tell memory that is only read (weights) from memory that is written (KV cache).
 *
 * Classes (hot, warm, cold) come from rank within the process, never from absolute
 * values: the hottest third of what is ranked is hot, the coldest third cold. Values within
 * 10 % of each other (of the first of their run, going down) are one group and share the
 * rank of its first: dense weights all read every step are all hot, however many there
 * are. Chunks with no heat at all are cold whatever their rank.
 *
 * Plain C, no locking: the caller serialises updates of one chunk. */
#ifndef TM_POLICY_HEAT_H
#define TM_POLICY_HEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_HEAT_TICKS_PER_HALFLIFE 8
#define TM_HEAT_DEFAULT_HALFLIFE_NS (10ull * 1000000000ull) /* 10 s */
#define TM_HEAT_SAME_SHARE 0.9 /* ranking: values within 10 % are one group */

/* Decay per interval and what one fully touched interval adds. */
typedef struct tm_heat_clock {
    uint64_t tick_ns;            /* interval length: half-life / 8 */
} tm_heat_clock;

typedef struct tm_heat_chunk {
    uint64_t tick;               /* the interval `pending` belongs to */
    double heat;                 /* decayed score of the intervals before `tick` */
    double pending;              /* bytes accessed in interval `tick` so far */
    double reads;                /* decayed bytes read, valued at `tick` */
    double writes;               /* decayed bytes written, valued at `tick` */
} tm_heat_chunk;

typedef enum tm_heat_class {
    TM_HEAT_COLD = 0,
    TM_HEAT_WARM = 1,
    TM_HEAT_HOT = 2,
} tm_heat_class;

void tm_heat_clock_init(tm_heat_clock *clock, uint64_t halflife_ns);

/* The interval a CLOCK_MONOTONIC time falls in. */
static inline uint64_t tm_heat_tick(const tm_heat_clock *clock, uint64_t now_ns)
{
    return now_ns / clock->tick_ns;
}

/* 2^(-ticks / 8): what is left after `ticks` intervals. */
double tm_heat_decay(uint64_t ticks);

/* Bytes of chunk `c` that belong to an allocation of `extent` bytes. */
static inline uint64_t tm_heat_chunk_bytes(uint64_t extent, uint64_t chunk_size, size_t c)
{
    uint64_t start = (uint64_t)c * chunk_size;
    return extent <= start ? 1 : extent - start < chunk_size ? extent - start : chunk_size;
}

/* Credits `bytes` read or written to one chunk holding `chunk_bytes` bytes of its
 * allocation, in interval `tick`. An update from an earlier interval than the chunk's own
 * counts in the chunk's interval. Pass the same chunk_bytes every time. */
void tm_heat_touch(tm_heat_chunk *chunk, uint64_t tick, uint64_t chunk_bytes, double bytes, bool write);

/* The chunk's heat, reads and writes as of interval `tick` (never changes the chunk). */
double tm_heat_value(const tm_heat_chunk *chunk, uint64_t tick, uint64_t chunk_bytes);
double tm_heat_reads(const tm_heat_chunk *chunk, uint64_t tick);
double tm_heat_writes(const tm_heat_chunk *chunk, uint64_t tick);

/* Spreads `bytes` over the chunks of an allocation of `extent` bytes that the byte range
 * [offset, offset + length) overlaps, in proportion to the overlap. `count` chunks of
 * `chunk_size` bytes; the part of the range past the last chunk is dropped. */
void tm_heat_credit_range(tm_heat_chunk *chunks, size_t count, uint64_t chunk_size, uint64_t extent, uint64_t offset,
                          uint64_t length, double bytes, bool write, uint64_t tick);

/* Classes of `count` heat values by rank: out[i] for heat[i]. Equal values get the same
 * class. False when memory for the ranking ran out (out is then all cold). */
bool tm_heat_classify(const double *heat, size_t count, tm_heat_class *out);

/* "hot", "warm", "cold". */
const char *tm_heat_class_name(tm_heat_class cls);

#endif /* TM_POLICY_HEAT_H */
