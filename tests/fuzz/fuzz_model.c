/* fuzz_model.c — libFuzzer target for everything between an untrusted GGUF file and a
 * loaded model: the reader, the llama configuration, the tokenizer set-up, the weight
 * checks (weights_check, weights_bytes) and model_load's sizing of weights, activation
 * buffers and the KV pool. The device is host memory behind the few driver entry points
 * the load uses, with a small capacity so a hostile shape runs out of it rather than out
 * of the fuzzer's memory. Built and run by `make fuzz`. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/model_config.h"
#include "engine/tokenizer.h"
#include "engine/weights.h"

#define FAKE_DEVICE_BYTES ((size_t)64 << 20)

static size_t device_used;

/* Each fake allocation keeps its size in front, so frees give it back. */
static CUresult CUDAAPI fake_alloc(CUdeviceptr *dptr, size_t bytes)
{
    if (bytes > FAKE_DEVICE_BYTES - device_used) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t *block = malloc(sizeof(size_t) + (bytes ? bytes : 1));
    if (!block) return CUDA_ERROR_OUT_OF_MEMORY;
    block[0] = bytes;
    device_used += bytes;
    *dptr = (CUdeviceptr)(uintptr_t)(block + 1);
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_free(CUdeviceptr dptr)
{
    if (!dptr) return CUDA_SUCCESS;
    size_t *block = (size_t *)(uintptr_t)dptr - 1;
    device_used -= block[0];
    free(block);
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_copy(CUdeviceptr dst, const void *src, size_t bytes)
{
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_info(size_t *free_bytes, size_t *total)
{
    *free_bytes = FAKE_DEVICE_BYTES - device_used;
    *total = FAKE_DEVICE_BYTES;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI fake_sync(CUcontext ctx)
{
    (void)ctx;
    return CUDA_SUCCESS;
}

/* The engine's driver.c (dlopen, kernels) is not part of this target: names come from here. */
const char *tm_cu_name(const tm_driver *drv, CUresult rc)
{
    (void)drv;
    return rc == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_UNKNOWN";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tm_driver drv;
    drv.cuMemAlloc = fake_alloc;
    drv.cuMemFree = fake_free;
    drv.cuMemcpyHtoD = fake_copy;
    drv.cuMemGetInfo = fake_info;
    drv.cuCtxSynchronize = fake_sync;
    drv.device_total = FAKE_DEVICE_BYTES;

    gguf_file f;
    char err[GGUF_ERROR_MAX];
    if (gguf_parse(data, size, &f, err) == 0) {
        static tm_model m;
        memset(&m, 0, sizeof m);
        tokenizer tok;
        bool tok_loaded = false;
        if (llama_config_load(&m.cfg, &f, err) == 0 && weights_check(&f, &m.cfg, err, sizeof err) == 0 &&
            (tok_loaded = tokenizer_load(&tok, &f, err) == 0)) {
            (void)weights_bytes(&f, &m.cfg);
            /* what a one-shot run of 64 positions asks for, as the CLI sizes it */
            model_options opt = {16, 64, {TM_KV_FP8_E4M3, 16, 0, 0.9, 0, tm_kv_blocks_for(64, 16)}};
            if (model_load(&m, &drv, &f, &opt) == 0) model_free(&m);
        }
        if (tok_loaded) tokenizer_free(&tok);
    }
    gguf_close(&f);
    if (device_used != 0) __builtin_trap(); /* a load that fails must give back what it took */
    return 0;
}
