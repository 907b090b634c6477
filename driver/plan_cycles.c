/*
 * plan_cycles.c - the cycle model of `tessera plan` (see plan.h, piece 3):
 * what the kernel's own accounting (kernels/tsr_cycles.h) charges for a
 * forward pass, region by region, computed from the layout in the order
 * tsr_forward runs them; tests/test_plan.c holds it equal to the
 * emulator's counters.
 */
#include <string.h>

#include "plan.h"
#include "profiles.h"
#include "weight_image.h"

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

/* What the profile's SLR crossings add (NULL: one SLR, nothing). */
static const tsr_cy_slr *slr_or_none(const tsr_cy_slr *slr)
{
    static const tsr_cy_slr none = { 0u, 0u, 0u, 0u, 0u };
    return slr ? slr : &none;
}

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
static void step_attention(const layout *L, uint32_t S_pe, const tsr_cy_slr *slr, uint32_t pos,
                           uint64_t *rg)
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
    rg[TSR_RG_ATT_IO] += tsr_cy_att_collect(tsr_cdiv(kc->dim, kc->group) * kc->group) + slr->collect;
}

/* A pass's charges that do not depend on its positions, into rg: every
 * one but attention's (plan_attention).  A projection over many positions
 * computes them once (integer sums: the order of the additions changes
 * nothing). */
static void plan_fixed(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                       const tsr_cy_slr *slr, uint32_t nx, int classify, uint64_t *rg)
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
    /* the SLR crossings' registers: extra iterations of the broadcast (Q8),
     * every gather, and the QKV gather's latch (mesh.c) */
    uint32_t bc = q8 ? slr->bcast : 0u, ga = slr->gather, la = slr->latch;

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
        rg[TSR_RG_INPUT] += (uint64_t)nx * (tsr_cy_input(dim, G, q8) + bc);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_QKV), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * (tsr_cy_gather_qkv(dim + 2u * tsr_lay_kv_dim(kc), kc->qkv_bias) +
                                             ga + la);   /* bias, RoPE; the latch */
        /* (here each item's attention at its position: plan_attention) */
        rg[TSR_RG_INPUT] += (uint64_t)nx * (tsr_cy_input_ready(dim, G, q8) + bc);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_O), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * ((fused ? tsr_cy_gather_vec(dim) : tsr_cy_gather(dim)) + ga);
        rg[TSR_RG_NORM] += (uint64_t)nx * tsr_cy_norm_s(dim, sum_lanes, fused);
        rg[TSR_RG_INPUT] += (uint64_t)nx * (tsr_cy_input(dim, G, q8) + bc);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_13), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * (tsr_cy_gather_input(hid_pad) + ga);
        rg[TSR_RG_INPUT] += (uint64_t)nx * (tsr_cy_input_ready(hid, G, q8) + bc);
        step_gemv(&L, TSR_MAT_LAYER(l, TSR_W_2), 0, nx, rg);
        rg[TSR_RG_GATHER] += (uint64_t)nx * ((fused ? tsr_cy_gather_vec(dim) : tsr_cy_gather(dim)) + ga);
    }
    if (kc->stage & TSR_STAGE_LINK_OUT) {
        /* a stage before the last: the pass's vectors onto link-out */
        rg[TSR_RG_LINK] += tsr_cy_link_out(nx, dim);
    } else if (classify) {
        /* each item's final norm, the classifier for all, each item's
         * greedy token: the roots' bests, a tree over the profile's PEs,
         * the id to the host */
        rg[TSR_RG_NORM] += (uint64_t)nx * tsr_cy_norm_s(dim, sum_lanes, fused);
        rg[TSR_RG_INPUT] += (uint64_t)nx * (tsr_cy_input(dim, G, q8) + bc);
        step_gemv(&L, tsr_lay_mat_wcls(kc), 1, nx, rg);
        rg[TSR_RG_ARGMAX] += (uint64_t)nx * (tsr_cy_log2(profile_pes) * TSR_D_CMP + slr->best);
        rg[TSR_RG_SAMPLE] += (uint64_t)nx * TSR_D_BUS;
        /* a DECODE step: the cancel word and each sequence's, read from
         * host memory one after another (fwd_items_decode) */
        if ((classify & TSR_PLAN_DECODE) == TSR_PLAN_DECODE)
            rg[TSR_RG_SAMPLE] += tsr_cy_host_reads(1u + nx);
    }
}

/* Attention's charges of a pass, into rg: each of the nx items at pos[b],
 * every layer alike (tsr_attention). */
static void plan_attention(const tsr_kconfig *kc, uint32_t sum_lanes, const tsr_cy_slr *slr,
                           const uint32_t *pos, uint32_t nx, uint64_t *rg)
{
    /* the profile's TSR_ATT_PARTS (tsr_profile.h) */
    layout L = { kc, tsr_lay_pes(kc), sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u, { 0 }, { 0 } };
    uint32_t S_pe = sum_lanes < TSR_FADD_LAT ? sum_lanes : TSR_FADD_LAT;
    uint64_t att[TSR_RG_COUNT] = { 0 };
    for (uint32_t b = 0; b < nx; b++) step_attention(&L, S_pe, slr, pos[b], att);
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
                       const tsr_cy_slr *slr, uint32_t nx, int classify, tsr_plan_cycles *fixed)
{
    memset(fixed, 0, sizeof *fixed);
    plan_fixed(kc, sum_lanes, profile_pes, slr_or_none(slr), nx, classify, fixed->rg);
}

/* c = fixed (pass_fixed of the same kc, sum_lanes and nx) with the nx
 * items' attention at pos: tsr_plan_pass's figures. */
static void pass_at(const tsr_plan_cycles *fixed, const tsr_kconfig *kc, uint32_t sum_lanes,
                    const tsr_cy_slr *slr, const uint32_t *pos, uint32_t nx, tsr_plan_cycles *c)
{
    *c = *fixed;
    plan_attention(kc, sum_lanes, slr_or_none(slr), pos, nx, c->rg);
    plan_totals(c);
}

void tsr_plan_pass(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                   const tsr_cy_slr *slr, const uint32_t *pos, uint32_t nx, int classify,
                   tsr_plan_cycles *c)
{
    tsr_plan_cycles fixed;
    pass_fixed(kc, sum_lanes, profile_pes, slr, nx, classify, &fixed);
    pass_at(&fixed, kc, sum_lanes, slr, pos, nx, c);
}

void tsr_plan_step(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                   const tsr_cy_slr *slr, uint32_t pos, tsr_plan_cycles *c)
{
    tsr_plan_pass(kc, sum_lanes, profile_pes, slr, &pos, 1, TSR_PLAN_DECODE, c);
}

uint64_t tsr_plan_prefill(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                          const tsr_cy_slr *slr, uint32_t n, uint32_t block, uint32_t *passes)
{
    uint32_t pos[TSR_PLAN_MAX_ITEMS], B = block < 1u ? 1u : block > TSR_PLAN_MAX_ITEMS ? TSR_PLAN_MAX_ITEMS : block;
    uint64_t cy = 0;
    uint32_t np = 0, fixed_nx = 0;   /* the passes' sizes: B, and the last's */
    tsr_plan_cycles fixed, c;
    for (uint32_t p0 = 0; p0 < n; p0 += B, np++) {
        uint32_t nx = n - p0 < B ? n - p0 : B;
        for (uint32_t b = 0; b < nx; b++) pos[b] = p0 + b;
        if (nx != fixed_nx) pass_fixed(kc, sum_lanes, profile_pes, slr, fixed_nx = nx, 0, &fixed);
        pass_at(&fixed, kc, sum_lanes, slr, pos, nx, &c);
        cy += c.total;
    }
    if (passes) *passes = np;
    return cy;
}

/* ------------------------------------------------------------------------ */
/* Projections of a plan: its decode step, prefill and batch               */

/* A pass of nx items over a split of K cards: each of the K - 1 hops the
 * kernel's link charges (tsr_cycles.h): the sender's link-out, the
 * receiver's link-in (TSR_LINK_HOP, then a word a cycle).  The stages run
 * one after another for one sequence, so a pass pays every hop. */
static uint64_t link_cycles(const tsr_kconfig *kc, int K, uint32_t nx)
{
    if (K < 2) return 0u;
    return (uint64_t)(K - 1) * (tsr_cy_link_out(nx, kc->dim) + tsr_cy_link_in(nx, kc->dim));
}

/* The projected speed of an evaluated out (plan.c's eval_to filled its fit): the
 * code's charges for a decode step at the reported position, and their
 * mean over a whole context. */
int tsr_plan_project(const tsr_plan_req *rq, const tsr_part *part, tsr_plan *out, tsr_err *e)
{
    const tsr_kconfig *kc = &out->kc;
    int pes = out->pes, K = out->cards;
    uint32_t seq = kc->seq_len;
    if (rq->pos >= 0 && (uint32_t)rq->pos >= seq)
        return tsr_seterr(e, TSR_ERR_ARG, "position %d outside the context 0..%u", rq->pos, seq - 1u);
    out->pos = rq->pos < 0 ? (int)seq - 1 : rq->pos;
    uint32_t ppes = out->with_profile ? out->prof.pes : (uint32_t)pes, at = (uint32_t)out->pos;
    tsr_plan_cycles fixed;   /* tsr_plan_step's, but for attention */
    /* one card runs DECODE (its cancel words read every step); a split
     * runs the host's FORWARD on each stage */
    int what = K > 1 ? TSR_PLAN_CLASSIFY : TSR_PLAN_DECODE;
    pass_fixed(kc, out->prof.sum_lanes, ppes, &out->slr, 1, what, &fixed);
    pass_at(&fixed, kc, out->prof.sum_lanes, &out->slr, &at, 1, &out->cyc);
    out->cyc.links = link_cycles(kc, K, 1);
    out->cyc.total += out->cyc.links;
    if (K > 1 && K <= TSR_PLAN_MAX_STAGES)
        tsr_plan_pipeline(kc, out->prof.sum_lanes, ppes, &out->slr, out->bounds, K, at, (uint32_t)K, &out->pipe);
    out->controller_share = out->cyc.total ? (double)out->cyc.controller / (double)out->cyc.total : 0;
    /* mean over a whole context (positions sampled 64 apart, and the last) */
    double sum = 0;
    uint32_t nsamp = 0;
    for (uint32_t p = 0; p < seq; p += (seq > 256 ? seq / 64u : 1u)) {
        tsr_plan_cycles c;
        pass_at(&fixed, kc, out->prof.sum_lanes, &out->slr, &p, 1, &c);
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
void tsr_plan_project_passes(tsr_plan *out)
{
    const tsr_kconfig *kc = &out->kc;
    uint32_t sl = out->prof.sum_lanes, ppes = out->with_profile ? out->prof.pes : (uint32_t)out->pes;
    uint32_t B = out->prof.block ? out->prof.block : 1u;
    if (B > TSR_PLAN_MAX_ITEMS) B = TSR_PLAN_MAX_ITEMS;
    uint32_t n = kc->seq_len < PLAN_PROMPT ? kc->seq_len : PLAN_PROMPT;
    uint64_t links = link_cycles(kc, out->cards, B);
    out->block = (int)B;
    out->prefill_tokens = (int)n;
    out->prefill_cycles = tsr_plan_prefill(kc, sl, ppes, &out->slr, n, B, &out->prefill_passes);
    out->prefill_cycles += (uint64_t)(n / B) * links + (n % B ? link_cycles(kc, out->cards, n % B) : 0u);
    out->prefill_cycles_1 = tsr_plan_prefill(kc, sl, ppes, &out->slr, n, 1, NULL) + n * out->cyc.links;
    uint32_t nb = out->prof.slots < B ? out->prof.slots : B, pos[TSR_PLAN_MAX_ITEMS];
    if (nb < 1u) nb = 1u;
    for (uint32_t b = 0; b < nb; b++) pos[b] = (uint32_t)out->pos;
    out->batch = (int)nb;
    tsr_plan_pass(kc, sl, ppes, &out->slr, pos, nb,
                  out->cards > 1 ? TSR_PLAN_CLASSIFY : TSR_PLAN_DECODE, &out->batch_cyc);
    out->batch_cyc.links = link_cycles(kc, out->cards, nb);
    out->batch_cyc.total += out->batch_cyc.links;
    if (out->clock_mhz > 0) {
        out->prefill_tok_s = n * (out->clock_mhz * 1e6) / (double)out->prefill_cycles;
        out->batch_tok_s = nb * (out->clock_mhz * 1e6) / (double)out->batch_cyc.total;
    }
}
