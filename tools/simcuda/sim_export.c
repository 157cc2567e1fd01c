/* sim_export.c — cuGetExportTable: the undocumented tables the CUDA runtime asks its
 * driver for, by UUID, before it serves any call.
 *
 * libcudart (static or shared) takes cuGetExportTable with dlsym and asks for the tables
 * below; refusing any of tables 2 to 7 makes every runtime call fail. A table is an
 * array of pointer-sized slots; where it has a size header, slot 0 holds the table's
 * size in bytes. Each slot says beside it what it is, its signature as observed, and
 * which runtimes call it: "13.0" is the CUDA 13.0 toolkit's libcudart, "11.8" Debian's.
 *
 * Slots nobody has seen called hold traps: a call logs one line naming the table and the
 * slot and answers CUDA_ERROR_NOT_SUPPORTED, so a runtime that starts using one says so.
 * SIMCUDA_EXPORT_TRACE=1 logs every table asked for (known or not) and the first calls
 * of every slot with their arguments, and counts the calls at exit; =traps also answers
 * the tables it would refuse (unknown ones, and table 1) with tables made only of traps
 * (slot 0 included: its address, read as a size, passes an "at least" check), so which
 * slots a new runtime calls is measured.
 * Reads of data slots (a size header) cannot be seen; calls can.
 *
 * Tables are static and never move: the runtime hashes the addresses of tables 2 and 7
 * into the integrity answer (table 7), so an interposer must hand them on untouched. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/simcuda/sim_integrity.h"
#include "tools/simcuda/sim_internal.h"

#define TRAP_SLOTS     60   /* slots of a trap table (the deepest table known has 58) */
#define KNOWN_TABLES   7
#define UNKNOWN_TABLES 5    /* distinct unknown tables =traps can answer */
#define ALL_TABLES     (KNOWN_TABLES + UNKNOWN_TABLES)

/* ---------------------------------------------------------------- calls and traps */

static atomic_uint_fast64_t slot_calls[ALL_TABLES][TRAP_SLOTS];
static unsigned char unknown_ids[UNKNOWN_TABLES][16]; /* the UUIDs trap tables stand for */
static int unknown_count;
static pthread_mutex_t unknown_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *table_name(int table);
static const unsigned char *table_id(int table);

static void format_uuid(const unsigned char *b, char out[48])
{
    snprintf(out, 48, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Counts a call of `slot`; with the trace on, the first three calls of each slot are
 * logged with their arguments (`get` alone is called before almost every runtime call). */
static void slot_called(int table, int slot, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void slot_called(int table, int slot, const char *fmt, ...)
{
    uint_fast64_t n = atomic_fetch_add(&slot_calls[table][slot], 1);
    if (sim_export_trace() == SIM_EXPORT_TRACE_OFF || n >= 3)
        return;
    char args[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    sim_log("export table %d (%s) slot %d called: %s", table + 1, table_name(table), slot, args);
}

/* A slot with no known use: one line per slot, whatever the trace setting. */
static CUresult trap_called(int table, int slot)
{
    uint_fast64_t n = atomic_fetch_add(&slot_calls[table][slot], 1);
    if (n == 0) {
        char id[48];
        format_uuid(table_id(table), id);
        sim_log("export table %s (%s) slot %d was called: simcuda does not know it (returns "
                "CUDA_ERROR_NOT_SUPPORTED)", id, table_name(table), slot);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* One distinct trap per table and slot, so each call says where it came from. The caller
 * passes arguments the trap ignores. */
#define TRAP_DEFINE(t, d, u) \
    static CUresult trap_##t##_##d##u(void) { return trap_called(t, d * 10 + u); }
#define TRAP_ADDRESS(t, d, u) (void *)trap_##t##_##d##u,
#define TRAP_ROW(M, t, d) M(t, d, 0) M(t, d, 1) M(t, d, 2) M(t, d, 3) M(t, d, 4) \
                          M(t, d, 5) M(t, d, 6) M(t, d, 7) M(t, d, 8) M(t, d, 9)
#define TRAP_TABLE(M, t) TRAP_ROW(M, t, 0) TRAP_ROW(M, t, 1) TRAP_ROW(M, t, 2) \
                         TRAP_ROW(M, t, 3) TRAP_ROW(M, t, 4) TRAP_ROW(M, t, 5)
#define TRAP_ALL(M) TRAP_TABLE(M, 0) TRAP_TABLE(M, 1) TRAP_TABLE(M, 2) TRAP_TABLE(M, 3) \
                    TRAP_TABLE(M, 4) TRAP_TABLE(M, 5) TRAP_TABLE(M, 6) TRAP_TABLE(M, 7) \
                    TRAP_TABLE(M, 8) TRAP_TABLE(M, 9) TRAP_TABLE(M, 10) TRAP_TABLE(M, 11)

TRAP_ALL(TRAP_DEFINE)

static void *const traps[ALL_TABLES][TRAP_SLOTS] = {
#define TRAP_TABLE_INIT(t) { TRAP_TABLE(TRAP_ADDRESS, t) },
    TRAP_TABLE_INIT(0) TRAP_TABLE_INIT(1) TRAP_TABLE_INIT(2) TRAP_TABLE_INIT(3) TRAP_TABLE_INIT(4)
    TRAP_TABLE_INIT(5) TRAP_TABLE_INIT(6) TRAP_TABLE_INIT(7) TRAP_TABLE_INIT(8) TRAP_TABLE_INIT(9)
    TRAP_TABLE_INIT(10) TRAP_TABLE_INIT(11)
#undef TRAP_TABLE_INIT
};

#define TRAP(t, d, u) (void *)trap_##t##_##d##u
#define SIZE_HEADER(slots) (void *)(uintptr_t)((slots) * sizeof(void *))

/* ---------------------------------------------------------------- table 2: CUDART_INTERFACE */

/* Slot 2 (13.0, 11.8): the device's primary context, not retained (the runtime retains
 * it itself afterwards). */
static CUresult rt_primary_context(CUcontext *out, CUdevice device)
{
    slot_called(1, 2, "(%p, device %d)", (void *)out, device);
    CUresult result = sim_device_check(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (CUcontext)sim.primaries[device];
    return CUDA_SUCCESS;
}

/* Slot 6 (11.8): loads a fatbin wrapper as a module of the current context, as
 * cuModuleLoadData does; simcuda's is a module of GPU code with nothing to run. */
static CUresult rt_module_load(CUmodule *out, const void *wrapper, void *arg3, void *arg4, size_t arg5)
{
    slot_called(1, 6, "(%p, %p, %p, %p, %zu)", (void *)out, wrapper, arg3, arg4, arg5);
    return sim_gpu_module_load(out, wrapper);
}

/* Slot 7 (11.8): unloads the module slot 6 made from this wrapper. */
static void rt_module_unload(const void *wrapper)
{
    slot_called(1, 7, "(%p)", wrapper);
    sim_gpu_module_unload_image(wrapper);
}

static void *const runtime_interface[10] = {
    SIZE_HEADER(10),
    TRAP(1, 0, 1),
    (void *)rt_primary_context,
    TRAP(1, 0, 3), TRAP(1, 0, 4), TRAP(1, 0, 5),
    (void *)rt_module_load,
    (void *)rt_module_unload,
    TRAP(1, 0, 8), TRAP(1, 0, 9),
};

/* ---------------------------------------------------------------- table 3: TOOLS_RUNTIME_CALLBACK_HOOKS */

/* Slots 2 and 6 (13.0, 11.8): `void (void **buffer, size_t *count)` hand out a scratch
 * buffer the runtime writes into; 1024 and 14 entries are enough. Each holds `count`
 * 8-byte entries, so it is large enough whether the count is of entries or of bytes. */
static uint64_t hooks_buffer_a[1024];
static uint64_t hooks_buffer_b[14];

static void hooks_buffer_2(void **buffer, size_t *count)
{
    slot_called(2, 2, "(%p, %p)", (void *)buffer, (void *)count);
    if (buffer)
        *buffer = hooks_buffer_a;
    if (count)
        *count = sizeof hooks_buffer_a / sizeof hooks_buffer_a[0];
}

static void hooks_buffer_6(void **buffer, size_t *count)
{
    slot_called(2, 6, "(%p, %p)", (void *)buffer, (void *)count);
    if (buffer)
        *buffer = hooks_buffer_b;
    if (count)
        *count = sizeof hooks_buffer_b / sizeof hooks_buffer_b[0];
}

/* The size must be at least 56 bytes (7 slots), else cudaErrorInsufficientDriver. */
static void *const tools_hooks[7] = {
    SIZE_HEADER(7),
    TRAP(2, 0, 1),
    (void *)hooks_buffer_2,
    TRAP(2, 0, 3), TRAP(2, 0, 4), TRAP(2, 0, 5),
    (void *)hooks_buffer_6,
};

/* ---------------------------------------------------------------- table 4: TOOLS_TLS */

/* Must be served (refusing it fails every call), but 13.0 reads no slot. Measured:
 * cuBLASLt 13.1 calls slot 2 on its GEMM path (first argument a pointer to a zeroed stack
 * slot, so an out-parameter); what it must answer is not known, so it stays a trap and
 * the GEMM fails with CUBLAS_STATUS_NOT_SUPPORTED (tests/cudart/cudart_cublas.cu). */
static void *const tools_tls[3] = {
    SIZE_HEADER(3),
    TRAP(3, 0, 1),
    TRAP(3, 0, 2),
};

/* ---------------------------------------------------------------- table 5: CONTEXT_LOCAL_STORAGE */

/* Slot 0 (13.0, 11.8): put(context, key, value, destructor); the destructor runs when
 * the context is destroyed, reset, or released for the last time (sim_ctx_local.c). */
static CUresult cls_put(CUcontext ctx, void *key, void *value, sim_local_dtor *dtor)
{
    slot_called(4, 0, "(context %p, key %p, value %p, destructor %p)", (void *)ctx, key, value,
                (void *)(uintptr_t)dtor);
    return sim_local_put(ctx, key, value, dtor);
}

/* Slot 1 (13.0, 11.8): delete(context, key), at teardown; the destructor does not run. */
static CUresult cls_delete(CUcontext ctx, void *key)
{
    slot_called(4, 1, "(context %p, key %p)", (void *)ctx, key);
    return sim_local_delete(ctx, key);
}

/* Slot 2 (13.0, 11.8): get(value out, context or NULL for the current one, key), before
 * almost every runtime call; it fails for a key never put. */
static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
    slot_called(4, 2, "(%p, context %p, key %p)", (void *)value, (void *)ctx, key);
    return sim_local_get(value, ctx, key);
}

/* No size header: slot 0 is a function. */
static void *const context_storage[4] = {
    (void *)cls_put,
    (void *)cls_delete,
    (void *)cls_get,
    TRAP(4, 0, 3),
};

/* ---------------------------------------------------------------- table 6: (13.0, no name) */

/* Slot 2 (13.0): `(context, uint32_t *wrapped, void **inner)` at context set-up, sync and
 * reset: no simcuda context wraps another, so 0 and NULL. */
static CUresult ctx_unwrap(CUcontext ctx, uint32_t *wrapped, void **inner)
{
    slot_called(5, 2, "(context %p, %p, %p)", (void *)ctx, (void *)wrapped, (void *)inner);
    if (wrapped)
        *wrapped = 0;
    if (inner)
        *inner = NULL;
    return CUDA_SUCCESS;
}

/* Slot 3 (13.0): called once as (pointer, 0x40, 0); success is all it needs. */
static CUresult ctx_slot3(void *arg1, unsigned int arg2, unsigned int arg3)
{
    slot_called(5, 3, "(%p, %#x, %#x)", arg1, arg2, arg3);
    return CUDA_SUCCESS;
}

static void *const context_wrapper[4] = {
    SIZE_HEADER(4),
    TRAP(5, 0, 1),
    (void *)ctx_unwrap,
    (void *)ctx_slot3,
};

/* ---------------------------------------------------------------- table 7: INTEGRITY_CHECK */

static CUresult integrity_answer(unsigned int version, uint64_t unix_seconds, uint64_t out[2]);

/* Slot 0 must be exactly 24 for 11.8. */
static void *const integrity_check[3] = {
    SIZE_HEADER(3),
    (void *)integrity_answer,
    TRAP(6, 0, 2),
};

/* Slot 1 (13.0, 11.8): `(version, unix seconds, out[2])`, called with the runtime's version
 * + 0, + 1 and + 2 (13000, 13001, 13002): two fixed answers, then an HMAC-MD2 over this
 * process, the tables it was given and the devices (sim_integrity.c). A wrong answer is
 * cudaErrorSoftwareValidityNotEstablished. */
static CUresult integrity_answer(unsigned int version, uint64_t unix_seconds, uint64_t out[2])
{
    slot_called(6, 1, "(version %u, seconds %" PRIu64 ", %p)", version, unix_seconds, (void *)out);
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned offset = version % 10;
    if (offset < 2) {
        sim_integrity_fixed(offset, out);
        return CUDA_SUCCESS;
    }
    if (offset != 2) {
        sim_log("export table 7 slot 1: version %u is not a runtime version + 0, 1 or 2 (returns "
                "CUDA_ERROR_INVALID_VALUE)", version);
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    int driver_version = 0;
    cuDriverGetVersion(&driver_version);
    sim_integrity_input input = {
        .driver_version = (uint32_t)driver_version,
        .version = version,
        .pid = (uint32_t)getpid(),
        .thread = (uint32_t)pthread_self(),
        .runtime_table = (uint64_t)(uintptr_t)runtime_interface,
        .integrity_table = (uint64_t)(uintptr_t)integrity_check,
        .function = (uint64_t)(uintptr_t)integrity_answer,
        .unix_seconds = unix_seconds,
        .device_count = sim.config.device_count,
    };
    for (int d = 0; d < input.device_count && d < SIM_INTEGRITY_MAX_DEVICES; d++) {
        /* The driver's own answers, exactly as the runtime reads them. */
        sim_integrity_device *dev = &input.devices[d];
        CUuuid uuid;
        if ((result = cuDeviceGetUuid_v2(&uuid, d)) != CUDA_SUCCESS ||
            (result = cuDeviceGetAttribute(&dev->pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d)) != CUDA_SUCCESS ||
            (result = cuDeviceGetAttribute(&dev->pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d)) != CUDA_SUCCESS ||
            (result = cuDeviceGetAttribute(&dev->pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d)) != CUDA_SUCCESS)
            return result;
        memcpy(dev->uuid, uuid.bytes, sizeof dev->uuid);
    }
    uint8_t digest[16];
    sim_integrity_digest(&input, digest);
    memcpy(out, digest, sizeof digest);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- the registry */

typedef struct export_table {
    const char *name;
    unsigned char id[16];   /* CUuuid.bytes, in order */
    void *const *slots;     /* NULL: refused with CUDA_ERROR_NOT_FOUND */
} export_table;

/* In the order libcudart 13.0 asks for them; 11.8 asks for all but 1 and 6. */
static const export_table known[KNOWN_TABLES] = {
    /* 1 (13.x only): asked for, no slot ever read; refusing it changes nothing in 13.0
     * (measured: the same runtime test passes, and answered with traps no slot is called),
     * and its layout is unknown, so it is refused. Newer runtimes (13.2) read deeper. */
    { "unnamed 13.x table",
      { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 }, NULL },
    { "CUDART_INTERFACE",
      { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 }, runtime_interface },
    { "TOOLS_RUNTIME_CALLBACK_HOOKS",
      { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 }, tools_hooks },
    { "TOOLS_TLS",
      { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc }, tools_tls },
    { "CONTEXT_LOCAL_STORAGE",
      { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 }, context_storage },
    { "unnamed 13.0 context table",
      { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e }, context_wrapper },
    { "INTEGRITY_CHECK",
      { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 }, integrity_check },
};

static const char *table_name(int table)
{
    return table < KNOWN_TABLES ? known[table].name : "unknown, answered with traps";
}

static const unsigned char *table_id(int table)
{
    return table < KNOWN_TABLES ? known[table].id : unknown_ids[table - KNOWN_TABLES];
}

/* SIMCUDA_EXPORT_TRACE=traps: the trap table standing for an unknown UUID (the same one
 * each time it is asked for), or NULL when all are taken. */
static void *const *unknown_traps(const unsigned char *id)
{
    void *const *slots = NULL;
    pthread_mutex_lock(&unknown_lock);
    for (int i = 0; i < unknown_count && !slots; i++)
        if (memcmp(unknown_ids[i], id, 16) == 0)
            slots = traps[KNOWN_TABLES + i];
    if (!slots && unknown_count < UNKNOWN_TABLES) {
        memcpy(unknown_ids[unknown_count], id, 16);
        slots = traps[KNOWN_TABLES + unknown_count++];
    }
    pthread_mutex_unlock(&unknown_lock);
    return slots;
}

SIM_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    SIM_FAIL_POINT(cuGetExportTable);
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char bytes[16];
    memcpy(bytes, id->bytes, sizeof bytes);
    char text[48];
    format_uuid(bytes, text);
    int trace = sim_export_trace();
    for (int t = 0; t < KNOWN_TABLES; t++) {
        if (memcmp(known[t].id, bytes, sizeof bytes) != 0)
            continue;
        /* =traps answers a table simcuda refuses with its traps too, to measure it. */
        void *const *slots = known[t].slots ? known[t].slots
                             : trace == SIM_EXPORT_TRACE_TRAPS ? traps[t] : NULL;
        if (trace)
            sim_log("cuGetExportTable %s: table %d (%s)%s", text, t + 1, known[t].name,
                    known[t].slots ? "" : slots ? ", answered with a table of traps" : ", refused (CUDA_ERROR_NOT_FOUND)");
        *table = slots;
        return slots ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
    }
    void *const *slots = trace == SIM_EXPORT_TRACE_TRAPS ? unknown_traps(bytes) : NULL;
    if (trace)
        sim_log("cuGetExportTable %s: unknown table, %s", text,
                slots ? "answered with a table of traps" : "refused (CUDA_ERROR_NOT_FOUND)");
    *table = slots;
    return slots ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* With the trace on: how often each slot was called, at exit. */
__attribute__((destructor)) static void export_trace_summary(void)
{
    if (sim_export_trace() == SIM_EXPORT_TRACE_OFF)
        return;
    for (int t = 0; t < ALL_TABLES; t++)
        for (int s = 0; s < TRAP_SLOTS; s++) {
            uint_fast64_t n = atomic_load(&slot_calls[t][s]);
            if (n) {
                char id[48];
                format_uuid(table_id(t), id);
                sim_log("export table %s (%s) slot %d: %" PRIuFAST64 " calls", id, table_name(t), s, n);
            }
        }
}
