/* stream_ring.h — streaming spilled weights through an HBM staging ring, so the kernels
 * that read them get HBM bandwidth and the link carries them at the copy engines' rate
 * rather than the SMs' in-place rate (DESIGN, "Performance model").
 *
 * Part of the `heat` policy (TIERMEM_STREAM=auto, the default, where it pays; `on` whenever
 * HBM can give the ring; `off` leaves every spilled weight read in place). Nothing is
 * remapped while the program runs: a remap costs what moving 2 MiB over PCIe costs
 * (kvcached's VMM benchmark), so a weight's own address keeps mapping its own chunks, and
 * a launch that reads a staged weight is handed the weight's copy in the ring instead.
 *
 * - Weights: chunked allocations every chunk of which holds model-file data (provenance.h:
 *   read-only). A weight is staged whole, as one extent of the ring (staging_ring.h),
 *   because a kernel handed a pointer into it may read all of it from there; a weight
 *   larger than the ring, or one read a row at a time (heat per byte far under the other
 *   weights': an embedding gathered), is read in place.
 * - Learning: while any chunk is below HBM, every launch's pointer parameters name the
 *   weights it reads, noted in the learned cyclic order (policy/prefetch_order.h).
 * - Sizing: once a whole cycle has been seen, the weights below HBM that a cycle reads,
 *   and the memory it reads below HBM that cannot stream (KV cache), decide the ring
 *   (policy/stream_plan.h): the largest of those weights and a chunk, and only where
 *   streaming beats reading in place. The ring's HBM chunks come from the pool (its two
 *   smallest are taken at set-up, where they are a small share of HBM: weights of a chunk
 *   or less are driver memory that cannot move later), then from resident weights moved
 *   below HBM (gathered ones first: read in place they cost the link nearly nothing); then
 *   the memory that cannot stream goes up in place of more weights. The chunks are mapped
 *   once, at a range of their own, and stay mapped until exit.
 * - Streaming: the weights predicted next are copied into the ring on the interposer's own
 *   stream, each after the last reader of what it overwrites (cuStreamWaitEvent: the host
 *   never waits). A launch that reads a staged weight waits on the GPU for its copy, and
 *   each pointer parameter that falls in it is replaced, for that launch only, by the same
 *   offset in the ring (launch_params.h; only where the driver describes every parameter).
 *   A weight the prediction missed is copied then, if the ring has room that no launch
 *   still needs; else it is read in place.
 *
 * What no parameter shows stays correct: a kernel that finds a weight through memory (a
 * table of pointers) reads its own address, in place. A kernel that keeps a parameter it
 * was handed for a later launch to follow would read the ring after the weight left it:
 * the case TIERMEM_STREAM=off is for. Launches captured into a graph are left as they are.
 * A copy or memset into a streaming weight drops its staged copy (tm_stream_ring_written);
 * a kernel that writes a weight is not seen.
 *
 * A driver error stops streaming for the run, with one warning line: nothing has to be
 * mapped back. */
#ifndef TM_PRELOAD_STREAM_RING_H
#define TM_PRELOAD_STREAM_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/config.h"
#include "preload/driver/cuda_api.h"
#include "preload/driver/launch.h"
#include "preload/mem/alloc.h"
#include "preload/tiers/device.h"

/* Weights of at most 1/TM_STREAM_MIN_SHARE of a chunk stay in HBM while they fit: the
 * fixed costs of streaming one (a copy's start, a ring extent held through its reader)
 * are about what its bytes take on the link. */
#define TM_STREAM_MIN_SHARE 8

/* Weights load as for streaming (policy/place.h) where a ring of two chunks is at most
 * 1/TM_STREAM_AUTO_SHARE of HBM. */
#define TM_STREAM_AUTO_SHARE 16

/* Set while launches are watched: from set-up until the ring declines or fails. */
extern bool tm_stream_ready;

/* Set once launches have shown a cycle of the weights they read, and how (whole, or a row
 * at a time), whether a ring then streams or not; it stays set, with what they showed. The
 * rebalancer then swaps no weight read whole for another: each crosses the link once a
 * cycle whichever stays, streamed or read in place. Where HBM is too small for a ring,
 * launches are still watched until the cycle shows, for this alone. */
extern bool tm_stream_weights_known;

/* The ring is set up and streams (the rebalancer counts streamed bytes at the copy
 * engines' cost then). */
bool tm_stream_ring_streaming(void);

/* Every launch seen read the weight at `base` a row at a time (an embedding gathered): it
 * is read in place, never streamed. */
bool tm_stream_ring_only_gathered(CUdeviceptr base);

/* Watches launches when the policy is `heat`, TIERMEM_STREAM is not off and the lower
 * tiers can be read in place from a VMM range; says why not in one info line otherwise. */
void tm_stream_ring_start(tm_device *device, const tm_config *config);

/* A copy or memset is about to write [dst, dst + bytes): a staged copy of a weight it
 * overlaps is dropped, and the weight is read in place from then on (a copy into the ring
 * on the ring's stream would not wait for the program's write). Cheap while nothing streams.
 * Writes by kernels are not seen. */
void tm_stream_ring_written(CUdeviceptr dst, uint64_t bytes);

/* The ring as a watcher of launches (driver/launch.h). */
extern const tm_launch_watcher tm_stream_ring_launch_watcher;

/* A chunked allocation at [base, base + bytes) is being released (remap lock held): the
 * ring lets go of its copy. */
void tm_stream_ring_forget(CUdeviceptr base, uint64_t bytes);
/* ... as a watcher of allocations. */
extern const tm_alloc_watcher tm_stream_ring_alloc_watcher;

/* At exit: the ring released, one info line of figures. */
void tm_stream_ring_stop(void);

/* A fork child has no ring. */
void tm_stream_ring_forget_in_child(void);

#endif /* TM_PRELOAD_STREAM_RING_H */
