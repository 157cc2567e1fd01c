// cudart_cublas.cu — cuBLAS (libcublas.so.13, with its own copies of the runtime inside it
// and cuBLASLt) on simcuda and on a GPU, with and without libtiermem.so in front. simcuda
// runs no GPU code, so this shows how far a library that launches kernels gets: handle,
// workspace on chunked memory, stream, matrix copies, and a GEMM that must fail with a
// status (docs/compatibility.md says what stops it), never crash, after which the process
// and the handle still work. On a GPU the GEMM runs and its result is checked. Built and
// run as tests/cudart/module.mk and cases.txt say.
//
//   cudart_cublas gemm     cublasCreate, cublasSetWorkspace on a 32 MiB cudaMalloc,
//                          cublasSetStream, cublasSetMatrix and GetMatrix, cublasSgemm
//   cudart_cublas create   cublasCreate on a 64 MiB simcuda device: its own 64 MiB
//                          allocation needs libtiermem.so (without it: ALLOC_FAILED)
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "tests/cudart/cudart_tap.h"

static bool tap_cublas_is(cublasStatus_t got, cublasStatus_t expected, const char *what)
{
    char detail[256];
    snprintf(detail, sizeof detail, "returned %s, expected %s", cublasGetStatusName(got),
             cublasGetStatusName(expected));
    return tap_result(got == expected, detail, "%s", what);
}
#define TAP_CUBLAS(call, what) tap_cublas_is((call), CUBLAS_STATUS_SUCCESS, (what))

static const int kN = 256;

static int run_gemm(void)
{
    const bool gpu = tap_on_gpu();
    cublasHandle_t handle = NULL;
    if (!TAP_CUBLAS(cublasCreate(&handle), "cublasCreate"))
        return tap_plan();
    int version = 0;
    TAP_CUBLAS(cublasGetVersion(handle, &version), "cublasGetVersion");
    TAP_CHECK(version >= 130000, "cuBLAS 13 (version %d)", version);

    // The workspace: chunked by libtiermem.so (32 MiB), handed to cuBLAS.
    const size_t workspace_bytes = (size_t)32 << 20;
    void *workspace = NULL;
    TAP_CUDA(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc of a 32 MiB workspace");
    TAP_CUBLAS(cublasSetWorkspace(handle, workspace, workspace_bytes), "cublasSetWorkspace on it");
    cudaStream_t stream = NULL;
    TAP_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    TAP_CUBLAS(cublasSetStream(handle, stream), "cublasSetStream");
    cudaStream_t seen = NULL;
    TAP_CUBLAS(cublasGetStream(handle, &seen), "cublasGetStream");
    TAP_CHECK(seen == stream, "the handle works on the stream it was given");

    // A all ones, B all twos: every element of C = A B is 2 n.
    const size_t bytes = (size_t)kN * kN * sizeof(float);
    float *host = (float *)malloc(bytes), *back = (float *)malloc(bytes);
    float *a = NULL, *b = NULL, *c = NULL;
    TAP_CUDA(cudaMalloc((void **)&a, bytes), "cudaMalloc A");
    TAP_CUDA(cudaMalloc((void **)&b, bytes), "cudaMalloc B");
    TAP_CUDA(cudaMalloc((void **)&c, bytes), "cudaMalloc C");
    for (int i = 0; i < kN * kN; i++)
        host[i] = 1.0f;
    TAP_CUBLAS(cublasSetMatrix(kN, kN, sizeof(float), host, kN, a, kN), "cublasSetMatrix A");
    for (int i = 0; i < kN * kN; i++)
        host[i] = 2.0f;
    TAP_CUBLAS(cublasSetMatrix(kN, kN, sizeof(float), host, kN, b, kN), "cublasSetMatrix B");
    TAP_CUBLAS(cublasGetMatrix(kN, kN, sizeof(float), b, kN, back, kN), "cublasGetMatrix B");
    TAP_CHECK(memcmp(host, back, bytes) == 0, "B came back from the device as it went");
    TAP_CUDA(cudaMemset(c, 0, bytes), "cudaMemset C to zero");

    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t gemm = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a, kN, b, kN, &zero,
                                            c, kN);
    TAP_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize after the GEMM");
    TAP_CUBLAS(cublasGetMatrix(kN, kN, sizeof(float), c, kN, back, kN), "cublasGetMatrix C");
    if (gpu) {
        tap_cublas_is(gemm, CUBLAS_STATUS_SUCCESS, "cublasSgemm runs");
        bool exact = true;
        for (int i = 0; i < kN * kN; i++)
            exact &= back[i] == 2.0f * kN;
        TAP_CHECK(exact, "every element of C is %d", 2 * kN);
    } else {
        // Measured: cuBLASLt's GEMM path asks the driver's TOOLS_TLS table for slot 2,
        // which simcuda does not know; cuBLAS turns that into NOT_SUPPORTED.
        tap_cublas_is(gemm, CUBLAS_STATUS_NOT_SUPPORTED, "cublasSgemm fails with CUBLAS_STATUS_NOT_SUPPORTED");
        bool untouched = true;
        for (int i = 0; i < kN * kN; i++)
            untouched &= back[i] == 0.0f;
        TAP_CHECK(untouched, "C is untouched (no GPU code ran)");
    }
    TAP_CUDA(cudaGetLastError(), "the runtime holds no error afterwards");
    // The process and the handle go on.
    TAP_CUBLAS(cublasGetMatrix(kN, kN, sizeof(float), a, kN, back, kN), "cublasGetMatrix A after the GEMM");
    bool ones = true;
    for (int i = 0; i < kN * kN; i++)
        ones &= back[i] == 1.0f;
    TAP_CHECK(ones, "A still holds its ones");
    TAP_CUBLAS(cublasDestroy(handle), "cublasDestroy");
    TAP_CUDA(cudaFree(a), "cudaFree A");
    TAP_CUDA(cudaFree(b), "cudaFree B");
    TAP_CUDA(cudaFree(c), "cudaFree C");
    TAP_CUDA(cudaFree(workspace), "cudaFree of the workspace after cublasDestroy");
    TAP_CUDA(cudaStreamDestroy(stream), "cudaStreamDestroy");
    free(host);
    free(back);
    return tap_plan();
}

static int run_create(void)
{
    if (tap_on_gpu()) {
        TAP_SKIP("a GPU has more than 64 MiB; simcuda runs this case", "cublasCreate on a 64 MiB device");
        return tap_plan();
    }
    cudaDeviceProp prop;
    TAP_CUDA(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    TAP_CHECK(prop.totalGlobalMem == ((size_t)64 << 20), "a 64 MiB device (%zu bytes)", (size_t)prop.totalGlobalMem);
    cublasHandle_t handle = NULL;
    const cublasStatus_t created = cublasCreate(&handle);
    if (tap_tiered()) {
        tap_cublas_is(created, CUBLAS_STATUS_SUCCESS, "under libtiermem.so cublasCreate gets its 64 MiB");
        TAP_CUBLAS(cublasDestroy(handle), "cublasDestroy");
    } else {
        tap_cublas_is(created, CUBLAS_STATUS_ALLOC_FAILED,
                      "without libtiermem.so cublasCreate fails: its 64 MiB do not fit beside the context");
    }
    void *after = NULL;
    TAP_CUDA(cudaMalloc(&after, (size_t)8 << 20), "cudaMalloc of 8 MiB afterwards");
    TAP_CUDA(cudaFree(after), "cudaFree");
    return tap_plan();
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "gemm") == 0)
        return run_gemm();
    if (argc == 2 && strcmp(argv[1], "create") == 0)
        return run_create();
    fprintf(stderr, "usage: %s gemm | create\n", argv[0]);
    return 2;
}
