/* parse_gguf.c — the tensor table of a GGUF file (v2 and v3), from its header.
 *
 * Layout: "GGUF", u32 version, u64 tensor count, u64 key-value count, the key-value pairs
 * (only general.alignment matters here), then per tensor: name, u32 dims, u64 shape[dims],
 * u32 ggml type, u64 offset from the data section, which starts at the first multiple of
 * the alignment after the tensor infos. */
#include "preload/model/tensor_table.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- a bounded cursor */

typedef struct cursor {
    const uint8_t *data;
    size_t len, at;
    bool short_read;        /* ran past len */
} cursor;

static bool take(cursor *c, void *out, size_t n)
{
    if (c->short_read || n > c->len - c->at) {
        c->short_read = true;
        return false;
    }
    if (out) memcpy(out, c->data + c->at, n);
    c->at += n;
    return true;
}

static bool take_u32(cursor *c, uint32_t *v) { return take(c, v, sizeof *v); }
static bool take_u64(cursor *c, uint64_t *v) { return take(c, v, sizeof *v); }

/* A GGUF string: u64 length, bytes. `out` may be NULL (skipped). */
static bool take_string(cursor *c, const uint8_t **out, uint64_t *n, uint64_t file_size)
{
    uint64_t len;
    if (!take_u64(c, &len)) return false;
    if (len > file_size) return false;      /* hostile; the caller sees !short_read */
    if (out) *out = c->data + c->at;
    *n = len;
    return take(c, NULL, (size_t)len);
}

/* ---------------------------------------------------------------- values */

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64, T_COUNT };

static size_t scalar_size(uint32_t type)
{
    static const size_t size[T_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    return type < T_COUNT ? size[type] : 0;
}

/* Skips one value; arrays of arrays are refused (no real file nests them). */
static bool skip_value(cursor *c, uint32_t type, uint64_t file_size, bool *bad)
{
    if (type == T_STRING) {
        uint64_t n;
        if (!take_string(c, NULL, &n, file_size) && !c->short_read) *bad = true;
        return !*bad && !c->short_read;
    }
    if (type == T_ARRAY) {
        uint32_t elem;
        uint64_t count;
        if (!take_u32(c, &elem) || !take_u64(c, &count)) return false;
        if (elem == T_ARRAY || (elem != T_STRING && !scalar_size(elem)) || count > file_size) {
            *bad = true;
            return false;
        }
        if (elem != T_STRING)
            return take(c, NULL, (size_t)(count * scalar_size(elem)));
        for (uint64_t i = 0; i < count; i++)
            if (!skip_value(c, T_STRING, file_size, bad)) return false;
        return true;
    }
    if (!scalar_size(type)) {
        *bad = true;
        return false;
    }
    return take(c, NULL, scalar_size(type));
}

/* ---------------------------------------------------------------- ggml types */

typedef struct ggml_type_info {
    const char *name;
    uint32_t block;         /* elements per block */
    uint32_t bytes;         /* bytes per block */
} ggml_type_info;

static const ggml_type_info ggml_types[] = {
    [0] = { "F32", 1, 4 },      [1] = { "F16", 1, 2 },       [2] = { "Q4_0", 32, 18 },
    [3] = { "Q4_1", 32, 20 },   [6] = { "Q5_0", 32, 22 },    [7] = { "Q5_1", 32, 24 },
    [8] = { "Q8_0", 32, 34 },   [9] = { "Q8_1", 32, 36 },    [10] = { "Q2_K", 256, 84 },
    [11] = { "Q3_K", 256, 110 },[12] = { "Q4_K", 256, 144 }, [13] = { "Q5_K", 256, 176 },
    [14] = { "Q6_K", 256, 210 },[15] = { "Q8_K", 256, 292 }, [24] = { "I8", 1, 1 },
    [25] = { "I16", 1, 2 },     [26] = { "I32", 1, 4 },      [27] = { "I64", 1, 8 },
    [28] = { "F64", 1, 8 },     [30] = { "BF16", 1, 2 },
};

/* Bytes of `elements` of `type`; 0 when the type is unknown (the size then comes from the
 * next tensor's offset) or the count is not whole blocks. */
static uint64_t ggml_bytes(uint32_t type, uint64_t elements)
{
    if (type >= sizeof ggml_types / sizeof ggml_types[0] || !ggml_types[type].name) return 0;
    const ggml_type_info *t = &ggml_types[type];
    if (elements % t->block) return 0;
    return elements / t->block * t->bytes;
}

/* ---------------------------------------------------------------- the header */

static tm_parse_result fail(const char **why, const char *reason)
{
    *why = reason;
    return TM_PARSE_BAD;
}

static tm_parse_result short_of(cursor *c, size_t *need)
{
    *need = c->len < SIZE_MAX / 2 ? c->len * 2 : SIZE_MAX;
    return TM_PARSE_SHORT;
}

static bool read_tensor(cursor *c, tm_tensor *t, uint32_t *type, uint64_t file_size, const char **why)
{
    const uint8_t *name;
    uint64_t name_len;
    if (!take_string(c, &name, &name_len, file_size)) {
        if (!c->short_read) *why = "a tensor name is longer than the file";
        return false;
    }
    size_t keep = name_len < TM_TENSOR_NAME_MAX - 1 ? (size_t)name_len : TM_TENSOR_NAME_MAX - 1;
    memcpy(t->name, name, keep);
    t->name[keep] = '\0';
    if (!take_u32(c, &t->n_dims)) return false;
    if (t->n_dims == 0 || t->n_dims > TM_TENSOR_DIMS_MAX) {
        *why = "a tensor has no dimensions or more than 8";
        return false;
    }
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (!take_u64(c, (uint64_t *)&t->shape[d])) return false;
    if (!take_u32(c, type) || !take_u64(c, &t->offset)) return false;
    return true;
}

tm_parse_result tm_parse_gguf(const uint8_t *data, size_t len, uint64_t file_size,
                              tm_tensor_table *table, size_t *need, const char **why)
{
    cursor c = { data, len, 0, false };
    uint32_t magic, version;
    uint64_t n_tensors, n_kv;
    if (!take_u32(&c, &magic)) return short_of(&c, need);
    if (memcmp(&magic, "GGUF", 4) != 0) return TM_PARSE_NOT_MODEL;
    if (!take_u32(&c, &version) || !take_u64(&c, &n_tensors) || !take_u64(&c, &n_kv))
        return short_of(&c, need);
    if (version != 2 && version != 3) return fail(why, "GGUF version is not 2 or 3");
    if (n_tensors > TM_TENSORS_MAX) return fail(why, "the GGUF header lists more than 65536 tensors");
    if (n_kv > file_size || n_tensors * 32 > file_size) return fail(why, "GGUF counts exceed the file");

    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; i++) {
        const uint8_t *key;
        uint64_t key_len;
        uint32_t type;
        bool bad = false;
        if (!take_string(&c, &key, &key_len, file_size))
            return c.short_read ? short_of(&c, need) : fail(why, "a GGUF key is longer than the file");
        if (!take_u32(&c, &type)) return short_of(&c, need);
        bool is_alignment = key_len == 17 && memcmp(key, "general.alignment", 17) == 0 && type == T_U32;
        size_t value_at = c.at;
        if (!skip_value(&c, type, file_size, &bad))
            return bad ? fail(why, "a GGUF value has an unknown or hostile type") : short_of(&c, need);
        if (is_alignment) {
            uint32_t a;
            memcpy(&a, data + value_at, sizeof a);
            if (a == 0 || (a & (a - 1))) return fail(why, "general.alignment is not a power of two");
            alignment = a;
        }
    }

    tm_tensor *tensor = calloc(n_tensors ? n_tensors : 1, sizeof *tensor);
    uint32_t *type = calloc(n_tensors ? n_tensors : 1, sizeof *type);
    if (!tensor || !type) {
        free(tensor);
        free(type);
        return fail(why, "out of memory for the tensor table");
    }
    tm_parse_result result = TM_PARSE_OK;
    for (uint64_t i = 0; i < n_tensors && result == TM_PARSE_OK; i++) {
        *why = NULL;
        if (!read_tensor(&c, &tensor[i], &type[i], file_size, why))
            result = c.short_read ? short_of(&c, need) : fail(why, *why ? *why : "a tensor info is malformed");
    }
    uint64_t data_start = ((uint64_t)c.at + alignment - 1) / alignment * alignment;
    for (uint64_t i = 0; i < n_tensors && result == TM_PARSE_OK; i++) {
        tm_tensor *t = &tensor[i];
        uint64_t elements = 1;
        for (uint32_t d = 0; d < t->n_dims && result == TM_PARSE_OK; d++) {
            if (t->shape[d] <= 0 || __builtin_mul_overflow(elements, (uint64_t)t->shape[d], &elements))
                result = fail(why, "a tensor shape is not positive or overflows");
        }
        if (result != TM_PARSE_OK) break;
        if (t->offset > file_size || __builtin_add_overflow(t->offset, data_start, &t->offset))
            result = fail(why, "a tensor offset lies past the end of the file");
        t->size = ggml_bytes(type[i], elements);
        if (type[i] < sizeof ggml_types / sizeof ggml_types[0] && ggml_types[type[i]].name)
            snprintf(t->dtype, sizeof t->dtype, "%s", ggml_types[type[i]].name);
        else
            snprintf(t->dtype, sizeof t->dtype, "type-%u", type[i] % 100000u);
    }
    free(type);
    if (result != TM_PARSE_OK) {
        free(tensor);
        return result;
    }
    table->format = TM_FORMAT_GGUF;
    table->count = n_tensors;
    table->tensor = tensor;
    result = tm_tensor_table_finish(table, file_size, why);
    if (result != TM_PARSE_OK) tm_tensor_table_free(table);
    return result;
}
