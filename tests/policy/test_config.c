/* test_config.c — sizes and every TIERMEM_* variable: defaults, good values, and for each
 * variable a bad value that must produce the one named error line and disable tiering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/config.h"
#include "policy/units.h"

extern char **environ;

/* ---------------------------------------------------------------- helpers */

/* Removes every TIERMEM_* variable so each test starts from the defaults. */
static void clear_tiermem_environment(void)
{
    for (;;) {
        char name[128] = "";
        for (char **entry = environ; *entry; entry++) {
            if (strncmp(*entry, "TIERMEM_", 8) == 0) {
                size_t len = strcspn(*entry, "=");
                snprintf(name, sizeof name, "%.*s", (int)len, *entry);
                break;
            }
        }
        if (!name[0])
            return;
        unsetenv(name);
    }
}

static int setup(void **state)
{
    (void)state;
    clear_tiermem_environment();
    return 0;
}

/* Loads the configuration, returning what it wrote to its error descriptor. */
static char *load(tm_config *config, int *invalid)
{
    int fd = memfd_create("config-errors", 0);
    assert_true(fd >= 0);
    *invalid = tm_config_load(config, fd);
    off_t len = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(pread(fd, text, (size_t)len, 0), len);
    close(fd);
    return text;
}

static int count_lines(const char *text)
{
    int lines = 0;
    for (; *text; text++)
        lines += *text == '\n';
    return lines;
}

/* ---------------------------------------------------------------- sizes */

static void test_sizes_parse(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_true(tm_parse_size("0", &v)); assert_int_equal(v, 0);
    assert_true(tm_parse_size("4096", &v)); assert_int_equal(v, 4096);
    assert_true(tm_parse_size("64K", &v)); assert_int_equal(v, 64 << 10);
    assert_true(tm_parse_size("3m", &v)); assert_int_equal(v, 3 << 20);
    assert_true(tm_parse_size("24G", &v)); assert_int_equal(v, 24ull << 30);
    assert_true(tm_parse_size("2T", &v)); assert_int_equal(v, 2ull << 40);
    assert_true(tm_parse_size("18446744073709551615", &v)); assert_true(v == UINT64_MAX);
    assert_true(tm_parse_size("16777215T", &v)); assert_true(v == 16777215ull << 40);
    /* what people write: GB and GiB both mean binary units, and fractions of a unit */
    assert_true(tm_parse_size("70GB", &v)); assert_true(v == 70ull << 30);
    assert_true(tm_parse_size("70GiB", &v)); assert_true(v == 70ull << 30);
    assert_true(tm_parse_size("1.5G", &v)); assert_true(v == 3ull << 29);
    assert_true(tm_parse_size("0.25MiB", &v)); assert_int_equal(v, 256 << 10);
    assert_true(tm_parse_size("1.1K", &v)); assert_int_equal(v, 1126); /* rounded down to a byte */
}

static void test_sizes_reject(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "-1", "+5", " 5", "5 ", "1.5", "1.G", ".5G", "1.0000000001G", "G", "12Q", "5Gb", "5iB", "5B",
        "5GiBB", "5G B", "0x10", "1e9", "18446744073709551616", "16777216T", "16777216.5T",
        "99999999999999999999K", "5G5", "--",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 77;
        if (tm_parse_size(bad[i], &v))
            fail_msg("'%s' parsed as a size", bad[i]);
        assert_int_equal(v, 77);
    }
    uint64_t v;
    assert_false(tm_parse_uint("1024", 1023, &v));
    assert_true(tm_parse_uint("1023", 1023, &v));
    assert_false(tm_parse_uint("1K", 1u << 20, &v));
}

static void test_sizes_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(tm_format_size(0, buf, sizeof buf), "0 B");
    assert_string_equal(tm_format_size(1000, buf, sizeof buf), "1000 B");
    assert_string_equal(tm_format_size(64 << 20, buf, sizeof buf), "64 MiB");
    assert_string_equal(tm_format_size(3ull << 29, buf, sizeof buf), "1.50 GiB");
    assert_string_equal(tm_format_size(2ull << 40, buf, sizeof buf), "2 TiB");
}

/* ---------------------------------------------------------------- defaults and good values */

static void test_defaults(void **state)
{
    (void)state;
    tm_config c;
    int invalid;
    char *errors = load(&c, &invalid);
    assert_int_equal(invalid, 0);
    assert_string_equal(errors, "");
    assert_false(c.disabled);
    assert_false(c.hbm_limit.set);
    assert_false(c.cxl_limit.set);
    assert_false(c.ddr_limit.set);
    assert_false(c.hbm_reserve.set);
    assert_int_equal(c.cxl_node, -1);
    assert_int_equal(c.ddr_node, -1);
    assert_int_equal(c.min_tiered, 2 << 20);
    assert_int_equal(c.order.count, 3);
    assert_int_equal(c.order.tier[0], TM_TIER_HBM);
    assert_int_equal(c.order.tier[1], TM_TIER_CXL);
    assert_int_equal(c.order.tier[2], TM_TIER_DDR);
    assert_int_equal(c.policy, TM_POLICY_HEAT);
    assert_true(c.migrate_rate == 4ull << 30);
    assert_false(c.file_tier); /* off by default */
    assert_int_equal(c.rules.count, 0);
    assert_int_equal(c.meminfo, TM_MEMINFO_AVAILABLE);
    assert_int_equal(c.ipc, TM_IPC_TIERMEM);
    assert_int_equal(c.log_level, TM_LOG_WARN);
    assert_string_equal(c.log_file, "");
    assert_false(c.stats_off);
    assert_string_equal(c.stats_path, "");
    assert_string_equal(c.driver, "libcuda.so.1");
    assert_int_equal(c.heat, TM_HEAT_SOURCE_AUTO);
    assert_true(c.heat_halflife_ns == 10000000000ull);
    assert_int_equal(c.heat_sample, 0); /* auto */
    free(errors);
}

static void test_good_values(void **state)
{
    (void)state;
    setenv("TIERMEM_HBM_LIMIT", "24G", 1);
    setenv("TIERMEM_CXL_LIMIT", "512M", 1);
    setenv("TIERMEM_DDR_LIMIT", "0", 1);
    setenv("TIERMEM_HBM_RESERVE", "256M", 1);
    setenv("TIERMEM_CXL_NODE", "1", 1);
    setenv("TIERMEM_DDR_NODE", "0", 1);
    setenv("TIERMEM_MIN_TIERED", "4M", 1);
    setenv("TIERMEM_TIER_ORDER", "hbm,ddr", 1);
    setenv("TIERMEM_POLICY", "size", 1);
    setenv("TIERMEM_MIGRATE_RATE", "1G", 1);
    setenv("TIERMEM_RULES", "size>=1G=cxl,size<4M=hbm", 1);
    setenv("TIERMEM_MEMINFO", "virtual", 1);
    setenv("TIERMEM_IPC", "passthrough", 1);
    setenv("TIERMEM_LOG", "debug", 1);
    setenv("TIERMEM_LOG_FILE", "/tmp/tiermem.log", 1);
    setenv("TIERMEM_STATS", "/tmp/stats", 1);
    setenv("TIERMEM_DRIVER", "/opt/libcuda.so.1", 1);
    setenv("TIERMEM_DISABLE", "0", 1);
    setenv("TIERMEM_HEAT", "launch", 1);
    setenv("TIERMEM_HEAT_HALFLIFE", "250ms", 1);
    setenv("TIERMEM_HEAT_SAMPLE", "32", 1);
    setenv("TIERMEM_FILE_TIER", "1", 1);
    setenv("TIERMEM_STREAM", "off", 1);
    setenv("TIERMEM_STREAM_RING", "64M", 1);
    tm_config c;
    int invalid;
    char *errors = load(&c, &invalid);
    assert_int_equal(invalid, 0);
    assert_string_equal(errors, "");
    assert_false(c.disabled);
    assert_true(c.hbm_limit.set); assert_true(c.hbm_limit.bytes == 24ull << 30);
    assert_true(c.cxl_limit.set); assert_int_equal(c.cxl_limit.bytes, 512 << 20);
    assert_true(c.ddr_limit.set); assert_int_equal(c.ddr_limit.bytes, 0);
    assert_true(c.hbm_reserve.set); assert_int_equal(c.hbm_reserve.bytes, 256 << 20);
    assert_int_equal(c.cxl_node, 1);
    assert_int_equal(c.ddr_node, 0);
    assert_int_equal(c.min_tiered, 4 << 20);
    assert_int_equal(c.policy, TM_POLICY_SIZE);
    assert_int_equal(c.stream, TM_STREAM_OFF);
    assert_true(c.stream_ring.set); assert_int_equal(c.stream_ring.bytes, 64 << 20);
    assert_int_equal(c.migrate_rate, 1 << 30);
    assert_true(c.file_tier);
    assert_int_equal(c.order.count, 2);
    assert_int_equal(c.order.tier[1], TM_TIER_DDR);
    assert_int_equal(c.rules.count, 2);
    assert_int_equal(c.rules.rule[0].kind, TM_MATCH_SIZE_AT_LEAST);
    assert_int_equal(c.rules.rule[0].tier, TM_TIER_CXL);
    assert_int_equal(c.rules.rule[1].kind, TM_MATCH_SIZE_BELOW);
    assert_int_equal(c.meminfo, TM_MEMINFO_VIRTUAL);
    assert_int_equal(c.ipc, TM_IPC_PASSTHROUGH);
    assert_int_equal(c.log_level, TM_LOG_DEBUG);
    assert_string_equal(c.log_file, "/tmp/tiermem.log");
    assert_string_equal(c.stats_path, "/tmp/stats");
    assert_string_equal(c.driver, "/opt/libcuda.so.1");
    assert_int_equal(c.heat, TM_HEAT_SOURCE_LAUNCH);
    assert_true(c.heat_halflife_ns == 250000000ull);
    assert_int_equal(c.heat_sample, 32);
    free(errors);
}

/* name=GLOB rules match tensor names with fnmatch, never an allocation without a name, and
 * the first matching rule wins over a later size rule. */
static void test_name_rules(void **state)
{
    (void)state;
    tm_rules rules;
    assert_true(tm_rules_parse("name=token_embd.weight=ddr,name=blk.*.ffn_*_exps.*=cxl,size>=1G=hbm", &rules));
    assert_int_equal(rules.count, 3);
    assert_int_equal(rules.rule[0].kind, TM_MATCH_NAME);
    assert_string_equal(rules.rule[1].glob, "blk.*.ffn_*_exps.*");
    tm_alloc_desc embd = { .size = 4 << 20, .name = "token_embd.weight" };
    tm_alloc_desc expert = { .size = 2ull << 30, .name = "blk.12.ffn_up_exps.weight" };
    tm_alloc_desc dense = { .size = 4 << 20, .name = "blk.12.ffn_up.weight" };
    tm_alloc_desc unnamed = { .size = 4 << 20, .name = NULL };
    tm_alloc_desc big = { .size = 2ull << 30, .name = NULL };
    assert_int_equal(tm_rules_match(&rules, &embd)->tier, TM_TIER_DDR);
    assert_int_equal(tm_rules_match(&rules, &expert)->tier, TM_TIER_CXL);
    assert_null(tm_rules_match(&rules, &dense));
    assert_null(tm_rules_match(&rules, &unnamed));
    assert_int_equal(tm_rules_match(&rules, &big)->tier, TM_TIER_HBM);
    assert_false(tm_rules_parse("name==ddr", &rules));
    assert_false(tm_rules_parse("name=blk.*=plain", &rules)); /* too late to stay plain */
    assert_false(tm_rules_parse("name=x=nvme", &rules));
}

static void test_disable_and_stats_off(void **state)
{
    (void)state;
    setenv("TIERMEM_DISABLE", "1", 1);
    setenv("TIERMEM_STATS", "off", 1);
    setenv("TIERMEM_HBM_LIMIT", "", 1); /* empty: as if not set */
    tm_config c;
    int invalid;
    char *errors = load(&c, &invalid);
    assert_int_equal(invalid, 0);
    assert_string_equal(errors, "");
    assert_true(c.disabled);
    assert_true(c.stats_off);
    assert_false(c.hbm_limit.set);
    free(errors);
}

/* TIERMEM_HEAT_SAMPLE: auto (0) and both ends of the range. */
static void test_heat_sample(void **state)
{
    (void)state;
    const char *values[] = { "auto", "1", "65536" };
    const uint32_t want[] = { 0, 1, 65536 };
    for (size_t i = 0; i < 3; i++) {
        setenv("TIERMEM_HEAT_SAMPLE", values[i], 1);
        tm_config c;
        int invalid;
        char *errors = load(&c, &invalid);
        assert_int_equal(invalid, 0);
        assert_string_equal(errors, "");
        assert_int_equal(c.heat_sample, want[i]);
        free(errors);
    }
}

static void test_group_and_ledger(void **state)
{
    (void)state;
    clear_tiermem_environment();
    setenv("TIERMEM_GROUP", "gpu-users", 1);
    setenv("TIERMEM_LEDGER", "/dev/shm/team-ledger", 1);
    tm_config c;
    int invalid;
    char *errors = load(&c, &invalid);
    assert_int_equal(invalid, 0);
    assert_string_equal(c.group, "gpu-users");
    assert_string_equal(c.ledger_path, "/dev/shm/team-ledger");
    assert_false(c.ledger_off);
    free(errors);
    setenv("TIERMEM_LEDGER", "OFF", 1);
    errors = load(&c, &invalid);
    assert_true(c.ledger_off);
    free(errors);
}

/* ---------------------------------------------------------------- bad values */

typedef struct bad_case {
    const char *name;
    const char *value;
    const char *accepts_words; /* a piece of the "expected ..." text */
} bad_case;

static const bad_case bad_cases[] = {
    { "TIERMEM_DISABLE", "yes", "0 or 1" },
    { "TIERMEM_HBM_LIMIT", "12Q", "K, M, G or T suffix" },
    { "TIERMEM_HBM_LIMIT", "-1G", "K, M, G or T suffix" },
    { "TIERMEM_HBM_LIMIT", "99999999999T", "K, M, G or T suffix" },
    { "TIERMEM_CXL_LIMIT", "1.5", "K, M, G or T suffix" },
    { "TIERMEM_DDR_LIMIT", "lots", "K, M, G or T suffix" },
    { "TIERMEM_HBM_RESERVE", "5%", "K, M, G or T suffix" },
    { "TIERMEM_CXL_NODE", "-1", "NUMA node id from 0 to 1023" },
    { "TIERMEM_CXL_NODE", "1024", "NUMA node id from 0 to 1023" },
    { "TIERMEM_DDR_NODE", "node0", "NUMA node id from 0 to 1023" },
    { "TIERMEM_MIN_TIERED", "0", "at least 1 byte" },
    { "TIERMEM_MIN_TIERED", "2MiBs", "at least 1 byte" },
    { "TIERMEM_TIER_ORDER", "hbm,hbm", "each at most once" },
    { "TIERMEM_TIER_ORDER", "hbm,,ddr", "each at most once" },
    { "TIERMEM_TIER_ORDER", "gpu,ddr", "each at most once" },
    { "TIERMEM_POLICY", "lru", "expected size, heat, managed or managed-advised;" },
    { "TIERMEM_MIGRATE_RATE", "fast", "a size per second" },
    { "TIERMEM_MIGRATE_RATE", "-1G", "a size per second" },
    { "TIERMEM_RULES", "size>1G=cxl", "MATCH=TIER" },
    { "TIERMEM_RULES", "size>=1G=nvme", "MATCH=TIER" },
    { "TIERMEM_RULES", "size>=1G", "MATCH=TIER" },
    { "TIERMEM_RULES", "size<=4M=hbm", "MATCH=TIER" },
    { "TIERMEM_RULES", "name==cxl", "MATCH=TIER" },
    { "TIERMEM_RULES", "size>=1G=cxl,", "MATCH=TIER" },
    { "TIERMEM_MEMINFO", "both", "available, physical or virtual" },
    { "TIERMEM_IPC", "off", "tiermem or passthrough" },
    { "TIERMEM_RULES", "name=blk.*=plain", "MATCH=TIER" },
    { "TIERMEM_LOG", "verbose", "error, warn, info or debug" },
    { "TIERMEM_HEAT", "auto", "launch, ebpf or off" },
    { "TIERMEM_HEAT", "perf", "launch, ebpf or off" },
    { "TIERMEM_HEAT_HALFLIFE", "0", "a duration above 0" },
    { "TIERMEM_HEAT_HALFLIFE", "10h", "a duration above 0" },
    { "TIERMEM_HEAT_HALFLIFE", "-5s", "a duration above 0" },
    { "TIERMEM_HEAT_HALFLIFE", "99999999999999m", "a duration above 0" },
    { "TIERMEM_HEAT_SAMPLE", "0", "auto or a count of launches from 1 to 65536" },
    { "TIERMEM_HEAT_SAMPLE", "65537", "auto or a count of launches from 1 to 65536" },
    { "TIERMEM_HEAT_SAMPLE", "-4", "auto or a count of launches from 1 to 65536" },
    { "TIERMEM_HEAT_SAMPLE", "often", "auto or a count of launches from 1 to 65536" },
    { "TIERMEM_FILE_TIER", "yes", "0 or 1" },
    { "TIERMEM_GROUP", "-staff", "a Unix group name or id" },
    { "TIERMEM_GROUP", "a group", "a Unix group name or id" },
    { "TIERMEM_GROUP", "abcdefghijklmnopqrstuvwxyz0123456", "of up to 32" },
    { "TIERMEM_STREAM", "yes", "auto, on or off" },
    { "TIERMEM_STREAM_RING", "0", "a size above 0" },
    { "TIERMEM_STREAM_RING", "big", "a size above 0" },
    /* a switch word is never taken for a file name */
    { "TIERMEM_LOG_FILE", "0", "is not taken for a file name" },
    { "TIERMEM_LOG_FILE", "on", "is not taken for a file name" },
    { "TIERMEM_PROFILE", "1", "is not taken for a file name" },
    { "TIERMEM_PROFILE", "ON", "is not taken for a file name" },
    { "TIERMEM_STATS", "0", "off or a file path" },
    { "TIERMEM_LEDGER", "yes", "off or a file path" },
    { "TIERMEM_DRIVER", "on", "is not taken for a file name" },
    { "TIERMEM_STATS", "", NULL }, /* empty is "not set": no error (checked below) */
};

static void test_each_bad_value(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *bc = &bad_cases[i];
        clear_tiermem_environment();
        setenv(bc->name, bc->value, 1);
        tm_config c;
        int invalid;
        char *errors = load(&c, &invalid);
        if (!bc->accepts_words) {
            assert_int_equal(invalid, 0);
            assert_false(c.disabled);
            free(errors);
            continue;
        }
        char expect[256];
        snprintf(expect, sizeof expect, "tiermem: %s='%s' is not valid: expected ", bc->name, bc->value);
        if (invalid != 1 || !c.disabled || count_lines(errors) != 1 || strncmp(errors, expect, strlen(expect)) != 0 ||
            !strstr(errors, bc->accepts_words) || !strstr(errors, "tiering is disabled"))
            fail_msg("%s='%s': invalid=%d disabled=%d output: %s", bc->name, bc->value, invalid, c.disabled, errors);
        free(errors);
    }
}

static void test_long_paths_rejected(void **state)
{
    (void)state;
    char long_path[TM_CONFIG_PATH_MAX + 10];
    memset(long_path, 'a', sizeof long_path - 1);
    long_path[0] = '/';
    long_path[sizeof long_path - 1] = '\0';
    static const char *const names[] = { "TIERMEM_LOG_FILE", "TIERMEM_STATS", "TIERMEM_DRIVER", "TIERMEM_LEDGER" };
    for (size_t i = 0; i < 4; i++) {
        clear_tiermem_environment();
        setenv(names[i], long_path, 1);
        tm_config c;
        int invalid;
        char *errors = load(&c, &invalid);
        assert_int_equal(invalid, 1);
        assert_true(c.disabled);
        assert_non_null(strstr(errors, names[i]));
        assert_non_null(strstr(errors, "...'")); /* the value is shown cut short */
        assert_int_equal(count_lines(errors), 1);
        free(errors);
    }
}

static void test_control_characters_stay_on_one_line(void **state)
{
    (void)state;
    setenv("TIERMEM_LOG", "info\nTIERMEM_FAKE=1", 1);
    tm_config c;
    int invalid;
    char *errors = load(&c, &invalid);
    assert_int_equal(invalid, 1);
    assert_int_equal(count_lines(errors), 1);
    assert_non_null(strstr(errors, "TIERMEM_LOG='info?TIERMEM_FAKE=1'"));
    free(errors);
}

static void test_several_bad_values_one_line_each(void **state)
{
    (void)state;
    setenv("TIERMEM_HBM_LIMIT", "x", 1);
    setenv("TIERMEM_MEMINFO", "y", 1);
    setenv("TIERMEM_CXL_LIMIT", "1G", 1);
    tm_config c;
    int invalid;
    char *errors = load(&c, &invalid);
    assert_int_equal(invalid, 2);
    assert_int_equal(count_lines(errors), 2);
    assert_true(c.disabled);
    free(errors);
}

static void test_unknown_name_warns_only(void **state)
{
    (void)state;
    setenv("TIERMEM_HBM_LIMT", "1G", 1);
    tm_config c;
    int invalid;
    char *errors = load(&c, &invalid);
    assert_int_equal(invalid, 0);
    assert_false(c.disabled);
    assert_non_null(strstr(errors, "TIERMEM_HBM_LIMT is not a tiermem variable"));
    free(errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_parse),
        cmocka_unit_test(test_sizes_reject),
        cmocka_unit_test(test_sizes_format),
        cmocka_unit_test_setup(test_defaults, setup),
        cmocka_unit_test_setup(test_good_values, setup),
        cmocka_unit_test(test_name_rules),
        cmocka_unit_test_setup(test_disable_and_stats_off, setup),
        cmocka_unit_test_setup(test_group_and_ledger, setup),
        cmocka_unit_test_setup(test_heat_sample, setup),
        cmocka_unit_test_setup(test_each_bad_value, setup),
        cmocka_unit_test_setup(test_long_paths_rejected, setup),
        cmocka_unit_test_setup(test_control_characters_stay_on_one_line, setup),
        cmocka_unit_test_setup(test_several_bad_values_one_line_each, setup),
        cmocka_unit_test_setup(test_unknown_name_warns_only, setup),
    };
    return cmocka_run_group_tests_name("policy config", tests, NULL, NULL);
}
