/* ledger.c — the ledger of lower-tier bytes (see ledger.h, ledger_layout.h).
 *
 * The file is never mapped (a process sharing it could truncate it under us): under the
 * lock it is read whole into a private copy and validated, this process's entry is written
 * back with pwrite, and the sums of the other processes of this budget are kept here for
 * placement to read. A lock that another process does not give up in time, or a file that
 * stops being a valid ledger, ends this process's use of it: it says so once and keeps its
 * own limits. */
#include "preload/tiers/ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy/units.h"
#include "preload/base/libc_real.h"
#include "preload/base/log.h"
#include "preload/base/proc_start.h"
#include "preload/region/ledger_file.h"
#include "preload/region/ledger_layout.h"

#define ANCESTORS_SEARCHED 64             /* parents walked to find the server's budget */
#define SHARED_NOTE_INTERVAL_NS (60ull * 1000000000u) /* between two lines naming a new pid */

static pthread_mutex_t thread_lock = PTHREAD_MUTEX_INITIALIZER; /* this process's threads, one at a time */
static pthread_mutex_t entry_lock = PTHREAD_MUTEX_INITIALIZER;  /* writes of this process's entry, the fd's closing */
static int ledger_fd = -1;              /* -1: no ledger, each process keeps its own limits */
static bool file_locked;                /* this process holds the file's lock (under thread_lock) */
static char ledger_path[TM_CONFIG_PATH_MAX + 64];
static tm_ledger_file *copy;            /* the file as last read under the lock */
static int self_slot = -1;              /* this process's entry in the file; -1: none */
static tm_ledger_entry self;            /* this process's entry, as it writes it */
static int column_of[TM_TIER_COUNT];    /* ledger column of each tier's node; -1: untracked */
static int node_of[TM_TIER_COUNT];      /* that node */
static uint64_t others_bytes[TM_TIER_COUNT]; /* what the other processes of this budget hold there */
static int32_t others_top[TM_TIER_COUNT];    /* the one of them holding most */
static char budget_words[96];           /* who shares this budget, for the lines that say so */
static bool joined;
static uint64_t last_start_check_ns;    /* pid reuse is checked at most every second */

/* ---------------------------------------------------------------- processes */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t add_saturated(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* ---------------------------------------------------------------- leaving the file */

/* Ends this process's use of the ledger (called with thread_lock held). */
static void stop_using(void)
{
    if (file_locked)
        tm_ledger_file_unlock(ledger_fd);
    file_locked = false;
    pthread_mutex_lock(&entry_lock);
    if (ledger_fd >= 0)
        tm_libc_close(ledger_fd);
    __atomic_store_n(&ledger_fd, -1, __ATOMIC_RELEASE);
    __atomic_store_n(&self_slot, -1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&entry_lock);
}

/* The file failed validation after this process checked it: it is renamed out of the way
 * (never deleted) when the name still names it, so the next process starts a fresh one. */
static void set_aside(const char *why)
{
    struct stat named, opened;
    char aside[sizeof ledger_path + 48], outcome[sizeof aside + 64];
    snprintf(aside, sizeof aside, "%s.damaged.%d", ledger_path, (int)getpid());
    if (fstat(ledger_fd, &opened) != 0 || lstat(ledger_path, &named) != 0 || named.st_dev != opened.st_dev ||
        named.st_ino != opened.st_ino)
        snprintf(outcome, sizeof outcome, "the name no longer names it (another process set it aside)");
    else if (rename(ledger_path, aside) != 0)
        snprintf(outcome, sizeof outcome, "it could not be set aside (%s)", strerror(errno));
    else
        snprintf(outcome, sizeof outcome, "set aside as %s", aside);
    tm_warn("ledger %s failed validation (%s): %s; this process keeps its own lower-tier limits", ledger_path, why,
            outcome);
    stop_using();
}

/* ---------------------------------------------------------------- the lock */

/* Frees the entries of processes that are gone (killed outright, or whose pid now names
 * another process), in the copy and in the file. */
static void reclaim_dead(bool check_start)
{
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        tm_ledger_entry *entry = &copy->entry[i];
        if (i == self_slot || entry->pid == 0 || tm_proc_alive(entry->pid, check_start ? entry->start_time : 0))
            continue;
        tm_info("ledger: reclaimed the share of process %d, which is gone", (int)entry->pid);
        memset(entry, 0, sizeof *entry);
        tm_ledger_file_write_entry(ledger_fd, i, entry);
    }
}

/* What the other processes of this budget hold on each tracked tier's node. */
static void sum_others(void)
{
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        int column = column_of[t];
        uint64_t sum = 0, top = 0;
        int32_t top_pid = 0;
        for (int i = 0; column >= 0 && i < TM_LEDGER_PROCESSES; i++) {
            const tm_ledger_entry *e = &copy->entry[i];
            if (i == self_slot || !tm_ledger_in_family(e, self.family, self.family_start))
                continue;
            sum = add_saturated(sum, e->bytes[column]);
            if (e->bytes[column] > top) {
                top = e->bytes[column];
                top_pid = e->pid;
            }
        }
        __atomic_store_n(&others_bytes[t], sum, __ATOMIC_RELAXED);
        __atomic_store_n(&others_top[t], top_pid, __ATOMIC_RELAXED);
    }
}

/* Reads and checks the file under its lock; false (having stopped using it) when it fails. */
static bool refresh(void)
{
    bool damaged;
    const char *why = tm_ledger_file_read(ledger_fd, copy, &damaged);
    if (why) {
        set_aside(why);
        return false;
    }
    if (self_slot >= 0) {
        tm_ledger_entry *mine = &copy->entry[self_slot];
        if (mine->pid != self.pid || mine->start_time != self.start_time) {
            set_aside(mine->pid ? "another process took this process's entry" : "this process's entry was cleared");
            return false;
        }
    }
    return true;
}

void tm_ledger_lock(void)
{
    pthread_mutex_lock(&thread_lock);
    if (ledger_fd < 0)
        return;
    if (!tm_ledger_file_lock(ledger_fd, TM_LEDGER_LOCK_WAIT_MS)) {
        tm_warn("ledger %s: its lock has been held by another process for %d ms; that process is taken as hung "
                "and this one keeps its own lower-tier limits",
                ledger_path, TM_LEDGER_LOCK_WAIT_MS);
        stop_using();
        return;
    }
    file_locked = true;
    if (!refresh())
        return;
    uint64_t now = now_ns();
    bool check_start = now - last_start_check_ns >= 1000000000u;
    if (check_start)
        last_start_check_ns = now;
    reclaim_dead(check_start);
    sum_others();
}

void tm_ledger_unlock(void)
{
    if (file_locked)
        tm_ledger_file_unlock(ledger_fd);
    file_locked = false;
    pthread_mutex_unlock(&thread_lock);
}

/* ---------------------------------------------------------------- the file */

static int open_direct(const char *path)
{
    return tm_libc_open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
}

/* A ledger is made whole under a temporary name and linked into place, so no process ever
 * reads a half-made one; when another process linked first, its ledger is used. */
static void create_ledger(const char *path, gid_t gid, bool group)
{
    char temp[sizeof ledger_path + 32];
    snprintf(temp, sizeof temp, "%s.%d.new", path, (int)getpid());
    int fd = tm_libc_open(temp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    tm_ledger_file_init(copy);
    bool ok = (!group || (fchown(fd, (uid_t)-1, gid) == 0 && fchmod(fd, 0660) == 0)) &&
              pwrite(fd, copy, sizeof *copy, 0) == (ssize_t)sizeof *copy;
    tm_libc_close(fd);
    if (ok && link(temp, path) != 0 && errno != EEXIST)
        tm_debug("ledger %s: not created (%s)", path, strerror(errno));
    unlink(temp); /* ours: made with O_EXCL just now */
}

/* Opens the ledger at `path`, creating it when there is none: a descriptor, or -1 with the
 * reason. */
static int open_ledger(const char *path, gid_t gid, bool group, const char **why)
{
    int fd = open_direct(path);
    if (fd < 0 && errno == ENOENT) {
        create_ledger(path, gid, group); /* a race lost to another creator is fine: open theirs */
        fd = open_direct(path);
    }
    if (fd < 0) {
        *why = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
        return -1;
    }
    *why = tm_ledger_file_refusal(fd, group, gid, false);
    if (*why) {
        tm_libc_close(fd);
        return -1;
    }
    return fd;
}

/* The group TIERMEM_GROUP names, by name or number; false with a reason. */
static bool group_id(const char *name, gid_t *gid, const char **why)
{
    char buf[4096];
    struct group entry, *found = NULL;
    char *end;
    unsigned long number = strtoul(name, &end, 10);
    if (*end == '\0')
        getgrgid_r((gid_t)number, &entry, buf, sizeof buf, &found);
    else
        getgrnam_r(name, &entry, buf, sizeof buf, &found);
    if (!found) {
        *why = "no such group";
        return false;
    }
    *gid = found->gr_gid;
    if (*gid == getegid())
        return true;
    gid_t groups[256];
    int count = getgroups(256, groups);
    for (int i = 0; i < count; i++)
        if (groups[i] == *gid)
            return true;
    *why = "this process is not a member";
    return false;
}

/* ---------------------------------------------------------------- joining */

static int column_for(int node, bool *changed)
{
    int free_column = -1;
    for (int i = 0; i < TM_LEDGER_NODES; i++) {
        if (copy->node[i] == node)
            return i;
        if (copy->node[i] < 0 && free_column < 0)
            free_column = i;
    }
    if (free_column >= 0) {
        copy->node[free_column] = node;
        *changed = true;
    }
    return free_column;
}

/* The budget of the nearest ancestor with an entry (this process's server), or this
 * process's own. */
static void find_family(tm_ledger_entry *entry)
{
    entry->family = entry->pid;
    entry->family_start = entry->start_time;
    pid_t pid = getppid();
    for (int depth = 0; depth < ANCESTORS_SEARCHED && pid > 1; depth++) {
        uint64_t start = tm_proc_start_time(pid);
        for (int i = 0; start && i < TM_LEDGER_PROCESSES; i++) {
            const tm_ledger_entry *e = &copy->entry[i];
            if (e->pid == (int32_t)pid && e->start_time == start && e->family > 0) {
                entry->family = e->family;
                entry->family_start = e->family_start;
                return;
            }
        }
        pid = tm_proc_parent(pid);
    }
}

static bool take_entry(const tm_tiers *tiers, bool group)
{
    int slot = -1;
    for (int i = 0; i < TM_LEDGER_PROCESSES && slot < 0; i++)
        if (copy->entry[i].pid == 0)
            slot = i;
    if (slot < 0)
        return false;
    tm_ledger_entry entry = { .pid = (int32_t)getpid(), .start_time = tm_proc_start_time(getpid()) };
    if (!group)
        find_family(&entry);
    bool nodes_changed = false;
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        column_of[t] = -1;
        const tm_tier_state *state = &tiers->tier[t];
        if (t == TM_TIER_HBM || !state->present || state->node < 0 || state->node > TM_LEDGER_MAX_NODE)
            continue;
        column_of[t] = column_for(state->node, &nodes_changed);
        node_of[t] = state->node;
        if (column_of[t] >= 0)
            entry.limit[column_of[t]] = state->limit;
    }
    if ((nodes_changed && !tm_ledger_file_write_nodes(ledger_fd, copy)) ||
        !tm_ledger_file_write_entry(ledger_fd, slot, &entry))
        return false;
    copy->entry[slot] = entry;
    self = entry;
    __atomic_store_n(&self_slot, slot, __ATOMIC_RELEASE);
    return true;
}

static void describe_budget(const tm_config *config, bool group)
{
    if (group)
        snprintf(budget_words, sizeof budget_words, "the processes of TIERMEM_GROUP=%s", config->group);
    else if (self.family == self.pid)
        snprintf(budget_words, sizeof budget_words, "the processes this one starts");
    else
        snprintf(budget_words, sizeof budget_words, "process %d and the processes it starts", (int)self.family);
}

void tm_ledger_join(const tm_config *config, const tm_tiers *tiers)
{
    if (joined)
        return;
    joined = true;
    for (int t = 0; t < TM_TIER_COUNT; t++)
        column_of[t] = -1;
    if (config->ledger_off)
        return;
    const char *why = NULL;
    gid_t gid = 0;
    bool group = config->group[0] != '\0';
    if (group && !group_id(config->group, &gid, &why)) {
        tm_warn("TIERMEM_GROUP=%s: %s; this process shares its lower-tier budgets only with the processes it "
                "starts",
                config->group, why);
        group = false;
    }
    if (config->ledger_path[0])
        snprintf(ledger_path, sizeof ledger_path, "%s", config->ledger_path);
    else if (group)
        snprintf(ledger_path, sizeof ledger_path, "/dev/shm/tiermem-ledger.g%u", (unsigned)gid);
    else
        snprintf(ledger_path, sizeof ledger_path, "/dev/shm/tiermem-ledger.u%u", (unsigned)geteuid());
    if (!copy && !(copy = malloc(sizeof *copy))) {
        tm_warn("ledger %s is not used: out of memory; this process keeps its own lower-tier limits", ledger_path);
        return;
    }
    int fd = open_ledger(ledger_path, gid, group, &why);
    if (fd < 0) {
        tm_warn("ledger %s is not used: %s; this process keeps its own lower-tier limits", ledger_path, why);
        return;
    }
    pthread_mutex_lock(&thread_lock);
    ledger_fd = fd;
    if (!tm_ledger_file_lock(fd, TM_LEDGER_LOCK_WAIT_MS)) {
        tm_warn("ledger %s is not used: another process has held its lock for %d ms; this process keeps its own "
                "lower-tier limits",
                ledger_path, TM_LEDGER_LOCK_WAIT_MS);
        stop_using();
        pthread_mutex_unlock(&thread_lock);
        return;
    }
    file_locked = true;
    bool damaged;
    why = tm_ledger_file_read(fd, copy, &damaged);
    bool taken = false;
    if (why && damaged) {
        set_aside(why);
    } else if (why) {
        tm_warn("ledger %s is not used: %s; this process keeps its own lower-tier limits", ledger_path, why);
        stop_using();
    } else if (!(taken = take_entry(tiers, group))) {
        tm_warn("ledger %s is full (%d processes) or cannot be written: this process keeps its own lower-tier "
                "limits",
                ledger_path, TM_LEDGER_PROCESSES);
        stop_using();
    }
    tm_ledger_unlock();
    if (!taken)
        return;
    describe_budget(config, group);
    tm_info("ledger: %s; lower-tier budgets shared with %s", ledger_path, budget_words);
}

/* ---------------------------------------------------------------- bytes */

/* Says, once and then at most once a minute for another process, that another process
 * of this budget holds part of it. */
static void note_shared(tm_tier_id tier, uint64_t theirs)
{
    static pthread_mutex_t note_lock = PTHREAD_MUTEX_INITIALIZER;
    static int32_t noted_pid;
    static uint64_t noted_at;
    int32_t pid = __atomic_load_n(&others_top[tier], __ATOMIC_RELAXED);
    uint64_t now = now_ns();
    pthread_mutex_lock(&note_lock);
    bool say = pid && pid != noted_pid && (!noted_at || now - noted_at >= SHARED_NOTE_INTERVAL_NS);
    if (say) {
        noted_pid = pid;
        noted_at = now;
    }
    pthread_mutex_unlock(&note_lock);
    if (!say)
        return;
    char held[32];
    tm_warn("ledger: process %d shares this process's lower-tier budget on node %d (%s) and holds part of it "
            "(%s there with the others): this process's room there is smaller by that",
            (int)pid, node_of[tier], budget_words, tm_format_size(theirs, held, sizeof held));
}

bool tm_ledger_used(tm_tier_id tier, uint64_t *used)
{
    int column = column_of[tier];
    if (__atomic_load_n(&self_slot, __ATOMIC_ACQUIRE) < 0 || column < 0)
        return false;
    uint64_t theirs = __atomic_load_n(&others_bytes[tier], __ATOMIC_RELAXED);
    if (theirs)
        note_shared(tier, theirs);
    *used = add_saturated(__atomic_load_n(&self.bytes[column], __ATOMIC_RELAXED), theirs);
    return true;
}

void tm_ledger_add(tm_tier_id tier, int64_t bytes)
{
    int column = column_of[tier];
    if (column < 0 || __atomic_load_n(&self_slot, __ATOMIC_ACQUIRE) < 0)
        return;
    pthread_mutex_lock(&entry_lock);
    __atomic_add_fetch(&self.bytes[column], (uint64_t)bytes, __ATOMIC_RELAXED);
    if (self_slot >= 0)
        tm_ledger_file_write_entry(ledger_fd, self_slot, &self);
    pthread_mutex_unlock(&entry_lock);
}

void tm_ledger_leave(void)
{
    tm_ledger_lock();
    if (ledger_fd >= 0 && self_slot >= 0) {
        tm_ledger_entry none = { 0 };
        tm_ledger_file_write_entry(ledger_fd, self_slot, &none);
    }
    stop_using();
    tm_ledger_unlock();
}

void tm_ledger_forget_in_child(void)
{
    /* the parent's threads may have held these at the fork: fresh ones */
    pthread_mutex_init(&thread_lock, NULL);
    pthread_mutex_init(&entry_lock, NULL);
    /* the descriptor is the parent's open file (its lock is the parent's): only closed */
    if (ledger_fd >= 0)
        tm_libc_close(ledger_fd);
    ledger_fd = -1;
    file_locked = false;
    self_slot = -1;
    memset(&self, 0, sizeof self);
    memset(others_bytes, 0, sizeof others_bytes);
    joined = false;
}
