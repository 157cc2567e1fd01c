/* device.h — the device whose memory is tiered: what it offers, its tiers and the policy.
 *
 * Set up at the first allocation made with a current context (the driver is in use by
 * then): the device's memory and VMM granularity, HOST_NUMA support, tier discovery, the
 * stats region and the start-up line. One device is tiered per process; allocations in
 * contexts of other devices pass through. */
#ifndef TM_PRELOAD_DEVICE_H
#define TM_PRELOAD_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/place.h"
#include "policy/tier.h"
#include "preload/backing.h"
#include "preload/cuda_api.h"

typedef struct tm_device {
    CUdevice ordinal;
    uint64_t memory;            /* what the device has */
    tm_policy policy;
    tm_backing_target target;   /* device and nodes the chunks go to */
    pthread_mutex_t place_lock; /* placement decisions: plan and charge as one step */
    tm_tiers tiers;             /* presence, nodes and limits; usage lives in the stats counters */
    CUcontext primary_ctx;      /* the primary context, once the program retained it */
} tm_device;

/* The tiered device when the calling thread's current context belongs to it (setting it
 * up on first use), with that context in *ctx; NULL when the call should pass through. */
tm_device *tm_device_current(CUcontext *ctx);

/* The tiered device if it has been set up, else NULL; no driver calls. */
tm_device *tm_device_ready(void);

/* Placement decisions and their charges, as one step: the device's lock, and the shared
 * ledger's, so that processes sharing a lower tier never count on the same room. */
void tm_device_place_lock(tm_device *device);
void tm_device_place_unlock(tm_device *device);

/* The tiers with usage filled in from the counters (HBM: chunks and small allocations; a
 * lower tier the ledger shares: what every process sharing it holds there). */
void tm_device_tiers_now(const tm_device *device, tm_tiers *tiers);

/* Fork handling. */
void tm_device_lock(void);
void tm_device_unlock(void);
void tm_device_forget_in_child(void);

#endif /* TM_PRELOAD_DEVICE_H */
