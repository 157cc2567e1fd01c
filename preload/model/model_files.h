/* model_files.h — the model files a process reads, and the host memory they filled.
 *
 * A file opened read-only whose name looks like a model (`*.gguf`, `*.safetensors`,
 * `*-0000N-of-0000M*`) has its header parsed once into a tensor table (tensor_table.h);
 * a header that does not parse is named in one line and the file is ignored. Reads,
 * preads and mmaps of such a file record which host range now holds which file range;
 * a copy from that host range to the device can then say which tensor it carries
 * (provenance.h).
 *
 * A file's record (who it is, where it is) lives as long as the process; its tensor table
 * lives while something refers to it: an open descriptor, a host range holding its
 * tensors' bytes, a device chunk labelled with one of its tensors, or a copy in progress
 * (tm_model_file_pin). When the last goes, the table is freed; an open of the file later
 * parses the header again. Tables kept at once are bounded: at most TM_TENSORS_MAX
 * tensors each (13 MiB) and 64 MiB together; past that a file's tensors go unnamed. */
#ifndef TM_PRELOAD_MODEL_FILES_H
#define TM_PRELOAD_MODEL_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "preload/driver/launch.h"
#include "preload/model/tensor_table.h"

#define TM_MODEL_PATH_MAX 4096

typedef struct tm_model_file {
    dev_t dev;
    ino_t ino;
    uint64_t size;                  /* bytes, when the header was parsed */
    struct timespec mtime;          /* its modification time then */
    char name[64];                  /* the file's base name, for messages */
    char path[TM_MODEL_PATH_MAX];   /* absolute, as the kernel resolved it at the open
                                     * (file_tier.h reads it again); "" when unknown */
    uint32_t index;                 /* in the process's list of files (tm_tensor.file_index) */
    int64_t refs;                   /* holders of `table`, under the files' lock */
    tm_tensor_table table;          /* empty (tensor NULL) while nothing holds it */
    uint8_t *uploaded;              /* [table.count] 1 once a copy to the device carried the
                                     * tensor's last byte; NULL when out of memory */
    uint64_t tensors;               /* the non-empty ones, which an upload finishes */
    uint64_t tensors_uploaded;      /* of those */
    uint64_t bytes;                 /* of all its tensors */
} tm_model_file;

/* After open/openat returned `fd` for `path` with `flags`. */
void tm_model_files_opened(int fd, const char *path, int flags);
/* Before close(fd). */
void tm_model_files_closed(int fd);

/* The model file behind `fd`, or NULL (a load and a branch when none is open). The
 * record stays valid; its table only while pinned. */
tm_model_file *tm_model_file_of_fd(int fd);

/* A copy to the device carried the file's range [offset, offset + bytes): the tensors it
 * finishes count as uploaded (each once, however the program split it into copies). */
void tm_model_file_uploaded(tm_model_file *file, uint64_t offset, uint64_t bytes);

/* True while the program loads weights: a model file has some tensors uploaded and others
 * not yet, and no kernel has been launched (a loader that uploads converted copies, or
 * leaves tensors out, ends its window at its first kernel). */
extern int tm_model_files_loading_now; /* files with some tensors uploaded and some not (atomic) */
static inline bool tm_model_files_loading(void)
{
    return __atomic_load_n(&tm_model_files_loading_now, __ATOMIC_ACQUIRE) > 0 && !tm_launch_seen();
}

/* While loading: the bytes of the loading files' tensors not uploaded yet; 0 otherwise. */
uint64_t tm_model_files_bytes_left(void);

/* `bytes` of the file were read at file offset `offset` into host memory at `host`.
 * Replaces what was recorded for host ranges it overlaps. */
void tm_host_range_filled(tm_model_file *file, const void *host, size_t bytes, uint64_t offset);
/* Host memory unmapped, or rewritten from elsewhere: forgets what overlaps it. */
void tm_host_range_forget(const void *host, size_t bytes);

/* The host range holding `host`, if it was filled from a model file: the file and the
 * file offset of `host`; *valid the bytes from `host` to the range's end. */
bool tm_host_range_find(const void *host, tm_model_file **file, uint64_t *offset, size_t *valid);

/* True when some host range is recorded (the copy hooks' fast path). */
static inline bool tm_host_ranges_any(void)
{
    extern int tm_host_range_count;
    return __atomic_load_n(&tm_host_range_count, __ATOMIC_RELAXED) != 0;
}

/* Holds the file's table while the caller uses it: false when it has none now (it was
 * freed; the caller names nothing). Each pin is undone by one unpin. */
bool tm_model_file_pin(tm_model_file *file);
void tm_model_file_unpin(tm_model_file *file);
/* A device chunk is labelled with tensor `t` (its file pinned by the caller), or no longer. */
void tm_model_file_hold_tensor(const tm_tensor *t);
void tm_model_file_release_tensor(const tm_tensor *t);

/* Parses the model header of an open file descriptor with the real pread (never moving
 * its offset), or finds the file's table kept already; the file comes back pinned (one
 * tm_model_file_unpin undoes it). NULL when it is not a model file or the header is bad
 * (one line said so). */
tm_model_file *tm_model_file_load(int fd, const char *path);

#endif /* TM_PRELOAD_MODEL_FILES_H */
