// test_kernel_fp8_nvidia.cc — kernels/fp8.h against NVIDIA's own conversion
// (__nv_cvt_float_to_fp8 with __NV_SATFINITE, the host implementation in cuda_fp8.hpp),
// and decoding against __nv_cvt_fp8_to_halfraw, on every code and on one float in 251
// over all 2^32 bit patterns (17 million inputs, every exponent and sign). The full
// 2^32 sweep agrees too but takes a minute; tests/gpu/run.sh repeats it against the
// hardware conversion on a GPU. Exact: no tolerance. C++ because cuda_fp8.h is.
#include <cuda_fp8.h>

#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <setjmp.h>
extern "C" {
#include <cmocka.h>
}

#include "kernels/f16.h"
#include "kernels/fp8.h"

static float nv_decode(uint8_t q, __nv_fp8_interpretation_t kind) {
    __half_raw h = __nv_cvt_fp8_to_halfraw(q, kind);
    return tm_f16_to_f32(h.x);
}

static void check_decode(__nv_fp8_interpretation_t kind, float (*mine)(uint8_t)) {
    for (int c = 0; c < 256; c++) {
        float want = nv_decode((uint8_t)c, kind), got = mine((uint8_t)c);
        if (std::isnan(want)) assert_true(std::isnan(got));
        else if (tm_f32_bits(want) != tm_f32_bits(got))
            fail_msg("decode 0x%02x: NVIDIA %a, fp8.h %a", c, want, got);
    }
}

static void test_decode_matches_nvidia(void **) {
    check_decode(__NV_E4M3, tm_fp8_e4m3_to_f32);
    check_decode(__NV_E5M2, tm_fp8_e5m2_to_f32);
}

static void test_encode_matches_nvidia(void **) {
    long checked = 0;
    for (uint64_t b = 0; b < (1ull << 32); b += 251) {
        float x = tm_bits_f32((uint32_t)b);
        uint8_t n4 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
        uint8_t n5 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
        uint8_t m4 = tm_fp8_e4m3_from_f32(x), m5 = tm_fp8_e5m2_from_f32(x);
        if (std::isnan(x)) { /* any NaN code will do; both give NaN */
            assert_true(std::isnan(tm_fp8_e4m3_to_f32(m4)) && std::isnan(tm_fp8_e5m2_to_f32(m5)));
            continue;
        }
        if (n4 != m4) fail_msg("e4m3 encode %a: NVIDIA 0x%02x, fp8.h 0x%02x", x, n4, m4);
        if (n5 != m5) fail_msg("e5m2 encode %a: NVIDIA 0x%02x, fp8.h 0x%02x", x, n5, m5);
        checked++;
    }
    assert_true(checked > 16000000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_matches_nvidia),
        cmocka_unit_test(test_encode_matches_nvidia),
    };
    return cmocka_run_group_tests_name("fp8 codec against cuda_fp8.h", tests, NULL, NULL);
}
