/* driver.h — the CUDA driver, loaded at run time, and the kernel module.
 *
 * The engine links no CUDA library: it dlopens libcuda.so.1 (or --driver PATH) and gets
 * every entry point from cuGetProcAddress_v2, as the CUDA runtime does. Without a driver
 * it falls back to simcuda installed beside it, and says so in one line.
 */
#ifndef TM_ENGINE_DRIVER_H
#define TM_ENGINE_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/driver_table.h"
#include "kernels/kernels.h"

#define TM_DRIVER_FIELD(name, abi) PFN_##name##_v##abi name;

typedef struct tm_driver {
    void *handle;                   /* dlopen handle of the driver library */
    char path[4096];                /* what was loaded */
    bool simulated;                 /* fell back to simcuda */
    TM_DRIVER_TABLE(TM_DRIVER_FIELD)
    CUdevice device;
    CUcontext context;
    char device_name[256];
    size_t device_total;            /* bytes */
    CUmodule module;
    char module_path[4096];
    CUfunction fn[TM_KERNEL_COUNT]; /* by enum tm_kernel_id */
} tm_driver;

typedef struct tm_driver_options {
    const char *driver_path;        /* --driver, or NULL for libcuda.so.1 */
    bool verbose;
} tm_driver_options;

/* Loads the driver, initialises device 0 and its primary context. 0, or -1 with a
 * message in err. */
int tm_driver_open(tm_driver *drv, const tm_driver_options *opt, char *err, size_t errlen);
/* Loads the kernels (fatbin, else the host-kernel library) and looks up every kernel. */
int tm_driver_load_kernels(tm_driver *drv, char *err, size_t errlen);
void tm_driver_close(tm_driver *drv);

/* "CUDA_ERROR_OUT_OF_MEMORY" */
const char *tm_cu_name(const tm_driver *drv, CUresult rc);

/* Launches kernel `id` with geometry g and packed params. */
CUresult tm_launch(const tm_driver *drv, int id, struct tm_geom g, void **params);

/* The directory holding this executable, without a trailing slash. */
int tm_exe_dir(char *out, size_t cap);

#endif /* TM_ENGINE_DRIVER_H */
