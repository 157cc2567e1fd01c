/* stream_trial.h — whether streaming spilled weights through remapped HBM chunks can beat
 * reading them in place on this machine, measured once: one remap of a ring chunk (unmap,
 * map, set access) and one copy of a chunk over the link, timed on the budget clock
 * (driver/clock.h: simulated on simcuda).
 *
 * Streaming a chunk for one read costs two remaps (onto the ring and back) and saves what
 * the copy engines gain over SMs reading it in place: 1 / TM_REBALANCE_STREAMED_COST - 1
 * of its copy time (0.43: 35 against 50 GB/s on PCIe 5). Where a remap costs what a GPU
 * charges (tens of microseconds: kvcached's VMM benchmark), it never pays. */
#ifndef TM_PRELOAD_STREAM_TRIAL_H
#define TM_PRELOAD_STREAM_TRIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "preload/driver/cuda_api.h"

typedef struct tm_stream_trial {
    uint64_t remap_ns;      /* one unmap, map and set access of a chunk */
    uint64_t copy_ns;       /* one host-to-device copy of a chunk, waited for */
} tm_stream_trial;

/* Measures at `at`, where `handle` (a chunk of `chunk` bytes, device `device`) is mapped
 * and accessible and no work reads: remaps it there onto itself and copies a chunk of host
 * memory into it on `stream`. Waits for the device first. False on a driver error (the
 * chunk may be left unmapped: the caller gives it back). */
bool tm_stream_trial_run(CUdeviceptr at, CUmemGenericAllocationHandle handle, uint64_t chunk, int device,
                         CUstream stream, tm_stream_trial *out);

/* What streaming a chunk saves over reading it in place, in ns. */
double tm_stream_trial_saved_ns(const tm_stream_trial *trial);

/* Streaming pays: two remaps cost less than what a copy saves over reading in place. */
bool tm_stream_trial_pays(const tm_stream_trial *trial);

#endif /* TM_PRELOAD_STREAM_TRIAL_H */
