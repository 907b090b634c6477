/*
 * tile_simd.c - AVX2 / AVX-VNNI / AVX-512 VNNI blocks of the Q8_0, Q4_0 and F32 tile
 * products (see tsr_emu.h), in the layout the PEs read (kernels/tsr_layout.h):
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
 * Q4_0 rows are widened first: a row's 16 bytes become its 32 values,
 * (low nibbles, high nibbles) - 8 in -8..7, and then go through the same
 * int8 products (the one-item rows and the several-item GEMM below alike).
 *
 * |w| * (x * sign(w)) = w * x for every int8 w and every x in -127..127;
 * each pair sum of vpmaddubsw is at most 2 * 128 * 127 = 32512, so it never
 * saturates, and vpdpbusd accumulates in int32 without saturation.  Integer
 * sums are exact in any order, and the fp32 operations are the portable
 * loop's, one row per lane, so the result is bit-identical to
 * kernels/mesh.c pe_tile_q8 (built without -ffp-contract: no FMA).
 *
 * On CPUs with AVX-512 VNNI the emulator keeps Q8_0 tiles at G = 32 as
 * transposed units instead (tsr_emu.h): tsr_emu_tile_q8t below, the same
 * sums and fp32 operations from one 64-byte load per 8 rows' dword pair.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_emu.h"

int32_t tsr_emu_wcorr(const int8_t *w, uint32_t G)
{
    int32_t sum = 0;
    for (uint32_t i = 0; i < G; i++) sum += w[i];
    return 128 * sum;
}

int32_t tsr_emu_wcorr_q4(const int8_t *w)
{
    int32_t sum = 0;
    for (uint32_t i = 0; i < 16u; i++) {
        uint32_t b = (uint8_t)w[i];
        sum += (int32_t)(b & 15u) - 8 + (int32_t)(b >> 4) - 8;
    }
    return 128 * sum;
}

void tsr_emu_tile_q8t_plain(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                            const int8_t *x, const float *xs, float *psum)
{
    for (uint32_t b = 0; b < nb; b++)
        for (uint32_t r = 0; r < 8u; r++) {
            float acc = 0.0f;
            for (uint32_t g = 0; g < ng; g++) {
                const uint8_t *u = w8 + ((size_t)b * ng + g) * TSR_EMU_TR_UNIT;
                int32_t isum = 0;
                for (uint32_t l = 0; l < 32u; l++)
                    isum += (int32_t)(int8_t)(u[tsr_emu_tr_byte(r * 32u + l)] ^ 0x80u) *
                            (int32_t)x[(size_t)g * 32u + l];
                acc += (float)isum * ws[((size_t)b * ng + g) * 8u + r] * xs[g];
            }
            psum[(size_t)b * 8u + r] = acc;
        }
}

uint64_t tsr_emu_next_key(void)
{
    static uint64_t last;
    return __atomic_add_fetch(&last, 1u, __ATOMIC_RELAXED);
}

/* Bytes of the 8 row scales (fp32) of the units in TSR_EMU_TILE_AHEAD
 * bytes of weights: how far ahead the scale stream is prefetched. */
#define TR_SCALES_AHEAD (TSR_EMU_TILE_AHEAD / TSR_EMU_TR_UNIT * 8u * sizeof(float))

void tsr_emu_tile_q8t_head(const uint8_t *w8, const float *ws, uint32_t rows, uint32_t ng)
{
    size_t units = (size_t)(rows / 8u) * ng;
    size_t wb = units * TSR_EMU_TR_UNIT, sb = units * 8u * sizeof(float);
    if (wb > TSR_EMU_TILE_AHEAD) wb = TSR_EMU_TILE_AHEAD;
    if (sb > TR_SCALES_AHEAD) sb = TR_SCALES_AHEAD;
    tsr_emu_prefetch_runs(w8, 1u, 0u, wb);
    tsr_emu_prefetch_runs(ws, 1u, 0u, sb);
}

#if defined(TSR_EMU_SIMD) && TSR_EMU_SIMD && defined(__x86_64__)
#include <immintrin.h>

/* The weight stream is prefetched PREFETCH_AHEAD bytes ahead of the group
 * being read, into L2 (_MM_HINT_T1), a cache line a prefetch.  A tile that
 * does not fit the caches streams from DRAM, and the hardware prefetchers,
 * which stop at page boundaries, keep too few lines in flight for it: on
 * the 110M shape (123 MB of tiles) decode went from about 100 to 150-200
 * tokens/s at 2 threads with this, and from 16 KB up the distance made
 * little difference (docs/emulator.md).  A prefetch past the tile's end
 * reads ahead into the next (prefetches never fault: Intel SDM,
 * PREFETCHh). */
#define PREFETCH_AHEAD TSR_EMU_TILE_AHEAD
#define PREFETCH_GROUP(wg, bytes)                                               \
    for (uint32_t pf = 0; pf < (bytes); pf += 64u)                              \
    _mm_prefetch((const char *)(wg) + PREFETCH_AHEAD + pf, _MM_HINT_T1)
/* A transposed unit's weights (TSR_EMU_TR_UNIT bytes at u) and, as far
 * ahead in the stream, its 8 rows' scales (at sg, 8 floats a unit: a line
 * every other unit).  The scales sit on 4 KB pages apart from the weights, so
 * the hardware prefetchers stop at each page's end, and a unit that waits
 * on a scale's miss has nothing else to do once its dot products are not
 * memory-bound (several items).  No loss measured, possibly 2-8 % more
 * batch tokens/s (docs/emulator.md, "Prefetch"). */
#define PREFETCH_UNIT(u, sg)                                                    \
    do {                                                                        \
        PREFETCH_GROUP(u, TSR_EMU_TR_UNIT);                                     \
        _mm_prefetch((const char *)(sg) + TR_SCALES_AHEAD, _MM_HINT_T1);        \
    } while (0)

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

/* Rows j and j + 1 of a Q4_0 group: 32 bytes, two 16-byte entries -> two
 * rows of 32 int8 values (nibble - 8, low nibbles first). */
static inline AVX2 void q4_rows(const int8_t *e, __m256i *r0, __m256i *r1)
{
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)e);
    __m256i m = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(8);
    __m256i lo = _mm256_sub_epi8(_mm256_and_si256(v, m), eight);
    __m256i hi = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 4), m), eight);
    *r0 = _mm256_permute2x128_si256(lo, hi, 0x20);   /* row j: lo[0..15], hi[0..15]   */
    *r1 = _mm256_permute2x128_si256(lo, hi, 0x31);   /* row j + 1: the upper halves */
}

/* A Q4_0 group's 8 entries (8 x 16 bytes at e) widened into wide (8 x 32
 * int8, Q8_0's layout at G = 32); returns wide. */
static inline AVX2 const int8_t *q4_widen(const int8_t *e, int8_t *wide)
{
    for (uint32_t j = 0; j < 8u; j += 2u) {
        __m256i r0, r1;
        q4_rows(e + j * 16u, &r0, &r1);
        _mm256_storeu_si256((__m256i *)(void *)(wide + j * 32u), r0);
        _mm256_storeu_si256((__m256i *)(void *)(wide + (j + 1u) * 32u), r1);
    }
    return wide;
}

/* The blocks of one tile, G = 32 or 64 (KG = G / 32 words a group); EB
 * bytes an entry in w8 (G, or 16 for Q4_0, whose groups are widened
 * first: ROWS(e) gives a group's 8 rows of G int8 values from its first
 * entry e). */
#define TILE_BODY(DOT, EB, ROWS)                                                           \
    uint32_t nb = rows / 8u;                                                               \
    int8_t wide[8 * 32];                                                                   \
    (void)wide;                                                                            \
    for (uint32_t b = 0; b < nb; b++) {                                                    \
        const int8_t *wb = w8 + (size_t)b * 8u * ng * (EB);   /* (ng, 8, EB) */            \
        const float *sb = ws + (size_t)b * 8u * ng;           /* (ng, 8)     */            \
        __m256 acc = _mm256_setzero_ps();                                                  \
        for (uint32_t g = 0; g < ng; g++) {                                                \
            PREFETCH_GROUP(wb + (size_t)g * 8u * (EB), 8u * (EB));                         \
            const int8_t *x = xq + (size_t)g * G, *e = ROWS(wb + (size_t)g * 8u * (EB));   \
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

#define Q8_ROWS(e) (e)
#define Q4_ROWS(e) q4_widen((e), wide)

static AVX2 uint32_t tile_q8_avx2(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                                  uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    TILE_BODY(dot32_avx2, G, Q8_ROWS)
}

static VNNI uint32_t tile_q8_vnni(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                                  uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    TILE_BODY(dot32_vnni, G, Q8_ROWS)
}

/* Q4_0: w8 the tile's 16-byte entries, G 32. */
static AVX2 uint32_t tile_q4_avx2(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                                  uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    TILE_BODY(dot32_avx2, 16u, Q4_ROWS)
}

static VNNI uint32_t tile_q4_vnni(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                                  uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    TILE_BODY(dot32_vnni, 16u, Q4_ROWS)
}

/* ---- several items without AVX-512: a GEMM in 8-bit products (AVX2) ---- */

/* The tile's full 8-row blocks times nx items, G = 32 or 64 (Q4_0: q4 1,
 * G 32), without AVX-512 VNNI: the maddubs / madd pattern.  Each block's
 * group is transposed as int8 (no widening), so that a register holds one
 * dword of the group for all 8 rows: wt[g][c] (8 rows,) = w[j][4c..4c+3],
 * kept as it is (the signs) and as |w| (vpabsb: -128 becomes 128 as an
 * unsigned byte).  Per group and dword c, for an item whose dword c is
 * broadcast as xb:
 *
 *   vpsignb   xb by wt          x * sign(w), -127..127           (exact)
 *   vpmaddubsw |wt| (u8) by it  |w| x sign(w) = w x, pairs summed into
 *                               int16: at most 2 x 128 x 127 = 32512,
 *                               so it never saturates             (exact)
 *   vpmaddwd  by 1              row j's 4 products in lane j (int32)
 *
 * and the 8 rows' sums of a group build up in one register a lane a row,
 * with no horizontal sums, four items to one load of wt[g][c].  The
 * integer sums are exact (in any order: dot32's) and the fp32 operations
 * are TILE_BODY's item by item: bit-identical to tile_one, and so to
 * pe_tile_q8 / pe_tile_q4, for every item.  It replaced a GEMM of int16
 * products (the inputs and each block widened to int16, vpmaddwd of a
 * broadcast pair): that one's widening and twice the transposition cost
 * more than the vpsignb a dword saved, 39-48 against 50-55 GMAC/s at 8 to
 * 64 items and 16-35 against 35-47 at 2 to 8 (docs/benchmarks.md).
 *
 *   scratch: bwt (ng, G / 4, 2) 32-byte registers, one block's weights
 *            (wt, then |wt|). */

/* Rows r[0..7] (8 dwords each) -> t[c] (8 rows,) their dword c. */
static inline AVX2 void transpose8x8(const __m256i r[8], __m256i t[8])
{
    __m256i a[8], b[8];
    for (uint32_t k = 0; k < 4u; k++) {
        a[2 * k] = _mm256_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm256_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    for (uint32_t k = 0; k < 2u; k++) {   /* rows 4k..4k+3: dwords (0|4) (1|5) (2|6) (3|7) */
        b[4 * k + 0] = _mm256_unpacklo_epi64(a[4 * k], a[4 * k + 2]);
        b[4 * k + 1] = _mm256_unpackhi_epi64(a[4 * k], a[4 * k + 2]);
        b[4 * k + 2] = _mm256_unpacklo_epi64(a[4 * k + 1], a[4 * k + 3]);
        b[4 * k + 3] = _mm256_unpackhi_epi64(a[4 * k + 1], a[4 * k + 3]);
    }
    for (uint32_t c = 0; c < 4u; c++) {
        t[c] = _mm256_permute2x128_si256(b[c], b[4 + c], 0x20);
        t[c + 4] = _mm256_permute2x128_si256(b[c], b[4 + c], 0x31);
    }
}

/* A group's 8 rows (G int8 values each, row j at e + j * G) -> bw (G / 4
 * pairs of registers: dword c of the 8 rows, as it is and as |w|). */
static inline AVX2 void block_group8(const int8_t *e, uint32_t G, __m256i *bw)
{
    for (uint32_t h = 0; h < G / 32u; h++) {   /* 32 values: 8 dwords */
        __m256i r[8], t[8];
        for (uint32_t j = 0; j < 8u; j++)
            r[j] = _mm256_loadu_si256((const __m256i *)(const void *)(e + j * G + h * 32u));
        transpose8x8(r, t);
        for (uint32_t c = 0; c < 8u; c++) {
            _mm256_store_si256(bw + 2u * (h * 8u + c), t[c]);
            _mm256_store_si256(bw + 2u * (h * 8u + c) + 1u, _mm256_abs_epi8(t[c]));
        }
    }
}

/* NI items' (x[i], xs[i]) sums of one block into out[i], NC dwords a
 * group (NI and NC constants where it is inlined: the items' sums stay in
 * registers; the dword loop unrolled by 2). */
#define GEMM8_ITEMS 4u   /* items a pass (5 and 6 measured the same) */
static inline __attribute__((always_inline)) AVX2 void
gemm8_block(const __m256i *bw, const float *sb, uint32_t ng, uint32_t NC, uint32_t NI,
            const int8_t *const *x, const float *const *xs, float *const *out)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[GEMM8_ITEMS];
    for (uint32_t i = 0; i < NI; i++) acc[i] = _mm256_setzero_ps();
    for (uint32_t g = 0; g < ng; g++) {
        const __m256i *w = bw + (size_t)g * 2u * NC;
        __m256i is[GEMM8_ITEMS];
        for (uint32_t i = 0; i < NI; i++) is[i] = _mm256_setzero_si256();
#pragma GCC unroll 2   /* 2: 56-59 GMAC/s, 16: 51-55 (its loads spill) */
        for (uint32_t c = 0; c < NC; c++) {
            __m256i wt = _mm256_load_si256(w + 2u * c), wa = _mm256_load_si256(w + 2u * c + 1u);
            for (uint32_t i = 0; i < NI; i++) {
                int32_t d;
                memcpy(&d, x[i] + (size_t)g * NC * 4u + 4u * c, sizeof d);
                __m256i p = _mm256_maddubs_epi16(wa, _mm256_sign_epi8(_mm256_set1_epi32(d), wt));
                is[i] = _mm256_add_epi32(is[i], _mm256_madd_epi16(p, ones));
            }
        }
        __m256 sc = _mm256_loadu_ps(sb + (size_t)g * 8u);
        for (uint32_t i = 0; i < NI; i++) {
            __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(is[i]), sc),
                                     _mm256_set1_ps(xs[i][g]));
            acc[i] = _mm256_add_ps(acc[i], v);
        }
    }
    for (uint32_t i = 0; i < NI; i++) _mm256_storeu_ps(out[i], acc[i]);
}

/* gemm8_block for m (1..GEMM8_ITEMS) items at G = 32 or 64: each count and
 * group size its own copy (a rest of 1 to 3 items takes no dead lanes). */
static AVX2 void gemm8_items(const __m256i *bw, const float *sb, uint32_t ng, uint32_t G,
                             uint32_t m, const int8_t *const *x, const float *const *xs,
                             float *const *out)
{
#define GEMM8_CASE(n)                                                                    \
    case n:                                                                              \
        if (G == 32u) gemm8_block(bw, sb, ng, 8u, n, x, xs, out);                        \
        else gemm8_block(bw, sb, ng, 16u, n, x, xs, out);                                \
        break;
    switch (m) {
    GEMM8_CASE(1u)
    GEMM8_CASE(2u)
    GEMM8_CASE(3u)
    default: GEMM8_CASE(GEMM8_ITEMS)
    }
#undef GEMM8_CASE
}

static void *scratch(size_t bytes);

static AVX2 uint32_t tile_gemm8_avx2(uint32_t q4, const int8_t *w8, const float *ws,
                                     uint32_t rows, uint32_t ng, uint32_t G, const int8_t *xq,
                                     size_t xq_stride, const float *xs, size_t xs_stride,
                                     uint32_t nx, float *psum, size_t psum_stride)
{
    uint32_t nb = rows / 8u, EB = q4 ? 16u : G, nc = G / 4u;
    __m256i *bw = scratch((size_t)ng * nc * 2u * sizeof(__m256i));
    if (!bw) return 0;   /* out of memory: a pass an item */
    int8_t wide[8 * 32];
    for (uint32_t b = 0; b < nb; b++) {
        const int8_t *wb = w8 + (size_t)b * 8u * ng * EB;   /* (ng, 8, EB) */
        for (uint32_t g = 0; g < ng; g++) {
            const int8_t *e = wb + (size_t)g * 8u * EB;
            PREFETCH_GROUP(e, 8u * EB);
            block_group8(q4 ? q4_widen(e, wide) : e, G, bw + (size_t)g * nc * 2u);
        }
        const float *sb = ws + (size_t)b * 8u * ng;
        for (uint32_t k0 = 0; k0 < nx; k0 += GEMM8_ITEMS) {
            uint32_t m = nx - k0 < GEMM8_ITEMS ? nx - k0 : GEMM8_ITEMS;
            const int8_t *x[GEMM8_ITEMS];
            const float *sx[GEMM8_ITEMS];
            float *o[GEMM8_ITEMS];
            for (uint32_t i = 0; i < m; i++) {
                x[i] = xq + (size_t)(k0 + i) * xq_stride;
                sx[i] = xs + (size_t)(k0 + i) * xs_stride;
                o[i] = psum + (size_t)(k0 + i) * psum_stride + (size_t)b * 8u;
            }
            gemm8_items(bw, sb, ng, G, m, x, sx, o);
        }
    }
    return nb;
}

static int avx2_probe(void) { return __builtin_cpu_supports("avx2"); }
static int vnni_probe(void) { return __builtin_cpu_supports("avxvnni"); }

int tsr_emu_simd_available(void)
{
    static int have = -1;
    return tsr_emu_cpu_once(&have, avx2_probe);
}

/* AVX-VNNI's 256-bit vpdpbusd; off when the emulator is kept to AVX2
 * (tsr_emu_vec_level below AVX-512: "simd=avx2", an AVX2-only CPU's
 * paths). */
static int vnni_available(void)
{
    static int have = -1;
    return tsr_emu_cpu_once(&have, vnni_probe) && tsr_emu_vec_level() >= TSR_EMU_VEC_AVX512;
}

/* One item's pass over a Q8_0 (q4 0) or Q4_0 (q4 1) tile. */
static uint32_t tile_one(uint32_t q4, const int8_t *w8, const float *ws, uint32_t rows,
                         uint32_t ng, uint32_t G, const int8_t *xq, const float *xs, float *psum)
{
    if (vnni_available())
        return q4 ? tile_q4_vnni(w8, ws, rows, ng, G, xq, xs, psum)
                  : tile_q8_vnni(w8, ws, rows, ng, G, xq, xs, psum);
    return q4 ? tile_q4_avx2(w8, ws, rows, ng, G, xq, xs, psum)
              : tile_q8_avx2(w8, ws, rows, ng, G, xq, xs, psum);
}

/* ---- several items: a GEMM of the tile and up to 16 inputs (AVX-512) ---- */

#define GEMM __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define GEMM_ITEMS 16u   /* one item a 32-bit lane of a zmm register */

/* The tile's full 8-row blocks times nx <= 16 items, G = 32 or 64.
 *
 *   per group g: the items' input words transposed, xt[c] (16 items,) the
 *                c-th 4 bytes of each item's group, as u8 = x + 128
 *   per row j of a block, per group:
 *                isum (16 items,) = sum over c of xt[c] . w[j, g, 4c..4c+3]
 *                (vpdpbusd: u8 x s8, the weight dword broadcast)  = w . (x + 128)
 *                isum -= 128 * sum(w[j, g, :])                   = w . x  (exact)
 *                acc[j] (16 items,) += ((float)isum * ws) * xs[g, items]
 *
 * x in -127..127 makes x + 128 a byte, the int32 sums cannot overflow (G *
 * 255 * 128 < 2^31), and each lane's fp32 operations are the portable
 * loop's, groups ascending: bit-identical to pe_tile_q8 for every item. */
/* The GEMM's transposed inputs, per thread (a worker runs one tile at a
 * time): grown as needed, kept for the thread's life and freed when it
 * exits (a pthread key's destructor: the pool's workers and the device
 * thread end with their device). */
static __thread void *gemm_scratch;
static __thread size_t gemm_scratch_bytes;
static pthread_key_t  gemm_scratch_key;
static pthread_once_t gemm_scratch_once = PTHREAD_ONCE_INIT;
static int            gemm_scratch_keyed;   /* the key was created */

static void scratch_key_make(void)
{
    gemm_scratch_keyed = pthread_key_create(&gemm_scratch_key, free) == 0;
}

/* Replace this thread's buffer *buf, held by pthread key `key` (so freed
 * when the thread exits), by a new one of `bytes` (a multiple of 64).
 * Returns it, or NULL (and *buf as it was) without memory. */
static void *thread_buffer(void **buf, pthread_key_t key, size_t bytes)
{
    void *p = aligned_alloc(64, bytes);
    if (!p) return NULL;
    if (pthread_setspecific(key, p) != 0) {
        free(p);
        return NULL;
    }
    free(*buf);
    *buf = p;
    return p;
}

static void *scratch(size_t bytes)
{
    if (bytes > gemm_scratch_bytes) {
        pthread_once(&gemm_scratch_once, scratch_key_make);
        if (!gemm_scratch_keyed) return NULL;
        if (!thread_buffer(&gemm_scratch, gemm_scratch_key, (bytes + 63u) & ~(size_t)63u))
            return NULL;
        gemm_scratch_bytes = bytes;
    }
    return gemm_scratch;
}

/* The items' inputs for the GEMM: xt[g * nc + c] holds the c-th dword of
 * group g of item k % span in lane k, each byte x ^ bias_bytes' byte
 * (0x80: u8 = x + 128; 0: x as it is; padding items: x = 0), by masked
 * gathers; xsv[g] the items' scales of group g, likewise.
 * span 16: one item a lane; span 4 (at most 4 items): lanes 4r..4r+3 hold
 * items 0..3 for the 4 rows r of gemm4's lanes. */
static GEMM void gemm_inputs(const int8_t *xq, size_t xq_stride, const float *xs,
                             size_t xs_stride, uint32_t nx, uint32_t ng, uint32_t G, uint32_t span,
                             uint32_t bias_bytes, __m512i *xt, __m512 *xsv)
{
    uint32_t nc = G / 4u;
    __m512i lane = _mm512_and_si512(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
        _mm512_set1_epi32((int)span - 1));
    __mmask16 m = _mm512_cmplt_epu32_mask(lane, _mm512_set1_epi32((int)nx));
    __m512i xi = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)xq_stride));   /* bytes */
    __m512i si = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)xs_stride));   /* floats */
    const __m512i bias = _mm512_set1_epi32((int)bias_bytes);
    for (uint32_t g = 0; g < ng; g++) {
        for (uint32_t c = 0; c < nc; c++) {
            __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, xi,
                                                    xq + (size_t)g * G + 4u * c, 1);
            xt[(size_t)g * nc + c] = _mm512_xor_si512(d, bias);
        }
        xsv[g] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, si, xs + g, 4);
    }
}

/* One block of 8 rows, NC dwords a group (8: G 32, 16: G 64), EB bytes
 * an entry and ROWS a group's rows as tile_q8_avx2's: the 8 rows' sums
 * are independent chains, each input dword loaded once for the 8. */
#define GEMM_BLOCK(NC, EB, ROWS)                                                            \
    for (uint32_t g = 0; g < ng; g++) {                                                     \
        PREFETCH_GROUP(wb + (size_t)g * 8u * (EB), 8u * (EB));                              \
        const int32_t *e = (const int32_t *)(const void *)ROWS(wb + (size_t)g * 8u * (EB)); \
        const __m512i *x = xt + (size_t)g * (NC);                                           \
        __m512i is[8];                                                                      \
        for (uint32_t j = 0; j < 8u; j++) is[j] = _mm512_set1_epi32(-cb[(size_t)g * 8u + j]); \
        for (uint32_t c = 0; c < (NC); c++) {                                               \
            __m512i xc = _mm512_load_si512(x + c);                                          \
            for (uint32_t j = 0; j < 8u; j++)                                               \
                is[j] = _mm512_dpbusd_epi32(is[j], xc, _mm512_set1_epi32(e[j * (NC) + c])); \
        }                                                                                   \
        __m512 xsg = xsv[g];                                                                \
        for (uint32_t j = 0; j < 8u; j++) {                                                 \
            __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is[j]),               \
                                                   _mm512_set1_ps(sb[(size_t)g * 8u + j])), \
                                     xsg);                                                  \
            acc[j] = _mm512_add_ps(acc[j], v);                                              \
        }                                                                                   \
    }

/* A block's sums out: acc[j] holds row j for the 16 items; item i's 8
 * rows go to out + i * stride (i < nx), 8 consecutive floats.  An 8 x 16
 * transpose in registers (unpack, shuffle within 128-bit lanes, then
 * whole lanes), 16 stores of 8 floats instead of 8 scatters of 16. */
static GEMM void store_block(const __m512 acc[8], float *out, size_t stride, uint32_t nx)
{
    __m512 t[8], u[8];
    for (uint32_t k = 0; k < 4u; k++) {
        t[2u * k] = _mm512_unpacklo_ps(acc[2u * k], acc[2u * k + 1u]);
        t[2u * k + 1u] = _mm512_unpackhi_ps(acc[2u * k], acc[2u * k + 1u]);
    }
    /* u[c] (c < 4): rows 0-3 of items c, c + 4, c + 8, c + 12 (one a
     * 128-bit lane); u[c + 4]: their rows 4-7 */
    for (uint32_t h = 0; h < 2u; h++) {
        const __m512 *q = t + 4u * h;
        u[4u * h + 0u] = _mm512_shuffle_ps(q[0], q[2], 0x44);
        u[4u * h + 1u] = _mm512_shuffle_ps(q[0], q[2], 0xEE);
        u[4u * h + 2u] = _mm512_shuffle_ps(q[1], q[3], 0x44);
        u[4u * h + 3u] = _mm512_shuffle_ps(q[1], q[3], 0xEE);
    }
    for (uint32_t c = 0; c < 4u; c++) {
        /* [lo.L0, lo.L2, hi.L0, hi.L2] -> [lo.L0, hi.L0 | lo.L2, hi.L2]:
         * items c and c + 8; likewise L1, L3: items c + 4 and c + 12 */
        __m512 a = _mm512_shuffle_f32x4(u[c], u[c + 4u], _MM_SHUFFLE(2, 0, 2, 0));
        __m512 b = _mm512_shuffle_f32x4(u[c], u[c + 4u], _MM_SHUFFLE(3, 1, 3, 1));
        a = _mm512_shuffle_f32x4(a, a, _MM_SHUFFLE(3, 1, 2, 0));
        b = _mm512_shuffle_f32x4(b, b, _MM_SHUFFLE(3, 1, 2, 0));
        const uint32_t item[4] = { c, c + 8u, c + 4u, c + 12u };
        const __m512 *src[4] = { &a, &a, &b, &b };
        for (uint32_t k = 0; k < 4u; k++) {
            if (item[k] >= nx) continue;
            __m256 v = (k & 1u) ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(*src[k]), 1))
                                : _mm512_castps512_ps256(*src[k]);
            _mm256_storeu_ps(out + (size_t)item[k] * stride, v);
        }
    }
}

/* Q4_0 (q4 1): 16-byte entries, widened a group at a time (G 32). */
static GEMM uint32_t tile_gemm(uint32_t q4, const int8_t *w8, const float *ws,
                               const int32_t *wcorr, uint32_t rows, uint32_t ng, uint32_t G,
                               const int8_t *xq, size_t xq_stride, const float *xs,
                               size_t xs_stride, uint32_t nx, float *psum, size_t psum_stride)
{
    uint32_t nb = rows / 8u, nc = G / 4u;   /* dwords a group: 8 or 16 */
    uint32_t eb = q4 ? 16u : G;             /* bytes an entry          */
    __m512i *xt = scratch((size_t)ng * (nc + 1u) * sizeof(__m512i));
    if (!xt) return 0;
    __m512 *xsv = (__m512 *)(void *)(xt + (size_t)ng * nc);
    gemm_inputs(xq, xq_stride, xs, xs_stride, nx, ng, G, GEMM_ITEMS, 0x80808080u, xt, xsv);
    int8_t wide[8 * 32] __attribute__((aligned(32)));
    for (uint32_t b = 0; b < nb; b++) {
        const int8_t *wb = w8 + (size_t)b * 8u * ng * eb;   /* (ng, 8, eb) */
        const float *sb = ws + (size_t)b * 8u * ng;         /* (ng, 8)     */
        const int32_t *cb = wcorr + (size_t)b * 8u * ng;
        __m512 acc[8];
        for (uint32_t j = 0; j < 8u; j++) acc[j] = _mm512_setzero_ps();
        if (q4) {
            GEMM_BLOCK(8u, 16u, Q4_ROWS)
        } else if (nc == 8u) {
            GEMM_BLOCK(8u, G, Q8_ROWS)
        } else {
            GEMM_BLOCK(16u, G, Q8_ROWS)
        }
        store_block(acc, psum + (size_t)b * 8u, psum_stride, nx);
    }
    return nb;
}

/* The tile's full 8-row blocks times nx <= 4 items, G = 32 (Q8_0, or
 * Q4_0 widened): a lane for each (row, item) of 4 rows x 4 items, so the
 * lanes stay full where tile_gemm's item lanes are a quarter used.
 *
 *   per group g and dword c: wq[c] (rows 4q..4q+3, each 4 times) =
 *        the c-th dwords of the 4 rows (vpermt2d of the 2 registers that
 *        hold the 4 rows' entries), and xt[c] the 4 items' c-th dwords
 *        (each 4 times, gemm_inputs span 4)
 *   isum (lane 4r + i) = sum over c of xt[c] . wq[c]  (vpdpbusd, u8 x s8)
 *        - 128 * sum(w[row r, g, :])                   = w . x   (exact)
 *   acc (lane 4r + i) += ((float)isum * ws[r]) * xs[g, i]
 *
 * The same integer sums and, per (row, item), the same fp32 operations in
 * the same order as tile_gemm and pe_tile_q8: bit-identical. */
#define GEMM4_SPAN 4u
static GEMM uint32_t tile_gemm4(uint32_t q4, const int8_t *w8, const float *ws,
                                const int32_t *wcorr, uint32_t rows, uint32_t ng,
                                const int8_t *xq, size_t xq_stride, const float *xs,
                                size_t xs_stride, uint32_t nx, float *psum, size_t psum_stride)
{
    uint32_t nb = rows / 8u, eb = q4 ? 16u : 32u;
    __m512i *xt = scratch((size_t)ng * 9u * sizeof(__m512i));
    if (!xt) return 0;
    __m512 *xsv = (__m512 *)(void *)(xt + (size_t)ng * 8u);
    gemm_inputs(xq, xq_stride, xs, xs_stride, nx, ng, 32u, GEMM4_SPAN, 0x80808080u, xt, xsv);
    /* lane 4r + i: dword c of row r of the pair of registers (rows 0-1 |
     * rows 2-3); a row's scale and correction from 8 (ws, wcorr) */
    __m512i ridx = _mm512_srli_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 2);
    __m512i widx[8];
    for (uint32_t c = 0; c < 8u; c++)
        widx[c] = _mm512_add_epi32(_mm512_slli_epi32(ridx, 3), _mm512_set1_epi32((int)c));
    __m512i ridx_hi = _mm512_add_epi32(ridx, _mm512_set1_epi32(4));
    int8_t wide[8 * 32] __attribute__((aligned(32)));
    (void)wide;
    for (uint32_t b = 0; b < nb; b++) {
        const int8_t *wb = w8 + (size_t)b * 8u * ng * eb;   /* (ng, 8, eb) */
        const float *sb = ws + (size_t)b * 8u * ng;         /* (ng, 8)     */
        const int32_t *cb = wcorr + (size_t)b * 8u * ng;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (uint32_t g = 0; g < ng; g++) {
            PREFETCH_GROUP(wb + (size_t)g * 8u * eb, 8u * eb);
            const int8_t *e = q4 ? q4_widen(wb + (size_t)g * 8u * eb, wide) : wb + (size_t)g * 256u;
            __m512i r01 = _mm512_loadu_si512(e), r23 = _mm512_loadu_si512(e + 64);
            __m512i r45 = _mm512_loadu_si512(e + 128), r67 = _mm512_loadu_si512(e + 192);
            __m512i c8 = _mm512_castsi256_si512(
                _mm256_loadu_si256((const __m256i *)(const void *)(cb + (size_t)g * 8u)));
            __m512 s8 = _mm512_castps256_ps512(_mm256_loadu_ps(sb + (size_t)g * 8u));
            __m512i is0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_permutexvar_epi32(ridx, c8));
            __m512i is1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_permutexvar_epi32(ridx_hi, c8));
            const __m512i *x = xt + (size_t)g * 8u;
            for (uint32_t c = 0; c < 8u; c++) {
                __m512i xc = _mm512_load_si512(x + c);
                is0 = _mm512_dpbusd_epi32(is0, xc, _mm512_permutex2var_epi32(r01, widx[c], r23));
                is1 = _mm512_dpbusd_epi32(is1, xc, _mm512_permutex2var_epi32(r45, widx[c], r67));
            }
            __m512 xsg = xsv[g];
            acc0 = _mm512_add_ps(acc0, _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is0),
                                                                   _mm512_permutexvar_ps(ridx, s8)), xsg));
            acc1 = _mm512_add_ps(acc1, _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is1),
                                                                   _mm512_permutexvar_ps(ridx_hi, s8)), xsg));
        }
        /* item i's rows 0-3 are acc0's lanes i, 4 + i, 8 + i, 12 + i, rows
         * 4-7 acc1's */
        for (uint32_t i = 0; i < nx; i++) {
            __m512i oidx = _mm512_add_epi32(
                _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 28, 24, 20, 16, 12, 8, 4, 0),
                _mm512_set1_epi32((int)i));
            __m512 v = _mm512_permutex2var_ps(acc0, oidx, acc1);
            _mm256_storeu_ps(psum + (size_t)i * psum_stride + (size_t)b * 8u, _mm512_castps512_ps256(v));
        }
    }
    return nb;
}

static int gemm_probe(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
}

/* AVX-512 VNNI, unless the emulator is kept to AVX2 (tsr_emu_vec_level). */
static int gemm_available(void)
{
    static int have = -1;
    return tsr_emu_cpu_once(&have, gemm_probe) && tsr_emu_vec_level() >= TSR_EMU_VEC_AVX512;
}

/* ---- the transposed units (tsr_emu.h) ---------------------------------- */

#define TR_PAIRS 4u     /* pairs of items in one pass: up to 8 items */

int tsr_emu_tr_available(void) { return tsr_emu_simd_available() && gemm_available(); }

static inline int64_t load64(const void *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline int32_t load32(const void *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 128 x the sum of each of the ng groups of 32 inputs at x. */
static void tr_corr(const int8_t *x, uint32_t ng, int32_t *corr)
{
    for (uint32_t g = 0; g < ng; g++) {
        int32_t sum = 0;
        for (uint32_t l = 0; l < 32u; l++) sum += x[(size_t)g * 32u + l];
        corr[g] = 128 * sum;
    }
}

/* One item: per unit, 4 loads of the 8 rows' dword pairs against the
 * input's matching qword broadcast, lane pair r -> row r's sum. */
static GEMM void tr_one(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                        const int8_t *x, const float *xs, const int32_t *corr, float *psum)
{
    for (uint32_t b = 0; b < nb; b++) {
        const uint8_t *wb = w8 + (size_t)b * ng * TSR_EMU_TR_UNIT;
        const float *sb = ws + (size_t)b * 8u * ng;
        __m256 acc = _mm256_setzero_ps();
        for (uint32_t g = 0; g < ng; g++) {
            const uint8_t *u = wb + (size_t)g * TSR_EMU_TR_UNIT;
            const int8_t *xg = x + (size_t)g * 32u;
            PREFETCH_UNIT(u, sb + (size_t)g * 8u);
            __m512i is = _mm512_setzero_si512();
            for (uint32_t k = 0; k < 4u; k++)
                is = _mm512_dpbusd_epi32(is, _mm512_loadu_si512(u + 64u * k),
                                         _mm512_set1_epi64(load64(xg + 8u * k)));
            __m256i r = _mm512_cvtepi64_epi32(_mm512_add_epi32(is, _mm512_srli_epi64(is, 32)));
            r = _mm256_sub_epi32(r, _mm256_set1_epi32(corr[g]));
            __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(r),
                                                   _mm256_loadu_ps(sb + (size_t)g * 8u)),
                                     _mm256_set1_ps(xs[g]));
            acc = _mm256_add_ps(acc, v);
        }
        _mm256_storeu_ps(psum + (size_t)b * 8u, acc);
    }
}

/* np pairs of items (np <= TR_PAIRS, a constant where it is inlined):
 * item 2q's sums in the even lanes of pair q's register, item 2q + 1's in
 * the odd ones, so each unit's 4 loads serve every item and a pair's
 * fp32 operations are one register's.  The inputs are crossed qwords
 * (tr_pair_inputs): against load k, lane 2r (row r's bytes 8k..8k+3) of A
 * meets item i's matching dword and lane 2r + 1 (bytes 8k+4..8k+7) item
 * j's, and D the other way round, so A + D with D's dword pairs swapped
 * is row r's sum for item i in lane 2r and for item j in lane 2r + 1
 * (integer sums: exact in any order).  xc per pair and group the two
 * crossed inputs, A's 4 qwords then D's; ncorr2, xs2 per pair and group
 * the two items' corrections negated (A's starting sums, lane 2r item i's
 * and 2r + 1 item j's, as A + D leaves them) and their scales, side by
 * side; out[i] NULL for a missing last item. */
static inline __attribute__((always_inline)) GEMM void
tr_pairs(uint32_t np, const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
         const int64_t *xc, const int32_t *ncorr2, const float *xs2, float *const *out)
{
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    for (uint32_t b = 0; b < nb; b++) {
        const uint8_t *wb = w8 + (size_t)b * ng * TSR_EMU_TR_UNIT;
        const float *sb = ws + (size_t)b * 8u * ng;
        __m512 acc[TR_PAIRS];
        for (uint32_t q = 0; q < np; q++) acc[q] = _mm512_setzero_ps();
        for (uint32_t g = 0; g < ng; g++) {
            const uint8_t *u = wb + (size_t)g * TSR_EMU_TR_UNIT;
            PREFETCH_UNIT(u, sb + (size_t)g * 8u);
            __m512i w0 = _mm512_loadu_si512(u), w1 = _mm512_loadu_si512(u + 64);
            __m512i w2 = _mm512_loadu_si512(u + 128), w3 = _mm512_loadu_si512(u + 192);
            /* row r's scale in lanes 2r, 2r + 1 */
            __m512 wsd = _mm512_permutexvar_ps(
                dup, _mm512_castps256_ps512(_mm256_loadu_ps(sb + (size_t)g * 8u)));
            for (uint32_t q = 0; q < np; q++) {
                const int64_t *xa = xc + ((size_t)q * ng + g) * 8u, *xd = xa + 4;
                size_t pg = ((size_t)q * ng + g) * 2u;
                __m512i A = _mm512_dpbusd_epi32(_mm512_set1_epi64(load64(ncorr2 + pg)), w0,
                                                _mm512_set1_epi64(xa[0]));
                __m512i D = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w0, _mm512_set1_epi64(xd[0]));
                A = _mm512_dpbusd_epi32(A, w1, _mm512_set1_epi64(xa[1]));
                D = _mm512_dpbusd_epi32(D, w1, _mm512_set1_epi64(xd[1]));
                A = _mm512_dpbusd_epi32(A, w2, _mm512_set1_epi64(xa[2]));
                D = _mm512_dpbusd_epi32(D, w2, _mm512_set1_epi64(xd[2]));
                A = _mm512_dpbusd_epi32(A, w3, _mm512_set1_epi64(xa[3]));
                D = _mm512_dpbusd_epi32(D, w3, _mm512_set1_epi64(xd[3]));
                __m512i C = _mm512_add_epi32(A, _mm512_shuffle_epi32(D, _MM_PERM_CDAB));
                __m512 xsp = _mm512_castsi512_ps(_mm512_set1_epi64(load64(xs2 + pg)));
                acc[q] = _mm512_add_ps(acc[q], _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(C), wsd), xsp));
            }
        }
        for (uint32_t q = 0; q < np; q++) {
            __m512i bits = _mm512_castps_si512(acc[q]);
            _mm256_storeu_ps(out[2u * q] + (size_t)b * 8u, _mm256_castsi256_ps(_mm512_cvtepi64_epi32(bits)));
            if (out[2u * q + 1u])
                _mm256_storeu_ps(out[2u * q + 1u] + (size_t)b * 8u,
                                 _mm256_castsi256_ps(_mm512_cvtepi64_epi32(_mm512_srli_epi64(bits, 32))));
        }
    }
}

static GEMM void tr_pairs_n(uint32_t np, const uint8_t *w8, const float *ws, uint32_t nb,
                            uint32_t ng, const int64_t *xc, const int32_t *ncorr2,
                            const float *xs2, float *const *out)
{
    switch (np) {   /* each count its own copy: the pairs' sums stay in registers */
    case 1: tr_pairs(1u, w8, ws, nb, ng, xc, ncorr2, xs2, out); break;
    case 2: tr_pairs(2u, w8, ws, nb, ng, xc, ncorr2, xs2, out); break;
    case 3: tr_pairs(3u, w8, ws, nb, ng, xc, ncorr2, xs2, out); break;
    default: tr_pairs(4u, w8, ws, nb, ng, xc, ncorr2, xs2, out); break;
    }
}

/* Up to 16 items, one a lane (tile_gemm on the transposed units): row j's
 * dword c broadcast as the unsigned operand against the 16 items' dword
 * c as they are; xcn[g] the items' -128 x sum of group g. */
static GEMM void tr_gemm(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                         const __m512i *xt, const __m512i *xcn, const __m512 *xsv, uint32_t nx,
                         float *psum, size_t psum_stride)
{
    for (uint32_t b = 0; b < nb; b++) {
        const uint8_t *wb = w8 + (size_t)b * ng * TSR_EMU_TR_UNIT;
        const float *sb = ws + (size_t)b * 8u * ng;
        __m512 acc[8];
        for (uint32_t j = 0; j < 8u; j++) acc[j] = _mm512_setzero_ps();
        for (uint32_t g = 0; g < ng; g++) {
            const uint8_t *u = wb + (size_t)g * TSR_EMU_TR_UNIT;
            PREFETCH_GROUP(u, TSR_EMU_TR_UNIT);
            __m512i is[8];
            for (uint32_t j = 0; j < 8u; j++) is[j] = xcn[g];
            for (uint32_t c = 0; c < 8u; c++) {
                __m512i xc = _mm512_load_si512(xt + (size_t)g * 8u + c);
                const uint8_t *uc = u + 64u * (c / 2u) + 4u * (c % 2u);   /* row 0's dword c */
                for (uint32_t j = 0; j < 8u; j++)
                    is[j] = _mm512_dpbusd_epi32(is[j], _mm512_set1_epi32(load32(uc + 8u * j)), xc);
            }
            __m512 xsg = xsv[g];
            for (uint32_t j = 0; j < 8u; j++) {
                __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(is[j]),
                                                       _mm512_set1_ps(sb[(size_t)g * 8u + j])),
                                         xsg);
                acc[j] = _mm512_add_ps(acc[j], v);
            }
        }
        store_block(acc, psum + (size_t)b * 8u, psum_stride, nx);
    }
}

/* Pair (xi, xj)'s inputs for tr_pairs, ng groups: xc per group the
 * crossed qwords, xc[k] with its low dword from item i's qword k and its
 * high one from item j's, xc[4 + k] the other way round (little-endian:
 * the low dword is bytes 8k..8k+3), so two dword blends; ncorr2 per group
 * the two items' -128 x sum of the 32 inputs (VPSADBW sums x + 128, less
 * 32 x 128: exact); xs2 their scales (0 for a missing item j, sj NULL). */
static GEMM void tr_pair_inputs(const int8_t *xi, const int8_t *xj, const float *si,
                                const float *sj, uint32_t ng, int64_t *xc, int32_t *ncorr2,
                                float *xs2)
{
    const __m256i flip = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    for (uint32_t g = 0; g < ng; g++) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(xi + (size_t)g * 32u));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(xj + (size_t)g * 32u));
        _mm256_storeu_si256((__m256i *)(void *)(xc + (size_t)g * 8u), _mm256_blend_epi32(a, b, 0xAA));
        _mm256_storeu_si256((__m256i *)(void *)(xc + (size_t)g * 8u + 4u),
                            _mm256_blend_epi32(b, a, 0xAA));
        __m256i sa = _mm256_sad_epu8(_mm256_xor_si256(a, flip), zero);
        __m256i sb = _mm256_sad_epu8(_mm256_xor_si256(b, flip), zero);
        __m256i s2 = _mm256_add_epi64(_mm256_unpacklo_epi64(sa, sb), _mm256_unpackhi_epi64(sa, sb));
        __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s2), _mm256_extracti128_si256(s2, 1));
        ncorr2[2u * g] = -128 * ((int32_t)_mm_cvtsi128_si64(t) - 4096);
        ncorr2[2u * g + 1u] = -128 * ((int32_t)_mm_extract_epi64(t, 1) - 4096);
        xs2[2u * g] = si[g];
        xs2[2u * g + 1u] = sj ? sj[g] : 0.0f;
    }
}

/* m <= 8 items: one, or pairs (a zero input for an odd one out). */
static GEMM int tr_few(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                       const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                       uint32_t m, float *psum, size_t psum_stride)
{
    uint32_t np = (m + 1u) / 2u;
    /* crossed inputs (np, ng, 8) qwords; corrections (tr_one's, or the
     * pairs' negated) and scales (np, ng, 2) each; a zero input of ng
     * groups */
    size_t words = (size_t)np * ng * 2u, qwords = (size_t)np * ng * 8u;
    int64_t *xc = scratch(qwords * 8u + words * 8u + (size_t)ng * 32u + 64u);
    if (!xc) return 0;
    int32_t *corr = (int32_t *)(void *)(xc + qwords);
    float *xs2 = (float *)(void *)(corr + words);
    int8_t *zero = (int8_t *)(void *)(xs2 + words);
    if (m == 1u) {
        tr_corr(xq, ng, corr);
        tr_one(w8, ws, nb, ng, xq, xs, corr, psum);
        return 1;
    }
    if (m & 1u) memset(zero, 0, (size_t)ng * 32u);
    float *out[2u * TR_PAIRS];
    for (uint32_t i = 0; i < 2u * np; i++) out[i] = i < m ? psum + (size_t)i * psum_stride : NULL;
    for (uint32_t q = 0; q < np; q++) {
        uint32_t j = 2u * q + 1u;   /* item j may be missing: the zero input */
        tr_pair_inputs(xq + (size_t)(2u * q) * xq_stride, j < m ? xq + (size_t)j * xq_stride : zero,
                       xs + (size_t)(2u * q) * xs_stride, j < m ? xs + (size_t)j * xs_stride : NULL,
                       ng, xc + (size_t)q * ng * 8u, corr + (size_t)q * ng * 2u,
                       xs2 + (size_t)q * ng * 2u);
    }
    tr_pairs_n(np, w8, ws, nb, ng, xc, corr, xs2, out);
    return 1;
}

/* The transposed inputs of this thread's last TR_KEPT calls of tr_many,
 * by the caller's xkey, first input byte, groups and items: a pass's
 * tiles all take the same inputs (the broadcast copy), so a worker
 * transposes each 16 items once a GEMV, not once a PE tile.  Kept in one
 * buffer of TR_KEPT slots, freed when the thread exits, as the scratch. */
#define TR_KEPT 4u   /* TSR_MAX_BLOCK / 16 in the generic profile */
static __thread struct {
    uint64_t      key;
    const int8_t *x;
    uint32_t      ng, m;
} tr_kept[TR_KEPT];
static __thread uint32_t tr_kept_next;
static __thread void    *tr_kept_buf;
static __thread size_t   tr_kept_slot;   /* bytes a slot */
static pthread_key_t     tr_kept_tkey;
static pthread_once_t    tr_kept_once = PTHREAD_ONCE_INIT;
static int               tr_kept_keyed;

static void kept_key_make(void)
{
    tr_kept_keyed = pthread_key_create(&tr_kept_tkey, free) == 0;
}

/* The slot of (key, x, ng, m) of `bytes` bytes, and *hit 1 when it holds
 * those inputs already; NULL without memory. */
static void *kept_slot(uint64_t key, const int8_t *x, uint32_t ng, uint32_t m, size_t bytes,
                       int *hit)
{
    for (uint32_t i = 0; i < TR_KEPT; i++)
        if (tr_kept[i].key == key && tr_kept[i].x == x && tr_kept[i].ng == ng &&
            tr_kept[i].m == m) {   /* its slot was sized for ng (a resize drops all) */
            *hit = 1;
            return (char *)tr_kept_buf + i * tr_kept_slot;
        }
    *hit = 0;
    if (bytes > tr_kept_slot) {   /* a larger slot: the kept inputs go */
        pthread_once(&tr_kept_once, kept_key_make);
        if (!tr_kept_keyed) return NULL;
        size_t slot = (bytes + 63u) & ~(size_t)63u;
        if (!thread_buffer(&tr_kept_buf, tr_kept_tkey, slot * TR_KEPT)) return NULL;
        tr_kept_slot = slot;
        memset(tr_kept, 0, sizeof tr_kept);
    }
    uint32_t i = tr_kept_next++ % TR_KEPT;
    tr_kept[i].key = key;
    tr_kept[i].x = x;
    tr_kept[i].ng = ng;
    tr_kept[i].m = m;
    return (char *)tr_kept_buf + i * tr_kept_slot;
}

/* 9 to 16 items: tr_gemm (xkey: tsr_emu_tile_q8t's). */
static GEMM int tr_many(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                        const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                        uint32_t m, float *psum, size_t psum_stride, uint64_t xkey)
{
    size_t bytes = (size_t)ng * 10u * sizeof(__m512i);
    int hit = 0;
    __m512i *xt = xkey ? kept_slot(xkey, xq, ng, m, bytes, &hit) : NULL;
    if (!xt) xt = scratch(bytes);
    if (!xt) return 0;
    __m512i *xcn = xt + (size_t)ng * 8u;
    __m512 *xsv = (__m512 *)(void *)(xcn + ng);
    if (!hit) {
        gemm_inputs(xq, xq_stride, xs, xs_stride, m, ng, 32u, GEMM_ITEMS, 0u, xt, xsv);
        const __m512i ones = _mm512_set1_epi8(1);
        for (uint32_t g = 0; g < ng; g++) {
            __m512i sum = _mm512_setzero_si512();
            for (uint32_t c = 0; c < 8u; c++)
                sum = _mm512_dpbusd_epi32(sum, ones, xt[(size_t)g * 8u + c]);
            xcn[g] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7));
        }
    }
    tr_gemm(w8, ws, nb, ng, xt, xcn, xsv, m, psum, psum_stride);
    return 1;
}

uint32_t tsr_emu_tile_q8t(const uint8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                          const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                          uint32_t nx, float *psum, size_t psum_stride, uint64_t xkey)
{
    if (!tsr_emu_tr_available()) return 0;
    uint32_t nb = rows / 8u;
    if (nb == 0 || ng == 0) return nb;
    if (nx > 2u * TR_PAIRS && tsr_emu_amx_available()) {   /* the items at once, through AMX */
        uint8_t *pb = scratch((size_t)ng * TSR_EMU_AMX_PAIR);
        if (pb) {
            tsr_emu_tr_gemm_amx(w8, ws, nb, ng, xq, xq_stride, xs, xs_stride, nx, psum,
                                psum_stride, pb);
            return nb;
        }
    }
    for (uint32_t k = 0; k < nx;) {
        uint32_t m = nx - k > GEMM_ITEMS ? GEMM_ITEMS : nx - k;
        const int8_t *x = xq + (size_t)k * xq_stride;
        const float *s = xs + (size_t)k * xs_stride;
        float *o = psum + (size_t)k * psum_stride;
        int done = m > 2u * TR_PAIRS
                       ? tr_many(w8, ws, nb, ng, x, xq_stride, s, xs_stride, m, o, psum_stride,
                                 xkey)
                       : tr_few(w8, ws, nb, ng, x, xq_stride, s, xs_stride, m, o, psum_stride);
        for (uint32_t i = 0; !done && i < m; i++)
            tsr_emu_tile_q8t_plain(w8, ws, nb, ng, x + (size_t)i * xq_stride,
                                   s + (size_t)i * xs_stride, o + (size_t)i * psum_stride);
        k += m;
    }
    return nb;
}

/* nx items through a Q8_0 or Q4_0 tile: GEMMs of up to 16 items with
 * AVX-512 VNNI, the AVX2 GEMM without it, or a pass an item. */
static uint32_t tile_items(uint32_t q4, const int8_t *w8, const float *ws, const int32_t *wcorr,
                           uint32_t rows, uint32_t ng, uint32_t G, const int8_t *xq,
                           size_t xq_stride, const float *xs, size_t xs_stride, uint32_t nx,
                           float *psum, size_t psum_stride)
{
    uint32_t done = 0;
    if (nx >= 2u && wcorr && gemm_available()) {
        for (uint32_t k = 0; k < nx; k += GEMM_ITEMS) {
            uint32_t m = nx - k < GEMM_ITEMS ? nx - k : GEMM_ITEMS;
            done = m <= GEMM4_SPAN && G == 32u
                       ? tile_gemm4(q4, w8, ws, wcorr, rows, ng, xq + k * xq_stride, xq_stride,
                                    xs + k * xs_stride, xs_stride, m, psum + k * psum_stride,
                                    psum_stride)
                       : tile_gemm(q4, w8, ws, wcorr, rows, ng, G, xq + k * xq_stride, xq_stride,
                                   xs + k * xs_stride, xs_stride, m, psum + k * psum_stride,
                                   psum_stride);
            if (done == 0 && rows >= 8u) break;   /* out of memory: the portable loop does it */
        }
        if (done == rows / 8u) return done;
    } else if (nx >= 2u) {
        done = tile_gemm8_avx2(q4, w8, ws, rows, ng, G, xq, xq_stride, xs, xs_stride, nx, psum,
                               psum_stride);
        if (done == rows / 8u) return done;   /* else out of memory: a pass an item */
    }
    for (uint32_t k = 0; k < nx; k++)
        done = tile_one(q4, w8, ws, rows, ng, G, xq + k * xq_stride, xs + k * xs_stride,
                        psum + k * psum_stride);
    return done;
}

uint32_t tsr_emu_tile_q8(const int8_t *w8, const float *ws, const int32_t *wcorr, uint32_t rows,
                         uint32_t ng, uint32_t G, const int8_t *xq, size_t xq_stride,
                         const float *xs, size_t xs_stride, uint32_t nx, float *psum,
                         size_t psum_stride)
{
    if ((G != 32 && G != 64) || !tsr_emu_simd_available()) return 0;
    return tile_items(0u, w8, ws, wcorr, rows, ng, G, xq, xq_stride, xs, xs_stride, nx, psum,
                      psum_stride);
}

uint32_t tsr_emu_tile_q4(const int8_t *w4, const float *ws, const int32_t *wcorr, uint32_t rows,
                         uint32_t ng, const int8_t *xq, size_t xq_stride, const float *xs,
                         size_t xs_stride, uint32_t nx, float *psum, size_t psum_stride)
{
    if (!tsr_emu_simd_available()) return 0;
    return tile_items(1u, w4, ws, wcorr, rows, ng, 32u, xq, xq_stride, xs, xs_stride, nx, psum,
                      psum_stride);
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
                          size_t xf_stride, uint32_t nx, float *psum, size_t psum_stride)
{
    if (!tsr_emu_simd_available()) return 0;
    uint32_t done = 0;
    for (uint32_t k = 0; k < nx; k++)
        done = tile_f32_avx2(wf, rows, cols, xf + k * xf_stride, psum + k * psum_stride);
    return done;
}

#else /* built without the SIMD rows */

int tsr_emu_simd_available(void) { return 0; }

int tsr_emu_tr_available(void) { return 0; }

uint32_t tsr_emu_tile_q8t(const uint8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                          const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                          uint32_t nx, float *psum, size_t psum_stride, uint64_t xkey)
{
    (void)w8; (void)ws; (void)rows; (void)ng; (void)xq; (void)xq_stride; (void)xs;
    (void)xs_stride; (void)nx; (void)psum; (void)psum_stride; (void)xkey;
    return 0;
}

uint32_t tsr_emu_tile_q8(const int8_t *w8, const float *ws, const int32_t *wcorr, uint32_t rows,
                         uint32_t ng, uint32_t G, const int8_t *xq, size_t xq_stride,
                         const float *xs, size_t xs_stride, uint32_t nx, float *psum,
                         size_t psum_stride)
{
    (void)w8; (void)ws; (void)wcorr; (void)rows; (void)ng; (void)G; (void)xq; (void)xq_stride; (void)xs;
    (void)xs_stride; (void)nx; (void)psum; (void)psum_stride;
    return 0;
}

uint32_t tsr_emu_tile_q4(const int8_t *w4, const float *ws, const int32_t *wcorr, uint32_t rows,
                         uint32_t ng, const int8_t *xq, size_t xq_stride, const float *xs,
                         size_t xs_stride, uint32_t nx, float *psum, size_t psum_stride)
{
    (void)w4; (void)ws; (void)wcorr; (void)rows; (void)ng; (void)xq; (void)xq_stride; (void)xs;
    (void)xs_stride; (void)nx; (void)psum; (void)psum_stride;
    return 0;
}

uint32_t tsr_emu_tile_f32(const float *wf, uint32_t rows, uint32_t cols, const float *xf,
                          size_t xf_stride, uint32_t nx, float *psum, size_t psum_stride)
{
    (void)wf; (void)rows; (void)cols; (void)xf; (void)xf_stride; (void)nx; (void)psum;
    (void)psum_stride;
    return 0;
}

#endif
