/* device.h — the devices whose memory is tiered: what each offers, its tiers and the policy.
 *
 * Each device is set up at the first allocation made with a current context of it (the
 * driver is in use by then): its memory and VMM granularity, HOST_NUMA support, tier
 * discovery (its own HBM limit and host node) and a start-up line; the first one also
 * joins the shared ledger and opens the stats region, and then the rooms above start what
 * works on the first device's chunks (tm_device_watcher, a callback: nothing here calls up). Every device the process uses is tiered: a stray context on
 * device 0 does not keep device 1 from it. HBM is counted per device; the lower tiers are
 * host memory, shared by the devices of the process. */
#ifndef TM_PRELOAD_DEVICE_H
#define TM_PRELOAD_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/place.h"
#include "policy/tier.h"
#include "preload/driver/cuda_api.h"

#define TM_MAX_DEVICES 64

/* Where a device's chunks go, and who may reach them. */
typedef struct tm_backing_target {
    CUdevice device;
    int node[TM_TIER_COUNT];   /* NUMA node of each host tier */
    bool pinned_host;          /* lower tiers as pinned host memory */
    uint64_t peers;            /* bit d: device d has peer access to this device's memory
                                * (atomic: it grows while the program runs) */
    CUmemAllocationHandleType handle_types; /* chunks are created exportable as these (ipc/ipc.h) */
} tm_backing_target;


typedef struct tm_device {
    CUdevice ordinal;
    uint64_t memory;            /* what the device has */
    tm_policy policy;
    tm_backing_target target;   /* device and nodes the chunks go to */
    pthread_mutex_t place_lock; /* placement decisions: plan and charge as one step */
    tm_tiers tiers;             /* presence, nodes and limits; usage lives in the stats counters */
    CUcontext primary_ctx;      /* the primary context, once the program retained it */
    uint64_t hbm_used;          /* bytes of this device's HBM placed now (atomic) */
    uint64_t hbm_chunks;        /* chunks of them (atomic) */
    int stats_slot;             /* its entry in the stats region's devices, or -1 */
    bool streams;               /* its spilled weights stream through the ring (set by
                                 * move/stream_ring.c; atomic) */
    tm_route_state route;       /* what routing carries between requests (policy/place.h) */
} tm_device;

/* What the rooms above do as devices are set up: preload/lifecycle.c defines it. */
typedef struct tm_device_events {
    void (*set_up)(tm_device *device);      /* each device, before its first allocation */
    void (*first_ready)(tm_device *device); /* the first device set up, once */
} tm_device_events;
extern const tm_device_events tm_device_watcher;

/* The tiered device when the calling thread's current context belongs to it (setting it
 * up on first use), with that context in *ctx; NULL when the call should pass through. */
tm_device *tm_device_current(CUcontext *ctx);

/* The first device set up (the one the stats header describes), else NULL; no driver
 * calls. */
tm_device *tm_device_ready(void);

/* Placement decisions and their charges, as one step: the device's lock, and the shared
 * ledger's, so that processes sharing a lower tier never count on the same room. */
void tm_device_place_lock(tm_device *device);
void tm_device_place_unlock(tm_device *device);

/* Device `ordinal` if it has been set up, else NULL; no driver calls. */
tm_device *tm_device_of(CUdevice ordinal);

/* Charges (negative: returns) bytes and chunks to a tier: the process's counters in the
 * stats region, and HBM's also to the device (NULL: none known). */
void tm_device_charge(tm_device *device, tm_tier_id tier, int64_t bytes, int64_t chunks);

/* After the program enabled peer access from the current context to `peer`'s: the peer's
 * device, when tiered, lets the current device (*accessor) map its chunks from now on; it
 * is returned, so that its chunked allocations can be made accessible too (else NULL). */
tm_device *tm_device_peer_enabled(CUcontext peer, CUdevice *accessor);

/* The tiers with usage filled in from the counters (HBM: this device's chunks and small
 * allocations; a lower tier the ledger shares: what every process sharing it holds there). */
void tm_device_tiers_now(const tm_device *device, tm_tiers *tiers);

/* Fork handling. */
void tm_device_lock(void);
void tm_device_unlock(void);
void tm_device_forget_in_child(void);

#endif /* TM_PRELOAD_DEVICE_H */
