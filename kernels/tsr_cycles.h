/*
 * tsr_cycles.h - the cycle accounting: what one loop costs, in one place.
 *
 * A pipelined loop of `trip` iterations at initiation interval `ii` whose
 * body takes `depth` cycles from first input to last output costs
 * trip x ii + depth cycles (UG1399, "Pipelining Loops": iteration latency
 * plus (trip - 1) x II, rounded up to the depth).  Every loop on the
 * per-token path charges this, with its own trip count and the II and
 * depth names of tsr_arch.h, to a region (tsr_kernel.h TSR_RG_*) right
 * where it runs, in the emulator and in C simulation; a parallel region
 * (TSR_RUN_PES) charges the slowest of its PE instances.  driver/plan.c
 * computes the same charges from the layout alone (same helpers), and
 * tests/test_plan.c holds the two equal region by region.
 *
 * Shared with the driver through tsr_kernel.h.
 */
#ifndef TSR_CYCLES_H
#define TSR_CYCLES_H

#include <stdint.h>

#include "tsr_arch.h"
#include "tsr_platform.h"
#include "tsr_layout.h"
#include "tsr_profile.h"

/* A pipelined loop: trip x ii + depth, nothing when it does not run. */
static inline uint32_t tsr_cy_loop(uint32_t trip, uint32_t ii, uint32_t depth)
{
    return trip ? trip * ii + depth : 0u;
}

/* log2 of a power of two (levels of a binary tree over n leaves). */
static inline uint32_t tsr_cy_log2(uint32_t n)
{
    uint32_t l = 0;
    for (uint32_t b = 0; b < 31u; b++)
        if ((1u << b) < n) l = b + 1u;
    return l;
}

/* A reduction of n elements over S partial sums (ops.c tsr_reduce_sum):
 * the pipelined pass, E = S / TSR_FADD_LAT elements a cycle at II 1 (or
 * one at II TSR_FADD_LAT / S), then the log2(S) levels over the partials,
 * E additions a cycle. */
static inline uint32_t tsr_cy_sum_s(uint32_t n, uint32_t S)
{
    uint32_t E = S >= TSR_FADD_LAT ? S / TSR_FADD_LAT : 1u;
    uint32_t ii = S >= TSR_FADD_LAT ? 1u : TSR_FADD_LAT / S, cy;
    cy = tsr_cy_loop(tsr_cdiv(n, E), ii, TSR_D_VEC);
    for (uint32_t half = S / 2u; half >= 1u; half /= 2u)
        cy += tsr_cy_loop(tsr_cdiv(half, E), 1u, TSR_D_TREE);
    return cy;
}
#define tsr_cy_sum(n) tsr_cy_sum_s((n), TSR_SUM_LANES)

/* A recurrence-bound inner pass: `words` words of lanes, each lane's
 * accumulator updated once a word, padded to TSR_FADD_LAT words so the
 * accumulator's add never stalls the II=1 pipeline (attention.c). */
static inline uint32_t tsr_cy_padded(uint32_t words)
{
    return words > TSR_FADD_LAT ? words : TSR_FADD_LAT;
}

/* ---- the charges of composite steps, shared with driver/plan.c ---------- */

/* The pairwise levels of a reduction over S partials (ops.c sum_levels). */
static inline uint32_t tsr_cy_sum_levels(uint32_t S)
{
    uint32_t E = S >= TSR_FADD_LAT ? S / TSR_FADD_LAT : 1u, cy = 0;
    for (uint32_t half = S / 2u; half >= 1u; half /= 2u)
        cy += tsr_cy_loop(tsr_cdiv(half, E), 1u, TSR_D_TREE);
    return cy;
}

/* RMSNorm's scale of n values (ops.c tsr_rms_scale): the sum of squares
 * (its levels only when the residual gather accumulated the partials:
 * fused), then divide, sqrtf, divide. */
static inline uint32_t tsr_cy_norm_s(uint32_t n, uint32_t S, int fused)
{
    return (fused ? tsr_cy_sum_levels(S) : tsr_cy_sum_s(n, S)) + TSR_D_RSQRT;
}

/* A GEMV input of n values in groups of G (mesh.c tsr_mesh_input): Q8 two
 * TSR_LANES-wide passes (normalise + word maxima at TSR_NORM_II, quantize
 * + broadcast), F32 one TSR_VEC-wide pass. */
static inline uint32_t tsr_cy_input(uint32_t n, uint32_t G, int q8)
{
    uint32_t npad = tsr_cdiv(n, G) * G;
    if (!q8) return tsr_cy_loop(tsr_cdiv(npad, TSR_VEC), 1u, TSR_D_BUS);
    uint32_t nch = tsr_cdiv(npad, TSR_LANES);
    return tsr_cy_loop(nch, TSR_NORM_II, TSR_D_VEC) + tsr_cy_loop(nch, 1u, TSR_D_QUANT);
}

/* The same when a gather already wrote xn and its word maxima
 * (tsr_mesh_input, ready): the quantize + broadcast pass alone. */
static inline uint32_t tsr_cy_input_ready(uint32_t n, uint32_t G, int q8)
{
    uint32_t npad = tsr_cdiv(n, G) * G;
    if (!q8) return tsr_cy_loop(tsr_cdiv(npad, TSR_VEC), 1u, TSR_D_BUS);
    return tsr_cy_loop(tsr_cdiv(npad, TSR_LANES), 1u, TSR_D_QUANT);
}

/* One PE's (sub-)tile: its pipeline steps (tsr_layout.h) plus the depth. */
static inline uint32_t tsr_cy_tile(uint32_t steps) { return tsr_cy_loop(steps, 1u, TSR_D_GEMV); }

/* n reads of host memory one after another (a decode step's cancel words,
 * tsr_kernel.c fwd_items_decode): each a round trip, none overlapped. */
static inline uint32_t tsr_cy_host_reads(uint32_t n) { return n * TSR_D_HOSTRD; }

/* Zeroing `rows` partial sums (a column without groups), TSR_VEC a cycle. */
static inline uint32_t tsr_cy_zero(uint32_t rows)
{
    return tsr_cy_loop(tsr_cdiv(rows, TSR_VEC), 1u, TSR_D_VEC);
}

/* SwiGLU of `rows` partial sums on a PE (mesh.c pe_swiglu): a row every
 * TSR_SWIGLU_II cycles. */
static inline uint32_t tsr_cy_swiglu(uint32_t rows)
{
    return tsr_cy_loop(rows, TSR_SWIGLU_II, TSR_D_EXP + TSR_D_DIV);
}

/* One column-tree level over `rows` partial sums: a TSR_VEC word every
 * TSR_TREE_II cycles (TSR_TREE_LANES adders). */
static inline uint32_t tsr_cy_tree_level(uint32_t rows)
{
    return tsr_cy_loop(tsr_cdiv(rows, TSR_VEC), TSR_TREE_II, TSR_D_TREE);
}
/* A root's best row over `rows` (mesh.c pe_best): TSR_VEC lanes a word at
 * II TSR_D_CMP, then the lanes' tree. */
static inline uint32_t tsr_cy_best(uint32_t rows)
{
    return tsr_cy_loop(tsr_cdiv(rows, TSR_VEC), TSR_D_CMP, 0u) + tsr_cy_log2(TSR_VEC) * TSR_D_CMP;
}

/* The gather of d outputs over the bus (mesh.c tsr_mesh_gather), a word a
 * cycle, deeper by what its flags add on the way: RoPE (QKV) or the sum of
 * squares (a fused residual) a multiply-add; the word maxima (into xn,
 * padded to npad) a compare tree. */
static inline uint32_t tsr_cy_gather(uint32_t d)
{
    return tsr_cy_loop(tsr_cdiv(d, TSR_VEC), 1u, TSR_D_BUS);
}
static inline uint32_t tsr_cy_gather_vec(uint32_t d)
{
    return tsr_cy_loop(tsr_cdiv(d, TSR_VEC), 1u, TSR_D_BUS + TSR_D_VEC);
}
/* The QKV gather: RoPE's multiply-add, and with biases an add before it. */
static inline uint32_t tsr_cy_gather_qkv(uint32_t d, uint32_t bias)
{
    return tsr_cy_loop(tsr_cdiv(d, TSR_VEC), 1u, TSR_D_BUS + TSR_D_VEC + (bias ? (uint32_t)TSR_FADD_LAT : 0u));
}
static inline uint32_t tsr_cy_gather_input(uint32_t npad)
{
    return tsr_cy_loop(tsr_cdiv(npad, TSR_VEC), 1u, TSR_D_BUS + tsr_cy_log2(TSR_VEC) * TSR_D_CMP);
}

/* A mesh column's share of the embedding row (mesh.c tsr_mesh_embed): Q8
 * its ng groups' TSR_LANES chunks at II TSR_EMBED_II, F32 its `cols`
 * values one a cycle. */
static inline uint32_t tsr_cy_embed(uint32_t ng, uint32_t G, uint32_t cols, int q8)
{
    if (!q8) return tsr_cy_loop(cols, 1u, TSR_D_BUS);
    return tsr_cy_loop(ng * (G > TSR_LANES ? G / TSR_LANES : 1u), TSR_EMBED_II, TSR_D_BUS);
}

/* A pass's residual vectors over a card link (forward.c): nx items of dim
 * fp32 behind the TSR_LINK_HDR header, one stream word a cycle.  The
 * sending stage's link-out drains them off the controller's bus; the
 * receiving stage's link-in waits the hop's latency for the first word
 * (TSR_LINK_HOP, tsr_arch.h), then takes one a cycle. */
static inline uint32_t tsr_cy_link_words(uint32_t nx, uint32_t dim)
{
    return (uint32_t)TSR_LINK_HDR + nx * dim;
}
static inline uint32_t tsr_cy_link_out(uint32_t nx, uint32_t dim)
{
    return tsr_cy_loop(tsr_cy_link_words(nx, dim), TSR_LINK_WORD_II, TSR_D_BUS);
}
static inline uint32_t tsr_cy_link_in(uint32_t nx, uint32_t dim)
{
    return tsr_cy_loop(tsr_cy_link_words(nx, dim), TSR_LINK_WORD_II, TSR_LINK_HOP);
}

/* This token's RoPE angles (ops.c tsr_rope_angles): one cos/sin a cycle. */
static inline uint32_t tsr_cy_rope_angles(uint32_t hs)
{
    return tsr_cy_loop(hs / 2u, 1u, TSR_D_TRIG);
}

/* Attention on one PE (attention.c), per query head over its nl local
 * positions: the head's q slice into the multiply-add's coefficients, the
 * scores (a pass per head dimension, padded) with their scale and max;
 * exp and their sum; normalise and the weighted sum of V (a pass per
 * position, padded; zeros when nl is 0).  kvt, the cache's precision
 * (TSR_KV_*), deepens the passes that read the cache by a conversion
 * (f16, int8) and the scale and normalise passes by the int8 scales'
 * multiply.  The store of this position's k, v: K^T's column a value a
 * cycle (a lane of a word: read, modify, write), then V's row a value a
 * cycle into whole words (f16: through the encoder; int8: after a pass
 * for the two vectors' max |v|, then divide and round). */
static inline uint32_t tsr_cy_kv_read(uint32_t kvt) { return kvt == TSR_KV_F32 ? 0u : TSR_D_KVCVT; }
static inline uint32_t tsr_cy_kv_scale(uint32_t kvt) { return kvt == TSR_KV_INT8 ? TSR_D_MUL : 0u; }
static inline uint32_t tsr_cy_att_store(uint32_t hs, uint32_t kvt)
{
    uint32_t d = TSR_D_ATT + (kvt == TSR_KV_F16 ? TSR_D_F16 : kvt == TSR_KV_INT8 ? TSR_D_QUANT : 0u);
    uint32_t amax = kvt == TSR_KV_INT8 ? tsr_cy_loop(hs, TSR_D_CMP, TSR_D_DIV) : 0u;
    return amax + 2u * tsr_cy_loop(hs, 1u, d);   /* K^T's lanes, then V's words */
}
/* parts: TSR_ATT_PARTS of the profile (1: one accumulator a position, the
 * pass padded; more: that many partials, unpadded, and their tree in the
 * scale pass). */
static inline uint32_t tsr_cy_att_scores(uint32_t hs, uint32_t nl, uint32_t parts, uint32_t kvt)
{
    uint32_t tw = tsr_cdiv(nl, TSR_ATT_LANES);
    if (nl == 0) return 0;
    uint32_t pass = parts > 1u ? hs * tw : hs * tsr_cy_padded(tw);
    uint32_t tree = parts > 1u ? tsr_cy_log2(parts) * TSR_D_TREE : 0u;
    return tsr_cy_loop(hs, 1u, TSR_D_BUS) + tsr_cy_loop(pass, 1u, TSR_D_ATT + tsr_cy_kv_read(kvt)) +
           tsr_cy_loop(nl, 1u, tree + TSR_D_DIV + tsr_cy_kv_scale(kvt)) +
           tsr_cy_loop(tw, TSR_D_CMP, 0u) + tsr_cy_log2(TSR_ATT_LANES) * TSR_D_CMP;
}
static inline uint32_t tsr_cy_att_exp_s(uint32_t nl, uint32_t S)
{
    return tsr_cy_loop(nl, 1u, TSR_D_EXP) + (nl ? tsr_cy_sum_s(nl, S) : 0u);
}
static inline uint32_t tsr_cy_att_values(uint32_t hs, uint32_t nl, uint32_t kvt)
{
    uint32_t out = tsr_cy_loop(tsr_cdiv(hs, TSR_ATT_LANES), 1u, TSR_D_VEC);
    if (nl == 0) return out;
    return tsr_cy_loop(nl, 1u, TSR_D_DIV + tsr_cy_kv_scale(kvt)) +
           tsr_cy_loop(nl * tsr_cy_padded(tsr_cdiv(hs, TSR_ATT_LANES)), 1u,
                       TSR_D_ATT + tsr_cy_kv_read(kvt)) + out;
}
/* One level of a KV head group's trees: the max or the sum of kv_mul
 * values, or the weighted sums (kv_mul x head_size). */
static inline uint32_t tsr_cy_att_tree_max(uint32_t km) { return tsr_cy_loop(km, 1u, TSR_D_CMP); }
static inline uint32_t tsr_cy_att_tree_sum(uint32_t km) { return tsr_cy_loop(km, 1u, TSR_D_TREE); }
static inline uint32_t tsr_cy_att_tree_values(uint32_t km, uint32_t hs)
{
    return tsr_cy_loop(tsr_cdiv(km * hs, TSR_ATT_LANES), 1u, TSR_D_TREE);
}
/* The head outputs back over the bus into xn (npad words, its maxima). */
static inline uint32_t tsr_cy_att_collect(uint32_t npad)
{
    return tsr_cy_gather_input(npad);
}

/* ---- SLR crossings ------------------------------------------------------ */

/* What the SLR crossings add to the fabric's paths in a compute unit of P
 * PEs in mesh rows of C over S SLRs, the first A PEs with attention
 * datapaths (tsr_lay_slr_pe0): TSR_D_SLR cycles a crossing, as extra
 * iterations of the pipelined word loops that carry the delay lines
 * (mesh.c, attention.c).  All 0 when S is 1. */
typedef struct tsr_cy_slr {
    uint32_t bcast;    /* a Q8 input pass: every PE's copy, S - 1 crossings */
    uint32_t gather;   /* a gather: the roots of every SLR, S - 1 crossings
                          out (the request) and back (the word)             */
    uint32_t latch;    /* a QKV gather's latch into the attention PEs       */
    uint32_t collect;  /* the head outputs off the attention PEs, out and
                          back                                              */
    uint32_t best;     /* the argmax tree (tsr_cy_best_tree), over log2(P)
                          levels                                            */
} tsr_cy_slr;

/* The argmax's tree over the roots' bests (mesh.c tsr_mesh_best): with one
 * SLR, log2(P) compare-select levels; over S, each SLR's subtree (the
 * levels of its largest PE range), the S results through the crossings'
 * registers to SLR 0, then log2(S) levels there. */
static inline uint32_t tsr_cy_best_tree(uint32_t P, uint32_t C, uint32_t S)
{
    if (S < 2u) return tsr_cy_log2(P) * TSR_D_CMP;
    uint32_t span = 0;
    for (uint32_t s = 0; s < S; s++) {
#ifdef __SYNTHESIS__
#pragma HLS LOOP_TRIPCOUNT min=1 max=4
#endif
        uint32_t n = tsr_lay_slr_pe0(P, C, S, s + 1u) - tsr_lay_slr_pe0(P, C, S, s);
        if (n > span) span = n;
    }
    return (tsr_cy_log2(span) + tsr_cy_log2(S)) * TSR_D_CMP + (S - 1u) * TSR_D_SLR;
}

static inline tsr_cy_slr tsr_cy_slr_of(uint32_t P, uint32_t C, uint32_t S, uint32_t A)
{
    tsr_cy_slr f = { 0u, 0u, 0u, 0u, 0u };
    if (S < 2u || C == 0u || A == 0u || P < C * S) return f;
    uint32_t att = tsr_lay_slr_of(P, C, S, A - 1u) * TSR_D_SLR;
    /* the broadcast: one way; a gather or the collect: the request out
     * and the word back (mesh.c gather_slr_words, attention.c att_collect) */
    f.bcast = (S - 1u) * TSR_D_SLR;
    f.gather = 2u * (S - 1u) * TSR_D_SLR;
    f.latch = att;
    f.collect = 2u * att;
    f.best = tsr_cy_best_tree(P, C, S) - tsr_cy_log2(P) * TSR_D_CMP;
    return f;
}

/* The profile's (TSR_SLRS): what the kernel charges. */
#define TSR_CY_SLR          tsr_cy_slr_of(TSR_PES, TSR_MAX_MESH_COLS, TSR_SLRS, TSR_ATT_PES)
#define TSR_CY_BEST_TREE    tsr_cy_best_tree(TSR_PES, TSR_MAX_MESH_COLS, TSR_SLRS)

/* Charge cy cycles to region rg; TSR_CY(cy): a PE step's cycles, for its
 * task's return value.  In the emulator and C simulation only: under
 * __SYNTHESIS__ both are nothing, so no adder, divider or table of the
 * model reaches the hardware, and a card's READ_COUNTERS reports zero
 * cycles (measure a card with XRT's profiling, docs/hls-flow.md).
 * TSR_COUNT(st, f, v): the work counters of the model (multiply-adds,
 * fabric bytes, attended pairs), likewise; the command and token counts
 * are kept in hardware too. */
#ifdef __SYNTHESIS__
#define TSR_CHARGE(st, rg, cy) ((void)0)
#define TSR_CY(cy)             0u
#define TSR_COUNT(st, f, v)    ((void)0)
#else
/* a platform's counter add (tsr_platform.h; the emulator's worker threads
 * charge too, so its add is atomic: a sum, whatever the order) */
#define TSR_CHARGE(st, rg, cy) TSR_COUNTER_ADD(&(st)->cnt.cyc[(rg)], (uint64_t)(cy))
#define TSR_CY(cy)             (cy)
#define TSR_COUNT(st, f, v)    TSR_COUNTER_ADD(&(st)->cnt.f, (uint64_t)(v))
#endif

#endif
