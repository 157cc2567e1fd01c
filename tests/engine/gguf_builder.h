/* gguf_builder.h — building GGUF images byte by byte in tests, valid or hostile. */
#ifndef TM_TESTS_GGUF_BUILDER_H
#define TM_TESTS_GGUF_BUILDER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct img {
    uint8_t *data;
    size_t len, cap;
} img;

static inline void img_put(img *b, const void *p, size_t n)
{
    if (n == 0) return;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->data = realloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}
static inline void img_u8(img *b, uint8_t v) { img_put(b, &v, 1); }
static inline void img_u32(img *b, uint32_t v) { img_put(b, &v, 4); }
static inline void img_u64(img *b, uint64_t v) { img_put(b, &v, 8); }
static inline void img_f32(img *b, float v) { img_put(b, &v, 4); }
static inline void img_str(img *b, const char *s) { img_u64(b, strlen(s)); img_put(b, s, strlen(s)); }
static inline void img_header(img *b, uint64_t n_tensors, uint64_t n_kv)
{
    img_u32(b, 0x46554747u);
    img_u32(b, 3);
    img_u64(b, n_tensors);
    img_u64(b, n_kv);
}
static inline void img_kv_u32(img *b, const char *key, uint32_t v) { img_str(b, key); img_u32(b, 4); img_u32(b, v); }
static inline void img_kv_u64(img *b, const char *key, uint64_t v) { img_str(b, key); img_u32(b, 10); img_u64(b, v); }
static inline void img_kv_str(img *b, const char *key, const char *v) { img_str(b, key); img_u32(b, 8); img_str(b, v); }
/* A tensor info with 2 dims. */
static inline void img_tensor2(img *b, const char *name, uint64_t d0, uint64_t d1, uint32_t type, uint64_t off)
{
    img_str(b, name);
    img_u32(b, 2);
    img_u64(b, d0);
    img_u64(b, d1);
    img_u32(b, type);
    img_u64(b, off);
}
static inline void img_pad(img *b, size_t align)
{
    while (b->len % align) img_u8(b, 0);
}
static inline void img_zeros(img *b, size_t n)
{
    for (size_t i = 0; i < n; i++) img_u8(b, 0);
}

#endif
