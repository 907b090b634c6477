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

#include "tsr_emu.h"
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

/* The emulator's f16 cache stores (tsr_emu_f16_encode: VCVTPS2PH where
 * the CPU has AVX-512) give tsr_f16_from_f32's bits: a sweep of every
 * float class, -0, both infinities, NaNs of either sign and payload, the
 * overflow edge and subnormals, at every count 1..40 (the masked tail). */
static void emulator_encoder_matches(void **state)
{
    (void)state;
    enum { N = 4096 };
    static float x[N];
    static uint16_t h[N + 1];
    int bad = 0;
    uint32_t k = 0;
    for (uint64_t b = 0; b < 0x100000000ull && k < N - 8u; b += 1048573u) {
        uint32_t u = (uint32_t)b;
        memcpy(&x[k++], &u, 4);
    }
    const float edge[] = { -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65520.0f,
                           nextafterf(65520.0f, 0.0f) };
    for (uint32_t i = 0; i < 8u; i++) x[k++] = edge[i];
    for (uint32_t n = 1; n <= 40u; n++) {
        h[n] = 0xA5A5u;
        tsr_emu_f16_encode(x + k - n, h, n);
        for (uint32_t i = 0; i < n; i++) bad += h[i] != tsr_f16_from_f32(x[k - n + i]);
        bad += h[n] != 0xA5A5u;   /* nothing past n */
    }
    tsr_emu_f16_encode(x, h, k);
    for (uint32_t i = 0; i < k; i++) bad += h[i] != tsr_f16_from_f32(x[i]);
    assert_int_equal(k, N);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_half_decodes_and_encodes_back),
        cmocka_unit_test(midpoints_round_to_even),
        cmocka_unit_test(floats_encode_as_the_compiler_does),
        cmocka_unit_test(emulator_encoder_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
