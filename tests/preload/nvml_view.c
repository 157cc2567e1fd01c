/* nvml_view.c — see nvml_view.h. */
#include "tests/preload/nvml_view.h"

#include <stdio.h>
#include <string.h>

#include "tests/preload/probe_util.h"

static int nvml_fail(const char *call, nvmlReturn_t result)
{
    printf("FAIL: %s: NVML error %d\n", call, (int)result);
    return 3;
}

#define NVML_CHECK(call)                           \
    do {                                           \
        nvmlReturn_t nvml_result_ = (call);        \
        if (nvml_result_ != NVML_SUCCESS)          \
            return nvml_fail(#call, nvml_result_); \
    } while (0)

static int nvml_memory(const nvml_calls *calls, nvmlDevice_t device, nvmlMemory_t *v1, nvmlMemory_v2_t *v2)
{
    NVML_CHECK(calls->memory_info(device, v1));
    memset(v2, 0, sizeof *v2);
    v2->version = nvmlMemory_v2;
    NVML_CHECK(calls->memory_info_v2(device, v2));
    if (v1->used + v1->free != v1->total || v2->used + v2->free + v2->reserved != v2->total) {
        printf("FAIL: used and free do not add up to the total\n");
        return 4;
    }
    return 0;
}

static int print_info(const nvml_calls *calls, nvmlDevice_t device)
{
    size_t free, total;
    nvmlMemory_t v1;
    nvmlMemory_v2_t v2;
    CHECK(cuMemGetInfo(&free, &total));
    int status = nvml_memory(calls, device, &v1, &v2);
    if (status)
        return status;
    printf("info %zu %zu %llu %llu %llu %llu\n", free, total, v1.free, v1.total, v2.free, v2.total);
    return 0;
}

int nvml_view_run(const nvml_calls *calls, int count, char **sizes)
{
    nvmlDevice_t device, by_bus_id;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    NVML_CHECK(calls->init());
    NVML_CHECK(calls->handle_by_index(0, &device));
    NVML_CHECK(calls->handle_by_bus_id("00000000:01:00.0", &by_bus_id));
    NVML_CHECK(calls->name(device, name, sizeof name));
    printf("device %s%s\n", name, device == by_bus_id ? "" : " (another handle by PCI bus id)");

    CUdevice cu_device;
    size_t before_total;
    nvmlMemory_t v1;
    nvmlMemory_v2_t v2;
    int status = nvml_memory(calls, device, &v1, &v2); /* as vLLM asks, before CUDA starts */
    if (status)
        return status;
    printf("early %llu %llu\n", v1.total, v1.free);
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&cu_device, 0));
    CHECK(cuDeviceTotalMem(&before_total, cu_device));
    status = nvml_memory(calls, device, &v1, &v2);
    if (status)
        return status;
    printf("before %zu %llu %llu %llu %llu\n", before_total, v1.total, v1.free, v2.total, v2.free);

    probe_init();
    if ((status = print_info(calls, device)) != 0)
        return status;
    CUdeviceptr p[16];
    int n = count < 16 ? count : 16;
    for (int i = 0; i < n; i++) {
        CHECK(cuMemAlloc(&p[i], probe_parse_size(sizes[i])));
        if ((status = print_info(calls, device)) != 0)
            return status;
    }
    for (int i = 0; i < n; i++)
        CHECK(cuMemFree(p[i]));
    if ((status = print_info(calls, device)) != 0)
        return status;
    NVML_CHECK(calls->shutdown());
    return 0;
}
