/* test_log_escape.c — tm_log_escape (preload/base/log.h): newlines, tabs and other control
 * characters come out as \n, \t, \xHH; other bytes (UTF-8 included) pass; the result is cut
 * to the room given, never in the middle of an escape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "preload/base/log.h"

static void test_control_characters_escaped(void **state)
{
    (void)state;
    char out[128];
    size_t len = tm_log_escape("blk.0\ntiermem: error: forged\t\r\x01\x7f", out, sizeof out);
    assert_string_equal(out, "blk.0\\ntiermem: error: forged\\t\\r\\x01\\x7f");
    assert_int_equal(len, strlen(out));
    assert_null(strchr(out, '\n'));
}

static void test_plain_and_utf8_pass(void **state)
{
    (void)state;
    char out[64];
    tm_log_escape("token_embd.weight — ü", out, sizeof out);
    assert_string_equal(out, "token_embd.weight — ü");
}

static void test_cut_to_fit(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(tm_log_escape("abcdef\n", out, sizeof out), 6); /* "\\n" does not fit */
    assert_string_equal(out, "abcdef");
    assert_int_equal(tm_log_escape("abc", out, 1), 0);
    assert_string_equal(out, "");
    assert_int_equal(tm_log_escape("abc", out, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_characters_escaped),
        cmocka_unit_test(test_plain_and_utf8_pass),
        cmocka_unit_test(test_cut_to_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
