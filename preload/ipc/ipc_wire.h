/* ipc_wire.h — what tiermem's IPC puts in a CUipcMemHandle and sends on its socket
 * (ipc.h). Both sides are the same build of libtiermem.so on one machine: native byte
 * order, fixed-size fields, a version to refuse anything else. */
#ifndef TM_PRELOAD_IPC_WIRE_H
#define TM_PRELOAD_IPC_WIRE_H

#include <stdint.h>

#include "preload/driver/cuda_api.h"

#define TM_IPC_MAGIC "TIERMEM"       /* 8 bytes with the NUL; also what a driver shows */
#define TM_IPC_VERSION 1
#define TM_IPC_SOCKET_FORMAT "tiermem-ipc.%d"  /* abstract namespace, the exporter's pid */
#define TM_IPC_FDS_PER_MESSAGE 64    /* descriptors per SCM_RIGHTS message */

/* The handle: names an exported allocation of one live process. */
typedef struct tm_ipc_handle {
    char magic[8];
    uint32_t version;
    int32_t pid;            /* the exporter */
    uint64_t alloc_id;      /* its allocation id (the buffer id pointer attributes give) */
    uint64_t size;          /* bytes the exporter allocated */
    uint64_t nonce[2];      /* random, per export: a guessed id is not enough */
} tm_ipc_handle;

_Static_assert(sizeof(tm_ipc_handle) <= CU_IPC_HANDLE_SIZE, "an IPC handle is 64 bytes");

/* importer -> exporter */
typedef struct tm_ipc_request {
    char magic[8];
    uint32_t version;
    uint32_t reserved;
    uint64_t alloc_id;
    uint64_t nonce[2];
} tm_ipc_request;

typedef enum tm_ipc_status {
    TM_IPC_OK = 0,
    TM_IPC_UNKNOWN,         /* no such export: forged, or from an earlier run of the pid */
    TM_IPC_FREED,           /* the allocation was freed */
    TM_IPC_FAILED,          /* the driver would not export a chunk */
} tm_ipc_status;

/* exporter -> importer; then `chunks` descriptors, TM_IPC_FDS_PER_MESSAGE per message
 * (each message's payload: a uint32_t count) */
typedef struct tm_ipc_reply {
    uint32_t status;        /* tm_ipc_status */
    uint32_t reserved;
    uint64_t size;
    uint64_t chunk_size;
    uint64_t chunks;
} tm_ipc_reply;

#endif /* TM_PRELOAD_IPC_WIRE_H */
