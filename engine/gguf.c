/* gguf.c — strict GGUF v3 reader. See gguf.h for what is validated. */
#include "engine/error.h"
#include "engine/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

/* ----------------------------------------------------------------------------
 * Type tables */

static const struct {
    const char *name;
    uint32_t block;       /* elements per block */
    uint32_t block_bytes; /* bytes per block */
} ggml_types[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F32] = {"F32", 1, 4},         [GGML_TYPE_F16] = {"F16", 1, 2},
    [GGML_TYPE_Q4_0] = {"Q4_0", 32, 18},     [GGML_TYPE_Q4_1] = {"Q4_1", 32, 20},
    [GGML_TYPE_Q5_0] = {"Q5_0", 32, 22},     [GGML_TYPE_Q5_1] = {"Q5_1", 32, 24},
    [GGML_TYPE_Q8_0] = {"Q8_0", 32, 34},     [GGML_TYPE_Q8_1] = {"Q8_1", 32, 36},
    [GGML_TYPE_Q2_K] = {"Q2_K", 256, 84},    [GGML_TYPE_Q3_K] = {"Q3_K", 256, 110},
    [GGML_TYPE_Q4_K] = {"Q4_K", 256, 144},   [GGML_TYPE_Q5_K] = {"Q5_K", 256, 176},
    [GGML_TYPE_Q6_K] = {"Q6_K", 256, 210},   [GGML_TYPE_Q8_K] = {"Q8_K", 256, 292},
    [GGML_TYPE_IQ2_XXS] = {"IQ2_XXS", 256, 66}, [GGML_TYPE_IQ2_XS] = {"IQ2_XS", 256, 74},
    [GGML_TYPE_IQ3_XXS] = {"IQ3_XXS", 256, 98}, [GGML_TYPE_IQ1_S] = {"IQ1_S", 256, 50},
    [GGML_TYPE_IQ4_NL] = {"IQ4_NL", 32, 18},    [GGML_TYPE_IQ3_S] = {"IQ3_S", 256, 110},
    [GGML_TYPE_IQ2_S] = {"IQ2_S", 256, 82},     [GGML_TYPE_IQ4_XS] = {"IQ4_XS", 256, 136},
    [GGML_TYPE_I8] = {"I8", 1, 1},           [GGML_TYPE_I16] = {"I16", 1, 2},
    [GGML_TYPE_I32] = {"I32", 1, 4},         [GGML_TYPE_I64] = {"I64", 1, 8},
    [GGML_TYPE_F64] = {"F64", 1, 8},         [GGML_TYPE_IQ1_M] = {"IQ1_M", 256, 56},
    [GGML_TYPE_BF16] = {"BF16", 1, 2},       [GGML_TYPE_TQ1_0] = {"TQ1_0", 256, 54},
    [GGML_TYPE_TQ2_0] = {"TQ2_0", 256, 66},  [GGML_TYPE_MXFP4] = {"MXFP4", 32, 17},
};

const char *ggml_type_name(ggml_type t)
{
    return (unsigned)t < GGML_TYPE_COUNT ? ggml_types[t].name : NULL;
}
size_t ggml_type_block(ggml_type t)
{
    return (unsigned)t < GGML_TYPE_COUNT ? ggml_types[t].block : 0;
}
size_t ggml_type_block_bytes(ggml_type t)
{
    return (unsigned)t < GGML_TYPE_COUNT ? ggml_types[t].block_bytes : 0;
}

static const char *const value_type_names[GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};
static const uint8_t value_type_size[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *gguf_value_type_name(gguf_value_type t)
{
    return (unsigned)t < GGUF_TYPE_COUNT ? value_type_names[t] : "unknown";
}

bool gguf_str_eq(gguf_str s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && memcmp(s.data, c, n) == 0;
}

/* ----------------------------------------------------------------------------
 * Hash indexes by key and by tensor name */

typedef struct index_entry {
    const char *key;
    size_t key_len;
    uint64_t slot;
    UT_hash_handle hh;
} index_entry;

struct gguf_index {
    index_entry *kv_head, *tensor_head;
    index_entry *entries; /* [n_kv + n_tensors] one allocation for all */
};

static index_entry *index_find(index_entry *head, const char *key, size_t len)
{
    index_entry *e = NULL;
    HASH_FIND(hh, head, key, len, e);
    return e;
}

/* ----------------------------------------------------------------------------
 * Bounds-checked cursor over the file */

typedef struct cursor {
    const uint8_t *base;
    size_t size;
    size_t pos;
    char *err;
} cursor;

static size_t remaining(const cursor *c) { return c->size - c->pos; }

static int take(cursor *c, size_t n, const void **out, const char *what)
{
    if (n > remaining(c))
        return tm_fail(c->err, GGUF_ERROR_MAX, "truncated file: %s at offset %zu needs %zu bytes, %zu left", what,
                    c->pos, n, remaining(c));
    *out = c->base + c->pos;
    c->pos += n;
    return 0;
}

static int read_u32(cursor *c, uint32_t *v, const char *what)
{
    const void *p = NULL;
    if (take(c, 4, &p, what)) return -1;
    memcpy(v, p, 4);
    return 0;
}

static int read_u64(cursor *c, uint64_t *v, const char *what)
{
    const void *p = NULL;
    if (take(c, 8, &p, what)) return -1;
    memcpy(v, p, 8);
    return 0;
}

static int read_str(cursor *c, gguf_str *s, const char *what)
{
    uint64_t len;
    const void *p = NULL;
    if (read_u64(c, &len, what)) return -1;
    if (len > remaining(c))
        return tm_fail(c->err, GGUF_ERROR_MAX, "%s at offset %zu: string length %" PRIu64 " exceeds the %zu bytes left",
                    what, c->pos - 8, len, remaining(c));
    if (take(c, (size_t)len, &p, what)) return -1;
    s->data = p;
    s->len = len;
    return 0;
}

/* ----------------------------------------------------------------------------
 * Metadata values */

static int read_scalar(cursor *c, gguf_value_type t, gguf_value *v, const char *what)
{
    const uint8_t *p = NULL;
    if (take(c, value_type_size[t], (const void **)&p, what)) return -1;
    uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64; float f32; double f64;
    switch (t) {
    case GGUF_TYPE_UINT8: v->u = p[0]; break;
    case GGUF_TYPE_INT8: v->i = (int8_t)p[0]; break;
    case GGUF_TYPE_BOOL:
        u8 = p[0];
        if (u8 > 1) return tm_fail(c->err, GGUF_ERROR_MAX, "%s: bool value %u is neither 0 nor 1", what, u8);
        v->u = u8;
        break;
    case GGUF_TYPE_UINT16: memcpy(&u16, p, 2); v->u = u16; break;
    case GGUF_TYPE_INT16: memcpy(&u16, p, 2); v->i = (int16_t)u16; break;
    case GGUF_TYPE_UINT32: memcpy(&u32, p, 4); v->u = u32; break;
    case GGUF_TYPE_INT32: memcpy(&u32, p, 4); v->i = (int32_t)u32; break;
    case GGUF_TYPE_FLOAT32: memcpy(&f32, p, 4); v->f = f32; break;
    case GGUF_TYPE_UINT64: memcpy(&u64, p, 8); v->u = u64; break;
    case GGUF_TYPE_INT64: memcpy(&u64, p, 8); v->i = (int64_t)u64; break;
    case GGUF_TYPE_FLOAT64: memcpy(&f64, p, 8); v->f = f64; break;
    default: return tm_fail(c->err, GGUF_ERROR_MAX, "%s: internal: not a scalar type", what);
    }
    return 0;
}

static int read_value(cursor *c, uint32_t type, gguf_value *v, const char *what)
{
    if (type >= GGUF_TYPE_COUNT)
        return tm_fail(c->err, GGUF_ERROR_MAX, "%s: unknown value type %u", what, type);
    v->type = (gguf_value_type)type;
    if (type == GGUF_TYPE_STRING) return read_str(c, &v->str, what);
    if (type != GGUF_TYPE_ARRAY) return read_scalar(c, v->type, v, what);

    uint32_t elem;
    uint64_t count;
    if (read_u32(c, &elem, what) || read_u64(c, &count, what)) return -1;
    if (elem >= GGUF_TYPE_COUNT || elem == GGUF_TYPE_ARRAY)
        return tm_fail(c->err, GGUF_ERROR_MAX, "%s: array of %s (type %u) is not supported", what,
                    elem == GGUF_TYPE_ARRAY ? "arrays" : "unknown type", elem);
    v->arr.type = (gguf_value_type)elem;
    v->arr.count = count;
    v->arr.data = c->base + c->pos;
    if (elem == GGUF_TYPE_STRING) {
        /* each string takes at least its 8-byte length */
        if (count > remaining(c) / 8)
            return tm_fail(c->err, GGUF_ERROR_MAX, "%s: array count %" PRIu64 " cannot fit in the %zu bytes left",
                        what, count, remaining(c));
        for (uint64_t i = 0; i < count; i++) {
            gguf_str s;
            if (read_str(c, &s, what)) return -1;
        }
        return 0;
    }
    size_t esize = value_type_size[elem];
    if (count > remaining(c) / esize)
        return tm_fail(c->err, GGUF_ERROR_MAX, "%s: array count %" PRIu64 " of %s cannot fit in the %zu bytes left",
                    what, count, value_type_names[elem], remaining(c));
    if (elem == GGUF_TYPE_BOOL) {
        for (uint64_t i = 0; i < count; i++)
            if (v->arr.data[i] > 1)
                return tm_fail(c->err, GGUF_ERROR_MAX, "%s: bool element %" PRIu64 " is %u, neither 0 nor 1", what, i,
                            v->arr.data[i]);
    }
    c->pos += (size_t)(count * esize);
    return 0;
}

void gguf_array_strings(const gguf_value *arr, gguf_str *strs)
{
    const uint8_t *p = arr->arr.data;
    for (uint64_t i = 0; i < arr->arr.count; i++) {
        uint64_t len;
        memcpy(&len, p, 8);
        strs[i].data = (const char *)p + 8;
        strs[i].len = len;
        p += 8 + len;
    }
}

static gguf_value array_element(const gguf_value *arr, uint64_t i)
{
    gguf_value v = {.type = arr->arr.type};
    size_t esize = value_type_size[arr->arr.type];
    cursor c = {arr->arr.data + i * esize, esize, 0, NULL};
    char err[GGUF_ERROR_MAX];
    c.err = err;
    if (esize) read_scalar(&c, arr->arr.type, &v, "array element");
    return v;
}

static bool type_is_signed(gguf_value_type t)
{
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}
static bool type_is_float(gguf_value_type t) { return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64; }

double gguf_array_float(const gguf_value *arr, uint64_t i)
{
    gguf_value v = array_element(arr, i);
    if (type_is_float(v.type)) return v.f;
    return type_is_signed(v.type) ? (double)v.i : (double)v.u;
}

int64_t gguf_array_int(const gguf_value *arr, uint64_t i)
{
    gguf_value v = array_element(arr, i);
    if (type_is_float(v.type)) return (int64_t)v.f;
    return type_is_signed(v.type) ? v.i : (int64_t)v.u;
}

/* ----------------------------------------------------------------------------
 * Tensor infos */

static int tensor_size(gguf_tensor *t, char *err)
{
    size_t block = ggml_type_block(t->type), block_bytes = ggml_type_block_bytes(t->type);
    if (block == 0)
        return tm_fail(err, GGUF_ERROR_MAX, "tensor '%s': unknown tensor type %u", t->name, (unsigned)t->type);
    if (t->dims[0] % (int64_t)block != 0)
        return tm_fail(err, GGUF_ERROR_MAX, "tensor '%s': first dimension %" PRId64 " is not a multiple of the %s block size %zu",
                    t->name, t->dims[0], ggml_type_name(t->type), block);
    uint64_t rows = 1, bytes;
    for (uint32_t d = 1; d < GGUF_MAX_DIMS; d++)
        if (__builtin_mul_overflow(rows, (uint64_t)t->dims[d], &rows))
            return tm_fail(err, GGUF_ERROR_MAX, "tensor '%s': element count overflows", t->name);
    uint64_t row_bytes = (uint64_t)t->dims[0] / block * block_bytes;
    if (__builtin_mul_overflow(rows, row_bytes, &bytes) || bytes > INT64_MAX)
        return tm_fail(err, GGUF_ERROR_MAX, "tensor '%s': byte size overflows", t->name);
    t->n_bytes = bytes;
    return 0;
}

static int read_tensor_info(cursor *c, uint64_t i, gguf_tensor *t)
{
    gguf_str name;
    char what[96];
    snprintf(what, sizeof what, "tensor %" PRIu64 " name", i);
    if (read_str(c, &name, what)) return -1;
    if (name.len >= GGUF_MAX_NAME)
        return tm_fail(c->err, GGUF_ERROR_MAX, "tensor %" PRIu64 ": name of %" PRIu64 " bytes is too long (limit %d)", i,
                    name.len, GGUF_MAX_NAME - 1);
    if (memchr(name.data, 0, name.len))
        return tm_fail(c->err, GGUF_ERROR_MAX, "tensor %" PRIu64 ": name contains a NUL byte", i);
    memcpy(t->name, name.data, name.len);
    t->name[name.len] = 0;
    snprintf(what, sizeof what, "tensor '%s'", t->name);

    if (read_u32(c, &t->n_dims, what)) return -1;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return tm_fail(c->err, GGUF_ERROR_MAX, "tensor '%s': %u dimensions (must be 1 to %d)", t->name, t->n_dims,
                    GGUF_MAX_DIMS);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->dims[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t dim;
        if (read_u64(c, &dim, what)) return -1;
        if (dim == 0 || dim > INT64_MAX)
            return tm_fail(c->err, GGUF_ERROR_MAX, "tensor '%s': dimension %u is %" PRIu64 " (must be 1 to 2^63-1)",
                        t->name, d, dim);
        t->dims[d] = (int64_t)dim;
    }
    uint32_t type;
    if (read_u32(c, &type, what) || read_u64(c, &t->offset, what)) return -1;
    t->type = (ggml_type)type;
    return tensor_size(t, c->err);
}

/* ----------------------------------------------------------------------------
 * Whole file */

static int build_index(gguf_file *f, char *err)
{
    gguf_index *ix = calloc(1, sizeof *ix);
    if (!ix) return tm_fail(err, GGUF_ERROR_MAX, "out of host memory for the GGUF index");
    f->index = ix;
    ix->entries = calloc(f->n_kv + f->n_tensors + 1, sizeof *ix->entries);
    if (!ix->entries) return tm_fail(err, GGUF_ERROR_MAX, "out of host memory for the GGUF index");
    index_entry *e = ix->entries;
    for (uint64_t i = 0; i < f->n_kv; i++, e++) {
        const gguf_kv *kv = &f->kv[i];
        if (index_find(ix->kv_head, kv->key.data, kv->key.len))
            return tm_fail(err, GGUF_ERROR_MAX, "duplicate metadata key '%.*s'", (int)(kv->key.len > 80 ? 80 : kv->key.len),
                        kv->key.data);
        e->key = kv->key.data;
        e->key_len = kv->key.len;
        e->slot = i;
        HASH_ADD_KEYPTR(hh, ix->kv_head, e->key, e->key_len, e);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++, e++) {
        const gguf_tensor *t = &f->tensors[i];
        size_t len = strlen(t->name);
        if (index_find(ix->tensor_head, t->name, len))
            return tm_fail(err, GGUF_ERROR_MAX, "duplicate tensor name '%s'", t->name);
        e->key = t->name;
        e->key_len = len;
        e->slot = i;
        HASH_ADD_KEYPTR(hh, ix->tensor_head, e->key, e->key_len, e);
    }
    return 0;
}

static int parse_alignment(gguf_file *f, char *err)
{
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(f, "general.alignment");
    if (!kv) return 0;
    if (kv->value.type != GGUF_TYPE_UINT32)
        return tm_fail(err, GGUF_ERROR_MAX, "general.alignment has type %s (must be uint32)",
                    gguf_value_type_name(kv->value.type));
    uint64_t a = kv->value.u;
    if (a == 0 || (a & (a - 1)) != 0)
        return tm_fail(err, GGUF_ERROR_MAX, "general.alignment %" PRIu64 " is not a power of two", a);
    f->alignment = a;
    return 0;
}

static int place_tensors(gguf_file *f, size_t header_end, char *err)
{
    uint64_t a = f->alignment;
    f->data_offset = (header_end + a - 1) / a * a; /* header_end <= size, a <= 2^32: no overflow */
    if (f->n_tensors == 0) return 0;
    if (f->data_offset > f->size)
        return tm_fail(err, GGUF_ERROR_MAX, "truncated file: data section would start at %" PRIu64 ", file has %zu bytes",
                    f->data_offset, f->size);
    uint64_t data_size = f->size - f->data_offset;
    uint64_t expected = 0; /* running padded total */
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (t->offset % a != 0)
            return tm_fail(err, GGUF_ERROR_MAX, "tensor '%s': data offset %" PRIu64 " not aligned to %" PRIu64, t->name,
                        t->offset, a);
        if (t->offset != expected)
            return tm_fail(err, GGUF_ERROR_MAX, "tensor '%s': data offset %" PRIu64 " should be %" PRIu64
                        " (tensors must follow each other in order, padded to %" PRIu64 ")",
                        t->name, t->offset, expected, a);
        if (t->offset > data_size || t->n_bytes > data_size - t->offset)
            return tm_fail(err, GGUF_ERROR_MAX, "tensor '%s': data [%" PRIu64 ", +%" PRIu64 ") runs past the end of the "
                        "file (data section holds %" PRIu64 " bytes)", t->name, t->offset, t->n_bytes,
                        data_size);
        t->data = f->base + f->data_offset + t->offset;
        uint64_t padded = (t->n_bytes + a - 1) / a * a; /* n_bytes <= data_size: no overflow */
        expected = t->offset + padded;
    }
    return 0;
}

int gguf_parse(const void *data, size_t size, gguf_file *f, char err[GGUF_ERROR_MAX])
{
    memset(f, 0, sizeof *f);
    f->base = data;
    f->size = size;
    cursor c = {data, size, 0, err};
    uint32_t magic;
    if (size == 0) return tm_fail(err, GGUF_ERROR_MAX, "file is empty");
    if (read_u32(&c, &magic, "magic")) return -1;
    if (magic != GGUF_MAGIC) return tm_fail(err, GGUF_ERROR_MAX, "not a GGUF file (bad magic 0x%08x)", magic);
    if (read_u32(&c, &f->version, "version")) return -1;
    if (f->version != GGUF_VERSION) {
        if (f->version == __builtin_bswap32(GGUF_VERSION))
            return tm_fail(err, GGUF_ERROR_MAX, "big-endian GGUF files are not supported");
        return tm_fail(err, GGUF_ERROR_MAX, "GGUF version %u is not supported (only %u)", f->version, GGUF_VERSION);
    }
    if (read_u64(&c, &f->n_tensors, "tensor count") || read_u64(&c, &f->n_kv, "metadata count"))
        return -1;
    /* a key-value pair takes at least 13 bytes, a tensor info at least 32 */
    if (f->n_kv > remaining(&c) / 13)
        return tm_fail(err, GGUF_ERROR_MAX, "metadata count %" PRIu64 " cannot fit in a file of %zu bytes", f->n_kv, size);
    if (f->n_tensors > remaining(&c) / 32)
        return tm_fail(err, GGUF_ERROR_MAX, "tensor count %" PRIu64 " cannot fit in a file of %zu bytes", f->n_tensors, size);
    f->kv = calloc(f->n_kv + 1, sizeof *f->kv);
    f->tensors = calloc(f->n_tensors + 1, sizeof *f->tensors);
    if (!f->kv || !f->tensors) return tm_fail(err, GGUF_ERROR_MAX, "out of host memory for the GGUF header");

    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        char what[96];
        snprintf(what, sizeof what, "metadata key %" PRIu64, i);
        if (read_str(&c, &kv->key, what)) return -1;
        if (kv->key.len == 0) return tm_fail(err, GGUF_ERROR_MAX, "metadata key %" PRIu64 " is empty", i);
        uint32_t type;
        snprintf(what, sizeof what, "metadata '%.*s'", (int)(kv->key.len > 64 ? 64 : kv->key.len),
                 kv->key.data);
        if (read_u32(&c, &type, what) || read_value(&c, type, &kv->value, what)) return -1;
    }
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (read_tensor_info(&c, i, &f->tensors[i])) return -1;
    if (build_index(f, err) || parse_alignment(f, err)) return -1;
    return place_tensors(f, c.pos, err);
}

int gguf_open(const char *path, gguf_file *f, char err[GGUF_ERROR_MAX])
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tm_fail(err, GGUF_ERROR_MAX, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tm_fail(err, GGUF_ERROR_MAX, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return tm_fail(err, GGUF_ERROR_MAX, "'%s' is not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return tm_fail(err, GGUF_ERROR_MAX, "'%s': file is empty", path);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return tm_fail(err, GGUF_ERROR_MAX, "cannot map '%s': %s", path, strerror(e));
    char inner[GGUF_ERROR_MAX];
    int rc = gguf_parse(map, (size_t)st.st_size, f, inner);
    f->mapped = true;
    if (rc != 0) {
        gguf_close(f);
        return tm_fail(err, GGUF_ERROR_MAX, "%s: %s", path, inner);
    }
    return 0;
}

void gguf_close(gguf_file *f)
{
    if (f->index) {
        HASH_CLEAR(hh, f->index->kv_head);
        HASH_CLEAR(hh, f->index->tensor_head);
        free(f->index->entries);
        free(f->index);
    }
    free(f->kv);
    free(f->tensors);
    if (f->mapped && f->base) munmap((void *)f->base, f->size);
    memset(f, 0, sizeof *f);
}

/* ----------------------------------------------------------------------------
 * Lookups and typed getters */

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key)
{
    if (!f->index) return NULL;
    index_entry *e = index_find(f->index->kv_head, key, strlen(key));
    return e ? &f->kv[e->slot] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    if (!f->index) return NULL;
    index_entry *e = index_find(f->index->tensor_head, name, strlen(name));
    return e ? &f->tensors[e->slot] : NULL;
}

int gguf_get_uint(const gguf_file *f, const char *key, uint64_t *out, char err[GGUF_ERROR_MAX])
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return 0;
    gguf_value_type t = kv->value.type;
    if (type_is_signed(t)) {
        if (kv->value.i < 0) return tm_fail(err, GGUF_ERROR_MAX, "%s is negative (%" PRId64 ")", key, kv->value.i);
        *out = (uint64_t)kv->value.i;
        return 1;
    }
    if (t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_UINT64) {
        *out = kv->value.u;
        return 1;
    }
    return tm_fail(err, GGUF_ERROR_MAX, "%s has type %s (expected an integer)", key, gguf_value_type_name(t));
}

int gguf_get_float(const gguf_file *f, const char *key, double *out, char err[GGUF_ERROR_MAX])
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return 0;
    if (!type_is_float(kv->value.type))
        return tm_fail(err, GGUF_ERROR_MAX, "%s has type %s (expected a float)", key, gguf_value_type_name(kv->value.type));
    *out = kv->value.f;
    return 1;
}

int gguf_get_bool(const gguf_file *f, const char *key, bool *out, char err[GGUF_ERROR_MAX])
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return 0;
    if (kv->value.type != GGUF_TYPE_BOOL)
        return tm_fail(err, GGUF_ERROR_MAX, "%s has type %s (expected bool)", key, gguf_value_type_name(kv->value.type));
    *out = kv->value.u != 0;
    return 1;
}

int gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, char err[GGUF_ERROR_MAX])
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return 0;
    if (kv->value.type != GGUF_TYPE_STRING)
        return tm_fail(err, GGUF_ERROR_MAX, "%s has type %s (expected string)", key, gguf_value_type_name(kv->value.type));
    *out = kv->value.str;
    return 1;
}

int gguf_get_array(const gguf_file *f, const char *key, gguf_value_type type,
                   const gguf_value **out, char err[GGUF_ERROR_MAX])
{
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return 0;
    if (kv->value.type != GGUF_TYPE_ARRAY || kv->value.arr.type != type)
        return tm_fail(err, GGUF_ERROR_MAX, "%s has type %s%s%s (expected array of %s)", key,
                    gguf_value_type_name(kv->value.type), kv->value.type == GGUF_TYPE_ARRAY ? " of " : "",
                    kv->value.type == GGUF_TYPE_ARRAY ? gguf_value_type_name(kv->value.arr.type) : "",
                    gguf_value_type_name(type));
    *out = &kv->value;
    return 1;
}
