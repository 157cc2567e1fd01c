/* stats.c — creating and updating the stats region (see stats.h, stats_layout.h). */
#include "preload/region/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/base/log.h"
#include "preload/base/libc_real.h"
#include "preload/region/region_path.h"

/* ---------------------------------------------------------------- private fallback */

static tm_stats_header private_header;
static tm_stats_call private_calls[TM_HOOK_COUNT];

tm_stats_header *tm_stats = &private_header;
tm_stats_call *tm_stats_calls = private_calls;

/* ---------------------------------------------------------------- the region */

static void *region;            /* the mapping, or NULL */
static size_t region_size;
static char region_path[TM_CONFIG_PATH_MAX + 32];
static bool remove_at_exit;
static pid_t region_pid;
static bool in_fork_child;      /* a configured path then gets ".<pid>" so the parent's stays */
static tm_stats_record *records;
static tm_stats_heat_record *heat_records;
static tm_stats_heat_chunk *heat_chunks;

/* Free record slots, as a stack. */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static int free_slots[TM_STATS_RECORDS];
static int free_count;

/* The heat chunk pool: handed out from `heat_next` onwards, and spans given back are kept
 * for reuse (first fit), under slot_lock. */
typedef struct heat_span {
    uint64_t first;
    uint32_t count;
} heat_span;
static heat_span free_spans[TM_STATS_RECORDS];
static int free_span_count;
static uint64_t heat_next;
/* The span each record slot owns, kept here: the heat records are shared with a collector,
 * so their first_chunk and chunk_count are written for readers, never read back. */
static heat_span slot_spans[TM_STATS_RECORDS];

_Static_assert(sizeof(tm_stats_heat_chunk) == sizeof(tm_heat_chunk), "a heat chunk is published as it is");

static size_t records_offset(void)
{
    return sizeof(tm_stats_header) + TM_HOOK_COUNT * sizeof(tm_stats_call);
}

static size_t heat_records_offset(void)
{
    return records_offset() + TM_STATS_RECORDS * sizeof(tm_stats_record);
}

static size_t heat_chunks_offset(void)
{
    return heat_records_offset() + TM_STATS_RECORDS * sizeof(tm_stats_heat_record);
}

static size_t layout_size(void)
{
    return heat_chunks_offset() + (size_t)TM_STATS_HEAT_CHUNKS * sizeof(tm_stats_heat_chunk);
}

/* Is the file at `fd` a stats region of ours: a regular file this user owns that starts
 * with the region's magic? Only such a file may be replaced. */
static bool own_region_file(int fd)
{
    struct stat st;
    uint64_t magic = 0;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
           tm_libc_pread(fd, &magic, sizeof magic, 0) == (ssize_t)sizeof magic && magic == TM_STATS_MAGIC;
}

/* Creates a new file in place of the region of ours at region_path: a fresh name in the
 * same directory, renamed over it once sized, so no one ever sees a short region. */
static int replace_region(void)
{
    char temp[sizeof region_path + 16];
    snprintf(temp, sizeof temp, "%s.XXXXXX", region_path);
    int fd = mkostemp(temp, O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)layout_size()) != 0 || rename(temp, region_path) != 0) {
        int saved = errno;
        unlink(temp); /* our own, just made */
        tm_libc_close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* The directory of this user's regions, made 0700 if it is missing: usable only when it is
 * a directory (not a symlink) of this user with mode 0700. Returns false with *refusal set
 * (the directory's name is in region_path). */
static bool region_dir_ready(const char **refusal)
{
    uid_t uid = geteuid();
    tm_region_dir(uid, region_path, sizeof region_path);
    bool made = mkdir(region_path, 0700) == 0;
    if (!made && errno != EEXIST) {
        *refusal = strerror(errno);
        return false;
    }
    if (made) { /* a umask may have taken bits off the one made here */
        int fd = tm_libc_open(region_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
        if (fd >= 0) {
            fchmod(fd, 0700);
            tm_libc_close(fd);
        }
    }
    /* lstat needs no access to the directory: one of another user is named as such. In
     * the sticky /dev/shm no one else can replace a directory of ours afterwards. */
    struct stat st;
    if (lstat(region_path, &st) != 0) {
        *refusal = strerror(errno);
        return false;
    }
    const char *why = tm_region_dir_refusal(&st, uid);
    if (why) {
        static char reason[96];
        snprintf(reason, sizeof reason, "%s; it is left untouched", why);
        *refusal = reason;
        return false;
    }
    return true;
}

/* Opens a new file for the region, created here with O_EXCL (never a file someone else
 * made, never through a symlink). An existing name is replaced only when it holds a
 * stats region of this user (a kept TIERMEM_STATS path, or a leftover of a dead process
 * with our pid); anything else is left alone and the region is not created. The default
 * name lies in this user's own directory (region_path.h), where no one else can put one. */
static int create_file(const tm_config *config, pid_t pid, bool *fresh, bool *dir_refused, const char **refusal)
{
    *fresh = true;
    if (config->stats_path[0]) {
        if (in_fork_child)
            snprintf(region_path, sizeof region_path, "%s.%d", config->stats_path, (int)pid);
        else
            snprintf(region_path, sizeof region_path, "%s", config->stats_path);
        remove_at_exit = false;
    } else {
        remove_at_exit = true;
        if (!region_dir_ready(refusal)) {
            *dir_refused = true;
            errno = EPERM;
            return -1;
        }
        tm_region_path(pid, geteuid(), region_path, sizeof region_path);
    }
    int fd = tm_libc_open(region_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 || errno != EEXIST)
        return fd;
    /* O_NONBLOCK: a FIFO at the path must not hang the process */
    int old = tm_libc_open(region_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    bool ours = old >= 0 && own_region_file(old);
    if (old >= 0)
        tm_libc_close(old);
    if (!ours) {
        *refusal = "it exists and is not a stats region of this user; it is left untouched";
        errno = EEXIST;
        return -1;
    }
    *fresh = false;
    return replace_region();
}

static void describe(tm_stats_header *h, const tm_config *config, const tm_stats_setup *setup, pid_t pid)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    h->version = TM_STATS_VERSION;
    h->header_size = sizeof *h;
    h->call_size = sizeof(tm_stats_call);
    h->call_count = TM_HOOK_COUNT;
    h->calls_offset = sizeof *h;
    h->record_size = sizeof(tm_stats_record);
    h->record_capacity = TM_STATS_RECORDS;
    h->records_offset = records_offset();
    h->heat_records_offset = heat_records_offset();
    h->heat_record_size = sizeof(tm_stats_heat_record);
    h->heat_chunk_size = sizeof(tm_stats_heat_chunk);
    h->heat_chunks_offset = heat_chunks_offset();
    h->heat_chunk_capacity = TM_STATS_HEAT_CHUNKS;
    h->heat_tick_ns = config->heat_halflife_ns / TM_HEAT_TICKS_PER_HALFLIFE;
    snprintf(h->heat_source, sizeof h->heat_source, "%s", tm_heat_source_name(setup->heat));
    h->pid = (int32_t)pid;
    h->state = TM_STATS_RUNNING;
    h->start_time_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    h->device = setup->device;
    h->backing = setup->pinned_host_backing ? TM_STATS_BACKING_PINNED_HOST : TM_STATS_BACKING_VMM;
    h->chunk_size = setup->chunk_size;
    h->min_tiered = config->min_tiered;
    h->hbm_reserve = setup->tiers->hbm_reserve;
    h->device_memory = setup->device_memory;
    snprintf(h->policy, sizeof h->policy, "%s", tm_policy_name(config->policy));
    snprintf(h->meminfo, sizeof h->meminfo, "%s", tm_meminfo_view_name(config->meminfo));
    tm_tier_order_format(&config->order, h->tier_order, sizeof h->tier_order);
    for (int t = 0; t < TM_STATS_TIERS; t++) {
        const tm_tier_state *state = &setup->tiers->tier[t];
        snprintf(h->tier[t].name, sizeof h->tier[t].name, "%s", tm_tier_name((tm_tier_id)t));
        h->tier[t].present = state->present;
        h->tier[t].numa_node = t == TM_TIER_HBM ? setup->device : state->node;
        h->tier[t].limit = state->limit;
    }
}

/* ---------------------------------------------------------------- signals */

/* Signals whose default action ends the process without running exit handlers: the
 * default region is removed first. The program's own handling stays what it was: a
 * handler it installed before us is called instead, and one it installs later replaces
 * ours; an ignored signal stays ignored. */
static const int cleanup_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };
#define CLEANUP_SIGNALS (int)(sizeof cleanup_signals / sizeof cleanup_signals[0])
static struct sigaction previous_action[CLEANUP_SIGNALS];

static void remove_region_on_signal(int sig, siginfo_t *info, void *context)
{
    for (int i = 0; i < CLEANUP_SIGNALS; i++) {
        if (cleanup_signals[i] != sig)
            continue;
        const struct sigaction *old = &previous_action[i];
        if (old->sa_flags & SA_SIGINFO) {
            old->sa_sigaction(sig, info, context);
        } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
            old->sa_handler(sig);
        } else {
            int saved = errno;
            if (region && region_pid == getpid())
                unlink(region_path); /* async-signal-safe */
            /* the default action, as if we had never been here: it runs on return */
            struct sigaction fallback = { .sa_handler = SIG_DFL };
            sigemptyset(&fallback.sa_mask);
            sigaction(sig, &fallback, NULL);
            raise(sig);
            errno = saved;
        }
        return;
    }
}

static void remove_region_on_signals(void)
{
    static bool installed;
    if (__atomic_exchange_n(&installed, true, __ATOMIC_ACQ_REL))
        return;
    for (int i = 0; i < CLEANUP_SIGNALS; i++) {
        struct sigaction old;
        if (sigaction(cleanup_signals[i], NULL, &old) != 0 ||
            (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN))
            continue;
        previous_action[i] = old;
        struct sigaction ours = { .sa_sigaction = remove_region_on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
        ours.sa_mask = old.sa_mask;
        sigaction(cleanup_signals[i], &ours, NULL);
    }
}

void tm_stats_open(const tm_config *config, const tm_stats_setup *setup)
{
    pid_t pid = getpid();
    describe(&private_header, config, setup, pid);
    for (int i = 0; i < TM_HOOK_COUNT; i++)
        snprintf(private_calls[i].symbol, sizeof private_calls[i].symbol, "%s", tm_hook_symbols[i]);
    if (config->stats_off)
        return;

    bool fresh = true, dir_refused = false;
    const char *refusal = NULL;
    int fd = create_file(config, pid, &fresh, &dir_refused, &refusal);
    size_t size = layout_size();
    void *map = MAP_FAILED;
    if (fd >= 0 && (!fresh || ftruncate(fd, (off_t)size) == 0))
        map = tm_libc_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    if (fd >= 0)
        tm_libc_close(fd);
    if (map == MAP_FAILED) {
        char shown[96];
        tm_printable(region_path, shown, sizeof shown);
        if (dir_refused)
            tm_warn("cannot use the stats region directory '%s' (%s); going on without a region", shown, refusal);
        else
            tm_warn("cannot create the stats region '%s' (%s); going on without it", shown,
                    refusal ? refusal : strerror(saved));
        if (fd >= 0)
            unlink(region_path); /* the file this process just created */
        return;
    }

    /* what was counted before the region existed moves into it */
    tm_stats_header *h = map;
    memcpy(h, &private_header, sizeof *h);
    tm_stats_call *calls = (tm_stats_call *)((char *)map + h->calls_offset);
    memcpy(calls, private_calls, sizeof private_calls);
    records = (tm_stats_record *)((char *)map + h->records_offset);
    heat_records = (tm_stats_heat_record *)((char *)map + h->heat_records_offset);
    heat_chunks = (tm_stats_heat_chunk *)((char *)map + h->heat_chunks_offset);
    pthread_mutex_lock(&slot_lock);
    free_count = 0;
    for (int i = TM_STATS_RECORDS - 1; i >= 0; i--)
        free_slots[free_count++] = i;
    free_span_count = 0;
    heat_next = 0;
    memset(slot_spans, 0, sizeof slot_spans);
    pthread_mutex_unlock(&slot_lock);

    region = map;
    region_size = size;
    region_pid = pid;
    tm_stats_calls = calls;
    __atomic_store_n(&h->magic, TM_STATS_MAGIC, __ATOMIC_RELEASE); /* readers check it last */
    __atomic_store_n(&tm_stats, h, __ATOMIC_RELEASE);
    if (remove_at_exit)
        remove_region_on_signals();
    tm_info("stats region %s", region_path);
}

/* ---------------------------------------------------------------- counters */

void tm_stats_tier_add(tm_tier_id tier, int64_t bytes, int64_t chunks)
{
    tm_stats_tier *t = &tm_stats->tier[tier];
    uint64_t used = __atomic_add_fetch(&t->used, (uint64_t)bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&t->chunks, (uint64_t)chunks, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&t->peak, __ATOMIC_RELAXED);
    while (bytes > 0 && used > peak &&
           !__atomic_compare_exchange_n(&t->peak, &peak, used, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void tm_stats_tier_absent(tm_tier_id tier)
{
    __atomic_store_n(&tm_stats->tier[tier].present, 0, __ATOMIC_RELAXED);
}

void tm_stats_migrated(tm_tier_id from, tm_tier_id to, uint64_t count)
{
    if (from == to || from >= TM_STATS_TIERS || to >= TM_STATS_TIERS)
        return;
    /* migrated_out holds the other tiers in order, the tier itself left out */
    __atomic_fetch_add(&tm_stats->tier[from].migrated_out[to < from ? to : to - 1], count, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- devices */

int tm_stats_device_add(int ordinal, int host_node, uint64_t hbm_limit, const uint8_t uuid[16])
{
    uint32_t slot = __atomic_fetch_add(&tm_stats->device_count, 1, __ATOMIC_RELAXED);
    if (slot >= TM_STATS_DEVICES) {
        __atomic_fetch_sub(&tm_stats->device_count, 1, __ATOMIC_RELAXED);
        return -1;
    }
    tm_stats_device *d = &tm_stats->devices[slot];
    d->ordinal = ordinal;
    d->host_node = host_node;
    d->hbm_limit = hbm_limit;
    if (uuid)
        memcpy(d->uuid, uuid, sizeof d->uuid);
    return (int)slot;
}

void tm_stats_device_set(int slot, uint64_t hbm_used, uint64_t hbm_chunks)
{
    if (slot < 0)
        return;
    tm_stats_device *d = &tm_stats->devices[slot];
    __atomic_store_n(&d->hbm_used, hbm_used, __ATOMIC_RELAXED);
    __atomic_store_n(&d->hbm_chunks, hbm_chunks, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&d->hbm_peak, __ATOMIC_RELAXED);
    while (hbm_used > peak &&
           !__atomic_compare_exchange_n(&d->hbm_peak, &peak, hbm_used, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* ---------------------------------------------------------------- records */

int tm_stats_record_add(uint32_t path, uint64_t address, uint64_t size,
                        const uint32_t chunks[TM_STATS_TIERS], uint32_t flags)
{
    if (!region)
        return -1;
    pthread_mutex_lock(&slot_lock);
    int slot = free_count ? free_slots[--free_count] : -1;
    pthread_mutex_unlock(&slot_lock);
    if (slot < 0) {
        tm_stat_add(records_dropped, 1);
        return -1;
    }
    tm_stats_record *r = &records[slot];
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQ_REL); /* odd: being written */
    r->in_use = 1;
    r->path = path;
    r->address = address;
    r->size = size;
    for (int t = 0; t < TM_STATS_TIERS; t++)
        r->chunks[t] = chunks ? chunks[t] : 0;
    r->flags = flags;
    r->tensors = 0;
    r->name[0] = '\0';
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_RELEASE);
    tm_stat_add(records_used, 1);
    return slot;
}

void tm_stats_record_update(int slot, const uint32_t chunks[TM_STATS_TIERS], const char *name, uint32_t tensors)
{
    if (slot < 0 || !region)
        return;
    tm_stats_record *r = &records[slot];
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQ_REL);
    for (int t = 0; chunks && t < TM_STATS_TIERS; t++)
        r->chunks[t] = chunks[t];
    if (name) {
        snprintf(r->name, sizeof r->name, "%s", name);
        r->tensors = tensors;
    }
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_RELEASE);
}

void tm_stats_record_remove(int slot)
{
    if (slot < 0 || !region)
        return;
    tm_stats_record *r = &records[slot];
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQ_REL);
    r->in_use = 0;
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_RELEASE);
    tm_stat_sub(records_used, 1);
    pthread_mutex_lock(&slot_lock);
    heat_span span = slot_spans[slot];
    uint32_t count = span.count;
    slot_spans[slot] = (heat_span){ 0 };
    if (count && free_span_count < TM_STATS_RECORDS)
        free_spans[free_span_count++] = span;
    free_slots[free_count++] = slot;
    pthread_mutex_unlock(&slot_lock);
    if (count)
        tm_stat_sub(heat_chunks_used, count);
}

/* ---------------------------------------------------------------- heat */

/* A run of `count` pool entries, or -1. Called with slot_lock held. */
static int64_t take_heat_span(uint32_t count)
{
    for (int i = 0; i < free_span_count; i++) {
        if (free_spans[i].count < count)
            continue;
        int64_t first = (int64_t)free_spans[i].first;
        free_spans[i].first += count;
        free_spans[i].count -= count;
        if (!free_spans[i].count)
            free_spans[i] = free_spans[--free_span_count];
        return first;
    }
    if (heat_next + count > TM_STATS_HEAT_CHUNKS)
        return -1;
    heat_next += count;
    return (int64_t)(heat_next - count);
}

bool tm_stats_heat_attach(int slot, uint32_t chunk_count)
{
    if (slot < 0 || !region || !chunk_count)
        return false;
    pthread_mutex_lock(&slot_lock);
    int64_t first = take_heat_span(chunk_count);
    slot_spans[slot] = first < 0 ? (heat_span){ 0 } : (heat_span){ .first = (uint64_t)first, .count = chunk_count };
    pthread_mutex_unlock(&slot_lock);
    tm_stats_heat_record *hr = &heat_records[slot];
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_ACQ_REL);
    hr->first_chunk = first < 0 ? 0 : (uint64_t)first;
    hr->chunk_count = first < 0 ? 0 : chunk_count;
    hr->sources = 0;
    if (first >= 0)
        memset(&heat_chunks[first], 0, chunk_count * sizeof *heat_chunks);
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_RELEASE);
    if (first < 0) {
        tm_stat_add(heat_chunks_dropped, 1);
        return false;
    }
    tm_stat_add(heat_chunks_used, chunk_count);
    return true;
}

void tm_stats_heat_publish(int slot, const tm_heat_chunk *chunks, uint32_t from, uint32_t count, uint32_t source)
{
    if (slot < 0 || !region)
        return;
    tm_stats_heat_record *hr = &heat_records[slot];
    heat_span span = slot_spans[slot]; /* the caller serialises publishing for the slot */
    if (from >= span.count)
        return;
    if (count > span.count - from)
        count = span.count - from;
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_ACQ_REL);
    memcpy(&heat_chunks[span.first + from], &chunks[from], count * sizeof *heat_chunks);
    hr->sources |= source;
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_RELEASE);
}

bool tm_stats_heat_collected(int slot, uint32_t index, tm_heat_chunk *out)
{
    if (slot < 0 || !region)
        return false;
    const tm_stats_heat_record *hr = &heat_records[slot];
    for (int attempt = 0; attempt < 4; attempt++) {
        uint64_t seq = __atomic_load_n(&hr->seq, __ATOMIC_ACQUIRE);
        if (seq & 1)
            continue;
        uint32_t sources = __atomic_load_n(&hr->sources, __ATOMIC_RELAXED);
        uint64_t first = __atomic_load_n(&slot_spans[slot].first, __ATOMIC_RELAXED);
        uint32_t count = __atomic_load_n(&slot_spans[slot].count, __ATOMIC_RELAXED);
        if (!(sources & (TM_HEAT_FROM_EBPF | TM_HEAT_FROM_USDT)) || index >= count ||
            first + index >= TM_STATS_HEAT_CHUNKS)
            return false;
        tm_stats_heat_chunk c;
        memcpy(&c, &heat_chunks[first + index], sizeof c);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&hr->seq, __ATOMIC_RELAXED) != seq)
            continue;
        /* another process wrote these: a value no decayed count can take reads as none */
        double *field[] = { &c.heat, &c.pending, &c.reads, &c.writes };
        for (size_t i = 0; i < sizeof field / sizeof *field; i++)
            if (!isfinite(*field[i]) || *field[i] < 0)
                *field[i] = 0;
        *out = (tm_heat_chunk){ .tick = c.tick, .heat = c.heat, .pending = c.pending, .reads = c.reads,
                                .writes = c.writes };
        return true;
    }
    return false;
}

void tm_stats_record_flag(int slot, uint32_t flags)
{
    if (slot < 0 || !region)
        return;
    tm_stats_record *r = &records[slot];
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQ_REL);
    r->flags |= flags;
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_RELEASE);
}

void tm_stats_record_chunks(int slot, const uint32_t chunks[TM_STATS_TIERS])
{
    if (slot < 0 || !region)
        return;
    tm_stats_record *r = &records[slot];
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQ_REL);
    memcpy(r->chunks, chunks, sizeof r->chunks);
    __atomic_fetch_add(&r->seq, 1, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- lifetime */

void tm_stats_close(void)
{
    if (!region || region_pid != getpid())
        return;
    __atomic_store_n(&tm_stats->state, TM_STATS_EXITED, __ATOMIC_RELEASE);
    if (remove_at_exit)
        unlink(region_path);
    /* the mapping stays: other threads may still count into it until the process ends */
}

void tm_stats_forget_in_child(void)
{
    pthread_mutex_init(&slot_lock, NULL);
    if (region)
        tm_libc_munmap(region, region_size);
    in_fork_child = true;
    region = NULL;
    records = NULL;
    heat_records = NULL;
    heat_chunks = NULL;
    memset(&private_header, 0, sizeof private_header);
    memset(private_calls, 0, sizeof private_calls);
    tm_stats_calls = private_calls;
    tm_stats = &private_header;
}

void tm_stats_lock(void)
{
    pthread_mutex_lock(&slot_lock);
}

void tm_stats_unlock(void)
{
    pthread_mutex_unlock(&slot_lock);
}
