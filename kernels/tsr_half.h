/*
 * tsr_half.h - IEEE 754 binary16 ("half") from and to fp32, in plain float
 * arithmetic: the f16 KV cache (attention.c) and the driver's Q4_0
 * quantizer (GGUF stores Q4_0 scales as halves) share these.
 *
 * No bit punning (UG1399, "Pointer Limitations": no casts between pointer
 * types; the project's lint bans memcpy between types as well) and no
 * compiler half type (C has none; UG1399, "Vitis HLS Math Library", has
 * half precision in hls_math.h, which it says C code cannot use).  The
 * float's exponent is found by comparisons against
 * powers of two (a 6-level tree: a priority encoder in hardware), and
 * multiplying by a power of two is exact, so every step below is exact
 * except the one rounding, which is IEEE's round to nearest, ties to even:
 *
 *   encode |x| = m * 2^(e - 10), 2^10 <= m < 2^11 (normal, e >= -14), or
 *          |x| = m * 2^-24, m < 2^10 (subnormal); round m to an integer
 *          (ties to even); a carry to 2^11 moves to the next exponent;
 *          e > 15 or beyond 65504 after rounding: infinity; NaN: a quiet
 *          NaN; the sign of -0 is kept.
 *   decode (1024 + M) * 2^(E - 25) (normal), M * 2^-24 (subnormal), inf
 *          and NaN for E = 31: exact.
 *
 * tests/test_half.c checks every half against the host compiler's
 * _Float16, and the rounding of every midpoint between two halves.
 */
#ifndef TSR_HALF_H
#define TSR_HALF_H

#include <math.h>
#include <stdint.h>

/* 2^(k - 25) for k = 0..49: the powers of two of a half's exponents and
 * the encoder's scales (a ROM in hardware). */
static inline float tsr_half_pow2(int32_t k)
{
    static const float pow2[50] = {
        0x1p-25f, 0x1p-24f, 0x1p-23f, 0x1p-22f, 0x1p-21f, 0x1p-20f, 0x1p-19f,
        0x1p-18f, 0x1p-17f, 0x1p-16f, 0x1p-15f, 0x1p-14f, 0x1p-13f, 0x1p-12f,
        0x1p-11f, 0x1p-10f, 0x1p-9f, 0x1p-8f, 0x1p-7f, 0x1p-6f, 0x1p-5f,
        0x1p-4f, 0x1p-3f, 0x1p-2f, 0x1p-1f, 0x1p0f, 0x1p1f, 0x1p2f,
        0x1p3f, 0x1p4f, 0x1p5f, 0x1p6f, 0x1p7f, 0x1p8f, 0x1p9f,
        0x1p10f, 0x1p11f, 0x1p12f, 0x1p13f, 0x1p14f, 0x1p15f, 0x1p16f,
        0x1p17f, 0x1p18f, 0x1p19f, 0x1p20f, 0x1p21f, 0x1p22f, 0x1p23f,
        0x1p24f,
    };
    return pow2[k];
}

/* Round v >= 0 (v < 2^24) to the nearest integer, ties to even. */
static inline int32_t tsr_half_rint(float v)
{
    int32_t t = (int32_t)v;       /* truncate (v >= 0) */
    float f = v - (float)t;       /* exact: Sterbenz */
    return t + (f > 0.5f || (f == 0.5f && (t & 1)));
}

/* fp32 -> IEEE half bits, round to nearest even. */
static inline uint16_t tsr_f16_from_f32(float x)
{
    if (x != x) return (uint16_t)0x7E00u;                 /* NaN */
    uint32_t sign = signbit(x) ? 0x8000u : 0u;
    float a = fabsf(x);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7C00u);  /* rounds past 65504: inf */
    if (a < 6.103515625e-05f) {                            /* below 2^-14: subnormal */
        int32_t m = tsr_half_rint(a * 16777216.0f);        /* a * 2^24, exact; m <= 1024 */
        return (uint16_t)(sign | (uint32_t)m);             /* m = 1024: the least normal */
    }
    /* e: the largest of -14..15 with 2^e <= a, by a 5-level compare tree */
    int32_t e = -14;
    for (uint32_t s = 16u; s >= 1u; s /= 2u) {
#ifdef __SYNTHESIS__ /* driver/ includes this header too: keep its -Wall quiet */
#pragma HLS UNROLL
#endif
        if (e + (int32_t)s <= 15 && a >= tsr_half_pow2(e + (int32_t)s + 25)) e += (int32_t)s;
    }
    int32_t m = tsr_half_rint(a * tsr_half_pow2(10 - e + 25));   /* a * 2^(10 - e): [1024, 2048) */
    if (m == 2048) {
        m = 1024;
        e++;
    }
    return (uint16_t)(sign | (uint32_t)(e + 15) << 10 | (uint32_t)(m - 1024));
}

/* IEEE half bits -> fp32, exact. */
static inline float tsr_f32_from_f16(uint16_t h)
{
    uint32_t E = ((uint32_t)h >> 10) & 31u, M = (uint32_t)h & 1023u;
    float v;
    if (E == 31u) v = M ? NAN : INFINITY;
    else if (E == 0u) v = (float)M * tsr_half_pow2(1);           /* M * 2^-24 */
    else v = (float)(1024u + M) * tsr_half_pow2((int32_t)E);     /* (1024 + M) * 2^(E - 25) */
    return (h & 0x8000u) ? -v : v;
}

#endif
