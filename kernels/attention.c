/*
 * attention.c - multi-head attention with a stationary KV cache (GQA).
 *
 *   controller k, v (kv_dim,) --send head slice--> owner PE of (layer, kv head)
 *        store at pos in its K (seq_len, head_size) / V (seq_len, head_size)
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

/* Positions scored together: independent dot products in flight, so the
 * scores are not one long chain of dependent adds (each score keeps its
 * own order: i ascending, then the division). */
#define TSR_ATT_LANES 8u

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
    float *kc = pe->f32 + base;           // (seq_len, head_size)
    float *vc = kc + block;               // (seq_len, head_size)

    /* store this token's key and value */
attn_store:
    for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
        kc[pos * hs + i] = st->k[hk * hs + i];
        vc[pos * hs + i] = st->v[hk * hs + i];
    }

attn_q_heads:
    for (uint32_t hq = 0; hq < kv_mul; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEADS
        uint32_t h = hk * kv_mul + hq;
        const float *qh = st->q + h * hs;   // (head_size,)
        float *xbh = st->xb + h * hs;       // (head_size,)
        float *att = pe->att;               // (pos + 1,)
        uint32_t n = pos + 1u, t = 0;
attn_score_blocks:
        for (; t + TSR_ATT_LANES <= n; t += TSR_ATT_LANES) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_MAX_SEQ/8
            float s[TSR_ATT_LANES];
attn_block_zero:
            for (uint32_t b = 0; b < TSR_ATT_LANES; b++) s[b] = 0.0f;
            const float *kt = kc + (uint64_t)t * hs;   // (TSR_ATT_LANES, head_size)
attn_block_dot:
            for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
                float qi = qh[i];
attn_block_lanes:
                for (uint32_t b = 0; b < TSR_ATT_LANES; b++) s[b] += qi * kt[(uint64_t)b * hs + i];
            }
attn_block_out:
            for (uint32_t b = 0; b < TSR_ATT_LANES; b++) att[t + b] = s[b] / sqrt_hs;
        }
attn_score_tail:
        for (; t < n; t++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=7
            float score = 0.0f;
attn_dot:
            for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
                score += qh[i] * kc[t * hs + i];
            }
            att[t] = score / sqrt_hs;
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
