/* filecopy.c — a model loader as programs write them, to see what the interposer names.
 *
 *   filecopy safetensors FILE     writes a small safetensors file (three tensors)
 *   filecopy mmap|pread|staging FILE
 *       copies every tensor of FILE (GGUF or safetensors) into its own cuMemAlloc: from a
 *       mapping of the file, from a buffer pread fills, or through a pinned staging buffer
 *       (cuMemHostAlloc, cuMemcpyHtoDAsync); once the moves name rules queued are done, prints
 *       one line per tensor from this process's stats region, then reads each tensor back
 *       and compares it with the file, frees them all and prints cuMemGetInfo's free memory
 *       before the first allocation and after the last free:
 *       "tensor NAME stats-name=NAME hbm=H cxl=C ddr=D", then "moves name_moves=N migrations=M",
 *       then "meminfo free before=B after=A"
 *   filecopy checksum FILE        read() the whole file in 1000-byte steps, print a checksum
 *   filecopy export FILE DIR      copies every tensor in from a mapping, then exports with
 *       cuIpcGetMemHandle the first tensor of several chunks that has fewer chunks placed
 *       than it spans (the file tier dropped some), into DIR/handle; waits for DIR/imported:
 *       "exporter: NAME placed P of C chunks", "exporter: export RESULT"
 *   filecopy import FILE DIR      opens DIR/handle and compares the memory with the file:
 *       "importer: open RESULT", "importer: every byte equal" (or where they differ)
 *
 *   filecopy graph FILE           copies every tensor in from a mapping; captures into a CUDA
 *       graph a kernel that sums the bytes of the first tensor of several chunks; then three
 *       times: sums every other tensor with ordinary launches (under the file tier their
 *       read-backs drop chunks), replays the graph and compares its sum with the file's:
 *       "graph: NAME of C chunks", then "graph: replay N sum equal" (or "differs")
 *   filecopy rewrite FILE         copies every tensor in from a mapping; eight cycles of a sum
 *       over every tensor by a launch that reaches all of it (so that spilled ones stream),
 *       checked against what each holds; after the fourth every tensor is set to 1s with
 *       cuMemsetD8: "rewrite: cycle N sums equal" (or "differ")
 *
 * The tensor table comes from the interposer's own parser (tensor_table.h), which the
 * unit tests check against the engine's reader. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/model/tensor_table.h"
#include "tests/preload/probe_util.h"
#include "tools/tiermem-stat/stats_read.h"

#define STAGING (1u << 20)

static int write_safetensors(const char *path)
{
    /* 3 MiB, 4 KiB and 2.25 MiB of data, in file order */
    const char *json = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[1024,768],\"data_offsets\":[0,3145728]},"
                       "\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[1024],\"data_offsets\":[3145728,3149824]},"
                       "\"lm_head.weight\":{\"dtype\":\"BF16\",\"shape\":[1536,768],\"data_offsets\":[3149824,5509120]}}";
    uint64_t n = strlen(json), data = 5509120;
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    fwrite(&n, sizeof n, 1, f);
    fwrite(json, 1, (size_t)n, f);
    for (uint64_t i = 0; i < data; i++)
        fputc((int)((i * 2654435761u) >> 13) & 0xff, f);
    return fclose(f) != 0;
}

static int checksum(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 1;
    char buf[1000];
    uint64_t sum = 0, total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++, total++)
            sum = sum * 131 + (unsigned char)buf[i];
    close(fd);
    printf("checksum %" PRIu64 " bytes %" PRIu64 "\n", sum, total);
    return n < 0;
}

static bool load_table(int fd, uint64_t size, tm_tensor_table *table)
{
    uint8_t *head = malloc(size);
    const char *why = "";
    size_t need;
    bool ok = head && pread(fd, head, size, 0) == (ssize_t)size &&
              tm_parse_model_header(head, size, size, table, &need, &why) == TM_PARSE_OK;
    free(head);
    if (!ok) fprintf(stderr, "filecopy: cannot parse the model header: %s\n", why ? why : "");
    return ok;
}

/* Copies tensor t into dptr the way `mode` says. */
static void copy_in(const char *mode, int fd, const uint8_t *map, const tm_tensor *t, CUdeviceptr dptr,
                    void *staging, CUstream stream)
{
    if (strcmp(mode, "mmap") == 0) {
        CHECK(cuMemcpyHtoD(dptr, map + t->offset, t->size));
    } else if (strcmp(mode, "pread") == 0) {
        void *buf = malloc(t->size);
        if (!buf || pread(fd, buf, t->size, (off_t)t->offset) != (ssize_t)t->size) exit(4);
        CHECK(cuMemcpyHtoD(dptr, buf, t->size));
        free(buf);
    } else {
        for (uint64_t done = 0; done < t->size; done += STAGING) {
            size_t n = t->size - done < STAGING ? (size_t)(t->size - done) : STAGING;
            if (pread(fd, staging, n, (off_t)(t->offset + done)) != (ssize_t)n) exit(4);
            CHECK(cuMemcpyHtoDAsync(dptr + done, staging, n, stream));
            CHECK(cuStreamSynchronize(stream));
        }
    }
}

static int load(const char *mode, const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return 1;
    tm_tensor_table table;
    if (!load_table(fd, (uint64_t)st.st_size, &table)) return 1;
    const uint8_t *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) return 1;
    probe_init();
    size_t free_before, free_after, total;
    CHECK(cuMemGetInfo(&free_before, &total));
    void *staging;
    CUstream stream;
    CHECK(cuMemHostAlloc(&staging, STAGING, 0));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr *dptr = calloc(table.count, sizeof *dptr);
    int bad = 0;
    for (uint64_t i = 0; i < table.count; i++) {
        const tm_tensor *t = &table.tensor[i];
        CHECK(cuMemAlloc(&dptr[i], t->size));
        copy_in(mode, fd, map, t, dptr[i], staging, stream);
    }
    char region[64], why[256];
    tm_stats_snapshot s;
    tm_stats_default_path(getpid(), region, sizeof region);
    bool stats = tm_stats_read(region, &s, why, sizeof why) == 0;
    /* moves a name rule queued run on the interposer's own thread: wait for them (10 s at most) */
    for (int tries = 0; stats && s.header.name_moves_done < s.header.name_moves_queued && tries < 1000; tries++) {
        tm_stats_snapshot_free(&s);
        usleep(10000);
        stats = tm_stats_read(region, &s, why, sizeof why) == 0;
    }
    for (uint64_t i = 0; i < table.count; i++) {
        const tm_stats_record *r = NULL;
        for (size_t k = 0; stats && k < s.record_count; k++)
            if (s.records[k].address == dptr[i]) r = &s.records[k];
        printf("tensor %s stats-name=%s hbm=%u cxl=%u ddr=%u\n", table.tensor[i].name, r ? r->name : "(none)",
               r ? r->chunks[0] : 0, r ? r->chunks[1] : 0, r ? r->chunks[2] : 0);
    }
    if (stats) {
        printf("moves name_moves=%llu migrations=%llu\n", (unsigned long long)s.header.name_moves_queued,
               (unsigned long long)s.header.migrations);
        tm_stats_snapshot_free(&s);
    }
    /* read back once the moves are done: a device-to-host copy does not pass the
     * migration's gate (migrate.h) */
    for (uint64_t i = 0; i < table.count; i++) {
        const tm_tensor *t = &table.tensor[i];
        uint8_t *back = malloc(t->size);
        CHECK(cuMemcpyDtoH(back, dptr[i], t->size));
        if (memcmp(back, map + t->offset, t->size) != 0) {
            printf("tensor %s: the device holds other bytes than the file\n", t->name);
            bad = 1;
        }
        free(back);
    }
    for (uint64_t i = 0; i < table.count; i++)
        CHECK(cuMemFree(dptr[i]));
    CHECK(cuMemGetInfo(&free_after, &total));
    printf("meminfo free before=%zu after=%zu\n", free_before, free_after);
    printf("copied %" PRIu64 " tensors%s\n", table.count, bad ? ", some wrong" : ", every byte equal");
    free(dptr);
    tm_tensor_table_free(&table);
    return bad;
}

/* ---------------------------------------------------------------- IPC of file-tier memory */

typedef struct exported {
    CUipcMemHandle handle;
    uint64_t tensor;               /* its index in the file's tensor table */
} exported;

static char path_buf[4096];

static const char *in_dir(const char *dir, const char *name)
{
    snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
    return path_buf;
}

/* The first tensor of several chunks with fewer placed than it spans; -1 when none. */
static int64_t dropped_tensor(const tm_tensor_table *table, const CUdeviceptr *dptr, uint32_t *placed,
                              uint64_t *spans)
{
    char region[64], why[256];
    tm_stats_snapshot s;
    tm_stats_default_path(getpid(), region, sizeof region);
    if (tm_stats_read(region, &s, why, sizeof why) != 0) {
        fprintf(stderr, "filecopy: stats region: %s\n", why);
        return -1;
    }
    int64_t found = -1;
    for (uint64_t i = 0; i < table->count && found < 0; i++)
        for (size_t k = 0; k < s.record_count; k++) {
            const tm_stats_record *r = &s.records[k];
            uint64_t chunks = (table->tensor[i].size + s.header.chunk_size - 1) / s.header.chunk_size;
            uint32_t in_tiers = r->chunks[0] + r->chunks[1] + r->chunks[2];
            if (r->address == dptr[i] && chunks > 1 && in_tiers < chunks) {
                found = (int64_t)i;
                *placed = in_tiers;
                *spans = chunks;
            }
        }
    tm_stats_snapshot_free(&s);
    return found;
}

/* Every tensor of the model file at `path` copied from a mapping of it into its own
 * cuMemAlloc: *dptr [table->count], *map the mapping. False when the file is no model file. */
static bool load_mapped(const char *path, tm_tensor_table *table, const uint8_t **map, CUdeviceptr **dptr)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !load_table(fd, (uint64_t)st.st_size, table)) return false;
    *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (*map == MAP_FAILED) return false;
    probe_init();
    *dptr = calloc(table->count, sizeof **dptr);
    for (uint64_t i = 0; i < table->count; i++) {
        CHECK(cuMemAlloc(&(*dptr)[i], table->tensor[i].size));
        copy_in("mmap", fd, *map, &table->tensor[i], (*dptr)[i], NULL, 0);
    }
    return true;
}

static int export_side(const char *path, const char *dir)
{
    tm_tensor_table table;
    const uint8_t *map;
    CUdeviceptr *dptr;
    if (!load_mapped(path, &table, &map, &dptr)) return 1;
    uint32_t placed = 0;
    uint64_t spans = 0;
    int64_t t = dropped_tensor(&table, dptr, &placed, &spans);
    if (t < 0) {
        printf("exporter: no tensor has chunks dropped\n");
        return 1;
    }
    printf("exporter: %s placed %u of %llu chunks\n", table.tensor[t].name, placed, (unsigned long long)spans);
    exported e = { .tensor = (uint64_t)t };
    CUresult r = cuIpcGetMemHandle(&e.handle, dptr[t]);
    printf("exporter: export %s\n", probe_error_name(r));
    fflush(stdout);
    FILE *f = fopen(in_dir(dir, "handle.tmp"), "w");
    if (r != CUDA_SUCCESS || !f || fwrite(&e, sizeof e, 1, f) != 1 || fclose(f) != 0) return 1;
    char done[4096];
    snprintf(done, sizeof done, "%s", in_dir(dir, "handle"));
    rename(in_dir(dir, "handle.tmp"), done); /* whole when the importer sees it */
    for (int i = 0; i < 6000 && access(in_dir(dir, "imported"), F_OK) != 0; i++)
        usleep(10000);
    for (uint64_t i = 0; i < table.count; i++)
        CHECK(cuMemFree(dptr[i]));
    free(dptr);
    tm_tensor_table_free(&table);
    return 0;
}

static int import_side(const char *path, const char *dir)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    tm_tensor_table table;
    exported e;
    FILE *f = fopen(in_dir(dir, "handle"), "r");
    if (!f || fread(&e, sizeof e, 1, f) != 1) return 1;
    fclose(f);
    if (fd < 0 || fstat(fd, &st) != 0 || !load_table(fd, (uint64_t)st.st_size, &table) || e.tensor >= table.count)
        return 1;
    const tm_tensor *t = &table.tensor[e.tensor];
    probe_init();
    CUdeviceptr dptr;
    CUresult r = cuIpcOpenMemHandle(&dptr, e.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    printf("importer: open %s\n", probe_error_name(r));
    int bad = 1;
    if (r == CUDA_SUCCESS) {
        uint8_t *got = malloc(t->size), *want = malloc(t->size);
        CHECK(cuMemcpyDtoH(got, dptr, t->size));
        if (pread(fd, want, t->size, (off_t)t->offset) != (ssize_t)t->size) return 4;
        uint64_t i = 0;
        while (i < t->size && got[i] == want[i])
            i++;
        bad = i < t->size;
        if (bad)
            printf("importer: byte %llu of %s differs from the file\n", (unsigned long long)i, t->name);
        else
            printf("importer: every byte equal\n");
        free(got);
        free(want);
        CHECK(cuIpcCloseMemHandle(dptr));
    }
    fclose(fopen(in_dir(dir, "imported"), "w"));
    tm_tensor_table_free(&table);
    return bad;
}

/* ---------------------------------------------------------------- graphs over file-tier memory */

static uint64_t host_sum(const uint8_t *bytes, uint64_t n)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++)
        total += bytes[i];
    return total;
}

/* The test kernels' sum_bytes (kernels.c). */
static CUfunction sum_kernel(void)
{
    CUmodule module;
    CUfunction sum_bytes;
    CHECK(cuModuleLoad(&module, TM_TEST_KERNELS));
    CHECK(cuModuleGetFunction(&sum_bytes, module, "sum_bytes"));
    return sum_bytes;
}

/* One launch of sum_bytes over `n` bytes: a single thread, or (`whole`) a thread for each 16
 * of them, as a kernel that reads all of a weight is launched (the body sums once, whatever
 * the grid). */
static void launch_sum(CUfunction sum_bytes, CUdeviceptr data, uint64_t n, CUdeviceptr sum, CUstream stream,
                       bool whole)
{
    void *params[] = { &data, &n, &sum };
    unsigned blocks = whole ? (unsigned)((n / 16 + 255) / 256) : 1;
    CHECK(cuLaunchKernel(sum_bytes, blocks ? blocks : 1, 1, 1, whole ? 256 : 1, 1, 1, 0, stream, params, NULL));
}

static int graph_side(const char *path)
{
    tm_tensor_table table;
    const uint8_t *map;
    CUdeviceptr *dptr, sum;
    if (!load_mapped(path, &table, &map, &dptr)) return 1;
    CUfunction sum_bytes = sum_kernel();
    CHECK(cuMemAlloc(&sum, sizeof(uint64_t)));
    int64_t t = -1;
    for (uint64_t i = 0; i < table.count && t < 0; i++)
        if (table.tensor[i].size > (2u << 20))
            t = (int64_t)i;
    if (t < 0) {
        printf("graph: no tensor of several chunks\n");
        return 1;
    }
    const tm_tensor *g = &table.tensor[t];
    printf("graph: %s of %llu chunks\n", g->name, (unsigned long long)((g->size + (2u << 20) - 1) >> 21));
    CUstream stream;
    CUgraph graph;
    CUgraphExec exec;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_sum(sum_bytes, dptr[t], g->size, sum, stream, false);
    CHECK(cuStreamEndCapture(stream, &graph));
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    uint64_t want = host_sum(map + g->offset, g->size);
    int bad = 0;
    for (int replay = 1; replay <= 3; replay++) {
        for (uint64_t i = 0; i < table.count; i++)
            if ((int64_t)i != t)
                launch_sum(sum_bytes, dptr[i], table.tensor[i].size, sum, NULL, false);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemsetD8(sum, 0, sizeof(uint64_t)));
        CHECK(cuGraphLaunch(exec, stream));
        CHECK(cuStreamSynchronize(stream));
        uint64_t got = 0;
        CHECK(cuMemcpyDtoH(&got, sum, sizeof got));
        printf("graph: replay %d sum %s\n", replay, got == want ? "equal" : "differs");
        bad |= got != want;
    }
    fflush(stdout);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
    for (uint64_t i = 0; i < table.count; i++)
        CHECK(cuMemFree(dptr[i]));
    CHECK(cuMemFree(sum));
    free(dptr);
    tm_tensor_table_free(&table);
    return bad;
}

/* ---------------------------------------------------------------- weights written while they stream */

/* Eight cycles of a sum over every tensor in file order, each checked against what the
 * tensor holds; after the fourth, every tensor is set to 1s with cuMemsetD8. */
static int rewrite_side(const char *path)
{
    tm_tensor_table table;
    const uint8_t *map;
    CUdeviceptr *dptr, sums;
    if (!load_mapped(path, &table, &map, &dptr)) return 1;
    CUfunction sum_bytes = sum_kernel();
    CHECK(cuMemAlloc(&sums, table.count * sizeof(uint64_t)));
    uint64_t *want = calloc(table.count, sizeof *want), *got = calloc(table.count, sizeof *got);
    for (uint64_t i = 0; i < table.count; i++)
        want[i] = host_sum(map + table.tensor[i].offset, table.tensor[i].size);
    int bad = 0;
    for (int cycle = 1; cycle <= 8; cycle++) {
        if (cycle == 5) {
            for (uint64_t i = 0; i < table.count; i++) {
                CHECK(cuMemsetD8(dptr[i], 1, table.tensor[i].size));
                want[i] = table.tensor[i].size;
            }
            printf("rewrite: every tensor set to 1s after cycle 4\n");
        }
        CHECK(cuMemsetD8(sums, 0, table.count * sizeof(uint64_t)));
        for (uint64_t i = 0; i < table.count; i++)
            launch_sum(sum_bytes, dptr[i], table.tensor[i].size, sums + i * sizeof(uint64_t), NULL, true);
        CHECK(cuMemcpyDtoH(got, sums, table.count * sizeof(uint64_t)));
        uint64_t differ = 0;
        for (uint64_t i = 0; i < table.count; i++)
            differ += got[i] != want[i];
        printf("rewrite: cycle %d sums %s\n", cycle, differ ? "differ" : "equal");
        bad |= differ != 0;
    }
    fflush(stdout);
    for (uint64_t i = 0; i < table.count; i++)
        CHECK(cuMemFree(dptr[i]));
    CHECK(cuMemFree(sums));
    free(want);
    free(got);
    free(dptr);
    tm_tensor_table_free(&table);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "export") == 0) return export_side(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "import") == 0) return import_side(argv[2], argv[3]);
    if (argc != 3) {
        fprintf(stderr, "usage: filecopy safetensors|mmap|pread|staging|checksum|graph|rewrite FILE\n"
                        "       filecopy export|import FILE DIR\n");
        return 2;
    }
    if (strcmp(argv[1], "safetensors") == 0) return write_safetensors(argv[2]);
    if (strcmp(argv[1], "graph") == 0) return graph_side(argv[2]);
    if (strcmp(argv[1], "rewrite") == 0) return rewrite_side(argv[2]);
    if (strcmp(argv[1], "checksum") == 0) return checksum(argv[2]);
    return load(argv[1], argv[2]);
}
