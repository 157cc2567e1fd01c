/* ipc_import.c — the importing side of tiermem's IPC (see ipc.h): a tiermem handle becomes
 * the exporter's chunks mapped in a range of this process. */
#include "preload/ipc/ipc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/driver/driver.h"
#include "preload/ipc/ipc_socket.h"
#include "preload/ipc/ipc_wire.h"
#include "preload/base/log.h"
#include "preload/base/libc_real.h"

/* One opened handle: every open of the same handle shares it, the last close unmaps. */
typedef struct import_entry {
    struct import_entry *next;
    tm_ipc_handle key;          /* the handle it came from */
    CUdeviceptr base;           /* [bytes] the chunks, mapped in order */
    uint64_t bytes;
    int opens;
} import_entry;

static pthread_mutex_t import_lock = PTHREAD_MUTEX_INITIALIZER;
static import_entry *imports;

bool tm_ipc_is_ours(const CUipcMemHandle *handle)
{
    return memcmp(handle->reserved, TM_IPC_MAGIC, sizeof TM_IPC_MAGIC) == 0;
}

/* ---------------------------------------------------------------- asking the exporter */

/* Connects to the exporter's socket and checks it is the exporter: its pid, and this
 * user or root. -1 (said why) when not. */
static int connect_exporter(pid_t pid)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un address;
    socklen_t len;
    tm_ipc_socket_address(pid, &address, &len);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, len) != 0) {
        tm_warn("ipc: cuIpcOpenMemHandle: process %d, which made the handle, has exited or does not run "
                "libtiermem.so (%s)", (int)pid, strerror(errno));
        if (fd >= 0)
            tm_libc_close(fd);
        return -1;
    }
    pid_t server;
    if (!tm_ipc_peer_trusted(fd, &server) || server != pid) {
        tm_warn("ipc: cuIpcOpenMemHandle: the socket of process %d is held by process %d or another user; refused",
                (int)pid, (int)server);
        tm_libc_close(fd);
        return -1;
    }
    tm_ipc_socket_timeouts(fd, 10);
    return fd;
}

/* The exporter's answer; false (said why) unless it is sending the chunks. */
static bool receive_reply(int conn, const tm_ipc_handle *key, tm_ipc_reply *reply)
{
    if (!tm_ipc_recv(conn, reply, sizeof *reply)) {
        tm_warn("ipc: cuIpcOpenMemHandle: process %d did not answer", (int)key->pid);
        return false;
    }
    if (reply->status != TM_IPC_OK) {
        tm_warn("ipc: cuIpcOpenMemHandle: process %d %s", (int)key->pid,
                reply->status == TM_IPC_FREED    ? "has freed the memory of this handle"
                : reply->status == TM_IPC_FAILED ? "could not export the memory of this handle"
                                                 : "made no such handle (forged, or from an earlier process)");
        return false;
    }
    if (reply->size != key->size) {
        /* the handle's size is the importer's word for the range it opens: it must be the
         * exporter's own (cuMemGetAddressRange reports it) */
        tm_warn("ipc: cuIpcOpenMemHandle: the handle says %llu bytes, but process %d exported %llu: refused",
                (unsigned long long)key->size, (int)key->pid, (unsigned long long)reply->size);
        return false;
    }
    return reply->chunks > 0 && reply->chunk_size > 0 && reply->chunks <= UINT64_MAX / reply->chunk_size &&
           reply->size <= reply->chunks * reply->chunk_size;
}

/* Maps one chunk from its descriptor at `at` (closing the descriptor). */
static CUresult map_chunk(int fd, CUdeviceptr at, uint64_t chunk_size)
{
    CUmemGenericAllocationHandle handle;
    CUresult r = tm_real.cuMemImportFromShareableHandle(&handle, (void *)(intptr_t)fd,
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    tm_libc_close(fd);
    if (r != CUDA_SUCCESS)
        return r;
    r = tm_real.cuMemMap(at, chunk_size, 0, handle, 0);
    tm_release_call(tm_real.cuMemRelease(handle)); /* the mapping holds it */
    return r;
}

/* Receives the chunks batch by batch and maps them in order in a fresh range with
 * read-write access for the current device. */
static CUresult map_chunks(int conn, const tm_ipc_handle *key, const tm_ipc_reply *reply, CUdeviceptr *base)
{
    CUdevice device;
    uint64_t bytes = reply->chunks * reply->chunk_size, mapped = 0;
    CUresult r = tm_real.cuCtxGetDevice(&device);
    if (r == CUDA_SUCCESS)
        r = tm_real.cuMemAddressReserve(base, bytes, reply->chunk_size, 0, 0);
    while (r == CUDA_SUCCESS && mapped < reply->chunks) {
        int fds[TM_IPC_FDS_PER_MESSAGE];
        unsigned n = 0, used = 0;
        if (!tm_ipc_recv_fds(conn, fds, &n) || n == 0 || n > reply->chunks - mapped) {
            tm_warn("ipc: cuIpcOpenMemHandle: process %d sent %llu of %llu chunks", (int)key->pid,
                    (unsigned long long)mapped, (unsigned long long)reply->chunks);
            r = CUDA_ERROR_INVALID_VALUE;
        }
        for (; r == CUDA_SUCCESS && used < n; used++, mapped++)
            r = map_chunk(fds[used], *base + mapped * reply->chunk_size, reply->chunk_size);
        for (; used < n; used++)
            tm_libc_close(fds[used]);
    }
    if (r == CUDA_SUCCESS) {
        CUmemAccessDesc access = {
            .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device },
            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        r = tm_real.cuMemSetAccess(*base, bytes, &access, 1);
    }
    if (r != CUDA_SUCCESS && *base) {
        for (uint64_t i = 0; i < mapped; i++) /* a chunk whose map failed is not mapped */
            tm_real.cuMemUnmap(*base + i * reply->chunk_size, reply->chunk_size);
        tm_release_call(tm_real.cuMemAddressFree(*base, bytes));
        *base = 0;
    }
    return r;
}

CUresult tm_ipc_open(const CUipcMemHandle *handle, CUdeviceptr *pdptr)
{
    tm_ipc_handle key;
    memcpy(&key, handle->reserved, sizeof key);
    if (key.version != TM_IPC_VERSION) {
        tm_warn("ipc: cuIpcOpenMemHandle: a handle of tiermem IPC version %u; this libtiermem.so speaks %d",
                key.version, TM_IPC_VERSION);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (key.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT; /* as the driver: never in the exporting process */
    CUcontext ctx = NULL;
    if (tm_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        return CUDA_ERROR_INVALID_CONTEXT;

    /* one lock over the whole open: two threads opening one handle map it once */
    pthread_mutex_lock(&import_lock);
    for (import_entry *e = imports; e; e = e->next) {
        if (memcmp(&e->key, &key, sizeof key) == 0) {
            e->opens++;
            *pdptr = e->base;
            pthread_mutex_unlock(&import_lock);
            return CUDA_SUCCESS;
        }
    }
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    import_entry *entry = calloc(1, sizeof *entry);
    int conn = entry ? connect_exporter(key.pid) : -1;
    if (conn >= 0) {
        tm_ipc_request request = { .magic = TM_IPC_MAGIC, .version = TM_IPC_VERSION, .alloc_id = key.alloc_id };
        memcpy(request.nonce, key.nonce, sizeof request.nonce);
        tm_ipc_reply reply;
        if (tm_ipc_send(conn, &request, sizeof request) && receive_reply(conn, &key, &reply)) {
            r = map_chunks(conn, &key, &reply, &entry->base);
            if (r != CUDA_SUCCESS)
                tm_warn("ipc: cuIpcOpenMemHandle: the chunks of process %d cannot be mapped here (error %d)",
                        (int)key.pid, (int)r);
            entry->bytes = reply.chunks * reply.chunk_size;
        }
        tm_libc_close(conn);
    }
    if (r == CUDA_SUCCESS) {
        entry->key = key;
        entry->opens = 1;
        entry->next = imports;
        imports = entry;
        *pdptr = entry->base;
    } else {
        free(entry);
    }
    pthread_mutex_unlock(&import_lock);
    return r;
}

bool tm_ipc_import_range(CUdeviceptr address, CUdeviceptr *base, uint64_t *size)
{
    bool found = false;
    pthread_mutex_lock(&import_lock);
    for (import_entry *e = imports; e && !found; e = e->next) {
        found = address >= e->base && address < e->base + e->key.size;
        if (found) {
            *base = e->base;
            *size = e->key.size;
        }
    }
    pthread_mutex_unlock(&import_lock);
    return found;
}

bool tm_ipc_close(CUdeviceptr dptr, CUresult *result)
{
    pthread_mutex_lock(&import_lock);
    import_entry **link = &imports;
    while (*link && (*link)->base != dptr)
        link = &(*link)->next;
    import_entry *entry = *link;
    if (entry && --entry->opens == 0) {
        *link = entry->next;
        /* nothing of ours is in flight on it; the program's own work it must have waited for */
        *result = tm_real.cuMemUnmap(entry->base, entry->bytes);
        tm_release_call(tm_real.cuMemAddressFree(entry->base, entry->bytes));
        free(entry);
    } else if (entry) {
        *result = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&import_lock);
    return entry != NULL;
}
