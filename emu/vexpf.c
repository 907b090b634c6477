/*
 * vexpf.c - expf over arrays, 8 lanes at a time with AVX-512, bit for bit
 * the C library's expf, and the two kernel loops built on it: SwiGLU's
 * rows (kernels/mesh.c pe_swiglu) and attention's exponentials
 * (kernels/attention.c pe_att_exp).  See tsr_emu.h.
 *
 * The algorithm is glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, from
 * Arm's optimized-routines; glibc 2.28 and later): in double precision,
 * x N / ln 2 = k + r with N = 32 and k an integer (rounded by adding and
 * subtracting 1.5 x 2^52), 2^(k/N) as a table entry for k mod N with k's
 * other bits added into its exponent, 2^(r/N) by a cubic in r, the product
 * rounded to float.  glibc's x86-64 libm runs its FMA build of that code
 * on a CPU with FMA (every CPU with AVX-512), in which the compiler fused
 * x times N / ln 2 into both of the sums that use it; so do the five FMAs
 * here.  |x| >= 88, infinities and NaNs (overflow, underflow, errno) go to
 * expf itself, lane by lane.
 *
 * Not assumed but checked: the first call compares this code with expf on
 * 65,536 inputs spread over the range and on two inputs that only the
 * fused form gets right, and on any difference (another C library) keeps
 * to expf.  On Debian 12 (glibc 2.36) it equals expf on every float below
 * 88 in magnitude (2,237,661,184 inputs, compared once);
 * test_kernel_ops checks 1 in 7 of them.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "tsr_emu.h"

#define EXP_N 32   /* table entries: 2^(i/N) */

static uint64_t exp_tab[EXP_N];   /* bits of 2^(i/N), less i << (52 - 5) */
static int      vec_ok;           /* 1: the vector path equals expf here */
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
    __m512i lo = _mm512_permutex2var_epi64(t0, idx, t1), hi = _mm512_permutex2var_epi64(t2, idx, t3);
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
        for (int l = 0; l < 8; l++)
            if (sp >> l & 1) yv[l] = expf(xv[l]);
        out = _mm256_loadu_ps(yv);
    }
    return out;
}

static inline __mmask8 mask8(uint32_t left) { return (__mmask8)(left >= 8u ? 0xffu : (1u << left) - 1u); }

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

/* The sample the first call checks: 65,536 encodings spread over each
 * sign's range below 88 in magnitude, and 2 that an unfused x N / ln 2
 * gets wrong. */
static int matches_expf(void)
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
            expf_avx512(x, y, k);
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

static void vec_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (!tsr_emu_avx512()) return;
    for (uint32_t i = 0; i < EXP_N; i++) {
        double v = (double)exp2l((long double)i / EXP_N);   /* 2^(i/N), to nearest */
        uint64_t b;
        memcpy(&b, &v, 8);
        exp_tab[i] = b - ((uint64_t)i << (52 - 5));
    }
    vec_ok = matches_expf();
#endif
}

int tsr_emu_expf_vector(void)
{
    pthread_once(&vec_once, vec_init);
    return vec_ok;
}

void tsr_emu_expf(const float *x, float *y, uint32_t n)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (tsr_emu_expf_vector()) {
        expf_avx512(x, y, n);
        return;
    }
#endif
    for (uint32_t i = 0; i < n; i++) y[i] = expf(x[i]);
}

void tsr_emu_exp_shifted(float *a, uint32_t n, float sub)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (tsr_emu_expf_vector()) {
        exp_shifted_avx512(a, n, sub);
        return;
    }
#endif
    for (uint32_t i = 0; i < n; i++) a[i] = expf(a[i] - sub);
}

void tsr_emu_swiglu(float *g, uint32_t rows)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (tsr_emu_expf_vector()) {
        swiglu_avx512(g, rows);
        return;
    }
#endif
    for (uint32_t i = 0; i < rows; i++) {
        float val = g[i];
        float e = expf(-val);
        val *= (1.0f / (1.0f + e));
        val *= g[rows + i];
        g[i] = val;
    }
}
