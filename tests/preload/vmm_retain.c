/* vmm_retain.c — cuMemRetainAllocationHandle as a program uses it, one line per answer:
 *
 *   vmm_retain SIZE
 *       a cuMemAlloc of 8 MiB: "chunked: retain RESULT", then "chunked: bytes ok" once a
 *       round trip through it checked every byte;
 *       then a cuMemCreate of SIZE at the device, mapped, twice:
 *       A retains it from an address inside the mapping and releases the created handle,
 *       B releases the created handle first (the mapping keeps the memory) and retains it;
 *       for each, "X: retain RESULT same HANDLE_EQUAL location TYPE", then the bytes the
 *       process's tiers hold beyond what they held before the cuMemCreate, once it is
 *       unmapped ("X: used while retained N") and after the retained handle's release
 *       ("X: used after release N").
 *
 * Exit status: 0 when every call it needed succeeded (the answers are the test's to judge). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/preload/probe_util.h"
#include "tools/tiermem-stat/stats_read.h"

/* Bytes the tiers of this process's stats region hold now; -1 without one. */
static long long tiers_used(void)
{
    char region[64], why[256];
    tm_stats_snapshot s;
    tm_stats_default_path(getpid(), region, sizeof region);
    if (tm_stats_read(region, &s, why, sizeof why) != 0)
        return -1;
    unsigned long long used = 0;
    for (int t = 0; t < TM_STATS_TIERS; t++)
        used += s.header.tier[t].used;
    tm_stats_snapshot_free(&s);
    return (long long)used;
}

static const char *location_name(CUmemLocationType type)
{
    return type == CU_MEM_LOCATION_TYPE_DEVICE ? "DEVICE" : type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? "HOST_NUMA" : "other";
}

/* One handle of `size` mapped at `va`, released before the retain (`release_first`) or after. */
static void retain_case(const char *name, CUdeviceptr va, size_t size, bool release_first)
{
    CUmemAllocationProp prop;
    size_t granularity = probe_device_prop(&prop);
    CUmemGenericAllocationHandle created, retained = 0;
    long long before = tiers_used();
    CHECK(cuMemCreate(&created, size, &prop, 0));
    CHECK(cuMemMap(va, size, 0, created, 0));
    CUmemAccessDesc access = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                               .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CHECK(cuMemSetAccess(va, size, &access, 1));
    if (release_first)
        CHECK(cuMemRelease(created));
    CUresult r = cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)(va + granularity / 2 + 100));
    if (!release_first)
        CHECK(cuMemRelease(created));
    CUmemAllocationProp seen;
    memset(&seen, 0, sizeof seen);
    if (r == CUDA_SUCCESS)
        CHECK(cuMemGetAllocationPropertiesFromHandle(&seen, retained));
    printf("%s: retain %s same %s location %s\n", name, probe_error_name(r), retained == created ? "yes" : "no",
           location_name(seen.location.type));
    CHECK(cuMemUnmap(va, size));
    printf("%s: used while retained %lld\n", name, tiers_used() - before);
    if (r == CUDA_SUCCESS)
        CHECK(cuMemRelease(retained));
    printf("%s: used after release %lld\n", name, tiers_used() - before);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: vmm_retain SIZE\n");
        return 1;
    }
    probe_init();
    CUdeviceptr chunked;
    CHECK(cuMemAlloc(&chunked, (size_t)8 << 20));
    CUmemGenericAllocationHandle handle;
    printf("chunked: retain %s\n",
           probe_error_name(cuMemRetainAllocationHandle(&handle, (void *)(uintptr_t)(chunked + 4096))));
    if (probe_round_trip(chunked, (size_t)8 << 20, 5))
        return 4;
    printf("chunked: bytes ok\n");
    CHECK(cuMemFree(chunked));

    CUmemAllocationProp prop;
    size_t granularity = probe_device_prop(&prop);
    size_t size = (probe_parse_size(argv[1]) + granularity - 1) / granularity * granularity;
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, size, granularity, 0, 0));
    retain_case("A", va, size, false);
    retain_case("B", va, size, true);
    CHECK(cuMemAddressFree(va, size));
    return 0;
}
