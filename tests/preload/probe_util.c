/* probe_util.c — see probe_util.h. */
#include "tests/preload/probe_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TM_TEST_KERNELS
#error "TM_TEST_KERNELS names the test kernel module"
#endif

const char *probe_error_name(CUresult result)
{
    const char *name = NULL;
    if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
        return "an unknown error";
    return name;
}

size_t probe_parse_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    switch (*end) {
    case 'K': v <<= 10; break;
    case 'M': v <<= 20; break;
    case 'G': v <<= 30; break;
    default: break;
    }
    return (size_t)v;
}

size_t probe_device_prop(CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = 0;
    size_t granularity;
    CHECK(cuMemGetAllocationGranularity(&granularity, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return granularity;
}

void probe_check(CUresult result, const char *what, const char *file, int line)
{
    if (result == CUDA_SUCCESS)
        return;
    fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, probe_error_name(result));
    exit(3);
}

CUcontext probe_init(void)
{
    CUdevice device;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
    CHECK(cuCtxSetCurrent(ctx));
    return ctx;
}

CUfunction probe_kernel(void)
{
    static __thread CUfunction kernel;
    static __thread CUcontext loaded_in; /* a module goes with its context */
    CUcontext current = NULL;
    cuCtxGetCurrent(&current);
    if (!kernel || current != loaded_in) {
        loaded_in = current;
        CUmodule module;
        CHECK(cuModuleLoad(&module, TM_TEST_KERNELS));
        CHECK(cuModuleGetFunction(&kernel, module, "add_bytes"));
    }
    return kernel;
}

static uint8_t pattern(size_t i, uint32_t seed)
{
    return (uint8_t)(i * 31u + seed * 17u + (i >> 12) * 7u);
}

static uint32_t delta_of(uint32_t seed)
{
    return seed % 251u + 1u;
}

/* Reads the range back in pieces and compares with the pattern plus the delta. */
static int compare(CUdeviceptr dptr, size_t bytes, uint32_t seed)
{
    enum { PIECE = 4 << 20 };
    uint8_t *host = malloc(bytes < PIECE ? bytes : PIECE);
    if (!host)
        return 1;
    uint32_t delta = delta_of(seed);
    for (size_t at = 0; at < bytes; at += PIECE) {
        size_t n = bytes - at < PIECE ? bytes - at : PIECE;
        CHECK(cuMemcpyDtoH(host, dptr + at, n));
        for (size_t i = 0; i < n; i++) {
            uint8_t want = (uint8_t)(pattern(at + i, seed) + delta);
            if (host[i] != want) {
                printf("wrong byte at 0x%llx + %zu: 0x%02x, expected 0x%02x\n", (unsigned long long)dptr, at + i,
                       host[i], want);
                free(host);
                return 1;
            }
        }
    }
    free(host);
    return 0;
}

int probe_round_trip(CUdeviceptr dptr, size_t bytes, uint32_t seed)
{
    enum { PIECE = 4 << 20 };
    uint8_t *host = malloc(bytes < PIECE ? bytes : PIECE);
    if (!host)
        return 1;
    for (size_t at = 0; at < bytes; at += PIECE) {
        size_t n = bytes - at < PIECE ? bytes - at : PIECE;
        for (size_t i = 0; i < n; i++)
            host[i] = pattern(at + i, seed);
        CHECK(cuMemcpyHtoD(dptr + at, host, n));
    }
    free(host);
    uint64_t n = bytes;
    uint32_t delta = delta_of(seed);
    void *params[] = { &dptr, &n, &delta };
    CHECK(cuLaunchKernel(probe_kernel(), 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CHECK(cuCtxSynchronize());
    return compare(dptr, bytes, seed);
}

int probe_verify(CUdeviceptr dptr, size_t bytes, uint32_t seed)
{
    return compare(dptr, bytes, seed);
}
