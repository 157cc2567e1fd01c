/* host_ranges.c — which host memory holds which model-file bytes (see model_files.h). */
#include "preload/model/model_files.h"

#include <pthread.h>
#include <string.h>

#define HOST_RANGES_MAX 1024        /* host buffers remembered at once (oldest replaced) */

/* Host ranges never overlap (a new fill cuts what it covers) and are kept sorted by
 * start, so a copy finds its source with a binary search. Each range holds its file's
 * table (tm_model_file_pin) until it is cut away. Readers take no lock: writers
 * (under a mutex) make `seq` odd while they change the array, and a reader that saw it
 * odd or changed searches again. The array is static, so a torn read is only retried. */
typedef struct host_range {
    uintptr_t start, end;           /* [start, end) of host memory */
    tm_model_file *file;
    uint64_t offset;                /* file offset of `start` */
    uint64_t age;                   /* fill order: the oldest goes when all slots are taken */
} host_range;

int tm_host_range_count;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static host_range ranges[HOST_RANGES_MAX];
static int range_count;             /* ranges[0, range_count) in use, sorted */
static uint64_t fills;
static uint64_t seq;                /* odd while a writer changes ranges */

static void write_begin(void)
{
    pthread_mutex_lock(&ranges_lock);
    __atomic_store_n(&seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void write_end(void)
{
    __atomic_store_n(&tm_host_range_count, range_count, __ATOMIC_RELAXED);
    __atomic_store_n(&seq, seq + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ranges_lock);
}

/* The first of `count` ranges whose start lies above `at`. */
static int upper_bound(uintptr_t at, int count)
{
    int lo = 0, hi = count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (__atomic_load_n(&ranges[mid].start, __ATOMIC_RELAXED) <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Drops ranges[i] and its hold on the file's table (ranges_lock, then the files' lock). */
static void remove_at(int i)
{
    tm_model_file_unpin(ranges[i].file);
    memmove(&ranges[i], &ranges[i + 1], (size_t)(range_count - i - 1) * sizeof ranges[0]);
    range_count--;
}

/* Drops or trims every range overlapping [start, end). Called with the lock held. */
static void cut_locked(uintptr_t start, uintptr_t end)
{
    int i = upper_bound(start, range_count);
    if (i > 0 && ranges[i - 1].end > start)
        i--;
    while (i < range_count && ranges[i].start < end) {
        host_range *r = &ranges[i];
        if (r->start < start) {
            r->end = start;         /* keep the head (a hole in the middle drops the tail) */
            i++;
        } else if (r->end > end) {
            r->offset += end - r->start;
            r->start = end;
            i++;
        } else {
            remove_at(i);
        }
    }
}

void tm_host_range_filled(tm_model_file *file, const void *host, size_t bytes, uint64_t offset)
{
    if (!file || !bytes)
        return;
    uintptr_t start = (uintptr_t)host, end = start + bytes;
    if (end < start)
        return;
    /* the range holds the table while it holds some tensor's bytes (a header read holds none) */
    bool holds = tm_model_file_pin(file);
    if (holds && !tm_tensor_table_overlaps(&file->table, offset, bytes)) {
        tm_model_file_unpin(file);
        holds = false;
    }
    write_begin();
    cut_locked(start, end);
    if (!holds) {
        write_end();
        return;
    }
    if (range_count == HOST_RANGES_MAX) {
        int oldest = 0;
        for (int i = 1; i < range_count; i++)
            if (ranges[i].age < ranges[oldest].age) oldest = i;
        remove_at(oldest);
    }
    int at = upper_bound(start, range_count);
    memmove(&ranges[at + 1], &ranges[at], (size_t)(range_count - at) * sizeof ranges[0]);
    ranges[at] = (host_range){ start, end, file, offset, fills++ };
    range_count++;
    write_end();
}

void tm_host_range_forget(const void *host, size_t bytes)
{
    if (!tm_host_ranges_any())
        return;
    uintptr_t start = (uintptr_t)host, end = start + bytes;
    write_begin();
    cut_locked(start, end < start ? UINTPTR_MAX : end);
    write_end();
}

bool tm_host_range_find(const void *host, tm_model_file **file, uint64_t *offset, size_t *valid)
{
    uintptr_t at = (uintptr_t)host;
    for (;;) {
        uint64_t before = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
        if (before & 1)
            continue;
        int count = __atomic_load_n(&range_count, __ATOMIC_RELAXED);
        int i = upper_bound(at, count < HOST_RANGES_MAX ? count : HOST_RANGES_MAX) - 1;
        host_range r = { 0 };
        if (i >= 0) {
            r.start = __atomic_load_n(&ranges[i].start, __ATOMIC_RELAXED);
            r.end = __atomic_load_n(&ranges[i].end, __ATOMIC_RELAXED);
            r.file = __atomic_load_n(&ranges[i].file, __ATOMIC_RELAXED);
            r.offset = __atomic_load_n(&ranges[i].offset, __ATOMIC_RELAXED);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&seq, __ATOMIC_RELAXED) != before)
            continue;
        if (i < 0 || at < r.start || at >= r.end)
            return false;
        *file = r.file;
        *offset = r.offset + (at - r.start);
        *valid = r.end - at;
        return true;
    }
}
