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
#include "tools/simcuda/sim_uvm.h"

#define SIM_GRANULARITY      ((size_t)2 << 20) /* VMM granularity, minimum and recommended */
#define SIM_ALLOC_ALIGN      256               /* cuMemAlloc alignment */
#define SIM_PITCH_ALIGN      512               /* cuMemAllocPitch row alignment */
#define SIM_MAX_NUMA_NODES   64
#define SIM_MAX_DEVICES      8       /* SIMCUDA_DEVICES */
#define SIM_CTX_STACK_DEPTH  64

#define SIM_EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- configuration */

#define SIM_MAX_FAIL_RULES   32

/* One SIMCUDA_FAIL rule: the nth call of `name` returns `error`. */
typedef struct sim_fail_rule {
    char name[64];
    uint64_t nth;
    CUresult error;
} sim_fail_rule;

typedef struct sim_config {
    size_t device_capacity;                 /* SIMCUDA_MEM: device 0's */
    size_t device_capacities[SIM_MAX_DEVICES]; /* SIMCUDA_MEM: one size, or one per device */
    int device_count;                       /* SIMCUDA_DEVICES */
    bool capacity_default;                  /* SIMCUDA_MEM unset: 16 GiB or half the host's memory */
    int numa_nodes[SIM_MAX_NUMA_NODES];     /* HOST_NUMA ids cuMemCreate accepts */
    int numa_node_count;
    bool host_numa_vmm;                     /* SIMCUDA_HOST_NUMA_VMM */
    bool posix_fd;                          /* SIMCUDA_POSIX_FD: VMM memory exportable as fds */
    int log_level;                          /* 0 warn, 1 info */
    sim_profile profile;                    /* SIMCUDA_PROFILE and overrides */
    int cxl_nodes[SIM_MAX_NUMA_NODES];      /* SIMCUDA_CXL_NODES */
    int cxl_node_count;
    bool host_time;                         /* SIMCUDA_HOST_TIME */
    bool async;                             /* SIMCUDA_ASYNC: streams run on worker threads */
    sim_fail_rule fail[SIM_MAX_FAIL_RULES]; /* SIMCUDA_FAIL */
    int fail_count;
    uint64_t hold_launch;                   /* SIMCUDA_HOLD: the launch that waits (0: none) */
    char hold_path[256];                    /* ... until this file exists */
    sim_uvm_params uvm;                     /* SIMCUDA_UVM_*: the managed-memory model */
    int export_trace;                       /* SIMCUDA_EXPORT_TRACE (SIM_EXPORT_TRACE_*) */
    char timeline[256];                     /* SIMCUDA_TIMELINE: a new file for every op's simulated span */
} sim_config;

/* SIMCUDA_EXPORT_TRACE: off; log every export table asked for and every slot called;
 * and also answer unknown tables with tables of logging traps (sim_export.c). */
enum { SIM_EXPORT_TRACE_OFF, SIM_EXPORT_TRACE_LOG, SIM_EXPORT_TRACE_TRAPS };
bool sim_export_trace_parse(const char *value, int *level);
/* The setting, read once on first use (export tables are asked for before cuInit). */
int sim_export_trace(void);

/* Parses the SIMCUDA_* environment; on a bad value prints one line naming it. */
CUresult sim_config_load(sim_config *config);
bool sim_config_numa_node_ok(const sim_config *config, int node);

/* ---------------------------------------------------------------- handles */

typedef enum sim_kind {
    SIM_CONTEXT = 1, SIM_STREAM, SIM_EVENT, SIM_MODULE, SIM_FUNCTION, SIM_POOL, SIM_PHYS, SIM_GRAPH,
    SIM_GRAPH_EXEC, SIM_LIBRARY,
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

typedef struct sim_local sim_local;

typedef struct sim_context {
    sim_object obj;
    CUdevice device;
    unsigned int flags;
    bool primary;
    int primary_refs;       /* primary context: retain count; active while > 0 */
    unsigned peers;         /* bit d: cuCtxEnablePeerAccess gave it device d's memory */
    unsigned long long id;
    sim_local *locals;      /* context-local storage the runtime keeps (sim_ctx_local.c) */
    size_t limits[CU_LIMIT_MAX]; /* cuCtxSetLimit's values, where limits_set has the bit */
    unsigned limits_set;
} sim_context;

typedef struct sim_op sim_op;
typedef struct sim_graph sim_graph;

typedef struct sim_stream {
    sim_object obj;
    sim_context *ctx;
    unsigned int flags;
    int priority;
    double clock_ns;        /* simulated: when its last operation ends (sim_time.h) */
    /* SIMCUDA_ASYNC: work queued for the stream's worker thread (sim_async.c) */
    sim_op *head, *tail;
    int pending;            /* operations queued or running */
    bool has_worker;
    bool destroyed;         /* the handle is gone; the worker frees the stream when idle */
    pthread_cond_t wake;    /* the worker waits here for work */
    sim_graph *capture;     /* cuStreamBeginCapture: work goes into this graph (sim_graph.c) */
    bool capture_invalid;   /* something that cannot be captured was tried */
} sim_stream;

typedef struct sim_event {
    sim_object obj;
    sim_context *ctx;
    unsigned int flags;
    bool recorded;
    double when_ns;         /* simulated: when the work it captured ends */
    uint64_t records;       /* cuEventRecord calls so far */
    uint64_t records_done;  /* of those, the ones whose work completed */
    int op_refs;            /* queued operations that point at it */
    bool destroyed;         /* the handle is gone; freed when op_refs drops to 0 */
} sim_event;

typedef struct sim_function sim_function;
typedef struct sim_library sim_library;
struct sim_gpu_image;
typedef struct sim_module {
    sim_object obj;
    sim_context *ctx;       /* NULL for a library's module, which outlives contexts */
    void *library;          /* dlopen handle of the host-kernel library, or NULL for GPU code */
    int abi;                /* its simcuda_module_abi: 1 (no cost declarations) or 2 */
    struct sim_gpu_image *gpu; /* GPU code (sim_gpu_image.h): kernels that have no host code */
    const void *source;     /* GPU code: the image it was loaded from (unloaded by it) */
    sim_library *owner;     /* the library whose module it is (cuLibraryGetModule), or NULL */
    struct sim_global *globals; /* GPU code's variables given storage so far, per context */
    sim_function *functions;
    struct sim_module *unload_next; /* list link while a context's modules are unloaded */
} sim_module;

struct sim_function {
    sim_object obj;
    sim_module *module;
    simcuda_kernel_fn *entry;     /* NULL: GPU code, refused at launch */
    const simcuda_params *params; /* its SIMCUDA_KERNEL_PARAMS, or NULL */
    int max_dynamic_shared;       /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    int carveout;                 /* CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT */
    int cluster[3];               /* CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, _HEIGHT, _DEPTH (0: unset) */
    int non_portable_cluster;     /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
    int cluster_policy;           /* CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE */
    bool refusal_logged;          /* GPU code: its launch was refused and said so once */
    sim_function *next;
    char name[];
};

/* Storage a variable of GPU code got in one context (sim_library.c): device memory of that
 * context, filled with the variable's initial bytes, so cudaMemcpyToSymbol and friends work
 * although no kernel ever reads it. */
struct sim_global {
    struct sim_global *next;
    sim_context *ctx;
    CUdeviceptr dptr;
    size_t size;
    char name[];
};

/* A CUlibrary (sim_library.c): a module not bound to a context. Its CUkernels are the
 * module's functions, valid as CUfunctions too (the runtime launches them as such). */
struct sim_library {
    sim_object obj;
    sim_module *module;
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
    bool imported;          /* cuMemImportFromShareableHandle: another process's memory, not
                             * charged against SIMCUDA_MEM here */
    uintptr_t park;         /* where its page tables wait between mappings (sim_vmm.c), or 0 */
    bool parked;            /* they are there now */
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
    CUmemAccess_flags access;  /* mappings: the most any device has (the host view's protection) */
    CUmemAccess_flags access_by[SIM_MAX_DEVICES]; /* mappings: each device's access */
    double busy_until_ns;   /* mappings: when the last work submitted that touched it ends */
    unsigned long long id;  /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
    int mapping_count;      /* reservations: live mappings inside */
    bool ipc_exported;      /* exported with cuIpcGetMemHandle: a memfd backs it now */
    int ipc_fd;             /* with ipc_exported: that memfd (sim_ipc.c) */
    int ipc_opens;          /* opened with cuIpcOpenMemHandle: opens not yet closed; 0 for
                             * memory this process allocated */
    uint64_t ipc_inode;     /* with ipc_opens: the exporter's memfd, to share one mapping */
} sim_region;

typedef enum sim_tree { TREE_REGIONS, TREE_RESERVATIONS } sim_tree;

void sim_region_insert(sim_tree tree, sim_region *region);     /* lock held */
void sim_region_delete(sim_tree tree, sim_region *region);     /* lock held */
sim_region *sim_region_find(sim_tree tree, uintptr_t address);  /* lock held; containing */
sim_region *sim_region_overlap(sim_tree tree, uintptr_t base, size_t size); /* lock held; any */
/* Calls visit for every region of a tree (lock held; visit must not modify the tree). */
void sim_region_each(sim_tree tree, void (*visit)(sim_region *region, void *arg), void *arg);

/* Checks that [address, address + bytes) is covered by contiguous regions `device` may
 * access (for_write: needs write access). Lock held. */
CUresult sim_range_check(CUdevice device, uintptr_t address, size_t bytes, bool for_write);

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
    sim_context *primaries[SIM_MAX_DEVICES]; /* each device's primary context */
    sim_pool *default_pool;
    size_t device_used;         /* bytes of DEVICE memory, all devices */
    size_t device_used_of[SIM_MAX_DEVICES]; /* per device, against its capacity */
    size_t device_peak;
    size_t live_device_allocations;
    unsigned long long next_id;
    /* bytes moved by copies, by destination and source location */
    uint64_t copy_bytes[SIM_LOC_COUNT][SIM_LOC_COUNT];  /* [dst][src], sim_location */
    uint64_t launches;          /* kernels run */
    uint64_t launch_calls;      /* launches that got as far as their kernel, refused ones too
                                 * (what SIMCUDA_HOLD counts) */
    int async_pending;          /* operations queued or running on worker threads */
    int async_blocking_pending; /* of those, on blocking streams (the legacy stream waits) */
    pthread_cond_t async_done;  /* broadcast whenever a queued operation completes */
    sim_op *order_head, *order_tail; /* queued operations, oldest first (sim_async.c) */
    uint64_t order_last;        /* the order of the operation queued last */
    sim_uvm *uvm;               /* managed memory's fault model, made on first use */
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

/* Device memory accounting against each device's SIMCUDA_MEM (lock held). */
bool sim_device_reserve(CUdevice device, size_t bytes);
void sim_device_release(CUdevice device, size_t bytes);
/* Lock not held: CUDA_SUCCESS for a device ordinal of this driver (after cuInit). */
CUresult sim_device_check(CUdevice device);

/* Byte offset of parameter `index` in a packed buffer of the table's layout (index =
 * count gives the buffer's size). */
size_t sim_param_offset(const simcuda_params *table, size_t index);

/* Frees every object and allocation owned by a context (lock held). */
void sim_context_release_resources(sim_context *ctx);
void sim_memory_release_context(sim_context *ctx);
void sim_stream_release_context(sim_context *ctx);
void sim_module_release_context(sim_context *ctx);

/* Modules (sim_module.c), used by libraries and the runtime's table (sim_library.c). */
/* A host-kernel library from a path, or from the bytes of one in memory. */
CUresult sim_module_open_path(sim_module *module, const char *path);
CUresult sim_module_open_image(sim_module *module, const void *image);
/* Frees an unregistered module (its functions already out of the handle table). */
void sim_module_close(sim_module *module);
/* Lock held: the module's function `name`, made on first use; CUDA_ERROR_NOT_FOUND when
 * the module has no such kernel. */
CUresult sim_module_function(sim_module *module, const char *name, sim_function **out);
/* Lock held: CU_FUNC_ATTRIBUTE_* of a function (GPU-like values; see sim_module.c). */
CUresult sim_function_get_attribute(const sim_function *function, CUfunction_attribute attribute, CUdevice device,
                                    int *value);
CUresult sim_function_set_attribute(sim_function *function, CUfunction_attribute attribute, int value);
/* A module of GPU code in the current context, from a fatbin wrapper (the 11.8 runtime's
 * table 2 slot 6), and its unload by the same wrapper (slot 7). */
CUresult sim_gpu_module_load(CUmodule *out, const void *image);
void sim_gpu_module_unload_image(const void *image);
/* Lock held: a context goes; libraries forget the storage they gave its variables (the
 * memory itself goes with the context's). */
void sim_library_release_context(sim_context *ctx);
/* Lock not held: frees the storage of a module's variables (before the module closes). */
void sim_module_free_globals(sim_module *module);

/* Device-memory allocation shared by cuMemAlloc, pitch, async and pool paths. */
CUresult sim_device_alloc(CUdeviceptr *dptr, size_t bytes, bool managed, sim_pool *pool);
CUresult sim_device_free(CUdeviceptr dptr);

/* The memfd name of a cuMemCreate allocation: its location, so that an importing
 * process learns it (cuMemImportFromShareableHandle). */
#define SIM_PHYS_NAME_FORMAT "simcuda-vmm-%d-%d"   /* location type, location id */

/* Lock held: closes the memfd of an exported device region (before its memory goes). */
void sim_ipc_region_gone(sim_region *region);

/* ---------------------------------------------------------------- context-local storage */

/* What the CUDA runtime keeps per context through export table 5 (sim_export.c): one
 * value per key, and a destructor run when the context goes (destroy, primary-context
 * reset, release of its last retain). NULL as the context means the current one. */
typedef void sim_local_dtor(CUcontext ctx, void *key, void *value);
CUresult sim_local_put(CUcontext ctx, void *key, void *value, sim_local_dtor *dtor);
CUresult sim_local_delete(CUcontext ctx, void *key);
/* CUDA_ERROR_NOT_FOUND for a key never put (the runtime then builds its state). */
CUresult sim_local_get(void **value, CUcontext ctx, void *key);
/* Lock not held: runs and forgets every destructor of the context while it is still
 * usable (a destructor may call the driver), before its resources go. */
void sim_local_destroy(sim_context *ctx);

/* ---------------------------------------------------------------- execution */

/* One unit of stream work. Submitted, it runs at once on the calling thread (the default
 * stream, SIMCUDA_ASYNC off, or work that cannot wait: pageable copies, kernels without a
 * parameter table) or is queued for the stream's worker (sim_async.c). */
typedef enum sim_op_kind {
    SIM_OP_COPY, SIM_OP_MEMSET, SIM_OP_LAUNCH, SIM_OP_RECORD, SIM_OP_WAIT, SIM_OP_HOST_FUNC,
} sim_op_kind;

struct sim_op {
    sim_op *next;
    sim_op *order_prev, *order_next; /* queued: every stream's pending work, in submission order */
    uint64_t order;             /* queued: its place in that order (sim_async.c) */
    bool blocking;              /* queued on a blocking stream (the legacy stream waits for it) */
    sim_op_kind kind;
    double submitted_ns;        /* host clock at submission: nothing starts before it */
    uint64_t seq;               /* launch sequence number (the touch probe's 4th argument) */
    bool on_host_thread;        /* runs in the submitting call: the host clock follows */
    bool host_waits;            /* a synchronous call: the host clock moves to its end */
    union {
        struct { void *dst; const void *src; size_t bytes; } copy;
        struct { void *dst; unsigned int value; size_t element_size, count; } memset;
        struct {
            simcuda_kernel_fn *entry;
            const simcuda_params *table;   /* parameter layout, or NULL */
            simcuda_launch launch;
            const char *name;
            int abi;
            void *param_copy;              /* queued: [params][values], owned */
        } launch;
        struct { sim_event *event; uint64_t record; } event;   /* RECORD, WAIT */
        struct { CUhostFn fn; void *data; } host;
    };
};

/* The one place where device work runs and is charged simulated time (see the header
 * comment and sim_time.h). The stream is already resolved; NULL means the context's
 * default stream. host_waits: a synchronous call (the host clock moves to its end). */
CUresult sim_exec_copy(sim_stream *stream, void *dst, const void *src, size_t bytes, bool host_waits);
CUresult sim_exec_memset(sim_stream *stream, void *dst, unsigned int value,
                         size_t element_size, size_t count);
/* `name` is the kernel's function name; abi its module's (1: no cost declarations). */
CUresult sim_exec_launch(sim_stream *stream, simcuda_kernel_fn *entry, const simcuda_params *table,
                         simcuda_launch *launch, const char *name, int abi);
/* Records `event` (lock not held); its op_refs and records were taken under the lock. */
CUresult sim_exec_event(sim_stream *stream, sim_op_kind kind, sim_event *event, uint64_t record);
CUresult sim_exec_host_func(sim_stream *stream, CUhostFn fn, void *data);
/* Submits a copy of a recorded operation (a graph's), queueable. */
CUresult sim_exec_op(sim_stream *stream, const sim_op *op);
/* Runs one operation on the calling thread, lock not held; returns when it ends in
 * simulated time. */
double sim_exec_run(sim_stream *stream, sim_op *op);

/* ---------------------------------------------------------------- asynchronous streams */

/* Lock held: queues a copy of *op (and of the launch's parameters) for the stream's
 * worker. CUDA_ERROR_OUT_OF_MEMORY when it cannot. */
CUresult sim_async_enqueue(sim_stream *stream, const sim_op *op);
/* Lock held: wait until the work queued on the stream before the call is done (NULL:
 * on every blocking stream, as the legacy default stream does), or on every stream.
 * Work queued meanwhile is not waited for, so streams that keep submitting cannot
 * starve a synchronisation. */
void sim_async_wait_stream(const sim_stream *stream);
void sim_async_wait_all(void);
/* Lock held: whether the stream (NULL: the legacy stream) still has work. */
bool sim_async_busy(const sim_stream *stream);
/* Lock held: a stream's handle is gone; frees it now or when its worker is done. */
void sim_async_stream_gone(sim_stream *stream);
/* A copy of *op that owns its launch parameters; NULL when out of memory. */
sim_op *sim_op_clone(const sim_op *op);
void sim_op_free(sim_op *op);

/* ---------------------------------------------------------------- graphs (capture) */

/* Lock held: appends a copy of *op to the graph `stream` captures. queueable false: the
 * work cannot be captured (it would make the host wait); the capture is invalidated and
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED returned. */
CUresult sim_graph_capture_op(sim_stream *stream, const sim_op *op, bool queueable);
/* Lock held: an allocation made on a capturing stream belongs to the graph. */
void sim_graph_capture_alloc(sim_stream *stream, CUdeviceptr dptr);
/* Lock held: a free on a capturing stream; memory the graph allocated is freed with it,
 * other memory when the graph runs. */
CUresult sim_graph_capture_free(sim_stream *stream, CUdeviceptr dptr);
/* Lock not held: true (and the capture invalidated) when `stream` is capturing, for calls
 * that would make the host wait on it. */
bool sim_graph_capture_refuses(sim_stream *stream);
/* Lock held: an event's handle is gone, or an operation let go of it: frees it when
 * nothing points at it any more. */
void sim_event_release(sim_event *event);

/* ---------------------------------------------------------------- fault injection */

/* SIMCUDA_HOLD: kernel launch number `n` (from 1, over the process) waits before it runs
 * until the configured file exists, so a test can look at a program held at a known point. */
void sim_hold_launch(uint64_t n);

/* True when this call of `name` is one SIMCUDA_FAIL makes fail; *error is what it returns. */
bool sim_fail_inject(const char *name, CUresult *error);
/* The exit summary's lines on the calls each rule counted (SIMCUDA_LOG=info). */
void sim_fail_summary(void);
/* The first statement of every implemented entry point. */
#define SIM_FAIL_POINT(name)                                                 \
    do {                                                                     \
        CUresult sim_injected_;                                              \
        if (sim_fail_inject(#name, &sim_injected_))                          \
            return sim_injected_;                                            \
    } while (0)
/* An error code by its name (CUDA_ERROR_OUT_OF_MEMORY), from the error table. */
bool sim_error_from_name(const char *name, size_t len, CUresult *code);

/* ---------------------------------------------------------------- managed memory */

/* All lock held. Managed allocations enter and leave the fault model (sim_managed.c). */
void sim_managed_add(uintptr_t base, size_t size);
void sim_managed_remove(uintptr_t base);
bool sim_managed_contains(uintptr_t address);
/* A device access (a kernel's declared range, a memset) to managed memory; `cost` is
 * added to. False when the fault model does not track the range (charge it as HBM). */
bool sim_managed_device_access(uintptr_t address, size_t bytes, bool write, sim_uvm_cost *cost);
/* One piece of a copy with managed memory on a side: a host access when the other side is
 * host memory, a device access when it is device memory. */
void sim_managed_copy(uintptr_t dst, sim_location dst_loc, uintptr_t src, sim_location src_loc, size_t bytes,
                      sim_uvm_cost *cost);
/* Batches the faults of one kernel launch or memset (all its declared ranges). */
void sim_managed_settle(sim_uvm_cost *op);
void sim_managed_totals(sim_uvm_cost *totals);

/* ---------------------------------------------------------------- diagnostics */

void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Says once on stderr that `name` is not implemented; returns CUDA_ERROR_NOT_SUPPORTED. */
CUresult sim_not_supported(const char *name);

#endif /* SIM_INTERNAL_H */
