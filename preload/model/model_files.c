/* model_files.c — recognising model files and recording what host memory they filled
 * (see model_files.h). */
#include "preload/model/model_files.h"
#include "preload/model/file_refs.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/base/libc_real.h"
#include "preload/base/log.h"
#include "preload/base/settings.h"
#include "preload/driver/launch.h"

#define FD_MAX 65536                /* descriptors above this are not followed */
#define HEADER_SECONDS 2.0          /* reading a header gives up after this long */

static tm_model_file *fd_file[FD_MAX];

/* ---------------------------------------------------------------- recognising */

/* Files are followed once the configuration is read (opens made while it is read, or
 * before, are not the program's model files) and while tiering is on. */
static bool recording(void)
{
    return tm_settings_loaded() && tm_tiering_on();
}

static bool looks_like_model(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    return (n > 5 && strcmp(base + n - 5, ".gguf") == 0) ||
           (n > 12 && strcmp(base + n - 12, ".safetensors") == 0) ||
           fnmatch("*-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]*", base, 0) == 0;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads the header, growing the buffer as the parser asks, up to TM_MODEL_HEADER_MAX bytes
 * and HEADER_SECONDS (a slow or stalling file costs the open that long at most). */
static tm_parse_result read_header(int fd, uint64_t file_size, tm_tensor_table *table, const char **why)
{
    double deadline = seconds_now() + HEADER_SECONDS;
    size_t len = 1 << 20;
    for (;;) {
        if (len > file_size) len = (size_t)file_size;
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf) {
            *why = "out of memory for its header";
            return TM_PARSE_BAD;
        }
        ssize_t got = tm_libc_pread(fd, buf, len, 0);
        size_t need = 0;
        tm_parse_result r = got < 0 ? TM_PARSE_NOT_MODEL
                                    : tm_parse_model_header(buf, (size_t)got, file_size, table, &need, why);
        free(buf);
        if (r != TM_PARSE_SHORT) return r;
        if ((size_t)got < len || len >= file_size || need <= len || need > TM_MODEL_HEADER_MAX) {
            *why = "its header is truncated or larger than 32 MiB";
            return TM_PARSE_BAD;
        }
        if (seconds_now() > deadline) {
            *why = "reading its header took longer than 2 s";
            return TM_PARSE_BAD;
        }
        len = need;
    }
}

/* Where the open descriptor's file is, as the kernel resolved it (openat's directory
 * and any symlink included), so that a later read-back opens that file and no other. */
static void keep_path(int fd, char out[TM_MODEL_PATH_MAX])
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, TM_MODEL_PATH_MAX - 1);
    out[n > 0 && n < TM_MODEL_PATH_MAX - 1 && out[0] == '/' ? n : 0] = '\0';
}


tm_model_file *tm_model_file_load(int fd, const char *path)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return NULL;
    tm_model_file *f = tm_model_files_find(&st);
    if (f)
        return f;

    /* parsed outside the lock: other opens and copies go on meanwhile */
    const char *base = strrchr(path, '/');
    char name[sizeof f->name];
    snprintf(name, sizeof name, "%s", base ? base + 1 : path);
    tm_tensor_table table = { 0 };
    const char *why = NULL;
    tm_parse_result r = read_header(fd, (uint64_t)st.st_size, &table, &why);
    if (r != TM_PARSE_OK) {
        if (r == TM_PARSE_BAD)
            tm_warn("model file %s: %s; its tensors are not named", name, why);
        return NULL;
    }
    uint8_t *uploaded = calloc(table.count ? (size_t)table.count : 1, 1);
    tm_model_file *fresh = calloc(1, sizeof *fresh);
    if (!uploaded || !fresh) {
        tm_tensor_table_free(&table);
        free(uploaded);
        free(fresh);
        return NULL;
    }
    fresh->dev = st.st_dev;
    fresh->ino = st.st_ino;
    fresh->size = (uint64_t)st.st_size;
    fresh->mtime = st.st_mtim;
    keep_path(fd, fresh->path);
    memcpy(fresh->name, name, sizeof name);
    uint64_t count = table.count;
    tm_model_format format = table.format;
    bool installed, over;
    f = tm_model_file_install(&st, &fresh, &table, uploaded, &installed, &over);
    free(fresh);                        /* not taken: the file was known */
    if (over)
        tm_warn("model file %s: its %llu tensors would take the tensor tables kept past 64 MiB; its tensors "
                "are not named", name, (unsigned long long)count);
    else if (installed)
        tm_info("model file %s: %s, %llu tensors", name, format == TM_FORMAT_GGUF ? "GGUF" : "safetensors",
                (unsigned long long)count);
    return f;
}

uint64_t tm_model_files_bytes_left(void)
{
    return tm_model_files_loading() ? tm_model_files_unloaded_bytes() : 0;
}

void tm_model_files_opened(int fd, const char *path, int flags)
{
    if (fd < 0 || fd >= FD_MAX || !path || (flags & O_ACCMODE) != O_RDONLY ||
        !recording() || !looks_like_model(path))
        return;
    tm_model_file *old = __atomic_exchange_n(&fd_file[fd], tm_model_file_load(fd, path), __ATOMIC_ACQ_REL);
    if (old)                        /* closed past the C library's close */
        tm_model_file_unpin(old);
}

void tm_model_files_closed(int fd)
{
    if (fd < 0 || fd >= FD_MAX)
        return;
    tm_model_file *old = __atomic_exchange_n(&fd_file[fd], NULL, __ATOMIC_ACQ_REL);
    if (old)
        tm_model_file_unpin(old);
}

tm_model_file *tm_model_file_of_fd(int fd)
{
    if (fd < 0 || fd >= FD_MAX)
        return NULL;
    return __atomic_load_n(&fd_file[fd], __ATOMIC_ACQUIRE);
}
