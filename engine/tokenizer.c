/* tokenizer.c — vocabulary loading, lookup, and decoding shared by both tokenizer models. */
#include "engine/error.h"
#include "engine/tokenizer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

struct token_entry {
    int32_t id;
    UT_hash_handle hh;
};

size_t utf8_len(unsigned char c)
{
    static const uint8_t by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_nibble[c >> 4];
}

int32_t tokenizer_find(const tokenizer *tok, const char *text, size_t len)
{
    token_entry *e = NULL;
    HASH_FIND(hh, tok->by_text, text, len, e);
    return e ? e->id : -1;
}

/* ----------------------------------------------------------------------------
 * Loading */

static int load_special_id(const gguf_file *f, const char *key, int32_t n_vocab, int32_t fallback,
                           int32_t *out, char *err)
{
    uint64_t v;
    int rc = gguf_get_uint(f, key, &v, err);
    if (rc < 0) return -1;
    if (rc == 0) { *out = fallback; return 0; }
    /* 0xFFFFFFFF (and anything past the vocabulary) means "none" in files written by llama.cpp */
    *out = v < (uint64_t)n_vocab ? (int32_t)v : -1;
    return 0;
}

int tokenizer_load(tokenizer *tok, const gguf_file *f, char err[GGUF_ERROR_MAX])
{
    memset(tok, 0, sizeof *tok);
    gguf_str model;
    int rc = gguf_get_str(f, "tokenizer.ggml.model", &model, err);
    if (rc < 0) return -1;
    if (rc == 0) return tm_fail(err, GGUF_ERROR_MAX, "no tokenizer in the file (tokenizer.ggml.model is missing)");
    if (gguf_str_eq(model, "llama")) tok->kind = TOKENIZER_SPM;
    else if (gguf_str_eq(model, "gpt2")) tok->kind = TOKENIZER_BPE;
    else return tm_fail(err, GGUF_ERROR_MAX, "tokenizer model '%.*s' is not supported (llama or gpt2)",
                     (int)(model.len > 40 ? 40 : model.len), model.data);

    const gguf_value *tokens, *scores = NULL, *types = NULL;
    rc = gguf_get_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &tokens, err);
    if (rc < 0) return -1;
    if (rc == 0) return tm_fail(err, GGUF_ERROR_MAX, "tokenizer.ggml.tokens is missing");
    if (tokens->arr.count == 0 || tokens->arr.count > INT32_MAX)
        return tm_fail(err, GGUF_ERROR_MAX, "tokenizer.ggml.tokens holds %" PRIu64 " tokens", tokens->arr.count);
    tok->n_vocab = (int32_t)tokens->arr.count;
    if (gguf_get_array(f, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, &scores, err) < 0 ||
        gguf_get_array(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &types, err) < 0)
        return -1;
    if (scores && scores->arr.count != tokens->arr.count)
        return tm_fail(err, GGUF_ERROR_MAX, "tokenizer.ggml.scores has %" PRIu64 " entries for %d tokens", scores->arr.count,
                    tok->n_vocab);
    if (types && types->arr.count != tokens->arr.count)
        return tm_fail(err, GGUF_ERROR_MAX, "tokenizer.ggml.token_type has %" PRIu64 " entries for %d tokens",
                    types->arr.count, tok->n_vocab);

    size_t n = (size_t)tok->n_vocab;
    tok->pieces = calloc(n, sizeof *tok->pieces);
    tok->scores = calloc(n, sizeof *tok->scores);
    tok->types = calloc(n, sizeof *tok->types);
    tok->entries = calloc(n, sizeof *tok->entries);
    if (!tok->pieces || !tok->scores || !tok->types || !tok->entries) {
        tokenizer_free(tok);
        return tm_fail(err, GGUF_ERROR_MAX, "out of host memory for a vocabulary of %zu tokens", n);
    }
    gguf_array_strings(tokens, tok->pieces);
    for (size_t i = 0; i < n; i++) {
        tok->scores[i] = scores ? (float)gguf_array_float(scores, i) : 0.0f;
        tok->types[i] = types ? (int32_t)gguf_array_int(types, i) : TOKEN_NORMAL;
        token_entry *e = &tok->entries[i];
        e->id = (int32_t)i;
        /* the first of duplicate pieces wins */
        if (tokenizer_find(tok, tok->pieces[i].data, tok->pieces[i].len) < 0)
            HASH_ADD_KEYPTR(hh, tok->by_text, tok->pieces[i].data, (size_t)tok->pieces[i].len, e);
    }

    bool spm = tok->kind == TOKENIZER_SPM;
    if (load_special_id(f, "tokenizer.ggml.bos_token_id", tok->n_vocab, spm ? 1 : -1, &tok->bos_id, err) ||
        load_special_id(f, "tokenizer.ggml.eos_token_id", tok->n_vocab, spm ? 2 : -1, &tok->eos_id, err) ||
        load_special_id(f, "tokenizer.ggml.unknown_token_id", tok->n_vocab, spm ? 0 : -1, &tok->unk_id, err) ||
        load_special_id(f, "tokenizer.ggml.eot_token_id", tok->n_vocab, -1, &tok->eot_id, err)) {
        tokenizer_free(tok);
        return -1;
    }
    if (tok->bos_id >= tok->n_vocab) tok->bos_id = -1;
    if (tok->eos_id >= tok->n_vocab) tok->eos_id = -1;
    if (tok->unk_id >= tok->n_vocab) tok->unk_id = -1;
    tok->add_bos = spm;             /* the format's default per model */
    tok->add_space_prefix = spm;
    if (gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &tok->add_bos, err) < 0 ||
        gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", &tok->add_space_prefix, err) < 0) {
        tokenizer_free(tok);
        return -1;
    }
    if (tok->bos_id < 0) tok->add_bos = false;

    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        tok->byte_ids[b] = tokenizer_find(tok, name, 6);
    }
    if (!spm && (tokenizer_load_bpe(tok, f, err) || tokenizer_pre_load(tok, f, err) ||
                 tokenizer_user_tokens_load(tok, err))) {
        tokenizer_free(tok);
        return -1;
    }
    return 0;
}

void tokenizer_free(tokenizer *tok)
{
    HASH_CLEAR(hh, tok->by_text);
    if (tok->kind == TOKENIZER_BPE) tokenizer_free_bpe(tok);
    free(tok->pieces);
    free(tok->scores);
    free(tok->types);
    free(tok->entries);
    memset(tok, 0, sizeof *tok);
}

/* ----------------------------------------------------------------------------
 * Encoding and decoding */

int64_t tokenizer_encode(const tokenizer *tok, const char *text, bool add_bos, int32_t *ids,
                         int64_t max_ids)
{
    int64_t n = 0;
    if (add_bos && tok->bos_id >= 0) {
        if (n < max_ids) ids[n] = tok->bos_id;
        n++;
    }
    if (tok->kind == TOKENIZER_SPM) return tokenizer_encode_spm(tok, text, ids, max_ids, n);
    return tokenizer_encode_bpe(tok, text, ids, max_ids, n, false);
}

int64_t tokenizer_encode_special(const tokenizer *tok, const char *text, bool add_bos, int32_t *ids,
                                 int64_t max_ids)
{
    if (tok->kind == TOKENIZER_SPM) return tokenizer_encode(tok, text, add_bos, ids, max_ids);
    int64_t n = 0;
    if (add_bos && tok->bos_id >= 0) {
        if (n < max_ids) ids[n] = tok->bos_id;
        n++;
    }
    return tokenizer_encode_bpe(tok, text, ids, max_ids, n, true);
}

static size_t put(char *buf, size_t cap, size_t at, const char *src, size_t n)
{
    if (at < cap) memcpy(buf + at, src, n < cap - at ? n : cap - at);
    return at + n;
}

size_t tokenizer_decode(const tokenizer *tok, int32_t prev, int32_t id, char *buf, size_t cap)
{
    if (id < 0 || id >= tok->n_vocab) return 0;
    int32_t type = tok->types[id];
    if (type == TOKEN_CONTROL || type == TOKEN_UNUSED) return 0;
    if (tok->kind == TOKENIZER_BPE) return tokenizer_decode_bpe(tok, id, buf, cap);

    gguf_str piece = tok->pieces[id];
    if (type == TOKEN_BYTE) {
        unsigned v;
        if (piece.len == 6 && sscanf(piece.data, "<0x%02X>", &v) == 1) {
            char byte = (char)v;
            return put(buf, cap, 0, &byte, 1);
        }
    }
    /* "▁" (U+2581, e2 96 81) stands for a space */
    size_t out = 0;
    bool first_after_bos = prev == tok->bos_id && tok->add_space_prefix;
    for (size_t i = 0; i < piece.len;) {
        if (i + 3 <= piece.len && memcmp(piece.data + i, "\xe2\x96\x81", 3) == 0) {
            if (!(first_after_bos && i == 0)) out = put(buf, cap, out, " ", 1);
            i += 3;
        } else {
            out = put(buf, cap, out, piece.data + i, 1);
            i++;
        }
    }
    return out < cap ? out : cap;
}
