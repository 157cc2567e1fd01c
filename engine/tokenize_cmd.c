/* tokenize_cmd.c — `tiermem-llm --tokenize`: a file's vocabulary alone, text to ids.
 *
 * Needs only the tokenizer.ggml.* metadata, so it works on vocabulary-only GGUF files
 * (as llama.cpp's tokenize tool does); nothing touches a device. */
#include "engine/tokenize_cmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/gguf.h"
#include "engine/tokenizer.h"

int tokenize_cmd(const char *model_path, const char *text, bool add_bos)
{
    char err[GGUF_ERROR_MAX];
    gguf_file f = {0};
    tokenizer tok = {0};
    int rc = 1;
    int32_t *ids = NULL;
    if (gguf_open(model_path, &f, err)) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (tokenizer_load(&tok, &f, err)) {
        fprintf(stderr, "error: %s: %s\n", model_path, err);
        goto out;
    }
    int64_t n = tokenizer_encode(&tok, text, add_bos, NULL, 0);
    if (n < 0 || !(ids = malloc((size_t)(n ? n : 1) * sizeof *ids)) ||
        tokenizer_encode(&tok, text, add_bos, ids, n) != n) {
        fprintf(stderr, "error: out of host memory while tokenizing\n");
        goto out;
    }
    for (int64_t i = 0; i < n; i++) printf("%s%" PRId32, i ? " " : "", ids[i]);
    printf("\n");
    rc = 0;
out:
    free(ids);
    if (tok.pieces) tokenizer_free(&tok);
    gguf_close(&f);
    return rc;
}
