/* config_doc.c — prints the TIERMEM_* settings table for the docs, from the code: what each
 * variable accepts (policy/config.c's parse table) and what it means and defaults to
 * (policy/doc/settings_doc.c). A build tool, not installed.
 *
 *   tiermem-config-doc check      every parsed variable is documented once, and nothing else
 *   tiermem-config-doc markdown   the tables of docs/configuration.md
 *   tiermem-config-doc man        the entries of libtiermem(7)'s ENVIRONMENT section
 *
 * tools/config-doc/update.sh puts the last two in place (or, with --check, compares). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "policy/config.h"
#include "policy/doc/settings_doc.h"

static const tm_setting_doc *doc_of(const char *name)
{
    for (size_t i = 0; i < tm_setting_doc_count; i++)
        if (strcmp(tm_setting_docs[i].name, name) == 0)
            return &tm_setting_docs[i];
    return NULL;
}

static const char *accepts_of(const char *name)
{
    const char *accepts = NULL, *each;
    for (size_t i = 0; (each = tm_config_variable(i, &accepts)); i++)
        if (strcmp(each, name) == 0)
            return accepts;
    return NULL;
}

static int check(void)
{
    int problems = 0;
    const char *name;
    for (size_t i = 0; (name = tm_config_variable(i, NULL)); i++)
        if (!doc_of(name)) {
            fprintf(stderr, "tiermem-config-doc: %s is parsed by policy/config.c but has no entry in "
                            "policy/doc/settings_doc.c\n", name);
            problems++;
        }
    for (size_t i = 0; i < tm_setting_doc_count; i++) {
        const char *doc_name = tm_setting_docs[i].name;
        if (!accepts_of(doc_name)) {
            fprintf(stderr, "tiermem-config-doc: policy/doc/settings_doc.c documents %s, which "
                            "policy/config.c does not parse\n", doc_name);
            problems++;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(tm_setting_docs[j].name, doc_name) == 0) {
                fprintf(stderr, "tiermem-config-doc: %s is documented twice\n", doc_name);
                problems++;
            }
    }
    return problems ? 1 : 0;
}

/* Markdown table cell: `code` stays as it is; a bar would end the cell. */
static void put_markdown(const char *text)
{
    for (const char *c = text; *c; c++)
        if (*c == '|')
            fputs("\\|", stdout);
        else
            putchar(*c);
}

/* roff text: `code` in bold, backslashes and minus signs escaped. */
static void put_roff(const char *text)
{
    bool code = false;
    for (const char *c = text; *c; c++) {
        switch (*c) {
        case '`':
            fputs(code ? "\\fP" : "\\fB", stdout);
            code = !code;
            break;
        case '\\': fputs("\\e", stdout); break;
        case '-': fputs("\\-", stdout); break;
        default: putchar(*c);
        }
    }
}

/* The groups in the order their first variable comes in the doc table. */
static bool group_seen_before(size_t index)
{
    for (size_t j = 0; j < index; j++)
        if (strcmp(tm_setting_docs[j].group, tm_setting_docs[index].group) == 0)
            return true;
    return false;
}

/* Calls `heading` once per group, in that order, then `entry` for each of its variables. */
static void each_group(void (*heading)(const char *group, bool first), void (*entry)(const tm_setting_doc *doc))
{
    for (size_t g = 0; g < tm_setting_doc_count; g++) {
        if (group_seen_before(g))
            continue;
        const char *group = tm_setting_docs[g].group;
        heading(group, g == 0);
        for (size_t i = g; i < tm_setting_doc_count; i++)
            if (strcmp(tm_setting_docs[i].group, group) == 0)
                entry(&tm_setting_docs[i]);
    }
}

static void markdown_heading(const char *group, bool first)
{
    printf("%s### %s\n\n| variable | meaning | accepts | default |\n| --- | --- | --- | --- |\n", first ? "" : "\n",
           group);
}

static void markdown_entry(const tm_setting_doc *doc)
{
    printf("| `%s` | ", doc->name);
    put_markdown(doc->meaning);
    fputs(" | ", stdout);
    put_markdown(accepts_of(doc->name));
    fputs(" | ", stdout);
    put_markdown(doc->default_value);
    fputs(" |\n", stdout);
}

static void man_heading(const char *group, bool first)
{
    (void)first;
    printf(".SS %s\n", group);
}

static void man_entry(const tm_setting_doc *doc)
{
    printf(".TP\n.B %s\n", doc->name);
    put_roff(doc->meaning);
    fputs(".\nAccepts ", stdout);
    put_roff(accepts_of(doc->name));
    fputs("; default: ", stdout);
    put_roff(doc->default_value);
    fputs(".\n", stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc == 2 ? argv[1] : "";
    if (strcmp(mode, "--version") == 0) {
        printf("tiermem-config-doc %s\n", TM_VERSION);
        return 0;
    }
    if (check() != 0)
        return 1;
    if (strcmp(mode, "check") == 0)
        return 0;
    if (strcmp(mode, "markdown") == 0) {
        each_group(markdown_heading, markdown_entry);
        return 0;
    }
    if (strcmp(mode, "man") == 0) {
        each_group(man_heading, man_entry);
        return 0;
    }
    fprintf(stderr, "usage: tiermem-config-doc check|markdown|man\n");
    return 2;
}
