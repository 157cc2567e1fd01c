/* tokenize_cmd.h — `tiermem-llm --tokenize`. */
#ifndef TM_ENGINE_TOKENIZE_CMD_H
#define TM_ENGINE_TOKENIZE_CMD_H

#include <stdbool.h>

/* Prints the ids of text under model_path's vocabulary on one line (BOS first when
 * add_bos and the vocabulary adds one). Returns the exit status: 0, or 1 with one
 * error line. */
int tokenize_cmd(const char *model_path, const char *text, bool add_bos);

#endif /* TM_ENGINE_TOKENIZE_CMD_H */
