/* ipc_export.c — the exporting side of tiermem's IPC (see ipc.h): handles for chunked
 * allocations, and the thread that serves their chunks' descriptors. */
#include "preload/ipc/ipc.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "preload/mem/alloc.h"
#include "preload/driver/driver.h"
#include "preload/filetier/file_tier.h"
#include "preload/ipc/ipc_socket.h"
#include "preload/ipc/ipc_wire.h"
#include "preload/base/log.h"
#include "preload/move/migrate.h"
#include "preload/base/settings.h"
#include "preload/base/libc_real.h"

/* One allocation exported so far. Entries of freed allocations are dropped when seen. */
typedef struct export_entry {
    uint64_t alloc_id;
    CUdeviceptr base;
    uint64_t nonce[2];
} export_entry;

static pthread_mutex_t export_lock = PTHREAD_MUTEX_INITIALIZER;
static export_entry *exports;   /* [export_count] */
static size_t export_count, export_capacity;
static int listener = -1;       /* the serving socket, once the first handle was made */

/* Whether a chunk of `tier` can be created exportable; true also when the tier refuses
 * chunks of any kind (that is the tier's problem, found and said at the first allocation). */
static bool tier_takes_handles(const tm_backing_target *target, tm_tier_id tier, uint64_t chunk_size)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = tier == TM_TIER_HBM ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = tier == TM_TIER_HBM ? target->device : target->node[tier];
    CUmemGenericAllocationHandle handle;
    for (int exportable = 1; exportable >= 0; exportable--) {
        prop.requestedHandleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
        if (tm_real.cuMemCreate(&handle, chunk_size, &prop, 0) == CUDA_SUCCESS) {
            tm_release_call(tm_real.cuMemRelease(handle));
            return exportable;
        }
    }
    return true;
}

static CUmemAllocationHandleType chunk_handle_types(const tm_backing_target *target, const tm_tiers *tiers,
                                                    uint64_t chunk_size)
{
    int supported = 0;
    if (tm_real.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                     target->device) != CUDA_SUCCESS || !supported) {
        tm_info("ipc: the device cannot export memory as file descriptors: cuIpcGetMemHandle cannot share "
                "tiered memory (TIERMEM_IPC=passthrough keeps what fits in HBM shareable)");
        return CU_MEM_HANDLE_TYPE_NONE;
    }
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        bool vmm = t == TM_TIER_HBM || !target->pinned_host;
        if (tiers->tier[t].present && vmm && !tier_takes_handles(target, (tm_tier_id)t, chunk_size)) {
            tm_info("ipc: the driver does not export %s chunks as file descriptors: cuIpcGetMemHandle cannot "
                    "share tiered memory (TIERMEM_IPC=passthrough keeps what fits in HBM shareable)",
                    tm_tier_name((tm_tier_id)t));
            return CU_MEM_HANDLE_TYPE_NONE;
        }
    }
    return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

void tm_ipc_device_set_up(tm_device *device)
{
    device->target.handle_types = chunk_handle_types(&device->target, &device->tiers, device->policy.chunk_size);
}

/* ---------------------------------------------------------------- the allocations */

typedef struct alloc_facts {
    tm_alloc *alloc;            /* valid only while the remap lock is held */
    uint64_t id;
    bool exportable;
} alloc_facts;

static void read_facts(tm_alloc *a, void *arg)
{
    alloc_facts *facts = arg;
    facts->alloc = a;
    facts->id = a->id;
    facts->exportable = a->backing && !a->backing->pinned_host;
}

static bool chunks_exportable(void)
{
    const tm_device *device = tm_device_ready();
    return device && (device->target.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

bool tm_ipc_capable(CUdeviceptr address)
{
    alloc_facts facts = { 0 };
    return chunks_exportable() && tm_alloc_find(address, read_facts, &facts) && facts.exportable;
}

/* ---------------------------------------------------------------- serving */

/* The export a request names, with its chunks retained (a free of the allocation meanwhile
 * leaves them alive until released): *handles is malloc'd, reply filled in. The migration
 * lock keeps the allocation from being freed (alloc.c frees under it) while it is read. */
static void retain_chunks(const tm_ipc_request *request, tm_ipc_reply *reply, CUmemGenericAllocationHandle **handles)
{
    *reply = (tm_ipc_reply){ .status = TM_IPC_UNKNOWN };
    *handles = NULL;
    CUdeviceptr base = 0;
    pthread_mutex_lock(&export_lock);
    for (size_t i = 0; i < export_count; i++)
        if (exports[i].alloc_id == request->alloc_id &&
            memcmp(exports[i].nonce, request->nonce, sizeof exports[i].nonce) == 0)
            base = exports[i].base;
    pthread_mutex_unlock(&export_lock);
    if (!base)
        return;
    tm_remap_lock();
    alloc_facts facts = { 0 };
    reply->status = TM_IPC_FREED;
    if (tm_alloc_find(base, read_facts, &facts) && facts.exportable && facts.id == request->alloc_id) {
        const tm_backing *b = facts.alloc->backing;
        *reply = (tm_ipc_reply){ .status = TM_IPC_FAILED, .size = facts.alloc->range.size,
                                 .chunk_size = b->plan.chunk_size, .chunks = b->plan.chunks };
        uint64_t retained = 0;
        *handles = malloc(b->plan.chunks * sizeof **handles);
        while (*handles && retained < b->plan.chunks &&
               tm_real.cuMemRetainAllocationHandle(&(*handles)[retained],
                                                   (void *)(uintptr_t)(base + retained * b->plan.chunk_size)) ==
                   CUDA_SUCCESS)
            retained++;
        if (retained == b->plan.chunks) {
            reply->status = TM_IPC_OK;
        } else {
            for (uint64_t i = 0; i < retained; i++)
                tm_release_call(tm_real.cuMemRelease((*handles)[i]));
            free(*handles);
            *handles = NULL;
        }
    }
    tm_remap_unlock();
}

/* Sends the chunks' descriptors, TM_IPC_FDS_PER_MESSAGE at a time, so that no more than
 * that many are open here at once whatever the allocation's size. */
static bool send_chunks(int conn, const CUmemGenericAllocationHandle *handles, uint64_t chunks)
{
    for (uint64_t at = 0; at < chunks;) {
        int fds[TM_IPC_FDS_PER_MESSAGE];
        unsigned n = 0;
        while (n < TM_IPC_FDS_PER_MESSAGE && at + n < chunks &&
               tm_real.cuMemExportToShareableHandle(&fds[n], handles[at + n], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                    0) == CUDA_SUCCESS)
            n++;
        bool whole = n == TM_IPC_FDS_PER_MESSAGE || at + n == chunks;
        bool sent = whole && tm_ipc_send_fds(conn, fds, n);
        for (unsigned i = 0; i < n; i++)
            tm_libc_close(fds[i]); /* the importer has its own copies now, or gave up */
        if (!sent)
            return false;
        at += n;
    }
    return true;
}

static void serve_request(int conn, const tm_ipc_request *request)
{
    tm_ipc_reply reply;
    CUmemGenericAllocationHandle *handles;
    retain_chunks(request, &reply, &handles);
    bool sent = tm_ipc_send(conn, &reply, sizeof reply) && (!handles || send_chunks(conn, handles, reply.chunks));
    for (uint64_t i = 0; handles && i < reply.chunks; i++)
        tm_release_call(tm_real.cuMemRelease(handles[i]));
    free(handles);
    if (!sent)
        tm_debug("ipc: an importer went away, or a chunk could not be exported, before it had every chunk");
}

static void *serve_loop(void *arg)
{
    (void)arg;
    for (;;) {
        int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            tm_log_once(TM_LOG_WARN, "ipc: the handle server stopped (%s); handles made so far cannot be opened",
                        strerror(errno));
            return NULL;
        }
        pid_t peer;
        tm_ipc_request request;
        tm_ipc_socket_timeouts(conn, 5);
        if (!tm_ipc_peer_trusted(conn, &peer))
            tm_warn("ipc: process %d of another user asked for a handle's memory; refused", (int)peer);
        else if (tm_ipc_recv(conn, &request, sizeof request) &&
                 memcmp(request.magic, TM_IPC_MAGIC, sizeof request.magic) == 0 && request.version == TM_IPC_VERSION)
            serve_request(conn, &request);
        tm_libc_close(conn);
    }
}

static void forget_in_child(void)
{
    /* the thread did not survive the fork, and the socket is the parent's */
    if (listener >= 0)
        tm_libc_close(listener);
    listener = -1;
    export_count = 0;
    pthread_mutex_init(&export_lock, NULL);
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forget_in_child);
}

/* Export lock held: binds this process's socket and starts the thread that serves it. */
static bool start_server(void)
{
    if (listener >= 0)
        return true;
    static pthread_once_t fork_handler = PTHREAD_ONCE_INIT;
    pthread_once(&fork_handler, register_fork_handler);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un address;
    socklen_t len;
    tm_ipc_socket_address(getpid(), &address, &len);
    if (fd < 0 || bind(fd, (struct sockaddr *)&address, len) != 0 || listen(fd, 16) != 0) {
        tm_warn("ipc: cannot serve handles on the socket @" TM_IPC_SOCKET_FORMAT " (%s)", (int)getpid(),
                strerror(errno));
        if (fd >= 0)
            tm_libc_close(fd);
        return false;
    }
    /* the thread takes no signal: the program's handlers run on its own threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    listener = fd;
    int rc = pthread_create(&thread, NULL, serve_loop, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        tm_libc_close(fd);
        listener = -1;
        tm_warn("ipc: cannot start the thread that serves handles");
        return false;
    }
    pthread_detach(thread);
    return true;
}

/* ---------------------------------------------------------------- handles */

static bool still_exported(const export_entry *entry)
{
    alloc_facts facts = { 0 };
    return tm_alloc_find(entry->base, read_facts, &facts) && facts.id == entry->alloc_id;
}

/* Export lock held: the entry of an allocation, added when new (entries of allocations
 * freed since are dropped first). NULL without memory. */
static export_entry *entry_for(CUdeviceptr base, uint64_t alloc_id)
{
    for (size_t i = 0; i < export_count; i++)
        if (exports[i].alloc_id == alloc_id)
            return &exports[i];
    size_t kept = 0;
    for (size_t i = 0; i < export_count; i++)
        if (still_exported(&exports[i]))
            exports[kept++] = exports[i];
    export_count = kept;
    if (export_count == export_capacity) {
        size_t capacity = export_capacity ? 2 * export_capacity : 16;
        export_entry *grown = realloc(exports, capacity * sizeof *grown);
        if (!grown)
            return NULL;
        exports = grown;
        export_capacity = capacity;
    }
    export_entry *entry = &exports[export_count];
    *entry = (export_entry){ .alloc_id = alloc_id, .base = base };
    if (getrandom(entry->nonce, sizeof entry->nonce, 0) != (ssize_t)sizeof entry->nonce)
        return NULL;
    export_count++;
    return entry;
}

/* An export that failed: the allocation may move and be dropped again, unless freed since
 * (then nothing is left to unpin). */
static void unpin(CUdeviceptr base, uint64_t id)
{
    tm_remap_lock();
    alloc_facts facts = { 0 };
    if (tm_alloc_find(base, read_facts, &facts) && facts.id == id)
        __atomic_store_n(&facts.alloc->ipc_pinned, false, __ATOMIC_RELAXED);
    tm_remap_unlock();
}

CUresult tm_ipc_export(CUdeviceptr address, CUipcMemHandle *handle)
{
    if (!chunks_exportable()) {
        tm_log_once(TM_LOG_WARN, "ipc: the device cannot export memory as file descriptors, so tiered memory cannot "
                    "be shared; TIERMEM_IPC=passthrough keeps what fits in HBM shareable");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    /* pin it: from now on its chunks stay where they are (the lock waits out a move) */
    tm_remap_lock();
    alloc_facts facts = { 0 };
    bool found = tm_alloc_find(address, read_facts, &facts) && facts.exportable;
    CUdeviceptr base = found ? facts.alloc->range.base : 0;
    uint64_t id = facts.id, size = found ? facts.alloc->range.size : 0;
    bool was_pinned = found && __atomic_exchange_n(&facts.alloc->ipc_pinned, true, __ATOMIC_RELAXED);
    tm_remap_unlock();
    if (!found) {
        tm_warn("ipc: cuIpcGetMemHandle at 0x%llx: the allocation is pinned host memory, which tiermem cannot share",
                (unsigned long long)address);
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* chunks the file tier dropped are read back: an importer maps every chunk, and the
     * tier drops none of a pinned allocation from now on */
    uint64_t epoch;
    CUresult filled = tm_file_tier_active() ? tm_file_tier_prepare_range(base, size, &epoch) : CUDA_SUCCESS;
    if (filled != CUDA_SUCCESS) {
        if (!was_pinned)
            unpin(base, id);
        tm_warn("ipc: cuIpcGetMemHandle at 0x%llx: chunks the file tier dropped could not be read back (error %d); "
                "the memory is not exported", (unsigned long long)address, (int)filled);
        return filled;
    }
    pthread_mutex_lock(&export_lock);
    export_entry *entry = start_server() ? entry_for(base, id) : NULL;
    tm_ipc_handle wire = { .magic = TM_IPC_MAGIC, .version = TM_IPC_VERSION, .pid = (int32_t)getpid(),
                           .alloc_id = id, .size = size };
    if (entry)
        memcpy(wire.nonce, entry->nonce, sizeof wire.nonce);
    pthread_mutex_unlock(&export_lock);
    if (!entry)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, &wire, sizeof wire);
    tm_debug("ipc: exported 0x%llx (%llu bytes), its chunks no longer migrate", (unsigned long long)base,
             (unsigned long long)size);
    return CUDA_SUCCESS;
}
