/* doors.c — reaches cuMemAlloc/cuMemFree through every door a CUDA program has, and
 * prints TAP: the direct symbol, dlsym on RTLD_DEFAULT, RTLD_NEXT and a dlopen handle,
 * glibc's dlsym and dlvsym as dlvsym gives them by version (and dlvsym of driver names),
 * cuGetProcAddress_v2 with CUDA 12.0 and 13.0 and each flag (with and without a status),
 * the 11.3 cuGetProcAddress, and the engine's way (dlopen, dlsym cuGetProcAddress_v2,
 * resolve everything through it).
 *
 *   doors interposed   every door must give libtiermem's wrapper, and each allocation
 *                      must show in the stats region with the wrapper's own counters
 *   doors direct       every door must give the driver's function
 *
 * Either way every door must behave the same: each prints a "behaviour:" line the test
 * compares between the two runs. */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/preload/probe_util.h"
#include "tools/tiermem-stat/stats_read.h"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*resolve_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);
typedef CUresult (*resolve_v1_fn)(const char *, void **, int, cuuint64_t);

static int tap_count, tap_failed;
static bool interposed;
static void *driver;

static void check(bool ok, const char *fmt, const char *name)
{
    printf("%s %d - ", ok ? "ok" : "not ok", ++tap_count);
    printf(fmt, name);
    printf("\n");
    tap_failed += !ok;
}

static bool in_interposer(void *fn)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, "libtiermem");
}

/* The stats record of a live allocation of exactly `size` bytes, in our own region. */
static bool recorded(size_t size)
{
    char path[64], why[256];
    tm_stats_snapshot s;
    tm_stats_default_path(getpid(), path, sizeof path);
    if (tm_stats_read(path, &s, why, sizeof why) != 0)
        return false;
    bool found = false;
    for (size_t i = 0; i < s.record_count; i++)
        found |= s.records[i].size == size && s.records[i].path == TM_PATH_MEM_ALLOC;
    tm_stats_snapshot_free(&s);
    return found;
}

static unsigned long long calls_of(const char *symbol)
{
    char path[64], why[256];
    tm_stats_snapshot s;
    tm_stats_default_path(getpid(), path, sizeof path);
    if (tm_stats_read(path, &s, why, sizeof why) != 0)
        return 0;
    unsigned long long calls = tm_stats_calls_of(&s, symbol);
    tm_stats_snapshot_free(&s);
    return calls;
}

/* Uses one door's pair of functions: a chunked allocation of a size no other door uses. */
static void walk_through(const char *door, void *alloc, void *release, int index)
{
    char name[160];
    snprintf(name, sizeof name, "%s gives %s", door, interposed ? "the interposer's wrapper" : "the driver's function");
    check(alloc && release && in_interposer(alloc) == interposed && in_interposer(release) == interposed, "%s",
          name);
    if (!alloc || !release)
        return;
    size_t size = ((size_t)4 << 20) + (size_t)index * (2 << 20) + 4096;
    CUdeviceptr p = 0;
    CUresult a = ((alloc_fn)alloc)(&p, size);
    int data = a == CUDA_SUCCESS ? probe_round_trip(p, size, (uint32_t)index) : -1;
    if (interposed) {
        snprintf(name, sizeof name, "%s reaches the wrapper (its allocation is in the stats)", door);
        check(a == CUDA_SUCCESS && recorded(size), "%s", name);
    }
    CUresult f = a == CUDA_SUCCESS ? ((free_fn)release)(p) : CUDA_ERROR_INVALID_VALUE;
    if (interposed) {
        snprintf(name, sizeof name, "%s frees through the wrapper", door);
        check(f == CUDA_SUCCESS && !recorded(size), "%s", name);
    }
    printf("behaviour: %s: alloc %s, data %s, free %s\n", door, probe_error_name(a), data == 0 ? "same" : "WRONG",
           probe_error_name(f));
}

static void resolver_doors(const char *label, resolve_v2_fn resolve, int index)
{
    static const struct {
        const char *name;
        cuuint64_t value;
    } flags[] = {
        { "DEFAULT", CU_GET_PROC_ADDRESS_DEFAULT },
        { "LEGACY_STREAM", CU_GET_PROC_ADDRESS_LEGACY_STREAM },
        { "PER_THREAD_DEFAULT_STREAM", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM },
    };
    static const int versions[] = { 12000, 13000 };
    for (int v = 0; v < 2; v++) {
        for (int f = 0; f < 3; f++) {
            for (int with_status = 0; with_status < 2; with_status++) {
                void *alloc = NULL, *release = NULL;
                CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
                CUdriverProcAddressQueryResult *s = with_status ? &status : NULL;
                CUresult r1 = resolve("cuMemAlloc", &alloc, versions[v], flags[f].value, s);
                CUresult r2 = resolve("cuMemFree", &release, versions[v], flags[f].value, s);
                char door[160];
                snprintf(door, sizeof door, "%s(cudaVersion %d, %s, %s status)", label, versions[v], flags[f].name,
                         with_status ? "with" : "NULL");
                if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS || (with_status && status != CU_GET_PROC_ADDRESS_SUCCESS))
                    alloc = release = NULL;
                walk_through(door, alloc, release, index++);
            }
        }
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || (strcmp(argv[1], "interposed") && strcmp(argv[1], "direct"))) {
        fprintf(stderr, "usage: doors interposed|direct\n");
        return 1;
    }
    interposed = strcmp(argv[1], "interposed") == 0;
    probe_init();
    driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver) {
        printf("not ok 1 - dlopen libcuda.so.1: %s\n1..1\n", dlerror());
        return 1;
    }

    /* the linker's door, and dlsym's */
    walk_through("the direct symbol", (void *)&cuMemAlloc_v2, (void *)&cuMemFree_v2, 0);
    walk_through("dlsym(RTLD_DEFAULT)", dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), dlsym(RTLD_DEFAULT, "cuMemFree_v2"), 1);
    walk_through("dlsym(RTLD_NEXT)", dlsym(RTLD_NEXT, "cuMemAlloc_v2"), dlsym(RTLD_NEXT, "cuMemFree_v2"), 2);
    walk_through("dlsym(dlopen handle)", dlsym(driver, "cuMemAlloc_v2"), dlsym(driver, "cuMemFree_v2"), 3);

    /* dlvsym, and glibc's own lookups as runtimes that look past interposers find them */
#if defined(__aarch64__)
    const char *glibc_base = "GLIBC_2.17";
#else
    const char *glibc_base = "GLIBC_2.2.5";
#endif
    /* the driver defines no symbol versions: glibc finds none, and neither may we */
    printf("behaviour: dlvsym(dlopen handle, cuMemAlloc_v2): %s\n",
           dlvsym(driver, "cuMemAlloc_v2", "libcuda.so.1") ? "found" : "NULL");
    printf("behaviour: dlvsym(RTLD_NEXT, cuMemAlloc_v2): %s\n",
           dlvsym(RTLD_NEXT, "cuMemAlloc_v2", "libcuda.so.1") ? "found" : "NULL");
    void *libc = dlopen(LIBC_SO, RTLD_NOW | RTLD_NOLOAD);
    dlsym_fn newest = libc ? (dlsym_fn)dlvsym(libc, "dlsym", "GLIBC_2.34") : NULL;
    dlsym_fn oldest = libc ? (dlsym_fn)dlvsym(libc, "dlsym", glibc_base) : NULL;
    dlvsym_fn by_version = libc ? (dlvsym_fn)dlvsym(libc, "dlvsym", glibc_base) : NULL;
    walk_through("dlvsym(libc, dlsym, GLIBC_2.34)->", newest ? newest(driver, "cuMemAlloc_v2") : NULL,
                 newest ? newest(driver, "cuMemFree_v2") : NULL, 62);
    walk_through("dlvsym(libc, dlsym, base version)->", oldest ? oldest(driver, "cuMemAlloc_v2") : NULL,
                 oldest ? oldest(driver, "cuMemFree_v2") : NULL, 63);
    dlsym_fn through = by_version ? (dlsym_fn)by_version(libc, "dlsym", "GLIBC_2.34") : NULL;
    walk_through("dlvsym(libc, dlvsym, base version)->(libc, dlsym, GLIBC_2.34)->",
                 through ? through(driver, "cuMemAlloc_v2") : NULL, through ? through(driver, "cuMemFree_v2") : NULL,
                 64);
    check(newest && oldest && newest(RTLD_DEFAULT, "printf") == dlsym(RTLD_DEFAULT, "printf") &&
              oldest(libc, "puts") == dlsym(libc, "puts"),
          "%s", "glibc's dlsym as dlvsym gives it answers other names as glibc does");
    if (libc)
        dlclose(libc);

    /* the resolvers, each as a program would find it */
    resolver_doors("cuGetProcAddress_v2", cuGetProcAddress_v2, 10);
    resolve_v2_fn engine_resolver = (resolve_v2_fn)dlsym(driver, "cuGetProcAddress_v2");
    check(engine_resolver && in_interposer((void *)engine_resolver) == interposed,
          "%s", "dlsym(dlopen handle, cuGetProcAddress_v2) gives the resolver of the right side");
    if (engine_resolver)
        resolver_doors("engine: dlsym(handle, cuGetProcAddress_v2)->", engine_resolver, 30);
    resolve_v1_fn resolver_v1 = (resolve_v1_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress");
    void *alloc = NULL, *release = NULL;
    if (resolver_v1) {
        resolver_v1("cuMemAlloc", &alloc, 11030, CU_GET_PROC_ADDRESS_DEFAULT);
        resolver_v1("cuMemFree", &release, 11030, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    walk_through("cuGetProcAddress (11.3 ABI)", alloc, release, 50);

    /* the resolver answers with the same ABI as the driver, whatever the name */
    void *fn = NULL, *fn2 = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress_v2("cuMemAlloc", &fn, 2000, 0, &status));
    check(fn == dlsym(driver, "cuMemAlloc") && !in_interposer(fn), "%s",
          "cudaVersion 2000 gives the 32-bit cuMemAlloc of the driver, untouched");
    CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
    CHECK(cuGetProcAddress_v2("cuMemAllocAsync", &fn2, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status));
    check(fn == dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz") && fn2 == dlsym(RTLD_DEFAULT, "cuMemAllocAsync") && fn != fn2,
          "%s", "the per-thread flag gives the _ptsz form, the legacy flag the plain one");
    CHECK(cuGetProcAddress_v2("cuStreamSynchronize", &fn, 12000, 0, &status));
    check(fn == dlsym(driver, "cuStreamSynchronize") && !in_interposer(fn), "%s",
          "a function the interposer does not hook comes straight from the driver");
    CHECK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 12000, 0, &status));
    check(in_interposer(fn) == interposed, "%s", "asking the resolver for itself gives the resolver of the right side");
    fn = (void *)1;
    status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult unknown = cuGetProcAddress_v2("cuNoSuchFunction", &fn, 12000, 0, &status);
    printf("behaviour: unknown symbol: %s, status %d, pfn %s\n", probe_error_name(unknown), (int)status,
           fn ? "set" : "NULL");
    unknown = cuGetProcAddress_v2("cuNoSuchFunction", &fn, 12000, 0, NULL);
    printf("behaviour: unknown symbol, NULL status: %s\n", probe_error_name(unknown));
    check(dlsym(RTLD_DEFAULT, "printf") != NULL && dlsym(driver, "cuNoSuchFunction") == NULL, "%s",
          "dlsym of other names answers as glibc does");

    if (interposed) {
        /* 4 doors of the linker and dlsym, 3 of glibc's dlsym as dlvsym gives it, 24 through
         * cuGetProcAddress_v2, 1 through the 11.3 ABI */
        check(calls_of("cuGetProcAddress_v2") >= 48 && calls_of("cuGetProcAddress") >= 2 &&
                  calls_of("cuMemAlloc_v2") == 32 && calls_of("cuMemFree_v2") == 32,
              "%s", "the wrappers counted their calls in the stats region");
    }
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}
