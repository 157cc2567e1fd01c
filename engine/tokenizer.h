/* tokenizer.h — text to token ids and back, from a GGUF file's tokenizer.ggml.* metadata.
 *
 * Two models: SentencePiece ("llama": merges by piece score, byte fallback <0xNN>,
 * a leading space added to the text, BOS first) and byte-level BPE ("gpt2": merges by
 * rank over GPT-2's byte-to-unicode alphabet, the pre-tokenizer tokenizer.ggml.pre names,
 * GPT-2's by default; user-defined tokens are cut out of the text first). Token strings
 * point into the GGUF mapping: the tokenizer must not outlive the gguf_file.
 */
#ifndef TM_ENGINE_TOKENIZER_H
#define TM_ENGINE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/gguf.h"

typedef enum tokenizer_kind { TOKENIZER_SPM, TOKENIZER_BPE } tokenizer_kind;

/* tokenizer.ggml.token_type values */
enum { TOKEN_NORMAL = 1, TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_USER = 4, TOKEN_UNUSED = 5,
       TOKEN_BYTE = 6 };

#define TOKENIZER_MAX_PRE 6     /* regular expressions of one pre-tokenizer */

typedef struct token_entry token_entry; /* hash entry, private */
typedef struct merge_entry merge_entry; /* hash entry, private */

typedef struct tokenizer {
    tokenizer_kind kind;
    int32_t n_vocab;
    gguf_str *pieces;       /* [n_vocab] token text as stored in the file */
    float *scores;          /* [n_vocab] SentencePiece scores (0 when absent) */
    int32_t *types;         /* [n_vocab] TOKEN_* (TOKEN_NORMAL when absent) */
    int32_t bos_id, eos_id, unk_id; /* -1 when none */
    bool add_bos;
    bool add_space_prefix;
    int32_t byte_ids[256];  /* SPM: id of <0xNN>, or -1 */
    token_entry *by_text;   /* piece text -> id */
    token_entry *entries;   /* [n_vocab] */
    merge_entry *merges;    /* BPE: "left right" -> rank */
    merge_entry *merge_entries;
    char **merge_keys;      /* [n_merges] NUL-terminated copies */
    int64_t n_merges;
    void *locale;           /* BPE: a UTF-8 locale_t for character classes */
    void *pre_regex[TOKENIZER_MAX_PRE]; /* BPE: compiled pcre2_code of tokenizer.ggml.pre */
    int n_pre;              /* 0: GPT-2's hand-written splitter */
    int32_t *user_ids;      /* [n_user] user-defined tokens, longest text first */
    int32_t n_user;
    int32_t *control_ids;   /* [n_control] control tokens (<|im_start|>, ...), longest first */
    int32_t n_control;
    int32_t eot_id;         /* end of turn (tokenizer.ggml.eot_token_id), -1 when none */
} tokenizer;

/* Returns 0, or -1 with a one-line message in err. */
int tokenizer_load(tokenizer *tok, const gguf_file *f, char err[GGUF_ERROR_MAX]);
void tokenizer_free(tokenizer *tok);

/* Encodes text (NUL-terminated). ids gets up to max_ids ids; returns the number the text
 * needs (which may exceed max_ids), or -1 on host allocation failure. BOS is prepended
 * when add_bos is true. */
int64_t tokenizer_encode(const tokenizer *tok, const char *text, bool add_bos, int32_t *ids,
                         int64_t max_ids);

/* The same, with the text of control tokens (<|im_start|>, <|eot_id|>, ...) read as those
 * tokens, as a chat template needs. SentencePiece vocabularies read them as text. */
int64_t tokenizer_encode_special(const tokenizer *tok, const char *text, bool add_bos, int32_t *ids,
                                 int64_t max_ids);

/* The bytes token `id` stands for, after `prev` (SPM drops the leading space of the first
 * piece after BOS). Writes into buf[cap] and returns the byte count (not NUL-terminated
 * when it fills buf). Control tokens decode to nothing. */
size_t tokenizer_decode(const tokenizer *tok, int32_t prev, int32_t id, char *buf, size_t cap);

int32_t tokenizer_find(const tokenizer *tok, const char *text, size_t len);

/* Internal to the tokenizer files. */
int64_t tokenizer_encode_spm(const tokenizer *tok, const char *text, int32_t *ids, int64_t max_ids,
                             int64_t n);
int64_t tokenizer_encode_bpe(const tokenizer *tok, const char *text, int32_t *ids, int64_t max_ids,
                             int64_t n, bool parse_special);
int tokenizer_load_bpe(tokenizer *tok, const gguf_file *f, char err[GGUF_ERROR_MAX]);
void tokenizer_free_bpe(tokenizer *tok);
size_t tokenizer_decode_bpe(const tokenizer *tok, int32_t id, char *buf, size_t cap);
int tokenizer_pre_load(tokenizer *tok, const gguf_file *f, char err[GGUF_ERROR_MAX]);
int tokenizer_user_tokens_load(tokenizer *tok, char err[GGUF_ERROR_MAX]);
void tokenizer_pre_free(tokenizer *tok);
/* Calls word() on each piece of text[0..len) the pre-tokenizer's expressions cut; stops
 * at and returns the first non-zero result (-1 on host allocation failure). */
int tokenizer_pre_split(const tokenizer *tok, const char *text, size_t len,
                        int (*word)(const char *w, size_t wlen, void *ctx), void *ctx);
/* Bytes in the UTF-8 sequence starting with lead byte c (1 for an invalid lead). */
size_t utf8_len(unsigned char c);

#endif /* TM_ENGINE_TOKENIZER_H */
