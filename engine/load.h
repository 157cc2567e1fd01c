/* load.h — reading the weights from the model file into their device allocations.
 *
 * Three ways, chosen with --load:
 *   uring  io_uring reads (O_DIRECT when the file system takes it, registered buffers,
 *          up to LOAD_SLOTS reads in flight) into pinned staging buffers, each copied on
 *          a stream with cuMemcpyHtoDAsync while the next reads run; a buffer is reused
 *          only after the event recorded behind its copies completed;
 *   pread  the same pipeline with one pread at a time (still overlapping the copies);
 *   mmap   cuMemcpyHtoD straight from the mapped file (the simplest path).
 * The default, auto, is uring; where the kernel refuses io_uring (seccomp, an old kernel,
 * kernel.io_uring_disabled) it says why in one line and reads with pread.
 *
 * Tensors are read in file order, in pieces of 2 MiB of the tensor each read as the
 * aligned file range around it, so O_DIRECT serves unaligned tensors too. Norms stored as
 * f16/bf16 are widened to f32 on the host (the kernels read f32 norms).
 */
#ifndef TM_ENGINE_LOAD_H
#define TM_ENGINE_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/driver.h"
#include "engine/gguf.h"

typedef enum tm_load_method { TM_LOAD_AUTO, TM_LOAD_URING, TM_LOAD_PREAD, TM_LOAD_MMAP } tm_load_method;

typedef struct tm_load_item {
    const gguf_tensor *t;   /* its bytes in the file: data_offset + t->offset, t->n_bytes */
    CUdeviceptr dst;        /* [device_bytes] its allocation */
    int64_t device_bytes;   /* t->n_bytes, or dims[0] * 4 when widened */
    bool widen;             /* a norm stored as f16/bf16, converted to f32 on the host */
} tm_load_item;

typedef struct tm_load_options {
    tm_load_method method;
    const char *path;       /* the model file; NULL reads from the mapping (mmap) */
    bool progress;          /* a bar on stderr, when it is a terminal and loading takes over a second */
} tm_load_options;

typedef struct tm_load_result {
    tm_load_method used;    /* what read the file (auto resolves to uring or pread) */
    bool direct;            /* uring/pread: O_DIRECT reads */
    int64_t file_bytes;     /* bytes read from the file */
    double seconds;         /* from the first read to the last copy done */
} tm_load_result;

/* "auto", "uring", "pread", "mmap" -> method; -1 for anything else. */
int tm_load_method_parse(const char *s, tm_load_method *out);
const char *tm_load_method_name(tm_load_method m);

/* Copies items[n] from the file into their allocations; every copy is complete on return.
 * 0, or -1 with err naming the tensor or the call that failed. */
int tm_load_weights(const tm_driver *drv, const gguf_file *f, const tm_load_item *items, int64_t n,
                    const tm_load_options *opt, tm_load_result *res, char *err, size_t errlen);

/* The progress line: "loading  42% [########            ] 1.2/2.9 GiB  850 MiB/s" in at most
 * cap bytes (width: characters of the bar). */
void tm_load_progress_format(char *out, size_t cap, int64_t done, int64_t total, double seconds, int width);

/* f16 or bf16 bits as f32. */
float tm_half_to_float(uint16_t h, bool bf16);

#endif /* TM_ENGINE_LOAD_H */
