/* settings_doc.h — what each TIERMEM_* variable means and its default, in words, beside the
 * parse table of policy/config.c (which says what each accepts). The configuration page
 * (docs/configuration.md) and the ENVIRONMENT section of libtiermem(7) are generated from
 * both by tools/config-doc; tests/policy/test_settings_doc.sh fails when either page or
 * this table has drifted from the code. Not linked into libtiermem.so.
 *
 * Text is plain, with `backquotes` around names and values: the generator sets them in
 * code font in Markdown and in bold in the manual page. */
#ifndef TM_SETTINGS_DOC_H
#define TM_SETTINGS_DOC_H

#include <stddef.h>

typedef struct tm_setting_doc {
    const char *name;          /* TIERMEM_... as in policy/config.c */
    const char *group;         /* the heading it is listed under */
    const char *meaning;
    const char *default_value;
} tm_setting_doc;

extern const tm_setting_doc tm_setting_docs[];
extern const size_t tm_setting_doc_count;

#endif
