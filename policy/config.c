/* config.c — TIERMEM_* environment parsing (see config.h).
 *
 * One table lists every variable with its parser and the words that say what it accepts;
 * tm_config_load walks it. */
#include "policy/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/units.h"

extern char **environ;

/* ---------------------------------------------------------------- value parsers */

static bool parse_opt_size(const char *value, tm_opt_size *out)
{
    if (!tm_parse_size(value, &out->bytes))
        return false;
    out->set = true;
    return true;
}

static bool parse_node(const char *value, int *node)
{
    uint64_t v;
    if (!tm_parse_uint(value, 1023, &v))
        return false;
    *node = (int)v;
    return true;
}

/* A word that reads as a switch (0, on, yes, ...) is a mistake, never a file name: a file
 * of that name is written ./on. */
static bool switch_word(const char *value)
{
    static const char *const words[] = { "0", "1", "on", "off", "yes", "no", "true", "false", "enable", "disable" };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(value, words[i]) == 0)
            return true;
    return false;
}

static bool parse_path(const char *value, char *out)
{
    size_t len = strlen(value);
    if (len >= TM_CONFIG_PATH_MAX || switch_word(value))
        return false;
    memcpy(out, value, len + 1);
    return true;
}

/* One size for every device, or DEVICE:SIZE items (0:70G,1:70G); a device not named has
 * no limit but its memory. */
static bool parse_hbm_limit(const char *value, tm_config *config)
{
    if (!strchr(value, ':'))
        return parse_opt_size(value, &config->hbm_limit);
    char item[64];
    for (const char *at = value;;) {
        const char *comma = strchr(at, ',');
        size_t length = comma ? (size_t)(comma - at) : strlen(at);
        if (length == 0 || length >= sizeof item)
            return false;
        memcpy(item, at, length);
        item[length] = '\0';
        char *colon = strchr(item, ':');
        uint64_t device;
        if (!colon)
            return false;
        *colon = '\0';
        if (!tm_parse_uint(item, TM_CONFIG_DEVICES - 1, &device) || config->hbm_limit_of[device].set ||
            !parse_opt_size(colon + 1, &config->hbm_limit_of[device]))
            return false;
        if (!comma)
            return true;
        at = comma + 1;
    }
}

tm_opt_size tm_config_hbm_limit(const tm_config *config, int device)
{
    if (device >= 0 && device < TM_CONFIG_DEVICES && config->hbm_limit_of[device].set)
        return config->hbm_limit_of[device];
    return config->hbm_limit;
}
static bool parse_cxl_limit(const char *v, tm_config *c) { return parse_opt_size(v, &c->cxl_limit); }
static bool parse_ddr_limit(const char *v, tm_config *c) { return parse_opt_size(v, &c->ddr_limit); }
static bool parse_hbm_reserve(const char *v, tm_config *c) { return parse_opt_size(v, &c->hbm_reserve); }
static bool parse_cxl_node(const char *v, tm_config *c) { return parse_node(v, &c->cxl_node); }
static bool parse_ddr_node(const char *v, tm_config *c) { return parse_node(v, &c->ddr_node); }
static bool parse_order(const char *v, tm_config *c) { return tm_tier_order_parse(v, &c->order); }
static bool parse_rules(const char *v, tm_config *c) { return tm_rules_parse(v, &c->rules); }
static bool parse_log_file(const char *v, tm_config *c) { return parse_path(v, c->log_file); }
static bool parse_driver(const char *v, tm_config *c) { return parse_path(v, c->driver); }
static bool parse_profile(const char *v, tm_config *c) { return *v && parse_path(v, c->profile_path); }

static bool parse_stream_ring(const char *value, tm_config *config)
{
    return parse_opt_size(value, &config->stream_ring) && config->stream_ring.bytes > 0;
}

static bool parse_min_tiered(const char *value, tm_config *config)
{
    uint64_t bytes;
    if (!tm_parse_size(value, &bytes) || bytes == 0)
        return false;
    config->min_tiered = bytes;
    return true;
}

static bool parse_policy(const char *value, tm_config *config)
{
    if (strcasecmp(value, "size") == 0)
        config->policy = TM_POLICY_SIZE;
    else if (strcasecmp(value, "managed") == 0)
        config->policy = TM_POLICY_MANAGED;
    else if (strcasecmp(value, "managed-advised") == 0)
        config->policy = TM_POLICY_MANAGED_ADVISED;
    else if (strcasecmp(value, "heat") == 0)
        config->policy = TM_POLICY_HEAT;
    else
        return false;
    return true;
}

static bool parse_migrate_rate(const char *value, tm_config *config)
{
    return tm_parse_size(value, &config->migrate_rate);
}

static bool parse_meminfo(const char *value, tm_config *config)
{
    if (strcasecmp(value, "physical") == 0)
        config->meminfo = TM_MEMINFO_PHYSICAL;
    else if (strcasecmp(value, "virtual") == 0)
        config->meminfo = TM_MEMINFO_VIRTUAL;
    else if (strcasecmp(value, "available") == 0)
        config->meminfo = TM_MEMINFO_AVAILABLE;
    else
        return false;
    return true;
}

static bool parse_disable(const char *value, tm_config *config)
{
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
        return false;
    if (value[0] == '1')
        config->disabled = true;
    return true;
}

static bool parse_file_tier(const char *value, tm_config *config)
{
    if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
        return false;
    config->file_tier = value[0] == '1';
    return true;
}

/* The index of `value` among names[first..last] (case-insensitive), or -1. */
static int parse_word(const char *value, const char *const *names, int first, int last)
{
    for (int i = first; i <= last; i++)
        if (strcasecmp(value, names[i]) == 0)
            return i;
    return -1;
}

static const char *const heat_source_names[] = { "auto", "launch", "ebpf", "off" };

static bool parse_heat(const char *value, tm_config *config)
{
    int source = parse_word(value, heat_source_names, TM_HEAT_SOURCE_LAUNCH, TM_HEAT_SOURCE_OFF);
    if (source < 0)
        return false;
    config->heat = (tm_heat_source)source;
    return true;
}

static bool parse_heat_halflife(const char *value, tm_config *config)
{
    return tm_parse_duration(value, &config->heat_halflife_ns);
}

static bool parse_heat_sample(const char *value, tm_config *config)
{
    uint64_t n;
    if (strcmp(value, "auto") == 0) {
        config->heat_sample = 0;
        return true;
    }
    if (!tm_parse_uint(value, TM_HEAT_SAMPLE_MAX, &n) || n == 0)
        return false;
    config->heat_sample = (uint32_t)n;
    return true;
}

static const char *const stream_mode_names[] = { "auto", "on", "off" };

static bool parse_stream(const char *value, tm_config *config)
{
    int mode = parse_word(value, stream_mode_names, TM_STREAM_AUTO, TM_STREAM_OFF);
    if (mode < 0)
        return false;
    config->stream = (tm_stream_mode)mode;
    return true;
}

static const char *const log_level_names[] = { "error", "warn", "info", "debug" };

static bool parse_log(const char *value, tm_config *config)
{
    int level = parse_word(value, log_level_names, TM_LOG_ERROR, TM_LOG_DEBUG);
    if (level < 0)
        return false;
    config->log_level = (tm_log_level)level;
    return true;
}

static const char *const ipc_mode_names[] = { "tiermem", "passthrough" };

static bool parse_ipc(const char *value, tm_config *config)
{
    int mode = parse_word(value, ipc_mode_names, TM_IPC_TIERMEM, TM_IPC_PASSTHROUGH);
    if (mode < 0)
        return false;
    config->ipc = (tm_ipc_mode)mode;
    return true;
}

/* "off", or a path. */
static bool parse_off_or_path(const char *value, bool *off, char *path)
{
    *off = strcasecmp(value, "off") == 0;
    return *off || parse_path(value, path);
}

static bool parse_stats(const char *value, tm_config *config)
{
    return parse_off_or_path(value, &config->stats_off, config->stats_path);
}

/* A group name as useradd accepts it (letters, digits, '_', '-', '.', not first '-'), or a
 * numeric gid. Whether it exists is for the ledger to find out. */
static bool parse_group(const char *value, tm_config *config)
{
    size_t len = strlen(value);
    if (len >= sizeof config->group || value[0] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)value[i]) && !strchr("_-.", value[i]))
            return false;
    memcpy(config->group, value, len + 1);
    return true;
}

static bool parse_ledger(const char *value, tm_config *config)
{
    return parse_off_or_path(value, &config->ledger_off, config->ledger_path);
}

/* ---------------------------------------------------------------- the variables */

#define PATH_WORDS "(a word such as 0, 1, on or off is not taken for a file name: write ./on for a file of that name)"
#define SIZE_WORDS "a size in bytes with an optional K, M, G or T suffix (e.g. 24G, 24GB, 24GiB, 1.5G)"

typedef struct variable {
    const char *name;
    bool (*parse)(const char *value, tm_config *config);
    const char *accepts;
} variable;

static const variable variables[] = {
    { "TIERMEM_DISABLE", parse_disable, "0 or 1" },
    { "TIERMEM_DRIVER", parse_driver, "a library file name or path for dlopen " PATH_WORDS },
    { "TIERMEM_HBM_LIMIT", parse_hbm_limit,
      SIZE_WORDS " for every device, or DEVICE:SIZE for each device named (e.g. 0:70G,1:70G)" },
    { "TIERMEM_CXL_LIMIT", parse_cxl_limit, SIZE_WORDS },
    { "TIERMEM_DDR_LIMIT", parse_ddr_limit, SIZE_WORDS },
    { "TIERMEM_HBM_RESERVE", parse_hbm_reserve, SIZE_WORDS },
    { "TIERMEM_CXL_NODE", parse_cxl_node, "a NUMA node id from 0 to 1023" },
    { "TIERMEM_DDR_NODE", parse_ddr_node, "a NUMA node id from 0 to 1023" },
    { "TIERMEM_MIN_TIERED", parse_min_tiered,
      "a size of at least 1 byte with an optional K, M, G or T suffix (e.g. 2M)" },
    { "TIERMEM_TIER_ORDER", parse_order,
      "comma-separated tiers from hbm, cxl and ddr, each at most once (e.g. hbm,cxl,ddr)" },
    { "TIERMEM_POLICY", parse_policy, "size, heat, managed or managed-advised" },
    { "TIERMEM_MIGRATE_RATE", parse_migrate_rate, "a size per second, e.g. 4G (0: chunks never move)" },
    { "TIERMEM_RULES", parse_rules,
      "comma-separated MATCH=TIER rules, MATCH being size>=N or size<N with N a size, or name=GLOB "
      "over tensor names, TIER one of hbm, cxl, ddr, or plain after a size match (plain driver memory, "
      "never chunked) (e.g. name=token_embd.weight=ddr,size>=1G=cxl)" },
    { "TIERMEM_MEMINFO", parse_meminfo, "available, physical or virtual" },
    { "TIERMEM_IPC", parse_ipc, "tiermem or passthrough" },
    { "TIERMEM_LOG", parse_log, "error, warn, info or debug" },
    { "TIERMEM_LOG_FILE", parse_log_file, "a file path " PATH_WORDS },
    { "TIERMEM_STATS", parse_stats, "off or a file path " PATH_WORDS },
    { "TIERMEM_GROUP", parse_group, "a Unix group name or id of up to 32 letters, digits, '_', '-' or '.'" },
    { "TIERMEM_LEDGER", parse_ledger, "off or a file path " PATH_WORDS },
    { "TIERMEM_PROFILE", parse_profile, "a file path (the heat profile, read at start, written at exit) " PATH_WORDS },
    { "TIERMEM_HEAT", parse_heat, "launch, ebpf or off" },
    { "TIERMEM_HEAT_HALFLIFE", parse_heat_halflife,
      "a duration above 0: digits then ms, s or m, seconds when bare (e.g. 10s)" },
    { "TIERMEM_HEAT_SAMPLE", parse_heat_sample,
      "auto or a count of launches from 1 to 65536 (1 in N sampled; 1: every launch)" },
    { "TIERMEM_FILE_TIER", parse_file_tier, "0 or 1" },
    { "TIERMEM_STREAM", parse_stream, "auto, on or off" },
    { "TIERMEM_STREAM_RING", parse_stream_ring,
      "a size above 0 with an optional K, M, G or T suffix (e.g. 64M): the ring's HBM, in whole chunks, at least 2 "
      "of them" },
};

#define VARIABLE_COUNT (sizeof variables / sizeof variables[0])

/* ---------------------------------------------------------------- loading */

void tm_config_defaults(tm_config *config)
{
    memset(config, 0, sizeof *config);
    config->cxl_node = -1;
    config->ddr_node = -1;
    config->min_tiered = TM_DEFAULT_MIN_TIERED;
    config->migrate_rate = TM_DEFAULT_MIGRATE_RATE;
    config->order = tm_default_tier_order;
    config->policy = TM_POLICY_HEAT; /* placed by size, then moved by heat: it wins bench-tiering */
    config->meminfo = TM_MEMINFO_AVAILABLE;
    config->log_level = TM_LOG_WARN;
    strcpy(config->driver, TM_DEFAULT_DRIVER);
    config->heat = TM_HEAT_SOURCE_AUTO;
    config->heat_halflife_ns = TM_HEAT_DEFAULT_HALFLIFE_NS;
}

void tm_printable(const char *value, char *out, size_t len)
{
    size_t i = 0;
    for (; value[i] && i + 4 < len; i++)
        out[i] = (value[i] >= 0x20 && value[i] != 0x7f) ? value[i] : '?';
    if (value[i]) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
}

static void report_invalid(int fd, const variable *var, const char *value)
{
    char shown[96];
    tm_printable(value, shown, sizeof shown);
    dprintf(fd, "tiermem: %s='%s' is not valid: expected %s; tiering is disabled, every call "
                "passes through to the driver\n", var->name, shown, var->accepts);
}

static bool known_variable(const char *name, size_t len)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        if (strlen(variables[i].name) == len && strncmp(variables[i].name, name, len) == 0)
            return true;
    return false;
}

/* A misspelt name would otherwise be silently ignored. */
static void warn_unknown_names(int fd)
{
    for (char **entry = environ; entry && *entry; entry++) {
        if (strncmp(*entry, "TIERMEM_", 8) != 0)
            continue;
        const char *eq = strchr(*entry, '=');
        size_t len = eq ? (size_t)(eq - *entry) : strlen(*entry);
        if (!known_variable(*entry, len))
            dprintf(fd, "tiermem: warning: %.*s is not a tiermem variable (ignored)\n", (int)len, *entry);
    }
}

int tm_config_load(tm_config *config, int error_fd)
{
    tm_config_defaults(config);
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        const char *value = secure_getenv(variables[i].name);
        if (!value || !*value) /* an empty value means "not set" */
            continue;
        if (!variables[i].parse(value, config)) {
            report_invalid(error_fd, &variables[i], value);
            config->invalid_count++;
        }
    }
    warn_unknown_names(error_fd);
    if (config->invalid_count)
        config->disabled = true;
    return config->invalid_count;
}

const char *tm_log_level_name(tm_log_level level)
{
    return (unsigned)level <= TM_LOG_DEBUG ? log_level_names[level] : "?";
}

const char *tm_meminfo_view_name(tm_meminfo_view view)
{
    return view == TM_MEMINFO_VIRTUAL ? "virtual" : view == TM_MEMINFO_AVAILABLE ? "available" : "physical";
}

const char *tm_heat_source_name(tm_heat_source source)
{
    return (unsigned)source <= TM_HEAT_SOURCE_OFF ? heat_source_names[source] : "?";
}

tm_heat_source tm_heat_in_process_source(tm_heat_source configured)
{
    return configured == TM_HEAT_SOURCE_OFF ? TM_HEAT_SOURCE_OFF : TM_HEAT_SOURCE_LAUNCH;
}

const char *tm_policy_name(tm_policy_kind policy)
{
    switch (policy) {
    case TM_POLICY_SIZE: return "size";
    case TM_POLICY_MANAGED: return "managed";
    case TM_POLICY_MANAGED_ADVISED: return "managed-advised";
    case TM_POLICY_HEAT: return "heat";
    }
    return "?";
}

/* ---------------------------------------------------------------- the table, for its documentation */

size_t tm_config_variable_count(void)
{
    return VARIABLE_COUNT;
}

const char *tm_config_variable(size_t index, const char **accepts)
{
    if (index >= VARIABLE_COUNT)
        return NULL;
    if (accepts)
        *accepts = variables[index].accepts;
    return variables[index].name;
}
