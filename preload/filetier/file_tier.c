/* file_tier.c — chunks that give their memory back to the model file they came from (see
 * file_tier.h). */
#include "preload/filetier/file_tier.h"

#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/mem/chunk_pool.h"
#include "preload/driver/driver.h"
#include "preload/heat/heat_launch.h"
#include "preload/base/libc_real.h"
#include "preload/base/log.h"
#include "preload/move/migrate.h"
#include "preload/mem/registry.h"
#include "preload/region/stats.h"
#include "preload/mem/stream_free.h"

#define RING_DEPTH 8
#define OPEN_FILES_MAX 64          /* model files kept open for read-backs */

/* One chunk's standing. */
typedef struct file_chunk {
    const tm_model_file *file;     /* NULL: not known to hold file bytes */
    uint64_t offset;               /* file offset of the chunk's first byte */
    uint64_t hash;                 /* of its live bytes, as the file holds them */
    uint64_t used;                 /* the clock when a launch last needed it (or it was filled) */
    bool dropped;                  /* unmapped, no physical chunk */
} file_chunk;

struct tm_file_chunks {
    tm_alloc *alloc;
    uint64_t count;
    file_chunk chunk[];            /* [count], one per chunk of the allocation */
};

uint64_t tm_file_tier_dropped_now;
bool tm_file_tier_on;
static bool enabled;
static tm_device *tier_device;
static uint64_t epoch;             /* drops so far */
static uint64_t clock_now;         /* launches that needed file-backed chunks, and fills */

/* Guarded by file_lock (taken after the remap lock when both are held). */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_file_chunks **tracked;   /* [tracked_count] allocations with qualifying chunks */
static size_t tracked_count, tracked_capacity;

/* Guarded by io_lock: the ring, the host buffer and the open files. */
static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static struct io_uring ring;
static int ring_state;             /* 0 untried, 1 ready, -1 refused (pread instead) */
static uint8_t *buffer;            /* one chunk of host memory */
static struct {
    const tm_model_file *file;
    int fd;
} open_files[OPEN_FILES_MAX];
static int open_count;

void tm_file_tier_start(tm_device *device)
{
    if (device->target.pinned_host) {
        tm_info("TIERMEM_FILE_TIER=1: lower tiers are pinned host memory, which cannot be unmapped chunk by "
                "chunk; the file tier is off");
        return;
    }
    tier_device = device;
    __atomic_store_n(&enabled, true, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_file_tier_on, true, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_stats->file_tier, 1, __ATOMIC_RELAXED);
    tm_info("file tier: chunks copied whole from a model file give their memory back when every tier is full");
}

/* A 64-bit hash of whole words (a chunk's live bytes are a multiple of 8 but for a last
 * partial word, folded in byte by byte). */
static uint64_t hash_bytes(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x94D049BB133111EBull;
    return h;
}

/* Bytes of chunk `index` the program can see. */
static uint64_t live_bytes(const tm_alloc *a, uint64_t index)
{
    uint64_t chunk = a->backing->plan.chunk_size, start = index * chunk;
    return a->range.size - start < chunk ? a->range.size - start : chunk;
}

/* ---------------------------------------------------------------- qualifying chunks */

static tm_file_chunks *chunks_of(tm_alloc *a)
{
    tm_file_chunks *c = __atomic_load_n(&a->file, __ATOMIC_ACQUIRE);
    if (c)
        return c;
    c = calloc(1, sizeof *c + a->backing->plan.chunks * sizeof c->chunk[0]);
    if (!c)
        return NULL;
    c->alloc = a;
    c->count = a->backing->plan.chunks;
    pthread_mutex_lock(&file_lock);
    if (a->file) { /* another copy got there first */
        free(c);
        c = a->file;
    } else if (tracked_count == tracked_capacity) {
        size_t grown = tracked_capacity ? 2 * tracked_capacity : 64;
        tm_file_chunks **more = realloc(tracked, grown * sizeof *more);
        if (more) {
            tracked = more;
            tracked_capacity = grown;
        }
    }
    if (!a->file && tracked_count < tracked_capacity) {
        tracked[tracked_count++] = c;
        __atomic_store_n(&a->file, c, __ATOMIC_RELEASE);
    } else if (!a->file) {
        free(c);
        c = NULL;
    }
    pthread_mutex_unlock(&file_lock);
    return c;
}

void tm_file_tier_filled(tm_alloc *a, uint64_t index, const tm_model_file *file, uint64_t offset, bool whole,
                         const void *src)
{
    if (!__atomic_load_n(&enabled, __ATOMIC_ACQUIRE) || !a->backing || a->backing->pinned_host || !file->path[0])
        return;
    if (a->device && a->device != tier_device) /* read-backs take chunks of the first device's tiers */
        return;
    tm_file_chunks *c = whole ? chunks_of(a) : __atomic_load_n(&a->file, __ATOMIC_ACQUIRE);
    if (!c || index >= c->count)
        return;
    uint64_t hash = whole ? hash_bytes(src, live_bytes(a, index)) : 0;
    pthread_mutex_lock(&file_lock);
    file_chunk *k = &c->chunk[index];
    k->file = whole ? file : NULL;
    k->offset = offset;
    k->hash = hash;
    k->used = __atomic_add_fetch(&clock_now, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&file_lock);
}

void tm_file_tier_forget(tm_alloc *a)
{
    tm_file_chunks *c = a->file;
    if (!c)
        return;
    pthread_mutex_lock(&file_lock);
    for (size_t i = 0; i < tracked_count; i++)
        if (tracked[i] == c) {
            tracked[i] = tracked[--tracked_count];
            break;
        }
    uint64_t dropped = 0;
    for (uint64_t i = 0; i < c->count; i++)
        dropped += c->chunk[i].dropped;
    pthread_mutex_unlock(&file_lock);
    if (dropped) {
        __atomic_fetch_sub(&tm_file_tier_dropped_now, dropped, __ATOMIC_RELAXED);
        tm_stat_sub(file_dropped, dropped);
    }
    a->file = NULL;
    free(c);
}

/* ---------------------------------------------------------------- reading the file */

/* The descriptor of `file`, opened once without following a symlink; -1 when it cannot be
 * opened. */
static int fd_of(const tm_model_file *file)
{
    for (int i = 0; i < open_count; i++)
        if (open_files[i].file == file)
            return open_files[i].fd;
    if (open_count == OPEN_FILES_MAX)
        return -1;
    /* the system call itself: the open hooks have nothing to learn from the interposer */
    int fd = (int)syscall(SYS_openat, AT_FDCWD, file->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        open_files[open_count++] = (typeof(open_files[0])){ file, fd };
    return fd;
}

/* Whether the file still is the one whose header was parsed. */
static bool file_unchanged(const tm_model_file *file, int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == file->dev && st.st_ino == file->ino &&
           (uint64_t)st.st_size == file->size && st.st_mtim.tv_sec == file->mtime.tv_sec &&
           st.st_mtim.tv_nsec == file->mtime.tv_nsec;
}

static bool ring_ready(void)
{
    if (ring_state == 0) {
        int rc = io_uring_queue_init(RING_DEPTH, &ring, 0);
        ring_state = rc == 0 ? 1 : -1;
        if (rc != 0)
            tm_info("file tier: io_uring is refused here (%s); read-backs use pread", strerror(-rc));
    }
    return ring_state == 1;
}

/* Reads `len` bytes at `offset` into the buffer, with io_uring (pread where refused). */
static bool read_range(int fd, uint64_t offset, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t got;
        if (ring_ready()) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            if (!sqe)
                return false;
            io_uring_prep_read(sqe, fd, buffer + done, (unsigned)(len - done), offset + done);
            struct io_uring_cqe *cqe;
            if (io_uring_submit(&ring) != 1 || io_uring_wait_cqe(&ring, &cqe) != 0)
                return false;
            got = cqe->res;
            io_uring_cqe_seen(&ring, cqe);
        } else {
            got = tm_libc_pread(fd, buffer + done, len - done, (off_t)(offset + done));
        }
        if (got <= 0)
            return false;
        done += (size_t)got;
    }
    return true;
}

/* Fills the buffer with the chunk's bytes from its file; on a refusal says why, once per
 * file. */
static bool read_chunk(const tm_alloc *a, uint64_t index, const file_chunk *k)
{
    size_t len = (size_t)live_bytes(a, index);
    if (!buffer && posix_memalign((void **)&buffer, 4096, (size_t)a->backing->plan.chunk_size) != 0) {
        buffer = NULL;
        return false;
    }
    int fd = fd_of(k->file);
    const char *why = fd < 0 ? "it cannot be opened (or is a symlink now)"
                      : !file_unchanged(k->file, fd) ? "it changed since it was loaded (size, time or inode)"
                      : !read_range(fd, k->offset, len) ? "reading it failed"
                      : hash_bytes(buffer, len) != k->hash ? "its bytes differ from those loaded"
                      : NULL;
    if (why) {
        CUdeviceptr at = a->range.base + index * a->backing->plan.chunk_size;
        tm_error("file tier: model file %s: %s; the chunk at 0x%llx is not read back, and the work that needs "
                 "it fails", k->file->name, why, (unsigned long long)at);
        tm_stat_add(file_refused, 1);
        return false;
    }
    if (tm_real.simcuda_storage_read)
        tm_real.simcuda_storage_read(len);
    return true;
}

/* ---------------------------------------------------------------- dropping */

/* The device copy of a chunk still hashes as the file's bytes (nothing wrote it since). */
static bool still_clean(const tm_alloc *a, uint64_t index, const file_chunk *k)
{
    size_t len = (size_t)live_bytes(a, index);
    if (!buffer && posix_memalign((void **)&buffer, 4096, (size_t)a->backing->plan.chunk_size) != 0) {
        buffer = NULL;
        return false;
    }
    CUdeviceptr at = a->range.base + index * a->backing->plan.chunk_size;
    return tm_real.cuMemcpyDtoH_v2(buffer, at, len) == CUDA_SUCCESS && hash_bytes(buffer, len) == k->hash;
}

/* The chunk to drop: among qualifying chunks not needed since `before`, the one needed
 * most recently. A decode step reads every weight once, in the same order each time, and
 * against such a cycle dropping the least recently needed chunk misses on every chunk
 * (it is always the next one needed); dropping the most recent keeps a stable set
 * resident and reads back only what does not fit. */
static bool victim(uint64_t before, tm_file_chunks **which, uint64_t *index)
{
    bool found = false;
    uint64_t best = 0;
    for (size_t t = 0; t < tracked_count; t++) {
        tm_file_chunks *c = tracked[t];
        if (__atomic_load_n(&c->alloc->ipc_pinned, __ATOMIC_RELAXED) ||
            __atomic_load_n(&c->alloc->graph_pinned, __ATOMIC_RELAXED))
            continue; /* exported (importers map its chunks), or in a graph: they must stay */
        for (uint64_t i = 0; i < c->count; i++) {
            file_chunk *k = &c->chunk[i];
            if (k->file && !k->dropped && k->used < before && (!found || k->used > best)) {
                found = true;
                best = k->used;
                *which = c;
                *index = i;
            }
        }
    }
    return found;
}

/* Drops up to `want` chunks not needed since `before`. Called with the remap lock;
 * closes the gate and drains the context first. */
static uint64_t drop_chunks(uint64_t want, uint64_t before)
{
    tm_gate_close();
    uint64_t dropped = 0;
    if (tm_real.cuCtxSynchronize() == CUDA_SUCCESS) {
        pthread_mutex_lock(&io_lock);
        pthread_mutex_lock(&file_lock);
        tm_file_chunks *c = NULL;
        uint64_t i = 0;
        while (dropped < want && victim(before, &c, &i)) {
            file_chunk *k = &c->chunk[i];
            tm_alloc *a = c->alloc;
            tm_backing *b = a->backing;
            uint64_t chunk = b->plan.chunk_size;
            if (!tm_backing_track_tiers(b))
                break;
            if (!still_clean(a, i, k)) {
                k->file = NULL; /* written since it was filled: it stays */
                continue;
            }
            if (tm_real.cuMemUnmap(b->base + i * chunk, chunk) != CUDA_SUCCESS) {
                k->file = NULL;
                continue;
            }
            tm_tier_id from = tm_backing_chunk_tier(b, i);
            tm_release_call(tm_real.cuMemRelease(tm_backing_set_chunk(b, i, TM_TIER_DROPPED, 0)));
            tm_device_charge(a->device, from, -(int64_t)chunk, -1); /* released: its bytes too */
            k->dropped = true;
            dropped++;
            tm_alloc_publish_tiers(a);
        }
        pthread_mutex_unlock(&file_lock);
        pthread_mutex_unlock(&io_lock);
    }
    if (dropped) {
        __atomic_fetch_add(&epoch, 1, __ATOMIC_RELEASE);
        __atomic_fetch_add(&tm_file_tier_dropped_now, dropped, __ATOMIC_RELAXED);
        tm_stat_add(file_dropped, dropped);
        tm_stat_add(file_drops, dropped);
    }
    tm_gate_open();
    return dropped;
}

uint64_t tm_file_tier_make_room(tm_device *d, uint64_t chunks)
{
    if (!__atomic_load_n(&enabled, __ATOMIC_ACQUIRE) || d != tier_device)
        return 0;
    tm_remap_lock();
    uint64_t dropped = drop_chunks(chunks, UINT64_MAX);
    tm_remap_unlock();
    if (dropped)
        tm_debug("file tier: %llu chunks dropped to make room", (unsigned long long)dropped);
    return dropped;
}

/* ---------------------------------------------------------------- reading back */

/* A physical chunk in the first tier with room; dropping chunks not needed since `before`
 * until one has (a chunk dropped in HBM may only free its reserve). */
static bool take_chunk(tm_device *d, uint64_t before, CUmemGenericAllocationHandle *h, tm_tier_id *tier)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        for (int t = 0; t < TM_TIER_COUNT; t++)
            if (d->tiers.tier[t].present && tm_chunk_pool_take(d, (tm_tier_id)t, h)) {
                *tier = (tm_tier_id)t;
                return true;
            }
        if (!drop_chunks(1, before)) {
            tm_debug("file tier: nothing to drop (attempt %d)", attempt);
            break;
        }
    }
    return false;
}

/* Reads back chunk `index` of `a`. Called with the remap lock. */
static CUresult read_back(tm_device *d, tm_alloc *a, uint64_t index, uint64_t before)
{
    tm_backing *b = a->backing;
    uint64_t chunk = b->plan.chunk_size;
    CUdeviceptr at = b->base + index * chunk;
    CUmemGenericAllocationHandle h;
    tm_tier_id tier;
    if (!take_chunk(d, before, &h, &tier)) {
        tm_log_once(TM_LOG_WARN, "file tier: no tier has room to read back a chunk, even after dropping others; "
                    "the work that needs it fails with out of memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUmemAccessDesc access[TM_BACKING_ACCESS_MAX]; /* the device and its peers, as at allocation */
    size_t access_count = tm_backing_access(&d->target, access);
    CUresult r = tm_real.cuMemMap(at, chunk, 0, h, 0);
    if (r == CUDA_SUCCESS && (r = tm_real.cuMemSetAccess(at, chunk, access, access_count)) != CUDA_SUCCESS)
        tm_release_call(tm_real.cuMemUnmap(at, chunk));
    pthread_mutex_lock(&io_lock);
    pthread_mutex_lock(&file_lock);
    file_chunk k = a->file->chunk[index];
    pthread_mutex_unlock(&file_lock);
    /* nothing can use the chunk before it is filled: no launch or copy needing it passes */
    bool ok = r == CUDA_SUCCESS && read_chunk(a, index, &k) &&
              (r = tm_real.cuMemcpyHtoD_v2(at, buffer, (size_t)live_bytes(a, index))) == CUDA_SUCCESS;
    pthread_mutex_unlock(&io_lock);
    if (!ok) {
        if (r == CUDA_SUCCESS) {
            tm_release_call(tm_real.cuMemUnmap(at, chunk));
            r = CUDA_ERROR_FILE_NOT_FOUND;
        }
        tm_chunk_pool_give(d, tier, h);
        return r;
    }
    tm_backing_set_chunk(b, index, tier, h);
    tm_device_charge(a->device, tier, 0, 1); /* its bytes were charged when the chunk was made */
    tm_alloc_publish_tiers(a);
    pthread_mutex_lock(&file_lock);
    a->file->chunk[index].dropped = false;
    pthread_mutex_unlock(&file_lock);
    __atomic_fetch_sub(&tm_file_tier_dropped_now, 1, __ATOMIC_RELAXED);
    tm_stat_sub(file_dropped, 1);
    tm_stat_add(file_faults, 1);
    tm_stat_add(file_fault_bytes, live_bytes(a, index));
    return CUDA_SUCCESS;
}

typedef struct need {
    tm_alloc *alloc;
    uint64_t first, end;           /* chunks [first, end) */
} need;

/* Reads back what `needs` name; marks them needed at `now` first, so that reading one
 * back never drops another. */
static CUresult read_back_all(const need *needs, size_t count, uint64_t now)
{
    tm_device *d = tier_device;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&file_lock);
    for (size_t n = 0; n < count; n++)
        for (uint64_t i = needs[n].first; i < needs[n].end; i++)
            needs[n].alloc->file->chunk[i].used = now;
    pthread_mutex_unlock(&file_lock);
    for (size_t n = 0; n < count && r == CUDA_SUCCESS; n++)
        for (uint64_t i = needs[n].first; i < needs[n].end && r == CUDA_SUCCESS; i++) {
            pthread_mutex_lock(&file_lock);
            bool dropped = needs[n].alloc->file->chunk[i].dropped;
            pthread_mutex_unlock(&file_lock);
            if (dropped)
                r = read_back(d, needs[n].alloc, i, now);
        }
    return r;
}

/* The allocation holding `address`, if it has file-tier chunks (with the remap lock). */
static tm_alloc *tracked_at(CUdeviceptr address)
{
    tm_alloc *a = tm_alloc_at(address);
    return a && a->backing && __atomic_load_n(&a->file, __ATOMIC_ACQUIRE) ? a : NULL;
}

static CUresult prepare_launch(CUfunction f, void **params, void **extra, uint64_t *epoch_out)
{
    uint64_t values[TM_LAUNCH_MAX_POINTERS];
    size_t n = tm_launch_pointers(f, params, extra, values, NULL);
    need needs[TM_LAUNCH_MAX_POINTERS];
    size_t count = 0;
    tm_remap_lock();
    *epoch_out = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < n; i++) {
        tm_alloc *a = tracked_at(values[i]);
        /* a kernel may reach all of an allocation from any pointer into it */
        if (a)
            needs[count++] = (need){ a, 0, a->file->count };
    }
    uint64_t now = __atomic_add_fetch(&clock_now, 1, __ATOMIC_RELAXED);
    CUresult r = count ? read_back_all(needs, count, now) : CUDA_SUCCESS;
    *epoch_out = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    tm_remap_unlock();
    return r;
}

static bool note_capture(tm_launch *l)
{
    if (!tm_launch_capturing(l))
        return false;
    uint64_t values[TM_LAUNCH_MAX_POINTERS];
    size_t n = tm_launch_pointers(l->f, l->params, l->extra, values, NULL);
    tm_remap_lock();
    for (size_t i = 0; i < n; i++) {
        tm_alloc *a = values[i] ? tm_alloc_at(values[i]) : NULL;
        if (a && a->backing &&
            !__atomic_exchange_n(&a->graph_pinned, true, __ATOMIC_RELAXED))
            tm_log_once(TM_LOG_INFO, "file tier: memory that launches captured into a graph point into keeps its "
                                     "chunks from then on (a replay's parameters are not seen)");
    }
    tm_remap_unlock();
    return true;
}

static CUresult prepare_graph(uint64_t *epoch_out)
{
    tm_remap_lock();
    need needs[64];
    size_t count = 0;
    pthread_mutex_lock(&file_lock);
    for (size_t t = 0; t < tracked_count && count < sizeof needs / sizeof *needs; t++) {
        tm_file_chunks *c = tracked[t];
        if (!__atomic_load_n(&c->alloc->graph_pinned, __ATOMIC_RELAXED))
            continue;
        bool dropped = false;
        for (uint64_t i = 0; i < c->count && !dropped; i++)
            dropped = c->chunk[i].dropped;
        if (dropped)
            needs[count++] = (need){ c->alloc, 0, c->count };
    }
    pthread_mutex_unlock(&file_lock);
    uint64_t now = __atomic_add_fetch(&clock_now, 1, __ATOMIC_RELAXED);
    CUresult r = count ? read_back_all(needs, count, now) : CUDA_SUCCESS;
    *epoch_out = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    tm_remap_unlock();
    return r;
}

CUresult tm_file_tier_prepare_range(CUdeviceptr address, uint64_t bytes, uint64_t *epoch_out)
{
    CUresult r = CUDA_SUCCESS;
    tm_remap_lock();
    tm_alloc *a = bytes ? tracked_at(address) : NULL;
    if (a) {
        uint64_t chunk = a->backing->plan.chunk_size, last = address + bytes - 1;
        uint64_t end_address = a->range.base + a->range.size - 1;
        need one = { a, (address - a->range.base) / chunk,
                     ((last < end_address ? last : end_address) - a->range.base) / chunk + 1 };
        r = read_back_all(&one, 1, __atomic_add_fetch(&clock_now, 1, __ATOMIC_RELAXED));
    }
    *epoch_out = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    tm_remap_unlock();
    return r;
}

CUresult tm_file_tier_prepare_copy(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes, uint64_t *epoch_out)
{
    uint64_t later;
    CUresult r = tm_file_tier_prepare_range(src, bytes, epoch_out);
    return r == CUDA_SUCCESS ? tm_file_tier_prepare_range(dst, bytes, &later) : r;
}

void tm_file_tier_forget_in_child(void)
{
    pthread_mutex_init(&file_lock, NULL);
    pthread_mutex_init(&io_lock, NULL);
    tracked_count = 0;
    tm_file_tier_dropped_now = 0;
    ring_state = 0; /* the parent's ring is left to it */
}

bool tm_file_tier_epoch_holds(uint64_t seen)
{
    return __atomic_load_n(&epoch, __ATOMIC_ACQUIRE) == seen;
}

/* ---------------------------------------------------------------- the watcher */

static bool file_before_launch(tm_launch *l)
{
    note_capture(l);
    return false;
}

static CUresult file_prepare_launch(tm_launch *l, uint64_t *epoch)
{
    if (l->graph)
        return prepare_graph(epoch);
    if (l->capturing == 1) { /* seen capturing by file_before_launch: its graph reads back */
        *epoch = TM_LAUNCH_NOTHING_HELD;
        return CUDA_SUCCESS;
    }
    return prepare_launch(l->f, l->params, l->extra, epoch);
}

const tm_launch_watcher tm_file_tier_launch_watcher = {
    .name = "file tier",
    .watching = &tm_file_tier_on,
    .before = file_before_launch,
    .preparing = &tm_file_tier_dropped_now,
    .prepare = file_prepare_launch,
    .holds = tm_file_tier_epoch_holds,
};

static void file_released(tm_alloc *a, tm_release_kind how)
{
    if (how == TM_RELEASE_FREED) {
        tm_file_tier_forget(a);
    } else { /* the parent's: forget_in_child dropped the tracking */
        free(a->file);
        a->file = NULL;
    }
}

const tm_alloc_watcher tm_file_tier_alloc_watcher = {
    .name = "file tier",
    .released = file_released,
    .make_room = tm_file_tier_make_room,
};
