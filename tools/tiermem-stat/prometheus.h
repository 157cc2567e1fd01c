/* prometheus.h — tiermem-stat's Prometheus exporter: the stats region in the text
 * exposition format, printed once (--prometheus) or served at /metrics (--serve ADDR),
 * so one dashboard shows an engine's own metrics beside where its memory is. */
#ifndef TM_STATS_PROMETHEUS_H
#define TM_STATS_PROMETHEUS_H

#include <stdio.h>

#include "tools/tiermem-stat/stats_read.h"

/* Writes the snapshot as Prometheus text (version 0.0.4). */
void tm_stats_print_prometheus(const tm_stats_snapshot *s, FILE *out);

/* Serves GET /metrics on ADDR ("HOST:PORT", "PORT" or ":PORT"; the host defaults to
 * 127.0.0.1), reading the region at `path` for each request, until SIGTERM or SIGINT.
 * Returns the exit status: 0, 1 for a bad ADDR or a port it cannot listen on. */
int tm_stats_serve(const char *addr, const char *path);

#endif /* TM_STATS_PROMETHEUS_H */
