/* header_probe.c — hostile model headers for the interposer's open(), and what opening
 * them cost the process that did.
 *
 *   header_probe st-array FILE BYTES     a safetensors file whose header of BYTES is one
 *                                        integer array ({"a":[0,0,...]})
 *   header_probe st-entries FILE N       a safetensors file of N one-element F32 tensors
 *   header_probe gguf FILE N             a GGUF v3 file of N one-element F32 tensors
 *   header_probe open [--hold] FILE...   opens each file read-only, reads its first 4 KiB
 *                                        and closes it (--hold: keeps all open), then
 *                                        prints "hwm_growth_kb=K seconds=S" (VmHWM since
 *                                        before the first open, wall time of the opens)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
    fprintf(stderr, "header_probe: %s: %s\n", what, strerror(errno));
    return 1;
}

/* Writes u64 header length, the header, and `data` zero bytes. */
static int write_safetensors(const char *path, const char *header, uint64_t n, uint64_t data)
{
    FILE *f = fopen(path, "wb");
    if (!f) return fail(path);
    fwrite(&n, sizeof n, 1, f);
    fwrite(header, 1, (size_t)n, f);
    if (data && (fseeko(f, (off_t)data - 1, SEEK_CUR) != 0 || fputc(0, f) == EOF)) return fail(path);
    return fclose(f) != 0 ? fail(path) : 0;
}

static int st_array(const char *path, uint64_t bytes)
{
    char *h = malloc((size_t)bytes + 1);
    if (!h || bytes < 8) return fail("header");
    size_t at = (size_t)sprintf(h, "{\"a\":[0");
    while (at + 3 < bytes) { h[at++] = ','; h[at++] = '0'; }
    while (at + 2 < bytes) h[at++] = ' ';
    h[at++] = ']';
    h[at++] = '}';
    int rc = write_safetensors(path, h, at, 16);
    free(h);
    return rc;
}

static int st_entries(const char *path, uint64_t n)
{
    size_t cap = (size_t)n * 80 + 16, at = 0;
    char *h = malloc(cap);
    if (!h) return fail("header");
    h[at++] = '{';
    for (uint64_t i = 0; i < n; i++)
        at += (size_t)snprintf(h + at, cap - at, "%s\"t%" PRIu64 "\":{\"dtype\":\"F32\",\"shape\":[1],"
                               "\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", i ? "," : "", i, i * 4, i * 4 + 4);
    h[at++] = '}';
    int rc = write_safetensors(path, h, at, n * 4);
    free(h);
    return rc;
}

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }
static void put_u32(FILE *f, uint32_t v) { put(f, &v, sizeof v); }
static void put_u64(FILE *f, uint64_t v) { put(f, &v, sizeof v); }

static int gguf(const char *path, uint64_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return fail(path);
    put(f, "GGUF", 4);
    put_u32(f, 3);
    put_u64(f, n);
    put_u64(f, 0);                      /* no key-value pairs: alignment 32 */
    for (uint64_t i = 0; i < n; i++) {
        char name[32];
        int len = snprintf(name, sizeof name, "blk.%" PRIu64 ".w", i);
        put_u64(f, (uint64_t)len);
        put(f, name, (size_t)len);
        put_u32(f, 1);                  /* dims */
        put_u64(f, 8);                  /* 8 F32: 32 bytes, one alignment unit */
        put_u32(f, 0);                  /* F32 */
        put_u64(f, i * 32);
    }
    long end = ftell(f);
    long data = (end + 31) / 32 * 32 + (long)n * 32;
    if (fseek(f, data - 1, SEEK_SET) != 0 || fputc(0, f) == EOF) return fail(path);
    return fclose(f) != 0 ? fail(path) : 0;
}

static long hwm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

static int open_files(int argc, char **argv)
{
    int hold = argc > 0 && strcmp(argv[0], "--hold") == 0;
    long before = hwm_kb();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = hold; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        if (fd < 0) return fail(argv[i]);
        static char buf[4096];
        if (read(fd, buf, sizeof buf) < 0) return fail(argv[i]);
        if (!hold) close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("hwm_growth_kb=%ld seconds=%.3f\n", hwm_kb() - before,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "open") == 0) return open_files(argc - 2, argv + 2);
    if (argc != 4) {
        fprintf(stderr, "usage: header_probe st-array|st-entries|gguf FILE N, or open [--hold] FILE...\n");
        return 2;
    }
    uint64_t n = strtoull(argv[3], NULL, 10);
    if (strcmp(argv[1], "st-array") == 0) return st_array(argv[2], n);
    if (strcmp(argv[1], "st-entries") == 0) return st_entries(argv[2], n);
    if (strcmp(argv[1], "gguf") == 0) return gguf(argv[2], n);
    fprintf(stderr, "header_probe: unknown mode '%s'\n", argv[1]);
    return 2;
}
