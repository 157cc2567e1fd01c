/* fuzz_header.c — libFuzzer target for the interposer's model-header parsers
 * (preload/model/tensor_table.h): any bytes, as the start of a file of that size, through the
 * GGUF-or-safetensors entry and the safetensors parser directly. What they accept must be
 * a table of at most TM_TENSORS_MAX terminated names, sorted, inside the file and without
 * overlaps (safetensors names without control characters); a short answer must ask for more
 * than it had. Built by `make fuzz`. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "preload/model/tensor_table.h"

static void check(tm_parse_result r, const tm_tensor_table *t, size_t size, size_t need)
{
    if (r == TM_PARSE_SHORT && need <= size) __builtin_trap();
    if (r != TM_PARSE_OK) return;
    if (t->count > TM_TENSORS_MAX) __builtin_trap();
    for (uint64_t i = 0; i < t->count; i++) {
        const tm_tensor *x = &t->tensor[i];
        if (t->format == TM_FORMAT_SAFETENSORS)
            for (const char *c = x->name; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f) __builtin_trap();
        if (strnlen(x->name, sizeof x->name) == sizeof x->name) __builtin_trap();
        if (strnlen(x->dtype, sizeof x->dtype) == sizeof x->dtype) __builtin_trap();
        if (x->offset > size || x->size > size - x->offset) __builtin_trap();
        if (i && x->offset < t->tensor[i - 1].offset + t->tensor[i - 1].size) __builtin_trap();
        if (x->size && tm_tensor_table_find(t, x->offset) != x) __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tm_tensor_table table;
    size_t need = 0;
    const char *why = NULL;
    tm_parse_result r = tm_parse_model_header(data, size, size, &table, &need, &why);
    check(r, &table, size, need);
    if (r == TM_PARSE_OK) tm_tensor_table_free(&table);
    need = 0;
    r = tm_parse_safetensors(data, size, size, &table, &need, &why);
    check(r, &table, size, need);
    if (r == TM_PARSE_OK) tm_tensor_table_free(&table);
    return 0;
}
