/* text.h — a growing NUL-terminated string: the text a sequence has generated. */
#ifndef TM_ENGINE_TEXT_H
#define TM_ENGINE_TEXT_H

#include <stddef.h>

typedef struct tm_text {
    char *data;                     /* [len + 1], NULL until the first append */
    size_t len, cap;
} tm_text;

/* Appends s[n]. 0, or -1 (host memory; t unchanged). */
int tm_text_append(tm_text *t, const char *s, size_t n);
void tm_text_free(tm_text *t);

#endif /* TM_ENGINE_TEXT_H */
