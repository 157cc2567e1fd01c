/* ledger_file.h — the ledger file (ledger_layout.h) through a descriptor: its checks, its
 * lock and its private copies. Shared by libtiermem.so and tiermem-stat, so both take the
 * same lock and trust the same things.
 *
 * The lock is an open file description lock (F_OFD_SETLK) on byte 0: the kernel drops it
 * when its holder dies, nothing in the file can fake it, and a live holder that does not
 * let go is waited for TM_LEDGER_LOCK_WAIT_MS at most. The lock is per descriptor, not per
 * thread: callers keep their own threads apart. */
#ifndef TM_PRELOAD_LEDGER_FILE_H
#define TM_PRELOAD_LEDGER_FILE_H

#include <stdbool.h>
#include <sys/types.h>

#include "preload/region/ledger_layout.h"

#define TM_LEDGER_LOCK_WAIT_MS 2000 /* a holder silent this long is not waited for */

/* Why an open ledger must not be used, or NULL: it is a regular file, owned by this user
 * (any user's when `any_owner`), or for a group ledger (`group`) of group `gid` with no
 * access for others. */
const char *tm_ledger_file_refusal(int fd, bool group, gid_t gid, bool any_owner);

/* Takes the lock, waiting `wait_ms` at most; false when it is still held then. */
bool tm_ledger_file_lock(int fd, int wait_ms);
void tm_ledger_file_unlock(int fd);

/* Reads the whole file into *copy and validates it (size, magic, version, node ids, entry
 * fields). NULL, or why not; `*damaged` says the file starts as a ledger of this version
 * but the rest fails (truncated, grown or scribbled on), as opposed to a file that never
 * was one. */
const char *tm_ledger_file_read(int fd, tm_ledger_file *copy, bool *damaged);

/* A fresh, empty ledger image. */
void tm_ledger_file_init(tm_ledger_file *image);

/* Writes `entry` as entry `slot`, or the node columns of `copy`, to the file. */
bool tm_ledger_file_write_entry(int fd, int slot, const tm_ledger_entry *entry);
bool tm_ledger_file_write_nodes(int fd, const tm_ledger_file *copy);

/* Whether entry `e` is in use and belongs to the budget (family, family_start). */
static inline bool tm_ledger_in_family(const tm_ledger_entry *e, int family, unsigned long long family_start)
{
    return e->pid > 0 && e->family == family && e->family_start == family_start;
}

#endif /* TM_PRELOAD_LEDGER_FILE_H */
