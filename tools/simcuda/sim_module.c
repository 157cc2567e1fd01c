/* sim_module.c — modules and kernel launches.
 *
 * A simcuda module is a host shared library that defines `simcuda_module_abi` (see
 * simcuda.h). cuModuleLoad dlopens it from a path; cuModuleLoadData copies the image
 * into a file of its own and dlopens that. GPU code (a cubin, a fatbin, PTX) is recognised and
 * refused with CUDA_ERROR_NO_BINARY_FOR_GPU, as a real driver refuses code built for
 * another architecture; anything else is CUDA_ERROR_INVALID_IMAGE.
 *
 * A module of GPU code exists where a loader must accept it (a library, sim_library.c,
 * and the 11.8 runtime's own loader, export table 2): its functions are the kernels the
 * image names (sim_gpu_image.c) and have no host code, so each launch of one is refused
 * with CUDA_ERROR_NO_BINARY_FOR_GPU, and the first says so naming the kernel. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tools/simcuda/sim_gpu_image.h"
#include "tools/simcuda/sim_internal.h"

/* Host kernels are libraries built for the machine simcuda itself runs on. */
#if defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#define HOST_MACHINE EM_X86_64
#endif

#define FATBIN_MAGIC      SIM_FATBIN_MAGIC
#define FATBIN_WRAP_MAGIC SIM_FATBIN_WRAPPER_MAGIC
#define EM_NVIDIA_CUDA    190
#define SIM_SHARED_PER_BLOCK 49152  /* dynamic shared memory a launch may use without opting in */

/* ---------------------------------------------------------------- image recognition */

typedef enum image_kind { IMAGE_HOST_LIBRARY, IMAGE_GPU_CODE, IMAGE_UNKNOWN } image_kind;

/* Classifies the first bytes of an image; *elf_size gets the size of an ELF file from
 * its headers (section or program headers end it), 0 when not ELF. */
static image_kind classify_image(const unsigned char *bytes, size_t available, size_t *elf_size)
{
    *elf_size = 0;
    if (available >= 4) {
        uint32_t magic;
        memcpy(&magic, bytes, 4);
        if (magic == FATBIN_MAGIC || magic == FATBIN_WRAP_MAGIC)
            return IMAGE_GPU_CODE;
    }
    if (available >= 8 && (memcmp(bytes, "//", 2) == 0 || memcmp(bytes, ".version", 8) == 0))
        return IMAGE_GPU_CODE; /* PTX text */
    if (available < sizeof(Elf64_Ehdr) || memcmp(bytes, ELFMAG, SELFMAG) != 0)
        return IMAGE_UNKNOWN;
    Elf64_Ehdr header;
    memcpy(&header, bytes, sizeof header);
    if (header.e_ident[EI_CLASS] != ELFCLASS64)
        return IMAGE_UNKNOWN;
    if (header.e_machine == EM_NVIDIA_CUDA)
        return IMAGE_GPU_CODE;
    if (header.e_machine != HOST_MACHINE || header.e_type != ET_DYN)
        return IMAGE_UNKNOWN;
    uint64_t end = header.e_shoff + (uint64_t)header.e_shnum * header.e_shentsize;
    uint64_t ph_end = header.e_phoff + (uint64_t)header.e_phnum * header.e_phentsize;
    if (ph_end > end)
        end = ph_end;
    *elf_size = (size_t)end;
    return IMAGE_HOST_LIBRARY;
}

CUresult sim_module_open_path(sim_module *module, const char *path)
{
    /* RTLD_NODELETE: a kernel library may leave threads of its own (an OpenMP pool) parked
     * in its code; like a real driver, unloading a module never unmaps code. */
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!library) {
        sim_info("module %s: %s", path, dlerror());
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const int *abi = dlsym(library, "simcuda_module_abi");
    if (!abi || *abi < 1 || *abi > SIMCUDA_ABI_VERSION) {
        sim_log("module %s: not a simcuda kernel library of ABI 1 to %d (define SIMCUDA_MODULE())", path,
                SIMCUDA_ABI_VERSION);
        dlclose(library);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    module->library = library;
    module->abi = *abi;
    return CUDA_SUCCESS;
}

static CUresult module_register(CUmodule *handle, sim_module *module)
{
    sim_lock();
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS) {
        module->ctx = ctx;
        sim_object_add(&module->obj, SIM_MODULE);
    }
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *handle = (CUmodule)module;
    return result;
}

void sim_module_close(sim_module *module)
{
    /* Storage of its variables is device memory of contexts: freed before (cuLibraryUnload,
     * the 11.8 unload) or with the context; only the bookkeeping goes here. */
    for (struct sim_global *g = module->globals, *next; g; g = next) {
        next = g->next;
        free(g);
    }
    if (module->library)
        dlclose(module->library);
    if (module->gpu) {
        sim_gpu_image_free(module->gpu);
        free(module->gpu);
    }
    for (sim_function *f = module->functions, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    free(module);
}

/* ---------------------------------------------------------------- loading */

SIM_EXPORT CUresult cuModuleLoad(CUmodule *handle, const char *path)
{
    SIM_FAIL_POINT(cuModuleLoad);
    if (!handle || !path)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_current_context(NULL);
    if (result != CUDA_SUCCESS)
        return result;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    unsigned char head[sizeof(Elf64_Ehdr)];
    ssize_t got = read(fd, head, sizeof head);
    close(fd);
    size_t elf_size;
    image_kind kind = classify_image(head, got > 0 ? (size_t)got : 0, &elf_size);
    if (kind == IMAGE_GPU_CODE)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    if (kind != IMAGE_HOST_LIBRARY)
        return CUDA_ERROR_INVALID_IMAGE;
    sim_module *module = calloc(1, sizeof *module);
    if (!module)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((result = sim_module_open_path(module, path)) != CUDA_SUCCESS || (result = module_register(handle, module)) != CUDA_SUCCESS)
        sim_module_close(module);
    return result;
}

CUresult sim_module_open_image(sim_module *module, const void *image)
{
    /* The caller's image has no stated length: its head is read only as far as mapped, and
     * write() below fails cleanly (EFAULT) on a size that runs past its memory. */
    unsigned char head[sizeof(Elf64_Ehdr)];
    if (!sim_copy_mapped(head, image, sizeof head))
        return CUDA_ERROR_INVALID_IMAGE;
    size_t elf_size;
    image_kind kind = classify_image(head, sizeof head, &elf_size);
    if (kind == IMAGE_GPU_CODE)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    if (kind != IMAGE_HOST_LIBRARY || elf_size == 0)
        return CUDA_ERROR_INVALID_IMAGE;
    /* The image goes to a file of its own: the dynamic loader knows libraries by path,
     * so each loaded image needs a name no earlier one had. */
    char path[] = "/dev/shm/simcuda-module-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    bool written = write(fd, image, elf_size) == (ssize_t)elf_size;
    close(fd);
    CUresult result = written ? sim_module_open_path(module, path) : CUDA_ERROR_OUT_OF_MEMORY;
    unlink(path);
    return result;
}

static CUresult load_data(CUmodule *handle, const void *image)
{
    if (!handle || !image)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_current_context(NULL);
    if (result != CUDA_SUCCESS)
        return result;
    sim_module *module = calloc(1, sizeof *module);
    if (!module)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((result = sim_module_open_image(module, image)) != CUDA_SUCCESS ||
        (result = module_register(handle, module)) != CUDA_SUCCESS)
        sim_module_close(module);
    return result;
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *handle, const void *image)
{
    SIM_FAIL_POINT(cuModuleLoadData);
    return load_data(handle, image);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *handle, const void *image, unsigned int num_options,
                                       CUjit_option *options, void **option_values)
{
    SIM_FAIL_POINT(cuModuleLoadDataEx);
    (void)options;
    (void)option_values;
    (void)num_options; /* JIT options have nothing to act on for host code */
    return load_data(handle, image);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *handle, const void *image)
{
    SIM_FAIL_POINT(cuModuleLoadFatBinary);
    return load_data(handle, image);
}

CUresult sim_gpu_module_load(CUmodule *handle, const void *image)
{
    if (!handle || !image)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_current_context(NULL);
    if (result != CUDA_SUCCESS)
        return result;
    sim_module *module = calloc(1, sizeof *module);
    sim_gpu_image *gpu = calloc(1, sizeof *gpu);
    char why[160];
    if (!module || !gpu) {
        free(module);
        free(gpu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (sim_gpu_image_read(image, 0, gpu, why, sizeof why) != 0) {
        sim_log("module load of %p: %s (returns CUDA_ERROR_INVALID_IMAGE)", image, why);
        free(gpu);
        free(module);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    module->gpu = gpu;
    module->source = image;
    if ((result = module_register(handle, module)) != CUDA_SUCCESS)
        sim_module_close(module);
    return result;
}

void sim_gpu_module_unload_image(const void *image)
{
    sim_lock();
    sim_context *ctx = NULL;
    sim_module *module = NULL;
    if (sim_current_context_locked(&ctx) == CUDA_SUCCESS) {
        sim_object *object, *next;
        HASH_ITER(hh, sim.objects, object, next) {
            sim_module *m = (sim_module *)object;
            if (object->kind == SIM_MODULE && m->ctx == ctx && m->gpu && m->source == image && !m->owner) {
                module = m;
                break;
            }
        }
    }
    if (module) {
        for (sim_function *f = module->functions; f; f = f->next)
            sim_object_remove(&f->obj);
        sim_object_remove(&module->obj);
    }
    sim_unlock();
    if (module) {
        sim_module_free_globals(module);
        sim_module_close(module);
    }
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule handle)
{
    SIM_FAIL_POINT(cuModuleUnload);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_module *module = sim_object_find(handle, SIM_MODULE);
    bool owned = module && module->owner;
    if (module && !owned) {
        for (sim_function *f = module->functions; f; f = f->next)
            sim_object_remove(&f->obj);
        sim_object_remove(&module->obj);
    }
    sim_unlock();
    if (!module)
        return CUDA_ERROR_INVALID_HANDLE;
    if (owned) {
        sim_log("cuModuleUnload: module %p belongs to a library; cuLibraryUnload unloads it "
                "(returns CUDA_ERROR_NOT_PERMITTED)", (void *)handle);
        return CUDA_ERROR_NOT_PERMITTED;
    }
    sim_module_free_globals(module);
    sim_module_close(module);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule handle, const char *name)
{
    SIM_FAIL_POINT(cuModuleGetFunction);
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_current_context(NULL);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_module *module = sim_object_find(handle, SIM_MODULE);
    sim_function *function = NULL;
    if (!module)
        result = CUDA_ERROR_INVALID_HANDLE;
    else
        result = sim_module_function(module, name, &function);
    if (result == CUDA_SUCCESS)
        *hfunc = (CUfunction)function;
    sim_unlock();
    return result;
}

/* Host code: the exported symbol `name` (and its SIMCUDA_KERNEL_PARAMS). GPU code: a
 * function with no entry for every kernel the image names, refused at launch. */
CUresult sim_module_function(sim_module *module, const char *name, sim_function **out)
{
    sim_function *function;
    for (function = module->functions; function; function = function->next)
        if (strcmp(function->name, name) == 0) {
            *out = function;
            return CUDA_SUCCESS;
        }
    simcuda_kernel_fn *entry = NULL;
    if (module->library) {
        if (!(entry = (simcuda_kernel_fn *)dlsym(module->library, name)))
            return CUDA_ERROR_NOT_FOUND;
    } else if (!module->gpu || !sim_gpu_image_has(module->gpu, name)) {
        return CUDA_ERROR_NOT_FOUND;
    }
    size_t length = strlen(name);
    if (!(function = calloc(1, sizeof *function + length + 1)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    function->module = module;
    function->entry = entry;
    function->max_dynamic_shared = SIM_SHARED_PER_BLOCK;
    function->carveout = -1;
    if (entry && module->abi >= 2) {
        char symbol[512];
        snprintf(symbol, sizeof symbol, "simcuda_params_%s", name);
        function->params = dlsym(module->library, symbol);
    }
    memcpy(function->name, name, length + 1);
    function->next = module->functions;
    module->functions = function;
    sim_object_add(&function->obj, SIM_FUNCTION);
    *out = function;
    return CUDA_SUCCESS;
}

void sim_module_release_context(sim_context *ctx)
{
    sim_object *object, *next;
    /* Collect first: closing a module removes its functions from the table. */
    sim_module *doomed = NULL;
    HASH_ITER(hh, sim.objects, object, next) {
        if (object->kind == SIM_MODULE && ((sim_module *)object)->ctx == ctx) {
            sim_module *module = (sim_module *)object;
            sim_object_remove(object);
            module->unload_next = doomed;
            doomed = module;
        }
    }
    while (doomed) {
        sim_module *module = doomed;
        doomed = module->unload_next;
        for (sim_function *f = module->functions; f; f = f->next)
            sim_object_remove(&f->obj);
        sim_module_close(module);
    }
}

/* ---------------------------------------------------------------- function attributes */

#define SIM_STATIC_SHARED_OPTIN 232448

/* What a GPU reports for a small kernel of a device of this compute capability: simcuda
 * runs no device code, so registers and static memory are fixed, plausible figures. */
CUresult sim_function_get_attribute(const sim_function *function, CUfunction_attribute attribute, CUdevice device,
                                    int *value)
{
    int major = 0, minor = 0;
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = major * 10 + minor; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = function->max_dynamic_shared; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = function->carveout; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *value = function->cluster[0]; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *value = function->cluster[1]; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *value = function->cluster[2]; break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *value = function->non_portable_cluster; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *value = function->cluster_policy; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult sim_function_set_attribute(sim_function *function, CUfunction_attribute attribute, int value)
{
    if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (value < 0 || value > SIM_STATIC_SHARED_OPTIN)
            return CUDA_ERROR_INVALID_VALUE;
        function->max_dynamic_shared = value;
    } else if (attribute == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
        if (value < -1 || value > 100)
            return CUDA_ERROR_INVALID_VALUE;
        function->carveout = value;
    } else if (attribute == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH ||
               attribute == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT ||
               attribute == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH) {
        /* thread block clusters (compute capability 9.0): 8 blocks portably, 16 when allowed */
        if (value < 0 || value > 16)
            return CUDA_ERROR_INVALID_VALUE;
        function->cluster[attribute - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
    } else if (attribute == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
        if (value != 0 && value != 1)
            return CUDA_ERROR_INVALID_VALUE;
        function->non_portable_cluster = value;
    } else if (attribute == CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) {
        if (value < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT || value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
            return CUDA_ERROR_INVALID_VALUE;
        function->cluster_policy = value;
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction handle, CUfunction_attribute attribute, int value)
{
    SIM_FAIL_POINT(cuFuncSetAttribute);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_function *function = sim_object_find(handle, SIM_FUNCTION);
    result = function ? sim_function_set_attribute(function, attribute, value) : CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

/* Lock held: the device of the function's context, else the current one's (a library
 * kernel, whose module outlives contexts). */
static CUdevice function_device(const sim_function *function)
{
    sim_context *current = NULL;
    if (function && function->module->ctx)
        return function->module->ctx->device;
    if (sim_current_context_locked(&current) == CUDA_SUCCESS)
        return current->device;
    return 0;
}

SIM_EXPORT CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attribute, CUfunction handle)
{
    SIM_FAIL_POINT(cuFuncGetAttribute);
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_function *function = sim_object_find(handle, SIM_FUNCTION);
    result = function ? sim_function_get_attribute(function, attribute, function_device(function), value)
                      : CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- occupancy
 * Libraries (cuBLAS in cublasCreate) size their launches from these. The answers follow
 * the device's attributes and the function's (32 registers a thread, no static shared
 * memory, sim_function_get_attribute), with the 1 KiB of shared memory a GPU keeps per
 * block and at most 32 blocks an SM. */

typedef struct sm_limits {
    int64_t shared, shared_per_block, threads, registers; /* of one SM */
    int64_t sms;                                           /* SMs of the device */
} sm_limits;

/* The limits of one SM of the device `func` belongs to (else the current context's). */
static CUresult occupancy_limits(CUfunction func, int block_size, sm_limits *limits)
{
    if (block_size <= 0 || block_size > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_function *function = sim_object_find(func, SIM_FUNCTION);
    const CUdevice device = function_device(function);
    sim_unlock();
    if (!function)
        return CUDA_ERROR_INVALID_HANDLE;
    int shared = 0, per_block = 0, threads = 0, registers = 0;
    cuDeviceGetAttribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, device);
    cuDeviceGetAttribute(&per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
    cuDeviceGetAttribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device);
    cuDeviceGetAttribute(&registers, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, device);
    int sms = 0;
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    *limits = (sm_limits){ shared, per_block, threads, registers, sms };
    return CUDA_SUCCESS;
}

enum { SHARED_KEPT_PER_BLOCK = 1024, REGISTERS_PER_THREAD = 32, MAX_BLOCKS_PER_SM = 32 };

/* The dynamic shared memory each of `numBlocks` blocks may ask for on one SM: the SM's
 * shared memory split between them, less what is kept per block, at most the opt-in
 * per-block limit; 0 when that many blocks do not fit an SM. */
SIM_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
                                                            int blockSize)
{
    SIM_FAIL_POINT(cuOccupancyAvailableDynamicSMemPerBlock);
    sm_limits sm;
    if (!dynamicSmemSize || numBlocks <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = occupancy_limits(func, blockSize, &sm);
    if (result != CUDA_SUCCESS)
        return result;
    const int64_t threads = (int64_t)numBlocks * ((blockSize + 31) / 32 * 32);
    const int64_t share = sm.shared / numBlocks - SHARED_KEPT_PER_BLOCK;
    if (threads > sm.threads || threads * REGISTERS_PER_THREAD > sm.registers || share <= 0)
        *dynamicSmemSize = 0;
    else
        *dynamicSmemSize = (size_t)(share < sm.shared_per_block ? share : sm.shared_per_block);
    return CUDA_SUCCESS;
}

/* How many blocks of `blockSize` threads with `dynamicSMemSize` bytes each fit one SM:
 * the least of what threads, registers, shared memory and the block limit allow. */
SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                                         int blockSize, size_t dynamicSMemSize,
                                                                         unsigned int flags)
{
    SIM_FAIL_POINT(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags);
    sm_limits sm;
    if (!numBlocks || (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = occupancy_limits(func, blockSize, &sm);
    if (result != CUDA_SUCCESS)
        return result;
    if (dynamicSMemSize > (size_t)sm.shared_per_block) {
        *numBlocks = 0;
        return CUDA_SUCCESS;
    }
    const int64_t threads = (blockSize + 31) / 32 * 32;
    int64_t blocks = MAX_BLOCKS_PER_SM;
    if (sm.threads / threads < blocks)
        blocks = sm.threads / threads;
    if (sm.registers / (threads * REGISTERS_PER_THREAD) < blocks)
        blocks = sm.registers / (threads * REGISTERS_PER_THREAD);
    if (sm.shared / ((int64_t)dynamicSMemSize + SHARED_KEPT_PER_BLOCK) < blocks)
        blocks = sm.shared / ((int64_t)dynamicSMemSize + SHARED_KEPT_PER_BLOCK);
    *numBlocks = (int)blocks;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                                size_t dynamicSMemSize)
{
    SIM_FAIL_POINT(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize,
                                                                CU_OCCUPANCY_DEFAULT);
}

/* The blocks of one cluster `config` launches: its cluster attribute, else the size the
 * function requires, else 1. */
static int64_t cluster_blocks(const CUlaunchConfig *config, const sim_function *function)
{
    for (unsigned int i = 0; config->attrs && i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            return (int64_t)config->attrs[i].value.clusterDim.x * config->attrs[i].value.clusterDim.y *
                   config->attrs[i].value.clusterDim.z;
    int64_t blocks = 1;
    for (int d = 0; d < 3; d++)
        blocks *= function->cluster[d] ? function->cluster[d] : 1;
    return blocks;
}

/* The blocks of `config` one SM holds (*per_sm), the SMs there are, and the cluster sizes
 * the function allows (*limit: 8, or 16 with non-portable sizes) and asks for (*blocks). */
static CUresult cluster_launch(const int *out, CUfunction func, const CUlaunchConfig *config, int *per_sm,
                               int64_t *sms, int64_t *limit, int64_t *blocks)
{
    if (!out || !config)
        return CUDA_ERROR_INVALID_VALUE;
    const int64_t threads = (int64_t)config->blockDimX * config->blockDimY * config->blockDimZ;
    CUresult result = threads > 0 && threads <= 1024 ? cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                                           per_sm, func, (int)threads, config->sharedMemBytes)
                                                     : CUDA_ERROR_INVALID_VALUE;
    sm_limits sm;
    if (result == CUDA_SUCCESS)
        result = occupancy_limits(func, (int)threads, &sm);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_function *function = sim_object_find(func, SIM_FUNCTION);
    *blocks = function ? cluster_blocks(config, function) : 0;
    *limit = function && function->non_portable_cluster ? 16 : 8;
    sim_unlock();
    *sms = sm.sms;
    return function ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* How many clusters of the launch `config` describes run at once on the whole device:
 * the blocks every SM holds, grouped into clusters of the size asked for. */
SIM_EXPORT CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    SIM_FAIL_POINT(cuOccupancyMaxActiveClusters);
    int per_sm = 0;
    int64_t sms = 0, limit = 0, blocks = 0;
    CUresult result = cluster_launch(numClusters, func, config, &per_sm, &sms, &limit, &blocks);
    if (result == CUDA_SUCCESS && (blocks <= 0 || blocks > limit))
        result = CUDA_ERROR_INVALID_CLUSTER_SIZE;
    if (result == CUDA_SUCCESS)
        *numClusters = (int)(sms * per_sm / blocks);
    return result;
}

/* The largest cluster the launch could use: what the function allows, 0 when not even
 * one block fits an SM. */
SIM_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
    SIM_FAIL_POINT(cuOccupancyMaxPotentialClusterSize);
    int per_sm = 0;
    int64_t sms = 0, limit = 0, blocks = 0;
    CUresult result = cluster_launch(clusterSize, func, config, &per_sm, &sms, &limit, &blocks);
    if (result == CUDA_SUCCESS)
        *clusterSize = per_sm > 0 ? (int)limit : 0;
    return result;
}

size_t sim_param_offset(const simcuda_params *table, size_t index)
{
    size_t at = 0;
    for (size_t i = 0; i <= index && i < table->count; i++) {
        size_t align = table->params[i].align ? table->params[i].align : 1;
        at = (at + align - 1) / align * align;
        if (i < index)
            at += table->params[i].size;
    }
    return at;
}

/* Answers from the module's SIMCUDA_KERNEL_PARAMS table (the real driver reads the
 * cubin's); offsets follow each parameter's alignment. */
SIM_EXPORT CUresult cuFuncGetParamInfo(CUfunction handle, size_t index, size_t *offset, size_t *size)
{
    if (!offset || !size)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_function *function = sim_object_find(handle, SIM_FUNCTION);
    if (!function)
        result = CUDA_ERROR_INVALID_HANDLE;
    else if (!function->params)
        /* A module that publishes no layout (ABI 1, or SIMCUDA_KERNEL_PARAMS left out): the
         * answer an older driver gives, quietly, since callers probe and fall back. */
        result = CUDA_ERROR_NOT_SUPPORTED;
    else if (index >= function->params->count)
        result = CUDA_ERROR_INVALID_VALUE;
    else {
        *offset = sim_param_offset(function->params, index);
        *size = function->params->params[index].size;
    }
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- launches */

typedef char *demangle_fn(const char *mangled, char *buffer, size_t *length, int *status);

/* Once per kernel of GPU code: its name, demangled where the C++ runtime is loaded
 * (programs built with nvcc link it), and why it does not run. */
static void say_no_host_code(const char *name)
{
    demangle_fn *demangle = (demangle_fn *)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    int status = -1;
    char *readable = demangle && strncmp(name, "_Z", 2) == 0 ? demangle(name, NULL, NULL, &status) : NULL;
    if (readable && status == 0)
        sim_log("kernel %s (%s) has no host code: GPU code cannot run here (CUDA_ERROR_NO_BINARY_FOR_GPU)", name,
                readable);
    else
        sim_log("kernel %s has no host code: GPU code cannot run here (CUDA_ERROR_NO_BINARY_FOR_GPU)", name);
    free(readable);
}

static CUresult launch_kernel(CUfunction handle, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared_bytes, CUstream stream_handle, void **params,
                              void **extra)
{
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 || bz > 64 ||
        (unsigned long long)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_stream *stream = NULL;
    CUresult result = sim_current_context_locked(NULL);
    sim_function *function = NULL;
    if (result == CUDA_SUCCESS) {
        function = sim_object_find(handle, SIM_FUNCTION);
        if (!function)
            result = CUDA_ERROR_INVALID_HANDLE;
    }
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(stream_handle, &stream);
    if (result == CUDA_SUCCESS && shared_bytes > SIM_SHARED_PER_BLOCK && (int)shared_bytes > function->max_dynamic_shared)
        result = CUDA_ERROR_INVALID_VALUE;
    bool say_refused = false;
    if (result == CUDA_SUCCESS && !function->entry) {
        result = CUDA_ERROR_NO_BINARY_FOR_GPU;
        say_refused = !function->refusal_logged;
        function->refusal_logged = true;
    }
    char refused_name[512];
    if (say_refused)
        snprintf(refused_name, sizeof refused_name, "%s", function->name);
    simcuda_kernel_fn *entry = function ? function->entry : NULL;
    const char *name = function ? function->name : NULL;
    const simcuda_params *table = function ? function->params : NULL;
    int abi = function ? function->module->abi : 1;
    /* A launch of GPU code counts for SIMCUDA_HOLD too: a test holds a program that cannot
     * run its kernels at its first launch, once everything before it is done. */
    bool reached = result == CUDA_SUCCESS || result == CUDA_ERROR_NO_BINARY_FOR_GPU;
    uint64_t call = reached ? ++sim.launch_calls : 0;
    if (result == CUDA_SUCCESS)
        ++sim.launches;
    sim_unlock();
    if (reached)
        sim_hold_launch(call);
    if (say_refused)
        say_no_host_code(refused_name);
    if (result != CUDA_SUCCESS)
        return result;
    if (extra)
        return sim_not_supported("cuLaunchKernel with the `extra` argument buffer");
    simcuda_launch launch = {
        .grid = { gx, gy, gz },
        .block = { bx, by, bz },
        .shared_mem_bytes = shared_bytes,
        .stream = stream_handle,
        .params = params,
    };
    return sim_exec_launch(stream, entry, table, &launch, name, abi);
}

SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra)
{
    SIM_FAIL_POINT(cuLaunchKernel);
    return launch_kernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

SIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                                        void **params, void **extra)
{
    SIM_FAIL_POINT(cuLaunchKernel_ptsz);
    return launch_kernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

/* cuLaunchKernelEx: the launch of cuLaunchKernel plus attributes. simcuda runs a stream's
 * work in order, so the attributes that relax ordering or shape scheduling (programmatic
 * dependent launch, clusters, priorities) change no result here and are accepted. */
static CUresult launch_kernel_ex(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    if (!config || (config->numAttrs > 0 && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch_kernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                         config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream, params, extra);
}

#undef cuLaunchKernelEx
SIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    SIM_FAIL_POINT(cuLaunchKernelEx);
    return launch_kernel_ex(config, f, params, extra);
}

SIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    SIM_FAIL_POINT(cuLaunchKernelEx_ptsz);
    return launch_kernel_ex(config, f, params, extra);
}

/* Lazy, as the driver is by default since CUDA 12.2: the runtime then loads each fatbin
 * at its first launch (cuLibraryLoadData). */
SIM_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    SIM_FAIL_POINT(cuModuleGetLoadingMode);
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}
