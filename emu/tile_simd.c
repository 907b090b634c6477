/*
 * tile_simd.c - AVX2 rows of the Q8_0 tile product (see tsr_emu.h).
 *
 * Eight rows at a time:
 *
 *   per row r, group g:  |w| (u8) x sign(x, w) (s8)  --vpmaddubsw-->  16 x s16
 *                        --vpmaddwd by 1-->  8 x s32 partial sums      (exact)
 *   8 rows' partials     --vphaddd tree + lane swap-->  isum (8 rows,)  (exact)
 *   acc (8 rows,) += ((float)isum * ws[:, g]) * xs[g]    (per-lane fp32,
 *                                                          the loop's order)
 *
 * |w| * (x * sign(w)) = w * x for every int8 w and every x in -127..127;
 * each pair sum is at most 2 * 128 * 127 = 32512, so vpmaddubsw never
 * saturates.  Integer sums are exact in any order, and the fp32 operations
 * are the portable loop's, one row per lane, so the result is bit-identical
 * to kernels/mesh.c pe_tile_q8.  (Built without -ffp-contract: no FMA.)
 */
#include <stddef.h>

#include "tsr_emu.h"

#if defined(TSR_EMU_SIMD) && TSR_EMU_SIMD && defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))


/* 8 int32 partial sums of one row's group: w (G,) . x (G,), G = 32 or 64. */
static inline AVX2 __m256i group_dot(const int8_t *w, __m256i x0, __m256i x1, uint32_t G)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)w);
    __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w0),
                                                       _mm256_sign_epi8(x0, w0)), ones);
    if (G == 64) {
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 32));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w1),
                                                  _mm256_sign_epi8(x1, w1)), ones));
    }
    return s;
}

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

/* Per chunk of up to CHUNK_GROUPS groups: each row's slices in address
 * order, partial sums parked on the stack, then the fp32 part.  One
 * ascending stream through the block keeps the hardware prefetchers ahead:
 * interleaving the 8 rows group by group, all in registers, took fewer
 * instructions but ran at about 0.6x from DRAM (stories110M shape) and was
 * no faster on stories15M, whose weights share the L3 with the machine's
 * other tenants.  Groups per pass: 8 x 16 partial vectors = 4 KB. */
#define CHUNK_GROUPS 16u

static AVX2 uint32_t tile_q8_rows(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                                  uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    size_t rb = (size_t)ng * G;   /* bytes per row */
    const __m256i sidx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32((int)ng));
    __m256i part[8][CHUNK_GROUPS];   /* (row, group) partial sums of a chunk */
    uint32_t i = 0;
    for (; i + 8u <= rows; i += 8u) {
        const int8_t *w = w8 + (size_t)i * rb;   // (8, ng*G)
        const float *s = ws + (size_t)i * ng;    // (8, ng)
        __m256 acc = _mm256_setzero_ps();
        for (uint32_t g0 = 0; g0 < ng; g0 += CHUNK_GROUPS) {
            uint32_t gn = ng - g0 < CHUNK_GROUPS ? ng - g0 : CHUNK_GROUPS;
            /* integer part, each row's groups in address order: one
             * sequential stream through the block, which the hardware
             * prefetchers follow (interleaving the 8 rows per group ran
             * at about half the DRAM bandwidth) */
            for (uint32_t r = 0; r < 8u; r++) {
                const int8_t *wr = w + r * rb + (size_t)g0 * G;
                for (uint32_t g = 0; g < gn; g++) {
                    const int8_t *x = xq + (size_t)(g0 + g) * G;
                    __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)x);
                    __m256i x1 = G == 64 ? _mm256_loadu_si256((const __m256i *)(const void *)(x + 32))
                                         : x0;
                    part[r][g] = group_dot(wr + (size_t)g * G, x0, x1, G);
                }
            }
            /* fp32 part, groups ascending: the portable loop's order */
            for (uint32_t g = 0; g < gn; g++) {
                __m256i isum = sum8(part[0][g], part[1][g], part[2][g], part[3][g], part[4][g],
                                    part[5][g], part[6][g], part[7][g]);
                __m256 sc = _mm256_i32gather_ps(s + g0 + g, sidx, 4);
                __m256 p = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(isum), sc),
                                         _mm256_set1_ps(xs[g0 + g]));
                acc = _mm256_add_ps(acc, p);
            }
        }
        _mm256_storeu_ps(psum + i, acc);
    }
    return i;
}

int tsr_emu_simd_available(void)
{
    static int have = -1;   /* -1: not asked yet; any thread may ask */
    int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&have, h, __ATOMIC_RELAXED);
    }
    return h;
}

uint32_t tsr_emu_tile_q8(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                         uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    if ((G != 32 && G != 64) || !tsr_emu_simd_available()) return 0;
    return G == 32 ? tile_q8_rows(w8, ws, rows, ng, 32, xq, xs, psum)
                   : tile_q8_rows(w8, ws, rows, ng, 64, xq, xs, psum);
}

#else /* built without the SIMD rows */

int tsr_emu_simd_available(void) { return 0; }

uint32_t tsr_emu_tile_q8(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                         uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    (void)w8; (void)ws; (void)rows; (void)ng; (void)G; (void)xq; (void)xs; (void)psum;
    return 0;
}

#endif
