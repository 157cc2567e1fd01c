// cudart_ipc.cu — legacy CUDA IPC through the CUDA runtime between two processes, as
// vLLM's custom all-reduce does it: the parent allocates, fills and exports a handle with
// cudaIpcGetMemHandle; a child started with fork+exec (the same program, with the handle
// on its command line) opens it with cudaIpcOpenMemHandle, checks what the parent wrote
// and writes the other half; the parent checks that. Once for memory libtiermem.so chunks
// (16 MiB) and once for memory it leaves to the driver (1 MiB). Under libtiermem.so the
// child inherits LD_PRELOAD and the two share chunked memory through tiermem's own
// handles. Built and run as tests/cudart/module.mk and cases.txt say.
//
//   cudart_ipc share                  the parent: both sizes, a child for each
//   cudart_ipc child HEX BYTES SEED   the child (started by share): exit status 0, or the
//                                     sum of the steps that failed (open 1, read 2,
//                                     write 4, close 8)
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "tests/cudart/cudart_tap.h"

enum { CHILD_OPEN = 1, CHILD_READ = 2, CHILD_WRITE = 4, CHILD_CLOSE = 8 };

static void handle_to_hex(const cudaIpcMemHandle_t *handle, char *hex)
{
    const unsigned char *bytes = (const unsigned char *)handle;
    for (size_t i = 0; i < sizeof *handle; i++)
        snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
}

static bool hex_to_handle(const char *hex, cudaIpcMemHandle_t *handle)
{
    unsigned char *bytes = (unsigned char *)handle;
    if (strlen(hex) != 2 * sizeof *handle)
        return false;
    for (size_t i = 0; i < sizeof *handle; i++) {
        unsigned value;
        if (sscanf(hex + 2 * i, "%2x", &value) != 1)
            return false;
        bytes[i] = (unsigned char)value;
    }
    return true;
}

// ---------------------------------------------------------------- the child

// Reads the first half (the parent's pattern of `seed`), writes the second half with the
// pattern of seed + 1. Says what went wrong on stderr and in its exit status.
static int run_child(const char *hex, size_t bytes, unsigned seed)
{
    cudaIpcMemHandle_t handle;
    if (!hex_to_handle(hex, &handle) || bytes == 0 || bytes % 2) {
        fprintf(stderr, "child: bad arguments\n");
        return 2 * (CHILD_OPEN | CHILD_READ | CHILD_WRITE | CHILD_CLOSE);
    }
    int failed = 0;
    unsigned char *shared = NULL;
    cudaError_t error = cudaIpcOpenMemHandle((void **)&shared, handle, cudaIpcMemLazyEnablePeerAccess);
    if (error != cudaSuccess) {
        fprintf(stderr, "child: cudaIpcOpenMemHandle: %s\n", cudaGetErrorName(error));
        return CHILD_OPEN | CHILD_READ | CHILD_WRITE | CHILD_CLOSE;
    }
    const size_t half = bytes / 2;
    unsigned char *host = (unsigned char *)malloc(half);
    if (cudaMemcpy(host, shared, half, cudaMemcpyDeviceToHost) != cudaSuccess || !tap_pattern_holds(host, half, seed))
        failed |= CHILD_READ;
    tap_pattern_fill(host, half, seed + 1);
    if (cudaMemcpy(shared + half, host, half, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
        failed |= CHILD_WRITE;
    if (cudaIpcCloseMemHandle(shared) != cudaSuccess)
        failed |= CHILD_CLOSE;
    free(host);
    return failed;
}

// ---------------------------------------------------------------- the parent

// Starts this program as the child with fork+exec and returns its exit status (-1: it
// did not exit normally).
static int start_child(const char *hex, size_t bytes, unsigned seed)
{
    char self[4096], size_text[32], seed_text[16];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    snprintf(size_text, sizeof size_text, "%zu", bytes);
    snprintf(seed_text, sizeof seed_text, "%u", seed);
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "child", hex, size_text, seed_text, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void share_case(const char *label, size_t bytes, unsigned seed)
{
    const size_t half = bytes / 2;
    unsigned char *device = NULL, *host = (unsigned char *)malloc(bytes);
    char what[160];
    snprintf(what, sizeof what, "%s: cudaMalloc", label);
    if (!TAP_CUDA(cudaMalloc((void **)&device, bytes), what))
        return;
    tap_pattern_fill(host, half, seed);
    memset(host + half, 0, half);
    snprintf(what, sizeof what, "%s: the first half filled, the second zeroed", label);
    TAP_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), what);
    cudaIpcMemHandle_t handle;
    memset(&handle, 0, sizeof handle);
    snprintf(what, sizeof what, "%s: cudaIpcGetMemHandle", label);
    if (TAP_CUDA(cudaIpcGetMemHandle(&handle, device), what)) {
        char hex[2 * sizeof handle + 1];
        handle_to_hex(&handle, hex);
        const int status = start_child(hex, bytes, seed);
        TAP_CHECK(status >= 0 && !(status & CHILD_OPEN), "%s: the child (fork+exec) opened the handle (status %d)",
                  label, status);
        TAP_CHECK(status >= 0 && !(status & CHILD_READ), "%s: the child read the parent's half intact", label);
        TAP_CHECK(status >= 0 && !(status & CHILD_WRITE), "%s: the child wrote the other half", label);
        TAP_CHECK(status >= 0 && !(status & CHILD_CLOSE), "%s: the child closed the handle", label);
        memset(host, 0, bytes);
        snprintf(what, sizeof what, "%s: cudaMemcpy back in the parent", label);
        TAP_CUDA(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), what);
        TAP_CHECK(tap_pattern_holds(host, half, seed) && tap_pattern_holds(host + half, half, seed + 1),
                  "%s: the parent sees its half unchanged and the child's half as the child wrote it", label);
    }
    snprintf(what, sizeof what, "%s: cudaFree after the child closed it", label);
    TAP_CUDA(cudaFree(device), what);
    free(host);
}

static int run_share(void)
{
    TAP_CUDA(cudaFree(0), "cudaFree(0)");
    share_case("16 MiB (chunked under libtiermem.so)", (size_t)16 << 20, 40);
    share_case("1 MiB (the driver's own)", (size_t)1 << 20, 50);
    return tap_plan();
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "share") == 0)
        return run_share();
    if (argc == 5 && strcmp(argv[1], "child") == 0)
        return run_child(argv[2], (size_t)strtoull(argv[3], NULL, 10), (unsigned)strtoul(argv[4], NULL, 10));
    fprintf(stderr, "usage: %s share | child HANDLE_HEX BYTES SEED\n", argv[0]);
    return 2;
}
