/* kernels.c — host kernels for the interposer tests (a simcuda module).
 *
 *   add_bytes(uint8_t *data, uint64_t n, uint32_t delta): data[i] += delta, for i < n
 *   check_stamp(uint32_t *data, uint64_t n, uint32_t seed, uint32_t version, uint64_t *bad):
 *       counts into *bad the bytes of data[0, n) that differ from stamp(seed, i, version),
 *       then writes stamp(seed, i, version + 1) (migrate_stress.c)
 *   sum_bytes(const uint8_t *data, uint64_t n, uint64_t *sum): *sum += data[0] + ... +
 *       data[n - 1], reading data only (filecopy.c's graph over file-tier memory)
 *
 * It touches every byte of its range from the "device" side, so a chunk mapped without
 * access or in the wrong place faults or reads wrong values. */
#include <stdint.h>

#include "tests/preload/stamp.h"
#include "tools/simcuda/simcuda.h"

SIMCUDA_MODULE();

SIMCUDA_KERNEL(add_bytes)
{
    uint8_t *data = SIMCUDA_ARG(launch, 0, uint8_t *); /* [n] */
    uint64_t n = SIMCUDA_ARG(launch, 1, uint64_t);
    uint32_t delta = SIMCUDA_ARG(launch, 2, uint32_t);
    for (uint64_t i = 0; i < n; i++)
        data[i] = (uint8_t)(data[i] + delta);
}

SIMCUDA_KERNEL(check_stamp)
{
    uint32_t *data = SIMCUDA_ARG(launch, 0, uint32_t *); /* [n] */
    uint64_t n = SIMCUDA_ARG(launch, 1, uint64_t);
    uint32_t seed = SIMCUDA_ARG(launch, 2, uint32_t);
    uint32_t version = SIMCUDA_ARG(launch, 3, uint32_t);
    uint64_t *bad = SIMCUDA_ARG(launch, 4, uint64_t *); /* [1] */
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t diff = data[i] ^ test_stamp(seed, i, version);
        for (; diff; diff >>= 8)
            wrong += (diff & 0xff) != 0;
        data[i] = test_stamp(seed, i, version + 1);
    }
    if (wrong)
        __atomic_fetch_add(bad, wrong, __ATOMIC_RELAXED);
}

/* a parameter table, so that a launch of it can be captured into a graph */
SIMCUDA_KERNEL_PARAMS(sum_bytes, SIMCUDA_PARAM(const uint8_t *), SIMCUDA_PARAM(uint64_t), SIMCUDA_PARAM(uint64_t *));
SIMCUDA_KERNEL(sum_bytes)
{
    const uint8_t *data = SIMCUDA_ARG(launch, 0, const uint8_t *); /* [n] */
    uint64_t n = SIMCUDA_ARG(launch, 1, uint64_t);
    uint64_t *sum = SIMCUDA_ARG(launch, 2, uint64_t *);            /* [1] */
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++)
        total += data[i];
    *sum += total;
}
