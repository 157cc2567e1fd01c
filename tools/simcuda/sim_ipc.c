/* sim_ipc.c — memory shared between processes: legacy IPC handles (cuIpcGetMemHandle,
 * cuIpcOpenMemHandle, cuIpcCloseMemHandle) and shareable handles of VMM allocations
 * (cuMemExportToShareableHandle, cuMemImportFromShareableHandle, POSIX file descriptors).
 *
 * Device memory is host memory, so sharing it means both processes map the same file.
 * VMM allocations are memfds from birth: exporting one is a dup of its descriptor. A
 * cuMemAlloc allocation is anonymous memory until it is first exported; then its bytes
 * move into a memfd mapped over the same addresses (export on demand), and the 64-byte
 * handle names the exporter's pid, the descriptor number and the file's inode. The
 * importer opens the descriptor through /proc/<pid>/fd (the kernel checks it may: same
 * user, or privileged), checks the inode, and maps it. Allocations under 1 MiB live on the
 * heap, not in mappings of their own: they cannot be shared (IS_LEGACY_CUDA_IPC_CAPABLE
 * reads 0 for them). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/simcuda/sim_internal.h"

#define SIM_IPC_MAGIC "SIMCUDA"   /* 8 bytes with its NUL */
#define SIM_IPC_VERSION 1

/* The contents of a CUipcMemHandle made by simcuda. */
typedef struct sim_ipc_wire {
    char magic[8];
    uint32_t version;
    int32_t pid;            /* the exporter */
    int32_t fd;             /* the memfd's descriptor number in the exporter */
    uint32_t reserved;
    uint64_t inode;         /* the memfd's inode: a reused descriptor number is caught */
    uint64_t size;          /* bytes the exporter allocated */
    uint64_t mapped;        /* bytes of the memfd mapped (a whole number of pages) */
} sim_ipc_wire;

_Static_assert(sizeof(sim_ipc_wire) <= CU_IPC_HANDLE_SIZE, "an IPC handle is 64 bytes");

void sim_ipc_region_gone(sim_region *region)
{
    if (region->ipc_exported)
        close(region->ipc_fd);
    region->ipc_exported = false;
}

/* ---------------------------------------------------------------- legacy IPC */

/* Lock held: moves an anonymous allocation's bytes into a memfd mapped at the same place. */
static CUresult back_with_memfd(sim_region *region)
{
    int fd = memfd_create("simcuda-ipc", MFD_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *staging = MAP_FAILED;
    if (ftruncate(fd, (off_t)region->backing_size) == 0)
        staging = mmap(NULL, region->backing_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (staging == MAP_FAILED) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(staging, (void *)region->base, region->backing_size);
    munmap(staging, region->backing_size);
    if (mmap((void *)region->base, region->backing_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        close(fd); /* MAP_FIXED failing leaves the old mapping in place */
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    region->ipc_fd = fd;
    region->ipc_exported = true;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    SIM_FAIL_POINT(cuIpcGetMemHandle);
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    sim_region *region = result == CUDA_SUCCESS ? sim_region_find(TREE_REGIONS, (uintptr_t)dptr) : NULL;
    if (result != CUDA_SUCCESS) {
        /* no context */
    } else if (!region || region->kind != REGION_DEVICE || region->managed || region->pool || region->ipc_opens) {
        result = CUDA_ERROR_INVALID_VALUE; /* not cuMemAlloc memory of this process */
    } else if (!region->from_mmap) {
        sim_unlock();
        return sim_not_supported("cuIpcGetMemHandle on an allocation under 1 MiB");
    } else if (!region->ipc_exported) {
        sim_async_wait_all(); /* nothing may write the bytes while they move */
        result = back_with_memfd(region);
    }
    if (result == CUDA_SUCCESS) {
        struct stat st;
        fstat(region->ipc_fd, &st);
        sim_ipc_wire wire = {
            .magic = SIM_IPC_MAGIC, .version = SIM_IPC_VERSION, .pid = (int32_t)getpid(), .fd = region->ipc_fd,
            .inode = (uint64_t)st.st_ino, .size = region->size, .mapped = region->backing_size,
        };
        memset(pHandle, 0, sizeof *pHandle);
        memcpy(pHandle->reserved, &wire, sizeof wire);
    }
    sim_unlock();
    return result;
}

struct opened_search {
    uint64_t inode;
    sim_region *found;
};

static void match_opened(sim_region *region, void *arg)
{
    struct opened_search *search = arg;
    if (region->ipc_opens > 0 && region->ipc_inode == search->inode)
        search->found = region;
}

/* Lock held: the region this process opened from the same export, if any. */
static sim_region *opened_before(uint64_t inode)
{
    struct opened_search search = { inode, NULL };
    sim_region_each(TREE_REGIONS, match_opened, &search);
    return search.found;
}

/* Says once why a handle is refused (a handle from another driver, or a tiermem one, is
 * the usual cause) and returns CUDA_ERROR_INVALID_VALUE. */
static CUresult refuse_handle(const char *magic, const char *why)
{
    char shown[9];
    for (int i = 0; i < 8; i++)
        shown[i] = magic[i] >= 0x20 && magic[i] < 0x7f ? magic[i] : '.';
    shown[8] = '\0';
    sim_log("cuIpcOpenMemHandle: %s (the handle starts \"%s\")", why, shown);
    return CUDA_ERROR_INVALID_VALUE;
}

/* Lock held: maps the exporter's memfd into this process as a new device region. */
static CUresult map_export(const sim_ipc_wire *wire, sim_context *ctx, CUdeviceptr *pdptr)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%" PRId32 "/fd/%" PRId32, wire->pid, wire->fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return refuse_handle(wire->magic, errno == ENOENT ? "the exporting process has exited or freed the memory"
                                                          : "the exporting process's memory cannot be opened");
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != wire->inode || (uint64_t)st.st_size < wire->mapped) {
        close(fd);
        return refuse_handle(wire->magic, "the exporting process has freed the memory");
    }
    sim_region *region = calloc(1, sizeof *region);
    void *p = region ? mmap(NULL, wire->mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd); /* the mapping keeps the file */
    if (p == MAP_FAILED) {
        free(region);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    region->base = (uintptr_t)p;
    region->size = wire->size;
    region->backing_size = wire->mapped;
    region->kind = REGION_DEVICE;
    region->ctx = ctx;
    region->from_mmap = true;
    region->ipc_opens = 1;
    region->ipc_inode = wire->inode;
    region->id = ++sim.next_id;
    sim_region_insert(TREE_REGIONS, region);
    *pdptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    if (!pdptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_ipc_wire wire;
    memcpy(&wire, handle.reserved, sizeof wire);
    sim_lock();
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    if (result != CUDA_SUCCESS) {
        /* no context */
    } else if (memcmp(wire.magic, SIM_IPC_MAGIC, sizeof wire.magic) != 0 || wire.version != SIM_IPC_VERSION ||
               wire.size == 0 || wire.mapped < wire.size) {
        result = refuse_handle(wire.magic, "not a handle cuIpcGetMemHandle of simcuda made");
    } else if (wire.pid == (int32_t)getpid()) {
        result = CUDA_ERROR_INVALID_CONTEXT; /* as the driver: not within the exporting process */
    } else {
        sim_region *region = opened_before(wire.inode);
        if (region) {
            region->ipc_opens++;
            *pdptr = (CUdeviceptr)region->base;
        } else {
            result = map_export(&wire, ctx, pdptr);
        }
    }
    sim_unlock();
    return result;
}

/* cuda.h maps the plain name to _v2; both ABIs are exported. */
#undef cuIpcOpenMemHandle
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);

SIM_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    SIM_FAIL_POINT(cuIpcOpenMemHandle);
    return ipc_open(pdptr, handle, Flags);
}

SIM_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    SIM_FAIL_POINT(cuIpcOpenMemHandle_v2);
    return ipc_open(pdptr, handle, Flags);
}

SIM_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    SIM_FAIL_POINT(cuIpcCloseMemHandle);
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    sim_region *region = result == CUDA_SUCCESS ? sim_region_find(TREE_REGIONS, (uintptr_t)dptr) : NULL;
    if (result != CUDA_SUCCESS) {
        /* no context */
    } else if (!region || region->base != (uintptr_t)dptr || region->ipc_opens == 0) {
        result = CUDA_ERROR_INVALID_VALUE; /* not a pointer cuIpcOpenMemHandle returned */
    } else if (--region->ipc_opens == 0) {
        sim_async_wait_all(); /* queued work may still use it */
        sim_region_delete(TREE_REGIONS, region);
        munmap((void *)region->base, region->backing_size);
        free(region);
    }
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- shareable handles (VMM) */

SIM_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                 CUmemAllocationHandleType handleType, unsigned long long flags)
{
    SIM_FAIL_POINT(cuMemExportToShareableHandle);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!shareableHandle || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return sim_not_supported("cuMemExportToShareableHandle with handle types other than POSIX file descriptors");
    sim_lock();
    sim_phys *phys = sim_object_find((const void *)(uintptr_t)handle, SIM_PHYS);
    if (!phys || phys->handle_refs == 0 ||
        !(phys->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        result = CUDA_ERROR_INVALID_VALUE; /* unknown, or not created exportable */
    } else {
        int fd = fcntl(phys->fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            result = CUDA_ERROR_OUT_OF_MEMORY;
        else
            *(int *)shareableHandle = fd;
    }
    sim_unlock();
    return result;
}

/* Reads the location cuMemCreate wrote into the memfd's name; false for another file. */
static bool location_of(int fd, CUmemLocation *location)
{
    char link[64], target[128];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return false;
    target[n] = '\0';
    int type, id;
    if (sscanf(target, "/memfd:" SIM_PHYS_NAME_FORMAT, &type, &id) != 2)
        return false;
    location->type = (CUmemLocationType)type;
    location->id = id;
    return true;
}

SIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                   CUmemAllocationHandleType shHandleType)
{
    SIM_FAIL_POINT(cuMemImportFromShareableHandle);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return sim_not_supported("cuMemImportFromShareableHandle with handle types other than POSIX file descriptors");
    int fd = (int)(intptr_t)osHandle; /* a POSIX descriptor travels in the pointer itself */
    struct stat st;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    if (fd < 0 || fstat(fd, &st) != 0 || !location_of(fd, &prop.location) || st.st_size <= 0 ||
        (size_t)st.st_size % SIM_GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE; /* not a descriptor cuMemExportToShareableHandle gave */
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    sim_phys *phys = calloc(1, sizeof *phys);
    if (!phys)
        return CUDA_ERROR_OUT_OF_MEMORY;
    phys->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the caller keeps and closes its own */
    if (phys->fd < 0) {
        free(phys);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    phys->prop = prop;
    phys->size = (size_t)st.st_size;
    phys->handle_refs = 1;
    phys->imported = true;
    sim_lock();
    sim_object_add(&phys->obj, SIM_PHYS);
    sim_unlock();
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)phys;
    return CUDA_SUCCESS;
}
