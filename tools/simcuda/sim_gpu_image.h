/* sim_gpu_image.h — what an image of GPU code holds, as far as simcuda needs it: that it
 * is GPU code (a fatbin wrapper, a fatbin, a cubin, PTX) and the names of its kernels.
 * Plain C with no driver state, so a unit test feeds it hostile images directly.
 *
 * Parsing is bounded: every offset and size is checked against the image before it is
 * used. An image in memory whose extent is unknown (the runtime passes a pointer into the
 * program's fatbin section) is read through process_vm_readv, so a size field that points
 * past mapped memory ends in an error, never a fault. */
#ifndef SIM_GPU_IMAGE_H
#define SIM_GPU_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_FATBIN_WRAPPER_MAGIC 0x466243B1u   /* __fatBinC_Wrapper_t, fatbinary_section.h */
#define SIM_FATBIN_MAGIC         0xBA55ED50u
#define SIM_GPU_IMAGE_MAX        ((uint64_t)1 << 30)  /* no GPU image is larger */

typedef enum sim_gpu_format {
    SIM_GPU_NOT_GPU_CODE,   /* none of the formats below */
    SIM_GPU_FATBIN_WRAPPER, /* what nvcc registers: magic, version 1 or 2, then the fatbin */
    SIM_GPU_FATBIN,
    SIM_GPU_CUBIN,          /* an ELF file for EM_CUDA */
    SIM_GPU_PTX,            /* text */
} sim_gpu_format;

/* A variable of the GPU code (__device__, __constant__): what storage it needs. */
typedef struct sim_gpu_global {
    char *name;
    uint64_t size;
    unsigned char *init;    /* [size], its initial bytes, or NULL for zeros */
} sim_gpu_global;

typedef struct sim_gpu_image {
    sim_gpu_format format;
    bool any_name;          /* no code could be read (compressed, or a kind not known):
                             * every kernel name is taken as present */
    size_t count;           /* kernel names read, sorted, without repeats */
    char **names;           /* [count], pointing into `text` */
    char *text;
    int arch;               /* the highest sm_ of its cubins (90 for sm_90), 0 when none */
    size_t global_count;    /* variables (STT_OBJECT symbols of its first cubin that has them) */
    sim_gpu_global *globals;
} sim_gpu_image;

/* A quick look at the first bytes only: whether `image` starts like GPU code. `size` is
 * the bytes known to be readable (at least 4 for a verdict). */
sim_gpu_format sim_gpu_image_kind(const void *image, size_t size);

/* Reads GPU code. `size` is the image's length, or 0 when unknown (memory the caller
 * owns only as far as it is mapped). Returns 0 and fills *out, or -1 with `why` saying
 * what is wrong (a truncated or malformed image, or not GPU code at all); out->format
 * then still says what the image looked like (SIM_GPU_NOT_GPU_CODE: not GPU code). */
int sim_gpu_image_read(const void *image, size_t size, sim_gpu_image *out, char *why, size_t why_size);

/* Whether `name` is a kernel of the image (always, with any_name). */
bool sim_gpu_image_has(const sim_gpu_image *image, const char *name);

/* The variable `name`, or NULL. */
const sim_gpu_global *sim_gpu_image_global(const sim_gpu_image *image, const char *name);

void sim_gpu_image_free(sim_gpu_image *image);

/* Copies n bytes from memory of unknown extent; false (nothing promised in dst) when any
 * of it is not mapped. */
bool sim_copy_mapped(void *dst, const void *src, size_t n);

#endif /* SIM_GPU_IMAGE_H */
