/* sim_fail.c — driver fault injection (SIMCUDA_FAIL=NAME:N[:ERROR],...).
 *
 * Every implemented entry point starts with SIM_FAIL_POINT(its name). When a rule names
 * the function, the rule counts its calls, and the Nth returns the rule's error before the
 * function does anything: the caller sees a driver that refused that one call. The rules
 * are parsed with the rest of the configuration (sim_state.c); cuInit's first call comes
 * before them and cannot be failed. With SIMCUDA_LOG=info the exit summary gives each
 * rule's call count, so a test can learn how many calls there are to walk. */
#include <stdio.h>
#include <string.h>

#include "tools/simcuda/sim_internal.h"

static uint64_t calls[SIM_MAX_FAIL_RULES]; /* per rule: calls of its function so far */

bool sim_fail_inject(const char *name, CUresult *error)
{
    int count = __atomic_load_n(&sim.config.fail_count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < count; i++) {
        const sim_fail_rule *rule = &sim.config.fail[i];
        if (strcmp(rule->name, name) != 0)
            continue;
        uint64_t n = __atomic_add_fetch(&calls[i], 1, __ATOMIC_RELAXED);
        if (n != rule->nth)
            continue;
        const char *error_name = NULL;
        cuGetErrorName(rule->error, &error_name);
        sim_info("SIMCUDA_FAIL: call %llu of %s fails with %s", (unsigned long long)n, name,
                 error_name ? error_name : "?");
        *error = rule->error;
        return true;
    }
    return false;
}

void sim_fail_summary(void)
{
    for (int i = 0; i < sim.config.fail_count; i++)
        sim_info("exit: SIMCUDA_FAIL %s: %llu calls", sim.config.fail[i].name,
                 (unsigned long long)__atomic_load_n(&calls[i], __ATOMIC_RELAXED));
}
