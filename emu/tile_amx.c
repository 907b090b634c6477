/*
 * tile_amx.c - the GEMM of transposed Q8_0 units (tsr_emu.h) and 9 or
 * more items with Intel AMX (AMX-TILE, AMX-INT8): a prefill block's tiles
 * on the CPUs that have it (Xeons from Sapphire Rapids on), bit-identical
 * to tile_simd.c's tr_gemm and the kernel's pe_tile_q8.
 *
 * The tile is taken a pair of 8-row blocks (b, b + 1) at a time; a last
 * odd block is a pair with zero weights in its second half.  Per group g:
 *
 *   B (8 x 64 bytes) = the pair's two units as AMX wants K rows: row c
 *                      holds dword c (bytes 4c..4c+3) of block b's 8
 *                      rows, then of block b + 1's, as signed bytes (a
 *                      vpermt2d and an XOR with 0x80 a row), made once
 *                      for the pair's ng groups into the caller's scratch
 *   A (m x 32 bytes) = m <= 16 items' 32 inputs of group g, straight from
 *                      the quantized inputs (row i at xq + i * xq_stride)
 *   C (m x 16 int32) = A . B (TDPBSSD, signed by signed): C[i][r] is the
 *                      group's dot product of item i and row r   (exact)
 *   acc (item i, row r) += ((float)C[i][r] * ws[g, r]) * xs[i, g]
 *
 * and every 16 items (then the rest) take the pair's B from the scratch
 * in turn.  The int32 sums are the dot products themselves, and the fp32
 * operations are pe_tile_q8's in its order, one (item, row) a lane (an
 * item a register), so the sums are bit for bit the same.
 *
 * Two groups are in flight (tiles 0-2 and 3-5); each C is stored
 * (TILESTORED) right after its product, and its vector loads and fp32
 * work come two groups later.
 * Measured on a 2-vCPU Xeon with AMX: the fp32 work (4 operations an
 * item, row and group, the same as the AVX-512 path's) and the tile
 * loads and stores do not overlap, so this is about 1.5x tr_gemm on 64
 * items, not the TMUL's peak (docs/emulator.md).
 *
 * Sources: the Intel 64 and IA-32 Architectures Software Developer's
 * Manual (LDTILECFG and its palette-1 layout, TILELOADD, TDPBSSD,
 * TILESTORED, TILERELEASE, CPUID leaf 7 EDX bits 24 and 25), and, for the
 * permission a process asks before its first tile instruction, the Linux
 * kernel's Documentation/arch/x86/xstate.rst (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tsr_emu.h"

int tsr_emu_amx_limit = 1;

#if defined(TSR_EMU_SIMD) && TSR_EMU_SIMD && defined(__x86_64__) && defined(__GNUC__) && \
    !defined(__clang__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,amx-tile,amx-int8")))

#define ARCH_REQ_XCOMP_PERM 0x1023   /* linux/arch/x86/include/uapi/asm/prctl.h */
#define XFEATURE_XTILEDATA  18

/* The tile configuration (LDTILECFG's 64-byte operand, palette 1). */
typedef struct tile_config {
    uint8_t  palette, start_row, reserved[14];
    uint16_t colsb[16];   /* bytes a row of tile t */
    uint8_t  rows[16];
} tile_config;

/* Tile instructions with their memory made visible to the compiler (the
 * vector stores before a TILELOADD, the loads after a TILESTORED). */
#define TILE_LOADD(t, base, stride)                                                     \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"((long)(stride)) \
                     : "memory")
#define TILE_STORED(t, base, stride)                                                    \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"((long)(stride)) \
                     : "memory")
#define TILE_ZERO(t)        __asm__ volatile("tilezero %%tmm" #t ::)
#define TILE_DPBSSD(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

/* Tiles 0-2 and 3-5 (two groups in flight): C (m x 16 int32), A (m x 32
 * bytes), B (8 x 64 bytes). */
static AMX void tiles_configure(uint32_t m)
{
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (uint32_t t = 0; t < 6u; t++) {
        uint32_t kind = t % 3u;   /* 0: C (m x 16 int32), 1: A (m x 32 bytes), 2: B */
        cfg.colsb[t] = kind == 1u ? 32 : 64;
        cfg.rows[t] = kind == 2u ? 8 : (uint8_t)m;   /* B: the 8 dwords of K */
    }
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
}

static AMX void tiles_release(void) { __asm__ volatile("tilerelease" ::); }

/* A pair of blocks (b, b + 1) is made into B tiles once, all its groups
 * (TSR_EMU_AMX_PAIR bytes a group), and every 16 items take them from
 * there: B (8 x 64 bytes) for group g has in row c dword c of block b's
 * 8 rows, then of block b + 1's, as signed bytes, so C's row i is item
 * i's sums for the 16 rows. */
#define RING      4u   /* C buffers */
#define C_BEHIND  2u   /* groups between a C's TILESTORED and its fp32 work */

/* The pair's units at u0 (block b) and u1 (block b + 1; NULL: none, its
 * half 0) as B into bb (512 bytes, 64-aligned): part k of a unit holds
 * (row r, dword 2k + e) in lane 2r + e, and B's row 2k + e takes block
 * b's lanes 2r + e, r = 0..7, then block b + 1's. */
static inline AMX void pair_as_b(const uint8_t *u0, const uint8_t *u1, uint8_t *bb)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (uint32_t k = 0; k < 4u; k++) {
        __m512i a = _mm512_loadu_si512(u0 + 64u * k);
        __m512i b = u1 ? _mm512_loadu_si512(u1 + 64u * k) : flip;   /* flip: w = 0 */
        _mm512_store_si512((void *)(bb + 128u * k),
                           _mm512_xor_si512(_mm512_permutex2var_epi32(a, even, b), flip));
        _mm512_store_si512((void *)(bb + 128u * k + 64u),
                           _mm512_xor_si512(_mm512_permutex2var_epi32(a, odd, b), flip));
    }
}

#define AMX_AHEAD TSR_EMU_TILE_AHEAD   /* the weight stream's prefetch, as tr_gemm's */

/* M items (a constant where it is inlined: the sums stay in registers)
 * times the pair's B tiles at pb; two: block b + 1 is there.  sb the
 * pair's first scale (block b's group 0), o its first output. */
static inline __attribute__((always_inline)) AMX void
items_amx(const uint32_t M, const uint8_t *pb, const float *sb, int two, uint32_t ng,
          const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride, float *o,
          size_t psum_stride)
{
    int32_t cb[RING][16 * 16] __attribute__((aligned(64)));
    __m512 acc[16];
#pragma GCC unroll 16
    for (uint32_t i = 0; i < M; i++) acc[i] = _mm512_setzero_ps();
    for (uint32_t g = 0; g < ng + C_BEHIND; g++) {
        if (g < ng) {   /* C of group g */
            const uint8_t *bg = pb + (size_t)g * TSR_EMU_AMX_PAIR;
            const int8_t *ag = xq + (size_t)g * 32u;
            if (g & 1u) {
                TILE_LOADD(5, bg, 64);
                TILE_LOADD(4, ag, xq_stride);
                TILE_ZERO(3);
                TILE_DPBSSD(3, 4, 5);
                TILE_STORED(3, cb[g % RING], 64);
            } else {
                TILE_LOADD(2, bg, 64);
                TILE_LOADD(1, ag, xq_stride);
                TILE_ZERO(0);
                TILE_DPBSSD(0, 1, 2);
                TILE_STORED(0, cb[g % RING], 64);
            }
        }
        if (g < C_BEHIND) continue;
        uint32_t f = g - C_BEHIND;   /* the fp32 work of group f */
        const float *sg = sb + (size_t)f * 8u;
        __m512 wsv = _mm512_castps256_ps512(_mm256_loadu_ps(sg));
        if (two) wsv = _mm512_insertf32x8(wsv, _mm256_loadu_ps(sg + (size_t)8u * ng), 1);
        const int32_t *c = cb[f % RING];
        const float *xf = xs + f;
#pragma GCC unroll 16
        for (uint32_t i = 0; i < M; i++) {
            __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(c + 16u * i)));
            v = _mm512_mul_ps(_mm512_mul_ps(v, wsv), _mm512_set1_ps(xf[(size_t)i * xs_stride]));
            acc[i] = _mm512_add_ps(acc[i], v);
        }
    }
#pragma GCC unroll 16
    for (uint32_t i = 0; i < M; i++) {
        if (two)
            _mm512_storeu_ps(o + (size_t)i * psum_stride, acc[i]);
        else
            _mm256_storeu_ps(o + (size_t)i * psum_stride, _mm512_castps512_ps256(acc[i]));
    }
}

static AMX void gemm_amx(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                         const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                         uint32_t nx, float *psum, size_t psum_stride, uint8_t *pb)
{
    size_t unit_stride = (size_t)ng * TSR_EMU_TR_UNIT;   /* block b to b + 1 */
    uint32_t configured = 0;   /* the items the tiles are configured for */
    for (uint32_t b = 0; b < nb; b += 2u) {
        const uint8_t *u = w8 + (size_t)b * unit_stride;
        int two = b + 1u < nb;
        for (uint32_t g = 0; g < ng; g++, u += TSR_EMU_TR_UNIT) {
            for (uint32_t pf = 0; pf < TSR_EMU_TR_UNIT; pf += 64u) {
                _mm_prefetch((const char *)u + AMX_AHEAD + pf, _MM_HINT_T1);
                if (two) _mm_prefetch((const char *)u + unit_stride + AMX_AHEAD + pf, _MM_HINT_T1);
            }
            pair_as_b(u, two ? u + unit_stride : NULL, pb + (size_t)g * TSR_EMU_AMX_PAIR);
        }
        const float *sb = ws + (size_t)b * 8u * ng;
        for (uint32_t k = 0; k < nx; k += 16u) {
            uint32_t m = nx - k < 16u ? nx - k : 16u;
            if (m != configured) tiles_configure(configured = m);
            const int8_t *x = xq + (size_t)k * xq_stride;
            const float *s = xs + (size_t)k * xs_stride;
            float *o = psum + (size_t)k * psum_stride + (size_t)b * 8u;
#define ITEMS_AMX_CASE(M)                                                                  \
    case M: items_amx(M, pb, sb, two, ng, x, xq_stride, s, xs_stride, o, psum_stride); break;
            switch (m) {   /* each count its own copy */
            ITEMS_AMX_CASE(1) ITEMS_AMX_CASE(2) ITEMS_AMX_CASE(3) ITEMS_AMX_CASE(4)
            ITEMS_AMX_CASE(5) ITEMS_AMX_CASE(6) ITEMS_AMX_CASE(7) ITEMS_AMX_CASE(8)
            ITEMS_AMX_CASE(9) ITEMS_AMX_CASE(10) ITEMS_AMX_CASE(11) ITEMS_AMX_CASE(12)
            ITEMS_AMX_CASE(13) ITEMS_AMX_CASE(14) ITEMS_AMX_CASE(15)
            default: items_amx(16u, pb, sb, two, ng, x, xq_stride, s, xs_stride, o, psum_stride);
            }
#undef ITEMS_AMX_CASE
        }
    }
    if (configured) tiles_release();
}

void tsr_emu_tr_gemm_amx(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                         const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                         uint32_t nx, float *psum, size_t psum_stride, uint8_t *pb)
{
    gemm_amx(w8, ws, nb, ng, xq, xq_stride, xs, xs_stride, nx, psum, psum_stride, pb);
}

/* A first product, on units of every byte value against inputs at the
 * quantizer's limits, equals the plain loop's (tsr_emu_tile_q8t_plain). */
static int amx_agrees(void)
{
    enum { NB = 3, NG = 2, M = 19 };   /* a pair and a single block; 16 items and 3 */
    uint8_t w[NB * NG * TSR_EMU_TR_UNIT] __attribute__((aligned(64)));
    uint8_t pb[NG * TSR_EMU_AMX_PAIR] __attribute__((aligned(64)));
    int8_t x[M * NG * 32];
    float ws[NB * NG * 8], xs[M * NG], got[M * NB * 8], want[M * NB * 8];
    for (uint32_t i = 0; i < sizeof w; i++) w[i] = (uint8_t)(i * 37u + 11u);
    for (uint32_t i = 0; i < sizeof x; i++) x[i] = (int8_t)((int)((i * 53u + 7u) % 255u) - 127);
    for (uint32_t i = 0; i < NB * NG * 8; i++) ws[i] = 0.001f * (float)(i + 1u);
    for (uint32_t i = 0; i < M * NG; i++) xs[i] = 0.37f / (float)(i + 3u);
    gemm_amx(w, ws, NB, NG, x, NG * 32, xs, NG, M, got, NB * 8, pb);
    for (uint32_t i = 0; i < M; i++)
        tsr_emu_tile_q8t_plain(w, ws, NB, NG, x + i * NG * 32, xs + i * NG, want + i * NB * 8);
    return memcmp(got, want, sizeof got) == 0;
}

/* AMX-TILE and AMX-INT8 (CPUID leaf 7: EDX bits 24, 25), AVX-512 for the
 * rest, and the OS's leave to use the tile data. */
static int amx_probe(void)
{
    unsigned a, b, c, d;
    __builtin_cpu_init();
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25)))
        return 0;
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl"))
        return 0;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

static int amx_granted = 0, amx_have = 0;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_ask(void)
{
    amx_granted = amx_probe();
    amx_have = amx_granted && amx_agrees();
}

int tsr_emu_amx_available(void)
{
    if (!tsr_emu_amx_limit) return 0;
    pthread_once(&amx_once, amx_ask);
    return amx_have;
}

int tsr_emu_amx_granted(void)
{
    pthread_once(&amx_once, amx_ask);
    return amx_granted;
}

#else /* no AMX in this build */

int tsr_emu_amx_available(void) { return 0; }
int tsr_emu_amx_granted(void) { return 0; }

void tsr_emu_tr_gemm_amx(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                         const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                         uint32_t nx, float *psum, size_t psum_stride, uint8_t *pb)
{
    (void)w8, (void)ws, (void)nb, (void)ng, (void)xq, (void)xq_stride, (void)xs, (void)xs_stride;
    (void)nx, (void)psum, (void)psum_stride, (void)pb;
}

#endif
