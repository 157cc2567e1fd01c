/* tokenizer_spm.c — SentencePiece (BPE-by-score) encoding, as llama.cpp's SPM tokenizer.
 *
 * The text gets a leading space (add_space_prefix), spaces become "▁", and the text is
 * split into UTF-8 characters. Adjacent pairs whose concatenation is a piece are merged,
 * best score first (leftmost on ties), until no pair is a piece. Each remaining symbol
 * is its piece, or, when it is not in the vocabulary, its bytes as <0xNN> tokens.
 */
#include "engine/tokenizer.h"

#include <stdlib.h>
#include <string.h>

typedef struct symbol {
    int64_t prev, next;     /* neighbours in the linked list, -1 at the ends */
    const char *text;
    size_t len;             /* 0 once merged into its left neighbour */
} symbol;

typedef struct bigram {
    int64_t left, right;
    float score;
    size_t len;             /* left.len + right.len when it was queued */
} bigram;

/* ----------------------------------------------------------------------------
 * A binary max-heap of bigrams: higher score first, then the leftmost */

typedef struct heap {
    bigram *items;
    int64_t n, cap;
} heap;

static bool before(const bigram *a, const bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static int heap_push(heap *h, bigram b)
{
    if (h->n == h->cap) {
        int64_t cap = h->cap ? h->cap * 2 : 64;
        bigram *items = realloc(h->items, (size_t)cap * sizeof *items);
        if (!items) return -1;
        h->items = items;
        h->cap = cap;
    }
    int64_t i = h->n++;
    h->items[i] = b;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!before(&h->items[i], &h->items[parent])) break;
        bigram t = h->items[i]; h->items[i] = h->items[parent]; h->items[parent] = t;
        i = parent;
    }
    return 0;
}

static bigram heap_pop(heap *h)
{
    bigram top = h->items[0];
    h->items[0] = h->items[--h->n];
    for (int64_t i = 0;;) {
        int64_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < h->n && before(&h->items[l], &h->items[best])) best = l;
        if (r < h->n && before(&h->items[r], &h->items[best])) best = r;
        if (best == i) break;
        bigram t = h->items[i]; h->items[i] = h->items[best]; h->items[best] = t;
        i = best;
    }
    return top;
}

/* ----------------------------------------------------------------------------
 * Encoding */

static int try_add_bigram(const tokenizer *tok, heap *h, const symbol *sym, int64_t left, int64_t right)
{
    if (left < 0 || right < 0) return 0;
    /* adjacent symbols are contiguous in the text buffer */
    size_t len = sym[left].len + sym[right].len;
    int32_t id = tokenizer_find(tok, sym[left].text, len);
    if (id < 0) return 0;
    return heap_push(h, (bigram){left, right, tok->scores[id], len});
}

static int64_t emit(int32_t id, int32_t *ids, int64_t max_ids, int64_t n)
{
    if (n < max_ids) ids[n] = id;
    return n + 1;
}

int64_t tokenizer_encode_spm(const tokenizer *tok, const char *text, int32_t *ids, int64_t max_ids,
                             int64_t n)
{
    size_t in_len = strlen(text);
    if (in_len == 0) return n;
    /* escaped text: optional leading space, every ' ' as "▁" (3 bytes) */
    char *buf = malloc(3 * (in_len + 1) + 1);
    symbol *sym = malloc((in_len + 1) * sizeof *sym);
    heap h = {0};
    if (!buf || !sym) { free(buf); free(sym); return -1; }
    size_t len = 0;
    if (tok->add_space_prefix) { memcpy(buf, "\xe2\x96\x81", 3); len = 3; }
    for (size_t i = 0; i < in_len; i++) {
        if (text[i] == ' ') { memcpy(buf + len, "\xe2\x96\x81", 3); len += 3; }
        else buf[len++] = text[i];
    }

    int64_t n_sym = 0;
    for (size_t off = 0; off < len; n_sym++) {
        size_t clen = utf8_len((unsigned char)buf[off]);
        if (clen > len - off) clen = len - off;
        sym[n_sym] = (symbol){n_sym - 1, -1, buf + off, clen};
        if (n_sym > 0) sym[n_sym - 1].next = n_sym;
        off += clen;
    }

    int rc = 0;
    for (int64_t i = 1; i < n_sym && rc == 0; i++) rc = try_add_bigram(tok, &h, sym, i - 1, i);
    while (h.n > 0 && rc == 0) {
        bigram b = heap_pop(&h);
        symbol *l = &sym[b.left], *r = &sym[b.right];
        /* stale: one side was merged away, or grew since this pair was queued */
        if (l->len == 0 || r->len == 0 || l->len + r->len != b.len) continue;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = b.left;
        rc = try_add_bigram(tok, &h, sym, l->prev, b.left);
        if (rc == 0) rc = try_add_bigram(tok, &h, sym, b.left, l->next);
    }

    for (int64_t i = 0; i < n_sym && rc == 0; i = sym[i].next) {
        int32_t id = tokenizer_find(tok, sym[i].text, sym[i].len);
        if (id >= 0) {
            n = emit(id, ids, max_ids, n);
        } else {
            for (size_t k = 0; k < sym[i].len; k++) {
                int32_t b = tok->byte_ids[(unsigned char)sym[i].text[k]];
                if (b < 0) b = tok->unk_id;
                if (b >= 0) n = emit(b, ids, max_ids, n);
            }
        }
        if (sym[i].next < 0) break;
    }
    free(h.items);
    free(sym);
    free(buf);
    return rc ? -1 : n;
}
