/* sim_internal.h — shared state of simcuda, the emulated CUDA driver.
 *
 * Model: one device whose memory is host memory. Device pointers are host virtual
 * addresses. Every object handed to the caller (context, stream, event, module,
 * function, memory pool, physical allocation handle) is registered in one handle table,
 * so a stale or forged handle is answered with an error, never dereferenced. Address
 * ranges live in two balanced trees: `regions` (everything a device access may touch:
 * cuMemAlloc memory, pinned and registered host memory, VMM mappings) and
 * `reservations` (cuMemAddressReserve ranges, which contain mappings).
 *
 * One mutex guards the tables. Copies, memsets and kernels run outside it: they are
 * validated under the lock, then executed. Streams execute their work synchronously at
 * submission, in order (the driver is allowed to do so); sim_exec.c is the single place
 * where work runs, so a cost model of the memory system attaches there.
 */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uthash.h>

#include "tools/simcuda/simcuda.h"
#include "tools/simcuda/sim_time.h"

#define SIM_GRANULARITY      ((size_t)2 << 20) /* VMM granularity, minimum and recommended */
#define SIM_ALLOC_ALIGN      256               /* cuMemAlloc alignment */
#define SIM_PITCH_ALIGN      512               /* cuMemAllocPitch row alignment */
#define SIM_MAX_NUMA_NODES   64
#define SIM_CTX_STACK_DEPTH  64

#define SIM_EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- configuration */

typedef struct sim_config {
    size_t device_capacity;                 /* SIMCUDA_MEM */
    int numa_nodes[SIM_MAX_NUMA_NODES];     /* HOST_NUMA ids cuMemCreate accepts */
    int numa_node_count;
    bool host_numa_vmm;                     /* SIMCUDA_HOST_NUMA_VMM */
    int log_level;                          /* 0 warn, 1 info */
    sim_profile profile;                    /* SIMCUDA_PROFILE and overrides */
    int cxl_nodes[SIM_MAX_NUMA_NODES];      /* SIMCUDA_CXL_NODES */
    int cxl_node_count;
    bool host_time;                         /* SIMCUDA_HOST_TIME */
} sim_config;

/* Parses the SIMCUDA_* environment; on a bad value prints one line naming it. */
CUresult sim_config_load(sim_config *config);
bool sim_config_numa_node_ok(const sim_config *config, int node);

/* ---------------------------------------------------------------- handles */

typedef enum sim_kind {
    SIM_CONTEXT = 1, SIM_STREAM, SIM_EVENT, SIM_MODULE, SIM_FUNCTION, SIM_POOL, SIM_PHYS,
} sim_kind;

/* First member of every object handed out; the object's address is its handle. */
typedef struct sim_object {
    UT_hash_handle hh;
    uintptr_t key;
    sim_kind kind;
} sim_object;

void sim_object_add(sim_object *object, sim_kind kind);   /* lock held */
void sim_object_remove(sim_object *object);               /* lock held */
void *sim_object_find(const void *handle, sim_kind kind); /* lock held; NULL if not live */

typedef struct sim_context {
    sim_object obj;
    CUdevice device;
    unsigned int flags;
    bool primary;
    int primary_refs;       /* primary context: retain count; active while > 0 */
    unsigned long long id;
} sim_context;

typedef struct sim_stream {
    sim_object obj;
    sim_context *ctx;
    unsigned int flags;
    int priority;
    double clock_ns;        /* simulated: when its last operation ends (sim_time.h) */
} sim_stream;

typedef struct sim_event {
    sim_object obj;
    sim_context *ctx;
    unsigned int flags;
    bool recorded;
    double when_ns;         /* simulated: when the work it captured ends */
} sim_event;

typedef struct sim_function sim_function;
typedef struct sim_module {
    sim_object obj;
    sim_context *ctx;
    void *library;          /* dlopen handle of the host-kernel library */
    int abi;                /* its simcuda_module_abi: 1 (no cost declarations) or 2 */
    sim_function *functions;
    struct sim_module *unload_next; /* list link while a context's modules are unloaded */
} sim_module;

struct sim_function {
    sim_object obj;
    sim_module *module;
    simcuda_kernel_fn *entry;
    int max_dynamic_shared;
    sim_function *next;
    char name[];
};

typedef struct sim_pool {
    sim_object obj;
    CUdevice device;
    bool is_default;
    size_t used, used_high;
    uint64_t release_threshold;
} sim_pool;

/* A physical allocation made by cuMemCreate: a memfd the mappings share. */
typedef struct sim_phys {
    sim_object obj;
    CUmemAllocationProp prop;
    size_t size;
    int fd;
    int handle_refs;        /* cuMemCreate / cuMemRetainAllocationHandle minus cuMemRelease */
    int mapping_refs;       /* live cuMemMap mappings */
} sim_phys;

/* ---------------------------------------------------------------- address ranges */

typedef enum sim_region_kind {
    REGION_DEVICE,          /* cuMemAlloc, pitch, async, pool, managed */
    REGION_HOST_ALLOC,      /* cuMemAllocHost, cuMemHostAlloc */
    REGION_HOST_REGISTERED, /* cuMemHostRegister */
    REGION_MAPPING,         /* cuMemMap of a physical allocation */
    REGION_RESERVATION,     /* cuMemAddressReserve (in the reservations tree) */
} sim_region_kind;

typedef struct sim_region {
    uintptr_t base;
    size_t size;            /* the size the caller asked for */
    size_t backing_size;    /* what is really mapped or allocated (>= size) */
    sim_region_kind kind;
    sim_context *ctx;       /* owner; NULL for VMM objects, which belong to the device */
    bool from_mmap;         /* backing came from mmap (else from posix_memalign) */
    bool managed;
    unsigned int host_flags;
    sim_pool *pool;         /* async allocations: the pool they came from */
    sim_phys *phys;         /* mappings: the physical allocation */
    CUmemAccess_flags access;  /* mappings: the device's access */
    unsigned long long id;  /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
    int mapping_count;      /* reservations: live mappings inside */
} sim_region;

typedef enum sim_tree { TREE_REGIONS, TREE_RESERVATIONS } sim_tree;

void sim_region_insert(sim_tree tree, sim_region *region);     /* lock held */
void sim_region_delete(sim_tree tree, sim_region *region);     /* lock held */
sim_region *sim_region_find(sim_tree tree, uintptr_t address);  /* lock held; containing */
sim_region *sim_region_overlap(sim_tree tree, uintptr_t base, size_t size); /* lock held; any */
/* Calls visit for every region of a tree (lock held; visit must not modify the tree). */
void sim_region_each(sim_tree tree, void (*visit)(sim_region *region, void *arg), void *arg);

/* Checks that [address, address + bytes) is covered by contiguous regions the device may
 * access (for_write: needs write access). Lock held. */
CUresult sim_range_check(uintptr_t address, size_t bytes, bool for_write);

/* ---------------------------------------------------------------- global state */

typedef struct sim_state {
    pthread_mutex_t lock;
    bool initialized;
    bool forked_after_init;     /* this process is a fork child of an initialised driver */
    CUresult init_error;        /* a bad configuration makes every cuInit fail */
    sim_config config;
    sim_object *objects;        /* uthash of every live handle */
    void *regions;              /* tsearch root */
    void *reservations;         /* tsearch root */
    sim_context *primary;       /* the primary context of device 0 */
    sim_pool *default_pool;
    size_t device_used;         /* bytes of DEVICE memory against the capacity */
    size_t device_peak;
    size_t live_device_allocations;
    unsigned long long next_id;
    /* bytes moved by copies, by destination and source location */
    uint64_t copy_bytes[SIM_LOC_COUNT][SIM_LOC_COUNT];  /* [dst][src], sim_location */
    uint64_t launches;
} sim_state;

extern sim_state sim;

static inline void sim_lock(void) { pthread_mutex_lock(&sim.lock); }
static inline void sim_unlock(void) { pthread_mutex_unlock(&sim.lock); }

/* Common entry checks: driver initialised (CUDA_ERROR_NOT_INITIALIZED otherwise). */
CUresult sim_check_init(void);
/* Driver initialised and a live current context; *ctx receives it. Lock not held. */
CUresult sim_current_context(sim_context **ctx);
/* Lock held: same as sim_current_context. */
CUresult sim_current_context_locked(sim_context **ctx);
/* Lock held: a stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a live
 * stream) resolved to a stream object, or NULL for the default stream. */
CUresult sim_stream_resolve(CUstream handle, sim_stream **stream);
/* Lock not held: a current context and a valid stream handle; *stream (may be NULL) as
 * sim_stream_resolve gives it. */
CUresult sim_stream_enter(CUstream handle, sim_stream **stream);

/* Device memory accounting against SIMCUDA_MEM (lock held). */
bool sim_device_reserve(size_t bytes);
void sim_device_release(size_t bytes);

/* Frees every object and allocation owned by a context (lock held). */
void sim_context_release_resources(sim_context *ctx);
void sim_memory_release_context(sim_context *ctx);
void sim_stream_release_context(sim_context *ctx);
void sim_module_release_context(sim_context *ctx);

/* Device-memory allocation shared by cuMemAlloc, pitch, async and pool paths. */
CUresult sim_device_alloc(CUdeviceptr *dptr, size_t bytes, bool managed, sim_pool *pool);
CUresult sim_device_free(CUdeviceptr dptr);

/* ---------------------------------------------------------------- execution */

/* The one place where device work runs and is charged simulated time (see the header
 * comment and sim_time.h). The stream is already resolved; NULL means the context's
 * default stream. host_waits: a synchronous call (the host clock moves to its end). */
CUresult sim_exec_copy(sim_stream *stream, void *dst, const void *src, size_t bytes, bool host_waits);
CUresult sim_exec_memset(sim_stream *stream, void *dst, unsigned int value,
                         size_t element_size, size_t count);
/* `name` is the kernel's function name; abi its module's (1: no cost declarations). */
void sim_exec_launch(sim_stream *stream, simcuda_kernel_fn *entry, simcuda_launch *launch,
                     const char *name, int abi);

/* ---------------------------------------------------------------- diagnostics */

void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Says once on stderr that `name` is not implemented; returns CUDA_ERROR_NOT_SUPPORTED. */
CUresult sim_not_supported(const char *name);

#endif /* SIM_INTERNAL_H */
