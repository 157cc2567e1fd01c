/* ledger_layout.h — the ledger of lower-tier bytes, as a file in /dev/shm that the tiermem
 * processes of one user (or of the group TIERMEM_GROUP names) open. Read by libtiermem.so
 * and by tiermem-stat --ledger; plain C, no CUDA.
 *
 * A process pins host memory on a NUMA node (the CXL and DDR tiers) only while the bytes of
 * every live process of its budget on that node together stay within its limit. Each
 * process has one entry (pid and start time, so a reused pid is never taken for the dead
 * process), its bytes per node, the limits it runs under, and the budget it belongs to
 * (`family`): a process and the children it starts share one; the members of a group share
 * one; any other process has its own. Entries of dead processes are reclaimed by the next
 * process that takes the lock.
 *
 * The file is never mapped: every process reads it whole into a private copy and validates
 * it under the lock (an fcntl lock on byte 0, which the kernel drops when its holder dies,
 * waited for with a bound: ledger_file.h), and writes back only its own entry and the
 * entries it reclaims, so a file another process truncates or scribbles on costs an error,
 * never a fault or a hang. */
#ifndef TM_PRELOAD_LEDGER_LAYOUT_H
#define TM_PRELOAD_LEDGER_LAYOUT_H

#include <stdint.h>

#define TM_LEDGER_MAGIC "TMLEDGR"  /* 8 bytes with the terminator */
#define TM_LEDGER_VERSION 2u       /* 2: no mutex inside, budgets by family */
#define TM_LEDGER_NODES 16         /* host nodes one ledger tracks */
#define TM_LEDGER_PROCESSES 256    /* processes that can use it at once */
#define TM_LEDGER_MAX_NODE 1023    /* the highest NUMA node id a column may name */

typedef struct tm_ledger_entry {
    int32_t pid;                        /* 0: a free entry */
    int32_t family;                     /* the process whose budget this one shares (itself
                                         * for its own); 0: the group ledger's one budget */
    uint64_t start_time;                /* field 22 of /proc/PID/stat: clock ticks after boot */
    uint64_t family_start;              /* start time of `family` (0 with family 0) */
    uint64_t bytes[TM_LEDGER_NODES];    /* bytes this process pins on each node column */
    uint64_t limit[TM_LEDGER_NODES];    /* its own limit there (0: it places nothing there) */
} tm_ledger_entry;

typedef struct tm_ledger_file {
    char magic[8];
    uint32_t version;
    uint32_t size;                      /* sizeof(tm_ledger_file) */
    int32_t node[TM_LEDGER_NODES];      /* the NUMA node of each column; -1: unused */
    tm_ledger_entry entry[TM_LEDGER_PROCESSES];
} tm_ledger_file;

#endif /* TM_PRELOAD_LEDGER_LAYOUT_H */
