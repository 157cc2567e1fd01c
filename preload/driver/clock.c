/* clock.c — the budget clock (see clock.h). */
#include "preload/driver/clock.h"

#include <time.h>

#include "preload/driver/driver.h"

bool tm_clock_simulated(void)
{
    return tm_real.simcuda_now_ns != NULL;
}

uint64_t tm_clock_ns(void)
{
    if (tm_real.simcuda_now_ns)
        return tm_real.simcuda_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
