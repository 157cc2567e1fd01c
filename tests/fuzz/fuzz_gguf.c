/* fuzz_gguf.c — libFuzzer target for everything that reads an untrusted GGUF file:
 * the reader, every metadata accessor, the model configuration of each architecture,
 * the tensor checks against it (shapes that disagree with the metadata), the decoding
 * of every block-quantised tensor's rows (block bounds of Q4_0 .. Q6_K) and both
 * tokenizers.
 * Build and run with `make fuzz` (clang -fsanitize=fuzzer,address,undefined). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/tokenizer.h"
#include "engine/weights.h"
#include "kernels/quants.h"

/* Decodes the first and last row of every tensor of a block-quantised type, as the
 * kernels would read them: a row is dims[0] values, so the kernels' row size must fit
 * in the bytes the reader validated. */
static void decode_quantised(const gguf_file *f)
{
    static float row[1 << 16];
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        int64_t n = t->dims[0], row_bytes = tm_wtype_row_bytes((int32_t)t->type, n);
        if (tm_wtype_block((int32_t)t->type) < 32 || row_bytes == 0 || n > (int64_t)(sizeof row / sizeof *row))
            continue;
        if (row_bytes > (int64_t)t->n_bytes) __builtin_trap(); /* the reader let a short tensor through */
        int64_t rows = (int64_t)t->n_bytes / row_bytes;
        (void)tm_dequantize_row((int32_t)t->type, row, t->data, n);
        (void)tm_dequantize_row((int32_t)t->type, row, (const uint8_t *)t->data + (rows - 1) * row_bytes, n);
    }
}

static void touch_metadata(const gguf_file *f)
{
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_value *v = &f->kv[i].value;
        if (v->type != GGUF_TYPE_ARRAY) continue;
        uint64_t n = v->arr.count < 64 ? v->arr.count : 64;
        if (v->arr.type == GGUF_TYPE_STRING) {
            gguf_str strs[64];
            gguf_str *all = n == v->arr.count ? strs : NULL;
            if (all) gguf_array_strings(v, all);
        } else {
            for (uint64_t k = 0; k < n; k++) (void)gguf_array_float(v, k);
        }
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (t->n_bytes) {
            volatile uint8_t first = ((const uint8_t *)t->data)[0];
            volatile uint8_t last = ((const uint8_t *)t->data)[t->n_bytes - 1];
            (void)first;
            (void)last;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file f;
    char err[GGUF_ERROR_MAX];
    if (gguf_parse(data, size, &f, err) == 0) {
        touch_metadata(&f);
        llama_config cfg;
        if (llama_config_load(&cfg, &f, err) == 0) (void)weights_check(&f, &cfg, err, sizeof err);
        decode_quantised(&f);
        tokenizer tok;
        if (tokenizer_load(&tok, &f, err) == 0) {
            int32_t ids[64];
            int64_t n = tokenizer_encode(&tok, "Once upon a time, h\xc3\xa9llo 42!", true, ids, 64);
            char buf[64];
            for (int64_t i = 0; i < n && i < 64; i++) tokenizer_decode(&tok, i ? ids[i - 1] : -1, ids[i], buf, sizeof buf);
            (void)tokenizer_encode_special(&tok, "<|im_start|>user\nhi<|im_end|>", false, ids, 64);
            tokenizer_free(&tok);
        }
    }
    gguf_close(&f);
    return 0;
}
