/* chat_cmd.c — `tiermem-llm --chat`.
 *
 * Each turn renders the whole conversation with the model's chat template and runs it as
 * one prompt (control tokens read as tokens): simple and exact, at the cost of prefilling
 * the history again every turn. A reply ends at EOS, at the template's end of turn, or
 * after -n tokens. On a terminal a "> " prompt goes to stderr. */
#include "engine/chat_cmd.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/error.h"

#define MAX_TURNS 256

/* The end-of-turn token of template t when the vocabulary has it. */
static int32_t turn_end_id(const tokenizer *tok, chat_template t)
{
    const char *text = t == CHAT_LLAMA3 ? "<|eot_id|>" : "<|im_end|>";
    return tokenizer_find(tok, text, strlen(text));
}

static int run_turn(tm_model *m, const tokenizer *tok, chat_template t, chat_message *msgs, size_t n,
                    const generate_options *gen, int32_t max_positions, char **reply)
{
    char *text = chat_render(t, msgs, n, 1);
    if (!text) return tm_fail(m->err, sizeof m->err, "out of host memory");
    bool bos = tok->add_bos && t != CHAT_LLAMA3; /* Llama 3's template starts with its BOS */
    int64_t n_ids = tokenizer_encode_special(tok, text, bos, NULL, 0);
    int32_t *ids = n_ids > 0 ? malloc((size_t)n_ids * sizeof *ids) : NULL;
    int rc = -1;
    if (!ids || tokenizer_encode_special(tok, text, bos, ids, n_ids) != n_ids) {
        tm_fail(m->err, sizeof m->err, "out of host memory");
    } else if (gen->n_predict < 0 ? n_ids >= max_positions : n_ids + gen->n_predict > max_positions) {
        tm_fail(m->err, sizeof m->err, "the conversation has %lld tokens; with -n %d it passes the context of %d "
                "(--ctx)", (long long)n_ids, gen->n_predict, max_positions);
    } else {
        char *empty = "";
        generate_options o = *gen;
        if (o.n_predict < 0) /* -n -1: the turn ends at its end, or where the context does */
            o.n_predict = (int32_t)(max_positions - n_ids);
        o.prompts = &empty, o.n_prompts = 1, o.stream = true, o.texts = reply;
        int32_t n32 = (int32_t)n_ids;
        generate_stats st;
        rc = generate_run(m, tok, &o, &ids, &n32, &st);
    }
    free(ids);
    free(text);
    return rc;
}

int chat_cmd(tm_model *m, const tokenizer *tok, chat_template t, const char *prompt, FILE *in,
             const generate_options *gen, int32_t max_positions)
{
    chat_message msgs[2 * MAX_TURNS];
    char *owned[2 * MAX_TURNS] = {0};
    size_t n = 0;
    int rc = 0;
    tokenizer chat_tok = *tok; /* stops at the template's end of turn too */
    if (chat_tok.eot_id < 0) chat_tok.eot_id = turn_end_id(tok, t);
    bool tty = isatty(fileno(in)) && !prompt;
    char *line = NULL;
    size_t cap = 0;
    while (n + 2 <= 2 * MAX_TURNS) {
        if (prompt) {
            if (n) break;
            owned[n] = strdup(prompt);
        } else {
            if (tty) fputs("> ", stderr);
            ssize_t got = getline(&line, &cap, in);
            if (got < 0) break;
            while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
            if (got == 0) continue;
            owned[n] = strdup(line);
        }
        if (!owned[n]) { rc = tm_fail(m->err, sizeof m->err, "out of host memory"); break; }
        msgs[n] = (chat_message){"user", owned[n]};
        n++;
        char *reply = NULL;
        if (run_turn(m, &chat_tok, t, msgs, n, gen, max_positions, &reply)) { rc = -1; free(reply); break; }
        owned[n] = reply;
        msgs[n] = (chat_message){"assistant", reply};
        n++;
    }
    free(line);
    for (size_t i = 0; i < n; i++) free(owned[i]);
    return rc;
}
