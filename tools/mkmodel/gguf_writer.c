/* gguf_writer.c — GGUF v3 writer (little-endian hosts only, like the reader). */
#include "tools/mkmodel/gguf_writer.h"

#include <stdlib.h>
#include <string.h>

static void buf_put(gw_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        b->data = realloc(b->data, cap);
        if (!b->data) { perror("tiermem-mkmodel"); exit(1); }
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}
static void put_u32(gw_buf *b, uint32_t v) { buf_put(b, &v, 4); }
static void put_u64(gw_buf *b, uint64_t v) { buf_put(b, &v, 8); }
static void put_str(gw_buf *b, const char *s)
{
    put_u64(b, strlen(s));
    buf_put(b, s, strlen(s));
}
static void put_key(gguf_writer *w, const char *key, uint32_t type)
{
    put_str(&w->kv, key);
    put_u32(&w->kv, type);
    w->n_kv++;
}

void gw_u32(gguf_writer *w, const char *key, uint32_t v) { put_key(w, key, GW_UINT32); put_u32(&w->kv, v); }
void gw_f32(gguf_writer *w, const char *key, float v) { put_key(w, key, GW_FLOAT32); buf_put(&w->kv, &v, 4); }
void gw_bool(gguf_writer *w, const char *key, int v)
{
    uint8_t b = v != 0;
    put_key(w, key, GW_BOOL);
    buf_put(&w->kv, &b, 1);
}
void gw_str(gguf_writer *w, const char *key, const char *v) { put_key(w, key, GW_STRING); put_str(&w->kv, v); }

void gw_str_array(gguf_writer *w, const char *key, char *const *v, uint64_t n)
{
    put_key(w, key, GW_ARRAY);
    put_u32(&w->kv, GW_STRING);
    put_u64(&w->kv, n);
    for (uint64_t i = 0; i < n; i++) put_str(&w->kv, v[i]);
}
void gw_f32_array(gguf_writer *w, const char *key, const float *v, uint64_t n)
{
    put_key(w, key, GW_ARRAY);
    put_u32(&w->kv, GW_FLOAT32);
    put_u64(&w->kv, n);
    buf_put(&w->kv, v, n * 4);
}
void gw_i32_array(gguf_writer *w, const char *key, const int32_t *v, uint64_t n)
{
    put_key(w, key, GW_ARRAY);
    put_u32(&w->kv, GW_INT32);
    put_u64(&w->kv, n);
    buf_put(&w->kv, v, n * 4);
}

void gw_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                   const uint64_t *dims, uint64_t n_bytes)
{
    if (w->n_tensors == w->cap_tensors) {
        w->cap_tensors = w->cap_tensors ? 2 * w->cap_tensors : 64;
        w->tensors = realloc(w->tensors, w->cap_tensors * sizeof *w->tensors);
        if (!w->tensors) { perror("tiermem-mkmodel"); exit(1); }
    }
    gw_tensor *t = &w->tensors[w->n_tensors++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_dims = n_dims;
    memcpy(t->dims, dims, n_dims * sizeof *dims);
    t->n_bytes = n_bytes;
}

static uint64_t pad(uint64_t n) { return (n + GW_ALIGNMENT - 1) / GW_ALIGNMENT * GW_ALIGNMENT; }

int gw_begin(gguf_writer *w, FILE *out)
{
    gw_buf h = {0};
    put_u32(&h, 0x46554747u);
    put_u32(&h, 3);
    put_u64(&h, w->n_tensors);
    put_u64(&h, w->n_kv);
    buf_put(&h, w->kv.data, w->kv.len);
    uint64_t offset = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        gw_tensor *t = &w->tensors[i];
        put_str(&h, t->name);
        put_u32(&h, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put_u64(&h, t->dims[d]);
        put_u32(&h, t->type);
        put_u64(&h, offset);
        offset += pad(t->n_bytes);
    }
    static const uint8_t zeros[GW_ALIGNMENT];
    buf_put(&h, zeros, pad(h.len) - h.len);
    w->out = out;
    int rc = fwrite(h.data, 1, h.len, out) == h.len ? 0 : -1;
    free(h.data);
    return rc;
}

int gw_write_data(gguf_writer *w, const void *data, size_t n)
{
    w->data_written += n;
    return fwrite(data, 1, n, w->out) == n ? 0 : -1;
}

int gw_end_tensor(gguf_writer *w)
{
    static const uint8_t zeros[GW_ALIGNMENT];
    size_t fill = pad(w->data_written) - w->data_written;
    w->next_tensor++;
    return gw_write_data(w, zeros, fill);
}

void gw_free(gguf_writer *w)
{
    free(w->kv.data);
    free(w->tensors);
    memset(w, 0, sizeof *w);
}
