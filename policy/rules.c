/* rules.c — parsing and matching TIERMEM_RULES (see rules.h). */
#include "policy/rules.h"

#include <fnmatch.h>
#include <string.h>
#include <strings.h>

#include "policy/units.h"

/* One "MATCH=TIER" item of `len` bytes. The tier follows the last '=', so a match that
 * contains '=' itself (size>=N, later name=GLOB) parses the same way. */
static bool parse_rule(const char *item, size_t len, tm_rule *rule)
{
    const char *eq = NULL;
    for (size_t i = 0; i < len; i++)
        if (item[i] == '=')
            eq = item + i;
    if (!eq)
        return false;
    size_t target_len = len - (size_t)(eq + 1 - item);
    rule->plain = target_len == 5 && strncasecmp(eq + 1, "plain", 5) == 0;
    if (rule->plain)
        rule->tier = TM_TIER_HBM;
    else if (!tm_tier_from_name(eq + 1, target_len, &rule->tier))
        return false;

    char match[TM_RULE_GLOB_MAX + 8];
    size_t match_len = (size_t)(eq - item);
    if (match_len >= sizeof match)
        return false;
    memcpy(match, item, match_len);
    match[match_len] = '\0';

    if (strncmp(match, "name=", 5) == 0) {
        rule->kind = TM_MATCH_NAME;
        memcpy(rule->glob, match + 5, match_len - 5 + 1);
        /* a name is known only after allocation: too late to keep the memory plain */
        return match_len > 5 && match_len - 5 < sizeof rule->glob && !rule->plain;
    }
    if (strncmp(match, "size>=", 6) == 0) {
        rule->kind = TM_MATCH_SIZE_AT_LEAST;
        return tm_parse_size(match + 6, &rule->size);
    }
    if (strncmp(match, "size<", 5) == 0 && match[5] != '=') {
        rule->kind = TM_MATCH_SIZE_BELOW;
        return tm_parse_size(match + 5, &rule->size);
    }
    return false;
}

bool tm_rules_parse(const char *text, tm_rules *rules)
{
    tm_rules parsed = { .count = 0 };
    const char *item = text;
    for (;;) {
        const char *comma = strchr(item, ',');
        size_t len = comma ? (size_t)(comma - item) : strlen(item);
        if (parsed.count == TM_RULES_MAX || !parse_rule(item, len, &parsed.rule[parsed.count]))
            return false;
        parsed.count++;
        if (!comma)
            break;
        item = comma + 1;
    }
    *rules = parsed;
    return true;
}

static bool rule_matches(const tm_rule *rule, const tm_alloc_desc *alloc)
{
    switch (rule->kind) {
    case TM_MATCH_SIZE_AT_LEAST: return alloc->size >= rule->size;
    case TM_MATCH_SIZE_BELOW: return alloc->size < rule->size;
    case TM_MATCH_NAME: return alloc->name && fnmatch(rule->glob, alloc->name, 0) == 0;
    }
    return false;
}

const tm_rule *tm_rules_match(const tm_rules *rules, const tm_alloc_desc *alloc)
{
    for (int i = 0; i < rules->count; i++)
        if (rule_matches(&rules->rule[i], alloc))
            return &rules->rule[i];
    return NULL;
}
