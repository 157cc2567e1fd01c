/* ledger.c — the shared ledger of lower-tier bytes (see ledger.h, ledger_layout.h). */
#include "preload/tiers/ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/region/ledger_layout.h"
#include "preload/base/log.h"
#include "preload/base/proc_start.h"
#include "preload/base/libc_real.h"

static tm_ledger_file *ledger;          /* NULL: no ledger, each process keeps its own limits */
static tm_ledger_entry *self;           /* this process's entry */
static int column_of[TM_TIER_COUNT];    /* ledger column of each tier's node; -1: untracked */
static bool joined;
static uint64_t last_start_check_ns;    /* pid reuse is checked at most every second */

/* ---------------------------------------------------------------- processes */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool entry_alive(const tm_ledger_entry *entry, bool check_start)
{
    return tm_proc_alive(entry->pid, check_start ? entry->start_time : 0);
}

/* Frees the entries of processes that are gone (killed outright, or whose pid now names
 * another process). Called with the lock held. */
static void reclaim_dead(bool check_start)
{
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++) {
        tm_ledger_entry *entry = &ledger->entry[i];
        if (entry == self || entry->pid == 0 || entry_alive(entry, check_start))
            continue;
        tm_info("ledger: reclaimed the share of process %d, which is gone", (int)entry->pid);
        memset(entry, 0, sizeof *entry);
    }
}

/* ---------------------------------------------------------------- the lock */

void tm_ledger_lock(void)
{
    if (!ledger)
        return;
    int rc = pthread_mutex_lock(&ledger->lock);
    bool owner_died = rc == EOWNERDEAD;
    if (owner_died) /* a process died holding it: what it held is reclaimed below */
        pthread_mutex_consistent(&ledger->lock);
    uint64_t now = now_ns();
    bool check_start = owner_died || now - last_start_check_ns >= 1000000000u;
    if (check_start)
        last_start_check_ns = now;
    reclaim_dead(check_start);
}

void tm_ledger_unlock(void)
{
    if (ledger)
        pthread_mutex_unlock(&ledger->lock);
}

/* ---------------------------------------------------------------- the file */

static bool init_lock(pthread_mutex_t *lock)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0)
        return false;
    bool ok = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) == 0 &&
              pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) == 0 && pthread_mutex_init(lock, &attr) == 0;
    pthread_mutexattr_destroy(&attr);
    return ok;
}

/* A ledger is made whole under a temporary name and linked into place, so no process ever
 * maps a half-made one; when another process linked first, its ledger is used. */
static bool create_ledger(const char *path, gid_t gid, bool group)
{
    char temp[TM_CONFIG_PATH_MAX + 96];
    snprintf(temp, sizeof temp, "%s.%d.new", path, (int)getpid());
    int fd = tm_libc_open(temp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    bool ok = ftruncate(fd, sizeof(tm_ledger_file)) == 0 &&
              (!group || (fchown(fd, (uid_t)-1, gid) == 0 && fchmod(fd, 0660) == 0));
    tm_ledger_file *file = ok ? tm_libc_mmap(NULL, sizeof *file, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (file != MAP_FAILED) {
        memcpy(file->magic, TM_LEDGER_MAGIC, sizeof file->magic);
        file->version = TM_LEDGER_VERSION;
        file->size = sizeof *file;
        for (int i = 0; i < TM_LEDGER_NODES; i++)
            file->node[i] = -1;
        ok = init_lock(&file->lock);
        tm_libc_munmap(file, sizeof *file);
    } else {
        ok = false;
    }
    tm_libc_close(fd);
    ok = ok && link(temp, path) == 0;
    unlink(temp);
    return ok;
}

/* Opens an existing ledger: a regular file of this user (of the group, without access for
 * others, for a group ledger) holding a ledger of this version. NULL and a reason else. */
static tm_ledger_file *open_ledger(const char *path, gid_t gid, bool group, const char **why, bool *missing)
{
    int fd = tm_libc_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
    *missing = fd < 0 && errno == ENOENT;
    if (fd < 0) {
        *why = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
        return NULL;
    }
    struct stat st;
    tm_ledger_file *file = NULL;
    if (fstat(fd, &st) != 0)
        *why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        *why = "it is not a regular file";
    else if (!group && st.st_uid != geteuid())
        *why = "it belongs to another user";
    else if (group && (st.st_gid != gid || (st.st_mode & 0007)))
        *why = "it does not belong to the group, or others may use it";
    else if (st.st_size != (off_t)sizeof(tm_ledger_file))
        *why = "it is not a tiermem ledger of this version (its size differs)";
    else
        file = tm_libc_mmap(NULL, sizeof *file, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    tm_libc_close(fd);
    if (file == MAP_FAILED) {
        *why = "it cannot be mapped";
        return NULL;
    }
    if (file && (memcmp(file->magic, TM_LEDGER_MAGIC, sizeof file->magic) != 0 || file->version != TM_LEDGER_VERSION ||
                 file->size != sizeof *file)) {
        *why = "it is not a tiermem ledger of this version";
        tm_libc_munmap(file, sizeof *file);
        file = NULL;
    }
    return file;
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

static int column_for(int node)
{
    int free_column = -1;
    for (int i = 0; i < TM_LEDGER_NODES; i++) {
        if (ledger->node[i] == node)
            return i;
        if (ledger->node[i] < 0 && free_column < 0)
            free_column = i;
    }
    if (free_column >= 0)
        ledger->node[free_column] = node;
    return free_column;
}

static bool take_entry(const tm_tiers *tiers)
{
    tm_ledger_entry *entry = NULL;
    for (int i = 0; i < TM_LEDGER_PROCESSES && !entry; i++)
        if (ledger->entry[i].pid == 0)
            entry = &ledger->entry[i];
    if (!entry)
        return false;
    memset(entry, 0, sizeof *entry);
    entry->start_time = tm_proc_start_time(getpid());
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        column_of[t] = -1;
        const tm_tier_state *state = &tiers->tier[t];
        if (t == TM_TIER_HBM || !state->present || state->node < 0)
            continue;
        column_of[t] = column_for(state->node);
        if (column_of[t] >= 0)
            entry->limit[column_of[t]] = state->limit;
    }
    __atomic_store_n(&entry->pid, (int32_t)getpid(), __ATOMIC_RELEASE);
    self = entry;
    return true;
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
        tm_warn("TIERMEM_GROUP=%s: %s; the lower-tier budgets are shared by this user's processes instead",
                config->group, why);
        group = false;
    }
    char path[TM_CONFIG_PATH_MAX + 64];
    if (config->ledger_path[0])
        snprintf(path, sizeof path, "%s", config->ledger_path);
    else if (group)
        snprintf(path, sizeof path, "/dev/shm/tiermem-ledger.g%u", (unsigned)gid);
    else
        snprintf(path, sizeof path, "/dev/shm/tiermem-ledger.u%u", (unsigned)geteuid());
    bool missing;
    ledger = open_ledger(path, gid, group, &why, &missing);
    if (!ledger && missing) {
        create_ledger(path, gid, group); /* a race lost to another creator is fine: open theirs */
        ledger = open_ledger(path, gid, group, &why, &missing);
    }
    if (!ledger) {
        tm_warn("ledger %s is not used: %s; each process keeps its own lower-tier limits", path, why);
        return;
    }
    tm_ledger_lock();
    bool taken = take_entry(tiers);
    tm_ledger_unlock();
    if (!taken) {
        tm_warn("ledger %s is full (%d processes): this one keeps its own lower-tier limits", path,
                TM_LEDGER_PROCESSES);
        tm_libc_munmap(ledger, sizeof *ledger);
        ledger = NULL;
        return;
    }
    if (group)
        tm_info("ledger: %s, shared by every tiermem process of group %s", path, config->group);
    else
        tm_info("ledger: %s, shared by every tiermem process of this user", path);
}

/* ---------------------------------------------------------------- bytes */

bool tm_ledger_used(tm_tier_id tier, uint64_t *used)
{
    int column = column_of[tier];
    if (!ledger || !self || column < 0)
        return false;
    uint64_t sum = 0;
    for (int i = 0; i < TM_LEDGER_PROCESSES; i++)
        if (__atomic_load_n(&ledger->entry[i].pid, __ATOMIC_ACQUIRE) != 0)
            sum += __atomic_load_n(&ledger->entry[i].bytes[column], __ATOMIC_RELAXED);
    *used = sum;
    return true;
}

void tm_ledger_add(tm_tier_id tier, int64_t bytes)
{
    int column = column_of[tier];
    if (ledger && self && column >= 0)
        __atomic_add_fetch(&self->bytes[column], (uint64_t)bytes, __ATOMIC_RELAXED);
}

void tm_ledger_leave(void)
{
    if (!ledger || !self)
        return;
    tm_ledger_lock();
    memset(self, 0, sizeof *self);
    self = NULL;
    tm_ledger_unlock();
}

void tm_ledger_forget_in_child(void)
{
    self = NULL;
    joined = false;
    if (ledger)
        tm_libc_munmap(ledger, sizeof *ledger);
    ledger = NULL;
}
