/* vocab.c — synthetic vocabularies: bytes, then common English words with every prefix
 * (so SentencePiece merges can reach them), then letter pairs and triples, then unused
 * filler. Deterministic: the same size gives the same vocabulary. */
#include "tools/mkmodel/vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

static const char *const words[] = {
    "the", "a", "once", "upon", "time", "there", "was", "little", "girl", "boy", "named",
    "she", "he", "loved", "to", "play", "in", "park", "one", "day", "saw", "big", "dog",
    "cat", "and", "it", "is", "of", "on", "with", "for", "as", "at", "by", "from", "that",
    "this", "be", "are", "were", "had", "have", "but", "not", "they", "we", "you", "all",
    "what", "when", "where", "who", "how", "model", "memory", "tier", "device", "token",
    "fast", "slow", "happy", "sun", "tree", "friend", "went", "said", "very", "ball",
};
#define N_WORDS (sizeof words / sizeof *words)

typedef struct piece_set {
    char **items;           /* [n] NUL-terminated pieces in vocabulary order */
    int32_t *types;         /* [n] */
    int32_t n, cap;
    struct seen { char *key; UT_hash_handle hh; } *seen;
} piece_set;

static void add(piece_set *s, const char *piece, int32_t type)
{
    struct seen *e = NULL;
    HASH_FIND_STR(s->seen, piece, e);
    if (e || s->n == s->cap) return;
    e = malloc(sizeof *e);
    e->key = strdup(piece);
    HASH_ADD_KEYPTR(hh, s->seen, e->key, strlen(e->key), e);
    s->items[s->n] = e->key;
    s->types[s->n++] = type;
}

static void free_set(piece_set *s)
{
    struct seen *e, *tmp;
    HASH_ITER(hh, s->seen, e, tmp) {
        HASH_DEL(s->seen, e);
        free(e->key);
        free(e);
    }
    free(s->items);
    free(s->types);
}

/* Words with every prefix, then letter pairs and triples, spelled with `space` as the
 * word-start marker. */
static void add_text_pieces(piece_set *s, const char *space)
{
    char buf[64];
    for (size_t w = 0; w < N_WORDS; w++) {
        for (size_t len = 1; len <= strlen(words[w]); len++) {
            snprintf(buf, sizeof buf, "%s%.*s", space, (int)len, words[w]);
            add(s, buf, 1);
            if (len >= 2) { snprintf(buf, sizeof buf, "%.*s", (int)len, words[w]); add(s, buf, 1); }
        }
    }
    for (char a = 'a'; a <= 'z'; a++) { snprintf(buf, sizeof buf, "%s%c", space, a); add(s, buf, 1); }
    for (char a = 'a'; a <= 'z'; a++)
        for (char b = 'a'; b <= 'z'; b++) { snprintf(buf, sizeof buf, "%c%c", a, b); add(s, buf, 1); }
    for (char a = 'a'; a <= 'z'; a++)
        for (char b = 'a'; b <= 'z'; b++)
            for (char c = 'a'; c <= 'z'; c++) { snprintf(buf, sizeof buf, "%c%c%c", a, b, c); add(s, buf, 1); }
    for (int32_t i = 0; s->n < s->cap; i++) { snprintf(buf, sizeof buf, "<extra_%d>", i); add(s, buf, 5); }
}

/* ----------------------------------------------------------------------------
 * SentencePiece ("llama") */

int32_t vocab_min_size(vocab_kind kind) { return kind == VOCAB_SPM ? 3 + 256 + 96 : 256 + 1; }

static void write_spm(gguf_writer *w, int32_t n_vocab)
{
    piece_set s = {calloc(n_vocab, sizeof(char *)), calloc(n_vocab, 4), 0, n_vocab, NULL};
    char buf[16];
    add(&s, "<unk>", 2);
    add(&s, "<s>", 3);
    add(&s, "</s>", 3);
    for (int b = 0; b < 256; b++) { snprintf(buf, sizeof buf, "<0x%02X>", b); add(&s, buf, 6); }
    add(&s, "\xe2\x96\x81", 1);
    for (char c = '!'; c <= '~'; c++) { buf[0] = c; buf[1] = 0; add(&s, buf, 1); }
    add_text_pieces(&s, "\xe2\x96\x81");
    /* scores: later pieces are rarer; longer pieces come later, so merges prefer the
     * pieces that lead to whole words */
    float *scores = malloc(n_vocab * sizeof *scores);
    for (int32_t i = 0; i < n_vocab; i++) scores[i] = s.types[i] == 1 ? -(float)i : 0.0f;
    gw_str(w, "tokenizer.ggml.model", "llama");
    gw_str_array(w, "tokenizer.ggml.tokens", s.items, n_vocab);
    gw_f32_array(w, "tokenizer.ggml.scores", scores, n_vocab);
    gw_i32_array(w, "tokenizer.ggml.token_type", s.types, n_vocab);
    gw_u32(w, "tokenizer.ggml.bos_token_id", 1);
    gw_u32(w, "tokenizer.ggml.eos_token_id", 2);
    gw_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    gw_bool(w, "tokenizer.ggml.add_bos_token", 1);
    gw_bool(w, "tokenizer.ggml.add_space_prefix", 1);
    free(scores);
    free_set(&s);
}

/* ----------------------------------------------------------------------------
 * Byte-level BPE ("gpt2") */

static int is_printable_byte(unsigned b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static size_t byte_piece(unsigned b, char *out)
{
    unsigned cp = b;
    if (!is_printable_byte(b)) {
        cp = 256;
        for (unsigned x = 0; x < b; x++) cp += !is_printable_byte(x);
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; return 1; }
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    out[2] = 0;
    return 2;
}

static void write_gpt2(gguf_writer *w, int32_t n_vocab)
{
    /* one token is <|endoftext|>; the rest are bytes and merged pieces */
    piece_set s = {calloc(n_vocab, sizeof(char *)), calloc(n_vocab, 4), 0, n_vocab - 1, NULL};
    char buf[16];
    for (unsigned b = 0; b < 256; b++) { byte_piece(b, buf); add(&s, buf, 1); }
    int32_t first_merged = s.n;
    add_text_pieces(&s, "\xc4\xa0"); /* "Ġ": the byte-level spelling of a space */
    /* each merged piece is made of (piece minus its last character) + last character */
    int32_t n_merges = 0;
    char **merges = calloc(n_vocab, sizeof *merges);
    for (int32_t i = first_merged; i < s.n; i++) {
        const char *p = s.items[i];
        if (s.types[i] != 1) { s.types[i] = 5; continue; }
        size_t len = strlen(p), last = len - 1;
        while (last > 0 && ((unsigned char)p[last] & 0xC0) == 0x80) last--;
        char *m = malloc(len + 2);
        snprintf(m, len + 2, "%.*s %s", (int)last, p, p + last);
        merges[n_merges++] = m;
    }
    s.cap = n_vocab;
    add(&s, "<|endoftext|>", 3);
    gw_str(w, "tokenizer.ggml.model", "gpt2");
    gw_str_array(w, "tokenizer.ggml.tokens", s.items, n_vocab);
    gw_i32_array(w, "tokenizer.ggml.token_type", s.types, n_vocab);
    gw_str_array(w, "tokenizer.ggml.merges", merges, n_merges);
    gw_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)n_vocab - 1);
    gw_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)n_vocab - 1);
    gw_bool(w, "tokenizer.ggml.add_bos_token", 1);
    for (int32_t i = 0; i < n_merges; i++) free(merges[i]);
    free(merges);
    free_set(&s);
}

int vocab_write(gguf_writer *w, vocab_kind kind, int32_t n_vocab)
{
    if (n_vocab < vocab_min_size(kind)) return -1;
    if (kind == VOCAB_SPM) write_spm(w, n_vocab);
    else write_gpt2(w, n_vocab);
    return 0;
}
