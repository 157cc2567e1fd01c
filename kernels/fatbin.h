/* fatbin.h — the CUDA kernels, compiled for sm_80 and sm_90 (and compute_90 PTX), as
 * bytes linked into the program from $(O)/obj/kernels/fatbin_embed.o. Load them with
 * cuModuleLoadData(&module, tm_kernels_fatbin). tm_kernels_fatbin_size is 0 when the
 * build had no nvcc: such a program can only run on simcuda (the twin library). */
#ifndef TM_FATBIN_H
#define TM_FATBIN_H

#include <stddef.h>

extern const unsigned char tm_kernels_fatbin[];  /* [tm_kernels_fatbin_size] */
extern const size_t tm_kernels_fatbin_size;

#endif /* TM_FATBIN_H */
