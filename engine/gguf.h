/* gguf.h — a strict reader for GGUF v3 files (little-endian).
 *
 * The file is mmapped read-only; every string, array and tensor the reader hands out
 * points into that mapping and lives until gguf_close(). Parsing validates everything
 * before anything is used: sizes are checked against the file with overflow-safe
 * arithmetic, counts are bounded by the bytes that could hold them, tensor names are
 * under 64 bytes, at most 4 dims, each tensor's offset equals the running padded total
 * (so tensors can neither overlap nor leave gaps), and every byte range is inside the file.
 * Errors are one line naming what was wrong.
 */
#ifndef TM_ENGINE_GGUF_H
#define TM_ENGINE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GGUF_MAGIC            0x46554747u /* "GGUF" read as little-endian u32 */
#define GGUF_VERSION          3u
#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_NAME         64   /* tensor names are shorter than this, in bytes */
#define GGUF_MAX_DIMS         4
#define GGUF_ERROR_MAX        256

typedef enum gguf_value_type {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8 = 1, GGUF_TYPE_UINT16 = 2, GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4, GGUF_TYPE_INT32 = 5, GGUF_TYPE_FLOAT32 = 6, GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8, GGUF_TYPE_ARRAY = 9, GGUF_TYPE_UINT64 = 10, GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_value_type;

/* ggml tensor types the reader knows the block layout of (it can size them); which of them
 * a model may use is the loader's decision. */
typedef enum ggml_type {
    GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6, GGML_TYPE_Q5_1 = 7, GGML_TYPE_Q8_0 = 8, GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10, GGML_TYPE_Q3_K = 11, GGML_TYPE_Q4_K = 12, GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14, GGML_TYPE_Q8_K = 15, GGML_TYPE_IQ2_XXS = 16, GGML_TYPE_IQ2_XS = 17,
    GGML_TYPE_IQ3_XXS = 18, GGML_TYPE_IQ1_S = 19, GGML_TYPE_IQ4_NL = 20, GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22, GGML_TYPE_IQ4_XS = 23, GGML_TYPE_I8 = 24, GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26, GGML_TYPE_I64 = 27, GGML_TYPE_F64 = 28, GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30, GGML_TYPE_TQ1_0 = 34, GGML_TYPE_TQ2_0 = 35, GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_COUNT = 40
} ggml_type;

/* A string inside the file: not NUL-terminated. */
typedef struct gguf_str {
    const char *data;
    uint64_t len;
} gguf_str;

typedef struct gguf_value {
    gguf_value_type type;
    union {
        uint64_t u;     /* UINT8..UINT64 and BOOL */
        int64_t i;      /* INT8..INT64 */
        double f;       /* FLOAT32, FLOAT64 */
        gguf_str str;   /* STRING */
        struct {
            gguf_value_type type;   /* element type (never ARRAY) */
            uint64_t count;
            const uint8_t *data;    /* [count] packed elements; strings are length-prefixed */
        } arr;
    };
} gguf_value;

typedef struct gguf_kv {
    gguf_str key;
    gguf_value value;
} gguf_kv;

typedef struct gguf_tensor {
    char name[GGUF_MAX_NAME];       /* NUL-terminated copy */
    uint32_t n_dims;
    int64_t dims[GGUF_MAX_DIMS];    /* dims[0] is the contiguous one; unused dims are 1 */
    ggml_type type;
    uint64_t offset;                /* from the start of the data section */
    uint64_t n_bytes;
    const void *data;               /* into the mapping */
} gguf_tensor;

typedef struct gguf_index gguf_index; /* hash indexes, private to gguf.c */

typedef struct gguf_file {
    const uint8_t *base;            /* [size] the whole file */
    size_t size;
    bool mapped;                    /* base is an mmap of the file (else caller memory) */
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;                    /* [n_kv] */
    uint64_t n_tensors;
    gguf_tensor *tensors;           /* [n_tensors] in file order */
    uint64_t alignment;
    uint64_t data_offset;           /* start of the tensor data section in the file */
    gguf_index *index;
} gguf_file;

/* Opens and validates `path`. Returns 0, or -1 with a message in err. */
int gguf_open(const char *path, gguf_file *out, char err[GGUF_ERROR_MAX]);
/* Validates a GGUF image in memory (kept by reference; the caller keeps it alive). */
int gguf_parse(const void *data, size_t size, gguf_file *out, char err[GGUF_ERROR_MAX]);
void gguf_close(gguf_file *f);

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters. They return 0 when the key is absent (*out untouched), 1 when found and
 * converted, -1 when present with a type that does not fit (message in err). */
int gguf_get_uint(const gguf_file *f, const char *key, uint64_t *out, char err[GGUF_ERROR_MAX]);
int gguf_get_float(const gguf_file *f, const char *key, double *out, char err[GGUF_ERROR_MAX]);
int gguf_get_bool(const gguf_file *f, const char *key, bool *out, char err[GGUF_ERROR_MAX]);
int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, char err[GGUF_ERROR_MAX]);
/* An array of `type` elements. */
int gguf_get_array(const gguf_file *f, const char *key, gguf_value_type type,
                   const gguf_value **out, char err[GGUF_ERROR_MAX]);

/* Fills strs[count] from a validated array of strings. */
void gguf_array_strings(const gguf_value *arr, gguf_str *strs);
/* Element i of a validated numeric array, widened. */
double gguf_array_float(const gguf_value *arr, uint64_t i);
int64_t gguf_array_int(const gguf_value *arr, uint64_t i);

const char *gguf_value_type_name(gguf_value_type t);
/* "Q4_K" etc.; NULL for a number that is no known type. */
const char *ggml_type_name(ggml_type t);
/* Elements per block and bytes per block; 0 for an unknown type. */
size_t ggml_type_block(ggml_type t);
size_t ggml_type_block_bytes(ggml_type t);

bool gguf_str_eq(gguf_str s, const char *c);

#endif /* TM_ENGINE_GGUF_H */
