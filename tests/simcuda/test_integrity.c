/* test_integrity.c — the digest of simcuda's integrity answer (tools/simcuda/sim_integrity.c)
 * without a driver: nettle's MD2 against the test suite of RFC 1319, and the whole
 * HMAC-MD2 over the runtime's packed fields against a published answer (ZLUDA's test
 * vector of the 11.8 runtime's check, recorded from a real run), then the fixed answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <nettle/md2.h>

#include "tools/simcuda/sim_integrity.h"

static void hex(const uint8_t *bytes, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", bytes[i]);
}

/* RFC 1319, appendix A.5. */
static void md2_matches_rfc_1319(void **state)
{
    (void)state;
    static const struct { const char *message, *digest; } suite[] = {
        { "", "8350e5a3e24c153df2275c9f80692773" },
        { "a", "32ec01ec4a6dac72c0ab96fb34c0b5d1" },
        { "abc", "da853b0d3f88d99b30283a69e6ded6bb" },
        { "message digest", "ab4f496bfb2a530b219ff33031fe06b0" },
        { "abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b" },
        { "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "da33def2a42df13975352846c30338cd" },
        { "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
          "d5976f79d83d3a0dc9806c3c66f3efd8" },
    };
    for (size_t i = 0; i < sizeof suite / sizeof suite[0]; i++) {
        struct md2_ctx ctx;
        uint8_t digest[MD2_DIGEST_SIZE];
        char text[2 * MD2_DIGEST_SIZE + 1];
        md2_init(&ctx);
        md2_update(&ctx, strlen(suite[i].message), (const uint8_t *)suite[i].message);
        md2_digest(&ctx, sizeof digest, digest);
        hex(digest, sizeof digest, text);
        assert_string_equal(text, suite[i].digest);
    }
}

/* Driver 12020, runtime 11.8 (version + 2 = 11082), one device at PCI 0000:04:00. The
 * answer is published as a little-endian 128-bit number: digest byte 0 is its last byte. */
static void digest_matches_a_known_answer(void **state)
{
    (void)state;
    sim_integrity_input input = {
        .driver_version = 12020,
        .version = 11082,
        .pid = 0x4D08,
        .thread = 0x2B78,
        .runtime_table = 0x00007FF8C80717F0ull,
        .integrity_table = 0x00007FF8C825E4B0ull,
        .function = 0x00007FF8C7DD0AD0ull,
        .unix_seconds = 0x64A365EE,
        .device_count = 1,
        .devices = { { { 0x67, 0x22, 0xCB, 0xCF, 0xC6, 0x61, 0xF2, 0x92, 0x74, 0xD6, 0xED, 0x23, 0x2A, 0x32, 0x13,
                         0x1C }, 0, 4, 0 } },
    };
    uint8_t digest[16];
    sim_integrity_digest(&input, digest);
    char text[33];
    for (int i = 0; i < 16; i++)
        sprintf(text + 2 * i, "%02X", digest[15 - i]);
    assert_string_equal(text, "EAF1313342BFCD84A7C34628F214707A");
    /* Every field counts: one second later is another answer. */
    input.unix_seconds++;
    uint8_t later[16];
    sim_integrity_digest(&input, later);
    assert_memory_not_equal(digest, later, 16);
}

static void fixed_answers(void **state)
{
    (void)state;
    uint64_t out[2];
    sim_integrity_fixed(0, out);
    assert_true(out[0] == 0x3341181c03cb675cull && out[1] == 0x8ed383aa1f4cd1e8ull);
    sim_integrity_fixed(1, out);
    assert_true(out[0] == 0x1841181c03cb675cull && out[1] == 0x8ed383aa1f4cd1e8ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(md2_matches_rfc_1319),
        cmocka_unit_test(digest_matches_a_known_answer),
        cmocka_unit_test(fixed_answers),
    };
    return cmocka_run_group_tests_name("simcuda integrity digest", tests, NULL, NULL);
}
