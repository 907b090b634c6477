/*
 * tsr_ops.h - the kernel's building blocks, for the kernel sources and the
 * kernel unit tests (tests/test_kernel_ops.c).  Not for driver/: it talks to
 * the kernel through tsr_kernel.h commands only.
 *
 * Numerics follow the project's numerics contract: llama2.c run.c
 * forward() for F32, runq.c's per-group int8 products for Q8_0, with
 * reductions over TSR_SUM_LANES partial sums (1: run.c's order).
 */
#ifndef TSR_OPS_H
#define TSR_OPS_H

#include <stdint.h>

#include "tsr_kernel.h"

/* The small functions below take st and are INLINE for synthesis (each
 * resolves a PE's index where st is defined; tsr_kernel.c, tessera_top);
 * the emulator's and the tests' files include this header too, so the
 * HLS pragmas must not warn there (and synthesis sees no GCC pragma that
 * could hide its own warning about a pragma it dropped). */
#ifndef __SYNTHESIS__
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#endif

/* What a PE task (TSR_RUN_PES) is asked to do: plain values only, so the
 * hardware task reads it as wires.  (A tree level's stride is not here: it
 * is the task's literal argument k, tsr_hls.h.) */
typedef struct tsr_pe_job {
    uint32_t mat;       /* matrix of a GEMV                                 */
    uint32_t flags;     /* TSR_JOB_*                                        */
    uint32_t slot, layer, pos;
    uint32_t blk;       /* attention: slot x n_layers + layer, the KV block  */
    uint32_t down;      /* attention trees: 0 up (combine), 1 down (spread) */
    uint32_t nx;        /* GEMV: the pass's items (inputs a PE's tile meets) */
    uint32_t work;      /* the step's multiply-accumulates, roughly: the
                           emulator shares only big steps among threads */
    TSR_PLATFORM_JOB    /* the platform's own (tsr_platform.h)               */
} tsr_pe_job;

#define TSR_JOB_ARGMAX  1u   /* GEMV: also find the best row (greedy)       */
#define TSR_JOB_SCORES  2u   /* attention: store K/V, scores, local max     */
#define TSR_JOB_EXP     4u   /* attention: exp(score - max), local sum      */
#define TSR_JOB_VALUES  8u   /* attention: normalise, weighted sum of V     */
#define TSR_JOB_PAIR    16u  /* GEMV: W13, two halves a tile                */
#define TSR_JOB_SWIGLU  32u  /* GEMV, the roots after the tree: SwiGLU      */

/* The controller's vectors (tsr_kstate.cv, tsr_profile.h TSR_CV_*) as
 * words of TSR_VEC: the word offsets a gather writes at. */
#define TSR_CVW_X       (TSR_CV_X / TSR_VEC)
#define TSR_CVW_XN      (TSR_CV_XN / TSR_VEC)
#define TSR_CVW_QKV     (TSR_CV_QKV / TSR_VEC)

/* PE p's tile of matrix m (CONFIGURE's tables, one plain array a field). */
static inline tsr_ktab tsr_ktab_of(const tsr_kstate *st, uint32_t p, uint32_t m)
{
#pragma HLS INLINE
    tsr_ktab t;
    t.row0 = st->tab_row0[p][m];
    t.rows = st->tab_rows[p][m];
    t.g0 = st->tab_g0[p][m];
    t.ngroups = st->tab_ng[p][m];
    t.w_off = st->tab_woff[p][m];
    t.f_off = st->tab_foff[p][m];
    t.cols = st->tab_cols[p][m];
    return t;
}

/* ---- controller vector ops (ops.c) ------------------------------------- */

/* sum of x (n,) over TSR_SUM_LANES partial sums: partial k adds x[k],
 * x[k + S], ... in order, then the partials pairwise (k += k + S/2, ...).
 * With S = 1, ((x0 + x1) + x2) + ...: run.c's order.  Costs tsr_cy_sum(n). */
float tsr_reduce_sum(const float *x, uint32_t n);

/* sum of x[i]^2 (n,), the same order; for RMSNorm.  tsr_cy_sum(n). */
float tsr_reduce_sumsq(const float *x, uint32_t n);

/* RMSNorm's scale of item it's residual stream x (n,, st->cv[it] at
 * TSR_CV_X): 1 /
 * sqrtf(sumsq / n + eps), charged to NORM.  The sum of squares from its
 * own pass over x, or (TSR_SSQ_FUSED) from the partials the residual
 * gather that wrote x left in st->ssq: the same partials, so the same
 * value. */
float tsr_rms_scale(tsr_kstate *st, uint32_t it, uint32_t n);

/* Item it's RoPE angles at position pos (run.c: frequency
 * theta^(-(2j) / head_size), precomputed at CONFIGURE, times pos; cosf,
 * sinf) into st->rope_cos/rope_sin[it] (head_size / 2,), once a token; the QKV
 * gather rotates q and k with them.  Charged to ROPE. */
void tsr_rope_angles(tsr_kstate *st, uint32_t it, uint32_t pos);

/* In-place softmax of x (n,), n >= 1: subtract the max, expf, divide by
 * the tsr_reduce_sum of the exponentials. */
void tsr_softmax(float *x, uint32_t n);

/* SwiGLU: hb[i] = silu(hb[i]) * hb2[i], silu(a) = a / (1 + expf(-a)); (n,). */
void tsr_swiglu(float *hb, const float *hb2, uint32_t n);

/* Q8 group rule on x (n,) in groups of G (last group short): s[g] =
 * amax/127, q = (int8)roundf(x/s) (0 when s == 0).  q gets ceil(n/G)*G
 * entries (zeros past n), s gets ceil(n/G).  (The golden reference and the
 * tests use it; the kernel's input path, tsr_mesh_input, computes the same
 * values in TSR_LANES-wide chunks.) */
void tsr_quantize(const float *x, uint32_t n, uint32_t G, int8_t *q, float *s);

/* Index of the first maximum of v (n,), n >= 1. */
uint32_t tsr_argmax(const float *v, uint32_t n);

/* ---- sampler (sampler.c) ----------------------------------------------- */

/* xorshift64* as llama2.c run.c's random_u32: state ^= state >> 12,
 * ^= << 25, ^= >> 27, return (state * 0x2545F4914F6CDD1D) >> 32.
 * state must not be 0. */
uint32_t tsr_rng_u32(uint64_t *state);
/* (tsr_rng_u32 >> 8) / 2^24, in [0, 1). */
float tsr_rng_f32(uint64_t *state);

/* Sample a token from logits (n,), which is overwritten (probabilities).
 * temperature <= 0 or top_p <= 0: argmax (first max).  Otherwise softmax of
 * logits / temperature, one coin from rng, then multinomial (top_p >= 1) or
 * nucleus sampling as llama2.c's sample_topp: candidates with p >= (1 -
 * top_p) / (n - 1), taken in descending p (ties: lower id first) until the
 * cumulative p exceeds top_p.  The descending order comes from a bounded
 * binary heap (no recursion).  cand_p, cand_i: (n,) scratch.  *cy (may be
 * NULL) gets the cycles its loops charge. */
int32_t tsr_sample(float *logits, uint32_t n, float temperature, float top_p, uint64_t *rng,
                   float *cand_p, int32_t *cand_i, uint32_t *cy);

/* ---- the mesh (mesh.c) ------------------------------------------------- */

/* Item it's input of the next GEMV: xn = w * (ss * x), (n,), x its
 * residual stream (TSR_CV_X), w norm weight row `row` of st->rms (rms_att
 * of layer l at row l, rms_ffn at L + l, rms_final at 2L), into its
 * TSR_CV_XN (ready: a gather or attention wrote xn and its word maxima
 * already; row and ss unused); then quantized (Q8, in groups of G, as
 * tsr_quantize) or zero padded (F32) and broadcast into every PE's copy
 * for item it (xq/xs or xf [p][it]).  Charged to INPUT. */
void tsr_mesh_input(tsr_kstate *st, uint32_t it, uint32_t n, uint32_t row, float ss,
                    uint32_t ready);

/* W (d, n) @ input -> each PE's psum, for matrix mat and the nx items of
 * the pass (item x's input in the PEs' copies [x], its outputs in psum[p]
 * [x]; each weight word read once for all of them: a GEMM of nx columns):
 * every PE its tile (W13: both halves), then the column adder trees when
 * C_m > 1, then on each mesh row's root SwiGLU (W13) or, flags
 * TSR_JOB_ARGMAX, its best row per item (greedy).  Charged to GEMV
 * (busiest PE), TREE and ARGMAX. */
void tsr_mesh_gemv(tsr_kstate *st, uint32_t mat, uint32_t nx, uint32_t flags);

/* How tsr_mesh_gather treats each word on its way in. */
#define TSR_GATHER_ADD    1u  /* y += out (the residual); with TSR_SSQ_FUSED
                                 also RMSNorm's partials of the new y    */
#define TSR_GATHER_INPUT  2u  /* y is xn, the next GEMV input: its word
                                 maxima, zeros up to the group padding    */
#define TSR_GATHER_QKV    4u  /* q | k | v: RoPE on q and k (this token's
                                 angles), each word on to the attention
                                 PEs (query slices; k, v of this position
                                 to the PE storing it)                   */
#define TSR_GATHER_LOGITS 8u  /* y is the item's logits (st->logits[it],
                                 it < TSR_MAX_BATCH), not its vectors    */

/* Item it's GEMV outputs of mat (d rows; W13: the SwiGLU outputs) from the
 * mesh rows' roots into y (d,), its vectors from word yw (TSR_CVW_*), or
 * its logits, TSR_VEC a cycle: y = out, or as flags say (TSR_GATHER_*;
 * pos: its position, for QKV).  Charged to GATHER. */
void tsr_mesh_gather(tsr_kstate *st, uint32_t mat, uint32_t it, uint32_t yw, uint32_t flags,
                     uint32_t pos);

/* A gather's words: d's, or (into xn, TSR_GATHER_INPUT) up to the next
 * GEMV's group padding. */
static inline uint32_t tsr_gather_words(const tsr_kstate *st, uint32_t d, uint32_t flags)
{
#pragma HLS INLINE
    return flags & TSR_GATHER_INPUT ? ((d + st->cfg.group - 1u) >> st->g_log2) << st->g_log2 : d;
}

#ifndef __SYNTHESIS__
/* A gather's cycles (tsr_cycles.h) for d rows into nout words: a word a
 * cycle, with the vector unit's depth for RoPE (and, fused, the residual's
 * sum of squares); the emulator's and C simulation's accounting only
 * (TSR_CHARGE). */
static inline uint32_t tsr_gather_cycles(uint32_t flags, uint32_t d, uint32_t nout, uint32_t bias)
{
#if TSR_SSQ_FUSED
    uint32_t vec = flags & (TSR_GATHER_QKV | TSR_GATHER_ADD);
#else
    uint32_t vec = flags & TSR_GATHER_QKV;
#endif
    /* over SLRs, the crossings' registers: extra iterations (mesh.c) */
    tsr_cy_slr f = TSR_CY_SLR;
    if (flags & TSR_GATHER_QKV) return tsr_cy_gather_qkv(d, bias) + f.gather + f.latch;
    return f.gather + (vec ? tsr_cy_gather_vec(d)
                           : flags & TSR_GATHER_INPUT ? tsr_cy_gather_input(nout) : tsr_cy_gather(d));
}
#endif

/* Item it's greedy token after tsr_mesh_gemv(mat, .., TSR_JOB_ARGMAX): the
 * roots' bests reduced by a tree (the first maximum, as tsr_argmax).
 * Charged to ARGMAX. */
int32_t tsr_mesh_best(tsr_kstate *st, uint32_t mat, uint32_t it);

/* Item it's x (dim,, TSR_CV_X) = row `token` of the embedding table,
 * gathered from the PEs of its row block (dequantized in Q8 mode: q *
 * scale).  Charged to EMBED. */
void tsr_mesh_embed(tsr_kstate *st, uint32_t it, uint32_t token);

/* ---- attention (attention.c) ------------------------------------------- */

/* Layer l of item it (slot at position pos), after its QKV gather
 * (TSR_GATHER_QKV)
 * latched q | k | v into every attention PE's copy (qkvw): they store
 * this position's k, v on the PE that holds pos and run their query heads
 * over positions 0..pos (GQA); then the head outputs into xn (TSR_CV_XN,
 * dim, zero padded to the group, with its word maxima: the WO input,
 * tsr_mesh_input, ready).
 * Charged to ATT_IO, ATTN and ATT_TREE. */
void tsr_attention(tsr_kstate *st, uint32_t it, uint32_t slot, uint32_t l, uint32_t pos);

/* Positions 0..pos that attention PE p's place q in its group holds: those
 * t <= pos with t % Q == q (Q a power of two: pos = (pos >> log2 Q) Q +
 * (pos & (Q - 1))). */
static inline uint32_t tsr_att_local_positions(const tsr_kstate *st, uint32_t p, uint32_t pos)
{
#pragma HLS INLINE
    return (pos >> st->q_log2) + (st->kv_q[p] <= (pos & (st->cfg.kv_split - 1u)) ? 1u : 0u);
}

#ifndef __SYNTHESIS__
/* For a platform that schedules attention's steps itself (tsr_platform.h
 * TSR_FAST_STAGE_OUTPUTS; emu/passes.c): attention PE p's task of a step,
 * as tsr_attention runs it for an active PE: the phase job->flags (kind
 * TSR_ATT_STEP_PHASE), or the group tree's level of stride s up or down.
 * Returns the cycles it charged (0 for a PE that takes no part). */
enum { TSR_ATT_STEP_PHASE = 0, TSR_ATT_STEP_UP, TSR_ATT_STEP_DOWN };
uint32_t tsr_att_step(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t kind, uint32_t s);

/* The work counters tsr_attention counts for a position pos. */
void tsr_att_counts(tsr_kstate *st, uint32_t pos);
#endif

/* ---- forward pass (forward.c) ------------------------------------------ */

/* A layer's four stages, in order (the matrices TSR_MAT_LAYER(l, w)). */
enum { TSR_LAYER_QKV = 0, TSR_LAYER_WO, TSR_LAYER_W13, TSR_LAYER_W2 };

/* Stage k's input (k < 4 L: layer k / 4, place k % 4; 4 L: the
 * classifier's): RMSNorm of x with norm weights row (rms_att, rms_ffn,
 * rms_final), or (norm 0) the n values attention or the W13 gather left. */
static inline void tsr_stage_input(uint32_t k, uint32_t L, uint32_t dim, uint32_t hidden,
                                   uint32_t *norm, uint32_t *row, uint32_t *n)
{
    uint32_t last = k == 4u * L, w = k % 4u, l = k / 4u;
    *norm = last || w == TSR_LAYER_QKV || w == TSR_LAYER_W13;
    *row = last ? 2u * L : w == TSR_LAYER_QKV ? l : L + l;
    *n = *norm || w == TSR_LAYER_WO ? dim : hidden;
}

/* What a forward pass leaves for an item: nothing (prefill), the greedy
 * token (the argmax on the mesh), or the logits in st->logits[item]
 * (sampling, READ_LOGITS).  TSR_FWD_GATHER runs no pass: it gathers the
 * logits a greedy pass left on the mesh for item 0 (READ_LOGITS). */
enum { TSR_FWD_NONE = 0, TSR_FWD_GREEDY, TSR_FWD_LOGITS, TSR_FWD_GATHER };

/* One item of a forward pass: a token of slot at pos (its KV cache at pos
 * gets the token's keys and values), and what the pass leaves for it. */
typedef struct tsr_item {
    uint32_t slot, token, pos;
    uint32_t mode;      /* TSR_FWD_*; the same for every item of a prefill block */
    int32_t  next;      /* out: the greedy token (TSR_FWD_GREEDY)            */
} tsr_item;

/* Run the nx items (1..TSR_MAX_BLOCK) through the model in one pass: the
 * embeddings, then one stage per matrix (4 per layer, the classifier last
 * unless every item's mode is TSR_FWD_NONE), each the items' inputs, one
 * GEMV for all of them (each weight word read once), their gathers and,
 * after QKV, each item's attention in item order (a prompt block's later
 * positions see the earlier ones: causal).  Each item's arithmetic is the
 * one of a pass of its own, so a block or a batch gives bit for bit the
 * tokens, logits and KV cache of its items run one by one.  A batch has
 * at most one item a slot and nx <= TSR_MAX_BATCH when any item wants
 * its logits. */
/* A pipeline stage (kconfig.stage): with TSR_STAGE_LINK_IN the items'
 * residual vectors come from link_in (their dim fp32 each, in item order,
 * behind the header FORWARD checked) instead of the embedding; with
 * TSR_STAGE_LINK_OUT the pass ends by writing the header (n, slot, pos,
 * dim of item 0) and each item's residual vector to link_out instead of
 * the classifier.  NULL where the stage has no such port. */
void tsr_forward(tsr_kstate *st, tsr_item *items, uint32_t nx, volatile const float *link_in,
                 volatile float *link_out);

#ifndef __SYNTHESIS__
#pragma GCC diagnostic pop
#endif

#endif
