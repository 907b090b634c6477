/*
 * tile_simd.c - AVX2 / AVX-VNNI blocks of the Q8_0 and F32 tile products
 * (see tsr_emu.h), in the layout the PEs read (kernels/tsr_layout.h):
 * a block of 8 rows stores, per group, the 8 rows' entries one after the
 * other, so a block is one ascending stream and its 8 scales of a group
 * are one vector load.
 *
 *   per group g:  8 rows x |w| (u8) . sign(x, w) (s8)  -> 8 x 8 int32 partials
 *                 (vpdpbusd, or vpmaddubsw + vpmaddwd)                 (exact)
 *                 vphaddd tree -> isum (8 rows,)                        (exact)
 *                 acc (8 rows,) += ((float)isum * ws[g, :]) * xs[g]   (per lane,
 *                                                          the loop's order)
 *
 * |w| * (x * sign(w)) = w * x for every int8 w and every x in -127..127;
 * each pair sum of vpmaddubsw is at most 2 * 128 * 127 = 32512, so it never
 * saturates, and vpdpbusd accumulates in int32 without saturation.  Integer
 * sums are exact in any order, and the fp32 operations are the portable
 * loop's, one row per lane, so the result is bit-identical to
 * kernels/mesh.c pe_tile_q8 (built without -ffp-contract: no FMA).
 */
#include <stddef.h>

#include "tsr_emu.h"

#if defined(TSR_EMU_SIMD) && TSR_EMU_SIMD && defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define VNNI __attribute__((target("avx2,avxvnni")))

/* Lane sums of v0..v7 -> (S0, ..., S7). */
static inline AVX2 __m256i sum8(__m256i v0, __m256i v1, __m256i v2, __m256i v3, __m256i v4,
                                __m256i v5, __m256i v6, __m256i v7)
{
    __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
    __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v4, v5), _mm256_hadd_epi32(v6, v7));
    /* a = [S0..S3 low halves | S0..S3 high halves], b likewise for S4..S7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                            _mm256_permute2x128_si256(a, b, 0x31));
}

/* 8 int32 partials of w (32,) . x (32,) added to acc. */
static inline AVX2 __m256i dot32_avx2(__m256i acc, const int8_t *w, __m256i x)
{
    __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)w);
    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w0), _mm256_sign_epi8(x, w0)),
                                  _mm256_set1_epi16(1));
    return _mm256_add_epi32(acc, p);
}

static inline VNNI __m256i dot32_vnni(__m256i acc, const int8_t *w, __m256i x)
{
    __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)w);
    return _mm256_dpbusd_avx_epi32(acc, _mm256_abs_epi8(w0), _mm256_sign_epi8(x, w0));
}

/* The blocks of one tile, G = 32 or 64 (KG = G / 32 words a group). */
#define TILE_Q8_BODY(DOT)                                                                  \
    uint32_t nb = rows / 8u;                                                               \
    for (uint32_t b = 0; b < nb; b++) {                                                    \
        const int8_t *wb = w8 + (size_t)b * 8u * ng * G;   /* (ng, 8, G) */                \
        const float *sb = ws + (size_t)b * 8u * ng;        /* (ng, 8)    */                \
        __m256 acc = _mm256_setzero_ps();                                                  \
        for (uint32_t g = 0; g < ng; g++) {                                                \
            const int8_t *x = xq + (size_t)g * G, *e = wb + (size_t)g * 8u * G;            \
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)x);            \
            __m256i p[8];                                                                  \
            for (uint32_t j = 0; j < 8u; j++) p[j] = DOT(_mm256_setzero_si256(), e + j * G, x0); \
            if (G == 64) {                                                                 \
                __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(x + 32));  \
                for (uint32_t j = 0; j < 8u; j++) p[j] = DOT(p[j], e + j * G + 32, x1);    \
            }                                                                              \
            __m256i isum = sum8(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);           \
            __m256 sc = _mm256_loadu_ps(sb + (size_t)g * 8u);                              \
            __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(isum), sc),          \
                                     _mm256_set1_ps(xs[g]));                               \
            acc = _mm256_add_ps(acc, v);                                                   \
        }                                                                                  \
        _mm256_storeu_ps(psum + (size_t)b * 8u, acc);                                      \
    }                                                                                      \
    return nb;

static AVX2 uint32_t tile_q8_avx2(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                                  uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    TILE_Q8_BODY(dot32_avx2)
}

static VNNI uint32_t tile_q8_vnni(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                                  uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    TILE_Q8_BODY(dot32_vnni)
}

static int cpu_has(int *cache, const char *what)
{
    int h = __atomic_load_n(cache, __ATOMIC_RELAXED);   /* -1: not asked yet */
    if (h < 0) {
        __builtin_cpu_init();
        h = !__builtin_strcmp(what, "avx2") ? __builtin_cpu_supports("avx2") != 0
                                            : __builtin_cpu_supports("avxvnni") != 0;
        __atomic_store_n(cache, h, __ATOMIC_RELAXED);
    }
    return h;
}

int tsr_emu_simd_available(void)
{
    static int have = -1;
    return cpu_has(&have, "avx2");
}

static int vnni_available(void)
{
    static int have = -1;
    return cpu_has(&have, "avxvnni");
}

uint32_t tsr_emu_tile_q8(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                         uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    if ((G != 32 && G != 64) || !tsr_emu_simd_available()) return 0;
    if (vnni_available()) return tile_q8_vnni(w8, ws, rows, ng, G, xq, xs, psum);
    return tile_q8_avx2(w8, ws, rows, ng, G, xq, xs, psum);
}

static AVX2 uint32_t tile_f32_avx2(const float *wf, uint32_t rows, uint32_t cols,
                                   const float *xf, float *psum)
{
    uint32_t nb = rows / 8u;
    for (uint32_t b = 0; b < nb; b++) {
        const float *w = wf + (size_t)b * 8u * cols;   /* (cols, 8) */
        __m256 acc = _mm256_setzero_ps();
        for (uint32_t c = 0; c < cols; c++)
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(w + (size_t)c * 8u),
                                                   _mm256_set1_ps(xf[c])));
        _mm256_storeu_ps(psum + (size_t)b * 8u, acc);
    }
    return nb;
}

uint32_t tsr_emu_tile_f32(const float *wf, uint32_t rows, uint32_t cols, const float *xf,
                          float *psum)
{
    if (!tsr_emu_simd_available()) return 0;
    return tile_f32_avx2(wf, rows, cols, xf, psum);
}

#else /* built without the SIMD rows */

int tsr_emu_simd_available(void) { return 0; }

uint32_t tsr_emu_tile_q8(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                         uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    (void)w8; (void)ws; (void)rows; (void)ng; (void)G; (void)xq; (void)xs; (void)psum;
    return 0;
}

uint32_t tsr_emu_tile_f32(const float *wf, uint32_t rows, uint32_t cols, const float *xf,
                          float *psum)
{
    (void)wf; (void)rows; (void)cols; (void)xf; (void)psum;
    return 0;
}

#endif
