/*
 * forward.c - one token through the transformer, on the mesh.
 *
 *   embed (gather row), this token's RoPE angles -> per layer: rmsnorm ->
 *   [q|k|v] GEMV -> gather with RoPE, on to the KV PEs -> attention (KV
 *   PEs) -> wo GEMV + residual -> rmsnorm -> [w1,w3] GEMV with SwiGLU on
 *   the PEs -> w2 GEMV + residual -> [final rmsnorm -> classifier -> the
 *   greedy token on the mesh, or the logits]
 *
 * Same steps and float order as llama2.c run.c forward() (the GEMV sums of
 * a row split over C > 1 mesh columns are added in tree order; the
 * reductions in partial sums when TSR_SUM_LANES > 1).
 */
#include "tsr_hls.h"

int32_t tsr_forward(tsr_kstate *st, uint32_t slot, uint32_t token, uint32_t pos, int mode)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t dim = c->dim, hidden = c->hidden_dim, L = c->n_layers;
    float *x = st->x;   // (dim,)
    /* cycle accounting: this pass starts here */
fwd_mark:
    for (uint32_t r = 0; r < TSR_RG_COUNT; r++) {
#pragma HLS UNROLL
        st->cnt.cyc_mark[r] = st->cnt.cyc[r];
    }
    st->cnt.last_pos = pos;

    tsr_mesh_embed(st, token, x);
    st->ssq_fresh = 0;
    tsr_rope_angles(st, pos);

fwd_layers:
    for (uint32_t l = 0; l < L; l++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_LAYERS
        const float *rms_att = st->ctrl + l * dim;         // (dim,)
        const float *rms_ffn = st->ctrl + (L + l) * dim;   // (dim,)

        /* attention block: RoPE on the QKV gather's way to the KV PEs; the
         * head outputs come back as the WO input (xn) */
        float ss = tsr_rms_scale(st, x, dim);
        tsr_mesh_input(st, x, dim, rms_att, ss);
        tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_QKV), 0);
        tsr_mesh_gather(st, TSR_MAT_LAYER(l, TSR_W_QKV), st->qkv, TSR_GATHER_QKV, slot);
        tsr_attention(st, slot, l, pos);
        tsr_mesh_input_ready(st, dim);
        tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_O), 0);
        tsr_mesh_gather(st, TSR_MAT_LAYER(l, TSR_W_O), x, TSR_GATHER_ADD, slot);   /* x += wo xb */

        /* FFN block: w2(silu(w1 xb) * w3 xb), silu(w1 xb) * w3 xb straight
         * into the W2 input */
        ss = tsr_rms_scale(st, x, dim);
        tsr_mesh_input(st, x, dim, rms_ffn, ss);
        tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_13), 0);        /* SwiGLU on the PEs */
        tsr_mesh_gather(st, TSR_MAT_LAYER(l, TSR_W_13), st->xn, TSR_GATHER_INPUT, slot);
        tsr_mesh_input_ready(st, hidden);
        tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_2), 0);
        tsr_mesh_gather(st, TSR_MAT_LAYER(l, TSR_W_2), x, TSR_GATHER_ADD, slot);   /* x += w2 hb */
    }
    st->cnt.tokens_fed++;

    if (mode == TSR_FWD_NONE) return 0;
    uint32_t cls = tsr_lay_mat_wcls(c);
    float ss = tsr_rms_scale(st, x, dim);
    tsr_mesh_input(st, x, dim, st->ctrl + 2u * L * dim, ss);
    if (mode == TSR_FWD_GREEDY) {
        tsr_mesh_gemv(st, cls, TSR_JOB_ARGMAX);
        st->logits_valid = 1;
        st->logits_on_pes = 1;   /* READ_LOGITS gathers them if asked */
        return tsr_mesh_best(st, cls);
    }
    tsr_mesh_gemv(st, cls, 0);
    tsr_mesh_gather(st, cls, st->logits, 0, slot);
    st->logits_valid = 1;
    st->logits_on_pes = 0;
    return 0;
}
