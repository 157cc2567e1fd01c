/* fuzz_gguf.c — libFuzzer target for everything that reads an untrusted GGUF file:
 * the reader, every metadata accessor, the llama configuration and both tokenizers.
 * Build and run with `make fuzz` (clang -fsanitize=fuzzer,address,undefined). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/tokenizer.h"

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
        (void)llama_config_load(&cfg, &f, err);
        tokenizer tok;
        if (tokenizer_load(&tok, &f, err) == 0) {
            int32_t ids[64];
            int64_t n = tokenizer_encode(&tok, "Once upon a time, h\xc3\xa9llo 42!", true, ids, 64);
            char buf[64];
            for (int64_t i = 0; i < n && i < 64; i++) tokenizer_decode(&tok, i ? ids[i - 1] : -1, ids[i], buf, sizeof buf);
            tokenizer_free(&tok);
        }
    }
    gguf_close(&f);
    return 0;
}
