/* driver.c — loading the CUDA driver through cuGetProcAddress_v2, and the kernel module. */
#include "engine/error.h"
#include "engine/driver.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/fatbin.h"


int tm_exe_dir(char *out, size_t cap)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return -1;
    path[n] = 0;
    char *slash = strrchr(path, '/');
    if (!slash) return -1;
    *slash = 0;
    return snprintf(out, cap, "%s", path) < (int)cap ? 0 : -1;
}

const char *tm_cu_name(const tm_driver *drv, CUresult rc)
{
    const char *name = NULL;
    if (drv->cuGetErrorName && drv->cuGetErrorName(rc, &name) == CUDA_SUCCESS && name) return name;
    return "unknown CUDA error";
}

/* ----------------------------------------------------------------------------
 * Finding and loading the driver library */

/* simcuda beside the engine: the build tree, then an installed prefix. */
static void *open_simcuda(char *path, size_t cap)
{
    static const char *const rel[] = {"../lib/simcuda/libcuda.so.1", "../lib/tiermem/simcuda/libcuda.so.1"};
    char dir[3072]; /* leaves room for the relative part in a 4096-byte path */
    if (tm_exe_dir(dir, sizeof dir)) return NULL;
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        snprintf(path, cap, "%s/%s", dir, rel[i]);
        if (access(path, R_OK) != 0) continue;
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        char resolved[PATH_MAX];
        if (h && realpath(path, resolved) && strlen(resolved) < cap) strcpy(path, resolved); /* for the message */
        if (h) return h;
    }
    return NULL;
}

static int open_library(tm_driver *drv, const tm_driver_options *opt, char *err, size_t errlen)
{
    if (opt->driver_path) {
        drv->handle = dlopen(opt->driver_path, RTLD_NOW | RTLD_LOCAL);
        if (!drv->handle) return tm_fail(err, errlen, "cannot load the driver given with --driver: %s", dlerror());
        snprintf(drv->path, sizeof drv->path, "%s", opt->driver_path);
        return 0;
    }
    drv->handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (drv->handle) {
        snprintf(drv->path, sizeof drv->path, "libcuda.so.1");
        return 0;
    }
    char why[512];
    snprintf(why, sizeof why, "%s", dlerror());
    drv->handle = open_simcuda(drv->path, sizeof drv->path);
    if (!drv->handle)
        return tm_fail(err, errlen, "no CUDA driver (%s), and no simcuda installed beside tiermem-llm", why);
    drv->simulated = true;
    fprintf(stderr, "tiermem-llm: no CUDA driver found (libcuda.so.1 not loadable); using the emulated driver %s\n",
            drv->path);
    return 0;
}

static int resolve_table(tm_driver *drv, char *err, size_t errlen)
{
    PFN_cuGetProcAddress_v12000 get_proc =
        (PFN_cuGetProcAddress_v12000)(uintptr_t)dlsym(drv->handle, "cuGetProcAddress_v2");
    if (!get_proc) return tm_fail(err, errlen, "%s has no cuGetProcAddress_v2 (driver older than CUDA 12?)", drv->path);
    CUdriverProcAddressQueryResult status;
    CUresult rc;
    void *fn;
#define TM_DRIVER_RESOLVE(name, abi)                                                        \
    fn = NULL;                                                                              \
    rc = get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);          \
    if (rc != CUDA_SUCCESS || !fn)                                                          \
        return tm_fail(err, errlen, "%s does not provide %s (cuGetProcAddress: %d, status %d)", \
                    drv->path, #name, (int)rc, (int)status);                                \
    drv->name = (PFN_##name##_v##abi)(uintptr_t)fn;
    TM_DRIVER_TABLE(TM_DRIVER_RESOLVE)
#undef TM_DRIVER_RESOLVE
    return 0;
}

int tm_driver_open(tm_driver *drv, const tm_driver_options *opt, char *err, size_t errlen)
{
    memset(drv, 0, sizeof *drv);
    if (open_library(drv, opt, err, errlen) || resolve_table(drv, err, errlen)) return -1;
    CUresult rc;
    int count = 0;
    if ((rc = drv->cuInit(0)) != CUDA_SUCCESS)
        return tm_fail(err, errlen, "cuInit failed: %s", tm_cu_name(drv, rc));
    if ((rc = drv->cuDeviceGetCount(&count)) != CUDA_SUCCESS || count < 1)
        return tm_fail(err, errlen, "no CUDA device (%s)", rc ? tm_cu_name(drv, rc) : "count is 0");
    if ((rc = drv->cuDeviceGet(&drv->device, 0)) != CUDA_SUCCESS ||
        (rc = drv->cuDeviceGetName(drv->device_name, sizeof drv->device_name, drv->device)) != CUDA_SUCCESS ||
        (rc = drv->cuDeviceTotalMem(&drv->device_total, drv->device)) != CUDA_SUCCESS)
        return tm_fail(err, errlen, "cannot query device 0: %s", tm_cu_name(drv, rc));
    if ((rc = drv->cuDevicePrimaryCtxRetain(&drv->context, drv->device)) != CUDA_SUCCESS ||
        (rc = drv->cuCtxSetCurrent(drv->context)) != CUDA_SUCCESS)
        return tm_fail(err, errlen, "cannot create a context on device 0: %s", tm_cu_name(drv, rc));
    int version = 0;
    if (opt->verbose && drv->cuDriverGetVersion(&version) == CUDA_SUCCESS)
        fprintf(stderr, "tiermem-llm: driver %s (CUDA %d.%d), device 0: %s, %.1f MiB\n", drv->path, version / 1000,
                version % 1000 / 10, drv->device_name, drv->device_total / 1048576.0);
    return 0;
}

/* ----------------------------------------------------------------------------
 * Kernels: the fatbin on a GPU, the host-kernel library on simcuda */

static CUresult load_host_kernels(tm_driver *drv)
{
    static const char *const rel[] = {"../lib/libtiermem-kernels.so", "../lib/tiermem/libtiermem-kernels.so"};
    char dir[3072]; /* leaves room for the relative part in a 4096-byte path */
    CUresult rc = CUDA_ERROR_FILE_NOT_FOUND;
    if (tm_exe_dir(dir, sizeof dir)) return rc;
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        snprintf(drv->module_path, sizeof drv->module_path, "%s/%s", dir, rel[i]);
        if (access(drv->module_path, R_OK) != 0) continue;
        rc = drv->cuModuleLoad(&drv->module, drv->module_path);
        if (rc == CUDA_SUCCESS) return rc;
    }
    return rc;
}

int tm_driver_load_kernels(tm_driver *drv, char *err, size_t errlen)
{
    CUresult rc = CUDA_ERROR_NO_BINARY_FOR_GPU;
    bool have_fatbin = tm_kernels_fatbin_size > 0;
    if (have_fatbin) {
        rc = drv->cuModuleLoadData(&drv->module, tm_kernels_fatbin);
        if (rc == CUDA_SUCCESS) snprintf(drv->module_path, sizeof drv->module_path, "embedded fatbin");
    }
    if (rc == CUDA_ERROR_NO_BINARY_FOR_GPU || rc == CUDA_ERROR_INVALID_IMAGE) {
        CUresult fatbin_rc = rc;
        rc = load_host_kernels(drv);
        if (rc != CUDA_SUCCESS)
            return tm_fail(err, errlen, "cannot load kernels: %s%s; host-kernel library: %s",
                        have_fatbin ? "embedded fatbin: " : "no embedded fatbin",
                        have_fatbin ? tm_cu_name(drv, fatbin_rc) : "",
                        rc == CUDA_ERROR_FILE_NOT_FOUND ? "libtiermem-kernels.so not found beside tiermem-llm"
                                                        : tm_cu_name(drv, rc));
    } else if (rc != CUDA_SUCCESS) {
        return tm_fail(err, errlen, "cannot load the embedded fatbin: %s", tm_cu_name(drv, rc));
    }
    for (int k = 0; k < TM_KERNEL_COUNT; k++) {
        rc = drv->cuModuleGetFunction(&drv->fn[k], drv->module, tm_kernel_names[k]);
        if (rc != CUDA_SUCCESS)
            return tm_fail(err, errlen, "kernel %s missing from %s: %s", tm_kernel_names[k], drv->module_path,
                        tm_cu_name(drv, rc));
    }
    return 0;
}

CUresult tm_launch(const tm_driver *drv, int id, struct tm_geom g, void **params)
{
    return drv->cuLaunchKernel(drv->fn[id], g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                               g.shared_bytes, NULL, params, NULL);
}

void tm_driver_close(tm_driver *drv)
{
    if (drv->module) drv->cuModuleUnload(drv->module);
    if (drv->context) drv->cuDevicePrimaryCtxRelease(drv->device);
    /* the driver library stays loaded: libraries it pulled in may have exit handlers */
    memset(drv, 0, sizeof *drv);
}
