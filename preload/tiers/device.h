/* device.h — the devices whose memory is tiered: what each offers, its tiers and the policy.
 *
 * Each device is set up at the first allocation made with a current context of it (the
 * driver is in use by then): its memory and VMM granularity, HOST_NUMA support, tier
 * discovery (its own HBM limit and host node) and a start-up line; the first one also
 * opens the stats region. Every device the process uses is tiered: a stray context on
 * device 0 does not keep device 1 from it. HBM is counted per device; the lower tiers are
 * host memory, shared by the devices of the process. */
#ifndef TM_PRELOAD_DEVICE_H
#define TM_PRELOAD_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/place.h"
#include "policy/tier.h"
#include "preload/mem/backing.h"
#include "preload/driver/cuda_api.h"

#define TM_MAX_DEVICES 64

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
} tm_device;

/* The tiered device when the calling thread's current context belongs to it (setting it
 * up on first use), with that context in *ctx; NULL when the call should pass through. */
tm_device *tm_device_current(CUcontext *ctx);

/* The first device set up (the one the stats header describes), else NULL; no driver
 * calls. */
tm_device *tm_device_ready(void);

/* cuMemGetInfo's free and total of the device in the configured view, from the driver's
 * answer (pooled chunks count as free: any allocation may have them). */
void tm_device_memory_view(const tm_device *device, uint64_t driver_free, uint64_t driver_total, uint64_t *free,
                           uint64_t *total);

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
 * device, when tiered, lets the current device map its chunks from now on, and its
 * chunked allocations are made accessible to it. */
void tm_device_peer_enabled(CUcontext peer);

/* The tiers with usage filled in from the counters (HBM: this device's chunks and small
 * allocations; a lower tier the ledger shares: what every process sharing it holds there). */
void tm_device_tiers_now(const tm_device *device, tm_tiers *tiers);

/* Fork handling. */
void tm_device_lock(void);
void tm_device_unlock(void);
void tm_device_forget_in_child(void);

#endif /* TM_PRELOAD_DEVICE_H */
