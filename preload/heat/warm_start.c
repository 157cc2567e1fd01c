/* warm_start.c — the heat profile read at start and written at exit (see warm_start.h). */
#include "preload/heat/warm_start.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy/profile.h"
#include "preload/mem/alloc.h"
#include "preload/heat/heat.h"
#include "preload/base/libc_real.h"
#include "preload/base/log.h"
#include "preload/mem/registry.h"

#define FIRST_ORDER ((uint64_t)1 << 62) /* alloc.c numbers chunked allocations from here */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char path[TM_CONFIG_PATH_MAX]; /* empty: no profile */
static tm_profile loaded;             /* what the file held, while it still applies */
static bool have_loaded;
static uint64_t applied_below;        /* allocations of lower order were seeded or passed */
static tm_profile kept;               /* this run's heat, growing as allocations go */
static size_t kept_capacity;

/* The file functions of the interposer's own hooks are bypassed: open goes straight to
 * the kernel, reads through libc_real.h. Never through a symlink, never waiting on a FIFO
 * or a device. */
static int open_direct(const char *name, int flags, mode_t mode)
{
    return (int)syscall(SYS_openat, AT_FDCWD, name, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode);
}

/* ---------------------------------------------------------------- start */

/* The file's bytes, or NULL with why not; `*foreign` when it is not this user's regular
 * file at all (then it is not written at exit either). */
static uint8_t *read_file(int fd, size_t *size, bool *foreign, char *why, size_t why_size)
{
    struct stat st;
    *foreign = true;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, why_size, "not a regular file, never read or written");
        return NULL;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, why_size, "owned by another user (uid %u), never read or written", (unsigned)st.st_uid);
        return NULL;
    }
    *foreign = false;
    if ((uint64_t)st.st_size > TM_PROFILE_MAX_BYTES) {
        snprintf(why, why_size, "larger than any profile (%lld bytes; the limit is %zu MiB)", (long long)st.st_size,
                 TM_PROFILE_MAX_BYTES >> 20);
        return NULL;
    }
    uint8_t *data = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (data && got < (size_t)st.st_size) {
        ssize_t n = tm_libc_pread(fd, data + got, (size_t)st.st_size - got, (off_t)got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (!data || got != (size_t)st.st_size) {
        snprintf(why, why_size, "%s", data ? "cannot be read whole" : "out of memory");
        free(data);
        return NULL;
    }
    *size = got;
    return data;
}

void tm_warm_start_load(const tm_config *config)
{
    if (!config->profile_path[0] || config->policy != TM_POLICY_HEAT || tm_heat_source_active() == TM_HEAT_SOURCE_OFF)
        return;
    snprintf(path, sizeof path, "%s", config->profile_path);
    int fd = open_direct(path, O_RDONLY, 0);
    if (fd < 0) {
        if (errno == ENOENT) {
            tm_info("profile %s: none yet; this run writes it at exit", path);
            return;
        }
        tm_warn("profile %s: cannot be opened (%s%s); starting cold, and it is not written at exit", path,
                strerror(errno), errno == ELOOP ? ": a symlink is never followed" : "");
        path[0] = '\0';
        return;
    }
    char why[160] = "";
    size_t size = 0;
    bool foreign;
    uint8_t *data = read_file(fd, &size, &foreign, why, sizeof why);
    tm_libc_close(fd);
    if (data && tm_profile_decode(data, size, &loaded, why, sizeof why) == 0) {
        have_loaded = true;
        tm_info("profile %s: heat of %zu allocations; placing by it from the first launch", path, loaded.count);
    } else {
        tm_warn("profile %s: %s; ignored", path, why);
    }
    if (foreign)
        path[0] = '\0'; /* said once: nothing is kept or written for it */
    free(data);
}

bool tm_warm_start_pending(void)
{
    return __atomic_load_n(&have_loaded, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- seeding */

typedef struct check_state {
    uint64_t next_below;      /* the highest order seen, plus one */
    bool stale;               /* an allocation the profile does not match */
    char why[200];
} check_state;

/* The first tensor copied into the allocation, or NULL. */
static const char *tensor_name(const tm_alloc *a)
{
    const tm_tensor **label = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE);
    for (uint64_t i = 0; label && a->backing && i < a->backing->plan.chunks; i++)
        if (label[i])
            return label[i]->name;
    return NULL;
}

static void check_one(tm_alloc *a, void *arg)
{
    check_state *s = arg;
    if (!a->backing || !a->heat || a->id < FIRST_ORDER + applied_below || s->stale)
        return;
    uint64_t order = a->id - FIRST_ORDER;
    if (order + 1 > s->next_below)
        s->next_below = order + 1;
    const tm_profile_entry *e = tm_profile_find(&loaded, order);
    if (!e)
        return; /* made after the profiled run ended, or too small to keep then */
    if (((uint64_t)1 << a->heat_chunk_shift) != loaded.chunk_size) {
        snprintf(s->why, sizeof s->why, "chunks of %llu bytes here, %llu in the profile",
                 (unsigned long long)1 << a->heat_chunk_shift, (unsigned long long)loaded.chunk_size);
        s->stale = true;
    } else if (!tm_profile_check(e, a->range.size, tensor_name(a), s->why, sizeof s->why)) {
        s->stale = true;
    } else if (e->chunks != a->heat_chunks) {
        snprintf(s->why, sizeof s->why, "allocation %llu has another chunk count", (unsigned long long)order);
        s->stale = true;
    }
}

void tm_warm_start_check(void)
{
    if (!tm_warm_start_pending())
        return;
    pthread_mutex_lock(&lock);
    check_state s = { 0 };
    tm_alloc_each(check_one, &s);
    if (s.stale) {
        tm_warn("profile %s: stale (%s); ignored", path, s.why);
        tm_profile_free(&loaded);
        __atomic_store_n(&have_loaded, false, __ATOMIC_RELAXED);
    } else if (s.next_below > applied_below) {
        applied_below = s.next_below;
    }
    pthread_mutex_unlock(&lock);
}

const float *tm_warm_start_heat(const tm_alloc *a)
{
    if (!tm_warm_start_pending() || !a->backing || a->id < FIRST_ORDER || a->id >= FIRST_ORDER + applied_below)
        return NULL;
    const tm_profile_entry *e = tm_profile_find(&loaded, a->id - FIRST_ORDER);
    return e && e->chunks == a->heat_chunks ? e->heat : NULL;
}

/* ---------------------------------------------------------------- keeping */

void tm_warm_start_note(const tm_alloc *a)
{
    if (!path[0] || !a->backing || !a->heat || a->id < FIRST_ORDER)
        return;
    uint64_t tick = tm_heat_now_tick();
    float *heat = malloc((size_t)a->heat_chunks * sizeof *heat + 1);
    if (!heat)
        return;
    pthread_mutex_lock(&lock);
    const float *profiled = tm_warm_start_heat(a); /* what this run was lent, if anything */
    for (uint32_t h = 0; h < a->heat_chunks; h++) {
        heat[h] = (float)tm_heat_alloc_density(a, h, tick);
        if (profiled && profiled[h] > heat[h])
            heat[h] = profiled[h];
    }
    pthread_mutex_unlock(&lock);
    tm_profile_entry e = { .order = a->id - FIRST_ORDER, .size = a->range.size, .chunks = a->heat_chunks,
                           .heat = heat };
    const char *name = tensor_name(a);
    snprintf(e.name, sizeof e.name, "%s", name ? name : "");
    pthread_mutex_lock(&lock);
    kept.chunk_size = (uint64_t)1 << a->heat_chunk_shift;
    if (kept.count == kept_capacity) {
        size_t capacity = kept_capacity ? 2 * kept_capacity : 64;
        tm_profile_entry *grown = realloc(kept.entry, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&lock);
            free(heat);
            return;
        }
        kept.entry = grown;
        kept_capacity = capacity;
    }
    kept.entry[kept.count++] = e;
    pthread_mutex_unlock(&lock);
}

/* ---------------------------------------------------------------- exit */

static int by_order(const void *x, const void *y)
{
    const tm_profile_entry *a = x, *b = y;
    return (a->order > b->order) - (a->order < b->order);
}

/* What stands at `path` now: nothing (`*absent`), or a profile of this user that may be
 * replaced. NULL when it may be written, else why not. */
static const char *refusal(bool *absent)
{
    struct stat st;
    *absent = false;
    if (lstat(path, &st) != 0) {
        *absent = errno == ENOENT;
        return *absent ? NULL : strerror(errno);
    }
    if (S_ISLNK(st.st_mode))
        return "it is a symlink, never followed";
    if (!S_ISREG(st.st_mode))
        return "it is not a regular file";
    if (st.st_uid != geteuid())
        return "it belongs to another user, never replaced";
    int fd = open_direct(path, O_RDONLY, 0);
    uint8_t magic[8];
    bool ours = fd >= 0 && tm_libc_pread(fd, magic, sizeof magic, 0) == (ssize_t)sizeof magic &&
                tm_profile_has_magic(magic, sizeof magic);
    if (fd >= 0)
        tm_libc_close(fd);
    return ours ? NULL : "a file that is not a tiermem profile is there";
}

static bool write_all(int fd, const uint8_t *data, size_t size)
{
    while (size) {
        ssize_t n = write(fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        size -= (size_t)n;
    }
    return true;
}

static void note_live(tm_alloc *a, void *arg)
{
    (void)arg;
    tm_warm_start_note(a);
}

void tm_warm_start_save(void)
{
    if (!path[0])
        return;
    /* what the program still holds: tiermem leaves it to the driver at exit, unreleased */
    tm_alloc_each(note_live, NULL);
    pthread_mutex_lock(&lock);
    qsort(kept.entry, kept.count, sizeof *kept.entry, by_order);
    uint8_t *image = NULL;
    size_t size = 0;
    bool absent;
    const char *why = refusal(&absent);
    char temp[TM_CONFIG_PATH_MAX + 32];
    snprintf(temp, sizeof temp, "%s.%ld.tmp", path, (long)getpid());
    if (!why && tm_profile_encode(&kept, &image, &size) != 0)
        why = "out of memory";
    int fd = why ? -1 : open_direct(temp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (!why && fd < 0)
        why = strerror(errno);
    if (fd >= 0) {
        bool ok = write_all(fd, image, size) && fsync(fd) == 0;
        ok = tm_libc_close(fd) == 0 && ok;
        /* where there was no file, link never replaces one that appeared since (another
         * user's, in a sticky directory); where there was, it is this user's own */
        errno = 0;
        if (!ok || (absent ? link(temp, path) : rename(temp, path)) != 0)
            why = errno == EEXIST ? "a file appeared there meanwhile, left alone" : strerror(errno ? errno : EIO);
        unlink(temp); /* ours: made with O_EXCL just now (gone already after a rename) */
    }
    if (why)
        tm_warn("profile %s: not written (%s)", path, why);
    else
        tm_info("profile %s: heat of %zu allocations written", path, kept.count);
    free(image);
    tm_profile_free(&kept);
    kept_capacity = 0;
    tm_profile_free(&loaded);
    __atomic_store_n(&have_loaded, false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
}

/* ---------------------------------------------------------------- the watcher */

static void warm_released(tm_alloc *a, tm_release_kind how)
{
    if (how == TM_RELEASE_FREED)
        tm_warm_start_note(a);
}

const tm_alloc_watcher tm_warm_start_alloc_watcher = {
    .name = "warm start",
    .released = warm_released,
};
