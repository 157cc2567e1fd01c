/* stat_json.h — a stats region as JSON (tiermem-stat --json), built with jansson: every
 * string escaped, a number that is not finite written as null. */
#ifndef TM_STATS_JSON_H
#define TM_STATS_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/tiermem-stat/stats_read.h"

/* The process's object: its settings, tiers, devices, counters, allocations (in `order`,
 * with the heat of every chunk) and calls. `path` names the region, `command` the
 * process (NULL: unknown), `state` what state_name says. NULL when memory ran out. */
json_t *tm_stats_json(const tm_stats_snapshot *s, const char *path, const char *command, const char *state,
                      const size_t *order);

/* Writes `doc` (an object, or an array of them) with one tier, device and allocation
 * to a line, so that line tools can pick one out; returns 0, or -1 when writing failed. */
int tm_stats_json_write(const json_t *doc, FILE *out);

/* What the table shows too: how an allocation was asked for ("cuMemAlloc"...), and the
 * nanoseconds since the last rebalance pass (-1: none yet, or the process is gone, whose
 * monotonic clock means nothing then). */
const char *tm_stats_path_name(uint32_t path);
long long tm_stats_since_rebalance_ns(const tm_stats_header *h);
/* A device's UUID as nvidia-smi prints it ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"),
 * "" when the region holds none. */
void tm_stats_uuid_text(const uint8_t uuid[16], char *buf, size_t len);

#endif /* TM_STATS_JSON_H */
