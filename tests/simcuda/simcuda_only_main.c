/* simcuda_only_main.c — tests of what only simcuda has: SIMCUDA_* settings, the host-kernel
 * ABI and the time model, unimplemented functions, its answers where a real driver's behaviour is
 * undefined, and what the CUDA runtime asks beyond the documented API. Not run on a GPU (tests/gpu/conformance.sh runs simcuda_conformance only).
 */
#include <stddef.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

static const struct child_case child_cases[] = {
    {"print_capacity", child_print_capacity},
    {"report_init", child_report_init},
    {"capacity_alloc", child_capacity_alloc},
    {"capacity_vmm", child_capacity_vmm},
    {"capacity_context_teardown", child_capacity_context_teardown},
    {"numa_listed_nodes", child_numa_listed_nodes},
    {"numa_host_nodes", child_numa_host_nodes},
    {"host_numa_vmm_off", child_host_numa_vmm_off},
    {"host_numa_vmm_on", child_host_numa_vmm_on},
    {"unimplemented", child_unimplemented},
    {"copy_without_access", child_copy_without_access},
    {"copy_peer", child_copy_peer},
    {"time_htod", child_time_htod},
    {"time_copy_engines", child_time_copy_engines},
    {"time_kernel_roofline", child_time_kernel_roofline},
    {"time_host_clock", child_time_host_clock},
    {"time_abi1", child_time_abi1},
    {"time_vmm", child_time_vmm},
    {"time_copy_setup", child_time_copy_setup},
    {"managed_api", child_managed_api},
    {"managed_sweeps", child_managed_sweeps},
    {"ipc_export_and_exit", child_ipc_export_and_exit},
    {"hold_launch", child_hold_launch},
    {"export_trap", child_export_trap},
    {"export_unknown_traps", child_export_unknown_traps},
    {"storage_threads", child_storage_threads},
    {"gpu_launch_refused", child_gpu_launch_refused},
    {"gpu_launch_held", child_gpu_launch_held},
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
    failed += run_simcuda_env_tests();
    failed += run_simcuda_module_tests();
    failed += run_simcuda_handle_tests();
    failed += run_simcuda_time_tests();
    failed += run_simcuda_managed_tests();
    failed += run_simcuda_ipc_tests();
    failed += run_simcuda_export_tests();
    failed += run_simcuda_library_tests();
    return failed ? 1 : 0;
}
