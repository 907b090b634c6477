/*
 * plan.c - fit, blocks, DSPs and projected speed of a model on an FPGA part
 * (`tessera plan`, and the cycle split of `tessera run --stats`).
 *
 *   model config + options --tsr_wimage_config--> kconfig (mesh, seq, G, Q)
 *     bytes per PE:   the layout's tile sums (tsr_lay_pe_weights), KV words
 *     blocks, DSPs:   the arrays as tessera_top partitions them, packed into
 *                     BRAM36 / URAM ("Packing"); the operators the kernel's
 *                     loops instantiate ("DSPs")
 *     fit:            against hw/parts.def minus the shell; if not, the
 *                     smallest change that fits (context, int8 KV, cards)
 *     cycles:         tsr_plan_step: the kernel's own charges for a decode
 *                     step (kernels/tsr_cycles.h), walked in the order
 *                     tsr_forward runs them
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "profiles.h"
#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* Assumptions that are not the kernel's (its are in kernels/tsr_arch.h)      */

/* Packing.  UltraRAM: 4K x 72 bits, one aspect ratio only (UG573 for
 * UltraScale+, UG949 "Mapping Memories to UltraRAM Blocks", AM007 for
 * Versal), so a memory of words up to 72 bits wide takes one URAM per 4096
 * words of depth, however narrow its words: a bank of 9,216 fp32 words is 3
 * URAMs, not the 36,864 bytes' 2.  BRAM36: 1K x 36 (32 data bits) down to
 * 32K x 1, so BRAM36 blocks go by data bytes.  A PE's int8 array is
 * reshaped to TSR_LANES-byte words (256 bits): 4 URAMs side by side, 4096
 * words deep each.  A partitioned array is one memory per
 * bank; a bank of at most LUTRAM_WORDS words goes to LUTs (HLS's own choice
 * for small memories: unverified until csynth). */
#define HW_URAM_DEPTH      4096u
#define HW_URAM_BYTES      32768u   /* 4096 x 64 data bits: a capacity, not a packing */
#define HW_BRAM_BYTES      4096u
#define HW_W8_URAM_WIDE    4u
#define LUTRAM_WORDS       64u
/* DSPs of the operators (Vitis HLS floating-point cores, full-DSP
 * implementations, PG060): fp32 multiply 3, add 2; expf and cosf/sinf are
 * HLS math-library cores, counted at 7 and 10 (unverified until csynth);
 * int8 multiplies are bound to LUTs (BIND_OP impl=fabric), dividers and
 * compares use none. */
#define DSP_FMUL           3
#define DSP_FADD           2
#define DSP_EXP            7
#define DSP_TRIG           10
/* PE counts `plan` tries when none is given, and the count it reports
 * when nothing fits. */
#define PLAN_MAX_PES       256
#define PLAN_DEFAULT_PES   16
/* The datapath planned without --profile: the speed profile's. */
#define PLAN_DATAPATH      "stories15m"

const char *tsr_plan_assumptions(void)
{
    return "the cycle accounting of kernels/tsr_cycles.h (II and depths of kernels/tsr_arch.h: "
           "32 int8 lanes and 8 interleaved rows per PE at II=1, a 16-float controller bus, "
           "8 fp32 attention lanes, fp32 add recurrences 8 cycles apart); a card-to-card hop "
           "1000 cycles (TSR_LINK_HOP) plus the residual vector a word a cycle; PE int8 tiles as 256-bit words in URAM, the KV cache as words of 8 lanes, other arrays per partition "
           "bank in BRAM36 (<= 64 words: LUTRAM); fp32 multiply 3 DSP, add 2, expf 7, cos/sin "
           "10, int8 MACs in LUTs; LUTs and FFs per operator instance from hw/ops.def (estimates "
           "until a csynth); a fit is every resource under the ceiling of what the shell leaves";
}

static uint64_t cdiv64(uint64_t a, uint64_t b) { return (a + b - 1u) / b; }

static const char *const rg_names[TSR_RG_COUNT] = {
    "embed", "norm", "input", "gather", "rope", "attention_io", "sample", "link",
    "gemv", "tree", "attention", "attention_tree", "argmax"
};

const char *tsr_plan_region_name(int rg)
{
    return rg >= 0 && rg < TSR_RG_COUNT ? rg_names[rg] : "?";
}

/* ------------------------------------------------------------------------ */
/* Cycles of a decode step: the kernel's charges, from the layout             */

typedef struct layout {
    const tsr_kconfig *kc;
    uint32_t P, att_parts, rot[TSR_WIMAGE_MAX_MATS], cols[TSR_WIMAGE_MAX_MATS];
} layout;

static tsr_tile tile_of(const layout *L, uint32_t m, uint32_t p)
{
    return tsr_lay_tile(L->kc, m, L->rot[m], p);
}

/* The slowest mesh row root's step (pe_root: one per row, at PE p with
 * p % C == 0) of matrix m for nx items, cy(rows) cycles an item. */
static uint32_t root_worst(const layout *L, uint32_t m, uint32_t C, uint32_t nx,
                           uint32_t (*cy)(uint32_t))
{
    uint32_t worst = 0;
    for (uint32_t p = 0; p < L->P; p += C) {
        tsr_tile t = tile_of(L, m, p);
        uint32_t c = t.rows ? nx * cy(t.rows) : 0u;
        if (c > worst) worst = c;
    }
    return worst;
}

/* tsr_mesh_gemv of matrix m (mesh.c) for a pass of nx items: the PE tiles
 * (each weight word held while the nx items pass it: the tile's steps nx
 * times, its pipeline's depth once), the column tree (C_m > 1), then on
 * the mesh rows' roots SwiGLU (W13) or the best rows (argmax), each level
 * and root step once an item. */
static void step_gemv(const layout *L, uint32_t m, int argmax, uint32_t nx, uint64_t *rg)
{
    const tsr_kconfig *kc = L->kc;
    uint32_t d, n, pair, worst = 0, C = L->cols[m];
    tsr_lay_mat_shape(kc, m, &d, &n, &pair);
    uint32_t halves = pair ? 2u : 1u;
    for (uint32_t p = 0; p < L->P; p++) {
        tsr_tile t = tile_of(L, m, p);
        if (t.rows == 0) continue;
        uint32_t cy = t.ngroups == 0 ? nx * tsr_cy_zero(halves * t.rows)
                                     : halves * tsr_cy_tile(nx * tsr_lay_tile_steps(kc, t.rows, t.ngroups));
        if (cy > worst) worst = cy;
    }
    rg[TSR_RG_GEMV] += worst;
    if (C > 1u) {
        for (uint32_t lvl = 0; (1u << lvl) < C; lvl++) {
            uint32_t s = 1u << lvl;
            worst = 0;
            for (uint32_t p = 0; p < L->P; p++) {
                uint32_t c = p & (C - 1u);
                if ((c & (2u * s - 1u)) != 0 || c + s >= C) continue;
                tsr_tile t = tile_of(L, m, p);
                uint32_t cy = nx * tsr_cy_tree_level(halves * t.rows);
                if (cy > worst) worst = cy;
            }
            rg[TSR_RG_TREE] += worst;
        }
    }
    if (pair) rg[TSR_RG_GEMV] += root_worst(L, m, C, nx, tsr_cy_swiglu);
    if (argmax) rg[TSR_RG_ARGMAX] += root_worst(L, m, C, nx, tsr_cy_best);
}

/* tsr_attention at pos (attention.c): the bus both ways, the KV PEs'
 * phases (one step when Q == 1), the group trees. */
static void step_attention(const layout *L, uint32_t S_pe, uint32_t pos, uint64_t *rg)
{
    const tsr_kconfig *kc = L->kc;
    uint32_t hs = tsr_lay_head_size(kc), km = tsr_lay_kv_mul(kc), Q = kc->kv_split;
    uint32_t pq = pos % Q, pd = pos / Q;
    uint32_t ws = 0, we = 0, wv = 0, wall = 0;   /* the busiest PE per phase */
    for (uint32_t p = 0; p < kc->att_pes; p++) {
        uint32_t h0, q, nh = tsr_lay_kv_heads(kc, p, &h0, &q);
        if (nh == 0) continue;
        uint32_t nl = pd + (q <= pq ? 1u : 0u);
        uint32_t kvt = kc->kv_dtype;
        uint32_t sc = nh * ((q == pq ? tsr_cy_att_store(hs, kvt) : 0u) +
                            km * tsr_cy_att_scores(hs, nl, L->att_parts, kvt));
        uint32_t ex = nh * km * tsr_cy_att_exp_s(nl, S_pe), va = nh * km * tsr_cy_att_values(hs, nl, kvt);
        if (sc > ws) ws = sc;
        if (ex > we) we = ex;
        if (va > wv) wv = va;
        if (sc + ex + va > wall) wall = sc + ex + va;
    }
    if (Q == 1u) {
        rg[TSR_RG_ATTN] += wall;
    } else {
        uint32_t levels = tsr_cy_log2(Q);
        rg[TSR_RG_ATTN] += ws + we + wv;
        rg[TSR_RG_ATT_TREE] += 2u * levels * tsr_cy_att_tree_max(km) +
                               2u * levels * tsr_cy_att_tree_sum(km) +
                               levels * tsr_cy_att_tree_values(km, hs);
    }
    rg[TSR_RG_ATT_IO] += tsr_cy_att_collect(tsr_cdiv(kc->dim, kc->group) * kc->group);
}

/* A pass's charges that do not depend on its positions, into rg: every
 * one but attention's (plan_attention).  A projection over many positions
 * computes them once (integer sums: the order of the additions changes
 * nothing). */
static void plan_fixed(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                       uint32_t nx, int classify, uint64_t *rg)
{
    layout L = { kc, tsr_lay_pes(kc), 0u, { 0 }, { 0 } };   /* att_parts: attention's alone */
    uint32_t nm = tsr_lay_n_mats(kc), rot = 0, G = kc->group;
    for (uint32_t m = 0; m < nm && m < TSR_WIMAGE_MAX_MATS; m++) {
        L.rot[m] = rot;
        L.cols[m] = tsr_lay_mat_cols(kc, m);
        rot = tsr_lay_rot_next(kc, m, rot);
    }
    int q8 = kc->dtype == TSR_KDT_Q8;
    uint32_t dim = kc->dim, hid = kc->hidden_dim, hs = tsr_lay_head_size(kc);

    /* each item: its embedding row, each mesh column's groups of it (a
     * pipeline stage after the first: the pass's vectors off link-in, the
     * hop and a word a cycle), and its position's RoPE angles */
    if (kc->stage & TSR_STAGE_LINK_IN) rg[TSR_RG_LINK] += tsr_cy_link_in(nx, dim);
    for (uint32_t cc = 0; !(kc->stage & TSR_STAGE_LINK_IN) && cc < L.cols[TSR_MAT_EMB]; cc++) {
        tsr_tile t = tile_of(&L, TSR_MAT_EMB, cc);
        uint32_t c0 = t.g0 * G, c1 = c0 + t.ngroups * G;
        c1 = c1 < kc->dim ? c1 : kc->dim;
        rg[TSR_RG_EMBED] += (uint64_t)nx * tsr_cy_embed(t.ngroups, G, c1 > c0 ? c1 - c0 : 0u, q8);
    }
    rg[TSR_RG_ROPE] += (uint64_t)nx * tsr_cy_rope_angles(hs);
    /* TSR_SSQ_FUSED (tsr_profile.h): the residual gathers leave RMSNorm's
     * partials, so a norm after one is its levels alone */
    int fused = sum_lanes >= TSR_VEC * TSR_FADD_LAT;
    uint32_t hid_pad = tsr_cdiv(hid, G) * G;
    for (uint32_t l = 0; l < kc->n_layers; l++) {
        /* per stage: each item's norm and input, one GEMV for all, each
         * item's gather */
        rg[TSR_RG_NORM] += (uint64_t)nx * tsr_cy_norm_s(dim, sum_lanes, fused && l > 0);
        rg[TSR_RG_INPUT] += (uint64_t)nx * tsr_cy_input(dim, G, q8);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_QKV), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * tsr_cy_gather_qkv(dim + 2u * tsr_lay_kv_dim(kc), kc->qkv_bias);   /* bias, RoPE */
        /* (here each item's attention at its position: plan_attention) */
        rg[TSR_RG_INPUT] += (uint64_t)nx * tsr_cy_input_ready(dim, G, q8);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_O), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * (fused ? tsr_cy_gather_vec(dim) : tsr_cy_gather(dim));
        rg[TSR_RG_NORM] += (uint64_t)nx * tsr_cy_norm_s(dim, sum_lanes, fused);
        rg[TSR_RG_INPUT] += (uint64_t)nx * tsr_cy_input(dim, G, q8);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_13), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * tsr_cy_gather_input(hid_pad);
        rg[TSR_RG_INPUT] += (uint64_t)nx * tsr_cy_input_ready(hid, G, q8);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_2), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * (fused ? tsr_cy_gather_vec(dim) : tsr_cy_gather(dim));
    }
    if (kc->stage & TSR_STAGE_LINK_OUT) {
        /* a stage before the last: the pass's vectors onto link-out */
        rg[TSR_RG_LINK] += tsr_cy_link_out(nx, dim);
    } else if (classify) {
        /* each item's final norm, the classifier for all, each item's
         * greedy token: the roots' bests, a tree over the profile's PEs,
         * the id to the host */
        rg[TSR_RG_NORM] += (uint64_t)nx * tsr_cy_norm_s(dim, sum_lanes, fused);
        rg[TSR_RG_INPUT] += (uint64_t)nx * tsr_cy_input(dim, G, q8);
        step_gemv(&L, tsr_lay_mat_wcls(kc), 1, nx, rg);
        rg[TSR_RG_ARGMAX] += (uint64_t)nx * tsr_cy_log2(profile_pes) * TSR_D_CMP;
        rg[TSR_RG_SAMPLE] += (uint64_t)nx * TSR_D_BUS;
    }
}

/* Attention's charges of a pass, into rg: each of the nx items at pos[b],
 * every layer alike (tsr_attention). */
static void plan_attention(const tsr_kconfig *kc, uint32_t sum_lanes, const uint32_t *pos,
                           uint32_t nx, uint64_t *rg)
{
    /* the profile's TSR_ATT_PARTS (tsr_profile.h) */
    layout L = { kc, tsr_lay_pes(kc), sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u, { 0 }, { 0 } };
    uint32_t S_pe = sum_lanes < TSR_FADD_LAT ? sum_lanes : TSR_FADD_LAT;
    uint64_t att[TSR_RG_COUNT] = { 0 };
    for (uint32_t b = 0; b < nx; b++) step_attention(&L, S_pe, pos[b], att);
    for (int r = 0; r < TSR_RG_COUNT; r++) rg[r] += (uint64_t)kc->n_layers * att[r];
}

/* c's controller, mesh and total from its regions. */
static void plan_totals(tsr_plan_cycles *c)
{
    c->controller = c->mesh = 0;
    for (int r = 0; r < TSR_RG_COUNT; r++) {
        if (r < TSR_RG_FIRST_MESH) c->controller += c->rg[r];
        else c->mesh += c->rg[r];
    }
    c->total = c->controller + c->mesh;
}

/* A pass's position-independent regions (plan_fixed), to be completed by
 * pass_at for each set of positions. */
static void pass_fixed(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                       uint32_t nx, int classify, tsr_plan_cycles *fixed)
{
    memset(fixed, 0, sizeof *fixed);
    plan_fixed(kc, sum_lanes, profile_pes, nx, classify, fixed->rg);
}

/* c = fixed (pass_fixed of the same kc, sum_lanes and nx) with the nx
 * items' attention at pos: tsr_plan_pass's figures. */
static void pass_at(const tsr_plan_cycles *fixed, const tsr_kconfig *kc, uint32_t sum_lanes,
                    const uint32_t *pos, uint32_t nx, tsr_plan_cycles *c)
{
    *c = *fixed;
    plan_attention(kc, sum_lanes, pos, nx, c->rg);
    plan_totals(c);
}

void tsr_plan_pass(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                   const uint32_t *pos, uint32_t nx, int classify, tsr_plan_cycles *c)
{
    tsr_plan_cycles fixed;
    pass_fixed(kc, sum_lanes, profile_pes, nx, classify, &fixed);
    pass_at(&fixed, kc, sum_lanes, pos, nx, c);
}

void tsr_plan_step(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes, uint32_t pos,
                   tsr_plan_cycles *c)
{
    tsr_plan_pass(kc, sum_lanes, profile_pes, &pos, 1, 1, c);
}

uint64_t tsr_plan_prefill(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                          uint32_t n, uint32_t block, uint32_t *passes)
{
    uint32_t pos[TSR_PLAN_MAX_ITEMS], B = block < 1u ? 1u : block > TSR_PLAN_MAX_ITEMS ? TSR_PLAN_MAX_ITEMS : block;
    uint64_t cy = 0;
    uint32_t np = 0, fixed_nx = 0;   /* the passes' sizes: B, and the last's */
    tsr_plan_cycles fixed, c;
    for (uint32_t p0 = 0; p0 < n; p0 += B, np++) {
        uint32_t nx = n - p0 < B ? n - p0 : B;
        for (uint32_t b = 0; b < nx; b++) pos[b] = p0 + b;
        if (nx != fixed_nx) pass_fixed(kc, sum_lanes, profile_pes, fixed_nx = nx, 0, &fixed);
        pass_at(&fixed, kc, sum_lanes, pos, nx, &c);
        cy += c.total;
    }
    if (passes) *passes = np;
    return cy;
}

/* ------------------------------------------------------------------------ */
/* Packing                                                                    */

static long bram_of(uint64_t bytes) { return bytes ? (long)cdiv64(bytes, HW_BRAM_BYTES) : 0; }
/* URAMs of one memory of `depth` words of at most 72 bits (4096 deep each). */
static long uram_of_depth(uint64_t depth) { return depth ? (long)cdiv64(depth, HW_URAM_DEPTH) : 0; }

/* An array of n elements of `bytes` each, partitioned cyclically into
 * `banks` memories: BRAM36 blocks (0 when each bank is LUTRAM-small). */
static long banked_bram(uint64_t n, uint32_t bytes, uint32_t banks)
{
    uint64_t per = cdiv64(n, banks);
    if (per <= LUTRAM_WORDS) return 0;
    return (long)banks * bram_of(per * bytes);
}

/* The blocks of one PE's memories: int8 tiles, fp32 array, KV cache,
 * partial sums, the input's scales, and on an attention PE its scores,
 * head outputs, copy of q | k | v and pe_att's accumulators and
 * coefficients (kernels/tsr_kernel.c tessera_top's partitions and
 * BIND_STORAGE, attention.c pe_att's locals). */
typedef struct pe_arrays {
    uint64_t w8_bytes, f32_words, rows, att_words, in_bytes, xs_words;
    uint64_t kv_elems[3];  /* the KV caches' elements: fp32, IEEE half, int8
                              (each one memory of TSR_ATT_LANES-lane words) */
    uint64_t kvs_words;    /* the int8 cache's scales (one memory, unpartitioned) */
    uint64_t acc_words;   /* attention: pe_att's accumulators, one row of them,
                             and its coefficients */
    uint32_t acc_parts;   /* and its rows (TSR_ATT_PARTS) */
    uint64_t ao_words, qkv_words;   /* attention: head outputs, q | k | v copy */
    int f32_uram, kv_uram;
} pe_arrays;

static void pe_blocks(const pe_arrays *a, long *uram, long *bram)
{
    uint64_t words = cdiv64(a->w8_bytes, TSR_LANES);
    long u = a->w8_bytes ? (long)(HW_W8_URAM_WIDE * cdiv64(words, HW_URAM_DEPTH)) : 0, b = 0;
    if (a->f32_uram) u += uram_of_depth(a->f32_words);
    else b += bram_of(4u * a->f32_words);
    static const uint32_t kv_elem_bytes[3] = { 4u, 2u, 1u };
    for (int t = 0; t < 3; t++) {
        /* one memory of words of TSR_ATT_LANES lanes (ARRAY_RESHAPE):
         * URAMs side by side for its width (72 bits each), deep for its
         * words; BRAM36 by bytes (512 x 72 at these widths) */
        uint64_t words = cdiv64(a->kv_elems[t], TSR_ATT_LANES);
        if (!words) continue;
        uint32_t bits = TSR_ATT_LANES * 8u * kv_elem_bytes[t];
        if (a->kv_uram) u += (long)((bits + 71u) / 72u) * uram_of_depth(words);
        else b += bram_of(words * (bits / 8u));
    }
    if (a->kvs_words > LUTRAM_WORDS) {
        if (a->kv_uram) u += uram_of_depth(a->kvs_words);
        else b += bram_of(4u * a->kvs_words);
    }
    b += banked_bram(a->rows, 4u, TSR_VEC) + banked_bram(a->xs_words, 4u, 1u);
    if (a->att_words) {
        b += banked_bram(a->att_words, 4u, TSR_ATT_LANES) + banked_bram(a->ao_words, 4u, TSR_ATT_LANES) +
             banked_bram(a->qkv_words, 4u, TSR_VEC);
        /* pe_att's acc: parts rows, each TSR_ATT_LANES banks; coef: one */
        b += (long)a->acc_parts * banked_bram(a->acc_words, 4u, TSR_ATT_LANES) +
             banked_bram(a->acc_words, 4u, 1u);
    }
    /* the broadcast input: TSR_LANES-byte words, 512 x 72-bit BRAM36 deep */
    uint64_t in_words = cdiv64(a->in_bytes, TSR_LANES);
    if (in_words > LUTRAM_WORDS) b += 4 * (long)cdiv64(in_words, 512);
    *uram = u;
    *bram = b;
}

static uint64_t pad32(uint64_t n) { return (n + 31u) / 32u * 32u; }

/* The controller's memories: the norm weights as rows (and the QKV
 * biases, a model with them), each item's vectors
 * (x, xn, q | k | v) in one memory and a batch's logits in another,
 * TSR_VEC banks each; the
 * sampler's copy in TSR_SUM_E banks, its candidates in one memory each;
 * the quantizer's scratch and the tables are LUTRAM-small. */
static long ctrl_blocks(uint64_t dim, uint64_t kvd, uint64_t vocab, uint64_t layers, uint64_t nmax,
                        uint32_t sum_lanes, uint32_t block, uint32_t batch, uint32_t qkv_bias)
{
    uint32_t E = sum_lanes >= TSR_FADD_LAT ? sum_lanes / TSR_FADD_LAT : 1u;
    /* per item of a pass: x, xn, q | k | v; per batch item: the logits */
    uint64_t cv = pad32(dim) + pad32(nmax + TSR_LANES) + pad32(dim + 2u * kvd);
    return banked_bram((2u * layers + 1u) * pad32(dim), 4u, TSR_VEC) +
           (qkv_bias ? banked_bram(layers * pad32(dim + 2u * kvd), 4u, TSR_VEC) : 0) +
           banked_bram(cv * block, 4u, TSR_VEC) + banked_bram(pad32(vocab) * batch, 4u, TSR_VEC) +
           banked_bram(vocab, 4u, E) + 2 * banked_bram(vocab, 4u, 1u);
}

/* ------------------------------------------------------------------------ */
/* DSPs: the floating-point operators of the kernel's loops                   */

/* Every PE: the Q8 tile's scale path (two multiplies, an add: mesh.c
 * pe_tile_q8; its int8 products are LUTs, BIND_OP fabric), the Q4 tile's
 * (the same, its own function: a profile with Q4_0), the F32 tile's
 * multiply-add (a profile with F32), SwiGLU (two multiplies, an add; its
 * expf in LUTs, BIND_OP fabric; the divide uses none). */
static long dsp_pe(int with_f32, int with_q4)
{
    long d = 2 * DSP_FMUL + DSP_FADD + 2 * DSP_FMUL + DSP_FADD;
    if (with_q4) d += 2 * DSP_FMUL + DSP_FADD;
    if (with_f32) d += DSP_FMUL + DSP_FADD;
    return d;
}

/* Tree-step instances: a level s < C's receivers p < P (p % 2s == 0, p + s
 * < P), one instance each, as the unrolled tree levels place them (mesh.c
 * TSR_TREE_RECV, attention.c TSR_ATT_UP_RECV). */
static long tree_instances(uint32_t P, uint32_t C)
{
    long n = 0;
    for (uint32_t s = 1; s < C; s *= 2u)
        for (uint32_t p = 0; p + s < P; p += 2u * s) n++;
    return n;
}

/* A column-tree step (mesh.c pe_tree_add): TSR_TREE_LANES adds
 * (ALLOCATION). */
static long dsp_tree(void) { return (long)TSR_TREE_LANES * DSP_FADD; }

/* A PE with attention (attention.c): TSR_ATT_LANES multiply-adds shared by
 * the scores and the values (pe_att_mac, ALLOCATION limit=1), the score
 * partials' tree (TSR_ATT_PARTS - 1 adds), the local sum's add and its
 * levels' add (pe_reduce_sum), the exponent's subtraction (pe_att_exp:
 * score - max), expf in LUTs.  kv_paths: bit TSR_KV_F16, TSR_KV_INT8 when
 * that cache is built: the half decoder in each lane (its multiply by a
 * power of two) and the store's encoder (a scale and the rounding's
 * subtract); the int8 scales' two multiplies (scores, weights) and the
 * store's rounding subtracts. */
static long dsp_att(uint32_t parts, uint32_t pe_sum_lanes, uint32_t kv_paths)
{
    long d = (long)TSR_ATT_LANES * (DSP_FMUL + DSP_FADD) + (long)(parts - 1u) * DSP_FADD +
             DSP_FADD + (pe_sum_lanes > 1u ? DSP_FADD : 0) + DSP_FADD;
    if (kv_paths & (1u << TSR_KV_F16)) d += (long)TSR_ATT_LANES * DSP_FMUL + 2 * (DSP_FMUL + DSP_FADD);
    if (kv_paths & (1u << TSR_KV_INT8)) d += 2 * DSP_FMUL + 2 * DSP_FADD;
    return d;
}

/* An up step of a KV head group's tree (attention.c pe_att_tree_up): the
 * weighted sums' TSR_ATT_LANES adds and the sum's one (the max compares
 * and the down steps' copies use none). */
static long dsp_att_tree(void) { return (long)(TSR_ATT_LANES + 1) * DSP_FADD; }

/* The controller's scalar operators (ops.c, sampler.c, tsr_kernel.c): the
 * norm's eps add, softmax's, the sampler's and top-p's adds and multiplies,
 * about 15 DSPs; its integer multiplies (the embedding's addresses, a
 * slot's layer base, the KV and answer strides, the RNG's 64-bit multiply),
 * about 40; CONFIGURE's powf, 64-bit KV word counts and the layout helpers'
 * multiplies and divides, at most 150.  Counted from the code by the third
 * HLS review (its N16); the figures per operator are PG060's, and csynth's
 * report replaces them. */
#define DSP_CTRL_SCALAR    15
#define DSP_CTRL_INT       40
#define DSP_CONFIGURE      150

/* The controller: the reduction's E lanes (a multiply-add each) in each of
 * its two inlined copies (softmax's sum, the norm's sum of squares: ops.c
 * reduce) and the E adds of each of the three sum_levels instances (those
 * two and the fused norm's), the Q8 input's two multiplies and the
 * rounding's subtraction per TSR_LANES lane (mesh.c tsr_mesh_input,
 * tsr_round_q8; its divides use none), the embedding's TSR_LANES
 * dequantizing multiplies, the gather's TSR_VEC residual adds, with the
 * fused sum of squares TSR_VEC multiply-adds more, and RoPE's TSR_VEC / 2
 * rotations (4 multiplies, 2 adds each), this token's angles (a multiply,
 * cosf, sinf), the sampler's expf, the scalars and CONFIGURE's. */
static long dsp_ctrl(uint32_t sum_lanes)
{
    long E = sum_lanes >= TSR_FADD_LAT ? (long)(sum_lanes / TSR_FADD_LAT) : 1;
    long fused = sum_lanes >= TSR_VEC * TSR_FADD_LAT;
    return 2 * E * (DSP_FMUL + DSP_FADD) + (2 + fused) * E * DSP_FADD +
           (long)TSR_LANES * (2 * DSP_FMUL + DSP_FADD) + (long)TSR_LANES * DSP_FMUL +
           (long)TSR_VEC * DSP_FADD + fused * (long)TSR_VEC * (DSP_FMUL + DSP_FADD) +
           (long)(TSR_VEC / 2) * (4 * DSP_FMUL + 2 * DSP_FADD) + DSP_FMUL + 2 * DSP_TRIG +
           DSP_EXP + DSP_CTRL_SCALAR + DSP_CTRL_INT + DSP_CONFIGURE;
}

/* The DSPs of P PEs (att_pes of them with attention, trees over C mesh
 * columns and Q PEs a KV head), the busiest PE's in *per_pe (PE 0: a
 * receiver at every level). */
static long dsp_count(uint32_t P, uint32_t att_pes, uint32_t C, uint32_t Q, int with_f32,
                      int with_q4, uint32_t kv_paths, uint32_t sum_lanes, long *per_pe)
{
    uint32_t parts = sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u;
    uint32_t pe_sum = sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : sum_lanes;
    long att = dsp_att(parts, pe_sum, kv_paths), levels = 0, split_levels = 0;
    long pe = dsp_pe(with_f32, with_q4);
    for (uint32_t s = 1; s < C; s *= 2u) levels++;
    for (uint32_t s = 1; s < Q; s *= 2u) split_levels++;
    *per_pe = pe + levels * dsp_tree() + (att_pes ? att + split_levels * dsp_att_tree() : 0);
    return (long)P * pe + tree_instances(P, C) * dsp_tree() + (long)att_pes * att +
           tree_instances(att_pes, Q) * dsp_att_tree() + dsp_ctrl(sum_lanes);
}

/* LUTs and flip-flops of datapath d into r (plan_fit.c). */
static void fabric_to(const tsr_fit_dp *d, tsr_plan_res *r)
{
    tsr_fit_fabric_of(d, &r->fab);
    r->lut = r->fab.lut;
    r->ff = r->fab.ff;
    r->lut_pe = r->fab.lut_pe;
    r->ff_pe = r->fab.ff_pe;
}

/* The f16 / int8 KV paths a profile builds (dsp_att's kv_paths). */
static uint32_t profile_kv_paths(const tsr_kprofile *p)
{
    return (p->kvh_words ? 1u << TSR_KV_F16 : 0u) |
           (p->kvq_bytes && p->kvs_words ? 1u << TSR_KV_INT8 : 0u);
}

void tsr_plan_profile_resources(const tsr_kprofile *p, tsr_plan_res *r)
{
    memset(r, 0, sizeof *r);
    uint32_t B = p->block ? p->block : 1u;   /* items a pass: the per-item arrays */
    pe_arrays a = {
        .w8_bytes = (uint64_t)p->w8_words * TSR_LANES, .f32_words = p->f32_words,
        .kv_elems = { p->kv_words, p->kvh_words, p->kvq_bytes },
        .kvs_words = p->kvs_words, .rows = (uint64_t)p->pe_rows * B,
        .att_words = p->att_words,
        .in_bytes = ((uint64_t)(p->hidden > p->dim ? p->hidden : p->dim) + p->group_max) * B,
        .xs_words = ((uint64_t)(p->hidden > p->dim ? p->hidden : p->dim) + p->group_max + TSR_LANES) /
                    p->group_min * B,
        .acc_words = p->seq > p->head_size ? p->seq : p->head_size,
        .acc_parts = p->sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u,
        .ao_words = p->dim, .qkv_words = (3u * (uint64_t)p->dim + TSR_VEC - 1u) / TSR_VEC * TSR_VEC,
        .f32_uram = (int)p->f32_uram, .kv_uram = (int)p->kv_uram,
    };
    long u, b;
    pe_blocks(&a, &u, &b);
    /* PEs without attention hold no KV cache and no scores */
    pe_arrays n = a;
    memset(n.kv_elems, 0, sizeof n.kv_elems);
    n.kvs_words = 0;
    n.att_words = 0;
    long un, bn;
    pe_blocks(&n, &un, &bn);
    r->uram_pe = u;
    r->bram_pe = b;
    r->uram = (long)p->att_pes * u + (long)(p->pes - p->att_pes) * un;
    r->bram = (long)p->att_pes * b + (long)(p->pes - p->att_pes) * bn +
              ctrl_blocks(p->dim, p->dim, p->vocab, p->layers,
                          (p->hidden > p->dim ? p->hidden : p->dim) + p->group_max, p->sum_lanes, B,
                          p->slots < B ? p->slots : B, 1u);   /* qkvb: TSR_MAX_QKV = 3 dim */
    r->kv_in_uram = (int)p->kv_uram;
    r->dsp = dsp_count(p->pes, p->att_pes, p->mesh_cols, p->kv_split_max, (int)p->with_f32,
                       (int)p->with_q4, profile_kv_paths(p), p->sum_lanes, &r->dsp_pe);
    tsr_fit_dp d;
    tsr_fit_dp_of_profile(p, &d);
    fabric_to(&d, r);
}

/* ------------------------------------------------------------------------ */
/* Bytes and blocks of one card                                               */

/* Bytes of `words` KV elements at kc's precision (int8: one fp32 scale per
 * cached vector of head_size values): tsr_lay_kv_bytes for a share of the
 * layers. */
static uint64_t kv_bytes(const tsr_kconfig *kc, uint64_t words)
{
    uint64_t b = words * tsr_lay_kv_elem_bytes(kc);
    return kc->kv_dtype == TSR_KV_INT8 ? b + 4u * (words / tsr_lay_head_size(kc)) : b;
}

/* The KV words the kernel places on PE p for layers [0, layers). */
static uint64_t kv_words_of(const tsr_kconfig *kc, uint32_t p, uint32_t layers)
{
    return kc->n_layers ? tsr_lay_kv_words(kc, p) / kc->n_layers * layers : 0u;
}

typedef struct card_eval {
    tsr_plan_bytes bytes;
    tsr_plan_res res;
} card_eval;

/* Bytes of matrix m over the whole mesh (int8 + fp32 tiles). */
static uint64_t mat_bytes(const tsr_kconfig *kc, uint32_t m, uint32_t rot)
{
    uint64_t b = 0;
    for (uint32_t p = 0; p < tsr_lay_pes(kc); p++) {
        tsr_tile t = tsr_lay_tile(kc, m, rot, p);
        b += tsr_lay_tile_w8(kc, t) + 4u * (uint64_t)tsr_lay_tile_f32(kc, t);
    }
    return b;
}

/* Bytes of card k of K holding n layers (the first card also holds the
 * embedding, the last the classifier: a shared one as a copy of the
 * embedding), from the whole model's matrix sizes. */
typedef struct split_bytes { double emb, layer, cls; } split_bytes;

static split_bytes split_bytes_of(const tsr_kconfig *kc)
{
    split_bytes b;
    b.emb = (double)mat_bytes(kc, TSR_MAT_EMB, 0);
    b.layer = 0;
    for (uint32_t w = 0; w < TSR_W_COUNT; w++) b.layer += (double)mat_bytes(kc, TSR_MAT_LAYER(0, w), 0);
    b.layer += (double)kv_bytes(kc, 2u * (uint64_t)kc->n_kv_heads * kc->seq_len *
                                        tsr_lay_head_size(kc) * kc->n_slots);
    b.cls = kc->shared_classifier ? b.emb : (double)mat_bytes(kc, tsr_lay_mat_wcls(kc), 0);
    return b;
}

void tsr_plan_stage_kconfig(const tsr_kconfig *kc, const uint32_t *bounds, int K, int k,
                            tsr_kconfig *out)
{
    *out = *kc;
    out->n_layers = bounds[k + 1] - bounds[k];
    out->stage = tsr_lay_stage(k == 0, k == K - 1);
}

/* A stage's greedy decode pass of one item at pos: n layers, first / last
 * of K stages (the split's cost model: a stage's own config, exactly as
 * tsr_plan_stage_kconfig makes it). */
static uint64_t stage_pass_cycles(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                                  uint32_t n, int first, int last, uint32_t pos)
{
    tsr_kconfig s = *kc;
    s.n_layers = n;
    s.stage = tsr_lay_stage(first, last);
    tsr_plan_cycles c;
    tsr_plan_pass(&s, sum_lanes, profile_pes, &pos, 1, 1, &c);
    return c.total;
}

/* The split's cost of one stage: cycles c(n) = base[kind] + (n - 1) x per
 * layer (kind 0 the first stage, 1 a middle one, 2 the last, 3 the only
 * one), bytes emb / cls on the first / last stage plus n layers. */
typedef struct split_cost {
    double base[4], layer;
    split_bytes b;
} split_cost;

static double cost_cycles(const split_cost *sc, int first, int last, uint32_t n)
{
    int kind = first && last ? 3 : first ? 0 : last ? 2 : 1;
    return sc->base[kind] + (double)(n - 1u) * sc->layer;
}

static double cost_bytes(const split_cost *sc, int first, int last, uint32_t n)
{
    return (first ? sc->b.emb : 0) + (last ? sc->b.cls : 0) + n * sc->b.layer;
}

/* The split of L layers over K stages that minimises the largest of
 * cost(first, last, n) (the slowest stage, or the fullest card): a
 * dynamic program over the stages' last layers; cap > 0: only stages whose
 * cycles are at most cap (the second pass, bytes under the best cycles). */
static double split_dp(const split_cost *sc, uint32_t L, int K, int bytes, double cap,
                       uint32_t *bounds)
{
    /* best[k][l]: the least largest cost of layers [0, l) over stages 0..k */
    size_t W = (size_t)L + 1u;
    double *best = malloc(sizeof *best * (size_t)K * W);
    uint32_t *from = malloc(sizeof *from * (size_t)K * W);
    if (!best || !from) {
        free(best);
        free(from);
        return -1;
    }
    for (size_t i = 0; i < (size_t)K * W; i++) best[i] = -1;
    for (int k = 0; k < K; k++)
        for (uint32_t l = (uint32_t)k + 1u; l + (uint32_t)(K - 1 - k) <= L; l++)
            for (uint32_t p = (uint32_t)k; p < l; p++) {
                double prev = k ? best[(size_t)(k - 1) * W + p] : 0;
                if (k && prev < 0) continue;
                if (!k && p) break;
                int first = k == 0, last = k == K - 1;
                if (last && l != L) continue;
                if (cap > 0 && cost_cycles(sc, first, last, l - p) > cap * (1 + 1e-12)) continue;
                double c = bytes ? cost_bytes(sc, first, last, l - p)
                                 : cost_cycles(sc, first, last, l - p);
                double m = c > prev ? c : prev;
                double *b = &best[(size_t)k * W + l];
                if (*b < 0 || m < *b) {
                    *b = m;
                    from[(size_t)k * W + l] = p;
                }
            }
    double r = best[(size_t)(K - 1) * W + L];
    if (r >= 0 && bounds) {
        bounds[K] = L;
        for (int k = K - 1; k >= 0; k--) bounds[k] = from[(size_t)k * W + bounds[k + 1]];
    }
    free(best);
    free(from);
    return r;
}

void tsr_plan_card_split(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes, int K,
                         uint32_t *bounds)
{
    uint32_t L = kc->n_layers, pos = kc->seq_len / 2u;
    bounds[0] = 0;
    bounds[K > 0 ? K : 0] = L;
    if (K <= 1 || L < 2u) return;
    split_cost sc;
    sc.b = split_bytes_of(kc);
    for (int kind = 0; kind < 4; kind++)
        sc.base[kind] = (double)stage_pass_cycles(kc, sum_lanes, profile_pes, 1, kind == 0 || kind == 3,
                                                  kind >= 2, pos);
    sc.layer = (double)stage_pass_cycles(kc, sum_lanes, profile_pes, 2, 0, 0, pos) - sc.base[1];
    double best = split_dp(&sc, L, K, 0, 0, NULL);
    if (best < 0 || split_dp(&sc, L, K, 1, best, bounds) < 0) {
        /* out of memory: layers in equal shares */
        for (int k = 0; k <= K; k++) bounds[k] = (uint32_t)((uint64_t)L * (uint32_t)k / (uint32_t)K);
    }
}

void tsr_plan_pipeline(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                       const uint32_t *bounds, int K, uint32_t pos, uint32_t seqs,
                       tsr_plan_pipe *out)
{
    memset(out, 0, sizeof *out);
    out->cards = K;
    out->seqs = seqs ? seqs : 1u;
    for (int k = 0; k < K && k < TSR_PLAN_MAX_STAGES; k++) {
        tsr_kconfig s;
        tsr_plan_cycles c;
        tsr_plan_stage_kconfig(kc, bounds, K, k, &s);
        tsr_plan_pass(&s, sum_lanes, profile_pes, &pos, 1, 1, &c);
        out->stage[k] = c.total;
        out->link[k] = c.rg[TSR_RG_LINK];
        out->round += c.total;
        if (c.total > out->slowest) out->slowest = c.total;
    }
    out->ret = K > 1 ? TSR_PLAN_RETURN_CYCLES : 0u;
    out->round += out->ret;
    /* m sequences in flight: a token each per round trip, but no stage
     * takes more than one pass at a time */
    double per = (double)out->round / out->seqs;
    out->cycles_per_token = per > (double)out->slowest ? per : (double)out->slowest;
}

/* At least this many bytes of tiles on any mesh: every weight element at
 * its element size or more (half a byte where Q4_0; scales, padding and a
 * shared classifier's copy on the last card not counted). */
static uint64_t tiles_floor(const tsr_kconfig *kc)
{
    uint64_t n = 0;
    for (uint32_t m = 0; m < tsr_lay_n_mats(kc); m++) {
        uint32_t d, k, pair;
        tsr_lay_mat_shape(kc, m, &d, &k, &pair);
        n += (pair ? 2u : 1u) * (uint64_t)d * k;
    }
    return kc->dtype != TSR_KDT_Q8 ? 4u * n : kc->q4_kinds ? n / 2u : n;
}

/* Card k of K: its PEs' arrays and the controller, what the model needs. */
static void eval_card(const tsr_kconfig *kc, int K, int k, uint32_t l0, uint32_t l1, int kv_in_uram,
                      const tsr_kprofile *pf, int with_profile, card_eval *r)
{
    uint32_t P = tsr_lay_pes(kc), nm = tsr_lay_n_mats(kc);
    int first = k == 0, last = k == K - 1, q8 = kc->dtype == TSR_KDT_Q8;
    memset(r, 0, sizeof *r);
    uint64_t sl = tsr_lay_seq_words(kc);
    uint32_t nmax = kc->dim > kc->hidden_dim ? kc->dim : kc->hidden_dim;
    uint32_t B = pf->block ? pf->block : 1u;   /* items a pass (TSR_MAX_BLOCK) */
    uint32_t rows_max = 0;
    uint64_t att_max = 0, ao_max = 0;
    for (uint32_t p = 0; p < P; p++) {
        uint64_t w8 = 0, f32w = 0;
        uint32_t rows = 0, rot = 0;
        for (uint32_t m = 0; m < nm; m++) {
            int in;
            if (m == TSR_MAT_EMB) in = first || (last && kc->shared_classifier);
            else if (m == tsr_lay_mat_wcls(kc)) in = last;
            else in = (m - 1u) / TSR_W_COUNT >= l0 && (m - 1u) / TSR_W_COUNT < l1;
            tsr_tile t = tsr_lay_tile(kc, m, rot, p);
            rot = tsr_lay_rot_next(kc, m, rot);
            if (!in) continue;
            w8 += tsr_lay_tile_w8(kc, t);
            f32w += tsr_lay_tile_f32(kc, t);
            if (tsr_lay_tile_psum(t) > rows) rows = tsr_lay_tile_psum(t);
        }
        uint64_t kvw = kv_words_of(kc, p, l1 - l0), kvb = kv_bytes(kc, kvw);
        uint64_t kvs = kc->kv_dtype == TSR_KV_INT8 ? 4u * (kvw / tsr_lay_head_size(kc)) : 0u;
        uint32_t h0, q, nh = tsr_lay_kv_heads(kc, p, &h0, &q);
        uint64_t w = q8 ? w8 : 4u * f32w, s = q8 ? 4u * f32w : 0u;
        r->bytes.weights += w;
        r->bytes.scales += s;
        r->bytes.kv += kvb;
        r->bytes.scratch += 4u * (uint64_t)rows + (nmax + kc->group) + 4u * (nmax / kc->group + 1u);
        if (w + s + kvb > r->bytes.pe_max) r->bytes.pe_max = w + s + kvb;
        pe_arrays a = { .w8_bytes = w8, .f32_words = f32w, .kvs_words = kvs / 4u,
                        .rows = (uint64_t)rows * B,
                        .att_words = (uint64_t)nh * tsr_lay_kv_mul(kc) * sl,
                        .acc_words = sl > tsr_lay_head_size(kc) ? sl : tsr_lay_head_size(kc),
                        .acc_parts = pf->sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u,
                        .xs_words = ((uint64_t)nmax + kc->group + TSR_LANES) / kc->group * B,
                        .ao_words = nh ? (uint64_t)nh * tsr_lay_kv_mul(kc) * tsr_lay_head_size(kc) : 0u,
                        .qkv_words = nh ? (uint64_t)(kc->dim + 2u * tsr_lay_kv_dim(kc) + TSR_VEC - 1u) /
                                              TSR_VEC * TSR_VEC : 0u,
                        .in_bytes = ((uint64_t)nmax + kc->group) * B, .f32_uram = (int)pf->f32_uram,
                        .kv_uram = kv_in_uram };
        uint32_t eb = tsr_lay_kv_elem_bytes(kc);   /* 4, 2 or 1: kv_elems' index */
        a.kv_elems[eb == 4u ? 0 : eb == 2u ? 1 : 2] = kvw;
        if (rows > rows_max) rows_max = rows;
        if (a.att_words > att_max) att_max = a.att_words;
        if (a.ao_words > ao_max) ao_max = a.ao_words;
        long u, b;
        pe_blocks(&a, &u, &b);
        if (u > r->res.uram_pe) r->res.uram_pe = u;
        if (b > r->res.bram_pe) r->res.bram_pe = b;
        r->res.uram += u;
        r->res.bram += b;
    }
    uint64_t dim = kc->dim, kvd = tsr_lay_kv_dim(kc), V = kc->vocab_size;
    /* the controller region (tsr_layout.h): the stage's norm rows, RoPE's
     * frequencies, its layers' QKV biases */
    uint64_t norms = 4u * ((2u * (uint64_t)(l1 - l0) + (last ? 1u : 0u)) * dim +
                           tsr_lay_head_size(kc) / 2u +
                           (kc->qkv_bias ? (uint64_t)(l1 - l0) * (dim + 2u * kvd) : 0u));
    r->bytes.norms = norms;
    r->bytes.activations = 4u * (dim + (nmax + kc->group) + dim + 2u * kvd + (last ? V : 0u));
    r->bytes.scratch += last ? 12u * V : 0u;   /* the sampler's copy and candidates */
    r->res.bram += ctrl_blocks(dim, kvd, last ? V : 0u, l1 - l0, nmax + kc->group, pf->sum_lanes, B,
                               kc->n_slots < B ? kc->n_slots : B, kc->qkv_bias);
    r->res.kv_in_uram = kv_in_uram;
    r->bytes.stationary = r->bytes.weights + r->bytes.scales + r->bytes.kv + r->bytes.norms;
    r->bytes.total = r->bytes.stationary + r->bytes.activations + r->bytes.scratch;
    /* a profile's datapath has F32 and Q4_0 tiles and KV paths whatever
     * the model's weights; without one, what the model uses */
    uint32_t kv_paths = kc->kv_dtype == TSR_KV_F32 ? 0u : 1u << kc->kv_dtype;
    r->res.dsp = dsp_count(P, kc->att_pes, kc->mesh_cols, kc->kv_split,
                           with_profile ? (int)pf->with_f32 : !q8,
                           with_profile ? (int)pf->with_q4 : kc->q4_kinds != 0,
                           with_profile ? profile_kv_paths(pf) : kv_paths, pf->sum_lanes,
                           &r->res.dsp_pe);
    /* the fabric of this mesh's datapath, its small arrays at the model's
     * sizes */
    tsr_fit_dp d = {
        .pes = P, .att_pes = kc->att_pes, .cols = kc->mesh_cols, .kv_split = kc->kv_split,
        .sum_lanes = pf->sum_lanes, .block = B, .with_f32 = with_profile ? pf->with_f32 : !q8,
        .with_q4 = with_profile ? pf->with_q4 : kc->q4_kinds != 0,
        .kv_paths = with_profile ? profile_kv_paths(pf) : kv_paths, .group_min = kc->group,
        .group_max = kc->group, .mats = nm, .pe_rows = rows_max,
        .in_words = (nmax + kc->group + TSR_LANES) / TSR_LANES,
        .xs_words = (nmax + kc->group + TSR_LANES) / kc->group, .att_words = (uint32_t)att_max,
        .acc_words = (uint32_t)(sl > tsr_lay_head_size(kc) ? sl : tsr_lay_head_size(kc)),
        .ao_words = (uint32_t)ao_max, .qkv_words = kc->dim + 2u * tsr_lay_kv_dim(kc),
    };
    fabric_to(&d, &r->res);
}

/* ------------------------------------------------------------------------ */
/* One evaluation: a fixed PE count and card count                            */

static int part_have(int count, int shell) { return count < 0 ? -1 : shell < 0 ? count : count - shell; }

/* The datapath and limits planned for: a shipped profile, or the speed
 * profile's datapath with arrays as large as the model needs. */
static int plan_profile(const tsr_plan_req *rq, tsr_kprofile *pf, char *name, size_t cap,
                        int *with, tsr_err *e)
{
    const tsr_kprofile *p = tsr_profile_find(rq->profile ? rq->profile : PLAN_DATAPATH);
    if (!p)
        return tsr_seterr(e, TSR_ERR_ARG, "unknown profile '%s' (valid: %s)", rq->profile,
                          tsr_profile_names());
    *pf = *p;
    snprintf(name, cap, "%s", rq->profile ? rq->profile : PLAN_DATAPATH);
    *with = rq->profile != NULL;
    if (rq->profile && ((rq->kv == TSR_KV_F16 && p->kvh_words == 0) ||
                        (rq->kv == TSR_KV_INT8 && (p->kvq_bytes == 0 || p->kvs_words == 0))))
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "the %s profile has no %s KV cache (--kv f32)",
                          rq->profile, rq->kv == TSR_KV_F16 ? "f16" : "int8");
    if (!rq->profile) {
        /* a profile written for this model: its arrays and limits unbounded */
        pf->pes = pf->mesh_rows = PLAN_MAX_PES * 16;
        pf->att_pes = pf->pes;
        pf->dim = pf->hidden = pf->layers = pf->heads = pf->kv_heads = pf->head_size = ~0u >> 1;
        pf->vocab = pf->seq = pf->slots = ~0u >> 1;
        pf->group_min = 4;
        pf->group_max = 256;
        pf->kv_split_max = 64;
        pf->w8_words = pf->f32_words = pf->kv_words = pf->pe_rows = ~0u >> 1;
        /* and with the datapaths the model asks for (dsp_count counts
         * what the model uses, not these) */
        pf->with_q4 = 1;
        pf->kvh_words = pf->kvq_bytes = pf->kvs_words = ~0u >> 1;
    }
    return TSR_OK;
}

static int make_kconfig(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_kprofile *pf,
                        int pes, tsr_kconfig *kc, tsr_err *e)
{
    tsr_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.cfg = *cfg;
    snprintf(ck.path, sizeof ck.path, "plan");   /* prefixes tsr_wimage_config's messages */
    tsr_load_opts o;
    memset(&o, 0, sizeof o);
    o.weights_f32 = rq->weights_f32;
    o.weights = rq->weights;
    o.kv = rq->kv;
    o.group_size = rq->group;
    o.seq_len = rq->seq_len;
    o.n_slots = 1;
    tsr_mesh_opts mo = { .pes = pes, .cols = rq->cols, .kv_split = rq->kv_split };
    if (mo.cols > pes) mo.cols = 0;
    return tsr_wimage_config(&ck, &o, &mo, pf, kc, e);
}

/* Fill out (except the fix_* fields) for pes PEs per card; fit_only: the
 * fit alone, without eval_projection. */
static int eval_to(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part, int pes,
                   int fit_only, tsr_plan *out, tsr_err *e);
static int eval_projection(const tsr_plan_req *rq, const tsr_part *part, tsr_plan *out, tsr_err *e);

static int eval(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part, int pes,
                tsr_plan *out, tsr_err *e)
{
    return eval_to(cfg, rq, part, pes, 0, out, e);
}

/* The longest context that fits pes PEs per card at KV precision kv, up to
 * 2^20 positions, whatever the model was trained for (the chip's memory
 * and DSPs, not the model's); 0 when none does (a KV precision's DSPs,
 * or a profile without it) or the fit cannot be decided. */
static int max_context(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part,
                       int pes, int kv)
{
    tsr_config c = *cfg;
    tsr_plan_req r = *rq;
    tsr_plan t;
    tsr_err e;
    c.seq_len = 1 << 20;   /* llama2.c files cap the context at their own */
    c.format = TSR_FMT_GGUF;
    r.kv = kv;
    r.pos = -1;
    int lo = 0, hi = 1 << 20;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        r.seq_len = mid;
        if (eval_to(&c, &r, part, pes, 1, &t, &e) || !t.decidable) return 0;
        if (t.fits) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* A pass of nx items over a split of K cards: each of the K - 1 hops the
 * kernel's link charges (tsr_cycles.h): the sender's link-out, the
 * receiver's link-in (TSR_LINK_HOP, then a word a cycle).  The stages run
 * one after another for one sequence, so a pass pays every hop. */
static uint64_t link_cycles(const tsr_kconfig *kc, int K, uint32_t nx)
{
    if (K < 2) return 0u;
    return (uint64_t)(K - 1) * (tsr_cy_link_out(nx, kc->dim) + tsr_cy_link_in(nx, kc->dim));
}

static int eval_to(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part, int pes,
                   int fit_only, tsr_plan *out, tsr_err *e)
{
    memset(out, 0, sizeof *out);
    int rc = plan_profile(rq, &out->prof, out->profile, sizeof out->profile, &out->with_profile, e);
    if (rc) return rc;
    if ((rc = make_kconfig(cfg, rq, &out->prof, pes, &out->kc, e))) return rc;
    const tsr_kconfig *kc = &out->kc;
    int K = rq->cards > 0 ? rq->cards : 1;
    out->part = part;
    out->kv = rq->kv;
    out->cards = K;
    out->pes = pes;
    /* the split: the stages' cycles balanced (tsr_plan_card_split) */
    uint32_t *bounds = malloc(sizeof *bounds * ((size_t)K + 1u));
    if (!bounds) return tsr_seterr(e, TSR_ERR_NOMEM, "plan: out of memory");
    tsr_plan_card_split(kc, out->prof.sum_lanes, out->with_profile ? out->prof.pes : (uint32_t)pes,
                        K, bounds);
    for (int k = 0; k < K; k++) {
        if ((int)(bounds[k + 1] - bounds[k]) > out->layers_per_card)
            out->layers_per_card = (int)(bounds[k + 1] - bounds[k]);
        if (k < TSR_PLAN_MAX_STAGES) out->bounds[k] = bounds[k];
    }
    if (K <= TSR_PLAN_MAX_STAGES) out->bounds[K] = bounds[K];
    if (out->with_profile) {
        tsr_plan_profile_resources(&out->prof, &out->prof_res);
        tsr_err pe;
        tsr_clearerr(&pe);
        out->profile_ok = tsr_wimage_check_profile(kc, &out->prof, out->profile, &pe) == TSR_OK;
        if (!out->profile_ok) snprintf(out->profile_why, sizeof out->profile_why, "%s", pe.msg);
    }
    out->uram_have = part_have(part->uram, part->shell_uram);
    out->bram_have = part_have(part->bram36, part->shell_bram36);
    out->dsp_have = part_have(part->dsp, part->shell_dsp);
    out->lut_have = part_have(part->lut, part->shell_lut);
    out->ff_have = part_have(part->ff, part->shell_ff);
    out->max_util = rq->max_util > 0 ? rq->max_util : TSR_FIT_CEILING_PCT;
    out->over = -1;
    out->decidable = out->uram_have >= 0 && out->bram_have >= 0 && out->dsp_have >= 0 &&
                     out->lut_have >= 0 && out->ff_have >= 0;

    /* KV in BRAM first; in URAM when BRAM is what overflows */
    for (int kv_uram = (int)out->prof.kv_uram; kv_uram < 2; kv_uram++) {
        card_eval worst, c;
        memset(&worst, 0, sizeof worst);
        for (int k = 0; k < K; k++) {
            eval_card(kc, K, k, bounds[k], bounds[k + 1], kv_uram, &out->prof, out->with_profile, &c);
            if (c.bytes.total > worst.bytes.total) worst.bytes = c.bytes;
            if (c.res.uram_pe > worst.res.uram_pe) worst.res.uram_pe = c.res.uram_pe;
            if (c.res.bram_pe > worst.res.bram_pe) worst.res.bram_pe = c.res.bram_pe;
            if (c.res.uram > worst.res.uram) worst.res.uram = c.res.uram;
            if (c.res.bram > worst.res.bram) worst.res.bram = c.res.bram;
            worst.res.dsp_pe = c.res.dsp_pe;
            worst.res.dsp = c.res.dsp;
            if (c.res.lut >= worst.res.lut) {   /* the card with the most fabric */
                worst.res.lut = c.res.lut;
                worst.res.ff = c.res.ff;
                worst.res.lut_pe = c.res.lut_pe;
                worst.res.ff_pe = c.res.ff_pe;
                worst.res.fab = c.res.fab;
            }
        }
        out->bytes = worst.bytes;
        out->res = worst.res;
        out->res.kv_in_uram = kv_uram;
        /* with a synthesis profile, the bitstream's arrays are the
         * profile's; the emulator's (generic, no stated estimate) has no
         * bitstream, so the model's own needs are judged */
        long su, sb, sd;
        tsr_profile_stated(out->profile, &su, &sb, &sd);
        const tsr_plan_res *need = out->with_profile && su >= 0 ? &out->prof_res : &out->res;
        /* every resource under the ceiling of what the shell leaves
         * (plan_fit.c) */
        long nd[TSR_FIT_R_COUNT] = { need->lut, need->ff, need->dsp, need->bram, need->uram };
        long hv[TSR_FIT_R_COUNT] = { out->lut_have, out->ff_have, out->dsp_have, out->bram_have,
                                     out->uram_have };
        out->over = -1;
        out->fits = out->decidable &&
                    tsr_fit_judge(nd, hv, out->max_util, &out->over, &out->over_by) &&
                    (!out->with_profile || out->profile_ok);
        if (out->fits || !out->decidable ||
            out->res.bram <= tsr_fit_ceiling(out->bram_have, out->max_util))
            break;
    }
    free(bounds);
    if (!out->decidable) {   /* name exactly the figures the table lacks */
        char miss[64] = "";
        const char *names[] = { "BRAM36", "URAM", "DSP", "LUT", "FF" };
        long have[] = { out->bram_have, out->uram_have, out->dsp_have, out->lut_have, out->ff_have };
        int n = 0, left = 0;
        for (int i = 0; i < 5; i++) left += have[i] < 0;
        for (int i = 0; i < 5; i++)
            if (have[i] < 0) {
                n++;
                snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s%s",
                         n == 1 ? "" : n == left ? " and " : ", ", names[i]);
            }
        snprintf(out->why, sizeof out->why,
                 "%s: the parts table (hw/parts.def) does not know its %s count%s", part->name,
                 miss, left > 1 ? "s" : "");
    } else if (out->with_profile && !out->profile_ok) {
        snprintf(out->why, sizeof out->why, "profile %s: %s", out->profile, out->profile_why);
    } else if (!out->fits && out->over >= 0) {
        long have[TSR_FIT_R_COUNT] = { out->lut_have, out->ff_have, out->dsp_have, out->bram_have,
                                       out->uram_have };
        long cap = tsr_fit_ceiling(have[out->over], out->max_util);
        snprintf(out->why, sizeof out->why,
                 "%s over the ceiling by %ld: needs %ld, the ceiling is %ld (%g%% of the %ld "
                 "the shell leaves)", tsr_fit_resource_name(out->over), out->over_by,
                 cap + out->over_by, cap, out->max_util, have[out->over]);
    }

    /* a decode that streamed the weights would read each matrix once per
     * token (the classifier once even when it is a copy on the last card) */
    uint32_t rot = 0;
    for (uint32_t m = 0; m < tsr_lay_n_mats(kc); m++) {
        out->weight_bytes_all += mat_bytes(kc, m, rot);
        rot = tsr_lay_rot_next(kc, m, rot);
    }

    return fit_only ? TSR_OK : eval_projection(rq, part, out, e);
}

/* The projected speed of an evaluated out (eval_to's fit filled it): the
 * code's charges for a decode step at the reported position, and their
 * mean over a whole context. */
static int eval_projection(const tsr_plan_req *rq, const tsr_part *part, tsr_plan *out, tsr_err *e)
{
    const tsr_kconfig *kc = &out->kc;
    int pes = out->pes, K = out->cards;
    uint32_t seq = kc->seq_len;
    if (rq->pos >= 0 && (uint32_t)rq->pos >= seq)
        return tsr_seterr(e, TSR_ERR_ARG, "position %d outside the context 0..%u", rq->pos, seq - 1u);
    out->pos = rq->pos < 0 ? (int)seq - 1 : rq->pos;
    uint32_t ppes = out->with_profile ? out->prof.pes : (uint32_t)pes, at = (uint32_t)out->pos;
    tsr_plan_cycles fixed;   /* tsr_plan_step's, but for attention */
    pass_fixed(kc, out->prof.sum_lanes, ppes, 1, 1, &fixed);
    pass_at(&fixed, kc, out->prof.sum_lanes, &at, 1, &out->cyc);
    out->cyc.links = link_cycles(kc, K, 1);
    out->cyc.total += out->cyc.links;
    if (K > 1 && K <= TSR_PLAN_MAX_STAGES)
        tsr_plan_pipeline(kc, out->prof.sum_lanes, ppes, out->bounds, K, at, (uint32_t)K, &out->pipe);
    out->controller_share = out->cyc.total ? (double)out->cyc.controller / (double)out->cyc.total : 0;
    /* mean over a whole context (positions sampled 64 apart, and the last) */
    double sum = 0;
    uint32_t nsamp = 0;
    for (uint32_t p = 0; p < seq; p += (seq > 256 ? seq / 64u : 1u)) {
        tsr_plan_cycles c;
        pass_at(&fixed, kc, out->prof.sum_lanes, &p, 1, &c);
        sum += (double)(c.total + out->cyc.links);
        nsamp++;
    }
    out->cycles_mean = sum / nsamp;
    /* the clock given, else the one the profile targets, else the part's */
    int pclk = out->with_profile ? tsr_profile_clock_mhz(out->profile) : 0;
    out->clock_from = rq->clock_mhz > 0 ? 0 : pclk > 0 ? 1 : 2;
    out->clock_mhz = rq->clock_mhz > 0 ? rq->clock_mhz : pclk > 0 ? pclk
                   : part->clock_mhz > 0 ? part->clock_mhz : -1;
    if (out->clock_mhz > 0) {
        out->tok_s = out->clock_mhz * 1e6 / (double)out->cyc.total;
        out->tok_s_mean = out->clock_mhz * 1e6 / out->cycles_mean;
        out->stream_gbps = (double)out->weight_bytes_all * out->tok_s_mean / 1e9;
        if (out->pipe.cards > 1) out->pipe_tok_s = out->clock_mhz * 1e6 / out->pipe.cycles_per_token;
    }
    return TSR_OK;
}

/* The projections of passes of several items, for the plan chosen (not for
 * every candidate eval_auto tries): the prompt's prefill in blocks of the
 * profile's TSR_MAX_BLOCK against one position a pass, and a greedy decode
 * step of the profile's batch limit of sequences, each at the reported
 * position.  A split model pays its card links once a pass. */
#define PLAN_PROMPT 128u
static void project_passes(tsr_plan *out)
{
    const tsr_kconfig *kc = &out->kc;
    uint32_t sl = out->prof.sum_lanes, ppes = out->with_profile ? out->prof.pes : (uint32_t)out->pes;
    uint32_t B = out->prof.block ? out->prof.block : 1u;
    if (B > TSR_PLAN_MAX_ITEMS) B = TSR_PLAN_MAX_ITEMS;
    uint32_t n = kc->seq_len < PLAN_PROMPT ? kc->seq_len : PLAN_PROMPT;
    uint64_t links = link_cycles(kc, out->cards, B);
    out->block = (int)B;
    out->prefill_tokens = (int)n;
    out->prefill_cycles = tsr_plan_prefill(kc, sl, ppes, n, B, &out->prefill_passes);
    out->prefill_cycles += (uint64_t)(n / B) * links + (n % B ? link_cycles(kc, out->cards, n % B) : 0u);
    out->prefill_cycles_1 = tsr_plan_prefill(kc, sl, ppes, n, 1, NULL) + n * out->cyc.links;
    uint32_t nb = out->prof.slots < B ? out->prof.slots : B, pos[TSR_PLAN_MAX_ITEMS];
    if (nb < 1u) nb = 1u;
    for (uint32_t b = 0; b < nb; b++) pos[b] = (uint32_t)out->pos;
    out->batch = (int)nb;
    tsr_plan_pass(kc, sl, ppes, pos, nb, 1, &out->batch_cyc);
    out->batch_cyc.links = link_cycles(kc, out->cards, nb);
    out->batch_cyc.total += out->batch_cyc.links;
    if (out->clock_mhz > 0) {
        out->prefill_tok_s = n * (out->clock_mhz * 1e6) / (double)out->prefill_cycles;
        out->batch_tok_s = nb * (out->clock_mhz * 1e6) / (double)out->batch_cyc.total;
    }
}

/* Best PE count: the given one, else the fitting power of two with the best
 * mean tok/s (fewest PEs on a tie, pes_chosen 1); PLAN_DEFAULT_PES when none
 * fits or the fit cannot be decided (pes_chosen 2). */
static int eval_auto(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part,
                     tsr_plan *out, tsr_err *e)
{
    if (rq->pes > 0) return eval(cfg, rq, part, rq->pes, out, e);
    tsr_plan best, t;
    int have = 0, rc;
    int max_p = PLAN_MAX_PES;
    const tsr_kprofile *pf = rq->profile ? tsr_profile_find(rq->profile) : NULL;
    if (pf && (int)pf->pes < max_p) max_p = (int)pf->pes;
    for (int P = 1; P <= max_p; P *= 2) {
        /* the fit first: only a candidate that fits needs its projection */
        rc = eval_to(cfg, rq, part, P, 1, &t, e);
        if (rc == TSR_ERR_ARG && rq->kv_split) continue;   /* a split this mesh cannot take */
        if (rc) return rc;
        if (t.fits && (rc = eval_projection(rq, part, &t, e))) return rc;
        if (t.fits && (!have || t.cycles_mean < best.cycles_mean)) {
            best = t;
            have = 1;
        }
    }
    if (!have) {
        /* a profile's own mesh (what its bitstream has), else the default */
        int P = pf ? (int)pf->pes : PLAN_DEFAULT_PES;
        if ((rc = eval(cfg, rq, part, P, out, e))) return rc;
        out->pes_chosen = 2;
    } else {
        *out = best;
        out->pes_chosen = 1;
    }
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Plan                                                                       */

int tsr_plan_config(const tsr_config *cfg, const tsr_plan_req *req, tsr_plan *out, tsr_err *e)
{
    if (!cfg || !req || !out) return tsr_seterr(e, TSR_ERR_ARG, "plan: NULL argument");
    if (!req->part || !req->part[0])
        return tsr_seterr(e, TSR_ERR_ARG, "plan: no part given (valid: %s)", tsr_part_names());
    const tsr_part *part = tsr_part_find(req->part);
    if (!part)
        return tsr_seterr(e, TSR_ERR_ARG, "unknown part '%s' (valid: %s)", req->part,
                          tsr_part_names());
    if (req->profile && !tsr_profile_find(req->profile))
        return tsr_seterr(e, TSR_ERR_ARG, "unknown profile '%s' (valid: %s)", req->profile,
                          tsr_profile_names());
    if (req->kv < TSR_KV_F32 || req->kv > TSR_KV_INT8)
        return tsr_seterr(e, TSR_ERR_ARG, "KV precision %d (valid: f32, f16, int8)", req->kv);
    if (req->pes < 0 || req->pes > 4096)
        return tsr_seterr(e, TSR_ERR_ARG, "%d PEs (valid: 1..4096, or 0 to choose)", req->pes);
    if (req->cols < 0 || req->kv_split < 0)
        return tsr_seterr(e, TSR_ERR_ARG, "mesh columns and KV split must be >= 0");
    if (req->clock_mhz < 0)
        return tsr_seterr(e, TSR_ERR_ARG, "clock %d MHz (valid: > 0)", req->clock_mhz);
    if (req->cards < 0 || req->cards > cfg->n_layers)
        return tsr_seterr(e, TSR_ERR_ARG, "%d cards (valid: 1..%d, one layer per card at most)",
                          req->cards, cfg->n_layers);
    if (req->group < 0 || (!req->weights_f32 && req->group > 0 && req->group > cfg->dim))
        return tsr_seterr(e, TSR_ERR_ARG, "group size %d (valid: 1..%d)", req->group, cfg->dim);
    if (tsr_cdiv((uint32_t)cfg->vocab_size, TSR_VEC) > 0 &&
        1u + (uint32_t)TSR_W_COUNT * (uint32_t)cfg->n_layers + 1u > TSR_WIMAGE_MAX_MATS)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%d layers: more matrices than plan lays out",
                          cfg->n_layers);
    int rc = eval_auto(cfg, req, part, out, e);
    if (rc) return rc;
    project_passes(out);
    /* the longest context each KV precision holds on this mesh */
    for (int kv = 0; kv < TSR_KV_COUNT && out->decidable; kv++)
        out->max_seq[kv] = max_context(cfg, req, part, out->pes, kv);
    if (out->fits || !out->decidable) return rc;

    /* the smallest changes that fit (each judged at its own last position;
     * each search step is an eval_auto over every PE count).  A card holds
     * its share of the tiles on chip, so fewer cards than kmin cannot fit,
     * and when the cards asked for are fewer, no shorter context does */
    uint64_t chip = (uint64_t)out->uram_have * HW_URAM_BYTES + (uint64_t)out->bram_have * HW_BRAM_BYTES;
    uint64_t kmin = chip ? cdiv64(tiles_floor(&out->kc), chip) : UINT64_MAX;
    int K0 = req->cards > 1 ? req->cards : 1;
    tsr_plan_req r = *req;
    r.pos = -1;
    tsr_plan t;
    int seq = (int)out->kc.seq_len, lo = 0, hi = kmin > (uint64_t)K0 ? 0 : seq - 1;
    while (lo < hi) {   /* longest context that fits (fit shrinks with it) */
        int mid = (lo + hi + 1) / 2;
        r.seq_len = mid;
        if ((rc = eval_auto(cfg, &r, part, &t, e))) return rc;
        if (t.fits) lo = mid;
        else hi = mid - 1;
    }
    out->fix_seq = lo;
    r = *req;
    r.pos = -1;
    if (req->kv != TSR_KV_INT8) {
        r.kv = TSR_KV_INT8;
        rc = eval_auto(cfg, &r, part, &t, e);
        if (rc == TSR_ERR_UNSUPPORTED && req->profile) {
            out->fix_kv_int8 = -1;   /* the profile has no int8 KV cache */
            tsr_seterr(e, TSR_OK, "%s", "");
        } else if (rc) {
            return rc;
        } else {
            out->fix_kv_int8 = t.fits;
        }
    }
    r = *req;
    r.pos = -1;
    int K1 = K0 + 1;
    if (kmin > (uint64_t)K1) K1 = kmin > (uint64_t)cfg->n_layers ? cfg->n_layers + 1 : (int)kmin;
    for (int K = K1; K <= cfg->n_layers; K++) {
        r.cards = K;
        if ((rc = eval_auto(cfg, &r, part, &t, e))) return rc;
        if (t.fits) {
            out->fix_cards = K;
            out->fix_cards_pes = t.pes;
            out->fix_cards_tok_s = t.tok_s_mean;
            break;
        }
    }
    if (!out->fix_cards) {
        /* why none: a layer split keeps the embedding whole on stage 0
         * (and the classifier on the last), in the weights' format */
        const tsr_kconfig *kc = &out->kc;
        uint64_t n = (uint64_t)kc->vocab_size * kc->dim;
        out->emb_bytes = kc->dtype == TSR_KDT_F32 ? 4u * n
                       : kc->q4_kinds & (1u << TSR_KIND_EMB) ? n / 32u * 18u
                       : n + 4u * tsr_cdiv(kc->dim, kc->group) * kc->vocab_size;
        out->chip_bytes = chip;
        out->cards_floor = kmin;
    }
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Formatting                                                                 */

typedef struct sbuf {
    char  *p;
    size_t len, at;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->at < b->len ? b->p + b->at : NULL, b->at < b->len ? b->len - b->at : 0,
                      fmt, ap);
    va_end(ap);
    if (n > 0) b->at += (size_t)n;
}

static const char *kv_name(int kv) { return kv == TSR_KV_F16 ? "f16" : kv == TSR_KV_INT8 ? "int8" : "f32"; }

static void fmt_have(sbuf *b, long have, int shell_known)
{
    if (have < 0) put(b, "%10s", "unknown");
    else put(b, "%10ld%s", have, shell_known ? "" : "*");
}

static void fmt_text(const tsr_plan *p, const char *name, sbuf *b)
{
    const tsr_kconfig *k = &p->kc;
    const tsr_part *pt = p->part;
    int q8 = k->dtype == TSR_KDT_Q8;
    put(b, "tessera plan: %s on %s (%s)\n", name, pt->name, pt->family);
    put(b, "model:   dim %u, hidden %u, %u layers, %u heads (%u KV), vocab %u\n", k->dim,
        k->hidden_dim, k->n_layers, k->n_heads, k->n_kv_heads, k->vocab_size);
    char wdesc[160];
    tsr_wimage_describe(k, wdesc, sizeof wdesc);
    put(b, "weights: %s\n", wdesc);
    put(b, "KV:      %s x %u positions, 1 sequence%s\n", kv_name(p->kv), k->seq_len,
        p->kv == TSR_KV_INT8 ? " (one fp32 scale per head vector per position)" : "");
    const char *chosen = p->pes_chosen == 1 ? ", chosen: fastest projected that fits"
                         : p->pes_chosen != 2 ? ""
                         : p->with_profile && !p->profile_ok
                             ? ", the default: the profile does not hold the model (below)"
                         : p->decidable ? ", the default: no power of two up to 256 fits"
                                        : ", the default: no count chosen, the fit cannot be decided";
    put(b, "mesh:    %d PEs per card (%u x %u)%s, %d card%s; %u with attention, each KV head "
           "over %u\n", p->pes, k->mesh_rows, k->mesh_cols, chosen, p->cards,
        p->cards > 1 ? "s (layers pipelined across cards)" : "", k->att_pes, k->kv_split);
    if (p->with_profile)
        put(b, "profile: %s (its datapath and arrays)%s%s\n", p->profile,
            p->profile_ok ? "" : ": DOES NOT HOLD THE MODEL: ", p->profile_ok ? "" : p->profile_why);
    else
        put(b, "profile: the %s datapath (%u-way sums), arrays sized for this model: a profile "
               "to write (kernels/profiles/)\n", p->profile, p->prof.sum_lanes);
    put(b, "\non-chip bytes%s:\n", p->cards > 1 ? " (fullest card)" : "");
    put(b, "  weights      %14llu  %s tiles, URAM\n", (unsigned long long)p->bytes.weights,
        !q8 ? "fp32" : k->q4_kinds ? "int4 (Q4_0) and int8" : "int8");
    put(b, "  scales       %14llu  fp32 per group, %s\n", (unsigned long long)p->bytes.scales,
        p->prof.f32_uram ? "URAM" : "BRAM");
    put(b, "  KV cache     %14llu  %s, %s\n", (unsigned long long)p->bytes.kv, kv_name(p->kv),
        p->res.kv_in_uram ? "URAM" : "BRAM");
    put(b, "  norms        %14llu  controller\n", (unsigned long long)p->bytes.norms);
    put(b, "  activations  %14llu  controller vectors\n", (unsigned long long)p->bytes.activations);
    put(b, "  scratch      %14llu  PE partial sums and inputs, sampler buffers\n",
        (unsigned long long)p->bytes.scratch);
    put(b, "  total        %14llu  (stationary: weights + scales + KV + norms = %llu)\n",
        (unsigned long long)p->bytes.total, (unsigned long long)p->bytes.stationary);
    put(b, "  fullest PE   %14llu  weights + scales + KV\n", (unsigned long long)p->bytes.pe_max);
    put(b, "\nresources (int8 tiles: 256-bit words, 4 URAM wide; the KV cache: words of 8 lanes; "
           "other arrays one memory "
           "per partition bank, BRAM36, <= 64 words LUTRAM; LUT, FF: the datapath's operators, "
           "hw/ops.def):\n");
    const tsr_plan_res *use = p->with_profile ? &p->prof_res : &p->res;
    long have[TSR_FIT_R_COUNT] = { p->lut_have, p->ff_have, p->dsp_have, p->bram_have, p->uram_have };
    long need[TSR_FIT_R_COUNT] = { use->lut, use->ff, use->dsp, use->bram, use->uram };
    long pe[TSR_FIT_R_COUNT] = { use->lut_pe, use->ff_pe, use->dsp_pe, use->bram_pe, use->uram_pe };
    int shell[TSR_FIT_R_COUNT] = { pt->shell_lut >= 0, pt->shell_ff >= 0, pt->shell_dsp >= 0,
                                   pt->shell_bram36 >= 0, pt->shell_uram >= 0 };
    put(b, "            per PE      card   ceiling  part less shell  (ceiling: %g%%)\n", p->max_util);
    for (int r = 0; r < TSR_FIT_R_COUNT; r++) {
        put(b, "  %-6s  %8ld  %8ld  ", tsr_fit_resource_name(r), pe[r], need[r]);
        long cap = tsr_fit_ceiling(have[r], p->max_util);
        if (cap < 0) put(b, "%8s", "unknown");
        else put(b, "%8ld", cap);
        fmt_have(b, have[r], shell[r]);
        if (cap >= 0 && need[r] > cap) put(b, "  OVER by %ld", need[r] - cap);
        put(b, "\n");
    }
    if (!shell[0] || !shell[1] || !shell[2] || !shell[3] || !shell[4])
        put(b, "  * whole device: the shell's reservation of it is not known to hw/parts.def\n");
    put(b, "  LUT by group:");
    for (int g = 0; g < TSR_FIT_GROUPS; g++)
        put(b, " %s %ld%s", tsr_fit_group_name(g), use->fab.g_lut[g], g + 1 < TSR_FIT_GROUPS ? "," : "\n");
    put(b, "  (an attention PE's own datapath %ld LUT; estimates from operator counts, not csynth)\n",
        use->fab.lut_att_pe);
    if (p->with_profile) {
        long su, sb, sd;
        tsr_profile_stated(p->profile, &su, &sb, &sd);
        put(b, "  profile %s's arrays and datapath, every PE at its profile size (a bitstream "
               "built from it):\n            URAM %ld, BRAM36 %ld, DSP %ld, LUT %ld, FF %ld",
            p->profile, p->prof_res.uram, p->prof_res.bram, p->prof_res.dsp, p->prof_res.lut,
            p->prof_res.ff);
        long sl, sf;
        tsr_profile_stated_fabric(p->profile, &sl, &sf);
        if (su >= 0) put(b, " (its header states %ld, %ld, %ld, %ld, %ld)", su, sb, sd, sl, sf);
        put(b, "\n  the model uses of them: URAM %ld, BRAM36 %ld\n", p->res.uram, p->res.bram);
    } else {
        put(b, "  these are what the model needs; a bitstream's are set by its profile "
               "(tessera plan --profile NAME, docs/hls-flow.md)\n");
    }
    if (p->max_seq[0] || p->max_seq[1] || p->max_seq[2])
        put(b, "longest context that fits (%d PEs, the chip's limit, not the model's): "
               "f32 KV %d, f16 KV %d, int8 KV %d positions (0: none at that precision, "
               "by memory or DSPs, or the profile lacks it)\n", p->pes, p->max_seq[TSR_KV_F32],
            p->max_seq[TSR_KV_F16], p->max_seq[TSR_KV_INT8]);
    if (!p->decidable) put(b, "\nfit: CANNOT DECIDE: %s\n", p->why);
    else if (p->fits)
        put(b, "\nfit: FITS%s (LUT, FF, DSP, BRAM36, URAM under the %g%% ceiling; estimates "
               "until a csynth)\n", p->cards > 1 ? " each card" : "", p->max_util);
    else {
        put(b, "\nfit: DOES NOT FIT: %s\n", p->why);
        put(b, "smallest changes that fit:\n");
        if (p->fix_seq > 0) put(b, "  --ctx %d (a shorter context)\n", p->fix_seq);
        else put(b, "  a shorter context: none fits\n");
        if (p->kv != TSR_KV_INT8 && p->fix_kv_int8 >= 0)
            put(b, "  --kv int8: %s\n", p->fix_kv_int8 ? "fits" : "does not fit");
        if (p->fix_cards > 0 && p->clock_mhz > 0)
            put(b, "  --cards %d: split the layers over %d cards, %d PEs each (projected %.0f tok/s)\n",
                p->fix_cards, p->fix_cards, p->fix_cards_pes, p->fix_cards_tok_s);
        else if (p->fix_cards > 0)
            put(b, "  --cards %d: split the layers over %d cards, %d PEs each\n", p->fix_cards,
                p->fix_cards, p->fix_cards_pes);
        else if (p->emb_bytes > p->chip_bytes && p->chip_bytes)
            put(b, "  split over cards: none up to one layer per card fits: the embedding "
                   "(%d x %d) alone takes %.1f MB on chip, a card holds %.1f MB, and a layer "
                   "split keeps it whole on the first card%s\n", (int)p->kc.vocab_size,
                (int)p->kc.dim, p->emb_bytes / 1e6, p->chip_bytes / 1e6,
                p->kc.shared_classifier ? " (and, tied, as the classifier on the last)" : "");
        else put(b, "  split over cards: none up to one layer per card fits\n");
        if (!p->fix_cards && p->cards_floor > 0 && p->cards_floor < UINT64_MAX)
            put(b, "  the weight tiles alone need %llu cards' on-chip memory, however they are "
                   "split\n", (unsigned long long)p->cards_floor);
    }
    put(b, "\nprojected decode (the kernel's cycle accounting, not measured on hardware):\n");
    put(b, "  cycles/token at position %d: %llu (controller %llu = %.1f%%, mesh %llu%s)\n", p->pos,
        (unsigned long long)p->cyc.total, (unsigned long long)p->cyc.controller,
        100.0 * p->controller_share, (unsigned long long)p->cyc.mesh,
        p->cyc.links ? ", card links" : "");
    put(b, "   ");
    for (int r = 0; r < TSR_RG_COUNT; r++)
        put(b, " %s %llu%s", tsr_plan_region_name(r), (unsigned long long)p->cyc.rg[r],
            r + 1 < TSR_RG_COUNT ? "," : "");
    if (p->cyc.links) put(b, ", card links %llu", (unsigned long long)p->cyc.links);
    put(b, "\n  mean cycles/token over positions 0..%u: %.0f\n", k->seq_len - 1, p->cycles_mean);
    if (p->clock_mhz > 0) {
        put(b, "  projected tokens/s at %d MHz (%s): %.0f at position %d, %.0f over a whole "
               "context\n", p->clock_mhz,
            p->clock_from == 0 ? "--clock" : p->clock_from == 1 ? "the profile's target clock, "
            "TSR_CLOCK_MHZ" : "the part's default kernel clock", p->tok_s, p->pos, p->tok_s_mean);
        put(b, "  streaming the weights instead (%llu bytes/token) would need %.1f GB/s off-chip",
            (unsigned long long)p->weight_bytes_all, p->stream_gbps);
        if (pt->offchip_gbps > 0) put(b, " (%s: %d GB/s)\n", pt->offchip_kind, pt->offchip_gbps);
        else put(b, " (%s: bandwidth unknown)\n", pt->offchip_kind);
    } else {
        put(b, "  projected tokens/s: unknown (no default clock for %s: give --clock MHZ)\n", pt->name);
    }
    if (p->pipe.cards > 1) {
        /* the split as a pipeline: one sequence walks the stages in turn;
         * several in flight keep every stage busy */
        const tsr_plan_pipe *q = &p->pipe;
        put(b, "  pipeline at position %d, layers", p->pos);
        for (int c = 0; c < q->cards; c++)
            put(b, "%s%u-%u", c ? " | " : " ", p->bounds[c], p->bounds[c + 1] - 1u);
        put(b, ":\n    stage cycles");
        for (int c = 0; c < q->cards; c++)
            put(b, "%s%llu", c ? " | " : " ", (unsigned long long)q->stage[c]);
        put(b, " (card links included), the id back to card 0 %llu\n", (unsigned long long)q->ret);
        put(b, "    one sequence: %llu cycles/token (the stages in turn); %u in flight: %.0f "
               "cycles/token (%s), %.2fx\n", (unsigned long long)q->round, q->seqs,
            q->cycles_per_token, q->cycles_per_token > (double)q->slowest ? "the round trip" : "the slowest stage",
            (double)q->round / q->cycles_per_token);
        if (p->clock_mhz > 0)
            put(b, "    projected tokens/s at %d MHz: %.0f one sequence, %.0f aggregate of %u\n",
                p->clock_mhz, p->clock_mhz * 1e6 / (double)q->round, p->pipe_tok_s, q->seqs);
    }
    /* passes of several items: the same accounting, each tile read once a pass */
    put(b, "\nprojected prefill (passes of up to %d positions, each weight tile read once a pass):\n",
        p->block);
    put(b, "  a %d-token prompt: %llu cycles in %u pass%s (one position a pass: %llu, %.2fx "
           "as many)\n", p->prefill_tokens, (unsigned long long)p->prefill_cycles,
        p->prefill_passes, p->prefill_passes == 1 ? "" : "es",
        (unsigned long long)p->prefill_cycles_1,
        p->prefill_cycles ? (double)p->prefill_cycles_1 / (double)p->prefill_cycles : 0.0);
    if (p->clock_mhz > 0)
        put(b, "  projected prefill tokens/s at %d MHz: %.0f\n", p->clock_mhz, p->prefill_tok_s);
    put(b, "projected batched decode (%d sequence%s a step, one pass over the weights for all, "
           "each at position %d; %s):\n", p->batch, p->batch == 1 ? "" : "s", p->pos,
        p->batch > 1 ? "their KV caches need that many sequence slots" : "the profile's limit");
    put(b, "  cycles/step: %llu (controller %llu, mesh %llu%s)\n",
        (unsigned long long)p->batch_cyc.total, (unsigned long long)p->batch_cyc.controller,
        (unsigned long long)p->batch_cyc.mesh, p->batch_cyc.links ? ", card links" : "");
    if (p->clock_mhz > 0)
        put(b, "  projected tokens/s at %d MHz: %.0f aggregate, %.0f per sequence (%.2fx one "
               "sequence's at that position)\n", p->clock_mhz, p->batch_tok_s,
            p->batch_tok_s / p->batch, p->tok_s > 0 ? p->batch_tok_s / p->tok_s : 0.0);
    put(b, "assumptions: %s\n", tsr_plan_assumptions());
    put(b, "part figures: %s\n", pt->source);
}

/* "key":value, or "key":null when the value is unknown (known 0); prec
 * digits after the point (0: an integer). */
static void json_num(sbuf *b, const char *key, double v, int known, int prec)
{
    if (!known) put(b, "\"%s\":null,", key);
    else put(b, "\"%s\":%.*f,", key, prec, v);
}

static void fmt_json(const tsr_plan *p, const char *name, sbuf *b)
{
    const tsr_kconfig *k = &p->kc;
    const tsr_part *pt = p->part;
    put(b, "{\"model\":\"");
    for (const char *s = name; *s; s++) {   /* JSON string escape of the name */
        if (*s == '"' || *s == '\\') put(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) put(b, "\\u%04x", (unsigned char)*s);
        else put(b, "%c", *s);
    }
    put(b, "\",\"part\":\"%s\",\"profile\":\"%s\",\"profile_given\":%s,\"profile_holds\":%s,"
           "\"dim\":%u,\"hidden_dim\":%u,\"n_layers\":%u,\"n_heads\":%u,"
           "\"n_kv_heads\":%u,\"vocab_size\":%u,\"weights\":\"%s\",\"group_size\":%u,"
           "\"q4_kinds\":%u,\"kv\":\"%s\",\"seq_len\":%u,\"pes\":%d,\"pes_chosen\":%s,"
           "\"mesh_rows\":%u,\"mesh_cols\":%u,\"kv_split\":%u,\"att_pes\":%u,\"cards\":%d,",
        pt->name, p->profile, p->with_profile ? "true" : "false",
        !p->with_profile ? "null" : p->profile_ok ? "true" : "false", k->dim, k->hidden_dim,
        k->n_layers, k->n_heads, k->n_kv_heads, k->vocab_size,
        k->dtype != TSR_KDT_Q8 ? "f32" : k->q4_kinds ? "q4" : "q8", k->group, k->q4_kinds,
        kv_name(p->kv), k->seq_len, p->pes,
        p->pes_chosen ? "true" : "false", k->mesh_rows, k->mesh_cols, k->kv_split, k->att_pes,
        p->cards);
    put(b, "\"bytes\":{\"weights\":%llu,\"scales\":%llu,\"kv\":%llu,\"norms\":%llu,"
           "\"activations\":%llu,\"scratch\":%llu,\"stationary\":%llu,\"total\":%llu,"
           "\"pe_max\":%llu},",
        (unsigned long long)p->bytes.weights, (unsigned long long)p->bytes.scales,
        (unsigned long long)p->bytes.kv, (unsigned long long)p->bytes.norms,
        (unsigned long long)p->bytes.activations, (unsigned long long)p->bytes.scratch,
        (unsigned long long)p->bytes.stationary, (unsigned long long)p->bytes.total,
        (unsigned long long)p->bytes.pe_max);
    put(b, "\"blocks\":{\"uram_pe\":%ld,\"uram\":%ld,", p->res.uram_pe, p->res.uram);
    json_num(b, "uram_have", (double)p->uram_have, p->uram_have >= 0, 0);
    put(b, "\"bram36_pe\":%ld,\"bram36\":%ld,", p->res.bram_pe, p->res.bram);
    json_num(b, "bram36_have", (double)p->bram_have, p->bram_have >= 0, 0);
    put(b, "\"kv_in_uram\":%s,\"dsp_pe\":%ld,\"dsp\":%ld,", p->res.kv_in_uram ? "true" : "false",
        p->res.dsp_pe, p->res.dsp);
    json_num(b, "dsp_have", (double)p->dsp_have, p->dsp_have >= 0, 0);
    put(b, "\"lut_pe\":%ld,\"lut\":%ld,", p->res.lut_pe, p->res.lut);
    json_num(b, "lut_have", (double)p->lut_have, p->lut_have >= 0, 0);
    put(b, "\"ff_pe\":%ld,\"ff\":%ld,", p->res.ff_pe, p->res.ff);
    json_num(b, "ff_have", (double)p->ff_have, p->ff_have >= 0, 0);
    put(b, "\"fabric\":{");
    for (int g = 0; g < TSR_FIT_GROUPS; g++)
        put(b, "\"%s\":[%ld,%ld]%s", tsr_fit_group_name(g), p->res.fab.g_lut[g], p->res.fab.g_ff[g],
            g + 1 < TSR_FIT_GROUPS ? "," : "");
    put(b, "},");
    if (p->with_profile)
        put(b, "\"profile\":{\"uram\":%ld,\"bram36\":%ld,\"dsp\":%ld,\"lut\":%ld,\"ff\":%ld},",
            p->prof_res.uram, p->prof_res.bram, p->prof_res.dsp, p->prof_res.lut, p->prof_res.ff);
    put(b, "\"max_util\":%g,", p->max_util);
    put(b, "\"over\":");
    if (p->over >= 0) put(b, "{\"resource\":\"%s\",\"by\":%ld},", tsr_fit_resource_name(p->over), p->over_by);
    else put(b, "null,");
    put(b, "\"shell_known\":%s},", pt->shell_uram >= 0 && pt->shell_bram36 >= 0 ? "true" : "false");
    /* fits is null when the part table cannot decide it */
    put(b, "\"decidable\":%s,\"fits\":%s,", p->decidable ? "true" : "false",
        !p->decidable ? "null" : p->fits ? "true" : "false");
    put(b, "\"max_seq\":{");   /* the longest context per KV precision; null: none found */
    for (int kv = 0; kv < TSR_KV_COUNT; kv++) {
        if (p->max_seq[kv]) put(b, "\"%s\":%d%s", kv_name(kv), p->max_seq[kv], kv + 1 < TSR_KV_COUNT ? "," : "");
        else put(b, "\"%s\":null%s", kv_name(kv), kv + 1 < TSR_KV_COUNT ? "," : "");
    }
    put(b, "},");
    if (p->decidable && !p->fits) {   /* a fix not found is null */
        put(b, "\"fix\":{");
        json_num(b, "seq_len", p->fix_seq, p->fix_seq > 0, 0);
        put(b, "\"kv_int8_fits\":%s,", p->kv == TSR_KV_INT8 || p->fix_kv_int8 < 0 ? "null" : p->fix_kv_int8 ? "true" : "false");
        json_num(b, "cards", p->fix_cards, p->fix_cards > 0, 0);
        json_num(b, "cards_pes", p->fix_cards_pes, p->fix_cards > 0, 0);
        json_num(b, "cards_projected_tok_s", p->fix_cards_tok_s, p->fix_cards > 0 && p->clock_mhz > 0, 1);
        b->at--;   /* the last comma */
        put(b, "},");
    }
    put(b, "\"projected\":{\"position\":%d,\"cycles\":%llu,\"cycles_controller\":%llu,"
           "\"cycles_mesh\":%llu,\"controller_share\":%.4f,\"cycles_links\":%llu,",
        p->pos, (unsigned long long)p->cyc.total, (unsigned long long)p->cyc.controller,
        (unsigned long long)p->cyc.mesh, p->controller_share, (unsigned long long)p->cyc.links);
    put(b, "\"regions\":{");
    for (int r = 0; r < TSR_RG_COUNT; r++)
        put(b, "\"%s\":%llu%s", tsr_plan_region_name(r), (unsigned long long)p->cyc.rg[r],
            r + 1 < TSR_RG_COUNT ? "," : "");
    put(b, "},\"cycles_mean\":%.1f,", p->cycles_mean);
    /* no clock: no tokens/s, and no streaming bandwidth */
    int clk = p->clock_mhz > 0;
    json_num(b, "clock_mhz", p->clock_mhz, clk, 0);
    if (clk)
        put(b, "\"clock_from\":\"%s\",", p->clock_from == 0 ? "option"
                                         : p->clock_from == 1 ? "profile" : "part");
    json_num(b, "tok_s", p->tok_s, clk, 1);
    json_num(b, "tok_s_mean", p->tok_s_mean, clk, 1);
    put(b, "\"weight_bytes_per_token\":%llu,", (unsigned long long)p->weight_bytes_all);
    json_num(b, "stream_gbps", p->stream_gbps, clk, 2);
    json_num(b, "offchip_gbps", pt->offchip_gbps, pt->offchip_gbps > 0, 0);
    put(b, "\"offchip_kind\":\"%s\"},", pt->offchip_kind);
    if (p->pipe.cards > 1) {
        const tsr_plan_pipe *q = &p->pipe;
        put(b, "\"pipeline\":{\"cards\":%d,\"sequences\":%u,\"bounds\":[", q->cards, q->seqs);
        for (int c = 0; c <= q->cards; c++) put(b, "%u%s", p->bounds[c], c < q->cards ? "," : "");
        put(b, "],\"stage_cycles\":[");
        for (int c = 0; c < q->cards; c++)
            put(b, "%llu%s", (unsigned long long)q->stage[c], c + 1 < q->cards ? "," : "");
        put(b, "],\"return_cycles\":%llu,\"round_cycles\":%llu,\"cycles_per_token\":%.1f,",
            (unsigned long long)q->ret, (unsigned long long)q->round, q->cycles_per_token);
        json_num(b, "tok_s", p->pipe_tok_s, clk, 1);
        b->at--;
        put(b, "},");
    }
    put(b, "\"prefill\":{\"tokens\":%d,\"block\":%d,\"passes\":%u,\"cycles\":%llu,"
           "\"cycles_one_a_pass\":%llu,", p->prefill_tokens, p->block, p->prefill_passes,
        (unsigned long long)p->prefill_cycles, (unsigned long long)p->prefill_cycles_1);
    json_num(b, "tok_s", p->prefill_tok_s, clk, 1);
    b->at--;   /* the last comma */
    put(b, "},\"batch\":{\"sequences\":%d,\"position\":%d,\"cycles\":%llu,"
           "\"cycles_controller\":%llu,\"cycles_mesh\":%llu,\"regions\":{", p->batch, p->pos,
        (unsigned long long)p->batch_cyc.total, (unsigned long long)p->batch_cyc.controller,
        (unsigned long long)p->batch_cyc.mesh);
    for (int r = 0; r < TSR_RG_COUNT; r++)
        put(b, "\"%s\":%llu%s", tsr_plan_region_name(r), (unsigned long long)p->batch_cyc.rg[r],
            r + 1 < TSR_RG_COUNT ? "," : "");
    put(b, "},");
    json_num(b, "tok_s", p->batch_tok_s, clk, 1);
    json_num(b, "seq_tok_s", p->batch > 0 ? p->batch_tok_s / p->batch : 0.0, clk, 1);
    b->at--;
    put(b, "},");
    put(b, "\"assumptions\":\"%s\",\"part_source\":\"%s\"}\n", tsr_plan_assumptions(), pt->source);
}

size_t tsr_plan_format(const tsr_plan *p, const char *name, int json, char *buf, size_t len)
{
    sbuf b = { buf, len, 0 };
    if (json) fmt_json(p, name ? name : "", &b);
    else fmt_text(p, name ? name : "", &b);
    if (len > 0 && b.at >= len) buf[len - 1] = '\0';
    return b.at;
}

/* ------------------------------------------------------------------------ */
/* The split of a real run (the kernel's counters)                           */

size_t tsr_plan_run_estimate(const uint64_t cyc[TSR_RG_COUNT], const uint64_t mark[TSR_RG_COUNT],
                             uint64_t pos, int clock_mhz, char *buf, size_t len)
{
    sbuf b = { buf, len, 0 };
    if (len > 0) buf[0] = '\0';
    uint64_t ctrl = 0, mesh = 0;
    put(&b, "cycles.position %llu\n", (unsigned long long)pos);
    for (int r = 0; r < TSR_RG_COUNT; r++) {
        uint64_t d = cyc[r] - mark[r];
        put(&b, "cycles.%s %llu\n", tsr_plan_region_name(r), (unsigned long long)d);
        if (r < TSR_RG_FIRST_MESH) ctrl += d;
        else mesh += d;
    }
    uint64_t total = ctrl + mesh;
    put(&b, "cycles.controller %llu\n", (unsigned long long)ctrl);
    put(&b, "cycles.mesh %llu\n", (unsigned long long)mesh);
    put(&b, "cycles.total %llu\n", (unsigned long long)total);
    put(&b, "cycles.controller_share %.4f\n", total ? (double)ctrl / (double)total : 0.0);
    if (clock_mhz > 0 && total)
        put(&b, "projected.tok_s %.1f at %d MHz (the kernel's cycle accounting, not measured)\n",
            clock_mhz * 1e6 / (double)total, clock_mhz);
    if (len > 0 && b.at >= len) buf[len - 1] = '\0';
    return b.at;
}

/* ------------------------------------------------------------------------ */
/* Public entry (tessera.h)                                                   */

static int kv_parse(const char *s, int *kv)
{
    if (!s || !strcmp(s, "f32")) *kv = TSR_KV_F32;
    else if (!strcmp(s, "f16")) *kv = TSR_KV_F16;
    else if (!strcmp(s, "int8")) *kv = TSR_KV_INT8;
    else return -1;
    return 0;
}

int tsr_plan_report(const char *path, const tsr_plan_opts *o, int json, char *buf, size_t len,
                    int *fits, char *err, size_t errlen)
{
    tsr_err e;
    tsr_clearerr(&e);
    tsr_config cfg;
    tsr_checkpoint *ck = NULL;
    int rc = TSR_OK;
    const char *name = path;
    if (!o || (!path && !o->shape)) {
        rc = tsr_seterr(&e, TSR_ERR_ARG, "plan: -m MODEL or --shape SHAPE is required");
        goto out;
    }
    for (size_t i = 0; i < sizeof o->reserved / sizeof o->reserved[0]; i++)
        if (o->reserved[i]) {
            rc = tsr_seterr(&e, TSR_ERR_UNSUPPORTED, "plan: reserved option fields are not zero "
                            "(built against a newer tessera.h?)");
            goto out;
        }
    if (!o->part || !o->part[0]) {
        rc = tsr_seterr(&e, TSR_ERR_ARG, "plan: --part is required (valid: %s)", tsr_part_names());
        goto out;
    }
    tsr_plan_req rq;
    memset(&rq, 0, sizeof rq);
    rq.part = o->part;
    rq.profile = o->profile;
    rq.weights_f32 = o->weights_f32;
    rq.weights = o->weights;
    rq.group = o->group_size;
    rq.seq_len = o->seq_len;
    rq.pes = o->pes;
    rq.cols = o->cols;
    rq.kv_split = o->kv_split;
    rq.clock_mhz = o->clock_mhz;
    rq.pos = o->step > 0 ? o->step - 1 : -1;
    rq.cards = o->cards;
    if (o->max_util < 0 || o->max_util > 100) {
        rc = tsr_seterr(&e, TSR_ERR_ARG, "utilisation ceiling %g%% (valid: 0 < PCT <= 100)",
                        o->max_util);
        goto out;
    }
    rq.max_util = o->max_util;
    if (kv_parse(o->kv, &rq.kv)) {
        rc = tsr_seterr(&e, TSR_ERR_ARG, "KV precision '%s' (valid: f32, f16, int8)", o->kv);
        goto out;
    }
    if (o->shape) {
        if ((rc = tsr_synth_shape(o->shape, &cfg, &e))) goto out;
        name = o->shape;
    } else {
        if ((rc = tsr_checkpoint_open(path, &ck, &e))) goto out;
        cfg = ck->cfg;
    }
    tsr_plan plan;
    if ((rc = tsr_plan_config(&cfg, &rq, &plan, &e))) {
        if (rc != TSR_ERR_ARG) {   /* a bad option is the caller's, not the model's */
            char msg[TSR_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s", e.msg);
            tsr_seterr(&e, rc, "%s: %s", name, msg);
        }
        goto out;
    }
    if (fits) *fits = plan.decidable ? plan.fits : -1;
    tsr_plan_format(&plan, name, json, buf, len);
out:
    tsr_checkpoint_close(ck);
    if (rc && err && errlen) snprintf(err, errlen, "%s", e.msg);
    return rc;
}
