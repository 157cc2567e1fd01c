/* sim_library.c — libraries and kernels: cuLibrary* and cuKernel*, the context-free
 * loading the CUDA runtime uses (13.0 loads each fatbin at its first launch with
 * cuLibraryLoadData, then cuLibraryGetKernel with the mangled name, and launches the
 * CUkernel as a CUfunction).
 *
 * A library is a module that belongs to no context (sim_module.c): a simcuda host-kernel
 * library, whose kernels run, or GPU code (a fatbin wrapper, a fatbin, a cubin, PTX),
 * whose kernels exist so that the runtime's look-ups and cudaFuncGetAttributes answer,
 * but whose launches are refused with CUDA_ERROR_NO_BINARY_FOR_GPU. A CUkernel is the
 * module's function itself, so it is also the CUfunction of every context.
 *
 * Kernel names of GPU code are checked against the symbol tables of its cubins and the
 * `.entry` lines of its PTX where they can be read; a compressed payload cannot be (simcuda
 * does not decompress GPU code it cannot run). nvcc compresses PTX but not cubins, so the
 * cubins name the kernels; an image with nothing readable accepts any name rather than
 * refuse a kernel it may well hold. JIT and library options have nothing to act on and
 * are ignored once checked for shape.
 *
 * Variables of GPU code (cuLibraryGetGlobal, cuModuleGetGlobal) get device memory of the
 * current context at their first look-up, filled from the cubin, so the runtime's symbol
 * copies work; a host-kernel library's variable is its exported symbol. */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/simcuda/sim_gpu_image.h"
#include "tools/simcuda/sim_internal.h"

/* ---------------------------------------------------------------- loading */

static CUresult check_options(unsigned jit_count, CUjit_option *jit, void **jit_values, unsigned lib_count,
                              CUlibraryOption *lib, void **lib_values)
{
    if ((jit_count && (!jit || !jit_values)) || (lib_count && (!lib || !lib_values)))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Registers the library and its module (lock not held). */
static CUresult library_register(CUlibrary *out, sim_module *module)
{
    sim_library *library = calloc(1, sizeof *library);
    if (!library) {
        sim_module_close(module);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    library->module = module;
    module->owner = library;
    module->ctx = NULL;
    sim_lock();
    sim_object_add(&module->obj, SIM_MODULE);
    sim_object_add(&library->obj, SIM_LIBRARY);
    sim_unlock();
    *out = (CUlibrary)library;
    return CUDA_SUCCESS;
}

/* GPU code read into a module with nothing to run; `size` 0: extent unknown. *is_gpu
 * says whether the image was GPU code at all (malformed GPU code is said in one line). */
static CUresult gpu_module(const void *image, size_t size, const char *what, sim_module **out, bool *is_gpu)
{
    *is_gpu = true;
    sim_module *module = calloc(1, sizeof *module);
    sim_gpu_image *gpu = calloc(1, sizeof *gpu);
    if (!module || !gpu) {
        free(module);
        free(gpu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    char why[160];
    if (sim_gpu_image_read(image, size, gpu, why, sizeof why) != 0) {
        *is_gpu = gpu->format != SIM_GPU_NOT_GPU_CODE;
        free(gpu);
        free(module);
        if (*is_gpu)
            sim_log("%s: %s (returns CUDA_ERROR_INVALID_IMAGE)", what, why);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    module->gpu = gpu;
    module->source = size ? NULL : image;
    *out = module;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                      void **jitOptionsValues, unsigned int numJitOptions,
                                      CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                      unsigned int numLibraryOptions)
{
    SIM_FAIL_POINT(cuLibraryLoadData);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = check_options(numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions, libraryOptions,
                                libraryOptionValues)) != CUDA_SUCCESS)
        return result;
    sim_module *module = NULL;
    bool is_gpu;
    result = gpu_module(code, 0, "cuLibraryLoadData", &module, &is_gpu);
    if (!is_gpu) {
        /* Not GPU code: a host-kernel library, or nothing simcuda can load. */
        if (!(module = calloc(1, sizeof *module)))
            return CUDA_ERROR_OUT_OF_MEMORY;
        if ((result = sim_module_open_image(module, code)) != CUDA_SUCCESS) {
            sim_module_close(module);
            return result;
        }
    } else if (result != CUDA_SUCCESS) {
        return result;
    }
    return library_register(library, module);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                          void **jitOptionsValues, unsigned int numJitOptions,
                                          CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                          unsigned int numLibraryOptions)
{
    SIM_FAIL_POINT(cuLibraryLoadFromFile);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!library || !fileName)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = check_options(numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions, libraryOptions,
                                libraryOptionValues)) != CUDA_SUCCESS)
        return result;
    int fd = open(fileName, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    struct stat st;
    unsigned char *bytes = NULL;
    size_t size = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= SIM_GPU_IMAGE_MAX) {
        size = (size_t)st.st_size;
        bytes = malloc(size);
        if (bytes && pread(fd, bytes, size, 0) != (ssize_t)size) {
            free(bytes);
            bytes = NULL;
        }
    }
    close(fd);
    if (!bytes) {
        sim_log("cuLibraryLoadFromFile %s: not a readable file of 1 byte to 1 GiB (returns "
                "CUDA_ERROR_INVALID_IMAGE)", fileName);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    sim_module *module = NULL;
    bool is_gpu = false;
    if (sim_gpu_image_kind(bytes, size) != SIM_GPU_NOT_GPU_CODE) {
        result = gpu_module(bytes, size, fileName, &module, &is_gpu);
    } else if (!(module = calloc(1, sizeof *module))) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    } else if ((result = sim_module_open_path(module, fileName)) != CUDA_SUCCESS) {
        sim_module_close(module);
        module = NULL;
    }
    free(bytes);
    return result == CUDA_SUCCESS ? library_register(library, module) : result;
}

SIM_EXPORT CUresult cuLibraryUnload(CUlibrary handle)
{
    SIM_FAIL_POINT(cuLibraryUnload);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_library *library = sim_object_find(handle, SIM_LIBRARY);
    if (library) {
        /* Queued launches (SIMCUDA_ASYNC) point at its functions: let them finish. */
        sim_async_wait_all();
        for (sim_function *f = library->module->functions; f; f = f->next)
            sim_object_remove(&f->obj);
        sim_object_remove(&library->module->obj);
        sim_object_remove(&library->obj);
    }
    sim_unlock();
    if (!library)
        return CUDA_ERROR_INVALID_HANDLE;
    sim_module_free_globals(library->module);
    sim_module_close(library->module);
    free(library);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- look-ups */

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary handle, const char *name)
{
    SIM_FAIL_POINT(cuLibraryGetKernel);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_library *library = sim_object_find(handle, SIM_LIBRARY);
    sim_function *function = NULL;
    result = library ? sim_module_function(library->module, name, &function) : CUDA_ERROR_INVALID_HANDLE;
    if (result == CUDA_SUCCESS)
        *pKernel = (CUkernel)function;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary handle)
{
    SIM_FAIL_POINT(cuLibraryGetModule);
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    sim_library *library = result == CUDA_SUCCESS ? sim_object_find(handle, SIM_LIBRARY) : NULL;
    if (result == CUDA_SUCCESS && !library)
        result = CUDA_ERROR_INVALID_HANDLE;
    if (result == CUDA_SUCCESS)
        *pMod = (CUmodule)library->module;
    sim_unlock();
    return result;
}

/* Lock held: a CUkernel is a function of a library's module. */
static sim_function *kernel_find(CUkernel handle)
{
    sim_function *function = sim_object_find(handle, SIM_FUNCTION);
    return function && function->module->owner ? function : NULL;
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    SIM_FAIL_POINT(cuKernelGetFunction);
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    sim_function *function = result == CUDA_SUCCESS ? kernel_find(kernel) : NULL;
    if (result == CUDA_SUCCESS && !function)
        result = CUDA_ERROR_INVALID_HANDLE;
    if (result == CUDA_SUCCESS)
        *pFunc = (CUfunction)function;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    SIM_FAIL_POINT(cuKernelGetLibrary);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pLib)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_function *function = kernel_find(kernel);
    if (function)
        *pLib = (CUlibrary)function->module->owner;
    sim_unlock();
    return function ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel)
{
    SIM_FAIL_POINT(cuKernelGetName);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_function *function = kernel_find(kernel);
    if (function)
        *name = function->name; /* lives until cuLibraryUnload */
    sim_unlock();
    return function ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---------------------------------------------------------------- attributes */

SIM_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    SIM_FAIL_POINT(cuKernelGetAttribute);
    CUresult result = sim_device_check(dev);
    if (result != CUDA_SUCCESS)
        return result;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_function *function = kernel_find(kernel);
    result = function ? sim_function_get_attribute(function, attrib, dev, pi) : CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

/* One value for every device: simcuda's devices are alike. */
SIM_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    SIM_FAIL_POINT(cuKernelSetAttribute);
    CUresult result = sim_device_check(dev);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_function *function = kernel_find(kernel);
    result = function ? sim_function_set_attribute(function, attrib, val) : CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    SIM_FAIL_POINT(cuKernelGetParamInfo);
    return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset, paramSize);
}

/* ---------------------------------------------------------------- variables */

void sim_library_release_context(sim_context *ctx)
{
    sim_object *object, *next;
    HASH_ITER(hh, sim.objects, object, next) {
        if (object->kind != SIM_MODULE)
            continue;
        for (struct sim_global **at = &((sim_module *)object)->globals; *at;) {
            struct sim_global *g = *at;
            if (g->ctx == ctx) {
                *at = g->next;
                free(g);
            } else {
                at = &g->next;
            }
        }
    }
}

void sim_module_free_globals(sim_module *module)
{
    sim_lock();
    struct sim_global *list = module->globals;
    module->globals = NULL;
    sim_unlock();
    while (list) {
        struct sim_global *next = list->next;
        /* Its context's memory; a context already gone took it along. */
        sim_lock();
        sim_region *region = sim_region_find(TREE_REGIONS, (uintptr_t)list->dptr);
        bool live = region && region->base == (uintptr_t)list->dptr && region->ctx == list->ctx;
        sim_unlock();
        if (live) {
            CUcontext previous = NULL;
            cuCtxGetCurrent(&previous);
            if (cuCtxPushCurrent((CUcontext)list->ctx) == CUDA_SUCCESS) {
                cuMemFree(list->dptr);
                cuCtxPopCurrent(&previous);
            }
        }
        free(list);
        list = next;
    }
}

/* A host-kernel library's variable is its exported symbol: host memory its kernels reach
 * directly. GPU code's gets device memory of the current context on first use. */
static CUresult module_global(sim_module *module, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
    sim_context *ctx = NULL;
    CUresult result = sim_current_context_locked(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (module->library) {
        void *address = NULL;
        const ElfW(Sym) *symbol = NULL;
        Dl_info info;
        if (!(address = dlsym(module->library, name)) ||
            !dladdr1(address, &info, (void **)&symbol, RTLD_DL_SYMENT) || !symbol)
            return CUDA_ERROR_NOT_FOUND;
        if (dptr)
            *dptr = (CUdeviceptr)(uintptr_t)address;
        if (bytes)
            *bytes = (size_t)symbol->st_size;
        return CUDA_SUCCESS;
    }
    for (struct sim_global *g = module->globals; g; g = g->next)
        if (g->ctx == ctx && strcmp(g->name, name) == 0) {
            if (dptr)
                *dptr = g->dptr;
            if (bytes)
                *bytes = g->size;
            return CUDA_SUCCESS;
        }
    const sim_gpu_global *variable = module->gpu ? sim_gpu_image_global(module->gpu, name) : NULL;
    if (!variable)
        return CUDA_ERROR_NOT_FOUND;
    size_t length = strlen(name);
    struct sim_global *g = calloc(1, sizeof *g + length + 1);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* The allocation takes the lock: drop it meanwhile; the module cannot go while its
     * caller holds its handle, and a second thread asking meanwhile gets its own copy. */
    sim_unlock();
    CUdeviceptr p = 0;
    result = sim_device_alloc(&p, variable->size ? (size_t)variable->size : 1, false, NULL);
    if (result == CUDA_SUCCESS) {
        if (variable->init)
            memcpy((void *)(uintptr_t)p, variable->init, (size_t)variable->size);
        else
            memset((void *)(uintptr_t)p, 0, (size_t)variable->size);
    }
    sim_lock();
    if (result != CUDA_SUCCESS) {
        free(g);
        return result;
    }
    g->ctx = ctx;
    g->dptr = p;
    g->size = (size_t)variable->size;
    memcpy(g->name, name, length + 1);
    g->next = module->globals;
    module->globals = g;
    if (dptr)
        *dptr = p;
    if (bytes)
        *bytes = g->size;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary handle, const char *name)
{
    SIM_FAIL_POINT(cuLibraryGetGlobal);
    if (!name || (!dptr && !bytes))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_library *library = sim_object_find(handle, SIM_LIBRARY);
    CUresult result = library ? module_global(library->module, name, dptr, bytes) : CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule handle, const char *name)
{
    SIM_FAIL_POINT(cuModuleGetGlobal_v2);
    if (!name || (!dptr && !bytes))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_module *module = sim_object_find(handle, SIM_MODULE);
    CUresult result = module ? module_global(module, name, dptr, bytes) : CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}
