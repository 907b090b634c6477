/*
 * attention.c - multi-head attention with a stationary KV cache (GQA).
 *
 *   controller k, v (kv_dim,) --send head slice--> owner PE of (layer, kv head)
 *        store at pos in its K (seq_len, head_size) / V (seq_len, head_size)
 *   controller q (dim,) --broadcast the kv_mul query heads--> owner PE
 *        per query head: scores over 0..pos -> softmax -> weighted sum of V
 *   owner PE --head outputs (head_size,)--> controller xb (dim,)
 *
 * Owner of unit u = l * n_kv_heads + h: PE u % P (tsr_layout.h).  Each owner
 * writes only its own cache, its own att scratch and its own heads' slices
 * of xb.
 */
#include <math.h>

#include "tsr_hls.h"

void tsr_attention(tsr_kstate *st, uint32_t slot, uint32_t l, uint32_t pos)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t hs = tsr_lay_head_size(c), P = tsr_lay_pes(c);
    uint32_t kv_mul = c->n_heads / c->n_kv_heads, block = tsr_lay_kv_block(c);
    float sqrt_hs = sqrtf((float)hs);

attn_kv_heads:
    for (uint32_t hk = 0; hk < c->n_kv_heads; hk++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_HEADS
        uint32_t u = l * c->n_kv_heads + hk, p = u % P, j = u / P;
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
        st->cnt.fabric_gather_bytes += 8u * hs;
        st->cnt.fabric_bcast_bytes += 4u * kv_mul * hs;

attn_q_heads:
        for (uint32_t hq = 0; hq < kv_mul; hq++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEADS
            uint32_t h = hk * kv_mul + hq;
            const float *qh = st->q + h * hs;   // (head_size,)
            float *att = pe->att;               // (pos + 1,)
attn_scores:
            for (uint32_t t = 0; t <= pos; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
                float score = 0.0f;
attn_dot:
                for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
                    score += qh[i] * kc[t * hs + i];
                }
                score /= sqrt_hs;
                att[t] = score;
            }
            tsr_softmax(att, pos + 1u);

            float *xbh = st->xb + h * hs;       // (head_size,)
attn_zero:
            for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
                xbh[i] = 0.0f;
            }
attn_values:
            for (uint32_t t = 0; t <= pos; t++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
                float a = att[t];
attn_axpy:
                for (uint32_t i = 0; i < hs; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HEAD_SIZE
#pragma HLS PIPELINE II=1
                    xbh[i] += a * vc[t * hs + i];
                }
            }
            st->cnt.macs += 2u * (uint64_t)(pos + 1u) * hs;
            st->cnt.attended += pos + 1u;
            st->cnt.fabric_gather_bytes += 4u * hs;
        }
    }
}
