/* chat.c — the ChatML, Llama 3 and plain chat templates (chat.h). */
#include "engine/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

chat_template chat_template_from(const char *tmpl, chat_template fallback)
{
    if (tmpl && strstr(tmpl, "<|start_header_id|>")) return CHAT_LLAMA3;
    if (tmpl && strstr(tmpl, "<|im_start|>")) return CHAT_CHATML;
    return fallback;
}

chat_template chat_template_of(const gguf_file *f)
{
    gguf_str tpl;
    char err[GGUF_ERROR_MAX];
    if (gguf_get_str(f, "tokenizer.chat_template", &tpl, err) <= 0) return CHAT_CHATML;
    char *text = strndup(tpl.data, (size_t)tpl.len);
    chat_template t = chat_template_from(text, CHAT_CHATML);
    free(text);
    return t;
}

const char *chat_template_name(chat_template t)
{
    return t == CHAT_CHATML ? "chatml" : t == CHAT_LLAMA3 ? "llama3" : "plain";
}

char *chat_render(chat_template t, const chat_message *msgs, size_t n, int add_generation_prompt)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    if (t == CHAT_LLAMA3) fputs("<|begin_of_text|>", f);
    for (size_t i = 0; i < n; i++) {
        const char *role = msgs[i].role, *content = msgs[i].content;
        switch (t) {
        case CHAT_CHATML: fprintf(f, "<|im_start|>%s\n%s<|im_end|>\n", role, content); break;
        case CHAT_LLAMA3: fprintf(f, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", role, content); break;
        case CHAT_PLAIN: fprintf(f, "%s: %s\n", role, content); break;
        }
    }
    if (add_generation_prompt) {
        switch (t) {
        case CHAT_CHATML: fputs("<|im_start|>assistant\n", f); break;
        case CHAT_LLAMA3: fputs("<|start_header_id|>assistant<|end_header_id|>\n\n", f); break;
        case CHAT_PLAIN: fputs("assistant:", f); break;
        }
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}
