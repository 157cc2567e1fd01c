/* profile.c — the warm-start profile's encoding (see profile.h). */
#include "policy/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY_BYTES (8 + 8 + TM_PROFILE_NAME_MAX + 4 + 4) /* before its heat */

static uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

bool tm_profile_has_magic(const uint8_t *data, size_t size)
{
    return size >= 8 && memcmp(data, TM_PROFILE_MAGIC, 8) == 0;
}

/* ---------------------------------------------------------------- encode */

static uint8_t *put(uint8_t *at, const void *value, size_t size)
{
    memcpy(at, value, size);
    return at + size;
}

int tm_profile_encode(const tm_profile *p, uint8_t **out, size_t *out_size)
{
    size_t size = TM_PROFILE_HEADER_BYTES;
    for (size_t i = 0; i < p->count; i++)
        size += ENTRY_BYTES + (size_t)p->entry[i].chunks * sizeof(float);
    uint8_t *image = calloc(1, size);
    if (!image)
        return -1;
    uint8_t *at = image + TM_PROFILE_HEADER_BYTES;
    for (size_t i = 0; i < p->count; i++) {
        const tm_profile_entry *e = &p->entry[i];
        uint32_t zero = 0;
        char name[TM_PROFILE_NAME_MAX] = { 0 };
        memcpy(name, e->name, strnlen(e->name, sizeof name - 1));
        at = put(at, &e->order, 8);
        at = put(at, &e->size, 8);
        at = put(at, name, sizeof name);
        at = put(at, &e->chunks, 4);
        at = put(at, &zero, 4);
        at = put(at, e->heat, (size_t)e->chunks * sizeof(float));
    }
    uint32_t version = TM_PROFILE_VERSION, count = (uint32_t)p->count;
    uint64_t sum = fnv1a(image + TM_PROFILE_HEADER_BYTES, size - TM_PROFILE_HEADER_BYTES);
    at = put(image, TM_PROFILE_MAGIC, 8);
    at = put(at, &version, 4);
    at = put(at, &count, 4);
    at = put(at, &p->chunk_size, 8);
    put(at, &sum, 8);
    *out = image;
    *out_size = size;
    return 0;
}

/* ---------------------------------------------------------------- decode */

static int fail(char *why, size_t why_size, const char *text)
{
    snprintf(why, why_size, "%s", text);
    return -1;
}

int tm_profile_decode(const uint8_t *data, size_t size, tm_profile *p, char *why, size_t why_size)
{
    memset(p, 0, sizeof *p);
    if (!tm_profile_has_magic(data, size))
        return fail(why, why_size, "not a tiermem profile");
    if (size < TM_PROFILE_HEADER_BYTES || size > TM_PROFILE_MAX_BYTES)
        return fail(why, why_size, "truncated or oversized");
    uint32_t version, count;
    uint64_t chunk_size, sum;
    memcpy(&version, data + 8, 4);
    memcpy(&count, data + 12, 4);
    memcpy(&chunk_size, data + 16, 8);
    memcpy(&sum, data + 24, 8);
    if (version != TM_PROFILE_VERSION)
        return fail(why, why_size, "a profile version this build does not read");
    if (sum != fnv1a(data + TM_PROFILE_HEADER_BYTES, size - TM_PROFILE_HEADER_BYTES))
        return fail(why, why_size, "its checksum does not match (damaged or cut short)");
    if (chunk_size == 0 || (chunk_size & (chunk_size - 1)))
        return fail(why, why_size, "its chunk size is not a power of two");
    if ((size_t)count > (size - TM_PROFILE_HEADER_BYTES) / ENTRY_BYTES)
        return fail(why, why_size, "more entries than the file holds");
    p->chunk_size = chunk_size;
    p->entry = calloc(count ? count : 1, sizeof *p->entry);
    if (!p->entry)
        return fail(why, why_size, "out of memory");
    const uint8_t *at = data + TM_PROFILE_HEADER_BYTES, *end = data + size;
    for (uint32_t i = 0; i < count; i++) {
        tm_profile_entry *e = &p->entry[i];
        if ((size_t)(end - at) < ENTRY_BYTES) {
            tm_profile_free(p);
            return fail(why, why_size, "an entry runs past the end");
        }
        memcpy(&e->order, at, 8);
        memcpy(&e->size, at + 8, 8);
        memcpy(e->name, at + 16, TM_PROFILE_NAME_MAX);
        memcpy(&e->chunks, at + 16 + TM_PROFILE_NAME_MAX, 4);
        at += ENTRY_BYTES;
        e->name[TM_PROFILE_NAME_MAX - 1] = '\0';
        const char *problem = NULL;
        if (i > 0 && e->order <= p->entry[i - 1].order)
            problem = "entries out of order";
        else if (e->size == 0 || e->chunks == 0 || (uint64_t)e->chunks * chunk_size < e->size)
            problem = "an entry's chunk count does not cover its size";
        else if ((size_t)(end - at) / sizeof(float) < e->chunks)
            problem = "an entry runs past the end";
        else if (!(e->heat = malloc((size_t)e->chunks * sizeof(float) + 1)))
            problem = "out of memory";
        if (problem) {
            p->count = i;
            tm_profile_free(p);
            return fail(why, why_size, problem);
        }
        memcpy(e->heat, at, (size_t)e->chunks * sizeof(float));
        at += (size_t)e->chunks * sizeof(float);
        p->count = i + 1;
        for (uint32_t c = 0; c < e->chunks; c++)
            if (!isfinite(e->heat[c]) || e->heat[c] < 0) {
                tm_profile_free(p);
                return fail(why, why_size, "a heat value is negative or not a number");
            }
    }
    if (at != end) {
        tm_profile_free(p);
        return fail(why, why_size, "bytes after the last entry");
    }
    return 0;
}

/* ---------------------------------------------------------------- use */

const tm_profile_entry *tm_profile_find(const tm_profile *p, uint64_t order)
{
    size_t lo = 0, hi = p->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->entry[mid].order < order)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->count && p->entry[lo].order == order ? &p->entry[lo] : NULL;
}

bool tm_profile_check(const tm_profile_entry *e, uint64_t size, const char *name, char *why, size_t why_size)
{
    if (e->size != size) {
        snprintf(why, why_size, "allocation %llu is %llu bytes here, %llu in the profile",
                 (unsigned long long)e->order, (unsigned long long)size, (unsigned long long)e->size);
        return false;
    }
    if (name && *name && *e->name && strncmp(name, e->name, TM_PROFILE_NAME_MAX - 1) != 0) {
        snprintf(why, why_size, "allocation %llu holds %.63s here, %s in the profile", (unsigned long long)e->order,
                 name, e->name);
        return false;
    }
    return true;
}

void tm_profile_free(tm_profile *p)
{
    for (size_t i = 0; i < p->count; i++)
        free(p->entry[i].heat);
    free(p->entry);
    memset(p, 0, sizeof *p);
}
