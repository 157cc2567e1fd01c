/* chat_template.h — turning chat messages into one prompt for the server.
 *
 * The style follows the model's tokenizer.chat_template, recognised by its marker
 * strings: ChatML ("<|im_start|>") or Llama 3 ("<|start_header_id|>"); a model without
 * a template (or with another one) gets a plain "role: content" line per message. The
 * prompt ends where the assistant's answer starts. */
#ifndef TM_ENGINE_CHAT_TEMPLATE_H
#define TM_ENGINE_CHAT_TEMPLATE_H

#include <stddef.h>

typedef enum chat_style { CHAT_PLAIN, CHAT_CHATML, CHAT_LLAMA3 } chat_style;

typedef struct chat_message {
    const char *role;
    const char *content;
} chat_message;

chat_style chat_style_of(const char *tmpl /* tokenizer.chat_template, or NULL */);
const char *chat_style_name(chat_style style);
/* The prompt for msgs[n], malloc'd; NULL when out of host memory. */
char *chat_render(chat_style style, const chat_message *msgs, size_t n);

#endif /* TM_ENGINE_CHAT_TEMPLATE_H */
