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

#include "preload/tensor_table.h"
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

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: filecopy safetensors|mmap|pread|staging|checksum FILE\n");
        return 2;
    }
    if (strcmp(argv[1], "safetensors") == 0) return write_safetensors(argv[2]);
    if (strcmp(argv[1], "checksum") == 0) return checksum(argv[2]);
    return load(argv[1], argv[2]);
}
