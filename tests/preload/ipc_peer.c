/* ipc_peer.c — one side of a legacy CUDA IPC exchange, as tensor-parallel workers do it:
 *
 *   ipc_peer export SIZE DIR   allocates SIZE (cuMemAlloc), writes pattern A, puts the
 *                              handle in DIR/handle, waits for DIR/imported, checks the
 *                              importer's pattern B, waits for DIR/finish, frees
 *   ipc_peer import DIR [forge|huge|again]
 *                              opens DIR/handle (twice), checks pattern A (`again`: B, an
 *                              earlier importer's), writes B, creates DIR/imported, waits
 *                              for DIR/close, closes twice, then closes once more and opens
 *                              again
 *
 * Every step prints one line the shell test reads. Both sides count their open
 * descriptors, to show that nothing leaks; the exporter tries tiermem_migrate before and
 * after the export (an exported allocation's chunks stay where they are). Exit status 0 when
 * every check of its side passed. `forge` changes a byte of the handle's nonce first;
 * `huge` sets the handle's size field to 2^62.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include "tests/preload/probe_util.h"

#define SEED_EXPORTER 11u
#define SEED_IMPORTER 77u

static char path_buf[4096];

static const char *in_dir(const char *dir, const char *name)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
    return path_buf;
}

/* Waits up to 60 s for a file the other side (or the test) creates. */
static int wait_for(const char *dir, const char *name)
{
    for (int i = 0; i < 6000; i++) {
        struct stat st;
        if (stat(in_dir(dir, name), &st) == 0)
            return 0;
        usleep(10000);
    }
    fprintf(stderr, "timed out waiting for %s\n", in_dir(dir, name));
    return 1;
}

static void touch(const char *dir, const char *name)
{
    FILE *f = fopen(in_dir(dir, name), "w");
    if (f)
        fclose(f);
}

static uint32_t word(size_t i, uint32_t seed)
{
    return (uint32_t)i * 2654435761u + seed;
}

static void put_pattern(CUdeviceptr ptr, size_t bytes, uint32_t seed)
{
    uint32_t *host = malloc(bytes);
    for (size_t i = 0; i < bytes / 4; i++)
        host[i] = word(i, seed);
    CHECK(cuMemcpyHtoD(ptr, host, bytes));
    free(host);
}

/* 1 when the memory holds the pattern, 0 (said where) when not. */
static int has_pattern(CUdeviceptr ptr, size_t bytes, uint32_t seed)
{
    uint32_t *host = malloc(bytes);
    CHECK(cuMemcpyDtoH(host, ptr, bytes));
    size_t i = 0;
    while (i < bytes / 4 && host[i] == word(i, seed))
        i++;
    if (i < bytes / 4)
        printf("word %zu is %#x, expected %#x\n", i, host[i], word(i, seed));
    free(host);
    return i == bytes / 4;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n - 1; /* the directory's own */
}

/* tiermem_migrate of the first 2 MiB to CXL, when libtiermem.so is there. */
static const char *migrate_start(CUdeviceptr ptr)
{
    typedef CUresult (*migrate_fn)(CUdeviceptr, size_t, const char *);
    migrate_fn migrate = (migrate_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "tiermem_migrate");
    return migrate ? probe_error_name(migrate(ptr, (size_t)2 << 20, "cxl")) : "absent";
}

static int export_side(size_t bytes, const char *dir)
{
    probe_init();
    CUdeviceptr ptr;
    CHECK(cuMemAlloc(&ptr, bytes));
    put_pattern(ptr, bytes, SEED_EXPORTER);
    printf("exporter: migrate before export %s\n", migrate_start(ptr));
    int capable = -1;
    CHECK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, ptr));
    printf("exporter: capable %d\n", capable);
    CUipcMemHandle handle;
    CHECK(cuIpcGetMemHandle(&handle, ptr));
    char magic[8];
    memcpy(magic, handle.reserved, 7);
    magic[7] = '\0';
    for (int i = 0; i < 7; i++)
        if (magic[i] < 0x20 || magic[i] > 0x7e)
            magic[i] = '.';
    FILE *f = fopen(in_dir(dir, "handle.tmp"), "w");
    if (!f || fwrite(&handle, sizeof handle, 1, f) != 1 || fclose(f) != 0)
        return 3;
    char done[4096];
    snprintf(done, sizeof done, "%s", in_dir(dir, "handle"));
    rename(in_dir(dir, "handle.tmp"), done); /* whole when the importer sees it */
    int fds_before = open_fds();
    printf("exporter: migrate after export %s\n", migrate_start(ptr));
    printf("exporter: pid %d capable %d handle %s\n", (int)getpid(), capable, magic);
    fflush(stdout);
    int failed = wait_for(dir, "imported");
    int seen = !failed && has_pattern(ptr, bytes, SEED_IMPORTER);
    printf("exporter: importer's bytes %s\n", seen ? "ok" : "wrong");
    fflush(stdout);
    failed |= wait_for(dir, "finish");
    printf("exporter: descriptors before %d after %d\n", fds_before, open_fds());
    CHECK(cuMemFree(ptr));
    return failed || !seen;
}

static int import_side(const char *dir, int forge, uint32_t expected_seed)
{
    CUipcMemHandle handle;
    if (wait_for(dir, "handle"))
        return 3;
    FILE *f = fopen(in_dir(dir, "handle"), "r");
    if (!f || fread(&handle, sizeof handle, 1, f) != 1)
        return 3;
    fclose(f);
    if (forge == 1)
        handle.reserved[40] ^= 0x5a; /* inside tiermem's nonce */
    if (forge == 2) {
        uint64_t huge = (uint64_t)1 << 62;
        memcpy(&handle.reserved[24], &huge, sizeof huge); /* tiermem's size field */
    }
    probe_init();
    printf("importer: pid %d\n", (int)getpid());
    int fds_before = open_fds();
    CUdeviceptr ptr = 0, again = 0;
    CUresult r = cuIpcOpenMemHandle(&ptr, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    printf("importer: open %s\n", probe_error_name(r));
    if (r != CUDA_SUCCESS)
        return 1;
    /* the second open goes through cuGetProcAddress, as the CUDA runtime's does */
    PFN_cuIpcOpenMemHandle_v11000 open_v2 = NULL;
    void *open_v1 = NULL;
    CUdriverProcAddressQueryResult found;
    CHECK(cuGetProcAddress("cuIpcOpenMemHandle", (void **)&open_v2, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
    CHECK(cuGetProcAddress("cuIpcOpenMemHandle", &open_v1, 10000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
    printf("importer: resolver gives the exported functions: %s\n",
           (void *)open_v2 == dlsym(RTLD_DEFAULT, "cuIpcOpenMemHandle_v2") &&
                   open_v1 == dlsym(RTLD_DEFAULT, "cuIpcOpenMemHandle") ? "yes" : "no");
    CHECK(open_v2(&again, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    printf("importer: second open %s\n", again == ptr ? "shares the mapping" : "mapped it again");
    size_t bytes = 0;
    CUdeviceptr base = 0;
    CHECK(cuMemGetAddressRange(&base, &bytes, ptr));
    int seen = has_pattern(ptr, bytes, expected_seed);
    printf("importer: exporter's bytes %s (%zu)\n", seen ? "ok" : "wrong", bytes);
    CUmemGenericAllocationHandle physical;
    printf("importer: retain %s\n",
           probe_error_name(cuMemRetainAllocationHandle(&physical, (void *)(uintptr_t)(ptr + bytes / 2))));
    put_pattern(ptr, bytes, SEED_IMPORTER);
    touch(dir, "imported");
    fflush(stdout);
    if (wait_for(dir, "close"))
        return 1;
    seen &= has_pattern(ptr, bytes, SEED_IMPORTER);
    printf("importer: bytes at close %s\n", seen ? "ok" : "wrong");
    printf("importer: close %s", probe_error_name(cuIpcCloseMemHandle(again)));
    printf(" %s", probe_error_name(cuIpcCloseMemHandle(ptr)));
    printf(" then %s\n", probe_error_name(cuIpcCloseMemHandle(ptr)));
    CUdeviceptr reopened = 0;
    r = cuIpcOpenMemHandle(&reopened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    printf("importer: reopen %s\n", probe_error_name(r));
    if (r == CUDA_SUCCESS)
        cuIpcCloseMemHandle(reopened);
    printf("importer: descriptors before %d after %d\n", fds_before, open_fds());
    return !seen || again != ptr;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "export") == 0)
        return export_side(probe_parse_size(argv[2]), argv[3]);
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "import") == 0) {
        const char *how = argc == 4 ? argv[3] : "";
        return import_side(argv[2], strcmp(how, "forge") == 0 ? 1 : strcmp(how, "huge") == 0 ? 2 : 0,
                           strcmp(how, "again") == 0 ? SEED_IMPORTER : SEED_EXPORTER);
    }
    fprintf(stderr, "usage: ipc_peer export SIZE DIR | ipc_peer import DIR [forge|huge|again]\n");
    return 2;
}
