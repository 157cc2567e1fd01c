/* model_files.c — recognising model files and recording what host memory they filled
 * (see model_files.h). */
#include "preload/model/model_files.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/base/libc_real.h"
#include "preload/base/log.h"
#include "preload/base/settings.h"
#include "preload/driver/launch.h"

#define FD_MAX 65536                /* descriptors above this are not followed */
#define FILES_MAX 1024              /* distinct model files per process */
#define HEADER_MAX ((size_t)256 << 20)

static tm_model_file *fd_file[FD_MAX];

static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_model_file *files[FILES_MAX];
static int file_count;
int tm_model_files_loading_now;        /* files with some tensors uploaded and some not */
static uint64_t bytes_left;         /* of their tensors not uploaded yet */

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

/* Reads the header, growing the buffer as the parser asks, up to HEADER_MAX. */
static tm_parse_result read_header(int fd, uint64_t file_size, tm_tensor_table *table, const char **why)
{
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
        if ((size_t)got < len || len >= file_size || need <= len || need > HEADER_MAX) {
            *why = "its header is truncated or larger than 256 MiB";
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
    pthread_mutex_lock(&files_lock);
    tm_model_file *found = NULL;
    for (int i = 0; i < file_count && !found; i++)
        if (files[i]->dev == st.st_dev && files[i]->ino == st.st_ino)
            found = files[i];
    pthread_mutex_unlock(&files_lock);
    if (found)
        return found;

    tm_model_file *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->size = (uint64_t)st.st_size;
    f->mtime = st.st_mtim;
    keep_path(fd, f->path);
    const char *base = strrchr(path, '/');
    snprintf(f->name, sizeof f->name, "%s", base ? base + 1 : path);
    const char *why = NULL;
    tm_parse_result r = read_header(fd, (uint64_t)st.st_size, &f->table, &why);
    if (r != TM_PARSE_OK) {
        if (r == TM_PARSE_BAD)
            tm_warn("model file %s: %s; its tensors are not named", f->name, why);
        free(f);
        return NULL;
    }
    f->uploaded = calloc(f->table.count ? (size_t)f->table.count : 1, 1);
    for (uint64_t i = 0; i < f->table.count; i++) {
        f->tensors += f->table.tensor[i].size != 0;
        f->bytes += f->table.tensor[i].size;
    }
    pthread_mutex_lock(&files_lock);
    if (file_count < FILES_MAX) {
        files[file_count++] = f;
    } else {
        tm_tensor_table_free(&f->table);
        free(f->uploaded);
        free(f);
        f = NULL;
    }
    pthread_mutex_unlock(&files_lock);
    if (f)
        tm_info("model file %s: %s, %llu tensors", f->name,
                f->table.format == TM_FORMAT_GGUF ? "GGUF" : "safetensors", (unsigned long long)f->table.count);
    return f;
}

/* ---------------------------------------------------------------- uploads */

void tm_model_file_uploaded(tm_model_file *f, uint64_t offset, uint64_t bytes)
{
    if (!f->uploaded || bytes == 0)
        return;
    uint64_t first, n = tm_tensor_table_ending_in(&f->table, offset, bytes, &first);
    for (uint64_t i = first; i < first + n; i++) {
        if (f->table.tensor[i].size == 0 || __atomic_exchange_n(&f->uploaded[i], 1, __ATOMIC_RELAXED))
            continue;
        uint64_t done = __atomic_add_fetch(&f->tensors_uploaded, 1, __ATOMIC_ACQ_REL);
        if (f->tensors > 1 && done == 1) {
            __atomic_add_fetch(&bytes_left, f->bytes, __ATOMIC_RELEASE);
            __atomic_add_fetch(&tm_model_files_loading_now, 1, __ATOMIC_RELEASE);
        }
        if (f->tensors > 1)
            __atomic_sub_fetch(&bytes_left, f->table.tensor[i].size, __ATOMIC_RELEASE);
        if (f->tensors > 1 && done == f->tensors)
            __atomic_sub_fetch(&tm_model_files_loading_now, 1, __ATOMIC_RELEASE);
    }
}

uint64_t tm_model_files_bytes_left(void)
{
    return tm_model_files_loading() ? __atomic_load_n(&bytes_left, __ATOMIC_ACQUIRE) : 0;
}

void tm_model_files_opened(int fd, const char *path, int flags)
{
    if (fd < 0 || fd >= FD_MAX || !path || (flags & O_ACCMODE) != O_RDONLY ||
        !recording() || !looks_like_model(path))
        return;
    __atomic_store_n(&fd_file[fd], tm_model_file_load(fd, path), __ATOMIC_RELEASE);
}

void tm_model_files_closed(int fd)
{
    if (fd >= 0 && fd < FD_MAX)
        __atomic_store_n(&fd_file[fd], NULL, __ATOMIC_RELEASE);
}

tm_model_file *tm_model_file_of_fd(int fd)
{
    if (fd < 0 || fd >= FD_MAX)
        return NULL;
    return __atomic_load_n(&fd_file[fd], __ATOMIC_ACQUIRE);
}
