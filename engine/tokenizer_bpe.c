/* tokenizer_bpe.c — byte-level BPE ("gpt2"): GPT-2 pre-tokenisation, rank-ordered merges.
 *
 * Pieces are spelled in GPT-2's byte-to-unicode alphabet: printable bytes stand for
 * themselves, the others for U+0100 onwards. The text is cut into words with GPT-2's
 * pattern ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+);
 * letter and digit classes come from the C.UTF-8 locale. In each word, the adjacent
 * pair with the lowest merge rank is merged until no pair has a rank.
 */
#include "engine/tokenizer.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <wctype.h>

struct merge_entry {
    int64_t rank;
    UT_hash_handle hh;
};

/* ----------------------------------------------------------------------------
 * GPT-2 byte <-> unicode alphabet */

static uint32_t byte_to_cp(unsigned b)
{
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return b;
    /* the remaining bytes in order, from U+0100 */
    unsigned k = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) k++;
    return 256 + k;
}

/* Inverse of byte_to_cp; -1 for a code point outside the alphabet. */
static int cp_to_byte(uint32_t cp)
{
    if (cp < 256) return byte_to_cp(cp) == cp ? (int)cp : -1;
    for (unsigned b = 0, k = 256; b < 256; b++) {
        if (byte_to_cp(b) < 256) continue;
        if (k++ == cp) return (int)b;
    }
    return -1;
}

static size_t put_utf8(uint32_t cp, char *out)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* Decodes one UTF-8 sequence; invalid input yields the lead byte as a code point. */
static uint32_t get_utf8(const unsigned char *s, size_t avail, size_t *len)
{
    size_t n = utf8_len(s[0]);
    if (n == 1 || n > avail) { *len = 1; return s[0]; }
    uint32_t cp = s[0] & (0xFF >> (n + 1));
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) { *len = 1; return s[0]; }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *len = n;
    return cp;
}

/* ----------------------------------------------------------------------------
 * Loading merges */

int tokenizer_load_bpe(tokenizer *tok, const gguf_file *f, char err[GGUF_ERROR_MAX])
{
    locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (!loc) {
        snprintf(err, GGUF_ERROR_MAX, "the C.UTF-8 locale is missing (needed for gpt2 tokenization)");
        return -1;
    }
    tok->locale = loc;
    const gguf_value *merges;
    int rc = gguf_get_array(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &merges, err);
    if (rc < 0) return -1;
    if (rc == 0) {
        snprintf(err, GGUF_ERROR_MAX, "gpt2 tokenizer without tokenizer.ggml.merges");
        return -1;
    }
    int64_t n = (int64_t)merges->arr.count;
    gguf_str *strs = calloc((size_t)n + 1, sizeof *strs);
    tok->merge_entries = calloc((size_t)n + 1, sizeof *tok->merge_entries);
    tok->merge_keys = calloc((size_t)n + 1, sizeof *tok->merge_keys);
    if (!strs || !tok->merge_entries || !tok->merge_keys) {
        free(strs);
        snprintf(err, GGUF_ERROR_MAX, "out of host memory for %lld merges", (long long)n);
        return -1;
    }
    gguf_array_strings(merges, strs);
    tok->n_merges = n;
    for (int64_t i = 0; i < n; i++) {
        /* the key is "left right" as stored; lookups build the same spelling */
        char *key = strndup(strs[i].data, strs[i].len);
        if (!key) { free(strs); snprintf(err, GGUF_ERROR_MAX, "out of host memory"); return -1; }
        tok->merge_keys[i] = key;
        merge_entry *e = &tok->merge_entries[i], *old = NULL;
        e->rank = i;
        HASH_FIND_STR(tok->merges, key, old);
        if (!old) HASH_ADD_KEYPTR(hh, tok->merges, key, strlen(key), e);
    }
    free(strs);
    return 0;
}

void tokenizer_free_bpe(tokenizer *tok)
{
    HASH_CLEAR(hh, tok->merges);
    for (int64_t i = 0; i < tok->n_merges; i++) free(tok->merge_keys[i]);
    free(tok->merge_keys);
    free(tok->merge_entries);
    if (tok->locale) freelocale((locale_t)tok->locale);
    tokenizer_pre_free(tok);
}

/* ----------------------------------------------------------------------------
 * Pre-tokenisation: the length in bytes of the next GPT-2 word at s */

typedef enum cclass { C_SPACE, C_LETTER, C_NUMBER, C_OTHER } cclass;

static cclass classify(uint32_t cp, locale_t loc)
{
    if (iswspace_l((wint_t)cp, loc)) return C_SPACE;
    if (cp < 0x80 ? (cp >= '0' && cp <= '9') : (iswdigit_l((wint_t)cp, loc) != 0)) return C_NUMBER;
    if (iswalpha_l((wint_t)cp, loc)) return C_LETTER;
    return C_OTHER;
}

static size_t next_word(const unsigned char *s, size_t avail, locale_t loc)
{
    static const char *const contractions[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
    for (size_t k = 0; k < sizeof contractions / sizeof *contractions; k++) {
        size_t n = strlen(contractions[k]);
        if (n <= avail && memcmp(s, contractions[k], n) == 0) return n;
    }
    size_t len, pos = 0;
    uint32_t cp = get_utf8(s, avail, &len);
    cclass c = classify(cp, loc);
    /* " ?X+" for a letter, number or other run */
    size_t start = 0;
    if (cp == ' ' && len < avail) {
        size_t l2;
        uint32_t cp2 = get_utf8(s + len, avail - len, &l2);
        if (classify(cp2, loc) != C_SPACE) { start = len; c = classify(cp2, loc); }
    }
    if (c != C_SPACE) {
        pos = start;
        while (pos < avail) {
            uint32_t x = get_utf8(s + pos, avail - pos, &len);
            if (classify(x, loc) != c) break;
            pos += len;
        }
        return pos;
    }
    /* whitespace run: \s+(?!\S) leaves the last space to the next word, else \s+ */
    size_t last = 0;
    while (pos < avail) {
        uint32_t x = get_utf8(s + pos, avail - pos, &len);
        if (classify(x, loc) != C_SPACE) break;
        last = pos;
        pos += len;
    }
    if (pos == avail || last == 0) return pos;
    return last;
}

/* ----------------------------------------------------------------------------
 * Merging one word */

typedef struct piece {
    size_t off, len; /* into the word's mapped spelling */
} piece;

static int64_t merge_rank(const tokenizer *tok, const char *text, const piece *a, const piece *b,
                          char *scratch)
{
    memcpy(scratch, text + a->off, a->len);
    scratch[a->len] = ' ';
    memcpy(scratch + a->len + 1, text + b->off, b->len);
    scratch[a->len + 1 + b->len] = 0;
    merge_entry *e = NULL;
    HASH_FIND_STR(tok->merges, scratch, e);
    return e ? e->rank : -1;
}

static int64_t encode_word(const tokenizer *tok, const unsigned char *w, size_t wlen, int32_t *ids,
                           int64_t max_ids, int64_t n)
{
    char *text = malloc(2 * wlen + 1), *scratch = malloc(4 * wlen + 2);
    piece *pc = malloc(wlen * sizeof *pc);
    if (!text || !scratch || !pc) { free(text); free(scratch); free(pc); return -1; }
    size_t tlen = 0;
    int64_t np = 0;
    for (size_t i = 0; i < wlen; i++) {
        size_t l = put_utf8(byte_to_cp(w[i]), text + tlen);
        pc[np++] = (piece){tlen, l};
        tlen += l;
    }
    for (;;) {
        int64_t best = -1, best_rank = -1;
        for (int64_t i = 0; i + 1 < np; i++) {
            int64_t r = merge_rank(tok, text, &pc[i], &pc[i + 1], scratch);
            if (r >= 0 && (best_rank < 0 || r < best_rank)) { best_rank = r; best = i; }
        }
        if (best < 0) break;
        pc[best].len += pc[best + 1].len;
        memmove(&pc[best + 1], &pc[best + 2], (size_t)(np - best - 2) * sizeof *pc);
        np--;
    }
    for (int64_t i = 0; i < np; i++) {
        int32_t id = tokenizer_find(tok, text + pc[i].off, pc[i].len);
        if (id < 0) id = tok->unk_id;
        if (id < 0) continue;
        if (n < max_ids) ids[n] = id;
        n++;
    }
    free(text); free(scratch); free(pc);
    return n;
}

typedef struct encode_state {
    const tokenizer *tok;
    int32_t *ids;
    int64_t max_ids, n;
} encode_state;

static int encode_one(const char *w, size_t wlen, void *ctx)
{
    encode_state *st = ctx;
    st->n = encode_word(st->tok, (const unsigned char *)w, wlen, st->ids, st->max_ids, st->n);
    return st->n < 0 ? -1 : 0;
}

/* Text without user-defined tokens: pre-tokenised into words, each merged alone. */
static int64_t encode_plain(const tokenizer *tok, const char *text, size_t avail, int32_t *ids, int64_t max_ids,
                            int64_t n)
{
    if (tok->n_pre) {
        encode_state st = {tok, ids, max_ids, n};
        return tokenizer_pre_split(tok, text, avail, encode_one, &st) ? -1 : st.n;
    }
    const unsigned char *s = (const unsigned char *)text;
    while (avail > 0 && n >= 0) {
        size_t w = next_word(s, avail, (locale_t)tok->locale);
        if (w == 0) w = 1;
        n = encode_word(tok, s, w, ids, max_ids, n);
        s += w;
        avail -= w;
    }
    return n;
}

/* The earliest of ids[0..n) in text[0..len) (the longest at a tie, ids being longest
 * first) before *at: updates *at and returns its id, else returns best. */
static int32_t find_first_of(const tokenizer *tok, const int32_t *ids, int32_t n, const char *text, size_t len,
                             size_t *at, int32_t best)
{
    for (int32_t k = 0; k < n; k++) {
        gguf_str p = tok->pieces[ids[k]];
        const char *hit = memmem(text, len, p.data, p.len);
        if (hit && (size_t)(hit - text) < *at) best = ids[k], *at = (size_t)(hit - text);
    }
    return best;
}

/* The earliest user-defined (and with parse_special, control) token in text[0..len):
 * its id and offset, or -1 with *at = len. */
static int32_t find_user_token(const tokenizer *tok, const char *text, size_t len, size_t *at, bool parse_special)
{
    *at = len;
    int32_t best = parse_special ? find_first_of(tok, tok->control_ids, tok->n_control, text, len, at, -1) : -1;
    return find_first_of(tok, tok->user_ids, tok->n_user, text, len, at, best);
}

int64_t tokenizer_encode_bpe(const tokenizer *tok, const char *text, int32_t *ids, int64_t max_ids,
                             int64_t n, bool parse_special)
{
    size_t len = strlen(text), at;
    while (len > 0 && n >= 0) {
        int32_t id = find_user_token(tok, text, len, &at, parse_special);
        n = encode_plain(tok, text, at, ids, max_ids, n);
        if (id < 0 || n < 0) break;
        if (n < max_ids) ids[n] = id;
        n++;
        at += tok->pieces[id].len;
        text += at;
        len -= at;
    }
    return n;
}

/* ----------------------------------------------------------------------------
 * Decoding: map each code point of the piece back to its byte */

size_t tokenizer_decode_bpe(const tokenizer *tok, int32_t id, char *buf, size_t cap)
{
    gguf_str p = tok->pieces[id];
    size_t out = 0;
    for (size_t i = 0; i < p.len;) {
        size_t len;
        uint32_t cp = get_utf8((const unsigned char *)p.data + i, p.len - i, &len);
        int byte = cp_to_byte(cp);
        if (byte >= 0) {
            if (out < cap) buf[out] = (char)byte;
            out++;
        } else { /* not in the alphabet (a user-defined piece): copy as is */
            for (size_t k = 0; k < len; k++, out++)
                if (out < cap) buf[out] = p.data[i + k];
        }
        i += len;
    }
    return out < cap ? out : cap;
}
