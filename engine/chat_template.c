/* chat_template.c — see chat_template.h. */
#include "engine/chat_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

chat_style chat_style_of(const char *tmpl)
{
    if (tmpl && strstr(tmpl, "<|im_start|>")) return CHAT_CHATML;
    if (tmpl && strstr(tmpl, "<|start_header_id|>")) return CHAT_LLAMA3;
    return CHAT_PLAIN;
}

const char *chat_style_name(chat_style style)
{
    return style == CHAT_CHATML ? "chatml" : style == CHAT_LLAMA3 ? "llama3" : "plain";
}

char *chat_render(chat_style style, const chat_message *msgs, size_t n)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *role = msgs[i].role, *content = msgs[i].content;
        switch (style) {
        case CHAT_CHATML: fprintf(f, "<|im_start|>%s\n%s<|im_end|>\n", role, content); break;
        case CHAT_LLAMA3: fprintf(f, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", role, content); break;
        case CHAT_PLAIN: fprintf(f, "%s: %s\n", role, content); break;
        }
    }
    switch (style) {
    case CHAT_CHATML: fputs("<|im_start|>assistant\n", f); break;
    case CHAT_LLAMA3: fputs("<|start_header_id|>assistant<|end_header_id|>\n\n", f); break;
    case CHAT_PLAIN: fputs("assistant:", f); break;
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}
