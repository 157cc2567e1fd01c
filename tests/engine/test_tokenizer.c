/* test_tokenizer.c — SentencePiece against llama.cpp's reference cases, the stories260K
 * prompt, decoding (byte tokens, leading space), and byte-level BPE on a generated
 * vocabulary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/tokenizer.h"
#include "tools/mkmodel/gguf_writer.h"
#include "engine/chat.h"
#include "tools/mkmodel/vocab.h"

#include "tests/lib/test_models.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    return b;
}

static char *decode_all(const tokenizer *t, const int32_t *ids, int64_t n)
{
    char *out = calloc(1, (size_t)n * 64 + 1);
    size_t len = 0;
    for (int64_t i = 0; i < n; i++) len += tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], out + len, 64);
    out[len] = 0;
    return out;
}

/* Every case of ggml-vocab-<name>.gguf.inp (split on "\n__ggml_vocab_test__\n")
 * encodes, without BOS, to the ids on the same line of .out. Returns the mismatches. */
static int check_vocab_cases(const char *name, int want_cases)
{
    char file[128], path[4200], inp_path[4210], out_path[4210];
    snprintf(file, sizeof file, "ggml-vocab-%s.gguf", name);
    TM_TEST_MODEL(path, file);
    snprintf(inp_path, sizeof inp_path, "%s.inp", path);
    snprintf(out_path, sizeof out_path, "%s.out", path);
    gguf_file f;
    tokenizer t;
    char err[GGUF_ERROR_MAX];
    assert_int_equal(gguf_open(path, &f, err), 0);
    if (tokenizer_load(&t, &f, err) != 0) fail_msg("%s: %s", name, err);
    char *inp = slurp(inp_path), *out = slurp(out_path);
    const char *sep = "\n__ggml_vocab_test__\n";
    char *p = inp, *o = out;
    int cases = 0, failures = 0;
    for (char *q; (q = strstr(p, sep)); p = q + strlen(sep)) {
        *q = 0;
        char *eol = strchr(o, '\n');
        assert_non_null(eol);
        *eol = 0;
        int32_t ids[4096];
        int64_t n = tokenizer_encode(&t, p, false, ids, 4096);
        char got[32768] = "";
        size_t len = 0;
        for (int64_t i = 0; i < n; i++) len += (size_t)snprintf(got + len, sizeof got - len, " %d", ids[i]);
        if (strcmp(got, o) != 0) {
            print_message("# %s case %d: '%s'\n#  got:      %s\n#  expected: %s\n", name, cases, p, got, o);
            failures++;
        }
        o = eol + 1;
        cases++;
    }
    print_message("# %s: %d cases, %d mismatches\n", name, cases, failures);
    assert_int_equal(cases, want_cases);
    free(inp);
    free(out);
    tokenizer_free(&t);
    gguf_close(&f);
    return failures;
}

static void test_spm_reference_cases(void **state)
{
    (void)state;
    assert_int_equal(check_vocab_cases("llama-spm", 46), 0);
    assert_int_equal(check_vocab_cases("phi-3", 46), 0);
}

static void test_bpe_reference_cases(void **state)
{
    (void)state;
    assert_int_equal(check_vocab_cases("gpt-2", 46), 0);
    assert_int_equal(check_vocab_cases("deepseek-llm", 46), 0);
}

static void test_stories_prompt(void **state)
{
    (void)state;
    gguf_file f;
    tokenizer t;
    char err[GGUF_ERROR_MAX], path[4200];
    TM_TEST_MODEL(path, "stories260K.gguf");
    assert_int_equal(gguf_open(path, &f, err), 0);
    assert_int_equal(tokenizer_load(&t, &f, err), 0);
    int32_t ids[32];
    int64_t n = tokenizer_encode(&t, "Once upon a time", t.add_bos, ids, 32);
    const int32_t want[] = {1, 403, 407, 261, 378};
    assert_int_equal(n, 5);
    assert_memory_equal(ids, want, sizeof want);
    /* decoding drops the leading space of the first piece after BOS */
    char *text = decode_all(&t, ids, n);
    assert_string_equal(text, "Once upon a time");
    free(text);
    /* characters outside the vocabulary fall back to byte tokens and decode back */
    const char *odd = "caf \xe6\x88\x91 \xf0\x9f\xa6\x99 42"; /* a CJK character and an emoji */
    n = tokenizer_encode(&t, odd, true, ids, 32);
    assert_true(n > 0 && n <= 32);
    int bytes = 0;
    for (int64_t i = 0; i < n; i++) bytes += t.types[ids[i]] == TOKEN_BYTE;
    assert_int_equal(bytes, 7); /* none is a piece: 3 + 4 byte tokens */
    text = decode_all(&t, ids, n);
    assert_string_equal(text, odd);
    free(text);
    /* the encoder reports the full length when the buffer is short */
    assert_int_equal(tokenizer_encode(&t, "Once upon a time", true, ids, 2), 5);
    tokenizer_free(&t);
    gguf_close(&f);
}

/* A gpt2 vocabulary written by the model generator's vocabulary code; pre names its
 * pre-tokenizer (tokenizer.ggml.pre) unless NULL. */
static void write_gpt2_vocab_pre(const char *path, const char *pre)
{
    gguf_writer w = {0};
    gw_str(&w, "general.architecture", "llama");
    if (pre) gw_str(&w, "tokenizer.ggml.pre", pre);
    assert_int_equal(vocab_write(&w, VOCAB_GPT2, 1024), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(gw_begin(&w, f), 0);
    fclose(f);
    gw_free(&w);
}

static void write_gpt2_vocab(const char *path) { write_gpt2_vocab_pre(path, NULL); }

/* The pieces a pre-tokenizer cuts, joined with '|'. */
static int join_piece(const char *w, size_t len, void *ctx)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 512 - n, "%s%.*s", n ? "|" : "", (int)len, w);
    return 0;
}

/* Each pre-tokenizer that tokenizer.ggml.pre names cuts digits, words and newlines its
 * own way (the regular expressions of the models' tokenizer.json); an unknown name falls
 * back to GPT-2's splitter. */
static void test_pretokenizers(void **state)
{
    (void)state;
    static const struct { const char *pre, *want; } cases[] = {
        {"llama-bpe", "Hello| world| |123|45|\n\n|ok|'s"},   /* digits in threes, newline runs */
        {"qwen2", "Hello| world| |1|2|3|4|5|\n\n|ok|'s"},     /* digits one by one */
        {"deepseek-llm", "Hello| world| |12345|\n|\n|ok|'|s"}, /* newlines, letters, punctuation apart */
        {"deepseek-coder", "Hello| world| |1|2|3|4|5|\n|\n|ok|'|s"},
        {"falcon", "Hello| world| |123|45|\n|\n|ok|'|s"},
        {"starcoder", "Hello| world| |1|2|3|4|5|\n|\n|ok|'s"},
    };
    char path[] = "/tmp/tm-pre-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const char *text = "Hello world 12345\n\nok's";
    int failures = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        write_gpt2_vocab_pre(path, cases[c].pre);
        gguf_file f;
        tokenizer t;
        char err[GGUF_ERROR_MAX], got[512] = "";
        assert_int_equal(gguf_open(path, &f, err), 0);
        assert_int_equal(tokenizer_load(&t, &f, err), 0);
        assert_true(t.n_pre > 0);
        assert_int_equal(tokenizer_pre_split(&t, text, strlen(text), join_piece, got), 0);
        if (strcmp(got, cases[c].want) != 0) {
            print_message("# %s: got '%s', want '%s'\n", cases[c].pre, got, cases[c].want);
            failures++;
        }
        tokenizer_free(&t);
        gguf_close(&f);
    }
    assert_int_equal(failures, 0);
    const char *fallback[] = {"gpt-2", "no-such-pre"};
    for (size_t c = 0; c < 2; c++) {
        write_gpt2_vocab_pre(path, fallback[c]);
        gguf_file f;
        tokenizer t;
        char err[GGUF_ERROR_MAX];
        assert_int_equal(gguf_open(path, &f, err), 0);
        assert_int_equal(tokenizer_load(&t, &f, err), 0);
        assert_int_equal(t.n_pre, 0); /* GPT-2's hand-written splitter */
        tokenizer_free(&t);
        gguf_close(&f);
    }
    unlink(path);
}

static void test_bpe(void **state)
{
    (void)state;
    char path[] = "/tmp/tiermem-test-gpt2-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_gpt2_vocab(path);
    gguf_file f;
    tokenizer t;
    char err[GGUF_ERROR_MAX];
    assert_int_equal(gguf_open(path, &f, err), 0);
    assert_int_equal(tokenizer_load(&t, &f, err), 0);
    assert_int_equal(t.kind, TOKENIZER_BPE);
    int32_t ids[128];
    /* merges reach whole words, a space joins the word after it */
    int64_t n = tokenizer_encode(&t, "the little girl", false, ids, 128);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], tokenizer_find(&t, "the", 3));
    assert_int_equal(ids[1], tokenizer_find(&t, "\xc4\xa0little", 8));
    assert_int_equal(ids[2], tokenizer_find(&t, "\xc4\xa0girl", 6));
    /* GPT-2 pre-tokenisation: contractions, digits and whitespace runs split apart */
    n = tokenizer_encode(&t, "dog's  42", false, ids, 128);
    char *text = decode_all(&t, ids, n);
    assert_string_equal(text, "dog's  42");
    free(text);
    assert_int_equal(ids[0], tokenizer_find(&t, "dog", 3));
    /* round trip of arbitrary bytes, BOS first */
    const char *odd = "Caf\xc3\xa9\n\ttabs\x01 and \xf0\x9f\xa6\x99!";
    n = tokenizer_encode(&t, odd, true, ids, 128);
    assert_int_equal(ids[0], t.bos_id);
    text = decode_all(&t, ids, n);
    assert_string_equal(text, odd);
    free(text);
    tokenizer_free(&t);
    gguf_close(&f);
    unlink(path);
}

/* The chat templates render as the models were trained, and control tokens in the text
 * are read as tokens only when asked (the BOS of deepseek-llm, a control token). */
static void test_chat_templates(void **state)
{
    (void)state;
    chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi!"}};
    char *s = chat_render(CHAT_CHATML, msgs, 2, 1);
    assert_string_equal(s, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
                           "<|im_start|>assistant\n");
    free(s);
    s = chat_render(CHAT_LLAMA3, msgs + 1, 1, 0);
    assert_string_equal(s, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>");
    free(s);

    gguf_file f;
    tokenizer t;
    char err[GGUF_ERROR_MAX], path[4200];
    TM_TEST_MODEL(path, "ggml-vocab-deepseek-llm.gguf");
    assert_int_equal(gguf_open(path, &f, err), 0);
    assert_int_equal(tokenizer_load(&t, &f, err), 0);
    assert_true(t.bos_id >= 0 && t.types[t.bos_id] == TOKEN_CONTROL);
    char text[128];
    snprintf(text, sizeof text, "%.*shi", (int)t.pieces[t.bos_id].len, t.pieces[t.bos_id].data);
    int32_t ids[64];
    int64_t n = tokenizer_encode_special(&t, text, false, ids, 64);
    assert_true(n >= 2);
    assert_int_equal(ids[0], t.bos_id);
    n = tokenizer_encode(&t, text, false, ids, 64);
    for (int64_t i = 0; i < n; i++) assert_int_not_equal(ids[i], t.bos_id); /* plain text there */
    assert_int_equal(chat_template_of(&f), CHAT_CHATML); /* no Llama 3 markers */
    tokenizer_free(&t);
    gguf_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spm_reference_cases),
        cmocka_unit_test(test_bpe_reference_cases),
        cmocka_unit_test(test_stories_prompt),
        cmocka_unit_test(test_bpe),
        cmocka_unit_test(test_pretokenizers),
        cmocka_unit_test(test_chat_templates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
