/* stats_layout.h — the stats region: what a process running under libtiermem publishes
 * about its memory, for tiermem-stat and other readers.
 *
 * The region is a file, by default /dev/shm/tiermem-<uid>/tiermem.<pid> (mode 0600, in a
 * directory of that user's with mode 0700: region_path.h), created at the process's first
 * device allocation and removed at exit (a path given in TIERMEM_STATS is left in place,
 * holding the final state). The writer maps it shared and updates it in place; readers
 * copy it with pread (never a mapping), validate the copy, and read no offset twice. Every
 * integer is little-endian and naturally aligned.
 *
 *   offset 0                 tm_stats_header
 *   header.calls_offset      tm_stats_call[header.call_count]   calls per hooked symbol
 *   header.records_offset    tm_stats_record[header.record_capacity]
 *   header.heat_records_offset  tm_stats_heat_record[header.record_capacity]  (version 2)
 *   header.heat_chunks_offset   tm_stats_heat_chunk[header.heat_chunk_capacity]
 *
 * Counters are updated with atomic operations; readers may see one counter a moment
 * ahead of another. A record is guarded by its `seq`: odd while the writer changes it;
 * a reader copies the record and keeps the copy only if `seq` was even and unchanged.
 * Records describe chunked (tiered) and managed allocations; small allocations passed
 * through to HBM are counted in the header only.
 *
 * Heat (version 2): record i's heat is heat record i; it owns `chunk_count` entries of
 * the heat chunk pool from `first_chunk`, one per 2 MiB chunk, guarded by the heat
 * record's own `seq` like a record. A heat chunk holds the raw decayed state of
 * policy/heat.h; its heat as of now is
 *   (heat * 2^(-1/8) + (1 - 2^(-1/8)) * min(1, pending / chunk_size)) * 2^(-(now_tick - tick - 1) / 8)
 * with now_tick = CLOCK_MONOTONIC ns / header.heat_tick_ns (no decay while now_tick <=
 * tick + 1), and its reads and writes decay by 2^(-(now_tick - tick) / 8). A collector
 * beside the process (tiermem-heat --feed) may write these instead, with pwrite at offsets
 * it validated against its own copy of this header: it sets heat_collector_pid,
 * refreshes heat_collector_ns at every write and its bit in `sources`; the process stops
 * publishing its own heat while the collector's last write is under 5 s old.
 *
 * This header needs nothing but the C library: readers include it alone.
 */
#ifndef TM_STATS_LAYOUT_H
#define TM_STATS_LAYOUT_H

#include <stdint.h>

#define TM_STATS_MAGIC       0x314d454d52454954ull /* "TIERMEM1" as little-endian bytes */
#define TM_STATS_VERSION     4                     /* 2: the heat section; 3: tensor names;
                                                    * 4: devices, name moves, the file tier */
#define TM_STATS_TIERS       3                     /* hbm, cxl, ddr, in this order */
#define TM_STATS_RECORDS     16384
#define TM_STATS_HEAT_CHUNKS 262144                /* 512 GiB of 2 MiB chunks */
#define TM_STATS_DEVICES     16                    /* devices described, in set-up order */

enum tm_stats_state {
    TM_STATS_RUNNING = 1,
    TM_STATS_EXITED = 2,      /* the process has exited; the file was kept (explicit path) */
};

enum tm_stats_backing {
    TM_STATS_BACKING_VMM = 1,         /* chunks are VMM handles: DEVICE or HOST_NUMA */
    TM_STATS_BACKING_PINNED_HOST = 2, /* no HOST_NUMA in the VMM API: lower tiers are pinned
                                       * host memory registered with the device (no migration) */
};

/* How the program asked for the memory. */
enum tm_stats_path {
    TM_PATH_MEM_ALLOC = 1,    /* cuMemAlloc_v2 */
    TM_PATH_MEM_ALLOC_PITCH,  /* cuMemAllocPitch_v2 */
    TM_PATH_MEM_ALLOC_ASYNC,  /* cuMemAllocAsync */
    TM_PATH_MEM_ALLOC_POOL,   /* cuMemAllocFromPoolAsync */
    TM_PATH_MEM_CREATE,       /* cuMemCreate with a DEVICE location the HBM budget could not hold */
    TM_PATH_MEM_ALLOC_MANAGED,/* cuMemAllocManaged (counted, not placed) */
};

typedef struct tm_stats_tier {
    char name[8];             /* "hbm", "cxl", "ddr" */
    int32_t present;          /* 1 when the tier exists */
    int32_t numa_node;        /* CXL and DDR: the NUMA node; HBM: the device ordinal */
    uint64_t limit;           /* bytes this process may place in the tier */
    uint64_t used;            /* bytes placed now (HBM: chunks and small allocations) */
    uint64_t peak;            /* highest `used` */
    uint64_t chunks;          /* chunks placed now */
    uint64_t migrated_out[2]; /* chunks migrated from this tier to each other one, in tier
                               * order: hbm to cxl, ddr; cxl to hbm, ddr; ddr to hbm, cxl */
} tm_stats_tier;              /* 64 bytes */

/* A device whose HBM is tiered (version 4). The header's tiers count the whole process:
 * HBM there is the sum over devices. */
typedef struct tm_stats_device {
    int32_t ordinal;          /* the device */
    int32_t host_node;        /* its DDR tier's NUMA node */
    uint64_t hbm_limit;       /* bytes of its HBM this process may use */
    uint64_t hbm_used;        /* placed now (chunks and small allocations) */
    uint64_t hbm_peak;        /* highest hbm_used */
    uint64_t hbm_chunks;      /* chunks placed now */
    uint8_t uuid[16];         /* the device's UUID (cuDeviceGetUuid); all zero: unknown */
    uint64_t reserved[1];
} tm_stats_device;            /* 64 bytes */

typedef struct tm_stats_header {
    uint64_t magic;           /* TM_STATS_MAGIC */
    uint32_t version;         /* TM_STATS_VERSION */
    uint32_t header_size;     /* sizeof(tm_stats_header) */
    uint32_t call_size;       /* sizeof(tm_stats_call) */
    uint32_t call_count;
    uint64_t calls_offset;
    uint32_t record_size;     /* sizeof(tm_stats_record) */
    uint32_t record_capacity;
    uint64_t records_offset;
    int32_t pid;
    int32_t state;            /* enum tm_stats_state */
    uint64_t start_time_ns;   /* CLOCK_REALTIME when the region was created */
    int32_t device;           /* device ordinal whose HBM is tiered */
    int32_t backing;          /* enum tm_stats_backing */
    uint64_t chunk_size;      /* bytes per chunk (the VMM granularity) */
    uint64_t min_tiered;      /* allocations at or above this size are chunked */
    uint64_t hbm_reserve;     /* HBM bytes left free by chunked allocations */
    uint64_t device_memory;   /* what the device itself has */
    char policy[16];          /* "size" */
    char meminfo[16];         /* "physical" or "virtual" */
    char tier_order[16];      /* "hbm,cxl,ddr" */
    tm_stats_tier tier[TM_STATS_TIERS];
    /* live counts; the *_total counters only grow */
    uint64_t small_count;     /* small allocations passed through to HBM, live */
    uint64_t small_bytes;
    uint64_t tiered_count;    /* chunked allocations, live */
    uint64_t tiered_bytes;    /* their requested bytes */
    uint64_t managed_count;
    uint64_t managed_bytes;
    uint64_t alloc_total;     /* allocations made through the interposer */
    uint64_t free_total;
    uint64_t oom_total;       /* CUDA_ERROR_OUT_OF_MEMORY returned because no tier had room */
    uint64_t passthrough_total; /* calls turned into plain pass-through by an internal error */
    uint64_t records_used;    /* records in use now */
    uint64_t records_dropped; /* chunked allocations without a record (region full) */
    /* migration (in what was reserved space: the layout is unchanged) */
    uint64_t migrations;      /* chunks moved to another tier */
    uint64_t migrated_bytes;
    uint64_t migration_rewrites; /* batches copied again: work was submitted during the copy */
    uint64_t pool_hits;       /* migrations served by a pooled chunk */
    uint64_t pool_misses;     /* ... that created one */
    uint64_t ping_pongs;      /* chunks moved back to the tier they left in the last rebalance */
    uint64_t last_rebalance_ns; /* CLOCK_MONOTONIC of the rebalancer's last pass, 0 before */
    uint64_t migrate_rate;    /* its budget, bytes/s (0: no rebalancer) */
    /* heat (version 2) */
    uint64_t heat_records_offset; /* tm_stats_heat_record[record_capacity], one per record */
    uint32_t heat_record_size;    /* sizeof(tm_stats_heat_record) */
    uint32_t heat_chunk_size;     /* sizeof(tm_stats_heat_chunk) */
    uint64_t heat_chunks_offset;
    uint64_t heat_chunk_capacity;
    uint64_t heat_chunks_used;    /* pool entries owned by live records */
    uint64_t heat_chunks_dropped; /* allocations whose chunks found no room in the pool */
    uint64_t heat_tick_ns;        /* heat interval: TIERMEM_HEAT_HALFLIFE / 8 */
    char heat_source[16];         /* "launch", "ebpf", "off": what feeds heat in-process */
    uint64_t heat_samples;        /* launches whose parameters were read */
    uint64_t heat_launches;       /* launches seen while heat was on */
    uint64_t heat_sample_every;   /* the sampling rate now: 1 launch in this many */
    uint64_t heat_sample_ns;      /* average cost of one sampled launch */
    int32_t heat_collector_pid;   /* a collector (tiermem-heat) writing heat here, or 0 */
    int32_t heat_reserved0;
    uint64_t heat_collector_ns;   /* CLOCK_MONOTONIC of its last write: while under 5 s old,
                                   * the process leaves heat to it and its heat
                                   * policy ranks chunks by what it wrote */
    uint64_t rebalance_budget;    /* bytes the rebalancer's last pass could move (rate times
                                   * the time since the pass before) */
    uint64_t chunks_reused;       /* chunks of chunked allocations mapped from the pool of
                                   * chunks freed before (in what was reserved space) */
    uint64_t chunks_created;      /* ... created for them (cuMemCreate) */
    uint64_t streamed_bytes;      /* bytes the stream ring copied into HBM
                                   * (stream_ring.h), in all; 0 without streaming */
    /* devices (version 4) */
    uint32_t device_count;        /* entries of devices[] in use */
    uint32_t device_reserved;
    tm_stats_device devices[TM_STATS_DEVICES];
    /* name rules applied after the copy, and the file tier */
    uint64_t name_moves_queued;   /* chunk runs a name rule handed to migration */
    uint64_t name_moves_done;     /* ... carried out or given up (queued - done: pending) */
    uint64_t file_tier;           /* 1 when TIERMEM_FILE_TIER=1 */
    uint64_t file_dropped;        /* chunks whose memory the file tier released, now */
    uint64_t file_drops;          /* chunks released, in all */
    uint64_t file_faults;         /* dropped chunks read back from their file before a launch */
    uint64_t file_fault_bytes;
    uint64_t file_refused;        /* read-backs refused: the file changed or could not be read */
} tm_stats_header;

typedef struct tm_stats_call {
    char symbol[48];          /* exported driver symbol, e.g. "cuMemAlloc_v2" */
    uint64_t calls;
    uint64_t reserved;
} tm_stats_call;              /* 64 bytes */

typedef struct tm_stats_record {
    uint64_t seq;             /* odd while being written; even otherwise */
    uint32_t in_use;          /* 1 for a live allocation */
    uint32_t path;            /* enum tm_stats_path */
    uint64_t address;         /* the device address the program sees */
    uint64_t size;            /* bytes the program asked for */
    uint32_t chunks[TM_STATS_TIERS]; /* chunks per tier */
    uint32_t flags;           /* TM_STATS_RECORD_* bits */
    uint64_t reserved[2];
    uint32_t tensors;         /* distinct model-file tensors copied into it (0: none seen) */
    uint32_t reserved2;
    char name[88];            /* the first of them, NUL-terminated ("" when none) */
} tm_stats_record;            /* 160 bytes */

#define TM_STATS_RECORD_PINNED_HOST 1u   /* lower tiers are pinned host memory */
#define TM_STATS_RECORD_MANAGED     2u   /* cuMemAllocManaged memory (TIERMEM_POLICY=managed*) */
#define TM_STATS_RECORD_READ_MOSTLY 4u   /* advised CU_MEM_ADVISE_SET_READ_MOSTLY */

/* Who has written heat for a record. */
enum tm_stats_heat_sources {
    TM_HEAT_FROM_LAUNCH = 1u,     /* kernel parameters, in the process */
    TM_HEAT_FROM_EBPF = 2u,       /* uprobes on launches and copies (tiermem-heat) */
    TM_HEAT_FROM_USDT = 4u,       /* simcuda's touch probes: exact bytes (tiermem-heat) */
};

typedef struct tm_stats_heat_record {
    uint64_t seq;                 /* odd while the heat chunks of the record change */
    uint64_t first_chunk;         /* index of its first entry in the heat chunk pool */
    uint32_t chunk_count;         /* entries it owns; 0 when the pool had no room */
    uint32_t sources;             /* enum tm_stats_heat_sources, or-ed */
    uint64_t reserved[2];
} tm_stats_heat_record;           /* 40 bytes */

typedef struct tm_stats_heat_chunk {
    uint64_t tick;                /* the interval `pending` belongs to */
    double heat;                  /* decayed score of the intervals before `tick` */
    double pending;               /* bytes accessed in interval `tick` */
    double reads;                 /* decayed bytes read, as of `tick` */
    double writes;                /* decayed bytes written, as of `tick` */
} tm_stats_heat_chunk;            /* 40 bytes: the layout of policy/heat.h's tm_heat_chunk */

#endif /* TM_STATS_LAYOUT_H */
