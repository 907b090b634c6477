/*
 * vexpf.c - expf over arrays, 8 lanes at a time with AVX-512, bit for bit
 * the C library's expf, and the two kernel loops built on it: SwiGLU's
 * rows (kernels/mesh.c pe_swiglu) and attention's exponentials
 * (kernels/attention.c pe_att_exp).  See tsr_emu.h.
 *
 * The algorithm is glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, from
 * Arm's optimized-routines; glibc 2.27 and later): in double precision,
 * x N / ln 2 = k + r with N = 32 and k an integer (rounded by adding and
 * subtracting 1.5 x 2^52), 2^(k/N) as a table entry for k mod N with k's
 * other bits added into its exponent, 2^(r/N) by a cubic in r, the product
 * rounded to float.  glibc's x86-64 libm runs its FMA build of that code
 * on a CPU with FMA (every CPU with AVX-512), in which the compiler fused
 * x times N / ln 2 into both of the sums that use it; so do the five FMAs
 * here.  |x| >= 88, infinities and NaNs (overflow, underflow, errno) go to
 * expf itself, lane by lane.
 *
 * Checked, within limits: the vector path runs only under glibc 2.27 or
 * later, and after the first call has compared it with expf on 65,536
 * inputs spread over the range and on two inputs that only the fused form
 * gets right; on any difference (another build of expf, e.g. glibc's
 * unfused one when GLIBC_TUNABLES hides FMA) it keeps to expf.  A sample
 * cannot rule out a libm that differs on rare inputs only.  On Debian 12
 * (glibc 2.36) it equals expf on every float below 88 in magnitude
 * (2,237,661,184 inputs, compared once); test_kernel_ops checks 1 in 7 of
 * all 2^32 encodings.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include "tsr_emu.h"

#define EXP_N 32   /* table entries: 2^(i/N) */

/* Bits of 2^(i/N) rounded to double, less i << (52 - 5) (so that adding
 * k << (52 - 5) for k = i mod N gives 2^(k/N)'s bits): computed once with
 * exp2l and written out, so that no run depends on a C library's exp2l. */
static const uint64_t exp_tab[EXP_N] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
static int ok_avx2, ok_avx512;   /* 1: that path equals expf here */
static pthread_once_t vec_once = PTHREAD_ONCE_INIT;

static const double INV_LN2_N = 0x1.71547652b82fep+0 * EXP_N; /* N / ln 2 */
static const double SHIFT = 0x1.8p+52;                        /* 1.5 x 2^52 */
static const double C0 = 0x1.c6af84b912394p-5 / EXP_N / EXP_N / EXP_N;
static const double C1 = 0x1.ebfce50fac4f3p-3 / EXP_N / EXP_N;
static const double C2 = 0x1.62e42ff0c52d6p-1 / EXP_N;

/* |x| >= 88, an infinity or a NaN: the top 12 bits of |x|'s encoding at
 * or above 88's. */
#define SPECIAL_TOP 0x42bu

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512vl")))

/* y[l] = expf(x[l]) for the lanes l set in sp (|x| >= 88, infinities,
 * NaNs: overflow, underflow and errno as expf has them). */
static void special_lanes(const float x[8], float y[8], unsigned sp)
{
    for (int l = 0; l < 8; l++)
        if (sp >> l & 1u) y[l] = expf(x[l]);
}

/* expf of x[0..n), n <= 8, lanes past n untouched. */
static inline __attribute__((always_inline)) AVX512 __m256 exp8(__m256 x, __mmask8 m)
{
    const __m512i t0 = _mm512_loadu_si512(exp_tab), t1 = _mm512_loadu_si512(exp_tab + 8);
    const __m512i t2 = _mm512_loadu_si512(exp_tab + 16), t3 = _mm512_loadu_si512(exp_tab + 24);
    __m512d xd = _mm512_cvtps_pd(x);
    __m512d kd = _mm512_fmadd_pd(_mm512_set1_pd(INV_LN2_N), xd, _mm512_set1_pd(SHIFT));
    __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, _mm512_set1_pd(SHIFT));
    __m512d r = _mm512_fmsub_pd(_mm512_set1_pd(INV_LN2_N), xd, kd);
    /* the table entry of k mod 32: bits 0..3 pick among 16, bit 4 the pair */
    __m512i idx = _mm512_and_si512(ki, _mm512_set1_epi64(EXP_N - 1));
    __m512i lo = _mm512_permutex2var_epi64(t0, idx, t1);
    __m512i hi = _mm512_permutex2var_epi64(t2, idx, t3);
    __m512i t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(idx, _mm512_set1_epi64(16)), lo, hi);
    t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 52 - 5));
    __m512d s = _mm512_castsi512_pd(t);
    __m512d z = _mm512_fmadd_pd(_mm512_set1_pd(C0), r, _mm512_set1_pd(C1));
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(_mm512_set1_pd(C2), r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    y = _mm512_mul_pd(y, s);
    __m256 out = _mm512_cvtpd_ps(y);
    /* the special lanes, by expf itself */
    __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20),
                                   _mm256_set1_epi32(0x7ff));
    __mmask8 sp = _mm256_mask_cmpge_epu32_mask(m, top, _mm256_set1_epi32(SPECIAL_TOP));
    if (sp) {
        float xv[8], yv[8];
        _mm256_storeu_ps(xv, x);
        _mm256_storeu_ps(yv, out);
        special_lanes(xv, yv, (unsigned)sp);
        out = _mm256_loadu_ps(yv);
    }
    return out;
}

static inline __mmask8 mask8(uint32_t left)
{
    return (__mmask8)(left >= 8u ? 0xffu : (1u << left) - 1u);
}

static AVX512 void expf_avx512(const float *x, float *y, uint32_t n)
{
    for (uint32_t i = 0; i < n; i += 8u) {
        __mmask8 m = mask8(n - i);
        _mm256_mask_storeu_ps(y + i, m, exp8(_mm256_maskz_loadu_ps(m, x + i), m));
    }
}

static AVX512 void exp_shifted_avx512(float *a, uint32_t n, float sub)
{
    __m256 s = _mm256_set1_ps(sub);
    for (uint32_t i = 0; i < n; i += 8u) {
        __mmask8 m = mask8(n - i);
        __m256 v = _mm256_sub_ps(_mm256_maskz_loadu_ps(m, a + i), s);
        _mm256_mask_storeu_ps(a + i, m, exp8(v, m));
    }
}

static AVX512 void swiglu_avx512(float *g, uint32_t rows)
{
    const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
    for (uint32_t i = 0; i < rows; i += 8u) {
        __mmask8 m = mask8(rows - i);
        __m256 v = _mm256_maskz_loadu_ps(m, g + i);
        __m256 e = exp8(_mm256_xor_ps(v, neg), m);   /* expf(-val) */
        v = _mm256_mul_ps(v, _mm256_div_ps(one, _mm256_add_ps(one, e)));
        v = _mm256_mul_ps(v, _mm256_maskz_loadu_ps(m, g + rows + i));
        _mm256_mask_storeu_ps(g + i, m, v);
    }
}

#define AVX2 __attribute__((target("avx2,fma")))

/* exp8's operations on 4 doubles: expf of 4 floats (no special lanes). */
static inline __attribute__((always_inline)) AVX2 __m128 exp4_avx2(__m128 x)
{
    __m256d xd = _mm256_cvtps_pd(x);
    __m256d kd = _mm256_fmadd_pd(_mm256_set1_pd(INV_LN2_N), xd, _mm256_set1_pd(SHIFT));
    __m256i ki = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, _mm256_set1_pd(SHIFT));
    __m256d r = _mm256_fmsub_pd(_mm256_set1_pd(INV_LN2_N), xd, kd);
    __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(EXP_N - 1));
    __m256i t = _mm256_i64gather_epi64((const long long *)exp_tab, idx, 8);
    t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 52 - 5));
    __m256d s = _mm256_castsi256_pd(t);
    __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(C0), r, _mm256_set1_pd(C1));
    __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(C2), r, _mm256_set1_pd(1.0));
    y = _mm256_fmadd_pd(z, r2, y);
    return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

/* expf of 8 floats with AVX2 and FMA, the special lanes by expf. */
static inline __attribute__((always_inline)) AVX2 __m256 exp8_avx2(__m256 x)
{
    __m256 out = _mm256_set_m128(exp4_avx2(_mm256_extractf128_ps(x, 1)),
                                 exp4_avx2(_mm256_castps256_ps128(x)));
    __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20),
                                   _mm256_set1_epi32(0x7ff));
    int sp = _mm256_movemask_ps(
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(SPECIAL_TOP - 1))));
    if (sp) {
        float xv[8], yv[8];
        _mm256_storeu_ps(xv, x);
        _mm256_storeu_ps(yv, out);
        special_lanes(xv, yv, (unsigned)sp);
        out = _mm256_loadu_ps(yv);
    }
    return out;
}

/* Whole groups of 8 by AVX2; the rest (under 8) as the scalar loops. */
static AVX2 uint32_t expf_avx2(const float *x, float *y, uint32_t n)
{
    uint32_t i = 0;
    for (; i + 8u <= n; i += 8u) _mm256_storeu_ps(y + i, exp8_avx2(_mm256_loadu_ps(x + i)));
    return i;
}

static AVX2 uint32_t exp_shifted_avx2(float *a, uint32_t n, float sub)
{
    __m256 s = _mm256_set1_ps(sub);
    uint32_t i = 0;
    for (; i + 8u <= n; i += 8u)
        _mm256_storeu_ps(a + i, exp8_avx2(_mm256_sub_ps(_mm256_loadu_ps(a + i), s)));
    return i;
}

static AVX2 uint32_t swiglu_avx2(float *g, uint32_t rows)
{
    const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
    uint32_t i = 0;
    for (; i + 8u <= rows; i += 8u) {
        __m256 v = _mm256_loadu_ps(g + i);
        __m256 e = exp8_avx2(_mm256_xor_ps(v, neg));   /* expf(-val) */
        v = _mm256_mul_ps(v, _mm256_div_ps(one, _mm256_add_ps(one, e)));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(v, _mm256_loadu_ps(g + rows + i)));
    }
    return i;
}

/* The sample the first call checks: 65,536 encodings spread over each
 * sign's range below 88 in magnitude, and 2 that an unfused x N / ln 2
 * gets wrong. */
static int matches_expf(int level)
{
    float x[256], y[256];
    uint32_t k = 0;
    for (uint32_t i = 0; i < 65536u + 2u; i++) {
        uint32_t b = (i & 1u) << 31 | (uint32_t)(((uint64_t)(i >> 1) * (SPECIAL_TOP << 20)) >> 15);
        float v;
        memcpy(&v, &b, 4);
        if (i == 65536u) v = 0x1.04845ep+5f;
        if (i == 65537u) v = -0x1.f8cbb2p+5f;
        x[k++] = v;
        if (k == 256u || i == 65537u) {
            if (level == TSR_EMU_VEC_AVX512) expf_avx512(x, y, k);
            else for (uint32_t d = expf_avx2(x, y, k); d < k; d++) y[d] = expf(x[d]);
            for (uint32_t j = 0; j < k; j++) {
                float want = expf(x[j]);
                if (memcmp(&want, &y[j], 4) != 0) return 0;
            }
            k = 0;
        }
    }
    return 1;
}
#endif

/* glibc 2.27 or later (its expf is this algorithm from 2.27 on). */
static int glibc_expf(void)
{
#ifdef __GLIBC__
    unsigned major = 0, minor = 0;
    if (sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) != 2) return 0;
    return major > 2u || (major == 2u && minor >= 27u);
#else
    return 0;
#endif
}

static void vec_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (!glibc_expf()) return;
    ok_avx2 = tsr_emu_avx2() && matches_expf(TSR_EMU_VEC_AVX2);
    ok_avx512 = tsr_emu_avx512() && matches_expf(TSR_EMU_VEC_AVX512);
#endif
}

int tsr_emu_expf_vector(void)
{
    pthread_once(&vec_once, vec_init);
    if (ok_avx512 && tsr_emu_vec_limit >= TSR_EMU_VEC_AVX512) return TSR_EMU_VEC_AVX512;
    if (ok_avx2 && tsr_emu_vec_limit >= TSR_EMU_VEC_AVX2) return TSR_EMU_VEC_AVX2;
    return TSR_EMU_VEC_NONE;
}

/* The vector paths do all n (AVX-512, masked) or whole groups of 8
 * (AVX2); the scalar loops take the rest from element i. */
void tsr_emu_expf(const float *x, float *y, uint32_t n)
{
    uint32_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    int v = tsr_emu_expf_vector();
    if (v == TSR_EMU_VEC_AVX512) {
        expf_avx512(x, y, n);
        return;
    }
    if (v == TSR_EMU_VEC_AVX2) i = expf_avx2(x, y, n);
#endif
    for (; i < n; i++) y[i] = expf(x[i]);
}

void tsr_emu_exp_shifted(float *a, uint32_t n, float sub)
{
    uint32_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    int v = tsr_emu_expf_vector();
    if (v == TSR_EMU_VEC_AVX512) {
        exp_shifted_avx512(a, n, sub);
        return;
    }
    if (v == TSR_EMU_VEC_AVX2) i = exp_shifted_avx2(a, n, sub);
#endif
    for (; i < n; i++) a[i] = expf(a[i] - sub);
}

void tsr_emu_swiglu(float *g, uint32_t rows)
{
    uint32_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    int v = tsr_emu_expf_vector();
    if (v == TSR_EMU_VEC_AVX512) {
        swiglu_avx512(g, rows);
        return;
    }
    if (v == TSR_EMU_VEC_AVX2) i = swiglu_avx2(g, rows);
#endif
    for (; i < rows; i++) {
        float val = g[i];
        float e = expf(-val);
        val *= (1.0f / (1.0f + e));
        val *= g[rows + i];
        g[i] = val;
    }
}
