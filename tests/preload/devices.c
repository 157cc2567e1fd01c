/* devices.c — a process that uses two devices, as a tensor-parallel worker does, and
 * prints TAP. Run with SIMCUDA_DEVICES=2.
 *
 *   devices stray SIZE   a stray context on device 0 (one small allocation there, as a
 *                        runtime's first touch of the default device does), then SIZE
 *                        bytes on device 1, written and read back through device 1's context
 *   devices both SIZE    SIZE bytes on each device, each checked through its own context
 *   devices peer SIZE    SIZE bytes on device 1, read from device 0's context: refused
 *                        before cuCtxEnablePeerAccess, then read right, and an allocation
 *                        made after it too
 *
 * Every mode ends with "ready" and waits for the file named last to appear (the test
 * reads the stats region meanwhile), then frees everything. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/preload/probe_util.h"

static int tap_count, tap_failed;

static void check(bool ok, const char *what)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++tap_count, what);
    tap_failed += !ok;
}

static uint8_t pattern(size_t at, uint32_t seed)
{
    return (uint8_t)((at * 131u) ^ (at >> 12) ^ seed);
}

/* Writes the pattern into [dptr, dptr + bytes) through the current context. */
static CUresult fill(CUdeviceptr dptr, size_t bytes, uint32_t seed)
{
    uint8_t *host = malloc(bytes);
    if (!host)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < bytes; i++)
        host[i] = pattern(i, seed);
    CUresult result = cuMemcpyHtoD(dptr, host, bytes);
    free(host);
    return result;
}

/* Reads it back through the current context: the copy's result, *same when every byte is. */
static CUresult read_back(CUdeviceptr dptr, size_t bytes, uint32_t seed, bool *same)
{
    uint8_t *host = malloc(bytes);
    *same = false;
    if (!host)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = cuMemcpyDtoH(host, dptr, bytes);
    if (result == CUDA_SUCCESS) {
        *same = true;
        for (size_t i = 0; i < bytes && *same; i++)
            *same = host[i] == pattern(i, seed);
    }
    free(host);
    return result;
}

static CUcontext primary(int ordinal)
{
    CUdevice device;
    CUcontext ctx;
    CHECK(cuDeviceGet(&device, ordinal));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
    return ctx;
}

static void wait_for(const char *go)
{
    printf("ready\n");
    while (access(go, F_OK) != 0)
        usleep(20000);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 4 || (strcmp(argv[1], "stray") && strcmp(argv[1], "both") && strcmp(argv[1], "peer"))) {
        fprintf(stderr, "usage: devices stray|both|peer SIZE GO-FILE\n");
        return 1;
    }
    size_t size = probe_parse_size(argv[2]);
    CHECK(cuInit(0));
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    check(count == 2, "the driver has two devices");
    if (count != 2)
        return 1;
    CUcontext ctx0 = primary(0), ctx1 = primary(1);
    CUdeviceptr stray = 0, on0 = 0, on1 = 0, late = 0;
    bool same = false;

    CHECK(cuCtxSetCurrent(ctx0));
    if (!strcmp(argv[1], "stray")) {
        CHECK(cuMemAlloc(&stray, 4096));
    } else if (!strcmp(argv[1], "both")) {
        CHECK(cuMemAlloc(&on0, size));
        check(fill(on0, size, 7) == CUDA_SUCCESS && read_back(on0, size, 7, &same) == CUDA_SUCCESS && same,
              "device 0's allocation holds its data");
    }
    CHECK(cuCtxSetCurrent(ctx1));
    CHECK(cuMemAlloc(&on1, size));
    check(fill(on1, size, 9) == CUDA_SUCCESS && read_back(on1, size, 9, &same) == CUDA_SUCCESS && same,
          "device 1's allocation holds its data, through device 1's context");
    int ordinal = -1;
    CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, on1));
    check(ordinal == 1, "its pointer attributes name device 1");

    if (!strcmp(argv[1], "peer")) {
        CHECK(cuCtxSetCurrent(ctx0));
        int can = 0;
        CHECK(cuDeviceCanAccessPeer(&can, 0, 1));
        check(can == 1, "device 0 can reach device 1");
        CUresult before = read_back(on1, size, 9, &same);
        printf("# from device 0 before peer access: %s\n", probe_error_name(before));
        CHECK(cuCtxEnablePeerAccess(ctx1, 0));
        check(read_back(on1, size, 9, &same) == CUDA_SUCCESS && same,
              "with peer access, device 0 reads device 1's allocation right");
        CHECK(cuCtxSetCurrent(ctx1));
        CHECK(cuMemAlloc(&late, size));
        check(fill(late, size, 11) == CUDA_SUCCESS, "an allocation on device 1 after peer access was enabled");
        CHECK(cuCtxSetCurrent(ctx0));
        check(read_back(late, size, 11, &same) == CUDA_SUCCESS && same, "device 0 reads that one too");
        printf("behaviour: before peer access: %s\n", probe_error_name(before));
    }

    wait_for(argv[3]);
    CHECK(cuCtxSetCurrent(ctx0));
    if (stray)
        CHECK(cuMemFree(stray));
    if (on0)
        CHECK(cuMemFree(on0));
    CHECK(cuCtxSetCurrent(ctx1));
    CHECK(cuMemFree(on1));
    if (late)
        CHECK(cuMemFree(late));
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}
