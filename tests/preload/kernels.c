/* kernels.c — host kernels for the interposer tests (a simcuda module).
 *
 *   add_bytes(uint8_t *data, uint64_t n, uint32_t delta): data[i] += delta, for i < n
 *
 * It touches every byte of its range from the "device" side, so a chunk mapped without
 * access or in the wrong place faults or reads wrong values. */
#include <stdint.h>

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
