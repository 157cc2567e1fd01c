/* harness.h — what every driver conformance test file shares.
 *
 * The conformance tests are written only against cuda.h, so the same sources build
 * against simcuda (build/tests/simcuda_conformance) and against a real driver
 * (tests/gpu/conformance.sh). This header gives them:
 *   - assertions on CUresult values that name the codes when they fail,
 *   - a fixture that makes the device's primary context current,
 *   - fresh processes (for calls before cuInit and for per-process settings),
 *   - the test kernel module and host-mapped buffers for stream tests.
 */
#ifndef TESTS_SIMCUDA_HARNESS_H
#define TESTS_SIMCUDA_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>

#include "tests/simcuda/test_kernels.h"

/* ---------------------------------------------------------------------------------------
 * Result assertions
 * ------------------------------------------------------------------------------------ */

/* Name of a CUresult as cuda.h spells it, from the header itself (not from the driver). */
const char *cu_result_name(CUresult rc);

void check_cu_result(CUresult got, CUresult expected, const char *expr, const char *file, int line);
void check_cu_either(CUresult got, CUresult a, CUresult b, const char *expr, const char *file,
                     int line);

/* A call expected to succeed stops the test when it does not. A call expected to fail with
 * a documented code that returns another one is reported and counted, and the test goes
 * on, so one run lists every mismatch; the test fails at its end (see conformance_test). */
extern int cu_code_mismatches;
int fail_on_code_mismatches(void **state);

/* Registers a test whose code mismatches fail it when it ends. */
#define conformance_test(f) cmocka_unit_test_teardown(f, fail_on_code_mismatches)

/* The call must return exactly `expected`. */
#define assert_cu(call, expected) check_cu_result((call), (expected), #call, __FILE__, __LINE__)
#define assert_cu_ok(call) assert_cu(call, CUDA_SUCCESS)
/* Where the documentation lists two codes that both fit the case, either is accepted. */
#define assert_cu_either(call, a, b) check_cu_either((call), (a), (b), #call, __FILE__, __LINE__)

/* ---------------------------------------------------------------------------------------
 * Primary-context fixture
 * ------------------------------------------------------------------------------------ */

struct test_device {
    CUdevice dev;        /* device ordinal 0 */
    CUcontext primary;   /* its primary context, retained by the fixture */
};
extern struct test_device tdev;

/* Group setup/teardown: cuInit, retain the primary context of device 0, make it current. */
int setup_primary_context(void **state);
int teardown_primary_context(void **state);

/* Granularity of DEVICE allocations on tdev.dev (CU_MEM_ALLOC_GRANULARITY_MINIMUM). */
size_t device_granularity(void);
CUmemAllocationProp device_alloc_prop(void);

/* Runs fn(arg) on a new thread, which starts with no current context, and joins it.
 * Record results in *arg; assert in the calling thread (cmocka cannot fail from others). */
void run_on_new_thread(void *(*fn)(void *), void *arg);

/* ---------------------------------------------------------------------------------------
 * Fresh processes
 * ------------------------------------------------------------------------------------ */

/* A case that runs in a process of its own; returns the number of failed checks. */
struct child_case {
    const char *name;
    int (*run)(void);
};

/* When argv is "PROG --child NAME", runs that case from `cases` and returns its exit status
 * (0 when every check passed); otherwise returns -1 and the program runs its groups. */
int child_dispatch(int argc, char **argv, const struct child_case *cases, size_t n_cases);

/* Runs this program again as "--child NAME" with every SIMCUDA_* variable removed from the
 * environment and `extra_env` ("KEY=VALUE" strings, NULL-terminated, may be NULL) added.
 * Captures stdout and stderr together into `output` (always NUL-terminated). Returns the
 * exit status, 128+signal when it was killed, or -1 when it could not run or timed out. */
int run_child(const char *name, const char *const *extra_env, char *output, size_t output_size);

/* Fails the current test, showing the child's output, unless the case exits with 0. */
void assert_child_passes(const char *name, const char *const *extra_env);

/* An IPC handle as hex text (2 * CU_IPC_HANDLE_SIZE characters and a NUL), to hand to a
 * child in its environment or read back from its output; the parse is false on anything
 * else. */
void ipc_handle_to_hex(const CUipcMemHandle *handle, char hex[2 * CU_IPC_HANDLE_SIZE + 1]);
bool ipc_handle_from_hex(const char *hex, CUipcMemHandle *handle);

/* In a child: initialises the driver, makes device 0's primary context current; the
 * failed checks (0 when it worked). */
int child_start(CUdevice *dev);

/* Checks inside a child: print what failed to stderr and count it, never abort. */
extern int child_failures;
#define child_expect(cond, ...)                                                       \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            child_failures++;                                                         \
        }                                                                             \
    } while (0)
#define child_expect_cu(call, expected)                                                   \
    do {                                                                                  \
        CUresult child_rc_ = (call);                                                      \
        child_expect(child_rc_ == (expected), "%s returned %s, expected %s", #call,       \
                     cu_result_name(child_rc_), cu_result_name(expected));                \
    } while (0)

/* ---------------------------------------------------------------------------------------
 * Test kernels and host-mapped buffers
 * ------------------------------------------------------------------------------------ */

/* CONFORMANCE_MODULE is the module image the build made: the host-kernel library on
 * simcuda, a fatbin from tests/simcuda/kernels.cu on a GPU. */
#ifndef CONFORMANCE_MODULE
#error "CONFORMANCE_MODULE must name the test kernel module (set by the build)"
#endif

struct test_module {
    CUmodule module;
    CUfunction probe;     /* records its launch configuration and arguments */
    CUfunction fill_u32;  /* out[i] = base + i */
    CUfunction gate;      /* waits for a host flag, then reports */
};

/* Loads CONFORMANCE_MODULE into the current context and looks up every kernel. */
void load_test_module(struct test_module *tm);
void unload_test_module(struct test_module *tm);

/* Page-locked host memory mapped for the device: the host reads and writes `host`, kernels
 * and async copies use `dev`. */
struct mapped_buffer {
    void *host;      /* [bytes] */
    CUdeviceptr dev; /* [bytes], the same memory seen from the device */
    size_t bytes;
};
void mapped_buffer_alloc(struct mapped_buffer *b, size_t bytes);
void mapped_buffer_free(struct mapped_buffer *b);

/* A launched gate kernel that holds its stream until gate_open() (or the timeout). */
struct gate {
    struct mapped_buffer flag_and_done; /* [2] uint32: flag set by the host, done by the kernel */
};
void gate_launch(struct gate *g, const struct test_module *tm, CUstream stream);
void gate_open(struct gate *g);
/* GATE_DONE when the kernel saw the flag, GATE_TIMED_OUT, or 0 when it has not finished. */
uint32_t gate_state(const struct gate *g);
void gate_free(struct gate *g);

/* ---------------------------------------------------------------------------------------
 * Work that is still pending
 * ------------------------------------------------------------------------------------ */

/* Some tests need work that has not finished yet (a held gate kernel, NOT_READY, arguments
 * changed after cuLaunchKernel returns). A driver may complete all work at submission (a
 * real driver with CUDA_LAUNCH_BLOCKING=1 does; simcuda always does): then there is never
 * pending work and such tests cannot run. Probed with a gate kernel held for a short
 * while: if the launch only returns once the kernel finished, work completes at submission. */
bool driver_completes_work_at_submission(void);

/* Runs a group of tests that need pending work, or, where the driver completes work at
 * submission, reports each as "ok N - name # SKIP why" (cmocka 1.1's own skip reads as a
 * failure in TAP). Returns the number of failed tests. */
int run_pending_work_group(const char *name, const struct CMUnitTest *tests, size_t n_tests,
                           CMFixtureFunction setup, CMFixtureFunction teardown);

/* Reads a uint32 the device side (a kernel) may write. */
uint32_t load_u32(const void *p);

void sleep_ms(unsigned ms);
double now_ms(void);

/* A thread's body: creates the file `path` (a char *) 300 ms after it starts, to release
 * a program held by SIMCUDA_HOLD. */
void *create_file_later(void *path);

/* In a child: the PATH of its SIMCUDA_HOLD=LAUNCH:PATH, or NULL. */
const char *held_child_path(void);

/* Runs child case `name` with SIMCUDA_HOLD=LAUNCH:DIR/go in a new directory, and asserts
 * that it passes. */
void assert_held_child_passes(const char *name, int launch);

#endif /* TESTS_SIMCUDA_HARNESS_H */
