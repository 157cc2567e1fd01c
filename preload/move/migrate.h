/* migrate.h — moving chunks of a chunked allocation to another tier at the same device
 * address (DESIGN decision 5).
 *
 * For a batch of contiguous chunks: take a chunk of the target tier per chunk from the
 * pool (chunk_pool.h), map them at a staging range, copy on the interposer's own stream
 * after the work submitted so far has drained, then close the submission gate
 * (submit_gate.h), drain again (the fence), copy again if anything was submitted while
 * the first copy ran (a chunk written meanwhile, e.g. KV cache), unmap the old chunks and
 * map the new ones at the program's address with one cuMemSetAccess over the batch, open
 * the gate, and give the old chunks to the pool. After a batch had to be copied again,
 * the next 8 are copied once, only under the closed gate (the program is still writing,
 * so a copy with the gate open would be wasted). A failure before the unmap leaves
 * everything as it was; one after it maps the old chunks back.
 *
 * Work the gate does not see (memsets, device-to-device copies, graph launches) is fenced
 * by the drain but not held back during the remap: a program using those while chunks
 * migrate is not yet covered. */
#ifndef TM_PRELOAD_MIGRATE_H
#define TM_PRELOAD_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/tier.h"
#include "preload/driver/cuda_api.h"

/* Chunks moved at most in one batch (one remap, one fence). */
#define TM_MIGRATE_BATCH 16

/* Moves the chunks of the chunked allocation that [address, address + bytes) overlaps to
 * `to`. CUDA_SUCCESS (also when they were there already), CUDA_ERROR_INVALID_VALUE when
 * the range is not in one chunked allocation or the tier is absent,
 * CUDA_ERROR_NOT_SUPPORTED for pinned-host backings, CUDA_ERROR_OUT_OF_MEMORY when the
 * tier has no room (chunks moved before that stay moved). */
CUresult tm_migrate_range(CUdeviceptr address, uint64_t bytes, tm_tier_id to);

/* The rebalancer's pass number (from 1), recorded with each chunk moved; a chunk moved
 * back to the tier it left within TM_MIGRATE_PING_PONG passes of that move counts as a
 * ping-pong (a move on to a third tier does not). */
extern uint32_t tm_migrate_pass;
#define TM_MIGRATE_PING_PONG 8

/* A fork child: no stream or staging range (they were the parent's driver state), no
 * pooled chunks. */
void tm_migrate_forget_in_child(void);

/* Releases the interposer's stream, staging range and pooled chunks (at exit). */
void tm_migrate_shutdown(void);

#endif /* TM_PRELOAD_MIGRATE_H */
