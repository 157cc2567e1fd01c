/* chat_cmd.h — `tiermem-llm --chat`: a conversation on the terminal. */
#ifndef TM_ENGINE_CHAT_CMD_H
#define TM_ENGINE_CHAT_CMD_H

#include <stdio.h>

#include "engine/chat.h"
#include "engine/generate.h"

/* Reads user turns, one per line, from `in` (or takes `prompt` as the only turn), renders
 * the conversation with template t and streams each reply to stdout. gen carries the
 * sampling options (its prompts are ignored). Returns 0, or -1 with m->err set. */
int chat_cmd(tm_model *m, const tokenizer *tok, chat_template t, const char *prompt, FILE *in,
             const generate_options *gen, int32_t max_positions);

#endif /* TM_ENGINE_CHAT_CMD_H */
