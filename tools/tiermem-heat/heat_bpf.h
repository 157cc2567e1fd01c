/* heat_bpf.h — what the BPF programs of heat.bpf.c and their loader (collector.c) share:
 * the records in the maps, in plain fixed-size types. */
#ifndef TM_TIERMEM_HEAT_HEAT_BPF_H
#define TM_TIERMEM_HEAT_HEAT_BPF_H

#define TM_BPF_CHUNK_SHIFT 21           /* 2 MiB chunks, as the interposer's */
#define TM_BPF_CHUNKS_MAX 262144        /* chunks followed at once (512 GiB) */
#define TM_BPF_RANGE_CHUNKS_MAX 4096    /* chunks one touched range is spread over (8 GiB) */
#define TM_BPF_NAME_LEN 32
#define TM_BPF_PATH_LEN 256
#define TM_BPF_FILES_MAX 1024
#define TM_BPF_ALLOCS_MAX 65536         /* allocations whose extent the uretprobes saw */
#define TM_BPF_LAUNCH_PARAMS 16         /* kernel parameters read per launch */
#define TM_BPF_BYTES_PER_THREAD 16      /* what a launch may reach per thread (as in-process) */
#define TM_BPF_PARAM_SPAN 4096          /* argument entries lie this close to the first one */

/* Bytes the target touched in one chunk, summed since the collector attached. */
struct tm_bpf_chunk {
    unsigned long long reads;
    unsigned long long writes;
    char kernel[TM_BPF_NAME_LEN];       /* the first kernel (not a copy) that touched it */
};

/* Reads of one open file descriptor of the target. */
struct tm_bpf_file {
    char path[TM_BPF_PATH_LEN];         /* as given to openat */
    unsigned long long read_calls;      /* read and pread64 */
    unsigned long long read_bytes;      /* bytes asked for */
    unsigned long long first_offset;    /* lowest pread64 offset seen (~0 before any) */
    unsigned long long last_end;        /* highest offset + count seen */
    unsigned long long mmap_bytes;      /* bytes mapped from it */
};

/* Counters of the target's driver calls (uprobes) and probe events. */
struct tm_bpf_counts {
    unsigned long long launches;        /* cuLaunchKernel* entries */
    unsigned long long copies;          /* cuMemcpy* entries */
    unsigned long long allocs;          /* cuMemAlloc* entries */
    unsigned long long touches;         /* simcuda:touch events */
    unsigned long long dropped;         /* chunk updates lost to a full map */
    unsigned long long page_cache_adds; /* filemap pages added for the target */
    unsigned long long launch_credits;  /* launch parameters that were a known allocation */
};

#endif /* TM_TIERMEM_HEAT_HEAT_BPF_H */
