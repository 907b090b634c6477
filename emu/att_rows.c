/*
 * att_rows.c - the attention PE's multiply-add pass (kernels/attention.c
 * pe_att_mac) as plain nested loops the host compiler vectorizes, or with
 * one partial as AVX-512 register sums, the f16 cache's encoder, and the
 * prefetch of a pass's KV rows (see tsr_emu.h).  The kernel's loop is
 * flattened and, with one accumulator per element, padded for the
 * hardware's II=1 schedule; here the same fp32
 * operations run in the same order per element -- acc[o % parts][j] adds
 * s[o] * row o's element j for o ascending, each partial from 0 -- without
 * the idle slots, so the results are bit-identical.  (Built without
 * -ffp-contract: no FMA.)
 */
#include <float.h>
#include <stddef.h>

#include "tsr_arch.h"
#include "tsr_emu.h"
#include "tsr_half.h"

#define W TSR_ATT_LANES   /* elements of a word: of a position tile's row */
/* the 256-bit registers below hold a word of fp32 lanes */
_Static_assert(TSR_ATT_LANES == 8, "a word of fp32 lanes is one 256-bit register");

/* Row buffers for the converted rows: the longest row (positions or head
 * dimensions) a pass reads. */
#define ROW_MAX 8192u

/* Built for AVX-512, AVX2 and the baseline (the same operations, wider
 * lanes; C11 mode: no FMA contraction in any of them), and picked at each
 * call by tsr_emu_vec_level, so that "simd=avx2" takes an AVX2-only CPU's
 * loop.  (GCC's target_clones would pick by the CPU alone, through an
 * ifunc that crashes under ASan and TSan and that GCC exports whatever
 * -fvisibility says.) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ATT_WIDE 1
#else
#define ATT_WIDE 0
#endif

/* Rows stored whole (step W) a row at a time; position tiles a word of
 * positions at a time, every row's word before the next word's (each
 * element's sum keeps o ascending either way). */
static inline __attribute__((always_inline)) void
att_mac_body(const float *kv, uint32_t stride, uint32_t step, const float *s, uint32_t no,
             uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
    uint32_t run = step == W ? nj : W;   /* elements a row holds contiguously */
    for (uint32_t j0 = 0; j0 < nj; j0 += run) {
        uint32_t n = nj - j0 < run ? nj - j0 : run;
        const float *kw = kv + (size_t)(j0 / W) * step;
        for (uint32_t o = 0; o < no; o++) {
            const float *k = kw + (size_t)o * stride;   /* (n,) of row o */
            float *a = acc + (size_t)(o % parts) * acc_stride + j0, sv = s[o];
            if (o < parts)
                for (uint32_t j = 0; j < n; j++) a[j] = 0.0f + sv * k[j];
            else
                for (uint32_t j = 0; j < n; j++) a[j] = a[j] + sv * k[j];
        }
    }
}

#if ATT_WIDE
__attribute__((target("avx512f"))) static void
att_mac_avx512(const float *kv, uint32_t stride, uint32_t step, const float *s, uint32_t no,
               uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
    att_mac_body(kv, stride, step, s, no, nj, parts, acc, acc_stride);
}

__attribute__((target("avx2"))) static void
att_mac_avx2(const float *kv, uint32_t stride, uint32_t step, const float *s, uint32_t no,
             uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
    att_mac_body(kv, stride, step, s, no, nj, parts, acc, acc_stride);
}
#endif

static void att_mac(const float *kv, uint32_t stride, uint32_t step, const float *s, uint32_t no,
                    uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
#if ATT_WIDE
    int v = tsr_emu_vec_level();
    if (v >= TSR_EMU_VEC_AVX512) {
        att_mac_avx512(kv, stride, step, s, no, nj, parts, acc, acc_stride);
        return;
    }
    if (v >= TSR_EMU_VEC_AVX2) {
        att_mac_avx2(kv, stride, step, s, no, nj, parts, acc, acc_stride);
        return;
    }
#endif
    att_mac_body(kv, stride, step, s, no, nj, parts, acc, acc_stride);
}

/* The kernel's tree over its 8 lanes' maxima (pe_att_scale_max): lane l
 * takes lane l + h's when larger, h = 4, 2, 1. */
static float lanes_max(float l[W])
{
    for (uint32_t h = W / 2u; h >= 1u; h /= 2u)
        for (uint32_t k = 0; k < h; k++)
            if (l[k + h] > l[k]) l[k] = l[k + h];
    return l[0];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define SUM_REGS 8u   /* 16-lane sums kept in registers: up to 128 elements */

enum { KV_F32, KV_F16, KV_I8 };   /* the cache's element type (a constant where inlined) */

/* The first min(left, 8) lanes of an 8-lane register. */
static inline __mmask8 lanes8(uint32_t left)
{
    return (__mmask8)(left >= 8u ? 0xffu : (1u << left) - 1u);
}

/* The lanes of register r (elements 16 r .. 16 r + 15) below n. */
static inline __mmask16 lane_mask(uint32_t n, uint32_t r)
{
    uint32_t left = n > 16u * r ? n - 16u * r : 0u;
    return (__mmask16)(left >= 16u ? 0xffffu : (1u << left) - 1u);
}

/* 16 elements of a row from element i as fp32, lanes outside m as 0: the
 * fp32 values, the halves decoded (VCVTPH2PS is exact, as
 * tsr_f32_from_f16 is; the cache's one NaN, 0x7E00, decodes to the same
 * quiet NaN), or the int8 values converted. */
static inline __attribute__((always_inline)) AVX512 __m512
load16(uint32_t t, const void *row, uint32_t i, __mmask16 m)
{
    if (t == KV_F16)
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + i));
    if (t == KV_I8)
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, (const int8_t *)row + i)));
    return _mm512_maskz_loadu_ps(m, (const float *)row + i);
}

/* One block of n <= 16 nr elements, nr registers (t and nr constants where
 * it is inlined): every row's multiply-add into them, rows in order. */
static inline __attribute__((always_inline)) AVX512 void
sum_block(uint32_t t, uint32_t nr, const void *kv, size_t row_bytes, const float *s, uint32_t no,
          uint32_t n, float *acc)
{
    /* registers before the last are full; the last one's lanes past n
     * are loaded as 0 and never stored */
    __mmask16 last = lane_mask(n, nr - 1u);
    __m512 a[SUM_REGS];
    for (uint32_t r = 0; r < nr; r++) a[r] = _mm512_setzero_ps();
    const char *k = kv;
    for (uint32_t o = 0; o < no; o++, k += row_bytes) {
        __m512 sv = _mm512_set1_ps(s[o]);
        for (uint32_t r = 0; r + 1u < nr; r++)
            a[r] = _mm512_add_ps(a[r], _mm512_mul_ps(sv, load16(t, k, 16u * r, 0xffffu)));
        a[nr - 1u] = _mm512_add_ps(a[nr - 1u], _mm512_mul_ps(sv, load16(t, k, 16u * (nr - 1u), last)));
    }
    for (uint32_t r = 0; r + 1u < nr; r++) _mm512_storeu_ps(acc + 16u * r, a[r]);
    _mm512_mask_storeu_ps(acc + 16u * (nr - 1u), last, a[nr - 1u]);
}

/* parts 1: each element's sum runs over all the rows in order, a
 * dependency chain per element.  att_mac keeps the sums in acc, so each
 * row waits for the previous row's store to come back (store forwarding,
 * then the add); here a block of up to 128 elements keeps its sums in as
 * many 16-lane registers as it needs across the rows, so each row is read
 * once a block.  The same operations, in the same order, per element; the
 * f16 and int8 caches converted as they are loaded (the converted loops'
 * values). */
static inline __attribute__((always_inline)) AVX512 void
mac_sum(uint32_t t, const void *kv, uint32_t stride, const float *s, uint32_t no, uint32_t nj,
        float *acc)
{
    size_t es = t == KV_F32 ? 4u : t == KV_F16 ? 2u : 1u;   /* element bytes */
    for (uint32_t j0 = 0; j0 < nj; j0 += 16u * SUM_REGS) {
        uint32_t n = nj - j0 < 16u * SUM_REGS ? nj - j0 : 16u * SUM_REGS;
        const char *k = (const char *)kv + j0 * es;
        size_t rb = stride * es;
        float *out = acc + j0;
        switch ((n + 15u) / 16u) {   /* each register count its own copy */
        case 1: sum_block(t, 1u, k, rb, s, no, n, out); break;
        case 2: sum_block(t, 2u, k, rb, s, no, n, out); break;
        case 3: sum_block(t, 3u, k, rb, s, no, n, out); break;
        case 4: sum_block(t, 4u, k, rb, s, no, n, out); break;
        case 5: sum_block(t, 5u, k, rb, s, no, n, out); break;
        case 6: sum_block(t, 6u, k, rb, s, no, n, out); break;
        case 7: sum_block(t, 7u, k, rb, s, no, n, out); break;
        default: sum_block(t, 8u, k, rb, s, no, n, out); break;
        }
    }
}

#define SUM_TILES 8u   /* 8-lane sums kept in registers: 8 words, 64 positions */

/* A word of a row as fp32, lanes outside m as 0 (load16's conversions). */
static inline __attribute__((always_inline)) AVX512 __m256
load8(uint32_t t, const void *word, __mmask8 m)
{
    if (t == KV_F16)   /* the 512-bit VCVTPH2PS: AVX-512F, without F16C */
        return _mm512_castps512_ps256(
            _mm512_cvtph_ps(_mm256_zextsi128_si256(_mm_maskz_loadu_epi16(m, word))));
    if (t == KV_I8)
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_maskz_loadu_epi8((__mmask16)m, word)));
    return _mm256_maskz_loadu_ps(m, word);
}

/* One block of n <= 8 nr positions of K^T's position tiles, a register a
 * tile (tiles step_bytes apart, a row's word row_bytes after the previous
 * row's): every row's multiply-add into them, rows in order.  Each tile is
 * read front to back, a contiguous run, and nr of them at once (at most
 * SUM_TILES: each its own stream into the L1). */
static inline __attribute__((always_inline)) AVX512 void
sum_tiles(uint32_t t, uint32_t nr, const void *kv, size_t row_bytes, size_t step_bytes,
          const float *s, uint32_t no, uint32_t n, float *acc)
{
    __mmask8 last = lanes8(n - W * (nr - 1u));
    __m256 a[SUM_TILES];
    for (uint32_t r = 0; r < nr; r++) a[r] = _mm256_setzero_ps();
    const char *k = kv;
    for (uint32_t o = 0; o < no; o++, k += row_bytes) {
        __m256 sv = _mm256_set1_ps(s[o]);
        for (uint32_t r = 0; r + 1u < nr; r++)
            a[r] = _mm256_add_ps(a[r], _mm256_mul_ps(sv, load8(t, k + r * step_bytes, 0xffu)));
        a[nr - 1u] = _mm256_add_ps(a[nr - 1u],
                                   _mm256_mul_ps(sv, load8(t, k + (nr - 1u) * step_bytes, last)));
    }
    for (uint32_t r = 0; r + 1u < nr; r++) _mm256_storeu_ps(acc + W * r, a[r]);
    _mm256_mask_storeu_ps(acc + W * (nr - 1u), last, a[nr - 1u]);
}

/* parts 1 over position tiles (K^T): blocks of up to 8 tiles, each
 * element's chain of adds in registers across the rows, as mac_sum. */
static inline __attribute__((always_inline)) AVX512 void
mac_tiles(uint32_t t, const void *kv, uint32_t stride, uint32_t step, const float *s, uint32_t no,
          uint32_t nj, float *acc)
{
    size_t es = t == KV_F32 ? 4u : t == KV_F16 ? 2u : 1u;   /* element bytes */
    for (uint32_t j0 = 0; j0 < nj; j0 += W * SUM_TILES) {
        uint32_t n = nj - j0 < W * SUM_TILES ? nj - j0 : W * SUM_TILES;
        const char *k = (const char *)kv + (size_t)(j0 / W) * step * es;
        size_t rb = stride * es, sb = step * es;
        float *out = acc + j0;
        switch ((n + W - 1u) / W) {   /* each register count its own copy */
        case 1: sum_tiles(t, 1u, k, rb, sb, s, no, n, out); break;
        case 2: sum_tiles(t, 2u, k, rb, sb, s, no, n, out); break;
        case 3: sum_tiles(t, 3u, k, rb, sb, s, no, n, out); break;
        case 4: sum_tiles(t, 4u, k, rb, sb, s, no, n, out); break;
        case 5: sum_tiles(t, 5u, k, rb, sb, s, no, n, out); break;
        case 6: sum_tiles(t, 6u, k, rb, sb, s, no, n, out); break;
        case 7: sum_tiles(t, 7u, k, rb, sb, s, no, n, out); break;
        default: sum_tiles(t, 8u, k, rb, sb, s, no, n, out); break;
        }
    }
}

/* Rows stored whole (step W) or position tiles, per cache type. */
#define MAC_SUM_OF(t)                                         \
    if (step == W) mac_sum((t), kv, stride, s, no, nj, acc); \
    else mac_tiles((t), kv, stride, step, s, no, nj, acc)

static AVX512 void mac_sum_f32(const float *kv, uint32_t stride, uint32_t step, const float *s,
                               uint32_t no, uint32_t nj, float *acc)
{
    MAC_SUM_OF(KV_F32);
}

static AVX512 void mac_sum_f16(const uint16_t *kv, uint32_t stride, uint32_t step, const float *s,
                               uint32_t no, uint32_t nj, float *acc)
{
    MAC_SUM_OF(KV_F16);
}

static AVX512 void mac_sum_i8(const int8_t *kv, uint32_t stride, uint32_t step, const float *s,
                              uint32_t no, uint32_t nj, float *acc)
{
    MAC_SUM_OF(KV_I8);
}

/* 16 at a time by VCVTPS2PH, round to nearest even, which is
 * tsr_f16_from_f32's rounding, overflow to infinity and subnormals; its
 * NaN keeps the input's sign and payload, so a NaN lane takes the
 * kernel's one NaN, 0x7E00, instead. */
static AVX512 void f16_encode_avx512(const float *x, uint16_t *h, uint32_t n)
{
    for (uint32_t i = 0; i < n; i += 16u) {
        __mmask16 m = lane_mask(n - i, 0u);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __m256i r = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        r = _mm256_mask_blend_epi16(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r,
                                    _mm256_set1_epi16(0x7E00));
        _mm256_mask_storeu_epi16(h + i, m, r);
    }
}

/* Scores scaled and their max, 8 positions a register (lane l: positions
 * l mod 8, as the kernel's lanes), then the kernel's tree of the 8. */
static AVX512 float scale_max_avx512(const float *acc, const float *ks, float sqrt_hs, float *att,
                                     uint32_t nl)
{
    __m256 lm = _mm256_set1_ps(-FLT_MAX), d = _mm256_set1_ps(sqrt_hs);
    for (uint32_t t = 0; t < nl; t += 8u) {
        __mmask8 m = lanes8(nl - t);
        __m256 v = _mm256_maskz_loadu_ps(m, acc + t);
        if (ks) v = _mm256_mul_ps(v, _mm256_maskz_loadu_ps(m, ks + t));
        v = _mm256_div_ps(v, d);
        _mm256_mask_storeu_ps(att + t, m, v);
        lm = _mm256_mask_blend_ps(_mm256_mask_cmp_ps_mask(m, v, lm, _CMP_GT_OQ), lm, v);
    }
    float l[8];
    _mm256_storeu_ps(l, lm);
    return lanes_max(l);
}

static AVX512 void norm_avx512(const float *att, const float *vs, float sum, float *coef,
                               uint32_t nl)
{
    __m256 d = _mm256_set1_ps(sum);
    for (uint32_t t = 0; t < nl; t += 8u) {
        __mmask8 m = lanes8(nl - t);
        __m256 w = _mm256_div_ps(_mm256_maskz_loadu_ps(m, att + t), d);
        if (vs) w = _mm256_mul_ps(w, _mm256_maskz_loadu_ps(m, vs + t));
        _mm256_mask_storeu_ps(coef + t, m, w);
    }
}

#define AVX2 __attribute__((target("avx2")))

/* The same loops with AVX2, whole groups of 8 (the rest as the scalar
 * loops, from the returned t); scale_max_avx2 leaves the lanes' maxima in
 * l for the rest to update. */
static AVX2 uint32_t scale_max_avx2(const float *acc, const float *ks, float sqrt_hs, float *att,
                                    uint32_t nl, float l[W])
{
    __m256 lm = _mm256_set1_ps(-FLT_MAX), d = _mm256_set1_ps(sqrt_hs);
    uint32_t t = 0;
    for (; t + 8u <= nl; t += 8u) {
        __m256 v = _mm256_loadu_ps(acc + t);
        if (ks) v = _mm256_mul_ps(v, _mm256_loadu_ps(ks + t));
        v = _mm256_div_ps(v, d);
        _mm256_storeu_ps(att + t, v);
        lm = _mm256_blendv_ps(lm, v, _mm256_cmp_ps(v, lm, _CMP_GT_OQ));
    }
    _mm256_storeu_ps(l, lm);
    return t;
}

static AVX2 uint32_t norm_avx2(const float *att, const float *vs, float sum, float *coef,
                               uint32_t nl)
{
    __m256 d = _mm256_set1_ps(sum);
    uint32_t t = 0;
    for (; t + 8u <= nl; t += 8u) {
        __m256 w = _mm256_div_ps(_mm256_loadu_ps(att + t), d);
        if (vs) w = _mm256_mul_ps(w, _mm256_loadu_ps(vs + t));
        _mm256_storeu_ps(coef + t, w);
    }
    return t;
}

/* The same register sums with AVX2 (an AVX2-only CPU, or simd=avx2), for
 * the fp32 cache: 8-lane registers, up to SUM_TILES of them, each
 * reg_step floats after the previous (8 for rows stored whole, the tile
 * step for K^T's position tiles); every row's multiply-add into them,
 * rows in order, 0 + s[0] k first as att_mac's: the same operations per
 * element.  A block's last register loads and stores its first lanes
 * only (VMASKMOVPS). */
#define AVX2R __attribute__((target("avx2")))

static inline __attribute__((always_inline)) AVX2R void
sum_regs8(uint32_t nr, const float *kv, size_t row_floats, size_t reg_step, const float *s,
          uint32_t no, uint32_t n, float *acc)
{
    __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - W * (nr - 1u))),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 a[SUM_TILES];
    for (uint32_t r = 0; r < nr; r++) a[r] = _mm256_setzero_ps();
    const float *k = kv;
    for (uint32_t o = 0; o < no; o++, k += row_floats) {
        __m256 sv = _mm256_set1_ps(s[o]);
        for (uint32_t r = 0; r + 1u < nr; r++)
            a[r] = _mm256_add_ps(a[r], _mm256_mul_ps(sv, _mm256_loadu_ps(k + r * reg_step)));
        a[nr - 1u] = _mm256_add_ps(a[nr - 1u], _mm256_mul_ps(sv, _mm256_maskload_ps(
                                                                     k + (nr - 1u) * reg_step, last)));
    }
    for (uint32_t r = 0; r + 1u < nr; r++) _mm256_storeu_ps(acc + W * r, a[r]);
    _mm256_maskstore_ps(acc + W * (nr - 1u), last, a[nr - 1u]);
}

static AVX2R void mac_sum_f32_avx2(const float *kv, uint32_t stride, uint32_t step, const float *s,
                                   uint32_t no, uint32_t nj, float *acc)
{
    for (uint32_t j0 = 0; j0 < nj; j0 += W * SUM_TILES) {
        uint32_t n = nj - j0 < W * SUM_TILES ? nj - j0 : W * SUM_TILES;
        /* rows stored whole: registers W floats apart; tiles: step apart */
        const float *k = kv + (step == W ? j0 : (size_t)(j0 / W) * step);
        size_t rs = step == W ? W : step;
        float *out = acc + j0;
        switch ((n + W - 1u) / W) {   /* each register count its own copy */
        case 1: sum_regs8(1u, k, stride, rs, s, no, n, out); break;
        case 2: sum_regs8(2u, k, stride, rs, s, no, n, out); break;
        case 3: sum_regs8(3u, k, stride, rs, s, no, n, out); break;
        case 4: sum_regs8(4u, k, stride, rs, s, no, n, out); break;
        case 5: sum_regs8(5u, k, stride, rs, s, no, n, out); break;
        case 6: sum_regs8(6u, k, stride, rs, s, no, n, out); break;
        case 7: sum_regs8(7u, k, stride, rs, s, no, n, out); break;
        default: sum_regs8(8u, k, stride, rs, s, no, n, out); break;
        }
    }
}

/* The register sums take parts 1 (partials > 1 keep the converted loops). */
#define SUM_PATH(parts, no) \
    ((parts) == 1u && (no) > 0u && tsr_emu_vec_level() >= TSR_EMU_VEC_AVX512)
#endif

void tsr_emu_att_mac(const float *kv, uint32_t stride, uint32_t step, const float *s, uint32_t no,
                     uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (SUM_PATH(parts, no)) {
        mac_sum_f32(kv, stride, step, s, no, nj, acc);
        return;
    }
    if (parts == 1u && no > 0u && tsr_emu_vec_level() == TSR_EMU_VEC_AVX2) {
        mac_sum_f32_avx2(kv, stride, step, s, no, nj, acc);
        return;
    }
#endif
    att_mac(kv, stride, step, s, no, nj, parts, acc, acc_stride);
}

/* A converted row at a time (its elements gathered from its words), then
 * the fp32 loop's own operations. */
#define ATT_MAC_CONVERTED(CONVERT)                                                        \
    float row[ROW_MAX];                                                                   \
    for (uint32_t j0 = 0; j0 < nj; j0 += ROW_MAX) {                                       \
        uint32_t n = nj - j0 < ROW_MAX ? nj - j0 : ROW_MAX;                               \
        for (uint32_t o = 0; o < no; o++) {                                               \
            const __typeof__(kv) k = kv + (size_t)o * stride;                             \
            for (uint32_t j = 0; j < n; j++)                                              \
                row[j] = CONVERT(k[(size_t)((j0 + j) / W) * step + (j0 + j) % W]);        \
            float *a = acc + (size_t)(o % parts) * acc_stride + j0, sv = s[o];            \
            if (o < parts)                                                                \
                for (uint32_t j = 0; j < n; j++) a[j] = 0.0f + sv * row[j];               \
            else                                                                          \
                for (uint32_t j = 0; j < n; j++) a[j] = a[j] + sv * row[j];               \
        }                                                                                 \
    }

#define I8_TO_F32(v) ((float)(v))

void tsr_emu_att_mac_f16(const uint16_t *kv, uint32_t stride, uint32_t step, const float *s,
                         uint32_t no, uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (SUM_PATH(parts, no)) {
        mac_sum_f16(kv, stride, step, s, no, nj, acc);
        return;
    }
#endif
    ATT_MAC_CONVERTED(tsr_f32_from_f16)
}

void tsr_emu_att_mac_i8(const int8_t *kv, uint32_t stride, uint32_t step, const float *s,
                         uint32_t no, uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (SUM_PATH(parts, no)) {
        mac_sum_i8(kv, stride, step, s, no, nj, acc);
        return;
    }
#endif
    ATT_MAC_CONVERTED(I8_TO_F32)
}

void tsr_emu_f16_encode(const float *x, uint16_t *h, uint32_t n)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (tsr_emu_vec_level() >= TSR_EMU_VEC_AVX512) {
        f16_encode_avx512(x, h, n);
        return;
    }
#endif
    for (uint32_t i = 0; i < n; i++) h[i] = tsr_f16_from_f32(x[i]);
}

void tsr_emu_prefetch_runs(const void *p, uint32_t n, size_t stride, size_t bytes)
{
    const char *r = p;
    for (uint32_t i = 0; bytes && i < n; i++, r += stride) {
        /* every line of [r, r + bytes), from the line r is in */
        uintptr_t a = (uintptr_t)r & ~(uintptr_t)(TSR_EMU_LINE - 1u), z = (uintptr_t)r + bytes;
        for (; a < z; a += TSR_EMU_LINE) __builtin_prefetch((const void *)a, 0, 2);   /* T1 */
    }
}

float tsr_emu_att_scale_max(const float *acc, const float *ks, float sqrt_hs, float *att,
                            uint32_t nl)
{
    float l[W];
    uint32_t t = 0;
    for (uint32_t k = 0; k < W; k++) l[k] = -FLT_MAX;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    int v = tsr_emu_vec_level();
    if (v == TSR_EMU_VEC_AVX512) return scale_max_avx512(acc, ks, sqrt_hs, att, nl);
    if (v == TSR_EMU_VEC_AVX2) t = scale_max_avx2(acc, ks, sqrt_hs, att, nl, l);
#endif
    for (; t < nl; t++) {
        float v = acc[t];
        if (ks) v = v * ks[t];
        att[t] = v / sqrt_hs;
        if (att[t] > l[t % W]) l[t % W] = att[t];
    }
    return lanes_max(l);
}

void tsr_emu_att_norm(const float *att, const float *vs, float sum, float *coef, uint32_t nl)
{
    uint32_t t = 0;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    int v = tsr_emu_vec_level();
    if (v == TSR_EMU_VEC_AVX512) {
        norm_avx512(att, vs, sum, coef, nl);
        return;
    }
    if (v == TSR_EMU_VEC_AVX2) t = norm_avx2(att, vs, sum, coef, nl);
#endif
    for (; t < nl; t++) {
        float w = att[t] / sum;
        if (vs) w = w * vs[t];
        coef[t] = w;
    }
}
