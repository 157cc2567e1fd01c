/* provenance.h — naming device memory after the model-file tensor it holds.
 *
 * A host-to-device copy whose source lies in host memory filled from a model file
 * (model_files.h: a read's destination, a mapping of the file, a pinned staging buffer
 * read into) labels each destination chunk with the tensor at the matching file offset.
 * The allocation's stats record then carries the tensor's name, and a `name=GLOB` rule
 * that matches places the chunk: at once when the copy overwrites the whole chunk (its
 * old bytes are dead), through migration otherwise (tm_alloc_move_chunks). */
#ifndef TM_PRELOAD_PROVENANCE_H
#define TM_PRELOAD_PROVENANCE_H

#include <stdbool.h>
#include <stddef.h>

#include "preload/driver/cuda_api.h"
#include "preload/mem/alloc.h"
#include "preload/model/model_files.h"

/* Labels go with their allocation. */
extern const tm_alloc_watcher tm_provenance_alloc_watcher;

/* Before a copy of `bytes` from host `src` to device `dst` is handed to the driver.
 * `synchronous`: the copy is ordered after all prior work (legacy default stream, not
 * captured); else it goes on `stream` (`ptsz`: the per-thread default stream form). Chunks
 * a copy overwrites whole may be replaced now, after the context synchronised, unless its
 * stream is capturing (checked only then). */
void tm_provenance_copy_slow(CUdeviceptr dst, const void *src, size_t bytes, bool synchronous, CUstream stream,
                             bool ptsz);

/* The copy hooks' entry: one load and a branch while no host memory came from a file. */
static inline void tm_provenance_copy(CUdeviceptr dst, const void *src, size_t bytes, bool synchronous)
{
    if (tm_host_ranges_any())
        tm_provenance_copy_slow(dst, src, bytes, synchronous, NULL, false);
}

/* The same for an asynchronous copy on `stream`. */
static inline void tm_provenance_copy_async(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream,
                                            bool ptsz)
{
    if (tm_host_ranges_any())
        tm_provenance_copy_slow(dst, src, bytes, false, stream, ptsz);
}

#endif /* TM_PRELOAD_PROVENANCE_H */
