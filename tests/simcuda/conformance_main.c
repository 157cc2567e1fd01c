/* conformance_main.c — the CUDA driver conformance program.
 *
 * Written only against cuda.h, it runs unchanged on simcuda (make test) and on a real GPU
 * (tests/gpu/conformance.sh). Groups run in a fixed order; cases that need a process of
 * their own (before cuInit, primary-context reset) re-run this program with --child.
 */
#include <stddef.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

static const struct child_case child_cases[] = {
    {"before_init", child_before_init},
    {"init_flags", child_init_flags},
    {"release_unretained", child_release_unretained},
    {"primary_reset", child_primary_reset},
    {"ipc_import", child_ipc_import},
    {"vmm_import", child_vmm_import},
};

int main(int argc, char **argv)
{
    int child_status = child_dispatch(argc, argv, child_cases,
                                      sizeof child_cases / sizeof child_cases[0]);
    if (child_status >= 0)
        return child_status;
    /* A driver that deadlocks must fail the run, not hang it (SIGALRM ends the process). */
    alarm(600);
    int failed = 0;
    failed += run_init_tests();
    failed += run_memory_tests();
    failed += run_vmm_tests();
    failed += run_stream_event_tests();
    failed += run_module_launch_tests();
    failed += run_proc_address_tests();
    failed += run_graph_tests();
    failed += run_ipc_tests();
    return failed ? 1 : 0;
}
