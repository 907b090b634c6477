/*
 * attention.c - multi-head attention with a stationary KV cache (GQA),
 * on the PEs that hold it.
 *
 *   QKV gather q | k | v --bus--> each KV head group's PEs: q slice of
 *        the group's query heads; k, v of this position to the one PE
 *        that stores position pos (pos % Q of the group) (mesh.c, with
 *        RoPE on the way)
 *   each group PE, over its share of positions 0..pos:
 *        scores = q . K^T / sqrt(head_size) -> max                 [SCORES]
 *        [Q > 1: the group's max by an up-and-down tree]
 *        exp(score - max) -> sum                                   [EXP]
 *        [Q > 1: the group's sum, likewise]
 *        score / sum -> weighted sum of V                          [VALUES]
 *        [Q > 1: the partial weighted sums added up the tree]
 *   group root --bus--> controller xn (dim,), the WO GEMV's input
 *
 * Head group h lives on PEs [base_h, base_h + Q) (tsr_layout.h).  With
 * Q = 1 every step is run.c's, in its order (the sums too when
 * TSR_SUM_LANES is 1).  Each PE task touches only its own memories (a
 * tree step reads its partner's one value or vector).
 */
#include <float.h>
#include <math.h>

#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* One PE's share                                                             */

/* Store this position's k, v (kin, vin) at local index t: a column of K^T
 * (two words a cycle: a BRAM's two ports), a row of V. */
static void pe_att_store(float kv[TSR_PE_KV_WORDS], uint32_t kb, uint32_t vb,
                         const float kin[TSR_MAX_HEAD_SIZE], const float vin[TSR_MAX_HEAD_SIZE],
                         uint32_t hs, uint32_t sl, uint32_t t)
{
#pragma HLS INLINE off
att_store:
    for (uint32_t i = 0; i < hs; i += 2u) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HALF_HS
#pragma HLS PIPELINE II=1
att_store_pair:
        for (uint32_t u = 0; u < 2u; u++) {
#pragma HLS UNROLL
            kv[kb + (i + u) * sl + t] = kin[i + u];
            kv[vb + t * hs + i + u] = vin[i + u];
        }
    }
}

/* The attention PE's multiply-add lanes, shared by the scores and the
 * weighted sum of V (one instance a PE: ALLOCATION in pe_att), so a PE has
 * TSR_ATT_LANES fp32 multiply-adds, not twice that.  For o < no, over the
 * words of j < nj, TSR_ATT_LANES lanes a cycle:
 *   acc[o % parts][j] = (o < parts ? 0 : acc[o % parts][j])
 *                       + s[s0 + o] * kv[base + o * stride + j]
 * parts 1: o ascending into one accumulator per j (run.c's order), each
 * pass over the words padded to TSR_FADD_LAT so an accumulator is added to
 * once every TSR_FADD_LAT cycles; parts TSR_ATT_PARTS > 1: o into partial
 * o % parts, each added to once every parts passes, so nothing is padded.
 * Scores: o a head dimension, j a position (K^T rows); values: o a
 * position, j a head dimension (V rows). */
static void pe_att_mac(const float kv[TSR_PE_KV_WORDS], uint32_t base, uint32_t stride,
                       const float *s, uint32_t s0, uint32_t no, uint32_t nj,
                       uint32_t parts, float acc[TSR_ATT_PARTS][TSR_ATT_ACC])
{
#pragma HLS INLINE off
    uint32_t nw = tsr_cdiv(nj, TSR_ATT_LANES), nwp = parts > 1u ? nw : tsr_cy_padded(nw);
#ifdef TSR_EMU
    /* the emulator's unpadded loops (emu/att_rows.c), the same sums */
    tsr_emu_att_mac(kv + base, stride, s + s0, no, nj, parts, &acc[0][0], TSR_ATT_ACC);
    nwp = 0;
#endif
    uint32_t o = 0, w = 0, r = 0, ob = base;
att_mac_steps:
    for (uint32_t k = 0; k < no * nwp; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_ATT_STEPS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter dependent=true distance=TSR_FADD_LAT
        if (w < nw) {
            float sv = s[s0 + o];
att_mac_lanes:
            for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
                uint32_t jj = w * TSR_ATT_LANES + l;
                if (jj < nj) {
                    float prev = o < parts ? 0.0f : acc[r][jj];
                    acc[r][jj] = prev + sv * kv[ob + jj];
                }
            }
        }
        if (++w == nwp) {
            w = 0;
            o++;
            ob += stride;
            r = r + 1u == parts ? 0u : r + 1u;
        }
    }
}

/* The scores of query head hq from acc (pe_att_mac over K^T): att[t] = (the
 * sum of t's partials, a tree over TSR_ATT_PARTS) / sqrt(head_size), one
 * position a cycle; then their max (*am), TSR_ATT_LANES a cycle. */
static void pe_att_scale_max(const float acc[TSR_ATT_PARTS][TSR_ATT_ACC], float att[TSR_PE_ATT],
                             float *am, uint32_t hs, uint32_t nl, uint32_t a0, float sqrt_hs)
{
#pragma HLS INLINE off
att_score_scale:
    for (uint32_t t = 0; t < nl; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
        float v[TSR_ATT_PARTS];
#pragma HLS ARRAY_PARTITION variable=v type=complete
att_score_part_read:
        for (uint32_t k = 0; k < TSR_ATT_PARTS; k++) {
#pragma HLS UNROLL
            v[k] = k < hs ? acc[k][t] : 0.0f;
        }
#if TSR_ATT_PARTS > 1
att_score_part_tree:
        for (uint32_t h = TSR_ATT_PARTS / 2u; h >= 1u; h /= 2u) {
#pragma HLS UNROLL
att_score_part_pairs:
            for (uint32_t k = 0; k < TSR_ATT_PARTS / 2u; k++) {
#pragma HLS UNROLL
                if (k < h) v[k] += v[k + h];
            }
        }
#endif
        att[a0 + t] = v[0] / sqrt_hs;
    }
    float lm[TSR_ATT_LANES];
#pragma HLS ARRAY_PARTITION variable=lm type=complete
att_max_init:
    for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
        lm[l] = -FLT_MAX;
    }
att_max_words:
    for (uint32_t w = 0; w < tsr_cdiv(nl, TSR_ATT_LANES); w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=TSR_D_CMP
att_max_lanes:
        for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
            uint32_t t = w * TSR_ATT_LANES + l;
            if (t < nl && att[a0 + t] > lm[l]) lm[l] = att[a0 + t];
        }
    }
att_max_tree:
    for (uint32_t h = TSR_ATT_LANES / 2u; h >= 1u; h /= 2u) {
#pragma HLS UNROLL
att_max_pairs:
        for (uint32_t l = 0; l < TSR_ATT_LANES / 2u; l++) {
#pragma HLS UNROLL
            if (l < h && lm[l + h] > lm[l]) lm[l] = lm[l + h];
        }
    }
    *am = lm[0];
}

/* sum of x (n,) over TSR_PE_SUM_LANES partials, one element a cycle, then
 * the pairwise levels: tsr_reduce_sum's order with fewer partials (the
 * same when TSR_SUM_LANES is 1). */
static float pe_reduce_sum(const float *x, uint32_t n)
{
    float part[TSR_PE_SUM_LANES];
#pragma HLS ARRAY_PARTITION variable=part type=complete
pe_sum_zero:
    for (uint32_t k = 0; k < TSR_PE_SUM_LANES; k++) {
#pragma HLS UNROLL
        part[k] = 0.0f;
    }
    uint32_t k = 0;
pe_sum_pass:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=TSR_PE_SUM_II
#pragma HLS DEPENDENCE variable=part type=inter dependent=true distance=TSR_PE_SUM_LANES
        part[k] += x[i];
        k = k + 1u == TSR_PE_SUM_LANES ? 0u : k + 1u;
    }
#if TSR_PE_SUM_LANES > 1
pe_sum_level:
    for (uint32_t half = TSR_PE_SUM_LANES / 2u; half >= 1u; half /= 2u) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=4
pe_sum_level_adds:
        for (uint32_t j = 0; j < half; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PE_SUM_LANES
#pragma HLS PIPELINE II=1
            part[j] += part[j + half];
        }
    }
#endif
    return part[0];
}

/* att[t] = expf(att[t] - m) over the nl local positions, one a cycle; their
 * pe_reduce_sum into *sum. */
static void pe_att_exp(float att[TSR_PE_ATT], uint32_t a0, uint32_t nl, float m, float *sum)
{
#pragma HLS INLINE off
att_exp:
    for (uint32_t t = 0; t < nl; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
        float e = expf(att[a0 + t] - m);   /* in LUTs: a DSP-free expf per PE */
#pragma HLS BIND_OP variable=e op=fexp impl=fabric
        att[a0 + t] = e;
    }
    *sum = pe_reduce_sum(att + a0, nl);
}

/* att[t] /= sum over the nl local positions (one divider), one a cycle. */
static void pe_att_norm(float att[TSR_PE_ATT], uint32_t a0, uint32_t nl, float sum)
{
#pragma HLS INLINE off
att_norm:
    for (uint32_t t = 0; t < nl; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
        att[a0 + t] /= sum;
    }
}

/* ao[o0 + i] = acc[0][i] (the weighted sum of V, pe_att_mac), or zeros
 * when the PE holds no position yet (the tree adds them);
 * TSR_ATT_LANES a cycle. */
static void pe_att_out(const float acc[TSR_ATT_PARTS][TSR_ATT_ACC], float ao[TSR_MAX_QGROUP],
                       uint32_t o0, uint32_t hs, uint32_t nl)
{
#pragma HLS INLINE off
att_out_words:
    for (uint32_t i = 0; i < hs; i += TSR_ATT_LANES) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
att_out_lanes:
        for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
            if (i + l < hs) ao[o0 + i + l] = nl ? acc[0][i + l] : 0.0f;
        }
    }
}

/* One attention PE's phases (job flags) over its KV heads, one after
 * another, and per KV head its kv_mul query heads: query head (j, hq) uses
 * q slice, scores and output slot h = j * kv_mul + hq.  All of it on the
 * PE's own memories; one multiply-add datapath (pe_att_mac) for the
 * scores and the values.  Returns its cycles. */
static uint32_t pe_att(float kv[TSR_PE_KV_WORDS], const float qh[TSR_MAX_QGROUP],
                       const float kin[TSR_MAX_DIM], const float vin[TSR_MAX_DIM],
                       float att[TSR_PE_ATT], float ao[TSR_MAX_QGROUP],
                       float am[TSR_MAX_HEADS], float asum[TSR_MAX_HEADS], uint32_t flags,
                       uint32_t nh, uint32_t km, uint32_t hs, uint32_t sl, uint32_t b0,
                       uint32_t nl, int store, uint32_t t_store, float sqrt_hs)
{
#pragma HLS INLINE off
#pragma HLS ALLOCATION function instances=pe_att_mac limit=1
    float acc[TSR_ATT_PARTS][TSR_ATT_ACC];
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=acc type=cyclic factor=TSR_ATT_LANES dim=2
    uint32_t blk = 2u * hs * sl, cy = 0;
att_heads:
    for (uint32_t j = 0; j < nh; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_HEADS
        uint32_t kb = b0 + j * blk, vb = kb + hs * sl;
        if (flags & TSR_JOB_SCORES) {
            if (store) {
                pe_att_store(kv, kb, vb, kin + j * hs, vin + j * hs, hs, sl, t_store);
                cy += tsr_cy_att_store(hs);
            }
att_heads_scores:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                uint32_t h = j * km + hq;
                if (nl) {
                    pe_att_mac(kv, kb, sl, qh, h * hs, hs, nl, TSR_ATT_PARTS, acc);
                    pe_att_scale_max(acc, att, &am[h], hs, nl, h * sl, sqrt_hs);
                } else {
                    am[h] = -FLT_MAX;
                }
                cy += tsr_cy_att_scores(hs, nl, TSR_ATT_PARTS);
            }
        }
        if (flags & TSR_JOB_EXP) {
att_heads_exp:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                uint32_t h = j * km + hq;
                if (nl) pe_att_exp(att, h * sl, nl, am[h], &asum[h]);
                else asum[h] = 0.0f;
                cy += tsr_cy_att_exp_s(nl, TSR_PE_SUM_LANES);
            }
        }
        if (flags & TSR_JOB_VALUES) {
att_heads_values:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                uint32_t h = j * km + hq;
                if (nl) {
                    pe_att_norm(att, h * sl, nl, asum[h]);
                    pe_att_mac(kv, vb, hs, att, h * sl, nl, hs, 1u, acc);
                }
                pe_att_out(acc, ao, h * hs, hs, nl);
                cy += tsr_cy_att_values(hs, nl);
            }
        }
    }
    return cy;
}


/* ------------------------------------------------------------------------ */
/* PE tasks                                                                   */

/* Positions 0..pos that PE p's place q in its group holds: those t <= pos
 * with t % Q == q (pos = pos_div * Q + pos_q, kept by counting). */
static uint32_t local_positions(const tsr_kstate *st, uint32_t p, uint32_t slot)
{
    return st->pos_div[slot] + (st->kv_q[p] <= st->pos_q[slot] ? 1u : 0u);
}

/* PE p's share of an attention step: pe_att on its own memories. */
static uint32_t att_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job)
{
#pragma HLS INLINE
    uint32_t nh = st->kv_nh[p];
    if (nh == 0) return 0;
    uint32_t slot = job->slot, hs = st->hs, sl = st->seq_local;
    uint32_t b0 = (slot * st->cfg.n_layers + job->layer) * nh * 2u * hs * sl;
    return pe_att(st->kv[p], st->qh[p], st->kin[p], st->vin[p], st->att[p], st->ao[p], st->am[p],
                  st->asum[p], job->flags, nh, st->kv_mul, hs, sl, b0,
                  local_positions(st, p, slot), st->kv_q[p] == st->pos_q[slot],
                  st->pos_div[slot], st->sqrt_hs);
}

/* The group trees (Q > 1, a power of two).  Up: a PE at place q with
 * q % 2s == 0 combines its partner q + s (level s = 2^job->level).  Down:
 * the PE at q with q % 2s == s takes q - s's value, so after log2 Q
 * levels every place holds the root's.  job->flags: TSR_JOB_SCORES the
 * max, TSR_JOB_EXP the sum (up, then down), TSR_JOB_VALUES the weighted
 * sums (up only: the root gathers).  job->down: 0 up, 1 down. */
static uint32_t att_tree_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job)
{
#pragma HLS INLINE
    if (st->kv_nh[p] == 0) return 0;
    uint32_t s = 1u << job->level, q = st->kv_q[p], km = st->kv_mul;
    int up = job->down == 0;
    if (up ? (q & (2u * s - 1u)) != 0 || q + s >= st->cfg.kv_split : (q & (2u * s - 1u)) != s)
        return 0;
    uint32_t o = up ? p + s : p - s;   /* the partner */
    if (job->flags & TSR_JOB_SCORES) {
att_tree_max:
        for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
#pragma HLS PIPELINE II=1
            float v = st->am[o][hq];
            st->am[p][hq] = up ? (v > st->am[p][hq] ? v : st->am[p][hq]) : v;
        }
        return tsr_cy_att_tree_max(km);
    }
    if (job->flags & TSR_JOB_EXP) {
att_tree_sum:
        for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
#pragma HLS PIPELINE II=1
            float v = st->asum[o][hq];
            st->asum[p][hq] = up ? st->asum[p][hq] + v : v;
        }
        return tsr_cy_att_tree_sum(km);
    }
    uint32_t n = km * st->hs;
att_tree_values:
    for (uint32_t i = 0; i < n; i += TSR_ATT_LANES) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_QGROUP
#pragma HLS PIPELINE II=1
att_tree_value_lanes:
        for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
            if (i + l < n) st->ao[p][i + l] += st->ao[o][i + l];
        }
    }
    return tsr_cy_att_tree_values(km, st->hs);
}

/* ------------------------------------------------------------------------ */
/* The controller's side                                                      */

#ifdef TSR_EMU
void tsr_att_latch_qkv(tsr_kstate *st, uint32_t slot)
{
    uint32_t dim = st->cfg.dim, kvd = st->kv_dim, hs = st->hs, qg = st->kv_mul * hs;
    for (uint32_t p = 0; p < st->cfg.att_pes; p++) {
        uint32_t h0 = st->kv_h0[p], nh = st->kv_nh[p];
        if (nh == 0) continue;
        for (uint32_t i = 0; i < nh * qg; i++) st->qh[p][i] = st->qkv[h0 * qg + i];
        if (st->kv_q[p] != st->pos_q[slot]) continue;
        for (uint32_t i = 0; i < nh * hs; i++) {
            st->kin[p][i] = st->qkv[dim + h0 * hs + i];
            st->vin[p][i] = st->qkv[dim + kvd + h0 * hs + i];
        }
    }
}
#endif

/* The head outputs into xn (dim,), the WO GEMV's input: head h's words
 * xn[h * qg, (h + 1) * qg), qg = kv_mul * head_size a multiple of TSR_VEC
 * (CONFIGURE checks it), from its group's first PE, at its index among
 * that PE's heads; zeros up to the group padding; each word's max |v| for
 * the quantizer (tsr_mesh_input_ready). */
static void att_collect(tsr_kstate *st)
{
    uint32_t dim = st->cfg.dim, gw = st->kv_mul * st->hs / TSR_VEC, h = 0, k = 0;
    uint32_t npad = ((dim + st->cfg.group - 1u) >> st->g_log2) << st->g_log2;
    TSR_CHARGE(st, TSR_RG_ATT_IO, tsr_cy_att_collect(npad));
att_collect_words:
    for (uint32_t w = 0; w < npad / TSR_VEC; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN_WORDS
#pragma HLS PIPELINE II=1
        int in = w * TSR_VEC < dim;
        uint32_t hi = in ? h : 0u;   /* past dim: padding, no head */
        uint32_t src = st->kv_pe[hi], o = (st->kv_j[hi] * gw + k) * TSR_VEC;
        float m = 0.0f;
att_collect_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            float v = in ? st->ao[src][o + l] : 0.0f;
            st->xn[w * TSR_VEC + l] = v;
            float a = fabsf(v);
            m = a > m ? a : m;
        }
        st->wmax[w] = m;
        if (in && ++k == gw) {
            k = 0;
            h++;
        }
    }
    st->wmax_fresh = 1;
}

/* One tree over every group (up, or up then down), each level a step of
 * all PEs at once, charged to ATT_TREE. */
static void att_tree(tsr_kstate *st, tsr_pe_job *job, uint32_t what, int down)
{
    uint32_t Q = st->cfg.kv_split, worst;
    job->flags = what;
    job->down = 0;
att_tree_up:
    for (uint32_t lvl = 0; lvl < TSR_MAX_LEVELS; lvl++) {
#pragma HLS UNROLL
        if ((1u << lvl) < Q) {
            job->level = lvl;
            TSR_RUN_ATT_PES(worst, st, att_tree_pe, job);
            TSR_CHARGE(st, TSR_RG_ATT_TREE, worst);
        }
    }
    if (!down) return;
    job->down = 1;
att_tree_down:
    for (uint32_t k = 0; k < TSR_MAX_LEVELS; k++) {
#pragma HLS UNROLL
        uint32_t lvl = TSR_MAX_LEVELS - 1u - k;
        if ((1u << lvl) < Q) {
            job->level = lvl;
            TSR_RUN_ATT_PES(worst, st, att_tree_pe, job);
            TSR_CHARGE(st, TSR_RG_ATT_TREE, worst);
        }
    }
}

void tsr_attention(tsr_kstate *st, uint32_t slot, uint32_t l, uint32_t pos)
{
    tsr_pe_job job = { .slot = slot, .layer = l,
                       .work = 2u * st->cfg.n_heads * (pos + 1u) * st->hs };
    uint32_t worst;
    if (st->cfg.kv_split == 1u) {
        /* one PE per KV head: the whole of run.c's attention in one step */
        job.flags = TSR_JOB_SCORES | TSR_JOB_EXP | TSR_JOB_VALUES;
        TSR_RUN_ATT_PES(worst, st, att_pe, &job);
        TSR_CHARGE(st, TSR_RG_ATTN, worst);
    } else {
        job.flags = TSR_JOB_SCORES;
        TSR_RUN_ATT_PES(worst, st, att_pe, &job);
        TSR_CHARGE(st, TSR_RG_ATTN, worst);
        att_tree(st, &job, TSR_JOB_SCORES, 1);
        job.flags = TSR_JOB_EXP;
        TSR_RUN_ATT_PES(worst, st, att_pe, &job);
        TSR_CHARGE(st, TSR_RG_ATTN, worst);
        att_tree(st, &job, TSR_JOB_EXP, 1);
        job.flags = TSR_JOB_VALUES;
        TSR_RUN_ATT_PES(worst, st, att_pe, &job);
        TSR_CHARGE(st, TSR_RG_ATTN, worst);
        att_tree(st, &job, TSR_JOB_VALUES, 0);
    }
    att_collect(st);

    /* fabric traffic and work: per kv head its k, v in and its query heads
     * broadcast; per query head pos + 1 scores and weighted values, its
     * output back */
    uint32_t hs = st->hs;
    st->cnt.fabric_gather_bytes += (uint64_t)st->cfg.n_kv_heads * 8u * hs +
                                   (uint64_t)st->cfg.n_heads * 4u * hs;
    st->cnt.fabric_bcast_bytes += (uint64_t)st->cfg.n_kv_heads * st->cfg.kv_split * 4u *
                                  st->kv_mul * hs;
    st->cnt.macs += (uint64_t)st->cfg.n_heads * 2u * (pos + 1u) * hs;
    st->cnt.attended += (uint64_t)st->cfg.n_heads * (pos + 1u);
}
