/* text.c — see text.h. */
#include "engine/text.h"

#include <stdlib.h>
#include <string.h>

int tm_text_append(tm_text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->cap ? t->cap * 2 : 256) + n;
        char *grown = realloc(t->data, cap);
        if (!grown) return -1;
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = 0;
    return 0;
}

void tm_text_free(tm_text *t)
{
    free(t->data);
    memset(t, 0, sizeof *t);
}
