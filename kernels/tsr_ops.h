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
#ifdef TSR_EMU
    uint64_t xkey;      /* GEMV: names its inputs (tsr_emu_tile_q8t), or 0  */
#endif
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

/* The PE whose copy of a broadcast input (xq, xs, xf) PE p's GEMV reads:
 * its own in hardware, where every PE latches each word off the bus; PE
 * 0's in the emulator, which writes only that copy (the same bytes: a
 * broadcast's copies are equal by construction). */
#ifdef TSR_EMU
#define TSR_BCAST_SRC(p) ((void)(p), 0u)
#else
#define TSR_BCAST_SRC(p) (p)
#endif

/* PE p's tile of matrix m (CONFIGURE's tables, one plain array a field). */
static inline tsr_ktab tsr_ktab_of(const tsr_kstate *st, uint32_t p, uint32_t m)
{
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

#ifdef TSR_EMU
#include "tsr_emu.h"

/* The emulator's transposed units (emu/tsr_emu.h): 1 when matrix m's
 * tiles have them (a Q8_0 tile at G = 32, on a CPU that runs them). */
static inline uint32_t tsr_emu_tr_mat(const tsr_kstate *st, uint32_t m)
{
    return st->emu_tr && !st->mat_q4[m];
}

/* Where the emulator keeps layout byte a of PE p's int8 array, a byte of
 * matrix m's tile (tab_woff <= a), and in *flip what its value is XORed
 * with (0x80 in a transposed unit, else 0): a itself outside the tile's
 * full blocks (its tail blocks, the padding after it) or when m has no
 * transposed units. */
static inline uint32_t tsr_emu_w8_place(const tsr_kstate *st, uint32_t p, uint32_t m, uint32_t a,
                                        uint32_t *flip)
{
    uint32_t rel = a - st->tab_woff[p][m], half = st->tab_ent[p][m] * 32u;
    uint32_t full = st->tab_rows[p][m] / 8u * 8u * st->tab_ng[p][m] * 32u;
    *flip = 0;
    if (!tsr_emu_tr_mat(st, m)) return a;
    if (st->mat_pair[m] && rel >= half) rel -= half;   /* W13's second half */
    if (rel >= full) return a;                         /* a tail block, or past the tile */
    *flip = 0x80u;
    return a - (rel & 255u) + tsr_emu_tr_byte(rel & 255u);
}
#endif

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

#ifdef TSR_EMU
/* The emulator's stand-in for the QKV gather's per-word latches (mesh.c):
 * of q | k | v (TSR_CV_QKV), what each attention PE reads of its copy
 * (its heads' q slices; the k, v of position pos on the PE storing it).  Also for tests that write q | k | v themselves. */
void tsr_att_latch_qkv(tsr_kstate *st, uint32_t it, uint32_t pos);
#endif

/* ---- forward pass (forward.c) ------------------------------------------ */

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

/* The emulator shares a pass's (nx > 1 items) per-item work among its
 * worker pool: the inputs and the gathers an item at a time, attention a
 * KV head group at a time (tsr_attention_pass); a TSR_SERIAL_PES build
 * keeps tsr_attention's steps, whose charges are sums over the PEs. */
#if defined(TSR_EMU) && !defined(TSR_SERIAL_PES)
#define TSR_EMU_PASS 1
#else
#define TSR_EMU_PASS 0
#endif

#if TSR_EMU_PASS
/* tsr_attention(st, b, items[b].slot, l, items[b].pos) for b = 0..nx-1,
 * in that order as far as any memory can tell (items of one slot see each
 * other's k, v as they would): the worker pool takes a KV head group at a
 * time through every item.  The same results and the same charges, bit
 * for bit; one pool step instead of nx times the phases and tree levels.
 * Needs the items' q | k | v in cv (the QKV gathers); leaves each item's
 * xn and word maxima as tsr_attention does. */
void tsr_attention_pass(tsr_kstate *st, const tsr_item *items, uint32_t nx, uint32_t l);

/* tsr_mesh_gather(st, mat, b, yw, flags, pos) for b = 0..nx-1, the items
 * shared out among the worker pool (each writes only its own vectors),
 * without the QKV latch (tsr_attention_pass latches each item itself):
 * the same values and charges.  then (optional) runs then(then_ctx, b)
 * right after item b's gather, in the same pool step (then_work: its
 * multiply-adds for all nx, the pool's share-out measure); it must touch
 * only item b's vectors. */
void tsr_mesh_gather_pass(tsr_kstate *st, uint32_t mat, uint32_t nx, uint32_t yw, uint32_t flags,
                          tsr_emu_item then, void *then_ctx, uint64_t then_work);
#endif

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

#endif
