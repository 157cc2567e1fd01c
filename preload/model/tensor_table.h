/* tensor_table.h — the tensors a model file holds, parsed once from its header.
 *
 * GGUF (v2 and v3) and safetensors headers are parsed from a byte buffer holding the start
 * of the file. The parsers trust nothing: every count, length and offset is checked
 * against the buffer and the file size, and a header that does not parse is simply not a
 * model file to the interposer. Offsets are absolute file offsets, so a copy from a
 * buffer filled at file offset X finds its tensor by X. */
#ifndef TM_PRELOAD_TENSOR_TABLE_H
#define TM_PRELOAD_TENSOR_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_TENSOR_NAME_MAX 96      /* longer names are cut (the copy stays a prefix) */
#define TM_TENSOR_DIMS_MAX 8
/* Bounds on what a header may cost inside the host's open(): its bytes (read and scanned
 * once, linearly) and its tensors (a table of TM_TENSORS_MAX entries is 13 MiB). Past
 * either, the header is refused and the file's tensors go unnamed. */
#define TM_MODEL_HEADER_MAX ((size_t)32 << 20)
#define TM_TENSORS_MAX (1u << 16)

typedef enum tm_model_format {
    TM_FORMAT_GGUF = 1,
    TM_FORMAT_SAFETENSORS = 2,
} tm_model_format;

typedef struct tm_tensor {
    char name[TM_TENSOR_NAME_MAX];
    char dtype[16];                 /* "F16", "Q8_0", "BF16", ... ("type-N" when unknown) */
    uint32_t n_dims;
    uint32_t file_index;            /* which model file's table holds it (model_files.h) */
    int64_t shape[TM_TENSOR_DIMS_MAX];
    uint64_t offset;                /* absolute file offset of the first byte */
    uint64_t size;                  /* bytes in the file */
} tm_tensor;

typedef struct tm_tensor_table {
    tm_model_format format;
    uint64_t count;
    tm_tensor *tensor;              /* [count], sorted by offset */
} tm_tensor_table;

/* What a parse came to. */
typedef enum tm_parse_result {
    TM_PARSE_OK,
    TM_PARSE_NOT_MODEL,     /* no GGUF or safetensors magic: not ours, say nothing */
    TM_PARSE_SHORT,         /* the header runs past `len`: call again with *need bytes */
    TM_PARSE_BAD,           /* a model header that is malformed or hostile: *why says how */
} tm_parse_result;

/* Parses the header at the start of `data` (`len` bytes of a file of `file_size` bytes).
 * On TM_PARSE_OK *table owns malloc'd memory (tm_tensor_table_free). On TM_PARSE_SHORT
 * *need is the buffer length to try next. On TM_PARSE_BAD *why is a static phrase. */
tm_parse_result tm_parse_gguf(const uint8_t *data, size_t len, uint64_t file_size,
                              tm_tensor_table *table, size_t *need, const char **why);
tm_parse_result tm_parse_safetensors(const uint8_t *data, size_t len, uint64_t file_size,
                                     tm_tensor_table *table, size_t *need, const char **why);

/* Either format, by magic. */
tm_parse_result tm_parse_model_header(const uint8_t *data, size_t len, uint64_t file_size,
                                      tm_tensor_table *table, size_t *need, const char **why);

/* Sorts by offset and checks that tensors lie inside the file without overlapping. */
tm_parse_result tm_tensor_table_finish(tm_tensor_table *table, uint64_t file_size, const char **why);

/* The tensor holding file offset `offset`, or NULL. */
const tm_tensor *tm_tensor_table_find(const tm_tensor_table *table, uint64_t offset);

/* The tensors that end in the file range (offset, offset + bytes]: their last byte lies in
 * [offset, offset + bytes) (an empty one: its offset lies in the former). *first is the
 * index of the first; returns how many (consecutive in offset order). A copy of the range
 * finishes those tensors, however the program split their bytes into copies. */
uint64_t tm_tensor_table_ending_in(const tm_tensor_table *table, uint64_t offset, uint64_t bytes, uint64_t *first);

/* Whether some tensor has a byte in [offset, offset + bytes). */
bool tm_tensor_table_overlaps(const tm_tensor_table *table, uint64_t offset, uint64_t bytes);

void tm_tensor_table_free(tm_tensor_table *table);

#endif /* TM_PRELOAD_TENSOR_TABLE_H */
