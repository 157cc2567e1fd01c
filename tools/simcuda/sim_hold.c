/* sim_hold.c — a program held at a known kernel launch (SIMCUDA_HOLD=LAUNCH:PATH).
 *
 * Tests that read a running program from outside (its stats region, its mappings) need it
 * to be at a known point while they look, however loaded the machine is: the LAUNCH-th
 * kernel launch of the process waits, before it runs and with no lock held, until PATH
 * exists. A hold nobody releases ends after a minute, with one line, so a test that fails
 * before it creates the file does not hang. */
#include <sys/stat.h>
#include <time.h>

#include "tools/simcuda/sim_internal.h"

#define HOLD_POLL_NS 10000000L /* 10 ms */
#define HOLD_MAX_POLLS 6000    /* a minute */

void sim_hold_launch(uint64_t n)
{
    if (!sim.config.hold_launch || n != sim.config.hold_launch)
        return;
    sim_info("SIMCUDA_HOLD: launch %llu waits for %s", (unsigned long long)n, sim.config.hold_path);
    struct stat st;
    for (int i = 0; i < HOLD_MAX_POLLS; i++) {
        if (stat(sim.config.hold_path, &st) == 0)
            return;
        nanosleep(&(struct timespec){ .tv_nsec = HOLD_POLL_NS }, NULL);
    }
    sim_log("SIMCUDA_HOLD: %s did not appear within a minute; launch %llu runs", sim.config.hold_path,
            (unsigned long long)n);
}
