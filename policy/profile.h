/* profile.h — the warm-start profile (TIERMEM_PROFILE): the heat of every chunk of every
 * chunked allocation a run made, keyed by the allocation's identity, so that the next run
 * of the same program places its memory well before its first token. Pure encoding and
 * decoding (no files, no CUDA).
 *
 * An allocation is known by its call order (the n-th chunked allocation of the process),
 * its size, and the model-file tensor copied into it when one was seen ("" otherwise). A
 * profile whose chunk size differs is foreign; one whose allocations differ from the
 * program's (tm_profile_check) is stale. Either is ignored whole.
 *
 * Layout, little-endian as the host writes it (a profile belongs to its machine):
 *   header  magic "TMHEATP1", u32 version, u32 entry count, u64 chunk size,
 *           u64 FNV-1a of every byte after the header
 *   entry   u64 order, u64 size, char name[64] (NUL-padded), u32 chunks, u32 0,
 *           f32 heat[chunks] (decayed bytes accessed per byte of the chunk) */
#ifndef TM_POLICY_PROFILE_H
#define TM_POLICY_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_PROFILE_MAGIC "TMHEATP1"
#define TM_PROFILE_VERSION 1
#define TM_PROFILE_NAME_MAX 64
#define TM_PROFILE_HEADER_BYTES 32
/* A larger file is not one we wrote: 64 MiB holds the heat of 16 M chunks (32 TiB of 2 MiB
 * chunks), and reading it costs at most about twice that in memory at start. */
#define TM_PROFILE_MAX_BYTES ((size_t)64 << 20)

typedef struct tm_profile_entry {
    uint64_t order;                  /* the n-th chunked allocation, from 0 */
    uint64_t size;                   /* bytes the program asked for */
    char name[TM_PROFILE_NAME_MAX];  /* a tensor copied into it, or "" */
    uint32_t chunks;
    float *heat;                     /* [chunks] */
} tm_profile_entry;

typedef struct tm_profile {
    uint64_t chunk_size;
    size_t count;
    tm_profile_entry *entry;         /* [count] in increasing order */
} tm_profile;

/* True when `data` starts with a profile's magic (whatever else it holds). */
bool tm_profile_has_magic(const uint8_t *data, size_t size);

/* A malloc'd image of `p` in *out; 0, or -1 when memory ran out. */
int tm_profile_encode(const tm_profile *p, uint8_t **out, size_t *out_size);

/* Parses an image into *p (its own copies); 0, or -1 with `why` saying what is wrong. */
int tm_profile_decode(const uint8_t *data, size_t size, tm_profile *p, char *why, size_t why_size);

/* The entry of the allocation of that order, or NULL when the profile has none. */
const tm_profile_entry *tm_profile_find(const tm_profile *p, uint64_t order);

/* Whether an allocation of the program matches the profile's entry of its order: false,
 * with `why`, when the sizes differ or both know a tensor name and the names differ. */
bool tm_profile_check(const tm_profile_entry *e, uint64_t size, const char *name, char *why, size_t why_size);

void tm_profile_free(tm_profile *p);

#endif /* TM_POLICY_PROFILE_H */
