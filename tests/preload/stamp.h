/* stamp.h — the value word i of a stress region holds at a version: every word changes
 * with every version, and no two regions (seeds) agree. */
#ifndef TM_TEST_STAMP_H
#define TM_TEST_STAMP_H

#include <stdint.h>

static inline uint32_t test_stamp(uint32_t seed, uint64_t i, uint32_t version)
{
    uint64_t x = ((uint64_t)seed << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)version << 20);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return (uint32_t)x;
}

#endif /* TM_TEST_STAMP_H */
