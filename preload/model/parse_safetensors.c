/* parse_safetensors.c — the tensor table of a safetensors file, from its header.
 *
 * Layout: u64 little-endian N, then N bytes of JSON: an object mapping each tensor name to
 * {"dtype": "F16", "shape": [...], "data_offsets": [begin, end]} (offsets from the byte
 * after the header), plus an optional "__metadata__" object.
 *
 * This runs inside the host's open(), on bytes anyone may have written, so it reads the
 * JSON in one pass with a small scanner that keeps nothing but the tensor table: no tree
 * is built (a tree costs tens of bytes per input byte: a 94 MB header of one integer
 * array took 1.9 GB), work is linear in the header's bytes (at most TM_MODEL_HEADER_MAX),
 * nesting in values that are skipped is bounded (SKIP_DEPTH) and the table holds at most
 * TM_TENSORS_MAX entries; past any bound the header is refused. */
#include "preload/model/tensor_table.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP_DEPTH 64               /* nesting of the values the parser skips (metadata) */
#define TABLE_FIRST 64              /* tensors the table is first made for; it doubles */

typedef struct scan {
    const char *p, *end;
} scan;

static tm_parse_result fail(const char **why, const char *reason)
{
    *why = reason;
    return TM_PARSE_BAD;
}

static void skip_ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* Skips whitespace and takes `ch` if it comes next. */
static bool take(scan *s, char ch)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == ch) {
        s->p++;
        return true;
    }
    return false;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool take_hex4(scan *s, uint32_t *out)
{
    if (s->end - s->p < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(s->p[i]);
        if (d < 0) return false;
        v = v << 4 | (uint32_t)d;
    }
    s->p += 4;
    *out = v;
    return true;
}

/* Appends code point `cp` as UTF-8 while it fits in out[cap - 1]; control characters
 * become '?' (a name is printed in messages). */
static void put_code_point(char *out, size_t cap, size_t *len, uint32_t cp)
{
    char enc[4];
    size_t n;
    if (cp < 0x20 || cp == 0x7f) { enc[0] = '?'; n = 1; }
    else if (cp < 0x80) { enc[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { enc[0] = (char)(0xc0 | cp >> 6); enc[1] = (char)(0x80 | (cp & 0x3f)); n = 2; }
    else if (cp < 0x10000) {
        enc[0] = (char)(0xe0 | cp >> 12); enc[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        enc[2] = (char)(0x80 | (cp & 0x3f)); n = 3;
    } else {
        enc[0] = (char)(0xf0 | cp >> 18); enc[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        enc[2] = (char)(0x80 | (cp >> 6 & 0x3f)); enc[3] = (char)(0x80 | (cp & 0x3f)); n = 4;
    }
    if (out && *len + n < cap) {
        memcpy(out + *len, enc, n);
        *len += n;
    }
}

/* A JSON string, decoded into out[cap] (cut to fit, always terminated; out may be NULL).
 * *full is the decoded length before any cut. False when the string is malformed. */
static bool take_string(scan *s, char *out, size_t cap, size_t *full)
{
    size_t len = 0, total = 0;
    if (!take(s, '"')) return false;
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p++;
        if (c == '"') {
            if (out) out[len] = '\0';
            if (full) *full = total;
            return true;
        }
        if (c < 0x20) return false;             /* raw control characters are not JSON */
        if (c != '\\') {
            /* DEL is valid raw JSON but a control character in a message, as escaped ones are */
            if (out && len + 1 < cap) out[len++] = c == 0x7f ? '?' : (char)c;
            total++;
            continue;
        }
        if (s->p == s->end) return false;
        char e = *s->p++;
        uint32_t cp;
        switch (e) {
        case '"': case '\\': case '/': cp = (uint32_t)e; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (!take_hex4(s, &cp)) return false;
            if (cp >= 0xd800 && cp < 0xdc00) {  /* a surrogate pair */
                uint32_t low;
                if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u') return false;
                s->p += 2;
                if (!take_hex4(s, &low) || low < 0xdc00 || low >= 0xe000) return false;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                return false;
            }
            break;
        default:
            return false;
        }
        size_t before = len;
        put_code_point(out, cap, &len, cp);
        total += len > before ? len - before : 1;
    }
    return false;
}

/* A non-negative JSON integer that fits in 64 bits. */
static bool take_u64(scan *s, uint64_t *out)
{
    skip_ws(s);
    const char *start = s->p;
    uint64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s->p - '0'), &v))
            return false;
        s->p++;
    }
    size_t digits = (size_t)(s->p - start);
    if (digits == 0 || (digits > 1 && *start == '0')) return false;
    if (s->p < s->end && (*s->p == '.' || *s->p == 'e' || *s->p == 'E')) return false;
    *out = v;
    return true;
}

/* Any JSON number, skipped. */
static bool skip_number(scan *s)
{
    if (s->p < s->end && *s->p == '-') s->p++;
    const char *digits = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    if (s->p == digits) return false;
    if (s->p < s->end && *s->p == '.') {
        const char *frac = ++s->p;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
        if (s->p == frac) return false;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        const char *exp = s->p;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
        if (s->p == exp) return false;
    }
    return true;
}

static bool take_word(scan *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return false;
    s->p += n;
    return true;
}

/* One JSON value of any kind, skipped without recursion: open arrays and objects are a
 * stack of their closing brackets, at most SKIP_DEPTH deep. */
static bool skip_value(scan *s)
{
    char close[SKIP_DEPTH];
    int depth = 0;
    for (;;) {
        skip_ws(s);                             /* a value starts here */
        if (s->p == s->end) return false;
        char c = *s->p;
        bool opened = false;
        if (c == '{' || c == '[') {
            if (depth == SKIP_DEPTH) return false;
            s->p++;
            close[depth++] = c == '{' ? '}' : ']';
            opened = true;
            if (take(s, close[depth - 1])) {
                depth--;                        /* empty */
            } else if (c == '{') {
                if (!take_string(s, NULL, 0, NULL) || !take(s, ':')) return false;
                continue;
            } else {
                continue;
            }
        }
        if (!opened) {
            bool ok = c == '"' ? take_string(s, NULL, 0, NULL)
                      : c == 't' ? take_word(s, "true")
                      : c == 'f' ? take_word(s, "false")
                      : c == 'n' ? take_word(s, "null")
                                 : skip_number(s);
            if (!ok) return false;
        }
        for (;;) {                              /* after a value: close, or the next one */
            if (depth == 0) return true;
            if (take(s, close[depth - 1])) {
                depth--;
                continue;
            }
            if (!take(s, ',')) return false;
            if (close[depth - 1] == '}' && (!take_string(s, NULL, 0, NULL) || !take(s, ':'))) return false;
            break;
        }
    }
}

/* ---------------------------------------------------------------- entries */

enum { HAS_DTYPE = 1, HAS_SHAPE = 2, HAS_OFFSETS = 4 };

static tm_parse_result take_shape(scan *s, tm_tensor *t, const char **why)
{
    if (!take(s, '[')) return fail(why, "a safetensors shape is not an array");
    t->n_dims = 0;
    if (take(s, ']')) return TM_PARSE_OK;
    do {
        uint64_t n;
        if (t->n_dims == TM_TENSOR_DIMS_MAX) return fail(why, "a safetensors tensor has more than 8 dimensions");
        if (!take_u64(s, &n) || n > INT64_MAX)
            return fail(why, "a safetensors shape holds a negative or non-integer dimension");
        t->shape[t->n_dims++] = (int64_t)n;
    } while (take(s, ','));
    return take(s, ']') ? TM_PARSE_OK : fail(why, "a safetensors shape is not an array of integers");
}

/* One {"dtype": ..., "shape": [...], "data_offsets": [b, e]} value, other keys skipped. */
static tm_parse_result take_entry(scan *s, uint64_t data_start, tm_tensor *t, const char **why)
{
    static const char *lacks = "a safetensors entry lacks dtype, shape or data_offsets [begin, end]";
    unsigned seen = 0;
    uint64_t begin = 0, end = 0;
    if (!take(s, '{')) return fail(why, lacks);
    if (!take(s, '}')) {
        do {
            char key[16];
            size_t key_len;
            if (!take_string(s, key, sizeof key, &key_len) || !take(s, ':'))
                return fail(why, "the safetensors header is not valid JSON");
            unsigned which = key_len >= sizeof key ? 0
                             : !strcmp(key, "dtype") ? HAS_DTYPE
                             : !strcmp(key, "shape") ? HAS_SHAPE
                             : !strcmp(key, "data_offsets") ? HAS_OFFSETS : 0;
            if (which & seen) return fail(why, "a safetensors entry repeats a key");
            seen |= which;
            tm_parse_result r = TM_PARSE_OK;
            if (which == HAS_DTYPE) {
                skip_ws(s);
                if (!take_string(s, t->dtype, sizeof t->dtype, NULL)) r = fail(why, lacks);
            } else if (which == HAS_SHAPE) {
                r = take_shape(s, t, why);
            } else if (which == HAS_OFFSETS) {
                if (!take(s, '[') || !take_u64(s, &begin) || !take(s, ',') || !take_u64(s, &end) ||
                    !take(s, ']') || end < begin)
                    r = fail(why, lacks);
            } else if (!skip_value(s)) {
                r = fail(why, "the safetensors header is not valid JSON");
            }
            if (r != TM_PARSE_OK) return r;
        } while (take(s, ','));
        if (!take(s, '}')) return fail(why, "the safetensors header is not valid JSON");
    }
    if (seen != (HAS_DTYPE | HAS_SHAPE | HAS_OFFSETS)) return fail(why, lacks);
    if (__builtin_add_overflow(begin, data_start, &t->offset)) return fail(why, "a safetensors offset overflows");
    t->size = end - begin;
    return TM_PARSE_OK;
}

/* The header's object, entry by entry, into a table that grows by doubling. */
static tm_parse_result take_header(scan *s, uint64_t data_start, tm_tensor_table *table, const char **why)
{
    if (!take(s, '{')) return fail(why, "the safetensors header is not a JSON object");
    if (take(s, '}')) return TM_PARSE_OK;
    uint64_t capacity = 0;
    do {
        char name[TM_TENSOR_NAME_MAX];
        size_t name_len;
        if (!take_string(s, name, sizeof name, &name_len) || !take(s, ':'))
            return fail(why, "the safetensors header is not valid JSON");
        if (name_len == 12 && !strcmp(name, "__metadata__")) {
            if (!skip_value(s)) return fail(why, "the safetensors metadata is not valid JSON");
            continue;
        }
        if (table->count == TM_TENSORS_MAX)
            return fail(why, "the safetensors header lists more than 65536 tensors");
        if (table->count == capacity) {
            uint64_t grown = capacity ? capacity * 2 : TABLE_FIRST;
            tm_tensor *more = realloc(table->tensor, (size_t)grown * sizeof *more);
            if (!more) return fail(why, "out of memory for the tensor table");
            table->tensor = more;
            capacity = grown;
        }
        tm_tensor *t = &table->tensor[table->count];
        memset(t, 0, sizeof *t);
        memcpy(t->name, name, sizeof name);
        tm_parse_result r = take_entry(s, data_start, t, why);
        if (r != TM_PARSE_OK) return r;
        table->count++;
    } while (take(s, ','));
    if (!take(s, '}')) return fail(why, "the safetensors header is not valid JSON");
    skip_ws(s);                                 /* writers pad the header with spaces */
    return s->p == s->end ? TM_PARSE_OK : fail(why, "the safetensors header has bytes after its object");
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
    if (n < 2 || n > file_size - 8 || data[8] != '{')
        return TM_PARSE_NOT_MODEL;
    if (n > TM_MODEL_HEADER_MAX - 8)
        return fail(why, "its safetensors header is larger than 32 MiB");
    if (len - 8 < n) {
        *need = (size_t)n + 8;
        return TM_PARSE_SHORT;
    }
    tm_tensor_table parsed = { .format = TM_FORMAT_SAFETENSORS };
    scan s = { (const char *)data + 8, (const char *)data + 8 + n };
    tm_parse_result result = take_header(&s, n + 8, &parsed, why);
    if (result == TM_PARSE_OK) {
        if (!parsed.tensor && !(parsed.tensor = calloc(1, sizeof *parsed.tensor)))
            result = fail(why, "out of memory for the tensor table");
        else
            result = tm_tensor_table_finish(&parsed, file_size, why);
    }
    if (result != TM_PARSE_OK) {
        tm_tensor_table_free(&parsed);
        return result;
    }
    *table = parsed;
    return TM_PARSE_OK;
}
