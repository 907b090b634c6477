/*
 * plan.c - will a model fit an FPGA part, and with what changes
 * (`tessera plan`): the bytes of each card, the layer split, the
 * evaluation of one PE and card count, the search for the fastest PE count
 * that fits and for the smallest changes that would.
 *
 *   model config + options --tsr_wimage_config--> kconfig (mesh, seq, G, Q)
 *     bytes per PE:   the layout's tile sums (tsr_lay_pe_weights), KV words
 *     blocks, DSPs:   plan_fit.c ("Packing", "DSPs"), LUTs and FFs too
 *     fit:            against hw/parts.def minus the shell; if not, the
 *                     smallest change that fits (context, int8 KV, cards)
 *     cycles:         plan_cycles.c (tsr_plan_step, tsr_plan_project)
 *     text, JSON:     plan_report.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "plan.h"
#include "profiles.h"
#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* Assumptions that are not the kernel's (its are in kernels/tsr_arch.h)      */

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
                                  const tsr_cy_slr *slr, uint32_t n, int first, int last, uint32_t pos)
{
    tsr_kconfig s = *kc;
    s.n_layers = n;
    s.stage = tsr_lay_stage(first, last);
    tsr_plan_cycles c;
    tsr_plan_pass(&s, sum_lanes, profile_pes, slr, &pos, 1, 1, &c);
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

void tsr_plan_card_split(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                         const tsr_cy_slr *slr, int K, uint32_t *bounds)
{
    uint32_t L = kc->n_layers, pos = kc->seq_len / 2u;
    bounds[0] = 0;
    bounds[K > 0 ? K : 0] = L;
    if (K <= 1 || L < 2u) return;
    split_cost sc;
    sc.b = split_bytes_of(kc);
    for (int kind = 0; kind < 4; kind++)
        sc.base[kind] = (double)stage_pass_cycles(kc, sum_lanes, profile_pes, slr, 1, kind == 0 || kind == 3,
                                                  kind >= 2, pos);
    sc.layer = (double)stage_pass_cycles(kc, sum_lanes, profile_pes, slr, 2, 0, 0, pos) - sc.base[1];
    double best = split_dp(&sc, L, K, 0, 0, NULL);
    if (best < 0 || split_dp(&sc, L, K, 1, best, bounds) < 0) {
        /* out of memory: layers in equal shares */
        for (int k = 0; k <= K; k++) bounds[k] = (uint32_t)((uint64_t)L * (uint32_t)k / (uint32_t)K);
    }
}

void tsr_plan_pipeline(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                       const tsr_cy_slr *slr, const uint32_t *bounds, int K, uint32_t pos, uint32_t seqs,
                       tsr_plan_pipe *out)
{
    memset(out, 0, sizeof *out);
    out->cards = K;
    out->seqs = seqs ? seqs : 1u;
    for (int k = 0; k < K && k < TSR_PLAN_MAX_STAGES; k++) {
        tsr_kconfig s;
        tsr_plan_cycles c;
        tsr_plan_stage_kconfig(kc, bounds, K, k, &s);
        tsr_plan_pass(&s, sum_lanes, profile_pes, slr, &pos, 1, 1, &c);
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

/* The tiles PE p holds of a card's matrices (the embedding on the first,
 * and on the last when it is the tied classifier; the classifier on the
 * last; layers [l0, l1)): int8 bytes, fp32 words, partial-sum rows. */
static void pe_tiles(const tsr_kconfig *kc, uint32_t p, int first, int last, uint32_t l0,
                     uint32_t l1, uint64_t *w8, uint64_t *f32w, uint32_t *rows)
{
    uint32_t rot = 0;
    *w8 = *f32w = 0;
    *rows = 0;
    for (uint32_t m = 0; m < tsr_lay_n_mats(kc); m++) {
        int in;
        if (m == TSR_MAT_EMB) in = first || (last && kc->shared_classifier);
        else if (m == tsr_lay_mat_wcls(kc)) in = last;
        else in = (m - 1u) / TSR_W_COUNT >= l0 && (m - 1u) / TSR_W_COUNT < l1;
        tsr_tile t = tsr_lay_tile(kc, m, rot, p);
        rot = tsr_lay_rot_next(kc, m, rot);
        if (!in) continue;
        *w8 += tsr_lay_tile_w8(kc, t);
        *f32w += tsr_lay_tile_f32(kc, t);
        if (tsr_lay_tile_psum(t) > *rows) *rows = tsr_lay_tile_psum(t);
    }
}

/* The largest per-PE arrays of a card, for its fabric estimate. */
typedef struct pe_max { uint32_t rows; uint64_t att, ao; } pe_max;

/* Card k of K's PEs: bytes into r->bytes, blocks into r->res, the largest
 * arrays into mx. */
static void eval_card_pes(const tsr_kconfig *kc, int K, int k, uint32_t l0, uint32_t l1,
                          int kv_in_uram, const tsr_kprofile *pf, card_eval *r, pe_max *mx)
{
    uint32_t P = tsr_lay_pes(kc);
    int q8 = kc->dtype == TSR_KDT_Q8;
    uint64_t sl = tsr_lay_seq_words(kc), hs = tsr_lay_head_size(kc);
    uint32_t nmax = kc->dim > kc->hidden_dim ? kc->dim : kc->hidden_dim;
    uint32_t B = pf->block ? pf->block : 1u;   /* items a pass (TSR_MAX_BLOCK) */
    uint64_t qkv = (uint64_t)(kc->dim + 2u * tsr_lay_kv_dim(kc) + TSR_VEC - 1u) / TSR_VEC * TSR_VEC;
    for (uint32_t p = 0; p < P; p++) {
        uint64_t w8, f32w;
        uint32_t rows;
        pe_tiles(kc, p, k == 0, k == K - 1, l0, l1, &w8, &f32w, &rows);
        uint64_t kvw = kv_words_of(kc, p, l1 - l0), kvb = kv_bytes(kc, kvw);
        uint64_t kvs = kc->kv_dtype == TSR_KV_INT8 ? 4u * (kvw / hs) : 0u;
        uint32_t h0, q, nh = tsr_lay_kv_heads(kc, p, &h0, &q);
        uint64_t w = q8 ? w8 : 4u * f32w, s = q8 ? 4u * f32w : 0u;
        r->bytes.weights += w;
        r->bytes.scales += s;
        r->bytes.kv += kvb;
        r->bytes.scratch += 4u * (uint64_t)rows + (nmax + kc->group) + 4u * (nmax / kc->group + 1u);
        if (w + s + kvb > r->bytes.pe_max) r->bytes.pe_max = w + s + kvb;
        tsr_fit_pe_arrays a = { .w8_bytes = w8, .f32_words = f32w, .kvs_words = kvs / 4u,
                        .rows = (uint64_t)rows * B,
                        .att_words = (uint64_t)nh * tsr_lay_kv_mul(kc) * sl,
                        .acc_words = sl > hs ? sl : hs,
                        .acc_parts = pf->sum_lanes >= TSR_FADD_LAT ? TSR_FADD_LAT : 1u,
                        .xs_words = ((uint64_t)nmax + kc->group + TSR_LANES) / kc->group * B,
                        .ao_words = nh ? (uint64_t)nh * tsr_lay_kv_mul(kc) * hs : 0u,
                        .qkv_words = nh ? qkv : 0u,
                        .in_bytes = ((uint64_t)nmax + kc->group) * B, .f32_uram = (int)pf->f32_uram,
                        .kv_uram = kv_in_uram };
        uint32_t eb = tsr_lay_kv_elem_bytes(kc);   /* 4, 2 or 1: kv_elems' index */
        a.kv_elems[eb == 4u ? 0 : eb == 2u ? 1 : 2] = kvw;
        if (rows > mx->rows) mx->rows = rows;
        if (a.att_words > mx->att) mx->att = a.att_words;
        if (a.ao_words > mx->ao) mx->ao = a.ao_words;
        long u, b;
        tsr_fit_pe_blocks(&a, &u, &b);
        if (u > r->res.uram_pe) r->res.uram_pe = u;
        if (b > r->res.bram_pe) r->res.bram_pe = b;
        r->res.uram += u;
        r->res.bram += b;
    }
}

/* A card's DSPs and fabric: a profile's datapath has F32 and Q4_0 tiles
 * and KV paths whatever the model's weights; without one, what the model
 * uses.  The fabric's small arrays at the model's sizes (mx). */
static void eval_card_datapath(const tsr_kconfig *kc, const tsr_kprofile *pf, int with_profile,
                               const pe_max *mx, tsr_plan_res *res)
{
    uint32_t P = tsr_lay_pes(kc), nm = tsr_lay_n_mats(kc);
    int q8 = kc->dtype == TSR_KDT_Q8;
    uint64_t sl = tsr_lay_seq_words(kc), hs = tsr_lay_head_size(kc);
    uint32_t nmax = kc->dim > kc->hidden_dim ? kc->dim : kc->hidden_dim;
    uint32_t kv_paths = kc->kv_dtype == TSR_KV_F32 ? 0u : 1u << kc->kv_dtype;
    int with_f32 = with_profile ? (int)pf->with_f32 : !q8;
    int with_q4 = with_profile ? (int)pf->with_q4 : kc->q4_kinds != 0;
    if (with_profile) kv_paths = tsr_fit_kv_paths(pf);
    /* the roots the code builds: the profile's, or (a profile written for
     * this model) at W13's and the classifier's own columns */
    uint32_t wcls = tsr_lay_mat_wcls(kc), dc, nc, pc;
    tsr_lay_mat_shape(kc, wcls, &dc, &nc, &pc);
    uint32_t w13_cols = with_profile ? pf->w13_cols : tsr_lay_mat_cols(kc, TSR_MAT_LAYER(0u, TSR_W_13));
    uint32_t cls_cols = with_profile ? pf->cls_cols : dc ? tsr_lay_mat_cols(kc, wcls) : 1u;
    res->dsp = tsr_fit_dsp_count(P, kc->att_pes, kc->mesh_cols, kc->kv_split, w13_cols, with_f32,
                                 with_q4, kv_paths, pf->sum_lanes, &res->dsp_pe);
    tsr_fit_dp d = {
        .pes = P, .att_pes = kc->att_pes, .cols = kc->mesh_cols, .kv_split = kc->kv_split,
        .sum_lanes = pf->sum_lanes, .block = pf->block ? pf->block : 1u,
        .with_f32 = (uint32_t)with_f32, .with_q4 = (uint32_t)with_q4,
        .kv_paths = kv_paths, .group_min = kc->group,
        .group_max = kc->group, .mats = nm, .pe_rows = mx->rows,
        .in_words = (nmax + kc->group + TSR_LANES) / TSR_LANES,
        .xs_words = (nmax + kc->group + TSR_LANES) / kc->group, .att_words = (uint32_t)mx->att,
        .acc_words = (uint32_t)(sl > hs ? sl : hs),
        .ao_words = (uint32_t)mx->ao, .qkv_words = kc->dim + 2u * tsr_lay_kv_dim(kc),
        .w13_cols = w13_cols, .cls_cols = cls_cols,
    };
    tsr_plan_fabric_to(&d, res);
}

/* Card k of K: its PEs' arrays and the controller, what the model needs. */
static void eval_card(const tsr_kconfig *kc, int K, int k, uint32_t l0, uint32_t l1, int kv_in_uram,
                      const tsr_kprofile *pf, int with_profile, card_eval *r)
{
    int last = k == K - 1;
    memset(r, 0, sizeof *r);
    pe_max mx = { 0, 0, 0 };
    eval_card_pes(kc, K, k, l0, l1, kv_in_uram, pf, r, &mx);
    uint32_t nmax = kc->dim > kc->hidden_dim ? kc->dim : kc->hidden_dim;
    uint32_t B = pf->block ? pf->block : 1u;   /* items a pass (TSR_MAX_BLOCK) */
    uint64_t dim = kc->dim, kvd = tsr_lay_kv_dim(kc), V = kc->vocab_size;
    /* the controller region (tsr_layout.h): the stage's norm rows, RoPE's
     * frequencies, its layers' QKV biases */
    uint64_t norms = 4u * ((2u * (uint64_t)(l1 - l0) + (last ? 1u : 0u)) * dim +
                           tsr_lay_head_size(kc) / 2u +
                           (kc->qkv_bias ? (uint64_t)(l1 - l0) * (dim + 2u * kvd) : 0u));
    r->bytes.norms = norms;
    r->bytes.activations = 4u * (dim + (nmax + kc->group) + dim + 2u * kvd + (last ? V : 0u));
    r->bytes.scratch += last ? 12u * V : 0u;   /* the sampler's copy and candidates */
    r->res.bram += tsr_fit_ctrl_blocks(dim, kvd, last ? V : 0u, l1 - l0, nmax + kc->group, pf->sum_lanes, B,
                               kc->n_slots < B ? kc->n_slots : B, kc->qkv_bias);
    r->res.kv_in_uram = kv_in_uram;
    r->bytes.stationary = r->bytes.weights + r->bytes.scales + r->bytes.kv + r->bytes.norms;
    r->bytes.total = r->bytes.stationary + r->bytes.activations + r->bytes.scratch;
    eval_card_datapath(kc, pf, with_profile, &mx, &r->res);
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
 * fit alone, without tsr_plan_project. */
static int eval_to(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part, int pes,
                   int fit_only, tsr_plan *out, tsr_err *e);

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

/* Card c into worst: each figure the largest of the cards (the fabric:
 * the card with the most LUTs; the DSPs: every card's datapath is alike). */
static void worst_of(card_eval *worst, const card_eval *c)
{
    if (c->bytes.total > worst->bytes.total) worst->bytes = c->bytes;
    if (c->res.uram_pe > worst->res.uram_pe) worst->res.uram_pe = c->res.uram_pe;
    if (c->res.bram_pe > worst->res.bram_pe) worst->res.bram_pe = c->res.bram_pe;
    if (c->res.uram > worst->res.uram) worst->res.uram = c->res.uram;
    if (c->res.bram > worst->res.bram) worst->res.bram = c->res.bram;
    worst->res.dsp_pe = c->res.dsp_pe;
    worst->res.dsp = c->res.dsp;
    if (c->res.lut >= worst->res.lut) {   /* the card with the most fabric */
        worst->res.lut = c->res.lut;
        worst->res.ff = c->res.ff;
        worst->res.lut_pe = c->res.lut_pe;
        worst->res.ff_pe = c->res.ff_pe;
        worst->res.fab = c->res.fab;
    }
}

/* The split: the stages' cycles balanced (tsr_plan_card_split), into
 * bounds (K + 1,) and out's layers_per_card and bounds. */
static void eval_split(const tsr_kconfig *kc, int K, int pes, tsr_plan *out, uint32_t *bounds)
{
    tsr_plan_card_split(kc, out->prof.sum_lanes, out->with_profile ? out->prof.pes : (uint32_t)pes,
                        &out->slr, K, bounds);
    for (int k = 0; k < K; k++) {
        if ((int)(bounds[k + 1] - bounds[k]) > out->layers_per_card)
            out->layers_per_card = (int)(bounds[k + 1] - bounds[k]);
        if (k < TSR_PLAN_MAX_STAGES) out->bounds[k] = bounds[k];
    }
    if (K <= TSR_PLAN_MAX_STAGES) out->bounds[K] = bounds[K];
}

/* What the part leaves of each resource, the ceiling, and whether the
 * table knows every figure. */
static void eval_have(const tsr_plan_req *rq, const tsr_part *part, tsr_plan *out)
{
    out->uram_have = part_have(part->uram, part->shell_uram);
    out->bram_have = part_have(part->bram36, part->shell_bram36);
    out->dsp_have = part_have(part->dsp, part->shell_dsp);
    out->lut_have = part_have(part->lut, part->shell_lut);
    out->ff_have = part_have(part->ff, part->shell_ff);
    out->max_util = rq->max_util > 0 ? rq->max_util : TSR_FIT_CEILING_PCT;
    out->over = -1;
    out->decidable = out->uram_have >= 0 && out->bram_have >= 0 && out->dsp_have >= 0 &&
                     out->lut_have >= 0 && out->ff_have >= 0;

}

/* Judge the fit of out->res (or, with a synthesis profile, the bitstream's
 * arrays: the profile's; the emulator's, generic with no stated estimate,
 * has no bitstream, so the model's own needs are judged). */
static void eval_judge(tsr_plan *out)
{
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
}

/* out->why for a plan that cannot be decided or does not fit. */
static void eval_why(const tsr_part *part, tsr_plan *out)
{
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

}

static int eval_to(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part, int pes,
                   int fit_only, tsr_plan *out, tsr_err *e)
{
    memset(out, 0, sizeof *out);
    int rc = plan_profile(rq, &out->prof, out->profile, sizeof out->profile, &out->with_profile, e);
    if (rc) return rc;
    /* a shipped profile's SLRs: its crossings' registers (tsr_cy_slr_of) */
    out->slrs = out->with_profile ? tsr_profile_slrs(out->profile) : 1;
    out->slr = tsr_cy_slr_of(out->prof.pes, out->prof.mesh_cols, (uint32_t)out->slrs,
                             out->prof.att_pes);
    if ((rc = make_kconfig(cfg, rq, &out->prof, pes, &out->kc, e))) return rc;
    const tsr_kconfig *kc = &out->kc;
    int K = rq->cards > 0 ? rq->cards : 1;
    out->part = part;
    out->kv = rq->kv;
    out->cards = K;
    out->pes = pes;
    uint32_t *bounds = malloc(sizeof *bounds * ((size_t)K + 1u));
    if (!bounds) return tsr_seterr(e, TSR_ERR_NOMEM, "plan: out of memory");
    eval_split(kc, K, pes, out, bounds);
    if (out->with_profile) {
        tsr_plan_profile_resources(&out->prof, &out->prof_res);
        tsr_err pe;
        tsr_clearerr(&pe);
        out->profile_ok = tsr_wimage_check_profile(kc, &out->prof, out->profile, &pe) == TSR_OK;
        if (!out->profile_ok) snprintf(out->profile_why, sizeof out->profile_why, "%s", pe.msg);
    }
    eval_have(rq, part, out);

    /* KV in BRAM first; in URAM when BRAM is what overflows */
    for (int kv_uram = (int)out->prof.kv_uram; kv_uram < 2; kv_uram++) {
        card_eval worst, c;
        memset(&worst, 0, sizeof worst);
        for (int k = 0; k < K; k++) {
            eval_card(kc, K, k, bounds[k], bounds[k + 1], kv_uram, &out->prof, out->with_profile, &c);
            worst_of(&worst, &c);
        }
        out->bytes = worst.bytes;
        out->res = worst.res;
        out->res.kv_in_uram = kv_uram;
        eval_judge(out);
        if (out->fits || !out->decidable ||
            out->res.bram <= tsr_fit_ceiling(out->bram_have, out->max_util))
            break;
    }
    free(bounds);
    eval_why(part, out);

    /* a decode that streamed the weights would read each matrix once per
     * token (the classifier once even when it is a copy on the last card) */
    uint32_t rot = 0;
    for (uint32_t m = 0; m < tsr_lay_n_mats(kc); m++) {
        out->weight_bytes_all += mat_bytes(kc, m, rot);
        rot = tsr_lay_rot_next(kc, m, rot);
    }

    return fit_only ? TSR_OK : tsr_plan_project(rq, part, out, e);
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
        if (t.fits && (rc = tsr_plan_project(rq, part, &t, e))) return rc;
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

/* The request's figures checked against the model (the part and the
 * profile are looked up by the caller). */
static int check_req(const tsr_config *cfg, const tsr_plan_req *req, tsr_err *e)
{
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
    return TSR_OK;
}

/* The longest context that fits with req's other choices (each judged at
 * its own last position); 0 when fewer cards than kmin, the least whose
 * on-chip memory holds the tiles, are asked for. */
static int fix_context(const tsr_config *cfg, const tsr_plan_req *req, const tsr_part *part,
                       uint64_t kmin, int seq, int *fix, tsr_err *e)
{
    int rc;
    int K0 = req->cards > 1 ? req->cards : 1;
    tsr_plan_req r = *req;
    r.pos = -1;
    tsr_plan t;
    int lo = 0, hi = kmin > (uint64_t)K0 ? 0 : seq - 1;
    while (lo < hi) {   /* longest context that fits (fit shrinks with it) */
        int mid = (lo + hi + 1) / 2;
        r.seq_len = mid;
        if ((rc = eval_auto(cfg, &r, part, &t, e))) return rc;
        if (t.fits) lo = mid;
        else hi = mid - 1;
    }
    *fix = lo;
    return TSR_OK;
}

/* Does an int8 KV cache fit (out->fix_kv_int8: 1, 0, -1 the profile has
 * none)?  Asked only when req's is not int8. */
static int fix_kv(const tsr_config *cfg, const tsr_plan_req *req, const tsr_part *part,
                  tsr_plan *out, tsr_err *e)
{
    tsr_plan_req r = *req;
    r.pos = -1;
    tsr_plan t;
    r.kv = TSR_KV_INT8;
    int rc = eval_auto(cfg, &r, part, &t, e);
    if (rc == TSR_ERR_UNSUPPORTED && req->profile) {
        out->fix_kv_int8 = -1;   /* the profile has no int8 KV cache */
        tsr_seterr(e, TSR_OK, "%s", "");
    } else if (rc) {
        return rc;
    } else {
        out->fix_kv_int8 = t.fits;
    }
    return TSR_OK;
}

/* The fewest cards, more than asked and at least kmin, that fit. */
static int fix_cards(const tsr_config *cfg, const tsr_plan_req *req, const tsr_part *part,
                     uint64_t kmin, tsr_plan *out, tsr_err *e)
{
    int rc;
    int K0 = req->cards > 1 ? req->cards : 1;
    tsr_plan_req r = *req;
    r.pos = -1;
    tsr_plan t;
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
    return TSR_OK;
}

/* No split fits: why (a layer split keeps the embedding whole on stage 0,
 * and the classifier on the last, in the weights' format). */
static void no_split(tsr_plan *out, uint64_t chip, uint64_t kmin)
{
    const tsr_kconfig *kc = &out->kc;
    uint64_t n = (uint64_t)kc->vocab_size * kc->dim;
    out->emb_bytes = kc->dtype == TSR_KDT_F32 ? 4u * n
                   : kc->q4_kinds & (1u << TSR_KIND_EMB) ? n / 32u * 18u
                   : n + 4u * tsr_cdiv(kc->dim, kc->group) * kc->vocab_size;
    out->chip_bytes = chip;
    out->cards_floor = kmin;
}

/* The smallest changes that fit (each search step is an eval_auto over
 * every PE count).  A card holds its share of the tiles on chip, so fewer
 * cards than kmin cannot fit, and when the cards asked for are fewer, no
 * shorter context does. */
static int plan_fixes(const tsr_config *cfg, const tsr_plan_req *req, const tsr_part *part,
                      tsr_plan *out, tsr_err *e)
{
    uint64_t chip = (uint64_t)out->uram_have * TSR_FIT_URAM_BYTES + (uint64_t)out->bram_have * TSR_FIT_BRAM_BYTES;
    uint64_t kmin = chip ? cdiv64(tiles_floor(&out->kc), chip) : UINT64_MAX;
    int rc = fix_context(cfg, req, part, kmin, (int)out->kc.seq_len, &out->fix_seq, e);
    if (rc) return rc;
    if (req->kv != TSR_KV_INT8 && (rc = fix_kv(cfg, req, part, out, e))) return rc;
    if ((rc = fix_cards(cfg, req, part, kmin, out, e))) return rc;
    if (!out->fix_cards) no_split(out, chip, kmin);
    return TSR_OK;
}

int tsr_plan_config(const tsr_config *cfg, const tsr_plan_req *req, tsr_plan *out, tsr_err *e)
{
    if (!cfg || !req || !out) return tsr_seterr(e, TSR_ERR_ARG, "plan: NULL argument");
    if (!req->part || !req->part[0])
        return tsr_seterr(e, TSR_ERR_ARG, "plan: no part given (valid: %s)", tsr_part_names());
    const tsr_part *part = tsr_part_find(req->part);
    if (!part)
        return tsr_seterr(e, TSR_ERR_ARG, "unknown part '%s' (valid: %s)", req->part,
                          tsr_part_names());
    int rc = check_req(cfg, req, e);
    if (rc) return rc;
    if ((rc = eval_auto(cfg, req, part, out, e))) return rc;
    tsr_plan_project_passes(out);
    /* the longest context each KV precision holds on this mesh */
    for (int kv = 0; kv < TSR_KV_COUNT && out->decidable; kv++)
        out->max_seq[kv] = max_context(cfg, req, part, out->pes, kv);
    if (out->fits || !out->decidable) return rc;
    return plan_fixes(cfg, req, part, out, e);
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

int tsr_plan_report(const char *path, const tsr_plan_opts *opts, int json, char *buf,
                    size_t len, int *fits, char *err, size_t errlen)
{
    tsr_err e;
    tsr_clearerr(&e);
    tsr_config cfg;
    tsr_checkpoint *ck = NULL;
    int rc = TSR_OK;
    const char *name = path;
    tsr_plan_opts oc, *o = opts ? &oc : NULL;   /* the caller's size bytes of it */
    if (opts && (rc = tsr_abi_read(&tsr_abi_plan_opts, opts, &oc, &e)))
        goto out;
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
