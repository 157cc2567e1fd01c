/* simcuda_only.h — the groups and fresh-process cases of the simcuda-only test program
 * (what a real driver does not have, or leaves undefined). */
#ifndef TESTS_SIMCUDA_SIMCUDA_ONLY_H
#define TESTS_SIMCUDA_SIMCUDA_ONLY_H

int run_simcuda_env_tests(void);
int run_simcuda_module_tests(void);
int run_simcuda_handle_tests(void);
int run_simcuda_time_tests(void);
int run_simcuda_managed_tests(void);
int run_simcuda_ipc_tests(void);
int run_simcuda_export_tests(void);
int run_simcuda_library_tests(void);

int child_print_capacity(void);
int child_report_init(void);
int child_capacity_alloc(void);
int child_capacity_vmm(void);
int child_capacity_context_teardown(void);
int child_numa_listed_nodes(void);
int child_numa_host_nodes(void);
int child_host_numa_vmm_off(void);
int child_host_numa_vmm_on(void);
int child_unimplemented(void);
int child_copy_without_access(void);
int child_copy_peer(void);
int child_time_htod(void);
int child_time_copy_engines(void);
int child_time_kernel_roofline(void);
int child_time_host_clock(void);
int child_time_abi1(void);
int child_time_vmm(void);
int child_time_copy_setup(void);
int child_managed_api(void);
int child_managed_sweeps(void);
int child_ipc_export_and_exit(void);
int child_hold_launch(void);
int child_export_trap(void);
int child_export_unknown_traps(void);
int child_storage_threads(void);
int child_gpu_launch_refused(void);
int child_gpu_launch_held(void);

#endif /* TESTS_SIMCUDA_SIMCUDA_ONLY_H */
