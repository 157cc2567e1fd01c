/* suites.h — the groups of the conformance program and the cases it runs in fresh
 * processes. Each run_*_tests() runs its cmocka groups and returns the failure count. */
#ifndef TESTS_SIMCUDA_SUITES_H
#define TESTS_SIMCUDA_SUITES_H

int run_init_tests(void);
int run_memory_tests(void);
int run_vmm_tests(void);
int run_stream_event_tests(void);
int run_module_launch_tests(void);
int run_proc_address_tests(void);
int run_graph_tests(void);
int run_ipc_tests(void);

/* Fresh-process cases (see child_dispatch in harness.h). */
int child_before_init(void);
int child_init_flags(void);
int child_release_unretained(void);
int child_primary_reset(void);
int child_ipc_import(void);
int child_vmm_import(void);

#endif /* TESTS_SIMCUDA_SUITES_H */
