/* load_progress.c — the loader's progress line (see load_internal.h). */
#include "engine/load_internal.h"

#include <string.h>

#define PROGRESS_AFTER 1.0      /* seconds of loading before a line is worth drawing */
#define PROGRESS_EVERY 0.1      /* seconds between redraws */
#define PROGRESS_WIDTH 30       /* characters of the bar */

void tm_load_progress_format(char *out, size_t cap, int64_t done, int64_t total, double seconds, int width)
{
    if (width < 1) width = 1;
    if (width > 200) width = 200;
    if (done > total) done = total;
    if (done < 0) done = 0;
    double frac = total > 0 ? (double)done / (double)total : 1.0, gib = 1024.0 * 1024.0 * 1024.0;
    int filled = (int)(frac * width);
    char bar[201];
    memset(bar, '#', (size_t)filled);
    memset(bar + filled, ' ', (size_t)(width - filled));
    bar[width] = 0;
    snprintf(out, cap, "loading %3d%% [%s] %.1f/%.1f GiB %5.0f MiB/s", (int)(frac * 100), bar, done / gib,
             total / gib, seconds > 0 ? done / seconds / (1024.0 * 1024.0) : 0.0);
}

void tm_load_progress_init(load_progress *p, FILE *out, bool tty, int64_t total, double now)
{
    *p = (load_progress){.out = out, .tty = tty, .total = total, .start = now};
}

void tm_load_progress_update(load_progress *p, int64_t done, double now)
{
    if (!p->tty || now - p->start < PROGRESS_AFTER || (now - p->last < PROGRESS_EVERY && done < p->total)) return;
    char line[320];
    tm_load_progress_format(line, sizeof line, done, p->total, now - p->start, PROGRESS_WIDTH);
    fprintf(p->out, "\r%s", line);
    fflush(p->out);
    p->last = now;
    p->drawn = true;
}

void tm_load_progress_end(load_progress *p)
{
    if (p->drawn) fputc('\n', p->out);
}
