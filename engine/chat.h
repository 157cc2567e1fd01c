/* chat.h — chat templates: a conversation rendered as the text a chat model was trained
 * on, for `tiermem-llm --chat` and the server. The style follows the model's
 * tokenizer.chat_template, recognised by its marker strings. */
#ifndef TM_ENGINE_CHAT_H
#define TM_ENGINE_CHAT_H

#include <stddef.h>

#include "engine/gguf.h"

typedef enum chat_template {
    CHAT_PLAIN,     /* role: content\n  (a model without a template of a known style) */
    CHAT_CHATML,    /* <|im_start|>role\ncontent<|im_end|>\n  (Qwen, many others) */
    CHAT_LLAMA3,    /* <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> */
} chat_template;

typedef struct chat_message {
    const char *role;       /* "system", "user", "assistant" */
    const char *content;
} chat_message;

/* The style a tokenizer.chat_template text (or NULL) is written for; `fallback` when it
 * has neither ChatML's nor Llama 3's markers. */
chat_template chat_template_from(const char *tmpl, chat_template fallback);
/* The file's template for --chat: ChatML when it has none or another one. */
chat_template chat_template_of(const gguf_file *f);
const char *chat_template_name(chat_template t);

/* Renders msgs[0..n) and, with add_generation_prompt, the header of the assistant's
 * turn. Returns a malloc'd string, or NULL without memory. Llama 3 starts with
 * <|begin_of_text|>: encode the result without adding BOS. */
char *chat_render(chat_template t, const chat_message *msgs, size_t n, int add_generation_prompt);

#endif /* TM_ENGINE_CHAT_H */
