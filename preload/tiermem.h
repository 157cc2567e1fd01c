/* tiermem.h — what libtiermem.so offers beyond the driver symbols it interposes: one
 * function for tools and tests. Installed as <tiermem/tiermem.h>; `pkg-config --cflags
 * --libs libtiermem` gives the flags. A program normally gets libtiermem.so through
 * LD_PRELOAD and finds this function with dlsym(RTLD_DEFAULT, "tiermem_migrate"). */
#ifndef TIERMEM_H
#define TIERMEM_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif /* TIERMEM_H */
