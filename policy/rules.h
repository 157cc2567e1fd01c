/* rules.h — placement rules (TIERMEM_RULES): "MATCH=TIER,MATCH=TIER,...".
 *
 * A rule names the tier an allocation (or a chunk) lives in; the first rule that matches
 * wins. MATCH is `size>=N` or `size<N` (N a size such as 64M), or `name=GLOB`: a glob
 * (fnmatch: `*`, `?`, `[...]`) over the name of the model-file tensor copied into the
 * memory. A name is known only once the program copies a tensor in, so name rules never
 * match at allocation; they move the chunks when the copy names them. TIER may also be
 * `plain` after a size match: such allocations stay plain driver memory (in HBM, never
 * chunked), which legacy CUDA IPC can share with any process. */
#ifndef TM_POLICY_RULES_H
#define TM_POLICY_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/tier.h"

#define TM_RULES_MAX 32

typedef enum tm_match_kind {
    TM_MATCH_SIZE_AT_LEAST, /* size>=N */
    TM_MATCH_SIZE_BELOW,    /* size<N */
    TM_MATCH_NAME,          /* name=GLOB */
} tm_match_kind;

#define TM_RULE_GLOB_MAX 96

typedef struct tm_rule {
    tm_match_kind kind;
    uint64_t size;      /* N of the size matches */
    char glob[TM_RULE_GLOB_MAX]; /* the name match's pattern */
    tm_tier_id tier;    /* where a matching allocation starts (HBM for plain) */
    bool plain;         /* `plain`: left to the driver, not chunked */
} tm_rule;

typedef struct tm_rules {
    tm_rule rule[TM_RULES_MAX];
    int count;
} tm_rules;

/* What a rule can look at. */
typedef struct tm_alloc_desc {
    uint64_t size;      /* bytes the program asked for */
    const char *name;   /* the tensor it holds, or NULL while unknown */
} tm_alloc_desc;

/* Parses the rule list. Returns false on any malformed rule (or more than TM_RULES_MAX). */
bool tm_rules_parse(const char *text, tm_rules *rules);

/* The first rule matching `alloc`, or NULL. */
const tm_rule *tm_rules_match(const tm_rules *rules, const tm_alloc_desc *alloc);

#endif /* TM_POLICY_RULES_H */
