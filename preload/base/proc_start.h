/* proc_start.h — telling a process from a later one that reuses its pid: the start time
 * the kernel records for it. Used by the shared ledger and by tiermem-stat. */
#ifndef TM_PRELOAD_PROC_START_H
#define TM_PRELOAD_PROC_START_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Field 22 of /proc/PID/stat (clock ticks after boot); 0 when the process is gone or a
 * zombie. */
uint64_t tm_proc_start_time(pid_t pid);

/* Its parent's pid (field 4); 0 when it is gone. */
pid_t tm_proc_parent(pid_t pid);

/* The process runs (not a zombie) and, when start_time is not 0, is the one that started
 * then. */
bool tm_proc_alive(pid_t pid, uint64_t start_time);

#endif /* TM_PRELOAD_PROC_START_H */
