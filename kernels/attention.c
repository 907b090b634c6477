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
    uint32_t tl = t % TSR_ATT_LANES;
    /* K^T row 0's word in t's tile (row i's: ka + i) */
    uint32_t ka = kbw + TSR_MUL_SMALL(hs, t / TSR_ATT_LANES, TSR_BITS(TSR_MAX_SEQ / TSR_ATT_LANES));
    uint32_t va = vbw + TSR_MUL_SMALL(hsw, t, TSR_BITS(TSR_MAX_SEQ));   /* V row t */
    float ks = 0.0f, vs = 0.0f;
#if TSR_WITH_KV_F16 && defined(TSR_EMU)
    /* the emulator encodes the two vectors 16 halves at a time, the same
     * bits (emu/att_rows.c) */
    uint16_t kh[TSR_MAX_HEAD_SIZE], vh[TSR_MAX_HEAD_SIZE];
    if (kvt == TSR_KV_F16) {
        tsr_emu_f16_encode(&qkvw[0][0] + k0, kh, hs);
        tsr_emu_f16_encode(&qkvw[0][0] + v0, vh, hs);
    }
#define KV_F16_OF(x, xh) (xh)
#else
#define KV_F16_OF(x, xh) tsr_f16_from_f32(x)
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
    /* K^T: a lane of hs consecutive words.  The cache's lanes share a
     * memory word (ARRAY_RESHAPE, tessera_top), so each write replaces one
     * lane of a word the others of which hold earlier positions: a
     * read-modify-write on the true dual-port memory (a read port, a write
     * port), on a different word every iteration (ka + i). */
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
        if (kvt == TSR_KV_F16) kvh[ka][tl] = KV_F16_OF(k, kh[i]);
        else
#endif
#if TSR_WITH_KV_INT8
        if (kvt == TSR_KV_INT8) kvq[ka][tl] = ks != 0.0f ? (int8_t)tsr_round_q8(k / ks) : (int8_t)0;
        else
#endif
            kv[ka][tl] = k;
        ka++;
    }
    /* V: row t, hsw whole words (hs is a multiple of TSR_ATT_LANES), a
     * value a cycle into a word of registers, the word written whole with
     * its last lane. */
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
            if (kvt == TSR_KV_F16) vh16[l] = KV_F16_OF(v, vh[i]);
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
#undef KV_F16_OF
#if !TSR_WITH_KV_F16
    (void)kvh;
#endif
#if !TSR_WITH_KV_INT8
    (void)kvq;
    (void)ks;
    (void)vs;
#endif
#if !TSR_WITH_KV_F16 && !TSR_WITH_KV_INT8
    (void)kvt;
#endif
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
    /* pe_att's partitioning of acc, stated where this function's loops
     * index it (docs/hls-flow.md, "Partitions where the loops are") */
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=acc type=cyclic factor=TSR_ATT_LANES dim=2
    uint32_t nw = (nj + TSR_ATT_LANES - 1u) / TSR_ATT_LANES, nwp = parts > 1u ? nw : tsr_cy_padded(nw);
#ifdef TSR_EMU
    /* the emulator's unpadded loops (emu/att_rows.c), the same sums */
    if (kvt == TSR_KV_F16)
        tsr_emu_att_mac_f16(&kvh[basew][0], stridew * TSR_ATT_LANES, stepw * TSR_ATT_LANES, coef,
                            no, nj, parts, &acc[0][0], TSR_ATT_ACC);
    else if (kvt == TSR_KV_INT8)
        tsr_emu_att_mac_i8(&kvq[basew][0], stridew * TSR_ATT_LANES, stepw * TSR_ATT_LANES, coef,
                           no, nj, parts, &acc[0][0], TSR_ATT_ACC);
    else
        tsr_emu_att_mac(&kv[basew][0], stridew * TSR_ATT_LANES, stepw * TSR_ATT_LANES, coef, no,
                        nj, parts, &acc[0][0], TSR_ATT_ACC);
    nwp = 0;
#endif
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
    /* pe_att's partitioning of acc, stated where this function's loops
     * index it (docs/hls-flow.md, "Partitions where the loops are") */
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=acc type=cyclic factor=TSR_ATT_LANES dim=2
#if defined(TSR_EMU) && TSR_ATT_PARTS == 1
    /* the emulator's vector loop, the same values and max (emu/att_rows.c) */
    const float *ks = NULL;
#if TSR_WITH_KV_INT8
    if (kvt == TSR_KV_INT8) ks = &kvs[ks0];
#endif
    (void)hs;
    *am = tsr_emu_att_scale_max(&acc[0][0], ks, sqrt_hs, &att[a0w][0], nl);
    return;
#endif
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
#ifdef TSR_EMU
    /* the emulator's vector exponentials, the same values (emu/vexpf.c) */
    tsr_emu_exp_shifted(&att[a0w][0], nl, m);
    *sum = pe_reduce_sum(att, a0w, nl);
    return;
#endif
att_exp:
    for (uint32_t t = 0; t < nl; t++) {
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
#ifdef TSR_EMU
    /* the emulator's vector loop, the same values (emu/att_rows.c) */
    const float *vs = NULL;
#if TSR_WITH_KV_INT8
    if (kvt == TSR_KV_INT8) vs = &kvs[vs0];
#endif
    tsr_emu_att_norm(&att[a0w][0], vs, sum, coef, nl);
    return;
#endif
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
    /* pe_att's partitioning of acc, stated where this function's loops
     * index it (docs/hls-flow.md, "Partitions where the loops are") */
#pragma HLS ARRAY_PARTITION variable=acc type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=acc type=cyclic factor=TSR_ATT_LANES dim=2
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

/* Positions 0..pos that PE p's place q in its group holds: those t <= pos
 * with t % Q == q (Q a power of two: pos = (pos >> log2 Q) Q + (pos & (Q -
 * 1))). */
static uint32_t local_positions(const tsr_kstate *st, uint32_t p, uint32_t pos)
{
    return (pos >> st->q_log2) + (st->kv_q[p] <= (pos & (st->cfg.kv_split - 1u)) ? 1u : 0u);
}

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
    uint32_t pos = job->pos, nl = local_positions(st, p, pos);
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

#ifdef TSR_EMU
/* What the QKV gather latches word by word into attention PE p's copy
 * (mesh.c), as far as it reads it: its heads' q slices, and this
 * position's k, v if p stores it. */
static void latch_pe(tsr_kstate *st, uint32_t p, uint32_t it, uint32_t pos)
{
    uint32_t dim = st->cfg.dim, kvd = st->kv_dim, hs = st->hs, qg = st->kv_mul * hs;
    const float *qkv = st->cv[it] + TSR_CV_QKV;
    uint32_t h0 = st->kv_h0[p], nh = st->kv_nh[p];
    float *w = &st->qkvw[p][0][0];
    if (nh == 0) return;
    for (uint32_t i = h0 * qg; i < (h0 + nh) * qg; i++) w[i] = qkv[i];
    if (st->kv_q[p] != (pos & (st->cfg.kv_split - 1u))) return;
    for (uint32_t i = dim + h0 * hs; i < dim + (h0 + nh) * hs; i++) {
        w[i] = qkv[i];
        w[kvd + i] = qkv[kvd + i];
    }
}

void tsr_att_latch_qkv(tsr_kstate *st, uint32_t it, uint32_t pos)
{
    for (uint32_t p = 0; p < st->cfg.att_pes; p++) latch_pe(st, p, it, pos);
}
#endif

/* The head outputs into xn (dim,), the WO GEMV's input: KV head h's words
 * xn[h * qg, (h + 1) * qg), qg = kv_mul * head_size a multiple of TSR_VEC
 * (CONFIGURE checks it), from its group's first PE, at its index among
 * that PE's heads (two attention words a bus word); zeros up to the group
 * padding; each word's max |v| for the quantizer (tsr_mesh_input, ready). */
static void att_collect(tsr_kstate *st, uint32_t it)
{
    uint32_t dim = st->cfg.dim, gw = st->kv_mul * st->hs / TSR_VEC, h = 0, k = 0;
    uint32_t npad = ((dim + st->cfg.group - 1u) >> st->g_log2) << st->g_log2;
    TSR_CHARGE(st, TSR_RG_ATT_IO, tsr_cy_att_collect(npad));
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

/* One tree over every group (up, then, when down, down), each level a
 * step of its receivers at once, charged to ATT_TREE. */
static void att_tree(tsr_kstate *st, tsr_pe_job *job, uint32_t down)
{
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

#if TSR_EMU_PASS
/* ------------------------------------------------------------------------ */
/* The emulator's attention of a whole pass                                   */
/*
 * tsr_attention item after item runs, per item, each phase and tree level
 * as one step over every attention PE.  A KV head group's PEs [u Q, u Q +
 * Q) touch only their own memories and each other's (the trees), so here
 * the worker pool takes a group at a time and runs, for every item in
 * order, that group's share of the same steps: the latch of the item's q
 * | k | v, each phase on its PEs, the tree levels, the collect of its
 * heads' outputs.  The same PE tasks in the same order on the same
 * memories: bit-identical.  Each step's cycles are the slowest of the
 * group's PEs, kept per (group, item, step); the caller charges each
 * item's steps the slowest over the groups, as tsr_attention does (the
 * maximum of maxima).  TSR_SERIAL_PES builds, whose steps charge sums,
 * keep tsr_attention.
 */

typedef struct att_pass {
    tsr_kstate     *st;
    const tsr_item *items;
    uint32_t        nx, layer;
} att_pass;

/* Group u's outputs for item it into xn: its KV heads' words (as
 * att_collect) and their maxima. */
static void unit_collect(tsr_kstate *st, uint32_t u, uint32_t it)
{
    uint32_t gw = st->kv_mul * st->hs / TSR_VEC, p0 = u * st->cfg.kv_split;
    for (uint32_t h = 0; h < st->cfg.n_kv_heads; h++) {
        if (st->kv_pe[h] != p0) continue;
        for (uint32_t k = 0; k < gw; k++) {
            uint32_t w = h * gw + k, ow = st->kv_ow[h] + k * (TSR_VEC / TSR_ATT_LANES);
            float m = 0.0f;
            for (uint32_t l = 0; l < TSR_VEC; l++) {
                float v = st->ao[p0][ow + l / TSR_ATT_LANES][l % TSR_ATT_LANES];
                st->cv[it][TSR_CV_XN + w * TSR_VEC + l] = v;
                float a = fabsf(v);
                m = a > m ? a : m;
            }
            st->wmax[it][w] = m;
        }
    }
}

/* Ask for what group u's PEs read of item it's KV cache in layer l: per
 * head the position tiles of its first nl positions and its first nl V
 * rows, two contiguous runs (int8: and their scales), at most
 * TSR_EMU_PREFETCH_MAX bytes a PE (the first positions; the L2 also holds
 * the item being summed).  Each is a few KB to a few tens of KB (at
 * position 80, head_size 64, fp32: 20 KB), too short for the hardware
 * prefetchers to run far ahead.  No value changes. */
static void unit_prefetch(const tsr_kstate *st, uint32_t u, const tsr_item *it, uint32_t l)
{
    uint32_t Q = st->cfg.kv_split, hs = st->hs, slw = st->seq_local / TSR_ATT_LANES;
    uint32_t blk = it->slot * st->cfg.n_layers + l, kvt = st->cfg.kv_dtype;
    /* bytes of an element, and of a word (TSR_ATT_LANES of them) */
    size_t eb = kvt == TSR_KV_F16 ? 2u : kvt == TSR_KV_INT8 ? 1u : 4u, wb = eb * TSR_ATT_LANES;
    for (uint32_t p = u * Q; p < u * Q + Q; p++) {
        const char *base = kvt == TSR_KV_F16    ? (const char *)st->kvh[p]
                           : kvt == TSR_KV_INT8 ? (const char *)st->kvq[p]
                                                : (const char *)st->kv[p];
        uint32_t nh = st->kv_nh[p], nl = local_positions(st, p, it->pos);
        if (nh == 0) continue;
        size_t per_pos = 2u * hs * eb * nh;   /* a position's K and V, all its heads */
        if ((size_t)nl * per_pos > TSR_EMU_PREFETCH_MAX)
            nl = (uint32_t)(TSR_EMU_PREFETCH_MAX / per_pos);
        uint32_t nlw = (nl + TSR_ATT_LANES - 1u) / TSR_ATT_LANES;
        size_t kw = (size_t)st->kv_blkw[p] * blk, sb = (size_t)st->kv_blks[p] * blk;
        for (uint32_t j = 0; j < nh; j++) {
            tsr_emu_prefetch_runs(base + kw * wb, 1u, 0u, (size_t)nlw * hs * wb);   /* K^T tiles */
            tsr_emu_prefetch_runs(base + (kw + (size_t)slw * hs) * wb, 1u, 0u,
                                  (size_t)nl * hs / TSR_ATT_LANES * wb);       /* V rows */
            if (kvt == TSR_KV_INT8) {
                tsr_emu_prefetch_runs(st->kvs[p] + sb, 2u, (size_t)slw * TSR_ATT_LANES * 4u,
                                      nl * 4u);   /* the K and the V scales */
            }
            kw += 2u * (size_t)slw * hs;
            sb += 2u * (size_t)slw * TSR_ATT_LANES;
        }
    }
}

/* Group u's steps for every item of the pass (a worker pool item). */
static void unit_pass(void *ctx, uint32_t u)
{
    const att_pass *a = ctx;
    tsr_kstate *st = a->st;
    uint32_t Q = st->cfg.kv_split, p0 = u * Q, split = Q > 1u;
    /* item 0's cache at once (nothing runs ahead of it), then, while
     * each item is summed, the next one's: in 6 interleaved rounds of
     * `tessera bench --batch 4` on stories110M (with the fused inputs of
     * forward.c), attention took about a quarter less time, and 4
     * sequences went from 2.86x to 3.03x the single sequence's tokens/s */
    unit_prefetch(st, u, &a->items[0], a->layer);
    for (uint32_t b = 0; b < a->nx; b++) {
        const tsr_item *it = &a->items[b];
        /* the next item's cache, unless it is this one's (a prompt block) */
        if (b + 1u < a->nx && a->items[b + 1u].slot != it->slot)
            unit_prefetch(st, u, &a->items[b + 1u], a->layer);
        tsr_pe_job job = { .slot = it->slot, .layer = a->layer, .pos = it->pos,
                           .blk = it->slot * st->cfg.n_layers + a->layer };
        uint32_t *cy = st->emu_att_cy[u][b], k = 0;
        for (uint32_t p = p0; p < p0 + Q; p++) latch_pe(st, p, b, it->pos);
        for (uint32_t ph = 0; ph < (split ? 3u : 1u); ph++) {
            job.flags = split ? TSR_JOB_SCORES << ph : TSR_JOB_SCORES | TSR_JOB_EXP | TSR_JOB_VALUES;
            uint32_t worst = 0;
            for (uint32_t p = p0; p < p0 + Q; p++) {
                uint32_t c = att_pe(st, p, &job, 1u, 0u);
                worst = c > worst ? c : worst;
            }
            cy[k++] = worst;
#if TSR_MAX_SPLIT_LEVELS > 0
            for (uint32_t s = 1; s < Q; s *= 2u) {   /* up */
                worst = 0;
                for (uint32_t p = p0; p < p0 + Q; p++) {
                    uint32_t c = att_up_pe(st, p, &job, 1u, s);
                    worst = c > worst ? c : worst;
                }
                cy[k++] = worst;
            }
            for (uint32_t s = Q / 2u; split && ph < 2u && s >= 1u; s /= 2u) {   /* down */
                worst = 0;
                for (uint32_t p = p0; p < p0 + Q; p++) {
                    uint32_t c = att_down_pe(st, p, &job, 1u, s);
                    worst = c > worst ? c : worst;
                }
                cy[k++] = worst;
            }
#endif
        }
        unit_collect(st, u, b);
    }
}

void tsr_attention_pass(tsr_kstate *st, const tsr_item *items, uint32_t nx, uint32_t l)
{
    uint32_t Q = st->cfg.kv_split, units = st->cfg.att_pes / Q, split = Q > 1u, work = 0;
    uint32_t dim = st->cfg.dim, npad = ((dim + st->cfg.group - 1u) >> st->g_log2) << st->g_log2;
    for (uint32_t b = 0; b < nx; b++) work += 2u * st->cfg.n_heads * (items[b].pos + 1u) * st->hs;
    att_pass a = { st, items, nx, l };
    tsr_emu_pool_share(st->pool, units, work, unit_pass, &a);
    for (uint32_t b = 0; b < nx; b++) {
        /* each step the slowest group's, in tsr_attention's regions */
        uint32_t k = 0;
        for (uint32_t ph = 0; ph < (split ? 3u : 1u); ph++) {
            /* the phase, its up levels, and (max and sum) its down levels */
            uint32_t nsteps = 1u + st->q_log2 + (ph < 2u ? st->q_log2 : 0u);
            for (uint32_t j = 0; j < nsteps; j++, k++) {
                uint32_t worst = 0;
                for (uint32_t u = 0; u < units; u++)
                    worst = st->emu_att_cy[u][b][k] > worst ? st->emu_att_cy[u][b][k] : worst;
                TSR_CHARGE(st, j == 0 ? TSR_RG_ATTN : TSR_RG_ATT_TREE, worst);
            }
        }
        /* att_collect's charge, and the padding words past dim */
        TSR_CHARGE(st, TSR_RG_ATT_IO, tsr_cy_att_collect(npad));
        for (uint32_t w = (dim + TSR_VEC - 1u) / TSR_VEC; w < npad / TSR_VEC; w++) {
            for (uint32_t i = 0; i < TSR_VEC; i++) st->cv[b][TSR_CV_XN + w * TSR_VEC + i] = 0.0f;
            st->wmax[b][w] = 0.0f;
        }
        att_counts(st, items[b].pos);
    }
}
#endif
