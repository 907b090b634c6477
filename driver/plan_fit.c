/*
 * plan_fit.c - the fabric estimate (LUTs, flip-flops) of a datapath, and
 * the utilisation ceiling (see plan_fit.h).
 *
 *   operator costs (hw/ops.def)  x  instances (below, one function per
 *   kernel function the unrolled loops place)  ->  groups  ->  card
 *
 * Each count says which loop nest of kernels/ it comes from.  The DSPs of
 * the same operators are counted in driver/plan.c ("DSPs"), not here.
 */
#include <string.h>

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

/* Every PE: pe_root (mesh.c; INLINE off and called from root_pe through
 * TSR_RUN_PES, so the unrolled PE loop places it on every PE, not only
 * where a mesh row's root is): pe_swiglu's fabric expf, its divide
 * 1/(1+e), the add and two multiplies; pe_best's TSR_VEC lanes of
 * compare-select (value and row, 64 bits) and their tree, each tree node
 * comparing values twice (>, ==) and rows once. */
static void pe_root(acc *a)
{
    add(a, OP_FEXPF, 1);
    add(a, OP_FDIV, 1);
    add(a, OP_FADD, 1);
    add(a, OP_FMUL, 2);
    add(a, OP_FCMP, TSR_VEC + 2.0 * (TSR_VEC - 1));
    add(a, OP_MUX4BIT, (2.0 * TSR_VEC - 1) * 64.0 * mux_luts(2));
    add(a, OP_ADDBIT, (TSR_VEC - 1) * 32.0);
    add(a, OP_REGBIT, TSR_VEC * 64.0);
    counters(a, 3, 32);
}

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
    pe_root(&one[TSR_FIT_ROOT]);
    pe_mem(d, &one[TSR_FIT_PEMEM]);
    tree_step(&one[TSR_FIT_TREE]);
    att_pe(d, &one[TSR_FIT_ATT]);
    acc up = { 0, 0 }, down = { 0, 0 };
    att_up(&up);
    att_down(&down);
    ctrl_mux(d, &one[TSR_FIT_MUX]);
    ctrl_ops(d, &one[TSR_FIT_CTRL]);
    long ups = up_steps(d->att_pes, d->kv_split), downs = down_steps(d->att_pes, d->kv_split);
    double n[TSR_FIT_GROUPS] = { d->pes, d->pes, d->pes, (double)up_steps(d->pes, d->cols),
                                 d->att_pes, 1, 1, 1 };
    one[TSR_FIT_ATTTREE].lut = ups * up.lut + downs * down.lut;
    one[TSR_FIT_ATTTREE].ff = ups * up.ff + downs * down.ff;
    for (int g = 0; g < TSR_FIT_GROUPS; g++) {
        f->g_lut[g] = (long)(n[g] * one[g].lut + 0.5);
        f->g_ff[g] = (long)(n[g] * one[g].ff + 0.5);
        f->lut += f->g_lut[g];
        f->ff += f->g_ff[g];
    }
    /* PE 0: its tiles, root, memories, a tree step at every level, its
     * attention datapath and an up step at every group level */
    long levels = 0, qlevels = 0;
    for (uint32_t s = 1; s < d->cols; s *= 2u) levels++;
    for (uint32_t s = 1; s < d->kv_split; s *= 2u) qlevels++;
    double pe = one[TSR_FIT_MAC].lut + one[TSR_FIT_ROOT].lut + one[TSR_FIT_PEMEM].lut +
                levels * one[TSR_FIT_TREE].lut;
    double pf = one[TSR_FIT_MAC].ff + one[TSR_FIT_ROOT].ff + one[TSR_FIT_PEMEM].ff +
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
