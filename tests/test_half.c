/*
 * test_half.c - kernels/tsr_half.h, the f16 KV cache's and the Q4_0
 * quantizer's IEEE half conversions in plain float arithmetic, against the
 * host compiler's _Float16 (GCC on x86-64: IEEE binary16, conversions
 * rounding to nearest even):
 *   - every one of the 65536 halves decodes to the compiler's value (NaNs
 *     as NaNs), and encodes back to itself (NaNs to the quiet NaN);
 *   - each midpoint between two neighbouring finite halves rounds to the
 *     even one, and a float one step either side of it to the nearer;
 *   - a spread of floats (every 613th bit pattern) encodes as the
 *     compiler's conversion does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tsr_half.h"

static uint16_t ref_bits(float x)
{
    _Float16 h = (_Float16)x;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
}

static float ref_value(uint16_t b)
{
    _Float16 h;
    memcpy(&h, &b, 2);
    return (float)h;
}

static void every_half_decodes_and_encodes_back(void **state)
{
    (void)state;
    int bad = 0;
    for (uint32_t b = 0; b < 65536u; b++) {
        float want = ref_value((uint16_t)b), got = tsr_f32_from_f16((uint16_t)b);
        if (want != want) {
            bad += got == got;                                   /* NaN stays NaN */
            bad += tsr_f16_from_f32(got) != 0x7E00u;
            continue;
        }
        bad += memcmp(&want, &got, 4) != 0;                      /* the same bits, -0 too */
        bad += tsr_f16_from_f32(got) != (uint16_t)b;
    }
    assert_int_equal(bad, 0);
}

static void midpoints_round_to_even(void **state)
{
    (void)state;
    int bad = 0, n = 0;
    for (uint32_t b = 0; b < 0x7BFFu; b++) {   /* finite positives; their negatives below */
        double lo = tsr_f32_from_f16((uint16_t)b), hi = tsr_f32_from_f16((uint16_t)(b + 1u));
        float mid = (float)((lo + hi) / 2);     /* exact: 12 significant bits */
        uint16_t even = (b & 1u) ? (uint16_t)(b + 1u) : (uint16_t)b;
        bad += tsr_f16_from_f32(mid) != even;
        bad += tsr_f16_from_f32(-mid) != (uint16_t)(even | 0x8000u);
        bad += tsr_f16_from_f32(nextafterf(mid, 0.0f)) != (uint16_t)b;
        bad += tsr_f16_from_f32(nextafterf(mid, INFINITY)) != (uint16_t)(b + 1u);
        bad += ref_bits(mid) != even;            /* the compiler agrees */
        n++;
    }
    /* past the largest half: 65504 stays, its midpoint with 65536 is inf */
    bad += tsr_f16_from_f32(65504.0f) != 0x7BFFu;
    bad += tsr_f16_from_f32(nextafterf(65520.0f, 0.0f)) != 0x7BFFu;
    bad += tsr_f16_from_f32(65520.0f) != 0x7C00u;
    bad += tsr_f16_from_f32(-INFINITY) != 0xFC00u;
    assert_int_equal(n, 0x7BFF);
    assert_int_equal(bad, 0);
}

static void floats_encode_as_the_compiler_does(void **state)
{
    (void)state;
    int bad = 0;
    for (uint64_t b = 0; b < 0x100000000ull; b += 613u) {
        uint32_t u = (uint32_t)b;
        float x;
        memcpy(&x, &u, 4);
        if (x != x) continue;
        bad += tsr_f16_from_f32(x) != ref_bits(x);
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_half_decodes_and_encodes_back),
        cmocka_unit_test(midpoints_round_to_even),
        cmocka_unit_test(floats_encode_as_the_compiler_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
