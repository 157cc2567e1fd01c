/* stream_ring.h — streaming spilled read-only chunks through an HBM staging ring, so the
 * kernels that read them get HBM bandwidth and the link carries them at the copy engines'
 * rate rather than the SMs' in-place rate (DESIGN, "Performance model").
 *
 * Part of the `heat` policy (TIERMEM_STREAM=auto, the default, when the ring is a small
 * share of HBM; `on` whenever HBM has room for it; `off` leaves every spilled chunk read
 * in place). At set-up it takes the ring's HBM chunks from the pool, each
 * mapped at a staging address of its own. While any chunk is spilled, every launch has
 * its pointer parameters read: the spilled chunks of model-file tensors (provenance.h:
 * read-only weights; written memory such as KV cache has no such label and is never
 * streamed) it references, the one a pointer falls in and the chunks after it that hold
 * the same tensor (a kernel handed a matrix reads it whole; as many as the ring holds),
 * are noted in the learned cyclic order (policy/prefetch_order.h).
 * For the next chunks predicted, a free slot is filled on the interposer's own stream
 * (cuMemcpyDtoDAsync after a wait on the event of the slot's last reader). When a launch
 * references a chunk whose copy is under way, the host waits for the copy, and the chunk's
 * address is remapped onto the slot (unmap, map, set access) with the submission gate
 * closed, after every launch that read the chunk in place has completed; the launch then
 * reads HBM. An event recorded after it tells when the slot's chunk may go back: the
 * address is mapped to its lower-tier chunk again (no copy: it was never written) and the
 * slot is free. A chunk the ring did not have in time is copied then, into a slot no
 * chunk of this launch holds, once that slot's last reader is done (the host waits: the
 * copy engines still move it faster than the kernel would read it in place); with no
 * such slot it is read in place, as without the ring.
 *
 * Remaps, the rebalancer's migrations and releases of chunked memory exclude one another
 * with the remap lock; a launch that references streamed chunks holds it from before
 * its remaps until its events are recorded. A driver error stops streaming for the run,
 * with every chunk mapped back to its own backing, and one warning line. */
#ifndef TM_PRELOAD_STREAM_RING_H
#define TM_PRELOAD_STREAM_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/config.h"
#include "preload/driver/cuda_api.h"
#include "preload/driver/launch.h"
#include "preload/mem/alloc.h"
#include "preload/tiers/device.h"

/* HBM chunks of the ring: at least one read while the next is filled; TIERMEM_STREAM_RING,
 * else 1/TM_STREAM_RING_SHARE of HBM, so that a real model's matrices (a 70B model's FFN
 * matrices are 224 chunks in f16) stream whole. The slots are taken when the device is set
 * up, spilled or not. */
#define TM_STREAM_SLOTS_MIN 2
#define TM_STREAM_SLOTS_MAX 256
#define TM_STREAM_RING_SHARE 256
/* TIERMEM_STREAM=auto takes the ring only when it is at most 1/TM_STREAM_AUTO_SHARE of HBM:
 * on a small device the HBM it takes from resident weights costs more link time than
 * streaming saves. */
#define TM_STREAM_AUTO_SHARE 16

/* Weights of at most 1/TM_STREAM_MIN_SHARE of a chunk stay in HBM while they fit: the
 * fixed costs of streaming one (a copy's start, three remap calls, a ring slot held
 * through its reader) are about what its bytes take on the link. */
#define TM_STREAM_MIN_SHARE 8

/* Set while the ring is ready: launches are then watched. */
extern bool tm_stream_ready;

/* The ring's chunks for TIERMEM_STREAM_RING=`asked` bytes (0: unset) on a device of `hbm`
 * bytes: whole chunks, TM_STREAM_SLOTS_MIN to TM_STREAM_SLOTS_MAX of them. */
int tm_stream_ring_slots(uint64_t asked, uint64_t hbm, uint64_t chunk);

/* Takes the ring's chunks when the policy is `heat`, TIERMEM_STREAM is not off and the
 * lower tiers can be remapped (VMM); says why not in one info line otherwise. */
void tm_stream_ring_start(tm_device *device, const tm_config *config);

/* The ring as a watcher of launches (driver/launch.h): while it is ready, a launch that
 * references spilled chunks has them mapped onto slots before it goes, and the slots'
 * readers recorded after it. */
extern const tm_launch_watcher tm_stream_ring_launch_watcher;

/* A chunked allocation at [base, base + bytes) is being released (remap lock held): the
 * ring lets go of its chunks. */
void tm_stream_ring_forget(CUdeviceptr base, uint64_t bytes);
/* ... as a watcher of allocations. */
extern const tm_alloc_watcher tm_stream_ring_alloc_watcher;

/* At exit: every chunk mapped back, the ring released, one info line of figures. */
void tm_stream_ring_stop(void);

/* A fork child has no ring. */
void tm_stream_ring_forget_in_child(void);

#endif /* TM_PRELOAD_STREAM_RING_H */
