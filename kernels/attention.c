/*
 * attention.c - multi-head attention with a stationary KV cache (GQA),
 * on the PEs that hold it.
 *
 *   controller q | k | v --bus--> each KV head group's PEs: q slice of the
 *        group's query heads; k, v of this position to the one PE that
 *        stores position pos (pos % Q of the group)
 *   each group PE, over its share of positions 0..pos:
 *        scores = q . K^T / sqrt(head_size) -> max                 [SCORES]
 *        [Q > 1: the group's max by an up-and-down tree]
 *        exp(score - max) -> sum                                   [EXP]
 *        [Q > 1: the group's sum, likewise]
 *        score / sum -> weighted sum of V                          [VALUES]
 *        [Q > 1: the partial weighted sums added up the tree]
 *   group root --bus--> controller xb (dim,)
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

/* Scores of query head hq over the nl local positions: att[t] = (sum over
 * i ascending of q[i] * K[t][i]) / sqrt(head_size), TSR_ATT_LANES
 * positions a cycle; one pass over the head dimensions, each pass padded
 * to TSR_FADD_LAT words so a position's sum is added to once every
 * TSR_FADD_LAT cycles.  Then its max (*am). */
static void pe_att_scores(const float kv[TSR_PE_KV_WORDS], uint32_t kb,
                          const float qh[TSR_MAX_QGROUP], float att[TSR_PE_ATT], float *am,
                          uint32_t hs, uint32_t sl, uint32_t nl, uint32_t hq, float sqrt_hs)
{
#pragma HLS INLINE off
    uint32_t tw = tsr_cdiv(nl, TSR_ATT_LANES), twp = tsr_cy_padded(tw), a0 = hq * sl;
#ifdef TSR_EMU
    /* the emulator's unpadded loops (emu/att_rows.c), the same sums */
    tsr_emu_att_scores(kv + kb, sl, qh + hq * hs, hs, nl, att + a0);
    twp = 0;
#endif
    uint32_t i = 0, w = 0;
att_score_steps:
    for (uint32_t s = 0; s < hs * twp; s++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_ATT_STEPS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=att type=inter dependent=true distance=TSR_FADD_LAT
        if (w < tw) {
            float qi = qh[hq * hs + i];
att_score_lanes:
            for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
                uint32_t t = w * TSR_ATT_LANES + l;
                if (t < nl) {
                    float prev = i == 0 ? 0.0f : att[a0 + t];
                    att[a0 + t] = prev + qi * kv[kb + i * sl + t];
                }
            }
        }
        if (++w == twp) {
            w = 0;
            i++;
        }
    }
att_score_scale:
    for (uint32_t t = 0; t < nl; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
        att[a0 + t] = att[a0 + t] / sqrt_hs;
    }
    float lm[TSR_ATT_LANES];
#pragma HLS ARRAY_PARTITION variable=lm type=complete
att_max_init:
    for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
        lm[l] = -FLT_MAX;
    }
att_max_words:
    for (uint32_t w2 = 0; w2 < tw; w2++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=TSR_D_CMP
att_max_lanes:
        for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
            uint32_t t = w2 * TSR_ATT_LANES + l;
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
        att[a0 + t] = expf(att[a0 + t] - m);
    }
    *sum = pe_reduce_sum(att + a0, nl);
}


/* att[t] /= sum (one divider), then ao[hq] (head_size,) = sum over the
 * local positions ascending of att[t] * V[t], TSR_ATT_LANES dimensions a
 * cycle, each position's pass padded to TSR_FADD_LAT words.  No position:
 * zeros (the tree adds them). */
static void pe_att_values(const float kv[TSR_PE_KV_WORDS], uint32_t vb, float att[TSR_PE_ATT],
                          float ao[TSR_MAX_QGROUP], uint32_t hs, uint32_t sl, uint32_t nl,
                          uint32_t hq, float sum)
{
#pragma HLS INLINE off
    uint32_t a0 = hq * sl, o0 = hq * hs;
    uint32_t hw = tsr_cdiv(hs, TSR_ATT_LANES), hwp = tsr_cy_padded(hw);
att_norm:
    for (uint32_t t = 0; t < nl; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
        att[a0 + t] /= sum;
    }
    if (nl == 0) {
att_zero:
        for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
            ao[o0 + i] = 0.0f;
        }
        return;
    }
    uint32_t t = 0, w = 0;
#ifdef TSR_EMU
    tsr_emu_att_values(kv + vb, hs, att + a0, nl, ao + o0);
    hwp = 0;
#endif
att_value_steps:
    for (uint32_t s = 0; s < nl * hwp; s++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_ATT_STEPS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=ao type=inter dependent=true distance=TSR_FADD_LAT
        if (w < hw) {
            float a = att[a0 + t];
att_value_lanes:
            for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
                uint32_t i = w * TSR_ATT_LANES + l;
                if (i < hs) {
                    float prev = t == 0 ? 0.0f : ao[o0 + i];
                    ao[o0 + i] = prev + a * kv[vb + t * hs + i];
                }
            }
        }
        if (++w == hwp) {
            w = 0;
            t++;
        }
    }
}


/* ------------------------------------------------------------------------ */
/* PE tasks                                                                   */

/* Positions 0..pos that PE p's place q in its group holds: those t <= pos
 * with t % Q == q (pos = pos_div * Q + pos_q, kept by counting). */
static uint32_t local_positions(const tsr_kstate *st, uint32_t p, uint32_t slot)
{
    return st->pos_div[slot] + (st->kv_q[p] <= st->pos_q[slot] ? 1u : 0u);
}

/* PE p's KV heads, one after another; per head its kv_mul query heads.
 * Query head (j, hq) of the PE uses q slice, scores and output slot
 * j * kv_mul + hq. */
static uint32_t att_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job)
{
#pragma HLS INLINE
    uint32_t nh = st->kv_nh[p];
    if (nh == 0) return 0;
    uint32_t slot = job->slot, hs = st->hs, sl = st->seq_local, km = st->kv_mul, cy = 0;
    uint32_t blk = 2u * hs * sl, nl = local_positions(st, p, slot);
    uint32_t b0 = (slot * st->cfg.n_layers + job->layer) * nh * blk;
att_heads:
    for (uint32_t j = 0; j < nh; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_HEADS
        uint32_t kb = b0 + j * blk, vb = kb + hs * sl;
        if (job->flags & TSR_JOB_SCORES) {
            if (st->kv_q[p] == st->pos_q[slot]) {
                pe_att_store(st->kv[p], kb, vb, st->kin[p] + j * hs, st->vin[p] + j * hs, hs, sl,
                             st->pos_div[slot]);
                cy += tsr_cy_att_store(hs);
            }
att_heads_scores:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                uint32_t h = j * km + hq;
                if (nl) pe_att_scores(st->kv[p], kb, st->qh[p], st->att[p], &st->am[p][h], hs, sl,
                                      nl, h, st->sqrt_hs);
                else st->am[p][h] = -FLT_MAX;
                cy += tsr_cy_att_scores(hs, nl);
            }
        }
        if (job->flags & TSR_JOB_EXP) {
att_heads_exp:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                uint32_t h = j * km + hq;
                if (nl) pe_att_exp(st->att[p], h * sl, nl, st->am[p][h], &st->asum[p][h]);
                else st->asum[p][h] = 0.0f;
                cy += tsr_cy_att_exp_s(nl, TSR_PE_SUM_LANES);
            }
        }
        if (job->flags & TSR_JOB_VALUES) {
att_heads_values:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                uint32_t h = j * km + hq;
                pe_att_values(st->kv[p], vb, st->att[p], st->ao[p], hs, sl, nl, h, st->asum[p][h]);
                cy += tsr_cy_att_values(hs, nl);
            }
        }
    }
    return cy;
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

/* q slices to every PE of each group, k and v of this position to the PE
 * that stores it: the bus streams q | k | v, TSR_VEC values a cycle, and
 * each PE latches its part (its heads' query slices, and, on the PE that
 * stores pos, their k and v). */
static void att_send(tsr_kstate *st, uint32_t slot)
{
    uint32_t dim = st->cfg.dim, kvd = st->kv_dim, hs = st->hs, qg = st->kv_mul * hs;
    TSR_CHARGE(st, TSR_RG_ATT_IO, tsr_cy_att_send(dim, kvd));
#ifdef TSR_EMU
    /* the emulator copies each PE's part directly: the same values */
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
#else
    uint32_t n = dim + 2u * kvd;
att_send_words:
    for (uint32_t w = 0; w < n; w += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_QKV
#pragma HLS PIPELINE II=1
att_send_pes:
        for (uint32_t p = 0; p < TSR_ATT_PES; p++) {
#pragma HLS UNROLL
            uint32_t nh = st->kv_nh[p];
            if (p < st->cfg.att_pes && nh != 0) {
                uint32_t h0 = st->kv_h0[p];
                int store = st->kv_q[p] == st->pos_q[slot];
                uint32_t q0 = h0 * qg, k0 = dim + h0 * hs, v0 = dim + kvd + h0 * hs;
att_send_lanes:
                for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                    uint32_t i = w + l;
                    float v = st->qkv[i];
                    if (i >= q0 && i < q0 + nh * qg) st->qh[p][i - q0] = v;
                    if (store && i >= k0 && i < k0 + nh * hs) st->kin[p][i - k0] = v;
                    if (store && i >= v0 && i < v0 + nh * hs) st->vin[p][i - v0] = v;
                }
            }
        }
    }
#endif
}

/* The head outputs into xb (dim,): head h's words xb[h * qg, (h + 1) * qg),
 * qg = kv_mul * head_size a multiple of TSR_VEC (CONFIGURE checks it), from
 * its group's first PE, at its index among that PE's heads. */
static void att_collect(tsr_kstate *st)
{
    uint32_t dim = st->cfg.dim, gw = st->kv_mul * st->hs / TSR_VEC, h = 0, k = 0;
    TSR_CHARGE(st, TSR_RG_ATT_IO, tsr_cy_att_collect(dim));
att_collect_words:
    for (uint32_t w = 0; w < dim / TSR_VEC; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM_WORDS
#pragma HLS PIPELINE II=1
        uint32_t src = st->kv_pe[h], o = (st->kv_j[h] * gw + k) * TSR_VEC;
att_collect_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            st->xb[w * TSR_VEC + l] = st->ao[src][o + l];
        }
        if (++k == gw) {
            k = 0;
            h++;
        }
    }
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
    att_send(st, slot);
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
