/* parse_safetensors.c — the tensor table of a safetensors file, from its header.
 *
 * Layout: u64 little-endian N, then N bytes of JSON: an object mapping each tensor name to
 * {"dtype": "F16", "shape": [...], "data_offsets": [begin, end]} (offsets from the byte
 * after the header), plus an optional "__metadata__" object. The format caps N at 100 MB.
 * The JSON is read with jansson. */
#include "preload/model/tensor_table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAFETENSORS_HEADER_MAX (100u * 1000 * 1000)

static tm_parse_result fail(const char **why, const char *reason)
{
    *why = reason;
    return TM_PARSE_BAD;
}

static bool get_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* One "name": {...} entry. */
static bool read_entry(const char *name, const json_t *v, uint64_t data_start, tm_tensor *t, const char **why)
{
    const json_t *dtype = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
    const json_t *offsets = json_object_get(v, "data_offsets");
    uint64_t begin, end;
    if (!json_is_object(v) || !json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offsets) ||
        json_array_size(offsets) != 2 || !get_u64(json_array_get(offsets, 0), &begin) ||
        !get_u64(json_array_get(offsets, 1), &end) || end < begin) {
        *why = "a safetensors entry lacks dtype, shape or data_offsets [begin, end]";
        return false;
    }
    if (json_array_size(shape) > TM_TENSOR_DIMS_MAX) {
        *why = "a safetensors tensor has more than 8 dimensions";
        return false;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->dtype, sizeof t->dtype, "%s", json_string_value(dtype));
    t->n_dims = (uint32_t)json_array_size(shape);
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t n;
        if (!get_u64(json_array_get(shape, d), &n)) {
            *why = "a safetensors shape holds a negative or non-integer dimension";
            return false;
        }
        t->shape[d] = (int64_t)n;
    }
    if (__builtin_add_overflow(begin, data_start, &t->offset)) {
        *why = "a safetensors offset overflows";
        return false;
    }
    t->size = end - begin;
    return true;
}

tm_parse_result tm_parse_safetensors(const uint8_t *data, size_t len, uint64_t file_size,
                                     tm_tensor_table *table, size_t *need, const char **why)
{
    uint64_t n;
    if (len < 9) {
        *need = 4096;
        return file_size < 9 ? TM_PARSE_NOT_MODEL : TM_PARSE_SHORT;
    }
    memcpy(&n, data, sizeof n);
    if (n < 2 || n > SAFETENSORS_HEADER_MAX || n > file_size - 8 || data[8] != '{')
        return TM_PARSE_NOT_MODEL;
    if (len - 8 < n) {
        *need = (size_t)n + 8;
        return TM_PARSE_SHORT;
    }

    json_error_t error;
    json_t *root = json_loadb((const char *)data + 8, (size_t)n, JSON_REJECT_DUPLICATES, &error);
    if (!json_is_object(root)) {
        json_decref(root);
        return fail(why, "the safetensors header is not a JSON object");
    }
    size_t entries = json_object_size(root);
    if (entries > TM_TENSORS_MAX) {
        json_decref(root);
        return fail(why, "the safetensors header lists too many tensors");
    }
    tm_tensor *tensor = calloc(entries ? entries : 1, sizeof *tensor);
    if (!tensor) {
        json_decref(root);
        return fail(why, "out of memory for the tensor table");
    }
    uint64_t count = 0;
    const char *name;
    json_t *v;
    bool ok = true;
    json_object_foreach(root, name, v) {
        if (strcmp(name, "__metadata__") == 0) continue;
        if (!(ok = read_entry(name, v, n + 8, &tensor[count], why))) break;
        count++;
    }
    json_decref(root);
    if (!ok) {
        free(tensor);
        return TM_PARSE_BAD;
    }
    table->format = TM_FORMAT_SAFETENSORS;
    table->count = count;
    table->tensor = tensor;
    tm_parse_result result = tm_tensor_table_finish(table, file_size, why);
    if (result != TM_PARSE_OK) tm_tensor_table_free(table);
    return result;
}
