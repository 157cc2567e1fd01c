/* chat.c — the Llama 3 and ChatML chat templates. */
#include "engine/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

chat_template chat_template_of(const gguf_file *f)
{
    gguf_str tpl;
    char err[GGUF_ERROR_MAX];
    if (gguf_get_str(f, "tokenizer.chat_template", &tpl, err) <= 0) return CHAT_CHATML;
    static const char marker[] = "<|start_header_id|>";
    for (size_t i = 0; i + sizeof marker - 1 <= tpl.len; i++)
        if (memcmp(tpl.data + i, marker, sizeof marker - 1) == 0) return CHAT_LLAMA3;
    return CHAT_CHATML;
}

const char *chat_template_name(chat_template t)
{
    return t == CHAT_LLAMA3 ? "llama3" : "chatml";
}

/* Appends printf output to a growing string; -1 without memory. */
static int append(char **s, size_t *len, size_t *cap, const char *a, const char *b, const char *c)
{
    size_t add = strlen(a) + strlen(b) + strlen(c);
    if (*len + add + 1 > *cap) {
        size_t ncap = (*len + add + 1) * 2;
        char *p = realloc(*s, ncap);
        if (!p) return -1;
        *s = p, *cap = ncap;
    }
    *len += (size_t)snprintf(*s + *len, *cap - *len, "%s%s%s", a, b, c);
    return 0;
}

char *chat_render(chat_template t, const chat_message *msgs, size_t n, int add_generation_prompt)
{
    char *s = NULL;
    size_t len = 0, cap = 0;
    int bad = append(&s, &len, &cap, t == CHAT_LLAMA3 ? "<|begin_of_text|>" : "", "", "");
    for (size_t i = 0; i < n && !bad; i++) {
        if (t == CHAT_LLAMA3)
            bad = append(&s, &len, &cap, "<|start_header_id|>", msgs[i].role, "<|end_header_id|>\n\n") ||
                  append(&s, &len, &cap, msgs[i].content, "<|eot_id|>", "");
        else
            bad = append(&s, &len, &cap, "<|im_start|>", msgs[i].role, "\n") ||
                  append(&s, &len, &cap, msgs[i].content, "<|im_end|>\n", "");
    }
    if (!bad && add_generation_prompt)
        bad = t == CHAT_LLAMA3 ? append(&s, &len, &cap, "<|start_header_id|>assistant<|end_header_id|>\n\n", "", "")
                               : append(&s, &len, &cap, "<|im_start|>assistant\n", "", "");
    if (bad) {
        free(s);
        return NULL;
    }
    return s;
}
