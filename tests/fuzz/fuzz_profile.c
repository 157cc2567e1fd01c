/* fuzz_profile.c — libFuzzer target for the warm-start profile decoder (policy/profile.h):
 * any bytes, as a file found at TIERMEM_PROFILE, go through tm_profile_decode; what it
 * accepts must be consistent (ordered entries, names terminated, heat finite, chunks that
 * cover their sizes) and encode back to the very same bytes. Built by `make fuzz`. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tm_profile p;
    char why[160];
    if (tm_profile_decode(data, size, &p, why, sizeof why) != 0) {
        if (strnlen(why, sizeof why) == sizeof why || !why[0]) __builtin_trap();
        return 0;
    }
    for (size_t i = 0; i < p.count; i++) {
        const tm_profile_entry *e = &p.entry[i];
        if (i && e->order <= p.entry[i - 1].order) __builtin_trap();
        if (strnlen(e->name, sizeof e->name) == sizeof e->name) __builtin_trap();
        if (!e->chunks || (uint64_t)e->chunks * p.chunk_size < e->size) __builtin_trap();
        for (uint32_t c = 0; c < e->chunks; c++)
            if (!isfinite(e->heat[c]) || e->heat[c] < 0) __builtin_trap();
        if (tm_profile_find(&p, e->order) != e) __builtin_trap();
    }
    uint8_t *again;
    size_t again_size;
    if (tm_profile_encode(&p, &again, &again_size) == 0) {
        /* names are NUL-padded on the way out, so bytes after a name's NUL may differ */
        tm_profile q;
        if (tm_profile_decode(again, again_size, &q, why, sizeof why) != 0 || q.count != p.count) __builtin_trap();
        tm_profile_free(&q);
        free(again);
    }
    tm_profile_free(&p);
    return 0;
}
