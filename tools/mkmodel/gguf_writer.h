/* gguf_writer.h — writes GGUF v3 files: metadata first, then tensors streamed in order. */
#ifndef TM_MKMODEL_GGUF_WRITER_H
#define TM_MKMODEL_GGUF_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GW_ALIGNMENT 32

enum { GW_UINT32 = 4, GW_INT32 = 5, GW_FLOAT32 = 6, GW_BOOL = 7, GW_STRING = 8, GW_ARRAY = 9 };

typedef struct gw_buf {
    uint8_t *data;
    size_t len, cap;
} gw_buf;

typedef struct gw_tensor {
    char name[64];
    uint32_t n_dims;
    uint64_t dims[4];
    uint32_t type;      /* ggml type id */
    uint64_t n_bytes;
} gw_tensor;

typedef struct gguf_writer {
    gw_buf kv;          /* encoded key-value pairs */
    uint64_t n_kv;
    gw_tensor *tensors; /* [n_tensors] in file order */
    uint64_t n_tensors, cap_tensors;
    FILE *out;
    uint64_t data_written; /* bytes of the data section written so far */
    uint64_t next_tensor;
} gguf_writer;

void gw_u32(gguf_writer *w, const char *key, uint32_t v);
void gw_f32(gguf_writer *w, const char *key, float v);
void gw_bool(gguf_writer *w, const char *key, int v);
void gw_str(gguf_writer *w, const char *key, const char *v);
/* Arrays: strings (NUL-terminated), f32 and i32. */
void gw_str_array(gguf_writer *w, const char *key, char *const *v, uint64_t n);
void gw_f32_array(gguf_writer *w, const char *key, const float *v, uint64_t n);
void gw_i32_array(gguf_writer *w, const char *key, const int32_t *v, uint64_t n);

void gw_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                   const uint64_t *dims, uint64_t n_bytes);

/* Writes the header; then each tensor's bytes follow with gw_write_data (in order, any
 * number of pieces), gw_end_tensor after each. Returns 0 or -1 (errno set). */
int gw_begin(gguf_writer *w, FILE *out);
int gw_write_data(gguf_writer *w, const void *data, size_t n);
int gw_end_tensor(gguf_writer *w);
void gw_free(gguf_writer *w);

#endif
