/* rebalancer.c — the heat policy's thread (see rebalancer.h). */
#include "preload/move/rebalancer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/rebalance.h"
#include "preload/mem/alloc.h"
#include "preload/driver/clock.h"
#include "preload/heat/heat.h"
#include "preload/base/log.h"
#include "preload/move/migrate.h"
#include "preload/region/stats.h"
#include "preload/mem/stream_free.h"
#include "preload/move/stream_ring.h"
#include "preload/heat/warm_start.h"

static pthread_t thread;
static bool running;
static bool timer;              /* the thread runs (wall-clock budget only) */
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stop_cond = PTHREAD_COND_INITIALIZER;
static bool stopping;
static tm_device *rebalanced;
static uint64_t migrate_rate;   /* bytes/s */
static pthread_mutex_t pass_lock = PTHREAD_MUTEX_INITIALIZER; /* one pass at a time */
static uint64_t last_pass_ns;   /* budget clock (clock.h) of the last pass (or of the start) */
static bool on_launches;    /* the launch trigger is on */
static bool soon;           /* the next launch of any thread runs a pass */
static __thread uint32_t countdown = TM_REBALANCE_LAUNCHES; /* this thread's launches to its next pass */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- snapshot */

typedef struct snap_alloc {
    CUdeviceptr base;
    uint64_t chunk_size;
    uint64_t chunks;
    uint8_t *tier;      /* [chunks] */
    double *heat;       /* [chunks] */
    uint32_t *idle;     /* [chunks] */
    uint8_t *pin;       /* [chunks] the tier a rule keeps each chunk in, or NULL: no rule matches */
    bool loaded;        /* model-file data was copied into it */
} snap_alloc;

typedef struct snapshot {
    const tm_device *device;   /* the device whose allocations are rebalanced */
    bool present[TM_TIER_COUNT]; /* a rule naming an absent tier keeps nothing there */
    snap_alloc *alloc;
    size_t count, capacity;
    uint64_t tick;
    uint32_t pass;
    bool out_of_memory;
} snapshot;

/* The tier the first rule matching chunk `index` names (by the allocation's size, and the
 * tensor copied into the chunk), TM_TIER_COUNT when none does or its tier is absent. */
static uint8_t rule_pin(const snapshot *s, const tm_alloc *a, const tm_tensor *label)
{
    tm_alloc_desc desc = { .size = a->range.size, .name = label ? label->name : NULL };
    const tm_rule *rule = tm_rules_match(&s->device->policy.rules, &desc);
    return rule && !rule->plain && s->present[rule->tier] ? (uint8_t)rule->tier : TM_TIER_COUNT;
}

/* Fills sa->pin, left NULL when no rule matches a chunk. False when memory ran short: the
 * snapshot is dropped then, since a pass without the pins could move what a rule keeps. */
static bool take_pins(snapshot *s, const tm_alloc *a, snap_alloc *sa)
{
    if (!s->device->policy.rules.count)
        return true;
    const tm_tensor **labels = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE);
    uint8_t *pin = malloc(sa->chunks);
    if (!pin)
        return false;
    bool any = false;
    const tm_tensor *previous = NULL;
    for (uint64_t i = 0; i < sa->chunks; i++) {
        const tm_tensor *t = labels ? __atomic_load_n(&labels[i], __ATOMIC_RELAXED) : NULL;
        pin[i] = i > 0 && t == previous ? pin[i - 1] : rule_pin(s, a, t); /* a tensor spans chunks */
        previous = t;
        any |= pin[i] != TM_TIER_COUNT;
    }
    if (any)
        sa->pin = pin;
    else
        free(pin);
    return true;
}

static void take_alloc(tm_alloc *a, void *arg)
{
    snapshot *s = arg;
    const tm_backing *b = a->backing;
    if (!b || b->pinned_host || s->out_of_memory || a->device != s->device)
        return;
    if (s->count == s->capacity) {
        size_t capacity = s->capacity ? 2 * s->capacity : 16;
        snap_alloc *grown = realloc(s->alloc, capacity * sizeof *grown);
        if (!grown) {
            s->out_of_memory = true;
            return;
        }
        s->alloc = grown;
        s->capacity = capacity;
    }
    uint64_t n = b->plan.chunks;
    snap_alloc *sa = &s->alloc[s->count];
    *sa = (snap_alloc){ .base = b->base, .chunk_size = b->plan.chunk_size, .chunks = n,
                        .loaded = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE) != NULL,
                        .tier = malloc(n), .heat = malloc(n * sizeof(double)), .idle = malloc(n * sizeof(uint32_t)) };
    if (!sa->tier || !sa->heat || !sa->idle || !take_pins(s, a, sa)) {
        free(sa->tier);
        free(sa->heat);
        free(sa->idle);
        s->out_of_memory = true;
        return;
    }
    const float *profiled = tm_warm_start_heat(a);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t moved = tm_backing_last_move(b, i, NULL);
        sa->tier[i] = (uint8_t)tm_backing_chunk_tier(b, i);
        sa->idle[i] = moved ? s->pass - moved : TM_REBALANCE_NEVER;
        uint64_t h = a->heat ? (i * b->plan.chunk_size) >> a->heat_chunk_shift : 0;
        sa->heat[i] = h < a->heat_chunks ? tm_heat_alloc_density(a, (uint32_t)h, s->tick) : 0.0;
        if (profiled && h < a->heat_chunks && profiled[h] > sa->heat[i])
            sa->heat[i] = profiled[h];
    }
    s->count++;
}

static void free_snapshot(snapshot *s)
{
    for (size_t i = 0; i < s->count; i++) {
        free(s->alloc[i].tier);
        free(s->alloc[i].heat);
        free(s->alloc[i].idle);
        free(s->alloc[i].pin);
    }
    free(s->alloc);
}

/* ---------------------------------------------------------------- a pass */

static void carry_out(const snapshot *s, const tm_rebalance_move *moves, int count)
{
    /* demotions first: they make the room promotions take */
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < count; i++) {
            const tm_rebalance_move *m = &moves[i];
            if ((m->to == TM_TIER_HBM) != (round == 1))
                continue;
            const snap_alloc *a = &s->alloc[m->alloc];
            tm_debug("rebalance: chunks %llu..%llu of 0x%llx (%llu chunks, heat %.3g) to %s",
                     (unsigned long long)m->first, (unsigned long long)(m->first + m->count - 1),
                     (unsigned long long)a->base, (unsigned long long)a->chunks, a->heat[m->first],
                     tm_tier_name(m->to));
            tm_migrate_range(a->base + m->first * a->chunk_size, m->count * a->chunk_size, m->to);
        }
}

static void rebalance_once(tm_device *d, uint64_t budget)
{
    tm_warm_start_check();
    snapshot s = { .device = d, .tick = tm_heat_now_tick(), .pass = __atomic_load_n(&tm_migrate_pass, __ATOMIC_RELAXED) };
    tm_tiers now;
    pthread_mutex_lock(&d->place_lock);
    tm_device_tiers_now(d, &now);
    pthread_mutex_unlock(&d->place_lock);
    for (int t = 0; t < TM_TIER_COUNT; t++)
        s.present[t] = now.tier[t].present;
    tm_remap_lock(); /* tiers and pass numbers do not change while they are read */
    tm_alloc_each(take_alloc, &s);
    tm_remap_unlock();
    tm_rebalance_alloc *in = s.out_of_memory || !s.count ? NULL : malloc(s.count * sizeof *in);
    tm_rebalance_move *moves = in ? malloc(64 * sizeof *moves) : NULL;
    if (moves) {
        bool streaming = tm_stream_ring_streaming(), watched = __atomic_load_n(&tm_stream_weights_known, __ATOMIC_ACQUIRE);
        for (size_t i = 0; i < s.count; i++)
            in[i] = (tm_rebalance_alloc){ .chunks = s.alloc[i].chunks, .tier = s.alloc[i].tier,
                                          .heat = s.alloc[i].heat, .idle = s.alloc[i].idle,
                                          .pin = s.alloc[i].pin, .loaded = s.alloc[i].loaded,
                                          .streams = watched && s.alloc[i].loaded &&
                                                     !tm_stream_ring_only_gathered(s.alloc[i].base) };
        pthread_mutex_lock(&d->place_lock); /* the room after the snapshot: memory freed meanwhile counts */
        tm_device_tiers_now(d, &now);
        pthread_mutex_unlock(&d->place_lock);
        tm_rebalance_input input = { .alloc = in, .alloc_count = s.count, .budget = budget,
                                     .cooldown = TM_REBALANCE_COOLDOWN, .order = &d->policy.order,
                                     .streamed_cost = streaming ? TM_REBALANCE_STREAMED_COST : 1.0,
                                     .weights_stay = watched };
        for (int t = 0; t < TM_TIER_COUNT; t++)
            input.room[t] = now.tier[t].present ? tm_tier_room(&now, (tm_tier_id)t) / d->policy.chunk_size : 0;
        int count = tm_rebalance_plan(&input, moves, 64);
        if (count > 0)
            carry_out(&s, moves, count);
    }
    free(moves);
    free(in);
    free_snapshot(&s);
    __atomic_fetch_add(&tm_migrate_pass, 1, __ATOMIC_RELAXED);
}

/* Everything in HBM: no pass, not even the snapshot. */
static bool all_in_hbm(void)
{
    for (int t = TM_TIER_HBM + 1; t < TM_TIER_COUNT; t++)
        if (__atomic_load_n(&tm_stats->tier[t].chunks, __ATOMIC_RELAXED))
            return false;
    return true;
}

/* A pass with the moves earned since the last one, unless another pass runs or none is
 * earned yet (the time keeps counting then). `wait`: the timer, or the pass a warm-start
 * profile waits for (`profile`), waits its turn. */
static void pass_if_earned(bool wait, bool profile)
{
    if (wait)
        pthread_mutex_lock(&pass_lock);
    else if (pthread_mutex_trylock(&pass_lock) != 0)
        return;
    if (!__atomic_load_n(&on_launches, __ATOMIC_RELAXED)) { /* stopped: memory is going away */
        pthread_mutex_unlock(&pass_lock);
        return;
    }
    uint64_t now = tm_clock_ns();
    uint64_t budget = tm_rebalance_earned(migrate_rate, tm_rebalance_elapsed(last_pass_ns, now, profile),
                                          rebalanced->policy.chunk_size);
    if (budget && !all_in_hbm()) {
        rebalance_once(rebalanced, budget);
        last_pass_ns = now;
        __atomic_store_n(&tm_stats->last_rebalance_ns, now_ns(), __ATOMIC_RELAXED);
        __atomic_store_n(&tm_stats->rebalance_budget, budget * rebalanced->policy.chunk_size, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&pass_lock);
}

/* A thread's countdown ran out, or a profile waits: a pass, unless the launch is being
 * captured (a capture must not see the pass's synchronisation; the next turn will come). */
static bool rebalance_before_launch(tm_launch *l)
{
    if (--countdown != 0 && !__atomic_load_n(&soon, __ATOMIC_RELAXED))
        return false;
    countdown = TM_REBALANCE_LAUNCHES;
    if (tm_launch_capturing(l))
        return false;
    /* the pass a profile waits for runs before the first launch goes, whoever runs it */
    bool waiting = __atomic_exchange_n(&soon, false, __ATOMIC_RELAXED);
    pass_if_earned(waiting, waiting);
    return false;
}

const tm_launch_watcher tm_rebalancer_launch_watcher = {
    .name = "rebalancer",
    .watching = &on_launches,
    .before = rebalance_before_launch,
};

static void *rebalance_loop(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&stop_lock);
    while (!stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TM_REBALANCE_INTERVAL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&stop_cond, &stop_lock, &until);
        if (stopping)
            break;
        pthread_mutex_unlock(&stop_lock);
        pass_if_earned(true, false);
        pthread_mutex_lock(&stop_lock);
    }
    pthread_mutex_unlock(&stop_lock);
    return NULL;
}

/* ---------------------------------------------------------------- start and stop */

void tm_rebalancer_start(tm_device *device, uint64_t rate)
{
    if (device->policy.kind != TM_POLICY_HEAT || running)
        return;
    const char *why = rate == 0 ? "TIERMEM_MIGRATE_RATE=0"
                      : device->target.pinned_host ? "lower tiers are pinned host memory"
                      : tm_heat_source_active() == TM_HEAT_SOURCE_OFF ? "heat is off" : NULL;
    if (why) {
        tm_info("policy heat: chunks stay where they were placed (%s)", why);
        return;
    }
    migrate_rate = rate;
    last_pass_ns = tm_clock_ns();
    rebalanced = device;
    stopping = false;
    /* simulated time moves with the program's work, not with the timer: launches alone
     * bring passes, at the same points of the launch stream every run */
    timer = !tm_clock_simulated();
    if (timer && pthread_create(&thread, NULL, rebalance_loop, NULL) != 0) {
        tm_log_once(TM_LOG_WARN, "cannot start the rebalancer thread; chunks stay where they were placed");
        return;
    }
    running = true;
    __atomic_store_n(&soon, tm_warm_start_pending(), __ATOMIC_RELAXED);
    __atomic_store_n(&on_launches, true, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_stats->migrate_rate, rate, __ATOMIC_RELAXED);
}

void tm_rebalancer_forget_in_child(void)
{
    pthread_mutex_init(&stop_lock, NULL);
    pthread_cond_init(&stop_cond, NULL);
    pthread_mutex_init(&pass_lock, NULL);
    __atomic_store_n(&on_launches, false, __ATOMIC_RELAXED);
    running = false;
}

void tm_rebalancer_stop(void)
{
    if (!running)
        return;
    __atomic_store_n(&on_launches, false, __ATOMIC_RELAXED);
    if (timer) {
        pthread_mutex_lock(&stop_lock);
        stopping = true;
        pthread_cond_signal(&stop_cond);
        pthread_mutex_unlock(&stop_lock);
        pthread_join(thread, NULL);
    }
    pthread_mutex_lock(&pass_lock); /* a launch's pass ends before memory is released */
    running = false;
    pthread_mutex_unlock(&pass_lock);
}
