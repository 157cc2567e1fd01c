/* tiermem.h — what libtiermem.so offers beyond the driver symbols it interposes: a
 * migration call for tools and tests, and a note loaders give of their own file reads.
 * Installed as <tiermem/tiermem.h>; `pkg-config --cflags --libs libtiermem` gives the
 * flags. A program normally gets libtiermem.so through LD_PRELOAD and finds these with
 * dlsym(RTLD_DEFAULT, "tiermem_migrate"), so that it runs without it too. Every function
 * exported under the TIERMEM_1 version (libtiermem.map) is declared here. */
#ifndef TIERMEM_H
#define TIERMEM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Moves the chunks that [address, address + bytes) overlaps to tier "hbm", "cxl" or "ddr",
 * keeping the address. CUDA_ERROR_INVALID_VALUE outside one chunked allocation or for an
 * absent tier, CUDA_ERROR_OUT_OF_MEMORY when the tier is full, CUDA_ERROR_NOT_SUPPORTED for
 * pinned host backings. */
__attribute__((visibility("default"))) CUresult tiermem_migrate(CUdeviceptr address, size_t bytes,
                                                                const char *tier);

/* Reports a read of a model file the C library did not see (io_uring's, say): the `bytes`
 * at `host` now hold those of the file open as `fd` from `offset` on, so host-to-device
 * copies from them name the device memory after the file's tensors (and the file tier may
 * drop and read back what they fill). Call it after the read, before the copies. Returns
 * 0, or -1 when `fd` is no model file tiermem follows, `host` is NULL or `offset` is
 * negative (nothing is recorded). errno is left as it was. */
__attribute__((visibility("default"))) int tiermem_note_file_read(int fd, const void *host, size_t bytes,
                                                                  int64_t offset);

#ifdef __cplusplus
}
#endif

#endif /* TIERMEM_H */
