/* test_simcuda_library.c — libraries and kernels (tools/simcuda/sim_library.c): host-kernel
 * libraries load through cuLibraryLoadData/cuLibraryLoadFromFile and run through
 * cuLibraryGetKernel + cuLaunchKernel(Ex); GPU code loads as a library with no runnable
 * code whose kernels are named from its cubins and whose launches are refused; hostile
 * and truncated images are refused, never crash.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

/* ---------------------------------------------------------------- synthetic GPU code */

#define EM_CUDA_MACHINE 190

/* A minimal cubin: a symbol table naming `funcs` (STT_FUNC) and one STT_OBJECT. */
static size_t make_cubin(unsigned char *out, const char *const *funcs, int n)
{
    char strtab[512] = "";
    size_t str_used = 1;
    Elf64_Sym symbols[16];
    memset(symbols, 0, sizeof symbols);
    int count = 1;
    for (int i = 0; i <= n; i++) {
        const char *name = i < n ? funcs[i] : "a_device_variable";
        memcpy(strtab + str_used, name, strlen(name) + 1);
        symbols[count].st_name = (Elf64_Word)str_used;
        symbols[count].st_info = ELF64_ST_INFO(STB_GLOBAL, i < n ? STT_FUNC : STT_OBJECT);
        symbols[count].st_size = i < n ? 0 : 16; /* the variable: 16 bytes of zeros */
        str_used += strlen(name) + 1;
        count++;
    }
    static const char shstrtab[] = "\0.shstrtab\0.strtab\0.symtab";
    size_t at = sizeof(Elf64_Ehdr);
    size_t shstr_at = at;
    at += sizeof shstrtab;
    size_t str_at = at;
    at += str_used;
    at = (at + 7) & ~(size_t)7;
    size_t sym_at = at;
    at += (size_t)count * sizeof(Elf64_Sym);
    size_t sh_at = at;
    Elf64_Shdr sections[4];
    memset(sections, 0, sizeof sections);
    sections[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = shstr_at, .sh_size = sizeof shstrtab };
    sections[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = str_at, .sh_size = str_used };
    sections[3] = (Elf64_Shdr){ .sh_name = 19, .sh_type = SHT_SYMTAB, .sh_offset = sym_at,
                                .sh_size = (size_t)count * sizeof(Elf64_Sym), .sh_link = 2,
                                .sh_entsize = sizeof(Elf64_Sym) };
    Elf64_Ehdr header;
    memset(&header, 0, sizeof header);
    memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_EXEC;
    header.e_machine = EM_CUDA_MACHINE;
    header.e_version = EV_CURRENT;
    header.e_shoff = sh_at;
    header.e_ehsize = sizeof header;
    header.e_shentsize = sizeof(Elf64_Shdr);
    header.e_shnum = 4;
    header.e_shstrndx = 1;
    memset(out, 0, sh_at + sizeof sections);
    memcpy(out, &header, sizeof header);
    memcpy(out + shstr_at, shstrtab, sizeof shstrtab);
    memcpy(out + str_at, strtab, str_used);
    memcpy(out + sym_at, symbols, (size_t)count * sizeof(Elf64_Sym));
    memcpy(out + sh_at, sections, sizeof sections);
    return sh_at + sizeof sections;
}

struct entry_header {
    uint16_t kind, version;
    uint32_t header_size;
    uint64_t payload_size;
    uint32_t compressed_size, unknown0, version_ptx, arch;
    uint32_t name_offset, name_length;
    uint64_t flags, unknown1, uncompressed_size;
};

/* A fatbin of one entry (kind 2 ELF or 1 PTX) holding `payload`. */
static size_t make_fatbin(unsigned char *out, uint16_t kind, const void *payload, size_t size, uint64_t flags,
                          uint32_t compressed_size)
{
    size_t padded = (size + 7) & ~(size_t)7;
    struct entry_header entry = { .kind = kind, .version = 0x101, .header_size = sizeof entry, .payload_size = padded,
                                  .compressed_size = compressed_size, .arch = 90, .flags = flags };
    struct { uint32_t magic; uint16_t version, header_size; uint64_t size; } header = {
        0xBA55ED50u, 1, 16, sizeof entry + padded };
    memset(out, 0, 16 + sizeof entry + padded);
    memcpy(out, &header, sizeof header);
    memcpy(out + 16, &entry, sizeof entry);
    memcpy(out + 16 + sizeof entry, payload, size);
    return 16 + sizeof entry + padded;
}

struct wrapper {
    uint32_t magic, version;
    const void *data;
    const void *extra;
};

static const char *const gpu_kernels[] = { "_Z6kernelPfi", "_Z5otherv" };

/* An image placed so that it ends where an inaccessible page begins: a parser that reads
 * one byte too far faults. */
struct guarded {
    unsigned char *map;
    size_t map_size;
    unsigned char *image;
};

static void guarded_place(struct guarded *g, const void *bytes, size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t span = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
    g->map_size = span + (size_t)page;
    g->map = mmap(NULL, g->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g->map != MAP_FAILED);
    assert_int_equal(mprotect(g->map + span, (size_t)page, PROT_NONE), 0);
    g->image = g->map + span - size;
    memcpy(g->image, bytes, size);
}

static void guarded_free(struct guarded *g)
{
    munmap(g->map, g->map_size);
}

/* ---------------------------------------------------------------- host-kernel libraries */

static void fill_with(CUfunction f, uint32_t base)
{
    uint32_t n = 200;
    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, n * 4));
    void *params[] = { &out, &n, &base };
    assert_cu_ok(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    uint32_t host[200];
    assert_cu_ok(cuMemcpyDtoH(host, out, sizeof host));
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(host[i], base + i);
    /* cuLaunchKernelEx, with an attribute a stream-ordered driver honours by running in order. */
    CUlaunchAttribute attribute = { .id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION };
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
                              .blockDimZ = 1, .attrs = &attribute, .numAttrs = 1 };
    base += 1000;
    assert_cu_ok(cuLaunchKernelEx(&config, f, params, NULL));
    assert_cu_ok(cuMemcpyDtoH(host, out, sizeof host));
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(host[i], base + i);
    config.numAttrs = 1;
    config.attrs = NULL;
    assert_cu(cuLaunchKernelEx(&config, f, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLaunchKernelEx(NULL, f, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFree(out));
}

static void host_library_from_a_file_runs_its_kernels(void **state)
{
    (void)state;
    CUlibrary library = NULL;
    assert_cu_ok(cuLibraryLoadFromFile(&library, CONFORMANCE_MODULE, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel kernel = NULL;
    assert_cu_ok(cuLibraryGetKernel(&kernel, library, "fill_u32"));
    fill_with((CUfunction)kernel, 5); /* the runtime launches a CUkernel as a CUfunction */
    CUfunction function = NULL;
    assert_cu_ok(cuKernelGetFunction(&function, kernel));
    assert_ptr_equal(function, (CUfunction)kernel);
    const char *name = NULL;
    assert_cu_ok(cuKernelGetName(&name, kernel));
    assert_string_equal(name, "fill_u32");
    CUlibrary owner = NULL;
    assert_cu_ok(cuKernelGetLibrary(&owner, kernel));
    assert_ptr_equal(owner, library);
    CUmodule module = NULL;
    assert_cu_ok(cuLibraryGetModule(&module, library));
    CUfunction by_module = NULL;
    assert_cu_ok(cuModuleGetFunction(&by_module, module, "fill_u32"));
    assert_ptr_equal(by_module, function);
    assert_cu(cuModuleUnload(module), CUDA_ERROR_NOT_PERMITTED); /* the library owns it */
    CUkernel missing = NULL;
    assert_cu(cuLibraryGetKernel(&missing, library, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuLibraryUnload(library));
    assert_cu(cuLibraryGetKernel(&missing, library, "fill_u32"), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuLibraryUnload(library), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuLibraryLoadFromFile(&library, "/nonexistent/lib.so", NULL, NULL, 0, NULL, NULL, 0),
              CUDA_ERROR_FILE_NOT_FOUND);
    assert_cu(cuLibraryLoadFromFile(&library, SIMCUDA_NOT_A_MODULE, NULL, NULL, 0, NULL, NULL, 0),
              CUDA_ERROR_INVALID_IMAGE);
}

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    unsigned char *bytes = malloc((size_t)n);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return bytes;
}

/* A library belongs to no context: it outlives a reset of the primary context. */
static void host_library_from_bytes_outlives_a_context_reset(void **state)
{
    (void)state;
    size_t size;
    unsigned char *bytes = read_file(CONFORMANCE_MODULE, &size);
    CUlibrary library = NULL;
    assert_cu_ok(cuLibraryLoadData(&library, bytes, NULL, NULL, 0, NULL, NULL, 0));
    free(bytes);
    CUkernel kernel = NULL;
    assert_cu_ok(cuLibraryGetKernel(&kernel, library, "fill_u32"));
    fill_with((CUfunction)kernel, 7);
    assert_cu_ok(cuDevicePrimaryCtxReset(tdev.dev));
    assert_cu_ok(cuCtxSetCurrent(tdev.primary));
    fill_with((CUfunction)kernel, 9);
    assert_cu_ok(cuLibraryUnload(library));
    CUjit_option option = CU_JIT_WALL_TIME;
    assert_cu(cuLibraryLoadData(&library, CONFORMANCE_MODULE, &option, NULL, 1, NULL, NULL, 0),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLibraryLoadData(NULL, "x", NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    static const char junk[64] = "neither GPU code nor a host library";
    assert_cu(cuLibraryLoadData(&library, junk, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
}

static void kernel_attributes_read_like_a_gpus(void **state)
{
    (void)state;
    CUlibrary library = NULL;
    assert_cu_ok(cuLibraryLoadFromFile(&library, CONFORMANCE_MODULE, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel kernel = NULL;
    assert_cu_ok(cuLibraryGetKernel(&kernel, library, "fill_u32"));
    int values[CU_FUNC_ATTRIBUTE_MAX];
    for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; a++)
        assert_cu_ok(cuKernelGetAttribute(&values[a], (CUfunction_attribute)a, kernel, tdev.dev));
    int major = 0, minor = 0;
    assert_cu_ok(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, tdev.dev));
    assert_cu_ok(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, tdev.dev));
    assert_int_equal(values[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK], 1024);
    assert_true(values[CU_FUNC_ATTRIBUTE_NUM_REGS] > 0 && values[CU_FUNC_ATTRIBUTE_NUM_REGS] <= 255);
    assert_int_equal(values[CU_FUNC_ATTRIBUTE_PTX_VERSION], major * 10 + minor);
    assert_int_equal(values[CU_FUNC_ATTRIBUTE_BINARY_VERSION], major * 10 + minor);
    assert_int_equal(values[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES], 49152);
    assert_int_equal(values[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT], -1);
    int value = 0;
    assert_cu(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX, kernel, tdev.dev), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel, 99), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUkernel)&value, tdev.dev),
              CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000, kernel, tdev.dev));
    assert_cu_ok(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kernel, tdev.dev));
    assert_int_equal(value, 100000);
    assert_cu_ok(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (CUfunction)kernel));
    assert_int_equal(value, 100000);
    assert_cu(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, -1, kernel, tdev.dev),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS, 10, kernel, tdev.dev), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuLibraryUnload(library));
}

/* ---------------------------------------------------------------- GPU code */

static void refuse_launches_of(CUlibrary library, const char *name)
{
    CUkernel kernel = NULL;
    assert_cu_ok(cuLibraryGetKernel(&kernel, library, name));
    CUfunction function = NULL;
    assert_cu_ok(cuKernelGetFunction(&function, kernel));
    CUdeviceptr out = 0;
    int n = 4;
    assert_cu_ok(cuMemAlloc(&out, 64));
    void *params[] = { &out, &n };
    assert_cu(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
    CUlaunchConfig config = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
                              .blockDimZ = 1 };
    assert_cu(cuLaunchKernelEx(&config, function, params, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
    int value = 0;
    assert_cu_ok(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel, tdev.dev));
    assert_int_equal(value, 1024);
    assert_cu_ok(cuMemFree(out));
}

static void gpu_code_loads_names_its_kernels_and_refuses_to_run(void **state)
{
    (void)state;
    unsigned char cubin[2048], fatbin[4096];
    size_t cubin_size = make_cubin(cubin, gpu_kernels, 2);
    make_fatbin(fatbin, 2, cubin, cubin_size, 0x11, 0);
    struct wrapper wrapper = { 0x466243B1u, 1, fatbin, NULL };

    /* What the 13.0 runtime passes: the wrapper. */
    CUlibrary library = NULL;
    assert_cu_ok(cuLibraryLoadData(&library, &wrapper, NULL, NULL, 0, NULL, NULL, 0));
    refuse_launches_of(library, "_Z6kernelPfi");
    refuse_launches_of(library, "_Z5otherv");
    CUkernel kernel = NULL;
    assert_cu(cuLibraryGetKernel(&kernel, library, "_Z7missingv"), CUDA_ERROR_NOT_FOUND);
    assert_cu(cuLibraryGetKernel(&kernel, library, "a_device_variable"), CUDA_ERROR_NOT_FOUND);
    /* Its variable gets device memory: what cudaMemcpyToSymbol writes reads back. */
    CUdeviceptr variable = 0, again = 0;
    size_t bytes = 0;
    assert_cu_ok(cuLibraryGetGlobal(&variable, &bytes, library, "a_device_variable"));
    assert_int_equal(bytes, 16);
    uint32_t zeros[4] = { 1, 1, 1, 1 }, values[4] = { 1, 2, 3, 4 }, back[4] = { 0 };
    assert_cu_ok(cuMemcpyDtoH(zeros, variable, sizeof zeros));
    assert_true(zeros[0] == 0 && zeros[3] == 0);
    assert_cu_ok(cuMemcpyHtoD(variable, values, sizeof values));
    CUmodule library_module = NULL;
    assert_cu_ok(cuLibraryGetModule(&library_module, library));
    assert_cu_ok(cuModuleGetGlobal(&again, NULL, library_module, "a_device_variable"));
    assert_true(again == variable);
    assert_cu_ok(cuMemcpyDtoH(back, again, sizeof back));
    assert_memory_equal(back, values, sizeof values);
    assert_cu(cuLibraryGetGlobal(&again, &bytes, library, "_Z6kernelPfi"), CUDA_ERROR_NOT_FOUND);
    assert_cu(cuLibraryGetGlobal(&again, &bytes, library, "no_such_variable"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuLibraryUnload(library));

    /* The fatbin itself, a bare cubin, PTX text. */
    assert_cu_ok(cuLibraryLoadData(&library, fatbin, NULL, NULL, 0, NULL, NULL, 0));
    refuse_launches_of(library, "_Z5otherv");
    assert_cu_ok(cuLibraryUnload(library));
    assert_cu_ok(cuLibraryLoadData(&library, cubin, NULL, NULL, 0, NULL, NULL, 0));
    assert_cu_ok(cuLibraryGetKernel(&kernel, library, "_Z6kernelPfi"));
    assert_cu(cuLibraryGetKernel(&kernel, library, "_Z7missingv"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuLibraryUnload(library));
    static const char ptx[] = "//\n.version 8.0\n.target sm_90\n.visible .entry ptx_kernel(\n.param .u64 p)\n{ ret; }\n"
                              ".visible .entry\tsecond_one()\n{ ret; }\n";
    assert_cu_ok(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
    refuse_launches_of(library, "ptx_kernel");
    assert_cu_ok(cuLibraryGetKernel(&kernel, library, "second_one"));
    assert_cu(cuLibraryGetKernel(&kernel, library, "ptx"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuLibraryUnload(library));

    /* From a file, as a fatbin nvcc -fatbin writes. */
    char path[] = "/tmp/simcuda-test-fatbin-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t fatbin_size = 16 + sizeof(struct entry_header) + ((cubin_size + 7) & ~(size_t)7);
    assert_int_equal(write(fd, fatbin, fatbin_size), (ssize_t)fatbin_size);
    close(fd);
    assert_cu_ok(cuLibraryLoadFromFile(&library, path, NULL, NULL, 0, NULL, NULL, 0));
    refuse_launches_of(library, "_Z6kernelPfi");
    assert_cu(cuLibraryGetKernel(&kernel, library, "_Z7missingv"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuLibraryUnload(library));
    unlink(path);

    /* cuModuleLoadData keeps refusing GPU code outright. */
    CUmodule module = NULL;
    assert_cu(cuModuleLoadData(&module, &wrapper), CUDA_ERROR_NO_BINARY_FOR_GPU);
}

/* A compressed payload cannot be read: then any name is taken as present. */
static void compressed_gpu_code_accepts_any_name(void **state)
{
    (void)state;
    unsigned char payload[256], fatbin[1024];
    memset(payload, 0xee, sizeof payload);
    make_fatbin(fatbin, 1, payload, sizeof payload, 0x8011, 200);
    CUlibrary library = NULL;
    assert_cu_ok(cuLibraryLoadData(&library, fatbin, NULL, NULL, 0, NULL, NULL, 0));
    refuse_launches_of(library, "_Z8anythingv");
    assert_cu_ok(cuLibraryUnload(library));
}

/* A zstd-compressed cubin (how the CUDA libraries ship theirs, flag 0x8000, its size at
 * +56 of the entry header) is read when no entry is plain: its kernels are named, and a
 * name it lacks is not found. */
static void zstd_compressed_cubins_are_read(void **state)
{
    (void)state;
    unsigned char cubin[4096], packed[4096], fatbin[8192];
    size_t cubin_size = make_cubin(cubin, gpu_kernels, 2);
    size_t packed_size = ZSTD_compress(packed, sizeof packed, cubin, cubin_size, 3);
    assert_false(ZSTD_isError(packed_size));
    make_fatbin(fatbin, 2, packed, packed_size, 0x8011, (uint32_t)packed_size);
    uint64_t inflated = cubin_size;
    memcpy(fatbin + 16 + offsetof(struct entry_header, uncompressed_size), &inflated, sizeof inflated);
    CUlibrary library = NULL;
    assert_cu_ok(cuLibraryLoadData(&library, fatbin, NULL, NULL, 0, NULL, NULL, 0));
    refuse_launches_of(library, "_Z6kernelPfi");
    refuse_launches_of(library, "_Z5otherv");
    CUkernel kernel = NULL;
    assert_cu(cuLibraryGetKernel(&kernel, library, "_Z8anythingv"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuLibraryUnload(library));
    /* a size that does not match what the frame holds: not read, so any name is taken */
    inflated = cubin_size + 8;
    memcpy(fatbin + 16 + offsetof(struct entry_header, uncompressed_size), &inflated, sizeof inflated);
    assert_cu_ok(cuLibraryLoadData(&library, fatbin, NULL, NULL, 0, NULL, NULL, 0));
    refuse_launches_of(library, "_Z8anythingv");
    assert_cu_ok(cuLibraryUnload(library));
}

#ifdef SIMCUDA_NVCC_FATBIN
/* The engine's own fatbin, built by nvcc: its cubins name the kernels (its PTX is
 * compressed). */
static void an_nvcc_fatbin_names_its_kernels(void **state)
{
    (void)state;
    CUlibrary library = NULL;
    assert_cu_ok(cuLibraryLoadFromFile(&library, SIMCUDA_NVCC_FATBIN, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel kernel = NULL;
    assert_cu_ok(cuLibraryGetKernel(&kernel, library, "tm_rmsnorm"));
    assert_cu(cuLibraryGetKernel(&kernel, library, "tm_no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuLibraryUnload(library));
}
#endif

static void hostile_images_are_refused(void **state)
{
    (void)state;
    unsigned char cubin[2048], fatbin[4096];
    size_t cubin_size = make_cubin(cubin, gpu_kernels, 2);
    size_t fatbin_size = make_fatbin(fatbin, 2, cubin, cubin_size, 0x11, 0);
    CUlibrary library = NULL;
    struct guarded g;

    /* The fatbin's size runs past the memory it lies in. */
    unsigned char bad[4096];
    memcpy(bad, fatbin, fatbin_size);
    uint64_t huge = 1ull << 29;
    memcpy(bad + 8, &huge, 8);
    guarded_place(&g, bad, fatbin_size);
    assert_cu(cuLibraryLoadData(&library, g.image, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
    guarded_free(&g);

    /* An entry's payload size runs past the fatbin. */
    memcpy(bad, fatbin, fatbin_size);
    uint64_t payload = 1ull << 40;
    memcpy(bad + 16 + 8, &payload, 8);
    assert_cu(cuLibraryLoadData(&library, bad, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);

    /* A wrapper pointing at memory that is not mapped. */
    unsigned char *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(gone != MAP_FAILED);
    munmap(gone, 4096);
    struct wrapper wrapper = { 0x466243B1u, 1, gone, NULL };
    assert_cu(cuLibraryLoadData(&library, &wrapper, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
    wrapper.data = NULL;
    assert_cu(cuLibraryLoadData(&library, &wrapper, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
    wrapper = (struct wrapper){ 0x466243B1u, 7, fatbin, NULL };
    assert_cu(cuLibraryLoadData(&library, &wrapper, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);

    /* A cubin whose symbol table links to no string table, or whose last name has no end. */
    unsigned char broken[2048];
    memcpy(broken, cubin, cubin_size);
    Elf64_Ehdr header;
    memcpy(&header, broken, sizeof header);
    Elf64_Shdr symtab;
    memcpy(&symtab, broken + header.e_shoff + 3 * sizeof(Elf64_Shdr), sizeof symtab);
    symtab.sh_link = 77;
    memcpy(broken + header.e_shoff + 3 * sizeof(Elf64_Shdr), &symtab, sizeof symtab);
    assert_cu(cuLibraryLoadData(&library, broken, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
    memcpy(broken, cubin, cubin_size);
    Elf64_Shdr strtab;
    memcpy(&strtab, broken + header.e_shoff + 2 * sizeof(Elf64_Shdr), sizeof strtab);
    memset(broken + strtab.sh_offset, 'x', strtab.sh_size); /* no NUL anywhere */
    assert_cu(cuLibraryLoadData(&library, broken, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
    memcpy(broken, cubin, cubin_size);
    header.e_shoff = 1ull << 50;
    memcpy(broken, &header, sizeof header);
    assert_cu(cuLibraryLoadData(&library, broken, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);

    /* PTX with no end before an inaccessible page. */
    char text[300];
    memset(text, ' ', sizeof text);
    memcpy(text, "//\n.visible .entry k", 20);
    guarded_place(&g, text, sizeof text);
    assert_cu(cuLibraryLoadData(&library, g.image, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
    guarded_free(&g);

    /* Every single-byte change and truncation of the fatbin, against a guard page: each
     * loads or is refused, none crashes. */
    srand(12345);
    int loaded = 0, refused = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(bad, fatbin, fatbin_size);
        size_t at = (size_t)rand() % fatbin_size;
        bad[at] = (unsigned char)rand();
        if (round % 3 == 0) { /* and a random word at a random place */
            uint32_t word = (uint32_t)rand() << 8;
            size_t where = (size_t)rand() % (fatbin_size - 4);
            memcpy(bad + where, &word, 4);
        }
        size_t size = round % 5 == 0 ? (size_t)rand() % fatbin_size + 1 : fatbin_size;
        guarded_place(&g, bad, size);
        CUresult rc = cuLibraryLoadData(&library, g.image, NULL, NULL, 0, NULL, NULL, 0);
        guarded_free(&g);
        assert_true(rc == CUDA_SUCCESS || rc == CUDA_ERROR_INVALID_IMAGE);
        if (rc == CUDA_SUCCESS) {
            loaded++;
            CUkernel kernel = NULL;
            rc = cuLibraryGetKernel(&kernel, library, "_Z6kernelPfi");
            assert_true(rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND);
            assert_cu_ok(cuLibraryUnload(library));
        } else {
            refused++;
        }
    }
    assert_true(loaded > 0 && refused > 0);
}

/* The 11.8 runtime loads fatbins itself through export table 2: slot 6 loads a wrapper as
 * a module of the current context, slot 7 unloads the module of that wrapper. */
static void the_runtimes_own_loader_makes_modules_of_gpu_code(void **state)
{
    (void)state;
    static const unsigned char runtime_table[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                                     0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };
    CUuuid id;
    memcpy(id.bytes, runtime_table, sizeof id.bytes);
    const void *slots = NULL;
    assert_cu_ok(cuGetExportTable(&slots, &id));
    CUresult (*load)(CUmodule *, const void *, void *, void *, size_t) =
        (CUresult(*)(CUmodule *, const void *, void *, void *, size_t))((void *const *)slots)[6];
    void (*unload)(const void *) = (void (*)(const void *))((void *const *)slots)[7];
    unsigned char cubin[2048], fatbin[4096];
    make_fatbin(fatbin, 2, cubin, make_cubin(cubin, gpu_kernels, 2), 0x11, 0);
    struct wrapper wrapper = { 0x466243B1u, 1, fatbin, NULL };
    CUmodule module = NULL;
    assert_cu_ok(load(&module, &wrapper, NULL, NULL, 0));
    CUfunction function = NULL;
    assert_cu_ok(cuModuleGetFunction(&function, module, "_Z6kernelPfi"));
    assert_cu(cuModuleGetFunction(&function, module, "_Z7missingv"), CUDA_ERROR_NOT_FOUND);
    assert_cu(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
    unload(&wrapper);
    assert_cu(cuModuleGetFunction(&function, module, "_Z6kernelPfi"), CUDA_ERROR_INVALID_HANDLE);
    static const char junk[32] = "not a fatbin wrapper";
    assert_cu(load(&module, junk, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
}

/* One line per refused kernel, however often it is launched. */
int child_gpu_launch_refused(void)
{
    CUdevice dev;
    child_start(&dev);
    unsigned char cubin[2048], fatbin[4096];
    size_t cubin_size = make_cubin(cubin, gpu_kernels, 2);
    make_fatbin(fatbin, 2, cubin, cubin_size, 0x11, 0);
    struct wrapper wrapper = { 0x466243B1u, 1, fatbin, NULL };
    CUlibrary library = NULL;
    child_expect_cu(cuLibraryLoadData(&library, &wrapper, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
    CUkernel first = NULL, second = NULL;
    child_expect_cu(cuLibraryGetKernel(&first, library, "_Z6kernelPfi"), CUDA_SUCCESS);
    child_expect_cu(cuLibraryGetKernel(&second, library, "_Z5otherv"), CUDA_SUCCESS);
    for (int i = 0; i < 3; i++)
        child_expect_cu(cuLaunchKernel((CUfunction)first, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                        CUDA_ERROR_NO_BINARY_FOR_GPU);
    __typeof__(cuLaunchKernel) *launch_ptsz = (__typeof__(cuLaunchKernel) *)dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz");
    child_expect(launch_ptsz != NULL, "cuLaunchKernel_ptsz is not exported");
    if (launch_ptsz)
        child_expect_cu(launch_ptsz((CUfunction)second, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                        CUDA_ERROR_NO_BINARY_FOR_GPU);
    child_expect_cu(cuLibraryUnload(library), CUDA_SUCCESS);
    return child_failures;
}

/* SIMCUDA_HOLD=1:PATH holds a launch of GPU code too: the refused launch waits until PATH
 * exists (a thread creates it 300 ms later), then answers CUDA_ERROR_NO_BINARY_FOR_GPU, so
 * a test can look at a program that cannot run its kernels once all before them is done. */
int child_gpu_launch_held(void)
{
    const char *path = held_child_path();
    CUdevice dev;
    if (!path || child_start(&dev))
        return child_failures + !path;
    unsigned char cubin[2048], fatbin[4096];
    make_fatbin(fatbin, 2, cubin, make_cubin(cubin, gpu_kernels, 2), 0x11, 0);
    struct wrapper wrapper = { 0x466243B1u, 1, fatbin, NULL };
    CUlibrary library = NULL;
    CUkernel kernel = NULL;
    child_expect_cu(cuLibraryLoadData(&library, &wrapper, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
    child_expect_cu(cuLibraryGetKernel(&kernel, library, "_Z6kernelPfi"), CUDA_SUCCESS);
    pthread_t thread;
    child_expect(pthread_create(&thread, NULL, create_file_later, (void *)path) == 0, "a thread");
    double t0 = now_ms();
    child_expect_cu(cuLaunchKernel((CUfunction)kernel, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                    CUDA_ERROR_NO_BINARY_FOR_GPU);
    double t1 = now_ms();
    pthread_join(thread, NULL);
    child_expect(t1 - t0 >= 250, "the refused launch answered after %.0f ms, before the file appeared", t1 - t0);
    /* the second launch is not held */
    child_expect_cu(cuLaunchKernel((CUfunction)kernel, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                    CUDA_ERROR_NO_BINARY_FOR_GPU);
    child_expect(now_ms() - t1 < 250, "the second launch waited");
    child_expect_cu(cuLibraryUnload(library), CUDA_SUCCESS);
    unlink(path);
    return child_failures;
}

static void a_launch_of_gpu_code_is_held(void **state)
{
    (void)state;
    assert_held_child_passes("gpu_launch_held", 1);
}

static int count_lines(const char *text, const char *line)
{
    int n = 0;
    for (const char *at = strstr(text, line); at; at = strstr(at + 1, line))
        n++;
    return n;
}

static void a_refused_kernel_is_named_once(void **state)
{
    (void)state;
    char output[4096];
    assert_int_equal(run_child("gpu_launch_refused", NULL, output, sizeof output), 0);
    /* Demangled where __cxa_demangle is loaded (the sanitizer runtime has one), else the
     * mangled name alone. */
    const char *demangled = "simcuda: kernel _Z6kernelPfi (kernel(float*, int)) has no host code: GPU code "
                            "cannot run here (CUDA_ERROR_NO_BINARY_FOR_GPU)\n";
    const char *mangled = "simcuda: kernel _Z6kernelPfi has no host code: GPU code cannot run here "
                          "(CUDA_ERROR_NO_BINARY_FOR_GPU)\n";
    assert_int_equal(count_lines(output, demangled) + count_lines(output, mangled), 1);
    assert_int_equal(count_lines(output, "simcuda: kernel _Z5otherv "), 1);
}

int run_simcuda_library_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(host_library_from_a_file_runs_its_kernels),
        conformance_test(host_library_from_bytes_outlives_a_context_reset),
        conformance_test(kernel_attributes_read_like_a_gpus),
        conformance_test(gpu_code_loads_names_its_kernels_and_refuses_to_run),
        conformance_test(compressed_gpu_code_accepts_any_name),
        conformance_test(zstd_compressed_cubins_are_read),
        conformance_test(hostile_images_are_refused),
        conformance_test(the_runtimes_own_loader_makes_modules_of_gpu_code),
        conformance_test(a_refused_kernel_is_named_once),
        conformance_test(a_launch_of_gpu_code_is_held),
    };
    int failed = cmocka_run_group_tests_name("simcuda libraries and kernels", tests, setup_primary_context,
                                             teardown_primary_context);
#ifdef SIMCUDA_NVCC_FATBIN
    const struct CMUnitTest nvcc_tests[] = { conformance_test(an_nvcc_fatbin_names_its_kernels) };
    failed += cmocka_run_group_tests_name("simcuda libraries of nvcc's GPU code", nvcc_tests, setup_primary_context,
                                          teardown_primary_context);
#else
    printf("1..1\nok 1 - an_nvcc_fatbin_names_its_kernels # SKIP no nvcc when this was built: no fatbin of "
           "the engine's kernels to read\n");
    fflush(stdout);
#endif
    return failed;
}
