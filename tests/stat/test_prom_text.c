/* test_prom_text.c — the Prometheus text writer both exporters share: label values and
 * help text escaped as the exposition format says, exact integers, NaN and infinities
 * spelled as Prometheus reads them, cumulative histogram buckets, and the server's own
 * metrics written through it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/serve_metrics.h"
#include "tools/tiermem-stat/prom_text.h"

static char *finish(tm_prom *p)
{
    char *text = tm_prom_finish(p, NULL);
    assert_non_null(text);
    return text;
}

static void test_label_values_are_escaped(void **state)
{
    (void)state;
    tm_prom p = {0};
    tm_prom_label labels[] = {{"command", "a\"b\\c\nd"}, {"tier", "hbm"}};
    tm_prom_u64(&p, "tiermem_x", labels, 2, 7);
    char *text = finish(&p);
    assert_string_equal(text, "tiermem_x{command=\"a\\\"b\\\\c\\nd\",tier=\"hbm\"} 7\n");
    free(text);
}

static void test_help_escapes_backslash_and_newline(void **state)
{
    (void)state;
    tm_prom p = {0};
    tm_prom_family(&p, "tiermem_y", "gauge", "one\\two\nthree \"quoted\"");
    char *text = finish(&p);
    assert_string_equal(text, "# HELP tiermem_y one\\\\two\\nthree \"quoted\"\n# TYPE tiermem_y gauge\n");
    free(text);
}

static void test_integers_exact_and_specials_spelled(void **state)
{
    (void)state;
    tm_prom p = {0};
    tm_prom_u64(&p, "a", NULL, 0, UINT64_MAX);
    tm_prom_i64(&p, "b", NULL, 0, -3);
    tm_prom_double(&p, "c", NULL, 0, NAN);
    tm_prom_double(&p, "d", NULL, 0, INFINITY);
    tm_prom_double(&p, "e", NULL, 0, -INFINITY);
    tm_prom_double(&p, "f", NULL, 0, 0.25);
    char *text = finish(&p);
    assert_string_equal(text, "a 18446744073709551615\nb -3\nc NaN\nd +Inf\ne -Inf\nf 0.25\n");
    free(text);
}

static void test_histogram_buckets_are_cumulative(void **state)
{
    (void)state;
    tm_prom p = {0};
    const double bounds[] = {0.5, 1};
    const uint64_t counts[] = {2, 1, 4};
    tm_prom_histogram(&p, "h_seconds", "latency", bounds, 2, counts, 9.5);
    char *text = finish(&p);
    assert_string_equal(text, "# HELP h_seconds latency\n# TYPE h_seconds histogram\n"
                              "h_seconds_bucket{le=\"0.5\"} 2\nh_seconds_bucket{le=\"1\"} 3\n"
                              "h_seconds_bucket{le=\"+Inf\"} 7\nh_seconds_sum 9.5\nh_seconds_count 7\n");
    free(text);
}

static void test_long_text_grows_the_buffer(void **state)
{
    (void)state;
    tm_prom p = {0};
    char value[10000];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    for (int i = 0; i < 50; i++)
        tm_prom_u64(&p, "tiermem_long", &(tm_prom_label){"v", value}, 1, (uint64_t)i);
    size_t len;
    char *text = tm_prom_finish(&p, &len);
    assert_non_null(text);
    assert_int_equal(len, strlen(text));
    assert_int_equal(len, 50 * (strlen("tiermem_long{v=\"\"} 0\n") + sizeof value - 1) + 40);
    free(text);
}

static void test_server_metrics_through_the_writer(void **state)
{
    (void)state;
    serve_metrics m = {0};
    m.requests_ok = 3;
    m.prompt_tokens = 10;
    m.cached_prompt_tokens = 5;
    m.queued = 2;
    serve_histogram_add(&m.ttft, 0.003);
    char *text = serve_metrics_text(&m);
    assert_non_null(text);
    assert_non_null(strstr(text, "# TYPE tiermem_llm_requests_total counter\n"
                                 "tiermem_llm_requests_total{outcome=\"ok\"} 3\n"));
    assert_non_null(strstr(text, "tiermem_llm_queue_depth 2\n"));
    assert_non_null(strstr(text, "tiermem_llm_prefix_hit_rate 0.5\n"));
    assert_non_null(strstr(text, "tiermem_llm_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"));
    assert_non_null(strstr(text, "tiermem_llm_time_to_first_token_seconds_count 1\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_values_are_escaped),
        cmocka_unit_test(test_help_escapes_backslash_and_newline),
        cmocka_unit_test(test_integers_exact_and_specials_spelled),
        cmocka_unit_test(test_histogram_buckets_are_cumulative),
        cmocka_unit_test(test_long_text_grows_the_buffer),
        cmocka_unit_test(test_server_metrics_through_the_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
