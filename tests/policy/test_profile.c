/* test_profile.c — the warm-start profile's encoding: a round trip keeps every entry; a
 * damaged, cut, foreign or inconsistent image is refused with a reason; entries are found
 * by call order, and a program's allocation of another size or tensor does not match. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "policy/profile.h"

#define CHUNK (2u << 20)

static float embd_heat[8] = { 0.01f, 0.01f, 0.02f, 0.01f, 0.01f, 0.01f, 0.01f, 0.03f };
static float output_heat[8] = { 9, 9, 9, 9, 9, 9, 9, 8.5f };
static float logits_heat[1] = { 4 };

static tm_profile sample(tm_profile_entry e[3])
{
    e[0] = (tm_profile_entry){ .order = 0, .size = 16u << 20, .name = "token_embd.weight", .chunks = 8,
                               .heat = embd_heat };
    e[1] = (tm_profile_entry){ .order = 1, .size = 16u << 20, .name = "output.weight", .chunks = 8,
                               .heat = output_heat };
    e[2] = (tm_profile_entry){ .order = 5, .size = 1000, .name = "", .chunks = 1, .heat = logits_heat };
    return (tm_profile){ .chunk_size = CHUNK, .count = 3, .entry = e };
}

static uint8_t *encoded(size_t *size)
{
    tm_profile_entry e[3];
    tm_profile p = sample(e);
    uint8_t *image = NULL;
    assert_int_equal(tm_profile_encode(&p, &image, size), 0);
    return image;
}

static void test_round_trip(void **state)
{
    (void)state;
    size_t size;
    uint8_t *image = encoded(&size);
    assert_true(tm_profile_has_magic(image, size));
    tm_profile back;
    char why[128];
    assert_int_equal(tm_profile_decode(image, size, &back, why, sizeof why), 0);
    assert_int_equal(back.chunk_size, CHUNK);
    assert_int_equal(back.count, 3);
    assert_string_equal(back.entry[1].name, "output.weight");
    assert_int_equal(back.entry[2].order, 5);
    assert_int_equal(back.entry[2].size, 1000);
    assert_memory_equal(back.entry[0].heat, embd_heat, sizeof embd_heat);
    assert_memory_equal(back.entry[1].heat, output_heat, sizeof output_heat);
    assert_ptr_equal(tm_profile_find(&back, 5), &back.entry[2]);
    assert_null(tm_profile_find(&back, 2));
    assert_null(tm_profile_find(&back, 6));
    tm_profile_free(&back);
    free(image);
}

static void expect_refused(const uint8_t *image, size_t size, const char *reason)
{
    tm_profile p;
    char why[128] = "";
    assert_int_equal(tm_profile_decode(image, size, &p, why, sizeof why), -1);
    assert_non_null(strstr(why, reason));
    assert_int_equal(p.count, 0);
    assert_null(p.entry);
}

static void test_damage_is_refused(void **state)
{
    (void)state;
    size_t size;
    uint8_t *image = encoded(&size);
    expect_refused((const uint8_t *)"#!/bin/sh\necho hello\n", 21, "not a tiermem profile");
    expect_refused(image, 20, "truncated");
    expect_refused(image, size - 4, "checksum");
    image[size - 1] ^= 0x40; /* a heat value flipped */
    expect_refused(image, size, "checksum");
    image[size - 1] ^= 0x40;
    image[8] = 9; /* version */
    expect_refused(image, size, "version");
    free(image);
}

/* Images that are well formed on the outside (checksum right) but inconsistent inside. */
static void test_inconsistent_entries_are_refused(void **state)
{
    (void)state;
    tm_profile_entry e[3];
    tm_profile p = sample(e);
    uint8_t *image;
    size_t size;
    e[2].order = 1; /* two entries of order 1 */
    assert_int_equal(tm_profile_encode(&p, &image, &size), 0);
    expect_refused(image, size, "out of order");
    free(image);
    e[2].order = 5;
    e[0].size = (16u << 20) + 1; /* 8 chunks cannot hold it */
    assert_int_equal(tm_profile_encode(&p, &image, &size), 0);
    expect_refused(image, size, "chunk count");
    free(image);
    e[0].size = 16u << 20;
    float negative_heat[1] = { -1.0f };
    e[2].heat = negative_heat;
    assert_int_equal(tm_profile_encode(&p, &image, &size), 0);
    expect_refused(image, size, "negative");
    free(image);
}

static void test_program_must_match(void **state)
{
    (void)state;
    tm_profile_entry e[3];
    tm_profile p = sample(e);
    char why[160];
    assert_true(tm_profile_check(&p.entry[1], 16u << 20, "output.weight", why, sizeof why));
    assert_true(tm_profile_check(&p.entry[1], 16u << 20, NULL, why, sizeof why)); /* no name seen yet */
    assert_true(tm_profile_check(&p.entry[2], 1000, "scratch", why, sizeof why));  /* none profiled */
    assert_false(tm_profile_check(&p.entry[1], 8u << 20, "output.weight", why, sizeof why));
    assert_string_equal(why, "allocation 1 is 8388608 bytes here, 16777216 in the profile");
    assert_false(tm_profile_check(&p.entry[1], 16u << 20, "blk.0.ffn_up.weight", why, sizeof why));
    assert_string_equal(why, "allocation 1 holds blk.0.ffn_up.weight here, output.weight in the profile");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_damage_is_refused),
        cmocka_unit_test(test_inconsistent_entries_are_refused),
        cmocka_unit_test(test_program_must_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
