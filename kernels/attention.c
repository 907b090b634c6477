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
 *
 * The cache is held in the configured precision (kv_dtype): fp32 (kv),
 * IEEE half (kvh: encoded as stored, decoded as read, tsr_half.h), or
 * int8 with one fp32 scale per head vector per position (kvq, kvs).  An
 * int8 score is q . k8 times its position's K scale; an int8 weighted sum
 * takes each position's weight times its V scale, so the multiply-add
 * lanes see integers converted to fp32 and no scale.  fp32 is run.c's.
 */
#include <float.h>
#include <math.h>

#include "tsr_half.h"
#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* One PE's share                                                             */
/*
 * An attention PE's memories are word-major, so a lane is a bank and
 * every base and stride is in words: the KV cache kv[word][TSR_ATT_LANES]
 * (per (slot, layer, head) block K^T as slw = sl / 8 position tiles of
 * hs words, word w * hs + d holding row d's positions 8w..8w+7, then V
 * as sl rows of hsw = hs / 8 words), the scores att[word][lane]
 * (query head h from word h * slw), the head outputs ao[word][lane]
 * (query head h from word h * hsw), and its copy of this token's
 * q | k | v, qkvw[word][TSR_VEC], latched off the QKV gather.  The f16 and
 * int8 caches kvh, kvq are word-major alike (the same words); the int8
 * scales kvs are per block the K scales (sl) then the V scales (sl), one a
 * position.
 */

/* pe_att_store's K^T column: value i of k (qkvw from element k0) into lane
 * tl of word ka + i, a value a cycle.  The cache's lanes share a memory
 * word (ARRAY_RESHAPE, tessera_top), so each write replaces one lane of a
 * word the others of which hold earlier positions: a read-modify-write on
 * the true dual-port memory (a read port, a write port), on a different
 * word every iteration. */
static void pe_att_store_k(float kv[TSR_PE_KV_AW][TSR_ATT_LANES],
                           uint16_t kvh[TSR_PE_KVH_AW][TSR_ATT_LANES],
                           int8_t kvq[TSR_PE_KVQ_AW][TSR_ATT_LANES], uint32_t kvt,
                           const float qkvw[TSR_PE_QKV_VW][TSR_VEC], uint32_t k0, uint32_t ka,
                           uint32_t tl, uint32_t hs, float ks)
{
#pragma HLS INLINE
att_store_k:
    for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=kv type=inter dependent=false
#if TSR_WITH_KV_F16
#pragma HLS DEPENDENCE variable=kvh type=inter dependent=false
#endif
#if TSR_WITH_KV_INT8
#pragma HLS DEPENDENCE variable=kvq type=inter dependent=false
#endif
        uint32_t ki = k0 + i;
        float k = qkvw[ki / TSR_VEC][ki % TSR_VEC];
#if TSR_WITH_KV_F16
        if (kvt == TSR_KV_F16) kvh[ka][tl] = tsr_f16_from_f32(k);
        else
#endif
#if TSR_WITH_KV_INT8
        if (kvt == TSR_KV_INT8) kvq[ka][tl] = ks != 0.0f ? (int8_t)tsr_round_q8(k / ks) : (int8_t)0;
        else
#endif
            kv[ka][tl] = k;
        ka++;
    }
#if !TSR_WITH_KV_F16
    (void)kvh;
#endif
#if !TSR_WITH_KV_INT8
    (void)kvq;
    (void)ks;
#endif
#if !TSR_WITH_KV_F16 && !TSR_WITH_KV_INT8
    (void)kvt;
#endif
}

/* pe_att_store's V row: value i of v (qkvw from element v0) into lane
 * i % TSR_ATT_LANES of word va + i / TSR_ATT_LANES, a value a cycle into a
 * word of registers, the word written whole with its last lane (hs is a
 * multiple of TSR_ATT_LANES). */
static void pe_att_store_v(float kv[TSR_PE_KV_AW][TSR_ATT_LANES],
                           uint16_t kvh[TSR_PE_KVH_AW][TSR_ATT_LANES],
                           int8_t kvq[TSR_PE_KVQ_AW][TSR_ATT_LANES], uint32_t kvt,
                           const float qkvw[TSR_PE_QKV_VW][TSR_VEC], uint32_t v0, uint32_t va,
                           uint32_t hs, float vs)
{
#pragma HLS INLINE
    float vf[TSR_ATT_LANES] = { 0.0f };
#pragma HLS ARRAY_PARTITION variable=vf type=complete
#if TSR_WITH_KV_F16
    uint16_t vh16[TSR_ATT_LANES] = { 0u };
#pragma HLS ARRAY_PARTITION variable=vh16 type=complete
#endif
#if TSR_WITH_KV_INT8
    int8_t vq[TSR_ATT_LANES] = { 0 };
#pragma HLS ARRAY_PARTITION variable=vq type=complete
#endif
att_store_v:
    for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
        uint32_t vi = v0 + i, vl = i % TSR_ATT_LANES, vw = va + i / TSR_ATT_LANES;
        float v = qkvw[vi / TSR_VEC][vi % TSR_VEC];
att_store_v_lanes:
        for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
            if (l != vl) continue;
#if TSR_WITH_KV_F16
            if (kvt == TSR_KV_F16) vh16[l] = tsr_f16_from_f32(v);
#endif
#if TSR_WITH_KV_INT8
            if (kvt == TSR_KV_INT8) vq[l] = vs != 0.0f ? (int8_t)tsr_round_q8(v / vs) : (int8_t)0;
#endif
            vf[l] = v;
        }
        if (vl == TSR_ATT_LANES - 1u) {
att_store_v_word:
            for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
#if TSR_WITH_KV_F16
                if (kvt == TSR_KV_F16) kvh[vw][l] = vh16[l];
                else
#endif
#if TSR_WITH_KV_INT8
                if (kvt == TSR_KV_INT8) kvq[vw][l] = vq[l];
                else
#endif
                    kv[vw][l] = vf[l];
            }
        }
    }
#if !TSR_WITH_KV_F16
    (void)kvh;
#endif
#if !TSR_WITH_KV_INT8
    (void)kvq;
    (void)vs;
#endif
#if !TSR_WITH_KV_F16 && !TSR_WITH_KV_INT8
    (void)kvt;
#endif
}

/* Store this position's k, v (qkvw from element k0, v0) at local index t:
 * a column of K^T (in t's position tile: hs consecutive words, lane
 * t % TSR_ATT_LANES), a value a cycle, then a row of V, a value a cycle
 * into words written whole, in precision kvt (tsr_cy_att_store).
 * int8: first the two vectors' max |v| (their scales into kvs at sb + t,
 * the K scale, and sb + sl + t, the V scale), then q = round(v / scale). */
static void pe_att_store(float kv[TSR_PE_KV_AW][TSR_ATT_LANES],
                         uint16_t kvh[TSR_PE_KVH_AW][TSR_ATT_LANES],
                         int8_t kvq[TSR_PE_KVQ_AW][TSR_ATT_LANES], float kvs[TSR_KVS_DIM],
                         uint32_t kvt, const float qkvw[TSR_PE_QKV_VW][TSR_VEC], uint32_t kbw,
                         uint32_t vbw, uint32_t sb, uint32_t k0, uint32_t v0, uint32_t hs,
                         uint32_t slw, uint32_t hsw, uint32_t t)
{
#pragma HLS INLINE
    uint32_t tl = t % TSR_ATT_LANES;
    /* K^T row 0's word in t's tile (row i's: ka + i) */
    uint32_t ka = kbw + TSR_MUL_SMALL(hs, t / TSR_ATT_LANES, TSR_BITS(TSR_MAX_SEQ / TSR_ATT_LANES));
    uint32_t va = vbw + TSR_MUL_SMALL(hsw, t, TSR_BITS(TSR_MAX_SEQ));   /* V row t */
    float ks = 0.0f, vs = 0.0f;
#if TSR_WITH_KV_F16
    /* a platform's fast path: both vectors encoded and stored, the same
     * bits */
    if (kvt == TSR_KV_F16 &&
        TSR_FAST_F16_STORE(kvh, &qkvw[0][0] + k0, &qkvw[0][0] + v0, ka, tl, va, hs))
        return;
#endif
#if TSR_WITH_KV_INT8
    if (kvt == TSR_KV_INT8) {
        float km = 0.0f, vm = 0.0f;
att_store_amax:
        for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=TSR_D_CMP
            uint32_t ki = k0 + i, vi = v0 + i;
            float a = fabsf(qkvw[ki / TSR_VEC][ki % TSR_VEC]), b = fabsf(qkvw[vi / TSR_VEC][vi % TSR_VEC]);
            km = a > km ? a : km;
            vm = b > vm ? b : vm;
        }
        ks = km / 127.0f;
        vs = vm / 127.0f;
        kvs[sb + t] = ks;
        kvs[sb + slw * TSR_ATT_LANES + t] = vs;
    }
#else
    (void)kvs;
    (void)sb;
    (void)slw;
#endif
    pe_att_store_k(kv, kvh, kvq, kvt, qkvw, k0, ka, tl, hs, ks);
    pe_att_store_v(kv, kvh, kvq, kvt, qkvw, v0, va, hs, vs);
}

/* KV element (w, l) of the cache in precision kvt, as fp32: the fp32
 * value, the half decoded, or the int8 value (its scale is applied
 * outside). */
static float kv_elem(const float kv[TSR_PE_KV_AW][TSR_ATT_LANES],
                     const uint16_t kvh[TSR_PE_KVH_AW][TSR_ATT_LANES],
                     const int8_t kvq[TSR_PE_KVQ_AW][TSR_ATT_LANES], uint32_t kvt, uint32_t w,
                     uint32_t l)
{
#pragma HLS INLINE
#if TSR_WITH_KV_F16
    if (kvt == TSR_KV_F16) return tsr_f32_from_f16(kvh[w][l]);
#else
    (void)kvh;
#endif
#if TSR_WITH_KV_INT8
    if (kvt == TSR_KV_INT8) return (float)kvq[w][l];
#else
    (void)kvq;
#endif
    (void)kvt;
    return kv[w][l];
}

/* Query head slice q[q0, q0 + hs) of qkvw into coef, one a cycle: the
 * scores' coefficients. */
static void pe_att_qcopy(const float qkvw[TSR_PE_QKV_VW][TSR_VEC], float coef[TSR_ATT_ACC],
                         uint32_t q0, uint32_t hs)
{
#pragma HLS INLINE
att_qcopy:
    for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
        uint32_t qi = q0 + i;
        coef[i] = qkvw[qi / TSR_VEC][qi % TSR_VEC];
    }
}

/* The attention PE's multiply-add lanes, shared by the scores and the
 * weighted sum of V (one instance a PE: ALLOCATION in pe_att; both calls
 * bind the same kv, coef and acc), so a PE has TSR_ATT_LANES fp32
 * multiply-adds, not twice that.  For o < no, over the words w of j < nj,
 * TSR_ATT_LANES lanes a cycle:
 *   acc[o % parts][j] = (o < parts ? 0 : acc[o % parts][j])
 *                       + coef[o] * kv[basew + o * stridew + w * stepw][l]
 * (j = w * TSR_ATT_LANES + l).  parts 1: o ascending into one accumulator
 * per j (run.c's order), each pass over the words padded to TSR_FADD_LAT
 * so an accumulator is added to once every TSR_FADD_LAT cycles; parts
 * TSR_ATT_PARTS > 1: o into partial o % parts, each added to once every
 * parts passes, so nothing is padded.  Scores: o a head dimension, j a
 * position (K^T rows in position tiles: stridew 1, stepw hs); values: o
 * a position, j a head dimension (V rows: stridew hs / TSR_ATT_LANES,
 * stepw 1). */
static void pe_att_mac(const float kv[TSR_PE_KV_AW][TSR_ATT_LANES],
                       const uint16_t kvh[TSR_PE_KVH_AW][TSR_ATT_LANES],
                       const int8_t kvq[TSR_PE_KVQ_AW][TSR_ATT_LANES], uint32_t kvt, uint32_t basew,
                       uint32_t stridew, uint32_t stepw, const float coef[TSR_ATT_ACC], uint32_t no,
                       uint32_t nj, uint32_t parts, float acc[TSR_ATT_PARTS][TSR_ATT_ACC])
{
#pragma HLS INLINE off
#pragma HLS ARRAY_RESHAPE variable=kv type=complete dim=2
#if TSR_WITH_KV_F16
#pragma HLS ARRAY_RESHAPE variable=kvh type=complete dim=2
#endif
#if TSR_WITH_KV_INT8
#pragma HLS ARRAY_RESHAPE variable=kvq type=complete dim=2
#endif
    /* pe_att's partitioning of acc, stated where this function's loops
     * index it (docs/hls-flow.md, "Partitions where the loops are") */
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=acc type=cyclic factor=TSR_ATT_LANES dim=2
    uint32_t nw = (nj + TSR_ATT_LANES - 1u) / TSR_ATT_LANES, nwp = parts > 1u ? nw : tsr_cy_padded(nw);
    /* a platform's fast path (unpadded, the same sums): no steps left */
    if (TSR_FAST_ATT_MAC(kv, kvh, kvq, kvt, basew, stridew, stepw, coef, no, nj, parts, acc))
        nwp = 0;
    /* ob: row o's first word; wa: its word w (running sums, no multiplier) */
    uint32_t o = 0, w = 0, r = 0, ob = basew, wa = basew;
    uint32_t steps = TSR_MUL_SMALL(no, nwp, TSR_BITS(TSR_ATT_ACC));
att_mac_steps:
    for (uint32_t k = 0; k < steps; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_ATT_STEPS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter dependent=true distance=TSR_FADD_LAT
        if (w < nw) {
            float sv = coef[o];
att_mac_lanes:
            for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
                uint32_t jj = w * TSR_ATT_LANES + l;
                if (jj < nj) {
                    float prev = o < parts ? 0.0f : acc[r][jj];
                    acc[r][jj] = prev + sv * kv_elem(kv, kvh, kvq, kvt, wa, l);
                }
            }
        }
        wa += stepw;
        if (++w == nwp) {
            w = 0;
            o++;
            ob += stridew;
            wa = ob;
            r = r + 1u == parts ? 0u : r + 1u;
        }
    }
}

/* The scores of a query head from acc (pe_att_mac over K^T): score t =
 * (the sum of t's partials, a tree over TSR_ATT_PARTS; int8: times t's K
 * scale kvs[ks0 + t]) / sqrt(head_size), one position a cycle, into att
 * from word a0w; then their max (*am), TSR_ATT_LANES a cycle. */
static void pe_att_scale_max(const float acc[TSR_ATT_PARTS][TSR_ATT_ACC],
                             float att[TSR_PE_ATT_AW][TSR_ATT_LANES], float *am, uint32_t hs,
                             uint32_t nl, uint32_t a0w, float sqrt_hs,
                             const float kvs[TSR_KVS_DIM], uint32_t ks0, uint32_t kvt)
{
#pragma HLS INLINE
    if (TSR_FAST_ATT_SCALE_MAX(&acc[0][0],
                               TSR_WITH_KV_INT8 && kvt == TSR_KV_INT8 ? &kvs[ks0] : NULL, sqrt_hs,
                               &att[a0w][0], nl, am))
        return;
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
#if TSR_WITH_KV_INT8
        if (kvt == TSR_KV_INT8) v[0] = v[0] * kvs[ks0 + t];
#endif
        att[a0w + t / TSR_ATT_LANES][t % TSR_ATT_LANES] = v[0] / sqrt_hs;
    }
#if !TSR_WITH_KV_INT8
    (void)kvs;
    (void)ks0;
    (void)kvt;
#endif
    float lm[TSR_ATT_LANES];
#pragma HLS ARRAY_PARTITION variable=lm type=complete
att_max_init:
    for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
        lm[l] = -FLT_MAX;
    }
    uint32_t nw = (nl + TSR_ATT_LANES - 1u) / TSR_ATT_LANES;
att_max_words:
    for (uint32_t w = 0; w < nw; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=TSR_D_CMP
att_max_lanes:
        for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
            uint32_t t = w * TSR_ATT_LANES + l;
            if (t < nl && att[a0w + w][l] > lm[l]) lm[l] = att[a0w + w][l];
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

/* The sum of a query head's nl exponentials (att from word a0w) over
 * TSR_PE_SUM_LANES partials, one element a cycle, then the pairwise
 * levels: tsr_reduce_sum's order with fewer partials (the same when
 * TSR_SUM_LANES is 1).  The partials are a rotating chain of registers, as
 * ops.c reduce's: element i adds into the head and every partial moves up
 * one, so partial i mod L is always the head when element i comes, and a
 * sum is read again L elements later: TSR_PE_SUM_LANES x TSR_PE_SUM_II >=
 * TSR_FADD_LAT cycles (checked below), by the chain's length, with no
 * DEPENDENCE claim on registers.  After n elements the partials stand
 * rotated by n mod L; the pairwise levels add the same pairs whatever the
 * rotation (ops.c reduce), so they run on the chain as it is. */
TSR_STATIC_CHECK(pe_sum_chain_covers_fadd, TSR_PE_SUM_LANES * TSR_PE_SUM_II >= TSR_FADD_LAT);
static float pe_reduce_sum(const float att[TSR_PE_ATT_AW][TSR_ATT_LANES], uint32_t a0w, uint32_t n)
{
    /* its own instance (one call site: one a PE), so the ALLOCATION below
     * limits its levels' adds and nothing of pe_att's (an INLINE function's
     * pragmas dissolve into the caller: the seventh HLS review, F4) */
#pragma HLS INLINE off
#pragma HLS ARRAY_PARTITION variable=att type=complete dim=2
    float part[TSR_PE_SUM_LANES];
#pragma HLS ARRAY_PARTITION variable=part type=complete
pe_sum_zero:
    for (uint32_t k = 0; k < TSR_PE_SUM_LANES; k++) {
#pragma HLS UNROLL
        part[k] = 0.0f;
    }
pe_sum_pass:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=TSR_LIT_PE_SUM_II
        float h = part[0] + att[a0w + i / TSR_ATT_LANES][i % TSR_ATT_LANES];
#if TSR_PE_SUM_LANES > 1
pe_sum_rotate:
        for (uint32_t k = 0; k < TSR_PE_SUM_LANES - 1u; k++) {
#pragma HLS UNROLL
            part[k] = part[k + 1u];
        }
#endif
        part[TSR_PE_SUM_LANES - 1u] = h;
    }
#if TSR_PE_SUM_LANES > 1
    /* the pairwise levels fully unrolled, so every index is a constant (a
     * pipelined loop over a run-time j on the partitioned registers would
     * put a mux on each read and a recurrence HLS cannot rule out: II of
     * the fadd's latency, the fifth HLS review), on one adder issuing an
     * add a cycle: a level's adds in order, as tsr_cy_sum_s charges them */
#pragma HLS ALLOCATION operation instances=fadd limit=1
pe_sum_level:
    for (uint32_t half = TSR_PE_SUM_LANES / 2u; half >= 1u; half /= 2u) {
#pragma HLS UNROLL
pe_sum_level_adds:
        for (uint32_t j = 0; j < TSR_PE_SUM_LANES / 2u; j++) {
#pragma HLS UNROLL
            if (j < half) part[j] += part[j + half];
        }
    }
#endif
    return part[0];
}

/* score t = expf(score t - m) over the nl local positions (att from word
 * a0w), one a cycle; their pe_reduce_sum into *sum. */
static void pe_att_exp(float att[TSR_PE_ATT_AW][TSR_ATT_LANES], uint32_t a0w, uint32_t nl, float m,
                       float *sum)
{
#pragma HLS INLINE
    /* a platform's fast path: no steps left */
    uint32_t ne = TSR_FAST_ATT_EXP(&att[a0w][0], nl, m) ? 0u : nl;
att_exp:
    for (uint32_t t = 0; t < ne; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=att type=inter dependent=false
        uint32_t w = a0w + t / TSR_ATT_LANES, l = t % TSR_ATT_LANES;
        float e = expf(att[w][l] - m);   /* in LUTs: a DSP-free expf per PE */
#pragma HLS BIND_OP variable=e op=fexp impl=fabric
        att[w][l] = e;
    }
    *sum = pe_reduce_sum(att, a0w, nl);
}

/* coef[t] = score t / sum over the nl local positions (one divider), one
 * a cycle: the weighted sum's coefficients; int8: times t's V scale
 * kvs[vs0 + t]. */
static void pe_att_norm(const float att[TSR_PE_ATT_AW][TSR_ATT_LANES], float coef[TSR_ATT_ACC],
                        uint32_t a0w, uint32_t nl, float sum, const float kvs[TSR_KVS_DIM],
                        uint32_t vs0, uint32_t kvt)
{
#pragma HLS INLINE
    if (TSR_FAST_ATT_NORM(&att[a0w][0], TSR_WITH_KV_INT8 && kvt == TSR_KV_INT8 ? &kvs[vs0] : NULL,
                          sum, coef, nl))
        return;
att_norm:
    for (uint32_t t = 0; t < nl; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
        float w = att[a0w + t / TSR_ATT_LANES][t % TSR_ATT_LANES] / sum;
#if TSR_WITH_KV_INT8
        if (kvt == TSR_KV_INT8) w = w * kvs[vs0 + t];
#endif
        coef[t] = w;
    }
#if !TSR_WITH_KV_INT8
    (void)kvs;
    (void)vs0;
    (void)kvt;
#endif
}

/* Head output words [o0w, o0w + hsw) of ao = acc[0] (the weighted sum of V,
 * pe_att_mac), or zeros when the PE holds no position yet (the tree adds
 * them); a word a cycle. */
static void pe_att_out(const float acc[TSR_ATT_PARTS][TSR_ATT_ACC],
                       float ao[TSR_PE_AO_AW][TSR_ATT_LANES], uint32_t o0w, uint32_t hsw, uint32_t nl)
{
#pragma HLS INLINE
att_out_words:
    for (uint32_t w = 0; w < hsw; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
att_out_lanes:
        for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
            ao[o0w + w][l] = nl ? acc[0][w * TSR_ATT_LANES + l] : 0.0f;
        }
    }
}

/* One attention PE's phases (flags) over its nh KV heads, one after
 * another, and per KV head its km query heads: query head (j, hq) uses q
 * slice, scores and output slot h = j * km + hq.  q0, k0, v0: its first
 * head's q, k, v in qkvw; b0w: the (slot, layer) KV blocks' first word
 * (in the array of precision kvt), s0 their first int8 scale; store: this
 * position's k, v go to local index t_store.  All of it on
 * the PE's own memories; one multiply-add datapath (pe_att_mac) for the
 * scores and the values, through one coefficient array. */
static void pe_att(float kv[TSR_PE_KV_AW][TSR_ATT_LANES], uint16_t kvh[TSR_PE_KVH_AW][TSR_ATT_LANES],
                   int8_t kvq[TSR_PE_KVQ_AW][TSR_ATT_LANES], float kvs[TSR_KVS_DIM], uint32_t kvt,
                   const float qkvw[TSR_PE_QKV_VW][TSR_VEC],
                   float att[TSR_PE_ATT_AW][TSR_ATT_LANES], float ao[TSR_PE_AO_AW][TSR_ATT_LANES],
                   float am[TSR_MAX_HEADS], float asum[TSR_MAX_HEADS], uint32_t flags, uint32_t nh,
                   uint32_t km, uint32_t hs, uint32_t slw, uint32_t b0w, uint32_t s0, uint32_t q0,
                   uint32_t k0, uint32_t v0, uint32_t nl, uint32_t store, uint32_t t_store,
                   float sqrt_hs, uint32_t active)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_RESHAPE variable=kv type=complete dim=2
#if TSR_WITH_KV_F16
#pragma HLS ARRAY_RESHAPE variable=kvh type=complete dim=2
#endif
#if TSR_WITH_KV_INT8
#pragma HLS ARRAY_RESHAPE variable=kvq type=complete dim=2
#endif
#pragma HLS ARRAY_PARTITION variable=qkvw type=complete dim=2
#pragma HLS ARRAY_PARTITION variable=att type=complete dim=2
#pragma HLS ARRAY_PARTITION variable=ao type=complete dim=2
#pragma HLS ALLOCATION function instances=pe_att_mac limit=1
    float acc[TSR_ATT_PARTS][TSR_ATT_ACC];
    float coef[TSR_ATT_ACC];
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=acc type=cyclic factor=TSR_ATT_LANES dim=2
#if TSR_ACC_LUT
#pragma HLS BIND_STORAGE variable=acc type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=acc type=ram_2p impl=bram
#endif
#if TSR_COEF_LUT
#pragma HLS BIND_STORAGE variable=coef type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=coef type=ram_2p impl=bram
#endif
    if (!active) return;
    /* the per-head offsets as running sums (adders, no multiplier): KV
     * head j's block at kbw (int8: its K scales at sb, then its V scales),
     * its query head h's q at qh, scores at aw, output at ow */
    uint32_t hsw = hs / TSR_ATT_LANES, halfw = TSR_MUL_SMALL(slw, hs, TSR_BITS(TSR_MAX_HEAD_SIZE));
    uint32_t kbw = b0w, sb = s0, kj = k0, vj = v0, h = 0, qh = q0, aw = 0, ow = 0;
    uint32_t kmhs = TSR_MUL_SMALL(hs, km, TSR_BITS(TSR_MAX_KV_MUL));
    uint32_t kmslw = TSR_MUL_SMALL(slw, km, TSR_BITS(TSR_MAX_KV_MUL));
    uint32_t kmhsw = TSR_MUL_SMALL(hsw, km, TSR_BITS(TSR_MAX_KV_MUL));
att_heads:
    for (uint32_t j = 0; j < nh; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_HEADS
        uint32_t vbw = kbw + halfw;
        if (flags & TSR_JOB_SCORES) {
            if (store)
                pe_att_store(kv, kvh, kvq, kvs, kvt, qkvw, kbw, vbw, sb, kj, vj, hs, slw, hsw,
                             t_store);
            uint32_t hh = h, qq = qh, a = aw;
att_heads_scores:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                if (nl) {
                    pe_att_qcopy(qkvw, coef, qq, hs);
                    pe_att_mac(kv, kvh, kvq, kvt, kbw, 1u, hs, coef, hs, nl, TSR_ATT_PARTS, acc);
                    pe_att_scale_max(acc, att, &am[hh], hs, nl, a, sqrt_hs, kvs, sb, kvt);
                } else {
                    am[hh] = -FLT_MAX;
                }
                hh++;
                qq += hs;
                a += slw;
            }
        }
        if (flags & TSR_JOB_EXP) {
            uint32_t hh = h, a = aw;
att_heads_exp:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                if (nl) pe_att_exp(att, a, nl, am[hh], &asum[hh]);
                else asum[hh] = 0.0f;
                hh++;
                a += slw;
            }
        }
        if (flags & TSR_JOB_VALUES) {
            uint32_t hh = h, a = aw, o = ow;
att_heads_values:
            for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
                if (nl) {
                    pe_att_norm(att, coef, a, nl, asum[hh], kvs, sb + slw * TSR_ATT_LANES, kvt);
                    pe_att_mac(kv, kvh, kvq, kvt, vbw, hsw, 1u, coef, nl, hs, 1u, acc);
                }
                pe_att_out(acc, ao, o, hsw, nl);
                hh++;
                a += slw;
                o += hsw;
            }
        }
        kbw += halfw + halfw;
        sb += 2u * slw * TSR_ATT_LANES;
        kj += hs;
        vj += hs;
        h += km;
        qh += kmhs;
        aw += kmslw;
        ow += kmhsw;
    }
}

#ifndef __SYNTHESIS__
/* The same phases' cycles, as pe_att's loops charge them (tsr_cycles.h;
 * the emulator's and C simulation's accounting only, TSR_CY). */
static uint32_t att_cycles(uint32_t flags, uint32_t nh, uint32_t km, uint32_t hs, uint32_t nl,
                           uint32_t store, uint32_t kvt)
{
    uint32_t cy = 0;
    if (flags & TSR_JOB_SCORES)
        cy += (store ? tsr_cy_att_store(hs, kvt) : 0u) +
              km * tsr_cy_att_scores(hs, nl, TSR_ATT_PARTS, kvt);
    if (flags & TSR_JOB_EXP) cy += km * tsr_cy_att_exp_s(nl, TSR_PE_SUM_LANES);
    if (flags & TSR_JOB_VALUES) cy += km * tsr_cy_att_values(hs, nl, kvt);
    return nh * cy;
}
#endif

#if TSR_MAX_SPLIT_LEVELS > 0
/* An up step of a KV head group's tree (Q > 1): combine the partner's
 * into its own, the max per query head (TSR_JOB_SCORES), the sum
 * (TSR_JOB_EXP) or the weighted sums (TSR_JOB_VALUES, km x hs values): 9
 * adders, the down steps have none (pe_att_tree_down). */
static void pe_att_tree_up(float am[TSR_MAX_HEADS], const float am_o[TSR_MAX_HEADS],
                           float asum[TSR_MAX_HEADS], const float asum_o[TSR_MAX_HEADS],
                           float ao[TSR_PE_AO_AW][TSR_ATT_LANES],
                           const float ao_o[TSR_PE_AO_AW][TSR_ATT_LANES], uint32_t what,
                           uint32_t km, uint32_t hsw, uint32_t active)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_PARTITION variable=ao type=complete dim=2
#pragma HLS ARRAY_PARTITION variable=ao_o type=complete dim=2
    if (!active) return;
    if (what & TSR_JOB_SCORES) {
att_tree_max:
        for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
#pragma HLS PIPELINE II=1
            float v = am_o[hq];
            am[hq] = v > am[hq] ? v : am[hq];
        }
    } else if (what & TSR_JOB_EXP) {
att_tree_sum:
        for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
#pragma HLS PIPELINE II=1
            asum[hq] = asum[hq] + asum_o[hq];
        }
    } else {
        uint32_t nw = TSR_MUL_SMALL(hsw, km, TSR_BITS(TSR_MAX_KV_MUL));   /* adders, not a DSP */
att_tree_values:
        for (uint32_t w = 0; w < nw; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_AO_AW
#pragma HLS PIPELINE II=1
att_tree_value_lanes:
            for (uint32_t l = 0; l < TSR_ATT_LANES; l++) {
#pragma HLS UNROLL
                ao[w][l] += ao_o[w][l];
            }
        }
    }
}

/* A down step: take the partner's max (TSR_JOB_SCORES) or sum per query
 * head.  Copies only. */
static void pe_att_tree_down(float am[TSR_MAX_HEADS], const float am_o[TSR_MAX_HEADS],
                             float asum[TSR_MAX_HEADS], const float asum_o[TSR_MAX_HEADS],
                             uint32_t what, uint32_t km, uint32_t active)
{
#pragma HLS INLINE off
    if (!active) return;
att_tree_copy:
    for (uint32_t hq = 0; hq < km; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_MUL
#pragma HLS PIPELINE II=1
        if (what & TSR_JOB_SCORES) am[hq] = am_o[hq];
        else asum[hq] = asum_o[hq];
    }
}
#endif

/* ------------------------------------------------------------------------ */
/* PE tasks                                                                   */

/* PE p's share of an attention step: pe_att on its own memories. */
static uint32_t att_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t active,
                       uint32_t k)
{
#pragma HLS INLINE
    (void)k;
    uint32_t nh = st->kv_nh[p], hs = st->hs, slw = st->seq_local / TSR_ATT_LANES, km = st->kv_mul;
    uint32_t kvt = st->cfg.kv_dtype;
    /* block (slot, layer) = job->blk of this PE's KV and (int8) of its
     * scales: CONFIGURE's per-PE block sizes times a bounded index
     * (shift-and-add) */
    uint32_t b0w = TSR_MUL_SMALL(st->kv_blkw[p], job->blk, TSR_BITS(TSR_MAX_SLOTS * TSR_MAX_LAYERS));
    uint32_t s0 = TSR_MUL_SMALL(st->kv_blks[p], job->blk, TSR_BITS(TSR_MAX_SLOTS * TSR_MAX_LAYERS));
    uint32_t pos = job->pos, nl = tsr_att_local_positions(st, p, pos);
    uint32_t store = st->kv_q[p] == (pos & (st->cfg.kv_split - 1u));
    uint32_t q0 = st->kv_q0[p], k0 = st->kv_k0[p], v0 = k0 + st->kv_dim;
    uint32_t run = active && nh != 0;
    pe_att(st->kv[p], st->kvh[p], st->kvq[p], st->kvs[p], kvt, st->qkvw[p], st->att[p], st->ao[p],
           st->am[p], st->asum[p], job->flags, nh, km, hs, slw, b0w, s0, q0, k0, v0, nl, store,
           pos >> st->q_log2, st->sqrt_hs, run);
    return run ? TSR_CY(att_cycles(job->flags, nh, km, hs, nl, store, kvt)) : 0u;
}

/* The group trees (Q > 1, a power of two; a group's PEs are [g Q, g Q +
 * Q), so p % 2s equals the place q % 2s for 2s <= Q).  Up, level s = 2^l:
 * the PE at place q with q % 2s == 0 combines q + s's; down: the PE at q
 * with q % 2s == s takes q - s's, so after log2 Q levels every place holds
 * the root's.  The receivers, at compile time: */
#define TSR_ATT_UP_RECV(p, s)   (((p) & (2u * (s) - 1u)) == 0 && (p) + (s) < TSR_ATT_PES)
#define TSR_ATT_DOWN_RECV(p, s) (((p) & (2u * (s) - 1u)) == (s))

#if TSR_MAX_SPLIT_LEVELS > 0   /* a profile that never splits a head has no trees */

/* Level of stride s (the level loop's literal) up, and down. */
static uint32_t att_up_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t active,
                          uint32_t s)
{
#pragma HLS INLINE
    uint32_t q = st->kv_q[p], km = st->kv_mul;
    uint32_t o = p + s < TSR_ATT_PES ? p + s : p;   /* constant where placed */
    uint32_t run = active && st->kv_nh[p] != 0 && (q & (2u * s - 1u)) == 0 &&
                   q + s < st->cfg.kv_split;
    pe_att_tree_up(st->am[p], st->am[o], st->asum[p], st->asum[o], st->ao[p], st->ao[o], job->flags,
                   km, st->hs / TSR_ATT_LANES, run);
    if (!run) return 0;
    return job->flags & TSR_JOB_SCORES ? TSR_CY(tsr_cy_att_tree_max(km))
           : job->flags & TSR_JOB_EXP  ? TSR_CY(tsr_cy_att_tree_sum(km))
                                       : TSR_CY(tsr_cy_att_tree_values(km, st->hs));
}

static uint32_t att_down_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t active,
                            uint32_t s)
{
#pragma HLS INLINE
    uint32_t q = st->kv_q[p], km = st->kv_mul;
    uint32_t o = p >= s ? p - s : p;                  /* constant where placed */
    uint32_t run = active && st->kv_nh[p] != 0 && (q & (2u * s - 1u)) == s;
    pe_att_tree_down(st->am[p], st->am[o], st->asum[p], st->asum[o], job->flags, km, run);
    if (!run) return 0;
    return job->flags & TSR_JOB_SCORES ? TSR_CY(tsr_cy_att_tree_max(km))
                                       : TSR_CY(tsr_cy_att_tree_sum(km));
}
#endif

/* ------------------------------------------------------------------------ */
/* The controller's side                                                      */

#if TSR_ATT_SLR_HOPS > 0
#define TSR_ATT_SLRS_ (TSR_ATT_SLR_HOPS + 1)
#define TSR_COLLECT_SLR_LAT (2 * TSR_ATT_SLR_DELAY)
/* The collect's request and return lines, emptied (att_collect_words). */
static void att_collect_slr_clear(uint32_t rsrc[TSR_ATT_SLR_DELAY], uint32_t row_[TSR_ATT_SLR_DELAY],
                                  uint32_t rin[TSR_ATT_SLR_DELAY],
                                  float cq[TSR_COLLECT_SLR_LAT][TSR_ATT_SLRS_][TSR_VEC],
                                  uint32_t cs[TSR_COLLECT_SLR_LAT], uint32_t cok[TSR_COLLECT_SLR_LAT])
{
#pragma HLS INLINE
att_collect_slr_req_clear:
    for (uint32_t r = 0; r < TSR_ATT_SLR_DELAY; r++) {
#pragma HLS UNROLL
        rsrc[r] = 0;
        row_[r] = 0;
        rin[r] = 0;
    }
att_collect_slr_clear:
    for (uint32_t r = 0; r < TSR_COLLECT_SLR_LAT; r++) {
#pragma HLS UNROLL
        cok[r] = 0;
        cs[r] = 0;
att_collect_slr_clear_slrs:
        for (uint32_t t = 0; t < TSR_ATT_SLRS_; t++) {
#pragma HLS UNROLL
att_collect_slr_clear_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                cq[r][t][l] = 0.0f;
            }
        }
    }
}

/* The collect's word loop: item it's head outputs, word by word, off the
 * attention PEs into xn (dim values, padded to npad; gw words a KV head
 * group), each word's max |.| for the quantizer. */
static void att_collect_words(tsr_kstate *st, uint32_t it, uint32_t dim, uint32_t gw, uint32_t npad)
{
#pragma HLS INLINE
    uint32_t h = 0, k = 0;
    /* Over SLRs, both ways registered (TSR_D_SLR a crossing): the word's
     * request (its attention PE, the word there) goes out to SLR s down a
     * line of registers, s TSR_D_SLR of them; SLR s's mux over its own
     * attention PEs reads the word then and its result comes back down a
     * line entered at stage s TSR_D_SLR, so every word leaves the line
     * TSR_COLLECT_SLR_LAT = 2 TSR_ATT_SLR_DELAY iterations after its
     * request (the nearer SLRs wait as long); then the S:1 mux by SLR 0
     * and the word's outputs as below; TSR_COLLECT_SLR_LAT iterations more
     * (tsr_cy_slr_of: collect). */
    uint32_t rsrc[TSR_ATT_SLR_DELAY], row_[TSR_ATT_SLR_DELAY], rin[TSR_ATT_SLR_DELAY];
#pragma HLS ARRAY_PARTITION variable=rsrc type=complete
#pragma HLS ARRAY_PARTITION variable=row_ type=complete
#pragma HLS ARRAY_PARTITION variable=rin type=complete
    float cq[TSR_COLLECT_SLR_LAT][TSR_ATT_SLRS_][TSR_VEC];
    uint32_t cs[TSR_COLLECT_SLR_LAT], cok[TSR_COLLECT_SLR_LAT];
#pragma HLS ARRAY_PARTITION variable=cq type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=cs type=complete
#pragma HLS ARRAY_PARTITION variable=cok type=complete
    att_collect_slr_clear(rsrc, row_, rin, cq, cs, cok);
    uint32_t nw = npad / TSR_VEC;
att_collect_slr_words:
    for (uint32_t w = 0; w < nw + TSR_COLLECT_SLR_LAT; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_IN_WORDS
#pragma HLS PIPELINE II=1
        uint32_t live = w < nw;
        int in = live && w * TSR_VEC < dim;
        uint32_t hi = in ? h : 0u;   /* past dim: padding, no head */
        uint32_t src = st->kv_pe[hi];
        uint32_t ow = st->kv_ow[hi] + k * (TSR_VEC / TSR_ATT_LANES);   /* CONFIGURE's kv_j x gw */
        float raw[TSR_ATT_SLRS_][TSR_VEC];
#pragma HLS ARRAY_PARTITION variable=raw type=complete dim=0
att_collect_slr_zero:
        for (uint32_t r = 0; r < TSR_ATT_SLRS_; r++) {
#pragma HLS UNROLL
att_collect_slr_zero_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                raw[r][l] = 0.0f;
            }
        }
        /* each SLR's mux over its attention PEs' outputs, for the request
         * that has reached it (SLR 0: this one; SLR s: the line's stage s
         * TSR_D_SLR - 1) */
att_collect_slr_mux:
        for (uint32_t p = 0; p < TSR_ATT_PES; p++) {
#pragma HLS UNROLL
            const uint32_t sp = TSR_SLR_OF(p), rk = sp ? sp * TSR_D_SLR - 1u : 0u;
            uint32_t qin = sp ? rin[rk] : (uint32_t)in, qsrc = sp ? rsrc[rk] : src;
            uint32_t qow = sp ? row_[rk] : ow;
            if (qin && p == qsrc) {
att_collect_slr_mux_lanes:
                for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                    raw[sp][l] = st->ao[p][qow + l / TSR_ATT_LANES][l % TSR_ATT_LANES];
                }
            }
        }
        /* the word out of the last stage, S:1 by its PE's SLR: w's of
         * TSR_COLLECT_SLR_LAT iterations ago */
        const uint32_t cl = TSR_COLLECT_SLR_LAT - 1u;
        uint32_t ok = cok[cl], wo = w - TSR_COLLECT_SLR_LAT, so = cs[cl];
        float m = 0.0f;
att_collect_slr_out:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            float v = cq[cl][so][l];
            if (ok) st->cv[it][TSR_CV_XN + wo * TSR_VEC + l] = v;
            float a = fabsf(v);
            m = a > m ? a : m;
        }
        if (ok) st->wmax[it][wo] = m;
        /* every stage one on; SLR s's read enters its line at stage s
         * TSR_D_SLR (its way back), SLR 0's at the first */
att_collect_slr_shift:
        for (uint32_t r = TSR_COLLECT_SLR_LAT - 1u; r > 0u; r--) {
#pragma HLS UNROLL
att_collect_slr_shift_slrs:
            for (uint32_t t = 0; t < TSR_ATT_SLRS_; t++) {
#pragma HLS UNROLL
att_collect_slr_shift_lanes:
                for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                    cq[r][t][l] = t > 0u && r == t * TSR_D_SLR ? raw[t][l] : cq[r - 1u][t][l];
                }
            }
            cs[r] = cs[r - 1u];
            cok[r] = cok[r - 1u];
        }
att_collect_slr_head_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            cq[0][0][l] = raw[0][l];
        }
        cs[0] = in ? TSR_SLR_OF(src) : 0u;
        cok[0] = live;
        /* the request one stage further out */
att_collect_slr_req_shift:
        for (uint32_t r = TSR_ATT_SLR_DELAY - 1u; r > 0u; r--) {
#pragma HLS UNROLL
            rsrc[r] = rsrc[r - 1u];
            row_[r] = row_[r - 1u];
            rin[r] = rin[r - 1u];
        }
        rsrc[0] = src;
        row_[0] = ow;
        rin[0] = (uint32_t)in;
        if (in && ++k == gw) {
            k = 0;
            h++;
        }
    }
#undef TSR_ATT_SLRS_
#undef TSR_COLLECT_SLR_LAT
}
#else
/* The collect's word loop: item it's head outputs, word by word, off the
 * attention PEs into xn (dim values, padded to npad; gw words a KV head
 * group), each word's max |.| for the quantizer. */
static void att_collect_words(tsr_kstate *st, uint32_t it, uint32_t dim, uint32_t gw, uint32_t npad)
{
#pragma HLS INLINE
    uint32_t h = 0, k = 0;
att_collect_words:
    for (uint32_t w = 0; w < npad / TSR_VEC; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_IN_WORDS
#pragma HLS PIPELINE II=1
        int in = w * TSR_VEC < dim;
        uint32_t hi = in ? h : 0u;   /* past dim: padding, no head */
        uint32_t src = st->kv_pe[hi];
        uint32_t ow = st->kv_ow[hi] + k * (TSR_VEC / TSR_ATT_LANES);   /* CONFIGURE's kv_j x gw */
        float m = 0.0f;
att_collect_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            float v = in ? st->ao[src][ow + l / TSR_ATT_LANES][l % TSR_ATT_LANES] : 0.0f;
            st->cv[it][TSR_CV_XN + w * TSR_VEC + l] = v;
            float a = fabsf(v);
            m = a > m ? a : m;
        }
        st->wmax[it][w] = m;
        if (in && ++k == gw) {
            k = 0;
            h++;
        }
    }
}
#endif

/* The head outputs into xn (dim,), the WO GEMV's input: KV head h's words
 * xn[h * qg, (h + 1) * qg), qg = kv_mul * head_size a multiple of TSR_VEC
 * (CONFIGURE checks it), from its group's first PE, at its index among
 * that PE's heads (two attention words a bus word); zeros up to the group
 * padding; each word's max |v| for the quantizer (tsr_mesh_input, ready). */
static void att_collect(tsr_kstate *st, uint32_t it)
{
#pragma HLS INLINE
    uint32_t dim = st->cfg.dim, gw = st->kv_mul * st->hs / TSR_VEC;
    uint32_t npad = ((dim + st->cfg.group - 1u) >> st->g_log2) << st->g_log2;
    TSR_CHARGE(st, TSR_RG_ATT_IO, tsr_cy_att_collect(npad) + TSR_CY_SLR.collect);
    att_collect_words(st, it, dim, gw, npad);
}

/* One tree over every group (up, then, when down, down), each level a
 * step of its receivers at once, charged to ATT_TREE. */
static void att_tree(tsr_kstate *st, tsr_pe_job *job, uint32_t down)
{
#pragma HLS INLINE
#if TSR_MAX_SPLIT_LEVELS > 0
    uint32_t Q = st->cfg.kv_split, worst;
att_tree_up:
    for (uint32_t lvl = 0; lvl < TSR_MAX_SPLIT_LEVELS; lvl++) {
#pragma HLS UNROLL
        const uint32_t s = 1u << lvl;
        if (s < Q) {
            TSR_RUN_PES_WHERE(worst, st, att_up_pe, job, TSR_ATT_PES, st->cfg.att_pes,
                              TSR_ATT_UP_RECV, s);
            TSR_CHARGE(st, TSR_RG_ATT_TREE, worst);
        }
    }
    if (!down) return;
att_tree_down:
    for (uint32_t k = 0; k < TSR_MAX_SPLIT_LEVELS; k++) {
#pragma HLS UNROLL
        const uint32_t lvl = TSR_MAX_SPLIT_LEVELS - 1u - k, s = 1u << lvl;
        if (s < Q) {
            TSR_RUN_PES_WHERE(worst, st, att_down_pe, job, TSR_ATT_PES, st->cfg.att_pes,
                              TSR_ATT_DOWN_RECV, s);
            TSR_CHARGE(st, TSR_RG_ATT_TREE, worst);
        }
    }
#else
    (void)st;
    (void)job;
    (void)down;
#endif
}

/* The work counters of one position's attention: per kv head its k, v
 * in and its query heads broadcast; per query head pos + 1 scores and
 * weighted values, its output back. */
static void att_counts(tsr_kstate *st, uint32_t pos)
{
#pragma HLS INLINE
    uint32_t hs = st->hs;
    (void)hs;
    (void)pos;
    TSR_COUNT(st, fabric_gather_bytes, (uint64_t)st->cfg.n_kv_heads * 8u * hs +
                                   (uint64_t)st->cfg.n_heads * 4u * hs);
    TSR_COUNT(st, fabric_bcast_bytes, (uint64_t)st->cfg.n_kv_heads * st->cfg.kv_split * 4u *
                                  st->kv_mul * hs);
    TSR_COUNT(st, macs, (uint64_t)st->cfg.n_heads * 2u * (pos + 1u) * hs);
    TSR_COUNT(st, attended, (uint64_t)st->cfg.n_heads * (pos + 1u));
}

void tsr_attention(tsr_kstate *st, uint32_t it, uint32_t slot, uint32_t l, uint32_t pos)
{
#pragma HLS INLINE
    tsr_pe_job job = { .slot = slot, .layer = l, .pos = pos, .blk = slot * st->cfg.n_layers + l,
                       .work = 2u * st->cfg.n_heads * (pos + 1u) * st->hs };
    uint32_t worst, split = st->cfg.kv_split > 1u;
    /* Q == 1: one PE per KV head, the whole of run.c's attention in one
     * step; else the three phases, each followed by its tree (the max and
     * the sum up and down, the weighted sums up to the group's root) */
att_phases:
    for (uint32_t ph = 0; ph < (split ? 3u : 1u); ph++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=3
        job.flags = split ? TSR_JOB_SCORES << ph : TSR_JOB_SCORES | TSR_JOB_EXP | TSR_JOB_VALUES;
        TSR_RUN_ATT_PES(worst, st, att_pe, &job);
        TSR_CHARGE(st, TSR_RG_ATTN, worst);
        if (split) att_tree(st, &job, ph < 2u);
    }
    att_collect(st, it);

    att_counts(st, pos);
}

#ifndef __SYNTHESIS__
/* For a platform that schedules attention's steps itself (tsr_ops.h). */
uint32_t tsr_att_step(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t kind, uint32_t s)
{
#pragma HLS INLINE
#if TSR_MAX_SPLIT_LEVELS > 0
    if (kind == TSR_ATT_STEP_UP) return att_up_pe(st, p, job, 1u, s);
    if (kind == TSR_ATT_STEP_DOWN) return att_down_pe(st, p, job, 1u, s);
#endif
    (void)kind;
    return att_pe(st, p, job, 1u, s);
}

void tsr_att_counts(tsr_kstate *st, uint32_t pos)
{
#pragma HLS INLINE
    att_counts(st, pos);
}
#endif
