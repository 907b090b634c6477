/*
 * plan_fit.c - the fabric estimate (LUTs, flip-flops) of a datapath, and
 * the utilisation ceiling (see plan_fit.h).
 *
 *   operator costs (hw/ops.def)  x  instances (below, one function per
 *   kernel function the unrolled loops place)  ->  groups  ->  card
 *
 * Each count says which loop nest of kernels/ it comes from.  Then the
 * arrays packed into BRAM36 / URAM blocks the way tessera_top partitions
 * them ("Packing"), and the DSPs of the floating-point operators ("DSPs").
 */
#include <string.h>

#include "plan.h"
#include "plan_fit.h"
#include "tsr_layout.h"

/* ------------------------------------------------------------------------ */
/* Operators                                                                  */

enum {
#define TSR_OP(id, lut, ff, src) OP_##id,
#include "../hw/ops.def"
#undef TSR_OP
    OP_COUNT
};

static const struct { long lut, ff; } op_cost[OP_COUNT] = {
#define TSR_OP(id, lut, ff, src) { lut, ff },
#include "../hw/ops.def"
#undef TSR_OP
};

/* A running sum of operator instances. */
typedef struct acc { double lut, ff; } acc;

static void add(acc *a, int op, double n)
{
    a->lut += n * (double)op_cost[op].lut;
    a->ff += n * (double)op_cost[op].ff;
}

static uint32_t cdiv(uint32_t a, uint32_t b) { return (a + b - 1u) / b; }

/* LUTs of one bit of an n:1 mux: a LUT6 is a 4:1, F7/F8 make four of
 * them a 16:1 (UG574); wider ones are trees of those.  A 2:1 is half a
 * LUT: LUT6_2's two outputs share the select (UG574). */
static double mux_luts(uint32_t n)
{
    if (n <= 1u) return 0;
    if (n == 2u) return 0.5;
    if (n <= 4u) return 1;
    if (n <= 8u) return 2;
    if (n <= 16u) return 4;
    return 4.0 * cdiv(n, 16u) + mux_luts(cdiv(n, 16u));
}

/* An n:1 mux of `bits` bits with its output registered. */
static void mux(acc *a, uint32_t n, double bits)
{
    add(a, OP_MUX4BIT, bits * mux_luts(n));
    add(a, OP_REGBIT, bits);
}

/* A `bits`-bit loop counter or address register (an adder and its
 * register, ADDBIT). */
static void counters(acc *a, double n, double bits) { add(a, OP_ADDBIT, n * bits); }

/* `banks` LUTRAM banks of `depth` words of `width` bits (the arrays whose
 * banks are at most TSR_LUTRAM_WORDS words, tsr_profile.h; deeper ones are
 * block RAM, counted in plan.c): eight LUTs hold 64 x 7 or 32 x 14 bits. */
static void lutram(acc *a, double banks, uint32_t depth, uint32_t width)
{
    if (depth == 0u || depth > TSR_LUTRAM_WORDS) return;
    uint32_t per8 = depth <= 32u ? 14u : 7u;
    add(a, OP_LUTRAM8, banks * cdiv(width, per8));
}

/* An int8 x int8 (or int4 x int8) product tree of TSR_LANES lanes, summed
 * exactly in int32: the products (prod_bits wide), then a binary tree of
 * adders one bit wider a level (mesh.c q8_lanes, q4_lanes). */
static void lane_tree(acc *a, int mul, uint32_t prod_bits)
{
    add(a, mul, TSR_LANES);
    uint32_t w = prod_bits;
    for (uint32_t n = TSR_LANES; n > 1u; n /= 2u) add(a, OP_ADDBIT, (double)(n / 2u) * ++w);
}

/* ------------------------------------------------------------------------ */
/* Instances                                                                  */

/* Every PE: its GEMV tiles (mesh.c pe_gemv -> pe_tile_q8, pe_tile_q4,
 * pe_tile_f32, each INLINE off: one instance a PE). */
static void pe_mac(const tsr_fit_dp *d, acc *a)
{
    double B = d->block;
    /* pe_tile_q8: 32 fabric 8 x 8 products and their int32 tree
     * (q8_lanes), the chunk sum (isum + d), int -> fp32, two multiplies
     * (both scales) and the accumulator's add; acc[TSR_ROW_SLOTS][B]
     * partitioned on dim 1 into registers, read at a run-time row slot
     * (a TSR_ROW_SLOTS:1 mux a bit); the weight and input words
     * registered; nine counters and addresses (s, x, c, j, g, b, wa, sa,
     * xg) */
    lane_tree(a, OP_MUL8, 16u);
    add(a, OP_ADDBIT, 32);
    add(a, OP_SITOFP, 1);
    add(a, OP_FMUL, 2);
    add(a, OP_FADD, 1);
    add(a, OP_REGBIT, TSR_ROW_SLOTS * B * 32.0);
    add(a, OP_MUX4BIT, B * 32.0 * mux_luts(TSR_ROW_SLOTS));
    add(a, OP_REGBIT, 2.0 * TSR_LANES * 8.0);
    counters(a, 9, 32);
    /* a group smaller than the word: each lane's weight and input byte
     * rotated by a run-time offset (wl, xl: a TSR_LANES:1 mux a byte) */
    if (d->group_min < TSR_LANES) add(a, OP_MUX4BIT, 2.0 * TSR_LANES * 8.0 * mux_luts(TSR_LANES));
    if (d->with_q4) {
        /* pe_tile_q4: 32 nibble x int8 products and their tree, the same
         * scale path, seven counters */
        lane_tree(a, OP_MUL4, 12u);
        add(a, OP_SITOFP, 1);
        add(a, OP_FMUL, 2);
        add(a, OP_FADD, 1);
        add(a, OP_REGBIT, TSR_ROW_SLOTS * B * 32.0);
        add(a, OP_MUX4BIT, B * 32.0 * mux_luts(TSR_ROW_SLOTS));
        counters(a, 7, 32);
    }
    if (d->with_f32) {
        /* pe_tile_f32: one multiply-add, its accumulators, seven counters */
        add(a, OP_FMUL, 1);
        add(a, OP_FADD, 1);
        add(a, OP_REGBIT, TSR_ROW_SLOTS * B * 32.0);
        add(a, OP_MUX4BIT, B * 32.0 * mux_luts(TSR_ROW_SLOTS));
        counters(a, 7, 32);
    }
    /* pe_gemv's own loops (halves, the zero fill) */
    counters(a, 3, 32);
}

/* The roots' PEs (mesh.c, each INLINE off and placed by the unrolled PE
 * loop only where TSR_SWIGLU_ROOT / TSR_BEST_ROOT hold): pe_root, at
 * every w13_cols-th PE: pe_swiglu's fabric expf, its divide 1/(1+e), the
 * add and two multiplies, two counters; pe_root_best, at every
 * cls_cols-th PE: pe_best's TSR_VEC lanes of compare-select (value and
 * row, 64 bits) and their tree, each tree node comparing values twice (>,
 * ==) and rows once, two counters. */
static void root_swiglu(acc *a)
{
    add(a, OP_FEXPF, 1);
    add(a, OP_FDIV, 1);
    add(a, OP_FADD, 1);
    add(a, OP_FMUL, 2);
    counters(a, 2, 32);
}
static void root_best(acc *a)
{
    add(a, OP_FCMP, TSR_VEC + 2.0 * (TSR_VEC - 1));
    add(a, OP_MUX4BIT, (2.0 * TSR_VEC - 1) * 64.0 * mux_luts(2));
    add(a, OP_ADDBIT, (TSR_VEC - 1) * 32.0);
    add(a, OP_REGBIT, TSR_VEC * 64.0);
    counters(a, 2, 32);
}

uint32_t tsr_fit_root_pes(uint32_t P, uint32_t cols) { return cdiv(P, cols ? cols : 1u); }

/* Every PE: the arrays tessera_top binds to LUTRAM (tsr_kernel.c, the
 * TSR_*_LUT choices): psum (TSR_VEC banks), the broadcast input's int8
 * words and scales, and the nine CONFIGURE tables a matrix deep
 * (tab_row0 ... tab_steps, 32 bits; hls-review-3 N19); the best row of
 * each item in registers. */
static void pe_mem(const tsr_fit_dp *d, acc *a)
{
    lutram(a, TSR_VEC, cdiv(d->block * d->pe_rows, TSR_VEC), 32u);
    lutram(a, 1, d->block * d->in_words, TSR_LANES * 8u);
    lutram(a, 1, d->block * d->xs_words, 32u);
    lutram(a, 9, d->mats, 32u);
    add(a, OP_REGBIT, d->block * 64.0);
}

/* A column-tree step instance (mesh.c pe_tree_add, ALLOCATION fadd
 * limit=TSR_TREE_LANES): its adders and two counters. */
static void tree_step(acc *a)
{
    add(a, OP_FADD, TSR_TREE_LANES);
    counters(a, 2, 32);
}

/* An attention PE (attention.c pe_att, INLINE off, on the TSR_ATT_PES
 * first PEs): TSR_ATT_LANES multiply-adds (pe_att_mac, one instance:
 * ALLOCATION limit=1), the score partials' tree (TSR_ATT_PARTS - 1 adds)
 * and the divide by sqrt(head_size) (pe_att_scale_max), the max's lanes
 * and their tree of compare-selects, pe_reduce_sum's add(s) and its
 * run-time-indexed partials (an 8:1 mux, hls-review-3 N6), pe_att_exp's
 * subtract and fabric expf, pe_att_norm's divide; the f16 / int8 KV paths
 * when built (pe_att_store's encoders, kv_elem's decoders); about twelve
 * loop counters; its LUTRAM: acc (TSR_ATT_PARTS rows of TSR_ATT_LANES
 * banks), coef, the scores, head outputs and q | k | v copy. */
static void att_pe(const tsr_fit_dp *d, acc *a)
{
    uint32_t parts = d->sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u;
    uint32_t pe_sum = d->sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : d->sum_lanes;
    add(a, OP_FMUL, TSR_ATT_LANES);
    add(a, OP_FADD, TSR_ATT_LANES + (parts - 1u));
    add(a, OP_FDIV, 2);
    add(a, OP_FCMP, 2.0 * TSR_ATT_LANES - 1);
    add(a, OP_MUX4BIT, (2.0 * TSR_ATT_LANES - 1) * 32.0 * mux_luts(2));
    add(a, OP_FADD, 1 + (pe_sum > 1u ? 1 : 0) + 1);
    if (pe_sum > 1u) add(a, OP_MUX4BIT, 32.0 * mux_luts(pe_sum));
    add(a, OP_FEXPF, 1);
    if (d->kv_paths & (1u << TSR_KV_F16)) {
        add(a, OP_FMUL, TSR_ATT_LANES + 2);
        add(a, OP_FADD, 2);
    }
    if (d->kv_paths & (1u << TSR_KV_INT8)) {
        add(a, OP_FMUL, 2);
        add(a, OP_FADD, 2);
        add(a, OP_FDIV, 2);
        add(a, OP_FPTOSI, 2);
    }
    counters(a, 12, 32);
    uint32_t accw = d->acc_words;
    lutram(a, (double)parts * TSR_ATT_LANES, cdiv(accw, TSR_ATT_LANES), 32u);
    lutram(a, 1, accw, 32u);
    lutram(a, TSR_ATT_LANES, cdiv(d->att_words, TSR_ATT_LANES), 32u);
    lutram(a, TSR_ATT_LANES, cdiv(d->ao_words, TSR_ATT_LANES), 32u);
    lutram(a, TSR_VEC, cdiv(d->qkv_words, TSR_VEC), 32u);
}

/* A KV head group's tree steps (attention.c): an up step's TSR_ATT_LANES
 * + 1 adds and a compare (pe_att_tree_up), a down step's copies
 * (pe_att_tree_down); three and two counters. */
static void att_up(acc *a)
{
    add(a, OP_FADD, TSR_ATT_LANES + 1);
    add(a, OP_FCMP, 1);
    counters(a, 3, 32);
}
static void att_down(acc *a) { counters(a, 2, 32); }

/* The controller's muxes over the PEs, each output registered: the
 * gather's psum[src] (a TSR_VEC-float word from any PE, mesh.c
 * tsr_mesh_gather; hls-review-3 A4), the embedding's int8 word and scale
 * from any PE (tsr_mesh_embed), attention's collect of ao[src] from any
 * attention PE (att_collect), and the greedy token's compare tree over
 * the PEs' best rows (tsr_mesh_best: a compare-select of 64 bits a
 * node). */
static void ctrl_mux(const tsr_fit_dp *d, acc *a)
{
    mux(a, d->pes, TSR_VEC * 32.0);
    mux(a, d->pes, TSR_LANES * 8.0 + 32.0);
    mux(a, d->att_pes, TSR_VEC * 32.0);
    add(a, OP_FCMP, 2.0 * (d->pes - 1u));
    add(a, OP_MUX4BIT, (d->pes - 1u) * 64.0 * mux_luts(2));
}

/* The controller's labelled loops on the per-token path (forward.c,
 * ops.c, sampler.c, tsr_kernel.c's command loop, mesh.c's and
 * attention.c's controller passes): about 110, each a counter. */
#define CTRL_LOOPS 110

/* The controller's operators: the quantizer's TSR_LANES divides,
 * roundings and zero tests and the group scale's divide and word-max
 * compares (mesh.c quantize_broadcast: the 33 divides of hls-review-3),
 * the norm pass's two multiplies and |x| max a lane (in_q8_norm), the
 * reduction lanes (ops.c reduce, sum_levels: as plan.c dsp_ctrl), the
 * gather's residual adds, fused sum of squares, RoPE's rotations and word
 * maxima, the embedding's dequantizing lanes, RoPE's angles, RMSNorm's
 * divide-sqrt-divide, the sampler's expf, divide and compares; the m_axi
 * bundles gmem0 and gmem1 and the control port (tsr_kernel.c
 * tessera_top's INTERFACE lines); the loop counters.  CONFIGURE's integer
 * multiplies and divides are not counted (DSPs in plan.c). */
static void ctrl_ops(const tsr_fit_dp *d, acc *a)
{
    double E = d->sum_lanes >= TSR_FADD_LAT ? (double)(d->sum_lanes / TSR_FADD_LAT) : 1.0;
    double fused = d->sum_lanes >= TSR_VEC * TSR_FADD_LAT ? 1.0 : 0.0;
    uint32_t wmax_ports = d->group_max / TSR_VEC > 1u ? d->group_max / TSR_VEC : 1u;
    add(a, OP_FDIV, TSR_LANES + 1);
    add(a, OP_FPTOSI, TSR_LANES);
    add(a, OP_FCMP, TSR_LANES + wmax_ports);
    add(a, OP_FMUL, 2.0 * TSR_LANES);
    add(a, OP_FCMP, TSR_LANES);
    add(a, OP_FMUL, 2.0 * E);
    add(a, OP_FADD, 2.0 * E + (2.0 + fused) * E);
    add(a, OP_FADD, TSR_VEC + fused * TSR_VEC);
    add(a, OP_FMUL, fused * TSR_VEC);
    add(a, OP_FMUL, 4.0 * TSR_VEC_PAIRS);
    add(a, OP_FADD, 2.0 * TSR_VEC_PAIRS);
    add(a, OP_FCMP, TSR_VEC);
    add(a, OP_FMUL, TSR_LANES);
    add(a, OP_SITOFP, TSR_LANES);
    add(a, OP_FMUL, 1);
    add(a, OP_FTRIG, 2);
    add(a, OP_FDIV, 2);
    add(a, OP_FSQRT, 1);
    add(a, OP_FEXPD, 1);
    add(a, OP_FDIV, 1);
    add(a, OP_FCMP, 2);
    add(a, OP_MAXI, 2);
    add(a, OP_SAXI, 1);
    counters(a, CTRL_LOOPS, 32);
}

/* Receivers of the unrolled tree levels below C over P PEs (mesh.c
 * TSR_TREE_RECV, attention.c TSR_ATT_UP_RECV), and the down steps'
 * (TSR_ATT_DOWN_RECV). */
static long up_steps(uint32_t P, uint32_t C)
{
    long n = 0;
    for (uint32_t s = 1; s < C; s *= 2u)
        for (uint32_t p = 0; p + s < P; p += 2u * s) n++;
    return n;
}
static long down_steps(uint32_t P, uint32_t C)
{
    long n = 0;
    for (uint32_t s = 1; s < C; s *= 2u)
        for (uint32_t p = s; p < P; p += 2u * s) n++;
    return n;
}

/* ------------------------------------------------------------------------ */
/* The card                                                                   */

static const char *const group_names[TSR_FIT_GROUPS] = {
    "mac", "root", "pe_mem", "tree", "attention", "attention_tree", "mux", "controller"
};

const char *tsr_fit_group_name(int g) { return g >= 0 && g < TSR_FIT_GROUPS ? group_names[g] : "?"; }

void tsr_fit_fabric_of(const tsr_fit_dp *d, tsr_fit_fabric *f)
{
    memset(f, 0, sizeof *f);
    acc one[TSR_FIT_GROUPS];
    memset(one, 0, sizeof one);
    pe_mac(d, &one[TSR_FIT_MAC]);
    acc sw = { 0, 0 }, best = { 0, 0 };
    root_swiglu(&sw);
    root_best(&best);
    double nsw = tsr_fit_root_pes(d->pes, d->w13_cols), nbest = tsr_fit_root_pes(d->pes, d->cls_cols);
    one[TSR_FIT_ROOT].lut = nsw * sw.lut + nbest * best.lut;
    one[TSR_FIT_ROOT].ff = nsw * sw.ff + nbest * best.ff;
    pe_mem(d, &one[TSR_FIT_PEMEM]);
    tree_step(&one[TSR_FIT_TREE]);
    att_pe(d, &one[TSR_FIT_ATT]);
    acc up = { 0, 0 }, down = { 0, 0 };
    att_up(&up);
    att_down(&down);
    ctrl_mux(d, &one[TSR_FIT_MUX]);
    ctrl_ops(d, &one[TSR_FIT_CTRL]);
    long ups = up_steps(d->att_pes, d->kv_split), downs = down_steps(d->att_pes, d->kv_split);
    double n[TSR_FIT_GROUPS] = { d->pes, 1, d->pes, (double)up_steps(d->pes, d->cols),
                                 d->att_pes, 1, 1, 1 };
    one[TSR_FIT_ATTTREE].lut = ups * up.lut + downs * down.lut;
    one[TSR_FIT_ATTTREE].ff = ups * up.ff + downs * down.ff;
    for (int g = 0; g < TSR_FIT_GROUPS; g++) {
        f->g_lut[g] = (long)(n[g] * one[g].lut + 0.5);
        f->g_ff[g] = (long)(n[g] * one[g].ff + 0.5);
        f->lut += f->g_lut[g];
        f->ff += f->g_ff[g];
    }
    /* PE 0: its tiles, both roots, memories, a tree step at every level,
     * its attention datapath and an up step at every group level */
    long levels = 0, qlevels = 0;
    for (uint32_t s = 1; s < d->cols; s *= 2u) levels++;
    for (uint32_t s = 1; s < d->kv_split; s *= 2u) qlevels++;
    double pe = one[TSR_FIT_MAC].lut + sw.lut + best.lut + one[TSR_FIT_PEMEM].lut +
                levels * one[TSR_FIT_TREE].lut;
    double pf = one[TSR_FIT_MAC].ff + sw.ff + best.ff + one[TSR_FIT_PEMEM].ff +
                levels * one[TSR_FIT_TREE].ff;
    if (d->att_pes) {
        pe += one[TSR_FIT_ATT].lut + qlevels * up.lut;
        pf += one[TSR_FIT_ATT].ff + qlevels * up.ff;
    }
    f->lut_pe = (long)(pe + 0.5);
    f->ff_pe = (long)(pf + 0.5);
    f->lut_att_pe = (long)(one[TSR_FIT_ATT].lut + 0.5);
}

void tsr_fit_dp_of_profile(const tsr_kprofile *p, tsr_fit_dp *d)
{
    memset(d, 0, sizeof *d);
    uint32_t nmax = p->hidden > p->dim ? p->hidden : p->dim;
    uint32_t in = nmax + p->group_max + TSR_LANES;   /* TSR_MAX_IN */
    d->pes = p->pes;
    d->att_pes = p->att_pes;
    d->cols = p->mesh_cols;
    d->kv_split = p->kv_split_max;
    d->sum_lanes = p->sum_lanes;
    d->block = p->block ? p->block : 1u;
    d->with_f32 = p->with_f32;
    d->with_q4 = p->with_q4;
    d->kv_paths = (p->kvh_words ? 1u << TSR_KV_F16 : 0u) |
                  (p->kvq_bytes && p->kvs_words ? 1u << TSR_KV_INT8 : 0u);
    d->group_min = p->group_min;
    d->group_max = p->group_max;
    d->mats = 2u + 4u * p->layers;                   /* TSR_MAX_MATS */
    d->pe_rows = p->pe_rows;
    d->in_words = in / TSR_LANES;                    /* TSR_PE_XQ_WORDS */
    d->xs_words = in / p->group_min;                 /* TSR_PE_XS */
    d->att_words = p->att_words;
    d->acc_words = p->seq > p->head_size ? p->seq : p->head_size;   /* TSR_ATT_ACC */
    d->ao_words = p->dim;                            /* TSR_MAX_QGROUP */
    d->qkv_words = 3u * p->dim;                      /* TSR_MAX_QKV */
    d->w13_cols = p->w13_cols;                       /* TSR_W13_COLS */
    d->cls_cols = p->cls_cols;                       /* TSR_CLS_COLS */
}

/* ------------------------------------------------------------------------ */
/* The ceiling                                                                */

static const char *const res_names[TSR_FIT_R_COUNT] = { "LUT", "FF", "DSP", "BRAM36", "URAM" };

const char *tsr_fit_resource_name(int r) { return r >= 0 && r < TSR_FIT_R_COUNT ? res_names[r] : "?"; }

long tsr_fit_ceiling(long have, double pct)
{
    if (have < 0) return -1;
    return (long)((double)have * pct / 100.0 + 1e-9);
}

int tsr_fit_judge(const long need[TSR_FIT_R_COUNT], const long have[TSR_FIT_R_COUNT], double pct,
                  int *over, long *by)
{
    for (int r = 0; r < TSR_FIT_R_COUNT; r++) {
        long cap = tsr_fit_ceiling(have[r], pct);
        if (cap >= 0 && need[r] > cap) {
            if (over) *over = r;
            if (by) *by = need[r] - cap;
            return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Assumptions of the packing and the DSPs (not the kernel's)                */

/* Packing.  UltraRAM: 4K x 72 bits, one aspect ratio only (UG573 for
 * UltraScale+, UG949 "Mapping Memories to UltraRAM Blocks", AM007 for
 * Versal), so a memory of words up to 72 bits wide takes one URAM per 4096
 * words of depth, however narrow its words: a memory of 9,216 fp32 words is
 * 3 URAMs, not the 36,864 bytes' 2.  BRAM36: 1K x 36 (32 data bits) down
 * to 32K x 1, so BRAM36 blocks go by data bytes.  A PE's int8 array is
 * reshaped to TSR_LANES-byte words (256 bits): 4 URAMs side by side, 4096
 * words deep each.  A partitioned array is one memory per
 * bank; a bank of at most LUTRAM_WORDS words goes to LUTs (HLS's own choice
 * for small memories: unverified until csynth). */
#define HW_URAM_DEPTH      4096u
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
static uint64_t cdiv64(uint64_t a, uint64_t b) { return (a + b - 1u) / b; }

/* ------------------------------------------------------------------------ */
/* Packing                                                                    */

static long bram_of(uint64_t bytes) { return bytes ? (long)cdiv64(bytes, TSR_FIT_BRAM_BYTES) : 0; }
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


void tsr_fit_pe_blocks(const tsr_fit_pe_arrays *a, long *uram, long *bram)
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
long tsr_fit_ctrl_blocks(uint64_t dim, uint64_t kvd, uint64_t vocab, uint64_t layers, uint64_t nmax,
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
 * multiply-add (a profile with F32). */
static long dsp_pe(int with_f32, int with_q4)
{
    long d = 2 * DSP_FMUL + DSP_FADD;
    if (with_q4) d += 2 * DSP_FMUL + DSP_FADD;
    if (with_f32) d += DSP_FMUL + DSP_FADD;
    return d;
}

/* A W13 root (mesh.c pe_root, pe_swiglu): two multiplies, an add; its
 * expf in LUTs (BIND_OP fabric), the divide uses none. */
#define DSP_SWIGLU         (2 * DSP_FMUL + DSP_FADD)

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
 * columns and Q PEs a KV head, SwiGLU every w13_cols PEs), the busiest
 * PE's in *per_pe (PE 0: a root, a receiver at every level). */
long tsr_fit_dsp_count(uint32_t P, uint32_t att_pes, uint32_t C, uint32_t Q, uint32_t w13_cols,
                      int with_f32, int with_q4, uint32_t kv_paths, uint32_t sum_lanes,
                      long *per_pe)
{
    uint32_t parts = sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u;
    uint32_t pe_sum = sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : sum_lanes;
    long att = dsp_att(parts, pe_sum, kv_paths), levels = 0, split_levels = 0;
    long pe = dsp_pe(with_f32, with_q4);
    for (uint32_t s = 1; s < C; s *= 2u) levels++;
    for (uint32_t s = 1; s < Q; s *= 2u) split_levels++;
    *per_pe = pe + DSP_SWIGLU + levels * dsp_tree() +
              (att_pes ? att + split_levels * dsp_att_tree() : 0);
    return (long)P * pe + (long)tsr_fit_root_pes(P, w13_cols) * DSP_SWIGLU +
           tree_instances(P, C) * dsp_tree() + (long)att_pes * att +
           tree_instances(att_pes, Q) * dsp_att_tree() + dsp_ctrl(sum_lanes);
}

/* LUTs and flip-flops of datapath d into r (plan_fit.c). */
void tsr_plan_fabric_to(const tsr_fit_dp *d, tsr_plan_res *r)
{
    tsr_fit_fabric_of(d, &r->fab);
    r->lut = r->fab.lut;
    r->ff = r->fab.ff;
    r->lut_pe = r->fab.lut_pe;
    r->ff_pe = r->fab.ff_pe;
}

/* The f16 / int8 KV paths a profile builds (dsp_att's kv_paths). */
uint32_t tsr_fit_kv_paths(const tsr_kprofile *p)
{
    return (p->kvh_words ? 1u << TSR_KV_F16 : 0u) |
           (p->kvq_bytes && p->kvs_words ? 1u << TSR_KV_INT8 : 0u);
}

void tsr_plan_profile_resources(const tsr_kprofile *p, tsr_plan_res *r)
{
    memset(r, 0, sizeof *r);
    uint32_t B = p->block ? p->block : 1u;   /* items a pass: the per-item arrays */
    tsr_fit_pe_arrays a = {
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
    tsr_fit_pe_blocks(&a, &u, &b);
    /* PEs without attention hold no KV cache and no scores */
    tsr_fit_pe_arrays n = a;
    memset(n.kv_elems, 0, sizeof n.kv_elems);
    n.kvs_words = 0;
    n.att_words = 0;
    long un, bn;
    tsr_fit_pe_blocks(&n, &un, &bn);
    r->uram_pe = u;
    r->bram_pe = b;
    r->uram = (long)p->att_pes * u + (long)(p->pes - p->att_pes) * un;
    r->bram = (long)p->att_pes * b + (long)(p->pes - p->att_pes) * bn +
              tsr_fit_ctrl_blocks(p->dim, p->dim, p->vocab, p->layers,
                          (p->hidden > p->dim ? p->hidden : p->dim) + p->group_max, p->sum_lanes, B,
                          p->slots < B ? p->slots : B, 1u);   /* qkvb: TSR_MAX_QKV = 3 dim */
    r->kv_in_uram = (int)p->kv_uram;
    r->dsp = tsr_fit_dsp_count(p->pes, p->att_pes, p->mesh_cols, p->kv_split_max, p->w13_cols,
                       (int)p->with_f32, (int)p->with_q4, tsr_fit_kv_paths(p), p->sum_lanes,
                       &r->dsp_pe);
    tsr_fit_dp d;
    tsr_fit_dp_of_profile(p, &d);
    tsr_plan_fabric_to(&d, r);
}
