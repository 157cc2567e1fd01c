/* prometheus.h — tiermem-stat's Prometheus exporter: stats regions in the text exposition
 * format (prom_text.h), printed once (--prometheus) or served (--serve ADDR), so one
 * dashboard shows an engine's own metrics beside where its memory is.
 *
 * Every sample carries the process's pid, device and uuid labels (tier figures a tier
 * and node label too), so one exporter per node serves every process under libtiermem. */
#ifndef TM_STATS_PROMETHEUS_H
#define TM_STATS_PROMETHEUS_H

#include <stdio.h>

#include "tools/tiermem-stat/list.h"
#include "tools/tiermem-stat/prom_text.h"

/* The families of `count` processes, each family once with the samples of all. */
void tm_stats_prometheus(tm_prom *p, const tm_stats_live *live, int count);

/* The same, printed to `out`; returns 0, or -1 when memory ran out or writing failed. */
int tm_stats_print_prometheus(const tm_stats_live *live, int count, FILE *out);

/* Serves GET /metrics and /health on ADDR ("HOST:PORT", "PORT" or ":PORT"; the host
 * defaults to 127.0.0.1) until SIGTERM or SIGINT. /metrics holds every live process's
 * region at the time of the request (`path` NULL: tm_stats_read_live), or the region at `path`
 * (`pid` > 0: the default region of that pid, which must be its own). Idle connections
 * close after TM_STATS_SERVE_TIMEOUT_S; requests are served by a few threads waiting
 * with epoll, so a slow region delays only its own scrape; log lines about connections
 * are rate-limited. Returns the exit status: 0, 1 for a bad ADDR or a port it cannot
 * listen on. */
#define TM_STATS_SERVE_TIMEOUT_S 10
int tm_stats_serve(const char *addr, const char *path, pid_t pid);

#endif /* TM_STATS_PROMETHEUS_H */
