/* vocab.h — small synthetic tokenizer vocabularies for generated models. */
#ifndef TM_MKMODEL_VOCAB_H
#define TM_MKMODEL_VOCAB_H

#include <stdint.h>

#include "tools/mkmodel/gguf_writer.h"

typedef enum vocab_kind { VOCAB_SPM, VOCAB_GPT2 } vocab_kind;

/* Smallest vocabulary each kind can be built with. */
int32_t vocab_min_size(vocab_kind kind);
/* Writes the tokenizer.ggml.* metadata for a vocabulary of exactly n_vocab tokens.
 * Returns 0, or -1 when n_vocab is below vocab_min_size. */
int vocab_write(gguf_writer *w, vocab_kind kind, int32_t n_vocab);

#endif
