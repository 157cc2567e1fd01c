/* collector.h — the loader of heat.bpf.c: attaches the eBPF heat source to one process and
 * reads what it gathered. Used by tiermem-heat; needs root or CAP_BPF (and CAP_PERFMON). */
#ifndef TM_TIERMEM_HEAT_COLLECTOR_H
#define TM_TIERMEM_HEAT_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/tiermem-heat/heat_bpf.h"

typedef struct tm_bpf_collector tm_bpf_collector;

/* What attached, and why the rest did not (each a one-line reason, empty when attached). */
typedef struct tm_bpf_attach_report {
    bool touch;                  /* simcuda:touch: exact bytes per chunk */
    bool driver;                 /* uprobes on launches, copies, allocations */
    bool files;                  /* file-read tracepoints */
    char touch_why[160];
    char driver_why[160];
    char files_why[160];
} tm_bpf_attach_report;

/* Loads the programs for process `pid` and attaches them to `driver` (the libcuda.so.1 the
 * process uses, or will use); the touch probes only when `touch`. NULL with a one-line
 * reason in `why` when nothing could be loaded (no privileges, no BTF, no BPF here). */
tm_bpf_collector *tm_bpf_collector_open(int pid, const char *driver, bool touch, tm_bpf_attach_report *report,
                                        char *why, size_t why_len);
void tm_bpf_collector_close(tm_bpf_collector *collector);

/* Calls `visit` for each chunk with the bytes read and written since the last drain
 * (chunks with no new bytes are skipped). Returns the chunks visited, or -1. */
typedef void (*tm_bpf_chunk_visit)(uint64_t address, uint64_t reads, uint64_t writes, const char *kernel,
                                   void *arg);
long tm_bpf_collector_drain(tm_bpf_collector *collector, tm_bpf_chunk_visit visit, void *arg);

/* The same for launch attribution: bytes launches could reach per chunk, as reads. */
long tm_bpf_collector_drain_launches(tm_bpf_collector *collector, tm_bpf_chunk_visit visit, void *arg);

/* Tells the launch attribution an allocation's extent (from the target's stats region). */
void tm_bpf_collector_know(tm_bpf_collector *collector, uint64_t address, uint64_t size);

void tm_bpf_collector_counts(const tm_bpf_collector *collector, struct tm_bpf_counts *counts);

/* Each allocation whose extent the uretprobes on cuMemAlloc_v2/cuMemAllocAsync saw. */
typedef void (*tm_bpf_alloc_visit)(uint64_t address, uint64_t size, void *arg);
void tm_bpf_collector_allocations(tm_bpf_collector *collector, tm_bpf_alloc_visit visit, void *arg);

/* Each file the process opened and read. */
typedef void (*tm_bpf_file_visit)(int fd, const struct tm_bpf_file *file, void *arg);
void tm_bpf_collector_files(tm_bpf_collector *collector, tm_bpf_file_visit visit, void *arg);

/* Mounts tracefs at /sys/kernel/tracing when it is missing (tracepoints need it). False
 * with a reason when it is missing and cannot be mounted. */
bool tm_bpf_ensure_tracefs(char *why, size_t why_len);

#endif /* TM_TIERMEM_HEAT_COLLECTOR_H */
