/*
 * attention.c - multi-head attention with a stationary KV cache (GQA).
 *
 *   controller k, v (kv_dim,) --send head slice--> owner PE of (layer, kv head)
 *        store at pos in its K^T (head_size, seq_len) / V (seq_len, head_size)
 *   controller q (dim,) --broadcast the kv_mul query heads--> owner PE
 *        per query head: scores over 0..pos -> softmax -> weighted sum of V
 *   owner PE --head outputs (head_size,)--> controller xb (dim,)
 *
 * Owner of unit u = tsr_lay_kv_unit(l, h): PE tsr_lay_kv_pe(u % P)
 * (tsr_layout.h).  Each owner writes only its own cache, its own att
 * scratch and its own heads' slices of xb, so the emulator runs the owners
 * on its workers.
 */
#include <math.h>

#include "tsr_hls.h"

/* Attention of the query heads of kv head hk at layer l, on its owner PE. */
static void attn_kv_head(tsr_kstate *st, uint32_t slot, uint32_t l, uint32_t pos, uint32_t hk)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t hs = tsr_lay_head_size(c), P = tsr_lay_pes(c);
    uint32_t kv_mul = c->n_heads / c->n_kv_heads, block = tsr_lay_kv_block(c);
    float sqrt_hs = sqrtf((float)hs);
    uint32_t u = tsr_lay_kv_unit(c, l, hk), p = tsr_lay_kv_pe(c, u % P), j = u / P;
    tsr_pe *pe = TSR_PE(st, p);
    uint32_t base = st->kv_off[p] + (slot * tsr_lay_kv_units(c, p) + j) * 2u * block;
    uint32_t seq = c->seq_len;
    float *kc = pe->f32 + base;           // (head_size, seq_len): K transposed
    float *vc = kc + block;               // (seq_len, head_size)

    /* store this token's key (a column of K^T) and value (a row of V) */
attn_store:
    for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
        kc[(uint64_t)i * seq + pos] = st->k[hk * hs + i];
        vc[(uint64_t)pos * hs + i] = st->v[hk * hs + i];
    }

attn_q_heads:
    for (uint32_t hq = 0; hq < kv_mul; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEADS
        uint32_t h = hk * kv_mul + hq;
        const float *qh = st->q + h * hs;   // (head_size,)
        float *xbh = st->xb + h * hs;       // (head_size,)
        float *att = pe->att;               // (pos + 1,)
        uint32_t n = pos + 1u;
        /* scores: att[t] = (sum over i ascending of q[i] * K[t][i]) / sqrt(hs),
         * accumulated a row of K^T at a time, so the positions are
         * independent lanes and each score keeps its own order */
attn_score_zero:
        for (uint32_t t = 0; t < n; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
            att[t] = 0.0f;
        }
attn_score_dims:
        for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
            float qi = qh[i];
            const float *ki = kc + (uint64_t)i * seq;   // (pos + 1,) of row i of K^T
attn_score_pos:
            for (uint32_t t = 0; t < n; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
                att[t] += qi * ki[t];
            }
        }
attn_score_scale:
        for (uint32_t t = 0; t < n; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
#pragma HLS PIPELINE II=1
            att[t] = att[t] / sqrt_hs;
        }
        tsr_softmax(att, n);

attn_zero:
        for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
            xbh[i] = 0.0f;
        }
attn_values:
        for (uint32_t tt = 0; tt < n; tt++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
            float a = att[tt];
            const float *vt = vc + (uint64_t)tt * hs;   // (head_size,)
attn_axpy:
            for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
                xbh[i] += a * vt[i];
            }
        }
    }
}

typedef struct attn_job {
    tsr_kstate *st;
    uint32_t    slot, l, pos;
} attn_job;

/* All kv heads of layer j->l whose owner PE is in PEs [p0, p1). */
static void attn_pes(const attn_job *j, uint32_t p0, uint32_t p1)
{
    const tsr_kconfig *c = &j->st->cfg;
    uint32_t P = tsr_lay_pes(c);
attn_kv_heads:
    for (uint32_t hk = 0; hk < c->n_kv_heads; hk++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_HEADS
        uint32_t p = tsr_lay_kv_pe(c, tsr_lay_kv_unit(c, j->l, hk) % P);
        if (p >= p0 && p < p1) attn_kv_head(j->st, j->slot, j->l, j->pos, hk);
    }
}

#ifdef TSR_EMU
/* Emulator worker w of nw: the owners in its PE block. */
static void attn_task(void *ctx, uint32_t w, uint32_t nw)
{
    const attn_job *j = ctx;
    uint32_t P = tsr_lay_pes(&j->st->cfg);
    attn_pes(j, w * P / nw, (w + 1u) * P / nw);
}
#endif

void tsr_attention(tsr_kstate *st, uint32_t slot, uint32_t l, uint32_t pos)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t hs = tsr_lay_head_size(c), P = tsr_lay_pes(c);
    uint32_t kv_mul = c->n_heads / c->n_kv_heads;
    tsr_kwork_attention(c, pos, &st->cnt.work);   /* cycle model: busiest PE's work */
    attn_job j;
    j.st = st;
    j.slot = slot;
    j.l = l;
    j.pos = pos;
#ifdef TSR_EMU
    uint32_t nw = tsr_emu_pool_size(st->pool);
    if (nw > P) nw = P;
    if (nw > 1 && c->n_kv_heads > 1) tsr_emu_pool_run(st->pool, nw, attn_task, &j);
    else
#endif
        attn_pes(&j, 0, P);

    /* fabric traffic and work: per kv head its k, v slices in and its
     * query heads broadcast; per query head pos + 1 scores and weighted
     * values, its output slice back */
    st->cnt.fabric_gather_bytes += (uint64_t)c->n_kv_heads * 8u * hs + (uint64_t)c->n_heads * 4u * hs;
    st->cnt.fabric_bcast_bytes += (uint64_t)c->n_kv_heads * 4u * kv_mul * hs;
    st->cnt.macs += (uint64_t)c->n_heads * 2u * (pos + 1u) * hs;
    st->cnt.attended += (uint64_t)c->n_heads * (pos + 1u);
}
