/* config.h — the interposer's configuration: every TIERMEM_* variable, parsed in one place.
 *
 * This module is the only code in the libraries that reads the environment. A value that
 * does not parse is reported on one line (the variable, the value, what it accepts) and
 * turns tiering off: the process goes on with every call passed through to the driver. */
#ifndef TM_POLICY_CONFIG_H
#define TM_POLICY_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/heat.h"
#include "policy/place.h"
#include "policy/tier.h"

typedef enum tm_log_level {
    TM_LOG_ERROR = 0,
    TM_LOG_WARN = 1,
    TM_LOG_INFO = 2,
    TM_LOG_DEBUG = 3,
} tm_log_level;

#define TM_DEFAULT_MIN_TIERED (2 * TM_MIB)
/* A twelfth of a PCIe 5 x16 link (about 50 GB/s): migration leaves the link to the program. */
#define TM_DEFAULT_MIGRATE_RATE (4 * TM_GIB)
#define TM_DEFAULT_DRIVER "libcuda.so.1"
#define TM_CONFIG_PATH_MAX 1024
#define TM_HEAT_SAMPLE_MAX 65536      /* TIERMEM_HEAT_SAMPLE, and the most auto sampling skips */
#define TM_CONFIG_GROUP_MAX 33 /* a group name of up to 32 characters */
#define TM_CONFIG_DEVICES 64     /* device ordinals TIERMEM_HBM_LIMIT may name */

/* A size that may be absent: `set` is false when the variable was not given. */
typedef struct tm_opt_size {
    bool set;
    uint64_t bytes;
} tm_opt_size;

/* Where access heat comes from (TIERMEM_HEAT). */
typedef enum tm_heat_source {
    TM_HEAT_SOURCE_AUTO = 0, /* the best available: ebpf when it can load, else launch */
    TM_HEAT_SOURCE_LAUNCH,   /* kernel parameters seen by the launch hooks */
    TM_HEAT_SOURCE_EBPF,     /* BPF probes, loaded by tiermem-heat beside the process */
    TM_HEAT_SOURCE_OFF,
} tm_heat_source;

/* How memory is shared between processes with legacy CUDA IPC (TIERMEM_IPC). */
typedef enum tm_ipc_mode {
    TM_IPC_TIERMEM = 0,      /* chunked memory is shared through tiermem's own handles */
    TM_IPC_PASSTHROUGH,      /* what fits in HBM stays plain driver memory, shareable with any
                              * process; only what spills is chunked */
} tm_ipc_mode;

/* Whether the heat policy streams spilled weights through an HBM ring (TIERMEM_STREAM). */
typedef enum tm_stream_mode {
    TM_STREAM_AUTO = 0,      /* where streaming crosses the link faster (policy/stream_plan.h) */
    TM_STREAM_ON,            /* whenever HBM can give the ring */
    TM_STREAM_OFF,
} tm_stream_mode;

typedef struct tm_config {
    bool disabled;               /* TIERMEM_DISABLE=1, or a value was invalid */
    int invalid_count;           /* variables whose value did not parse */

    tm_opt_size hbm_limit;       /* TIERMEM_HBM_LIMIT, one value for every device (default: the
                                  * device's memory) */
    tm_opt_size hbm_limit_of[TM_CONFIG_DEVICES]; /* TIERMEM_HBM_LIMIT=0:70G,1:70G: per device */
    tm_opt_size cxl_limit;       /* TIERMEM_CXL_LIMIT (default: half the node's free memory) */
    tm_opt_size ddr_limit;       /* TIERMEM_DDR_LIMIT (default: half the node's free memory) */
    tm_opt_size hbm_reserve;     /* TIERMEM_HBM_RESERVE (default: 1/64 of the HBM limit) */
    int cxl_node;                /* TIERMEM_CXL_NODE, -1 when not given (discovered) */
    int ddr_node;                /* TIERMEM_DDR_NODE, -1 when not given (discovered) */
    uint64_t min_tiered;         /* TIERMEM_MIN_TIERED */
    tm_tier_order order;         /* TIERMEM_TIER_ORDER */
    tm_policy_kind policy;       /* TIERMEM_POLICY */
    uint64_t migrate_rate;       /* TIERMEM_MIGRATE_RATE, bytes/s the heat policy may move */
    tm_rules rules;              /* TIERMEM_RULES */
    tm_meminfo_view meminfo;     /* TIERMEM_MEMINFO */
    tm_log_level log_level;      /* TIERMEM_LOG */
    char log_file[TM_CONFIG_PATH_MAX];   /* TIERMEM_LOG_FILE; empty: standard error */
    bool stats_off;                      /* TIERMEM_STATS=off */
    char stats_path[TM_CONFIG_PATH_MAX]; /* TIERMEM_STATS=path; empty: region_path.h's */
    char driver[TM_CONFIG_PATH_MAX];     /* TIERMEM_DRIVER */
    char group[TM_CONFIG_GROUP_MAX];     /* TIERMEM_GROUP: a Unix group sharing the lower-tier budgets;
                                          * empty: the processes of this user share them */
    bool ledger_off;                     /* TIERMEM_LEDGER=off: this process's limits alone */
    char ledger_path[TM_CONFIG_PATH_MAX];/* TIERMEM_LEDGER=path; empty: /dev/shm/tiermem-ledger.u<uid> or .g<gid> */
    tm_heat_source heat;         /* TIERMEM_HEAT */
    uint64_t heat_halflife_ns;   /* TIERMEM_HEAT_HALFLIFE */
    uint32_t heat_sample;        /* TIERMEM_HEAT_SAMPLE: 1 launch in N sampled, always (a run
                                  * samples the same launches every time); 0 (auto): N adapts to
                                  * what a sample costs */
    bool file_tier;              /* TIERMEM_FILE_TIER=1: chunks holding model-file bytes may drop */
    tm_ipc_mode ipc;             /* TIERMEM_IPC */
    tm_stream_mode stream;       /* TIERMEM_STREAM */
    tm_opt_size stream_ring;     /* TIERMEM_STREAM_RING: the ring's HBM (default: the largest spilled
                                  * weight and a chunk, policy/stream_plan.h; whole chunks, at least 2) */
    char profile_path[TM_CONFIG_PATH_MAX]; /* TIERMEM_PROFILE: warm-start heat; empty: none */
} tm_config;

/* The HBM limit TIERMEM_HBM_LIMIT sets for a device (unset: the device's memory). */
tm_opt_size tm_config_hbm_limit(const tm_config *config, int device);

/* The defaults, as if no variable were set. */
void tm_config_defaults(tm_config *config);

/* Reads every TIERMEM_* variable of the environment into *config. Each invalid value
 * writes one line to `error_fd`; unknown TIERMEM_* names are warned about on the same fd
 * but change nothing. Returns the number of invalid values (config->disabled is then set). */
int tm_config_load(tm_config *config, int error_fd);

/* A value as it may appear inside one message line: control characters become '?', and a
 * long value is cut short with "...". */
void tm_printable(const char *value, char *out, size_t len);

/* The variables tm_config_load reads, in order: the name of the one at `index` (NULL past
 * the last) and, in *accepts when not NULL, what it accepts, as its error line says. The
 * configuration page and libtiermem(7) are generated from these and policy/doc/. */
size_t tm_config_variable_count(void);
const char *tm_config_variable(size_t index, const char **accepts);

const char *tm_log_level_name(tm_log_level level);
const char *tm_meminfo_view_name(tm_meminfo_view view);
const char *tm_policy_name(tm_policy_kind policy);
const char *tm_heat_source_name(tm_heat_source source);

/* The source the interposer runs itself for a configured one: kernel parameters of sampled
 * launches, unless heat is off (BPF heat comes from a collector beside the process, which
 * writes into its stats region). */
tm_heat_source tm_heat_in_process_source(tm_heat_source configured);

#endif /* TM_POLICY_CONFIG_H */
