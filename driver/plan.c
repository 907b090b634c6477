/*
 * plan.c - fit, blocks, DSPs and projected speed of a model on an FPGA part
 * (`tessera plan`, and the cycle estimate of `tessera run --stats`).
 *
 *   model config + options --tsr_wimage_config--> kconfig (mesh, seq, G)
 *     bytes per PE:   tsr_lay_pe_weights-style tile sums, tsr_lay_kv_words
 *     blocks:         packing rule (below) -> BRAM36 / URAM per PE, per card
 *     fit:            against hw/parts.def minus the shell; if not, the
 *                     smallest change that fits (context, int8 KV, cards)
 *     cycles:         tsr_plan_work (the kernel's tsr_kwork, analytically)
 *                     -> tsr_plan_cycles_of (the costs below)
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* Cycle model: the hardware assumptions, in one place                        */

/* A PE's datapath, as the kernel's loops would be pipelined at II=1:
 * Q8 tiles: 32 int8 MACs per cycle (one group of 32 per cycle; a DSP48E2
 * packs two int8 MACs, AMD WP486), then the group's int32 sum times both
 * scales.  F32 tiles and attention: 8 fp32 MACs per cycle. */
#define HW_Q8_LANES        32u
#define HW_F32_LANES       8u
/* Cycles to fill a PE's GEMV pipeline, once per GEMV: URAM read (2),
 * int8 adder tree over 32 products (5), int32->fp32 and two fp32 multiplies
 * and an add (~12 at 300 MHz). */
#define HW_GEMV_FILL       20u
/* fp32 add latency: one level of the mesh-row adder tree waits for it. */
#define HW_FADD_LAT        8u
/* Controller passes over a GEMV input: Q8 quantizes in two passes (amax,
 * values), F32 pads in one; outputs arrive one fp32 word per cycle. */
#define HW_Q8_IN_PASSES    2u
/* RMSNorm: two passes (sum of squares, scale) plus rsqrt + divide latency. */
#define HW_NORM_FIXED      40u
/* Softmax over the scores: three passes (max, exp + sum, divide) plus the
 * exp / divide latency once per softmax. */
#define HW_SOFTMAX_PASSES  3u
#define HW_SOFTMAX_FIXED   40u
/* Greedy sampling: copy the logits, one argmax pass. */
#define HW_SAMPLE_PASSES   2u
/* A split model: one hop of the activation vector between cards per token
 * and card boundary, charged as this fixed latency (about 3.3 us at 300 MHz).
 * An assumed cost: no card-to-card link has been built or measured. */
#define HW_LINK_HOP        1000u

/* Packing.  UltraRAM: 4K x 72 bits, used as 64 data bits (8 int8 or two
 * fp32) per word = 32 KiB; two ports.  BRAM36: 1K x 36 (32 data bits) or
 * 512 x 72 = 4 KiB of data; two ports (UG573 for UltraScale+, AM007 for
 * Versal).  32 bytes per cycle for the MAC lanes = 4 URAM words: the weight
 * tiles are partitioned over a multiple of 2 URAMs; the KV cache (8 fp32 per
 * cycle) over a multiple of 4 BRAM36 (or 2 URAMs). */
#define HW_URAM_DATA       32768u
#define HW_BRAM_DATA       4096u
#define HW_URAM_PART       2u
#define HW_KV_BRAM_PART    4u
/* DSPs per PE.  Q8: 32 lanes / 2 per DSP48E2 = 16, the group's scale path
 * (two fp32 multiplies x 3 DSP + one fp32 add x 2 DSP) = 8, the tree adder
 * (2), the fp32 lanes for attention (8 x (3 + 2) = 40).  F32: the fp32
 * lanes (40) serve GEMV and attention, plus the tree adder.  fp32
 * multiply = 3 DSP, add = 2 DSP: Vitis HLS full-DSP floating-point cores
 * (PG060).  The controller (norms, softmax-free vector ops, sampler) gets
 * a fixed allowance. */
#define HW_DSP_FP_MAC      5u
#define HW_DSP_Q8_PE       (HW_Q8_LANES / 2u + 8u + 2u + HW_F32_LANES * HW_DSP_FP_MAC)
#define HW_DSP_F32_PE      (HW_F32_LANES * HW_DSP_FP_MAC + 2u)
#define HW_DSP_CTRL        32u
/* PE counts `plan` tries when none is given, and the count it reports
 * when nothing fits. */
#define PLAN_MAX_PES       256
#define PLAN_DEFAULT_PES   16
/* The synthesis profiles shipped in kernels/profiles/ and their PE counts
 * (TSR_MAX_PES); keep in step when a profile is added. */
#define PLAN_PROFILES_NOTE "shipped profiles: stories260k (4 PEs), stories15m (16 PEs); " \
                           "another PE count needs a new profile in kernels/profiles/"

const char *tsr_plan_assumptions(void)
{
    return "II=1 pipelines; per PE 32 int8 MAC lanes (Q8) or 8 fp32 MAC lanes (F32, attention); "
           "GEMV pipeline fill 20 cycles; fp32 add 8 cycles per adder-tree level; controller "
           "moves 1 fp32 word/cycle (Q8 input quantized in 2 passes); RMSNorm 2 passes + 40; "
           "softmax 3 passes + 40; greedy sampling 2 passes over the logits; card-to-card hop "
           "1000 cycles; weight tiles partitioned over >= 2 URAMs (2 ports x 64 bits), KV over "
           ">= 4 BRAM36; fp32 multiply 3 DSP, add 2 DSP, int8 MAC 1/2 DSP";
}

static uint64_t cdiv64(uint64_t a, uint64_t b) { return (a + b - 1u) / b; }

void tsr_plan_cycles_of(const tsr_kconfig *kc, const tsr_kwork *w, int cards, tsr_plan_cycles *c)
{
    int q8 = kc->dtype == TSR_KDT_Q8;
    uint64_t hs = tsr_lay_head_size(kc);
    memset(c, 0, sizeof *c);
    c->gemv_macs = cdiv64(w->gemv_pe_macs, q8 ? HW_Q8_LANES : HW_F32_LANES) +
                   w->gemvs * HW_GEMV_FILL;
    c->gemv_trees = w->tree_rows + w->tree_levels * HW_FADD_LAT;
    c->gemv_io = w->gemv_in * (q8 ? HW_Q8_IN_PASSES : 1u) + w->gemv_out;
    c->embed = w->embed;
    /* KV store (one element of K and V per cycle), scores and values
     * (2 x len x hs MACs on the fp32 lanes), softmax passes */
    c->attention = w->attn_units * hs + cdiv64(2u * w->attn_len * hs, HW_F32_LANES) +
                   HW_SOFTMAX_PASSES * w->attn_len + w->attn_heads * HW_SOFTMAX_FIXED;
    c->norms = 2u * w->norm_elems + w->norms * HW_NORM_FIXED;
    c->vector = w->vec_elems;
    c->sample = HW_SAMPLE_PASSES * w->logits;
    c->links = cards > 1 ? (uint64_t)(cards - 1) * HW_LINK_HOP : 0u;
    c->total = c->gemv_macs + c->gemv_trees + c->gemv_io + c->embed + c->attention + c->norms +
               c->vector + c->sample + c->links;
}

/* ------------------------------------------------------------------------ */
/* The work of one decode step (what tsr_forward + the sampler count)         */

static void work_gemv(const tsr_kconfig *kc, uint32_t m, tsr_kwork *w)
{
    uint32_t d, n;
    tsr_lay_mat_shape(kc, m, &d, &n);
    tsr_kwork_gemv(kc, d, n, w);
}

void tsr_plan_work(const tsr_kconfig *kc, uint32_t pos, tsr_kwork *w)
{
    uint32_t L = kc->n_layers, dim = kc->dim, G = kc->group;
    memset(w, 0, sizeof *w);
    w->forwards = 1;
    w->pos_sum = pos;
    w->embed = (uint64_t)tsr_cdiv(dim, G) * G;
    for (uint32_t l = 0; l < L; l++) {
        work_gemv(kc, TSR_MAT_LAYER(l, TSR_W_Q), w);
        work_gemv(kc, TSR_MAT_LAYER(l, TSR_W_K), w);
        work_gemv(kc, TSR_MAT_LAYER(l, TSR_W_V), w);
        tsr_kwork_attention(kc, pos, w);
        work_gemv(kc, TSR_MAT_LAYER(l, TSR_W_O), w);
        work_gemv(kc, TSR_MAT_LAYER(l, TSR_W_1), w);
        work_gemv(kc, TSR_MAT_LAYER(l, TSR_W_3), w);
        work_gemv(kc, TSR_MAT_LAYER(l, TSR_W_2), w);
    }
    w->norms = 2u * L + 1u;
    w->norm_elems = (2u * (uint64_t)L + 1u) * dim;
    w->vec_elems = (uint64_t)L * (dim / 2u + 2u * dim + kc->hidden_dim);
    work_gemv(kc, tsr_lay_mat_wcls(kc), w);
    w->logits = kc->vocab_size;
}

/* ------------------------------------------------------------------------ */
/* Bytes and blocks of one card                                               */

static long bram_blocks(uint64_t bytes, uint32_t part)
{
    if (!bytes) return 0;
    uint64_t b = cdiv64(bytes, HW_BRAM_DATA);
    return (long)(cdiv64(b, part) * part);
}

static long uram_blocks(uint64_t bytes, uint32_t part)
{
    if (!bytes) return 0;
    uint64_t b = cdiv64(bytes, HW_URAM_DATA);
    return (long)(cdiv64(b, part) * part);
}

/* Bytes of kv_words fp32 KV words at precision kv (int8: one fp32 scale per
 * cached vector of head_size values). */
static uint64_t kv_bytes(const tsr_kconfig *kc, int kv, uint64_t words)
{
    if (kv == TSR_KV_F16) return 2u * words;
    if (kv == TSR_KV_INT8) return words + 4u * (words / tsr_lay_head_size(kc));
    return 4u * words;
}

typedef struct card_eval {
    tsr_plan_bytes bytes;
    long uram_pe, bram_pe, uram, bram;
} card_eval;

/* Bytes of matrix m over the whole mesh (int8 + fp32 tiles). */
static uint64_t mat_bytes(const tsr_kconfig *kc, uint32_t m)
{
    uint64_t b = 0;
    uint32_t d, n;
    tsr_lay_mat_shape(kc, m, &d, &n);
    for (uint32_t p = 0; p < tsr_lay_pes(kc); p++) {
        tsr_tile t = tsr_lay_tile(kc, d, n, p);
        b += tsr_lay_tile_i8(kc, t) + 4u * (uint64_t)tsr_lay_tile_f32(kc, t);
    }
    return b;
}

/* The layers [*l0, *l1) of card k of K.  The first card holds the
 * embedding, the last the classifier (a shared one as a copy of the
 * embedding), so layers are split to balance bytes, not counts: the
 * boundaries cut the running total (embedding, then per layer its weights
 * and KV cache, then the classifier) into K near-equal parts. */
static void card_layers(const tsr_kconfig *kc, int kv, int K, int k, uint32_t *l0, uint32_t *l1)
{
    uint32_t L = kc->n_layers;
    if (K <= 1) { *l0 = 0; *l1 = L; return; }
    double E = (double)mat_bytes(kc, TSR_MAT_EMB), layer = 0;
    for (uint32_t w = 0; w < TSR_W_COUNT; w++) layer += (double)mat_bytes(kc, TSR_MAT_LAYER(0, w));
    layer += (double)kv_bytes(kc, kv, 2u * (uint64_t)kc->n_kv_heads * tsr_lay_kv_block(kc));
    double cls = kc->shared_classifier ? E : (double)mat_bytes(kc, tsr_lay_mat_wcls(kc));
    double T = E + L * layer + cls;
    uint32_t b[2];
    for (int i = 0; i < 2; i++) {   /* boundaries k and k + 1 */
        int j = k + i;
        if (j <= 0) { b[i] = 0; continue; }
        if (j >= K) { b[i] = L; continue; }
        double x = ((double)j * T / K - E) / layer + 0.5;
        b[i] = x < 0 ? 0u : x > L ? L : (uint32_t)x;
    }
    *l0 = b[0];
    *l1 = b[1] < b[0] ? b[0] : b[1];
}

/* Card k of K (card_layers); the first card holds the embedding, the last
 * the final norm and the classifier (a shared one is a copy of the
 * embedding there). */
static void eval_card(const tsr_kconfig *kc, int kv, int K, int k, int kv_in_uram, card_eval *r)
{
    uint32_t P = tsr_lay_pes(kc), nm = tsr_lay_n_mats(kc), l0, l1;
    card_layers(kc, kv, K, k, &l0, &l1);
    int first = k == 0, last = k == K - 1, q8 = kc->dtype == TSR_KDT_Q8;
    tsr_kconfig sub = *kc;   /* this card's layers, for its KV placement */
    sub.n_layers = l1 - l0;
    memset(r, 0, sizeof *r);
    for (uint32_t p = 0; p < P; p++) {
        uint64_t i8 = 0, f32w = 0;
        uint32_t rows = 0;
        for (uint32_t m = 0; m < nm; m++) {
            int in;
            if (m == TSR_MAT_EMB) in = first || (last && kc->shared_classifier);
            else if (m == tsr_lay_mat_wcls(kc)) in = last;
            else in = (m - 1u) / 7u >= l0 && (m - 1u) / 7u < l1;
            if (!in) continue;
            uint32_t d, n;
            tsr_lay_mat_shape(kc, m, &d, &n);
            tsr_tile t = tsr_lay_tile(kc, d, n, p);
            i8 += tsr_lay_tile_i8(kc, t);
            f32w += tsr_lay_tile_f32(kc, t);
            if (t.rows > rows) rows = t.rows;
        }
        uint64_t kvb = kv_bytes(kc, kv, tsr_lay_kv_words(&sub, p));
        uint64_t w = q8 ? i8 : 4u * f32w, s = q8 ? 4u * f32w : 0u;
        uint64_t psum = 4u * (uint64_t)rows, att = 4u * (uint64_t)kc->seq_len;
        r->bytes.weights += w;
        r->bytes.scales += s;
        r->bytes.kv += kvb;
        r->bytes.scratch += psum + att;
        if (w + s + kvb > r->bytes.pe_max) r->bytes.pe_max = w + s + kvb;
        long u = uram_blocks(w, HW_URAM_PART), b = bram_blocks(s, 1u);
        if (kv_in_uram) u += uram_blocks(kvb, HW_URAM_PART);
        else b += bram_blocks(kvb, HW_KV_BRAM_PART);
        b += bram_blocks(psum, 1u) + bram_blocks(att, 1u);
        if (u > r->uram_pe) r->uram_pe = u;
        if (b > r->bram_pe) r->bram_pe = b;
        r->uram += u;
        r->bram += b;
    }
    /* controller: norm weights, vectors, buffers; one array per BRAM group */
    uint64_t dim = kc->dim, kvd = tsr_lay_kv_dim(kc), hid = kc->hidden_dim, V = kc->vocab_size;
    uint64_t nmax = dim > hid ? dim : hid, npad = cdiv64(nmax, kc->group) * kc->group;
    uint64_t norms = 4u * (2u * (uint64_t)(l1 - l0) + (last ? 1u : 0u)) * dim;
    uint64_t act[] = { 4 * dim, 4 * dim, 4 * dim, 4 * dim, 4 * kvd, 4 * kvd, 4 * hid, 4 * hid,
                       last ? 4 * V : 0 };
    uint64_t scr[] = { 4 * npad, npad, 4 * (npad / kc->group), last ? 4 * V : 0,
                       last ? 4 * V : 0, last ? 4 * V : 0 };
    r->bytes.norms = norms;
    r->bram += bram_blocks(norms, 1u);
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++) {
        r->bytes.activations += act[i];
        r->bram += bram_blocks(act[i], 1u);
    }
    for (size_t i = 0; i < sizeof scr / sizeof scr[0]; i++) {
        r->bytes.scratch += scr[i];
        r->bram += bram_blocks(scr[i], 1u);
    }
    r->bytes.stationary = r->bytes.weights + r->bytes.scales + r->bytes.kv + r->bytes.norms;
    r->bytes.total = r->bytes.stationary + r->bytes.activations + r->bytes.scratch;
}

/* ------------------------------------------------------------------------ */
/* One evaluation: a fixed PE count and card count                            */

static int part_have(int count, int shell) { return count < 0 ? -1 : shell < 0 ? count : count - shell; }

static int make_kconfig(const tsr_config *cfg, const tsr_plan_req *rq, int pes, tsr_kconfig *kc,
                        tsr_err *e)
{
    tsr_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.cfg = *cfg;
    snprintf(ck.path, sizeof ck.path, "plan");   /* prefixes tsr_wimage_config's messages */
    tsr_load_opts o;
    memset(&o, 0, sizeof o);
    o.weights_f32 = rq->weights_f32;
    o.group_size = rq->group;
    o.seq_len = rq->seq_len;
    o.n_slots = 1;
    return tsr_wimage_config(&ck, &o, pes, kc, e);
}

/* Fill out (except the fix_* fields) for pes PEs per card. */
static int eval(const tsr_config *cfg, const tsr_plan_req *rq, const tsr_part *part, int pes,
                tsr_plan *out, tsr_err *e)
{
    memset(out, 0, sizeof *out);
    int rc = make_kconfig(cfg, rq, pes, &out->kc, e);
    if (rc) return rc;
    const tsr_kconfig *kc = &out->kc;
    int K = rq->cards > 0 ? rq->cards : 1;
    out->part = part;
    out->kv = rq->kv;
    out->cards = K;
    out->pes = pes;
    for (int k = 0; k < K; k++) {
        uint32_t l0, l1;
        card_layers(kc, rq->kv, K, k, &l0, &l1);
        if ((int)(l1 - l0) > out->layers_per_card) out->layers_per_card = (int)(l1 - l0);
    }
    out->uram_have = part_have(part->uram, part->shell_uram);
    out->bram_have = part_have(part->bram36, part->shell_bram36);
    out->dsp_have = part_have(part->dsp, part->shell_dsp);
    out->dsp_pe = kc->dtype == TSR_KDT_Q8 ? HW_DSP_Q8_PE : HW_DSP_F32_PE;
    out->dsp = (long)pes * out->dsp_pe + HW_DSP_CTRL;
    out->decidable = out->uram_have >= 0 && out->bram_have >= 0 && out->dsp_have >= 0;

    /* KV in BRAM first; in URAM when BRAM is what overflows */
    for (int kv_uram = 0; kv_uram < 2; kv_uram++) {
        card_eval worst, c;
        memset(&worst, 0, sizeof worst);
        for (int k = 0; k < K; k++) {
            eval_card(kc, rq->kv, K, k, kv_uram, &c);
            if (c.bytes.total > worst.bytes.total) worst.bytes = c.bytes;
            if (c.uram_pe > worst.uram_pe) worst.uram_pe = c.uram_pe;
            if (c.bram_pe > worst.bram_pe) worst.bram_pe = c.bram_pe;
            if (c.uram > worst.uram) worst.uram = c.uram;
            if (c.bram > worst.bram) worst.bram = c.bram;
        }
        out->bytes = worst.bytes;
        out->uram_pe = worst.uram_pe;
        out->bram_pe = worst.bram_pe;
        out->uram = worst.uram;
        out->bram = worst.bram;
        out->kv_in_uram = kv_uram;
        out->fits = out->decidable && out->uram <= out->uram_have &&
                    out->bram <= out->bram_have && out->dsp <= out->dsp_have;
        if (out->fits || !out->decidable || out->bram <= out->bram_have) break;
    }
    if (!out->decidable) {   /* name exactly the figures the table lacks */
        char miss[64] = "";
        const char *names[] = { "BRAM36", "URAM", "DSP" };
        long have[] = { out->bram_have, out->uram_have, out->dsp_have };
        int n = 0, left = (have[0] < 0) + (have[1] < 0) + (have[2] < 0);
        for (int i = 0; i < 3; i++)
            if (have[i] < 0) {
                n++;
                snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s%s",
                         n == 1 ? "" : n == left ? " and " : ", ", names[i]);
            }
        snprintf(out->why, sizeof out->why,
                 "%s: the parts table (hw/parts.def) does not know its %s count%s", part->name,
                 miss, left > 1 ? "s" : "");
    } else if (!out->fits)
        snprintf(out->why, sizeof out->why, "needs URAM %ld of %ld, BRAM36 %ld of %ld, DSP %ld of %ld",
                 out->uram, out->uram_have, out->bram, out->bram_have, out->dsp, out->dsp_have);

    /* a decode that streamed the weights would read each matrix once per
     * token (the classifier once even when it is a copy on the last card) */
    for (uint32_t m = 0; m < tsr_lay_n_mats(kc); m++) out->weight_bytes_all += mat_bytes(kc, m);

    /* projected speed */
    uint32_t seq = kc->seq_len;
    if (rq->pos >= 0 && (uint32_t)rq->pos >= seq)
        return tsr_seterr(e, TSR_ERR_ARG, "position %d outside the context 0..%u", rq->pos, seq - 1u);
    out->pos = rq->pos < 0 ? (int)seq - 1 : rq->pos;
    tsr_plan_work(kc, (uint32_t)out->pos, &out->work);
    tsr_plan_cycles_of(kc, &out->work, K, &out->cyc);
    /* mean over a whole context: only the attention length moves with pos */
    tsr_kwork w = out->work;
    uint64_t per_pos = out->work.attn_heads;   /* attn_len = heads x (pos + 1) */
    double sum = 0;
    for (uint32_t p = 0; p < seq; p++) {
        tsr_plan_cycles c;
        w.attn_len = per_pos * (p + 1u);
        tsr_plan_cycles_of(kc, &w, K, &c);
        sum += (double)c.total;
    }
    out->cycles_mean = sum / seq;
    out->clock_mhz = rq->clock_mhz > 0 ? rq->clock_mhz : part->clock_mhz > 0 ? part->clock_mhz : -1;
    if (out->clock_mhz > 0) {
        out->tok_s = out->clock_mhz * 1e6 / (double)out->cyc.total;
        out->tok_s_mean = out->clock_mhz * 1e6 / out->cycles_mean;
        out->stream_gbps = (double)out->weight_bytes_all * out->tok_s_mean / 1e9;
    }
    return TSR_OK;
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
    for (int P = 1; P <= PLAN_MAX_PES; P *= 2) {
        if ((rc = eval(cfg, rq, part, P, &t, e))) return rc;
        if (t.fits && (!have || t.cycles_mean < best.cycles_mean)) {
            best = t;
            have = 1;
        }
    }
    if (!have) {
        if ((rc = eval(cfg, rq, part, PLAN_DEFAULT_PES, out, e))) return rc;
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
    if (req->kv < TSR_KV_F32 || req->kv > TSR_KV_INT8)
        return tsr_seterr(e, TSR_ERR_ARG, "KV precision %d (valid: f32, f16, int8)", req->kv);
    if (req->pes < 0 || req->pes > 4096)
        return tsr_seterr(e, TSR_ERR_ARG, "%d PEs (valid: 1..4096, or 0 to choose)", req->pes);
    if (req->clock_mhz < 0)
        return tsr_seterr(e, TSR_ERR_ARG, "clock %d MHz (valid: > 0)", req->clock_mhz);
    if (req->cards < 0 || req->cards > cfg->n_layers)
        return tsr_seterr(e, TSR_ERR_ARG, "%d cards (valid: 1..%d, one layer per card at most)",
                          req->cards, cfg->n_layers);
    if (req->group < 0 || (!req->weights_f32 && req->group > 0 && req->group > cfg->dim))
        return tsr_seterr(e, TSR_ERR_ARG, "group size %d (valid: 1..%d)", req->group, cfg->dim);
    int rc = eval_auto(cfg, req, part, out, e);
    if (rc || out->fits || !out->decidable) return rc;

    /* the smallest changes that fit */
    tsr_plan_req r = *req;
    tsr_plan t;
    int seq = (int)out->kc.seq_len, lo = 0, hi = seq - 1;
    while (lo < hi) {   /* longest context that fits (fit shrinks with it) */
        int mid = (lo + hi + 1) / 2;
        r.seq_len = mid;
        if ((rc = eval_auto(cfg, &r, part, &t, e))) return rc;
        if (t.fits) lo = mid;
        else hi = mid - 1;
    }
    out->fix_seq = lo;
    r = *req;
    if (req->kv != TSR_KV_INT8) {
        r.kv = TSR_KV_INT8;
        if ((rc = eval_auto(cfg, &r, part, &t, e))) return rc;
        out->fix_kv_int8 = t.fits;
    }
    r = *req;
    for (int K = (req->cards > 1 ? req->cards : 1) + 1; K <= cfg->n_layers; K++) {
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
    if (q8) put(b, "weights: Q8_0, group %u\n", k->group);
    else put(b, "weights: F32\n");
    put(b, "KV:      %s x %u positions, 1 sequence%s\n", kv_name(p->kv), k->seq_len,
        p->kv == TSR_KV_F32 ? "" : " (projection: the kernel stores an fp32 KV cache today)");
    const char *chosen = p->pes_chosen == 1 ? ", chosen: fastest projected that fits"
                         : p->pes_chosen != 2 ? ""
                         : p->decidable ? ", the default: no power of two up to 256 fits"
                                        : ", the default: no count chosen, the fit cannot be decided";
    put(b, "mesh:    %d PEs per card (%u x %u)%s, %d card%s\n", p->pes, k->mesh_rows,
        k->mesh_cols, chosen, p->cards, p->cards > 1 ? "s (layers pipelined across cards)" : "");
    put(b, "\non-chip bytes%s:\n", p->cards > 1 ? " (fullest card)" : "");
    put(b, "  weights      %14llu  %s tiles, URAM\n", (unsigned long long)p->bytes.weights,
        q8 ? "int8" : "fp32");
    put(b, "  scales       %14llu  fp32 per group, BRAM\n", (unsigned long long)p->bytes.scales);
    put(b, "  KV cache     %14llu  %s, %s\n", (unsigned long long)p->bytes.kv, kv_name(p->kv),
        p->kv_in_uram ? "URAM" : "BRAM");
    put(b, "  norms        %14llu  controller\n", (unsigned long long)p->bytes.norms);
    put(b, "  activations  %14llu  controller vectors\n", (unsigned long long)p->bytes.activations);
    put(b, "  scratch      %14llu  PE partial sums and scores, controller buffers\n",
        (unsigned long long)p->bytes.scratch);
    put(b, "  total        %14llu  (stationary: weights + scales + KV + norms = %llu)\n",
        (unsigned long long)p->bytes.total, (unsigned long long)p->bytes.stationary);
    put(b, "  fullest PE   %14llu  weights + scales + KV\n", (unsigned long long)p->bytes.pe_max);
    put(b, "\nblocks after packing (weights: URAM 4Kx72 as 64-bit words, >= 2 per PE; KV: "
           "BRAM36 1Kx32, >= 4 per PE, or URAM; the rest BRAM36):\n");
    put(b, "            per PE      card      part has\n");
    put(b, "  URAM    %8ld  %8ld  ", p->uram_pe, p->uram);
    fmt_have(b, p->uram_have, pt->shell_uram >= 0);
    put(b, "\n  BRAM36  %8ld  %8ld  ", p->bram_pe, p->bram);
    fmt_have(b, p->bram_have, pt->shell_bram36 >= 0);
    put(b, "\n  DSP     %8ld  %8ld  ", p->dsp_pe, p->dsp);
    fmt_have(b, p->dsp_have, pt->shell_dsp >= 0);
    put(b, "\n  LUT     (not modelled)      ");
    fmt_have(b, part_have(pt->lut, pt->shell_lut), pt->shell_lut >= 0);
    put(b, "\n");
    if (pt->shell_uram < 0 || pt->shell_bram36 < 0)
        put(b, "  * whole device: the shell's reservation is not known to hw/parts.def\n");
    /* plan packs what this model needs; a bitstream's arrays are sized by its
     * profile's constants, whatever model runs on it (docs/hls-flow.md) */
    put(b, "  these blocks are what the model needs; a bitstream's are set by its profile "
           "(docs/hls-flow.md, section 3)\n");
    put(b, "  %s\n", PLAN_PROFILES_NOTE);
    if (!p->decidable) put(b, "\nfit: CANNOT DECIDE: %s\n", p->why);
    else if (p->fits) put(b, "\nfit: FITS%s\n", p->cards > 1 ? " (each card)" : "");
    else {
        put(b, "\nfit: DOES NOT FIT: %s\n", p->why);
        put(b, "smallest changes that fit:\n");
        if (p->fix_seq > 0) put(b, "  --seq %d (a shorter context)\n", p->fix_seq);
        else put(b, "  a shorter context: none fits\n");
        if (p->kv != TSR_KV_INT8)
            put(b, "  --kv int8: %s\n", p->fix_kv_int8 ? "fits (projected variant)" : "does not fit");
        if (p->fix_cards > 0 && p->clock_mhz > 0)
            put(b, "  --cards %d: split the layers over %d cards, %d PEs each (projected %.0f tok/s)\n",
                p->fix_cards, p->fix_cards, p->fix_cards_pes, p->fix_cards_tok_s);
        else if (p->fix_cards > 0)
            put(b, "  --cards %d: split the layers over %d cards, %d PEs each\n", p->fix_cards,
                p->fix_cards, p->fix_cards_pes);
        else put(b, "  split over cards: none up to one layer per card fits\n");
    }
    put(b, "\nprojected decode (cycle model, not measured on hardware):\n");
    put(b, "  cycles/token at position %d: %llu\n", p->pos, (unsigned long long)p->cyc.total);
    put(b, "    GEMV MACs %llu, adder trees %llu, controller I/O %llu, embedding %llu,\n"
           "    attention %llu, norms %llu, vector ops %llu, sampling %llu, card links %llu\n",
        (unsigned long long)p->cyc.gemv_macs, (unsigned long long)p->cyc.gemv_trees,
        (unsigned long long)p->cyc.gemv_io, (unsigned long long)p->cyc.embed,
        (unsigned long long)p->cyc.attention, (unsigned long long)p->cyc.norms,
        (unsigned long long)p->cyc.vector, (unsigned long long)p->cyc.sample,
        (unsigned long long)p->cyc.links);
    put(b, "  mean cycles/token over positions 0..%u: %.0f\n", k->seq_len - 1, p->cycles_mean);
    if (p->clock_mhz > 0) {
        put(b, "  projected tokens/s at %d MHz: %.0f at position %d, %.0f over a whole context\n",
            p->clock_mhz, p->tok_s, p->pos, p->tok_s_mean);
        put(b, "  streaming the weights instead (%llu bytes/token) would need %.1f GB/s off-chip",
            (unsigned long long)p->weight_bytes_all, p->stream_gbps);
        if (pt->offchip_gbps > 0) put(b, " (%s: %d GB/s)\n", pt->offchip_kind, pt->offchip_gbps);
        else put(b, " (%s: bandwidth unknown)\n", pt->offchip_kind);
    } else {
        put(b, "  projected tokens/s: unknown (no default clock for %s: give --clock MHZ)\n", pt->name);
    }
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
    put(b, "\",\"part\":\"%s\",\"dim\":%u,\"hidden_dim\":%u,\"n_layers\":%u,\"n_heads\":%u,"
           "\"n_kv_heads\":%u,\"vocab_size\":%u,\"weights\":\"%s\",\"group_size\":%u,"
           "\"kv\":\"%s\",\"kv_projection\":%s,\"seq_len\":%u,\"pes\":%d,\"pes_chosen\":%s,"
           "\"mesh_rows\":%u,\"mesh_cols\":%u,\"cards\":%d,",
        pt->name, k->dim, k->hidden_dim, k->n_layers, k->n_heads, k->n_kv_heads, k->vocab_size,
        k->dtype == TSR_KDT_Q8 ? "q8" : "f32", k->group, kv_name(p->kv),
        p->kv == TSR_KV_F32 ? "false" : "true", k->seq_len, p->pes,
        p->pes_chosen ? "true" : "false", k->mesh_rows, k->mesh_cols, p->cards);
    put(b, "\"bytes\":{\"weights\":%llu,\"scales\":%llu,\"kv\":%llu,\"norms\":%llu,"
           "\"activations\":%llu,\"scratch\":%llu,\"stationary\":%llu,\"total\":%llu,"
           "\"pe_max\":%llu},",
        (unsigned long long)p->bytes.weights, (unsigned long long)p->bytes.scales,
        (unsigned long long)p->bytes.kv, (unsigned long long)p->bytes.norms,
        (unsigned long long)p->bytes.activations, (unsigned long long)p->bytes.scratch,
        (unsigned long long)p->bytes.stationary, (unsigned long long)p->bytes.total,
        (unsigned long long)p->bytes.pe_max);
    put(b, "\"blocks\":{\"uram_pe\":%ld,\"uram\":%ld,", p->uram_pe, p->uram);
    json_num(b, "uram_have", (double)p->uram_have, p->uram_have >= 0, 0);
    put(b, "\"bram36_pe\":%ld,\"bram36\":%ld,", p->bram_pe, p->bram);
    json_num(b, "bram36_have", (double)p->bram_have, p->bram_have >= 0, 0);
    put(b, "\"kv_in_uram\":%s,\"dsp_pe\":%ld,\"dsp\":%ld,", p->kv_in_uram ? "true" : "false",
        p->dsp_pe, p->dsp);
    json_num(b, "dsp_have", (double)p->dsp_have, p->dsp_have >= 0, 0);
    put(b, "\"shell_known\":%s},", pt->shell_uram >= 0 && pt->shell_bram36 >= 0 ? "true" : "false");
    /* fits is null when the part table cannot decide it */
    put(b, "\"decidable\":%s,\"fits\":%s,", p->decidable ? "true" : "false",
        !p->decidable ? "null" : p->fits ? "true" : "false");
    if (p->decidable && !p->fits) {   /* a fix not found is null */
        put(b, "\"fix\":{");
        json_num(b, "seq_len", p->fix_seq, p->fix_seq > 0, 0);
        put(b, "\"kv_int8_fits\":%s,", p->kv == TSR_KV_INT8 ? "null" : p->fix_kv_int8 ? "true" : "false");
        json_num(b, "cards", p->fix_cards, p->fix_cards > 0, 0);
        json_num(b, "cards_pes", p->fix_cards_pes, p->fix_cards > 0, 0);
        json_num(b, "cards_projected_tok_s", p->fix_cards_tok_s, p->fix_cards > 0 && p->clock_mhz > 0, 1);
        b->at--;   /* the last comma */
        put(b, "},");
    }
    put(b, "\"projected\":{\"position\":%d,\"cycles\":%llu,\"cycles_gemv_macs\":%llu,"
           "\"cycles_gemv_trees\":%llu,\"cycles_gemv_io\":%llu,\"cycles_embed\":%llu,"
           "\"cycles_attention\":%llu,\"cycles_norms\":%llu,\"cycles_vector\":%llu,"
           "\"cycles_sample\":%llu,\"cycles_links\":%llu,\"cycles_mean\":%.1f,",
        p->pos, (unsigned long long)p->cyc.total, (unsigned long long)p->cyc.gemv_macs,
        (unsigned long long)p->cyc.gemv_trees, (unsigned long long)p->cyc.gemv_io,
        (unsigned long long)p->cyc.embed, (unsigned long long)p->cyc.attention,
        (unsigned long long)p->cyc.norms, (unsigned long long)p->cyc.vector,
        (unsigned long long)p->cyc.sample, (unsigned long long)p->cyc.links, p->cycles_mean);
    /* no clock: no tokens/s, and no streaming bandwidth */
    int clk = p->clock_mhz > 0;
    json_num(b, "clock_mhz", p->clock_mhz, clk, 0);
    json_num(b, "tok_s", p->tok_s, clk, 1);
    json_num(b, "tok_s_mean", p->tok_s_mean, clk, 1);
    put(b, "\"weight_bytes_per_token\":%llu,", (unsigned long long)p->weight_bytes_all);
    json_num(b, "stream_gbps", p->stream_gbps, clk, 2);
    json_num(b, "offchip_gbps", pt->offchip_gbps, pt->offchip_gbps > 0, 0);
    put(b, "\"offchip_kind\":\"%s\"},", pt->offchip_kind);
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
/* The estimate of a real run (the emulator's counters)                       */

size_t tsr_plan_run_estimate(const tsr_kconfig *kc, const tsr_kwork *now, const tsr_kwork *mark,
                             int clock_mhz, char *buf, size_t len)
{
    sbuf b = { buf, len, 0 };
    if (len > 0) buf[0] = '\0';
    if (now->forwards == 0) return 0;
    tsr_kwork d;   /* every field is a uint64_t count: subtract them in order */
    const uint64_t *a = (const uint64_t *)(const void *)now, *m = (const uint64_t *)(const void *)mark;
    uint64_t *o = (uint64_t *)(void *)&d;
    for (size_t i = 0; i < sizeof d / sizeof(uint64_t); i++) o[i] = a[i] - m[i];
    tsr_plan_cycles c;
    tsr_plan_cycles_of(kc, &d, 1, &c);
    put(&b, "cycle_model.forwards %llu\n", (unsigned long long)now->forwards);
    put(&b, "cycle_model.last.position %llu\n", (unsigned long long)d.pos_sum);
    put(&b, "cycle_model.last.gemvs %llu\n", (unsigned long long)d.gemvs);
    put(&b, "cycle_model.last.gemv_pe_macs %llu\n", (unsigned long long)d.gemv_pe_macs);
    put(&b, "cycle_model.last.tree_levels %llu\n", (unsigned long long)d.tree_levels);
    put(&b, "cycle_model.last.attn_len %llu\n", (unsigned long long)d.attn_len);
    put(&b, "cycle_model.last.norm_elems %llu\n", (unsigned long long)d.norm_elems);
    put(&b, "cycle_model.last.logits %llu\n", (unsigned long long)d.logits);
    put(&b, "projected.cycles_per_token %llu\n", (unsigned long long)c.total);
    if (clock_mhz > 0)
        put(&b, "projected.tok_s %.1f at %d MHz (cycle model, not measured)\n",
            clock_mhz * 1e6 / (double)c.total, clock_mhz);
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
    rq.weights_f32 = o->weights_f32;
    rq.group = o->group_size;
    rq.seq_len = o->seq_len;
    rq.pes = o->pes;
    rq.clock_mhz = o->clock_mhz;
    rq.pos = o->step > 0 ? o->step - 1 : -1;
    rq.cards = o->cards;
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
