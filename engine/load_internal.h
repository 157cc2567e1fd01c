/* load_internal.h — the parts of the weight loader shared by its files (see load.h). */
#ifndef TM_ENGINE_LOAD_INTERNAL_H
#define TM_ENGINE_LOAD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/load.h"

/* Reads into staging slots. The stream queues reads, flushes them, then waits for one
 * at a time; completions may come in any order. */
typedef struct load_reader load_reader;
struct load_reader {
    /* queues a read of len bytes at file offset `offset` into buf, staging slot `slot` */
    int (*submit)(load_reader *r, int slot, void *buf, int64_t offset, size_t len);
    /* hands the queued reads to the kernel: 0 or -errno */
    int (*flush)(load_reader *r);
    /* one finished read: its slot and its result (bytes, or -errno) */
    int (*wait)(load_reader *r, int *slot, int64_t *result);
    void (*close)(load_reader *r);
    bool seen_by_libc;      /* reads go through the C library's pread (an interposer sees them) */
};

/* io_uring on `fd`, `slots` reads in flight, the staging buffers registered when the
 * kernel takes them. NULL with why[] saying what refused it. */
load_reader *load_uring_open(int fd, void *staging, size_t slot_bytes, int slots, char *why, size_t whylen);
/* pread on `fd`, one read at a time. */
load_reader *load_pread_open(int fd, int slots);
/* pread until len bytes or the end of the file: the bytes read, or -errno. */
int64_t tm_load_pread_full(int fd, void *buf, size_t len, int64_t offset);

typedef struct load_stream_options {
    const char *path;
    bool uring;             /* else pread */
    bool fall_back;         /* uring refused: say why in one line and use pread (else fail) */
    bool progress;
    int slots;              /* staging buffers; 0: LOAD_SLOTS */
    int64_t piece_bytes;    /* tensor bytes per read; 0: LOAD_PIECE_BYTES */
} load_stream_options;

int tm_load_stream(const tm_driver *drv, const gguf_file *f, const tm_load_item *items, int64_t n,
                   const load_stream_options *opt, tm_load_result *res, char *err, size_t errlen);

/* A norm's f16/bf16 bytes as a malloc'd f32 vector (NULL when out of memory). */
float *tm_load_widen(const tm_load_item *it, const void *raw);

/* The progress line: drawn on `out` only when it is a terminal, once loading has taken a
 * second, then about ten times a second; ended with a newline if it was drawn. */
typedef struct load_progress {
    FILE *out;
    bool tty, drawn;
    int64_t total;
    double start, last;     /* tm_load_now() seconds */
} load_progress;

void tm_load_progress_init(load_progress *p, FILE *out, bool tty, int64_t total, double now);
void tm_load_progress_update(load_progress *p, int64_t done, double now);
void tm_load_progress_end(load_progress *p);

double tm_load_now(void);

#endif /* TM_ENGINE_LOAD_INTERNAL_H */
