/* ledger_layout.h — the shared ledger of lower-tier bytes, as a file in /dev/shm that every
 * tiermem process of one user (or of the group TIERMEM_GROUP names) maps. Read by
 * libtiermem.so and by tiermem-stat --ledger; plain C, no CUDA.
 *
 * A process pins host memory on a NUMA node (the CXL and DDR tiers) only while every live
 * process's bytes on that node together stay within its limit. Each process has one entry
 * (pid and start time, so a reused pid is never taken for the dead process), its bytes per
 * node and the limits it runs under. Entries of dead processes are reclaimed by the next
 * process that takes the lock. */
#ifndef TM_PRELOAD_LEDGER_LAYOUT_H
#define TM_PRELOAD_LEDGER_LAYOUT_H

#include <pthread.h>
#include <stdint.h>

#define TM_LEDGER_MAGIC "TMLEDGR"  /* 8 bytes with the terminator */
#define TM_LEDGER_VERSION 1u
#define TM_LEDGER_NODES 16         /* host nodes one ledger tracks */
#define TM_LEDGER_PROCESSES 256    /* processes that can share it at once */

typedef struct tm_ledger_entry {
    int32_t pid;                        /* 0: a free entry */
    uint32_t pad;
    uint64_t start_time;                /* field 22 of /proc/PID/stat: clock ticks after boot */
    uint64_t bytes[TM_LEDGER_NODES];    /* bytes this process pins on each node column */
    uint64_t limit[TM_LEDGER_NODES];    /* its own limit there (0: it places nothing there) */
} tm_ledger_entry;

typedef struct tm_ledger_file {
    char magic[8];
    uint32_t version;
    uint32_t size;                      /* sizeof(tm_ledger_file) */
    pthread_mutex_t lock;               /* process-shared and robust: updates and admissions */
    int32_t node[TM_LEDGER_NODES];      /* the NUMA node of each column; -1: unused */
    tm_ledger_entry entry[TM_LEDGER_PROCESSES];
} tm_ledger_file;

#endif /* TM_PRELOAD_LEDGER_LAYOUT_H */
