/* test_managed.c — the managed-memory baseline: TIERMEM_POLICY names it (case aside), the
 * plain variant gives no advice, the advised one prefers the device and marks as
 * read-mostly only what the host fills before the first kernel launch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/config.h"
#include "policy/managed.h"

static tm_policy_kind policy_from(const char *value, int *invalid)
{
    setenv("TIERMEM_POLICY", value, 1);
    tm_config c;
    int fd = memfd_create("config-errors", 0);
    assert_true(fd >= 0);
    *invalid = tm_config_load(&c, fd);
    close(fd);
    unsetenv("TIERMEM_POLICY");
    return c.policy;
}

static void test_policy_names(void **state)
{
    (void)state;
    int invalid;
    assert_int_equal(policy_from("managed", &invalid), TM_POLICY_MANAGED);
    assert_int_equal(invalid, 0);
    assert_int_equal(policy_from("Managed-Advised", &invalid), TM_POLICY_MANAGED_ADVISED);
    assert_int_equal(invalid, 0);
    assert_int_equal(policy_from("size", &invalid), TM_POLICY_SIZE);
    assert_int_equal(invalid, 0);
    policy_from("managed-hinted", &invalid);
    assert_int_equal(invalid, 1);
    assert_string_equal(tm_policy_name(TM_POLICY_MANAGED), "managed");
    assert_string_equal(tm_policy_name(TM_POLICY_MANAGED_ADVISED), "managed-advised");
}

static void test_plain_managed_gives_no_advice(void **state)
{
    (void)state;
    tm_policy p = { .kind = TM_POLICY_MANAGED };
    assert_true(tm_policy_uses_managed(&p));
    assert_false(tm_managed_prefers_device(&p));
    assert_false(tm_managed_read_mostly_on_fill(&p, false));
}

static void test_advised_rule(void **state)
{
    (void)state;
    tm_policy p = { .kind = TM_POLICY_MANAGED_ADVISED };
    assert_true(tm_policy_uses_managed(&p));
    assert_true(tm_managed_prefers_device(&p));
    assert_true(tm_managed_read_mostly_on_fill(&p, false));   /* loading */
    assert_false(tm_managed_read_mostly_on_fill(&p, true));   /* after kernels ran */
}

static void test_size_policy_is_not_managed(void **state)
{
    (void)state;
    tm_policy p = { .kind = TM_POLICY_SIZE };
    assert_false(tm_policy_uses_managed(&p));
    assert_false(tm_managed_prefers_device(&p));
    assert_false(tm_managed_read_mostly_on_fill(&p, false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_plain_managed_gives_no_advice),
        cmocka_unit_test(test_advised_rule),
        cmocka_unit_test(test_size_policy_is_not_managed),
    };
    return cmocka_run_group_tests_name("policy managed baseline", tests, NULL, NULL);
}
