/*
 * quant.c - the Q8 input quantizer's values (kernels/mesh.c emu_quantize)
 * as one vectorized loop: q[j] = (int8_t)tsr_round_q8(v[j] / sc).
 *
 * Every step is the scalar one in vector form: the IEEE divide (VDIVPS
 * rounds as DIVSS does), tsr_round_q8's clamp to +-2147483520 (ordered
 * compares, which a NaN fails), the truncating conversion, the fraction
 * v - (float)t and its two half compares; the int8 store keeps the low
 * byte (VPMOVDB, truncating), as GCC's int32 -> int8 conversion does.
 * tsr_round_q8 maps a NaN to 0 first; here a NaN converts to 0x80000000
 * (the "integer indefinite"), its fraction is NaN so neither compare adds,
 * and the byte kept is 0 all the same (a saturating VPMOVSDB would give
 * -128).  So the bytes are the scalar loop's for every float
 * (test_kernel_ops quantize_rows_bit_identical), with AVX-512 or, 8 at a
 * time, with AVX2.
 */
#include <stdint.h>

#include "tsr_emu.h"
#include "tsr_layout.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512vl")))

static AVX512 void quantize_avx512(const float *v, float sc, int8_t *q, uint32_t n)
{
    const __m512 s = _mm512_set1_ps(sc), hi = _mm512_set1_ps(2147483520.0f);
    const __m512 lo = _mm512_set1_ps(-2147483520.0f);
    const __m512 half = _mm512_set1_ps(0.5f), mhalf = _mm512_set1_ps(-0.5f);
    const __m512i one = _mm512_set1_epi32(1);
    for (uint32_t i = 0; i < n; i += 16u) {
        __mmask16 m = n - i >= 16u ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        __m512 x = _mm512_div_ps(_mm512_maskz_loadu_ps(m, v + i), s);
        x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), x, hi);
        x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), x, lo);
        __m512i t = _mm512_cvttps_epi32(x);
        __m512 f = _mm512_sub_ps(x, _mm512_cvtepi32_ps(t));
        t = _mm512_mask_add_epi32(t, _mm512_cmp_ps_mask(f, half, _CMP_GE_OQ), t, one);
        t = _mm512_mask_sub_epi32(t, _mm512_cmp_ps_mask(f, mhalf, _CMP_LE_OQ), t, one);
        _mm512_mask_cvtepi32_storeu_epi8(q + i, m, t);
    }
}
/* The same steps 8 at a time with AVX2 (compare masks are all-ones
 * lanes: t - mask adds 1, t + mask takes 1), each int32's low byte kept
 * by a byte shuffle; the last n % 8 values through the scalar loop. */
#define AVX2 __attribute__((target("avx2")))

static AVX2 uint32_t quantize_avx2(const float *v, float sc, int8_t *q, uint32_t n)
{
    const __m256 s = _mm256_set1_ps(sc), hi = _mm256_set1_ps(2147483520.0f);
    const __m256 lo = _mm256_set1_ps(-2147483520.0f);
    const __m256 half = _mm256_set1_ps(0.5f), mhalf = _mm256_set1_ps(-0.5f);
    /* byte 0 of each dword to bytes 0..3 of its 128-bit lane */
    const __m256i low = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                         -1, -1);
    const __m256i lanes = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
    uint32_t i = 0;
    for (; i + 8u <= n; i += 8u) {
        __m256 x = _mm256_div_ps(_mm256_loadu_ps(v + i), s);
        x = _mm256_blendv_ps(x, hi, _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
        x = _mm256_blendv_ps(x, lo, _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
        __m256i t = _mm256_cvttps_epi32(x);
        __m256 f = _mm256_sub_ps(x, _mm256_cvtepi32_ps(t));
        t = _mm256_sub_epi32(t, _mm256_castps_si256(_mm256_cmp_ps(f, half, _CMP_GE_OQ)));
        t = _mm256_add_epi32(t, _mm256_castps_si256(_mm256_cmp_ps(f, mhalf, _CMP_LE_OQ)));
        __m256i b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(t, low), lanes);
        _mm_storel_epi64((__m128i *)(void *)(q + i), _mm256_castsi256_si128(b));
    }
    return i;
}
#endif

void tsr_emu_quantize_q8(const float *v, float sc, int8_t *q, uint32_t n)
{
    uint32_t j = 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    int level = tsr_emu_vec_level();
    if (level >= TSR_EMU_VEC_AVX512) {
        quantize_avx512(v, sc, q, n);
        return;
    }
    if (level >= TSR_EMU_VEC_AVX2) j = quantize_avx2(v, sc, q, n);
#endif
    for (; j < n; j++) q[j] = (int8_t)tsr_round_q8(v[j] / sc);
}
