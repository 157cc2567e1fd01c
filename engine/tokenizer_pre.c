/* tokenizer_pre.c — the BPE pre-tokenizers that tokenizer.ggml.pre names, and the
 * user-defined tokens that are cut out of the text before them.
 *
 * A pre-tokenizer is a list of regular expressions applied in turn, as llama.cpp does:
 * each one cuts every piece left by the previous ones into its matches and the text
 * between them. The expressions are those of the models' tokenizer.json files (with
 * llama.cpp's case-insensitive contractions spelled out), matched by PCRE2 in UTF mode
 * with Unicode properties (\p{L}, \p{N}, \s). "gpt-2" (and a file without the key) keeps
 * the hand-written GPT-2 splitter of tokenizer_bpe.c; an unknown name falls back to it
 * with a warning naming it.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/error.h"
#include "engine/tokenizer.h"

#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define GPT2_WORDS "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define CJK "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"

static const struct {
    const char *name;
    const char *regex[6];
} PRETOKENIZERS[] = {
    {"llama-bpe", {CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                   "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"qwen2", {CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
               "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"deepseek-llm",
     {"[\\r\\n]",
      "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
      "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
      "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
      "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
      "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
      "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
      "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
      "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
      "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
      "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
      "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
      "\U0001e900-\U0001e943]+",
      "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", "\\s+$", CJK, "\\p{N}+"}},
    {"deepseek-coder", {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", CJK, "\\p{N}"}},
    {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2_WORDS, "[0-9][0-9][0-9]"}},
    {"starcoder", {"\\p{N}", GPT2_WORDS}},
    {"gpt-2", {NULL}},
    {"default", {NULL}},
};

/* ----------------------------------------------------------------------------
 * Loading */

int tokenizer_pre_load(tokenizer *tok, const gguf_file *f, char err[GGUF_ERROR_MAX])
{
    gguf_str pre;
    int rc = gguf_get_str(f, "tokenizer.ggml.pre", &pre, err);
    if (rc < 0) return -1;
    if (rc == 0) return 0; /* the GPT-2 splitter */
    size_t k = 0;
    while (k < sizeof PRETOKENIZERS / sizeof *PRETOKENIZERS && !gguf_str_eq(pre, PRETOKENIZERS[k].name)) k++;
    if (k == sizeof PRETOKENIZERS / sizeof *PRETOKENIZERS) {
        fprintf(stderr, "tiermem-llm: warning: pre-tokenizer '%.*s' (tokenizer.ggml.pre) is not known; "
                "using GPT-2's\n", (int)(pre.len > 40 ? 40 : pre.len), pre.data);
        return 0;
    }
    for (int i = 0; i < TOKENIZER_MAX_PRE && PRETOKENIZERS[k].regex[i]; i++) {
        int code;
        PCRE2_SIZE at;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)PRETOKENIZERS[k].regex[i], PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &code, &at, NULL);
        if (!re) {
            char msg[120];
            pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof msg);
            return tm_fail(err, GGUF_ERROR_MAX, "pre-tokenizer %s, expression %d: %s at %zu",
                           PRETOKENIZERS[k].name, i, msg, (size_t)at);
        }
        tok->pre_regex[tok->n_pre++] = re;
    }
    return 0;
}

/* User-defined tokens are matched in the raw text before pre-tokenisation, longest first. */
static int longer_first(const void *a, const void *b, void *pieces)
{
    const gguf_str *p = pieces;
    size_t la = p[*(const int32_t *)a].len, lb = p[*(const int32_t *)b].len;
    return la < lb ? 1 : la > lb ? -1 : *(const int32_t *)a - *(const int32_t *)b;
}

/* The ids of every token of one type, longest text first. */
static int collect_type(const tokenizer *tok, int32_t type, int32_t **ids, int32_t *n_ids)
{
    int32_t n = 0;
    for (int32_t i = 0; i < tok->n_vocab; i++) n += tok->types[i] == type && tok->pieces[i].len > 0;
    if (!n) return 0;
    if (!(*ids = malloc((size_t)n * sizeof **ids))) return -1;
    for (int32_t i = 0; i < tok->n_vocab; i++)
        if (tok->types[i] == type && tok->pieces[i].len > 0) (*ids)[(*n_ids)++] = i;
    qsort_r(*ids, (size_t)n, sizeof **ids, longer_first, tok->pieces);
    return 0;
}

int tokenizer_user_tokens_load(tokenizer *tok, char err[GGUF_ERROR_MAX])
{
    if (collect_type(tok, TOKEN_USER, &tok->user_ids, &tok->n_user) ||
        collect_type(tok, TOKEN_CONTROL, &tok->control_ids, &tok->n_control))
        return tm_fail(err, GGUF_ERROR_MAX, "out of host memory");
    return 0;
}

void tokenizer_pre_free(tokenizer *tok)
{
    for (int i = 0; i < tok->n_pre; i++) pcre2_code_free((pcre2_code *)tok->pre_regex[i]);
    tok->n_pre = 0;
    free(tok->user_ids);
    free(tok->control_ids);
    tok->user_ids = tok->control_ids = NULL;
    tok->n_user = tok->n_control = 0;
}

/* ----------------------------------------------------------------------------
 * Splitting */

typedef struct span {
    size_t off, len;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
} spans;

static int spans_push(spans *s, size_t off, size_t len)
{
    if (!len) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        span *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = (span){off, len};
    return 0;
}

/* Cuts each piece of *in into the matches of re and the text between them. */
static int split_one(const pcre2_code *re, const char *text, const spans *in, spans *out,
                     pcre2_match_data *md)
{
    for (size_t p = 0; p < in->n; p++) {
        const char *seg = text + in->v[p].off;
        size_t len = in->v[p].len, prev = 0, at = 0;
        while (at < len) {
            int rc = pcre2_match(re, (PCRE2_SPTR)seg, len, at, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc < 0) break; /* no more matches (or a match error: keep the rest whole) */
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            if (me == ms) { /* an empty match: step over one character */
                at = ms + utf8_len((unsigned char)seg[ms]);
                continue;
            }
            if (spans_push(out, in->v[p].off + prev, ms - prev) || spans_push(out, in->v[p].off + ms, me - ms))
                return -1;
            prev = at = me;
        }
        if (spans_push(out, in->v[p].off + prev, len - prev)) return -1;
    }
    return 0;
}

int tokenizer_pre_split(const tokenizer *tok, const char *text, size_t len,
                        int (*word)(const char *w, size_t wlen, void *ctx), void *ctx)
{
    spans a = {0}, b = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int rc = -1;
    if (!md || spans_push(&a, 0, len)) goto out;
    for (int i = 0; i < tok->n_pre; i++) {
        b.n = 0;
        if (split_one((const pcre2_code *)tok->pre_regex[i], text, &a, &b, md)) goto out;
        spans t = a;
        a = b, b = t;
    }
    rc = 0;
    for (size_t i = 0; i < a.n && rc == 0; i++) rc = word(text + a.v[i].off, a.v[i].len, ctx);
out:
    pcre2_match_data_free(md);
    free(a.v);
    free(b.v);
    return rc;
}
