/*
 * forward.c - one token through the transformer, on the mesh.
 *
 *   embed (gather row) -> per layer: rmsnorm -> q,k,v GEMVs -> RoPE ->
 *   attention (KV-owner PEs) -> wo GEMV + residual -> rmsnorm -> w1, w3
 *   GEMVs -> SwiGLU -> w2 GEMV + residual -> [final rmsnorm -> classifier]
 *
 * Same steps and float order as llama2.c run.c forward(); only the GEMV
 * partial sums are added in mesh order (per PE, then the adder tree).
 */
#include "tsr_hls.h"

void tsr_forward(tsr_kstate *st, uint32_t slot, uint32_t token, uint32_t pos, int want_logits)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t dim = c->dim, hidden = c->hidden_dim, kv_dim = tsr_lay_kv_dim(c);
    uint32_t hs = tsr_lay_head_size(c), L = c->n_layers;
    float *x = st->x;   // (dim,)
    /* cycle model: this pass's work starts here */
    st->cnt.work_mark = st->cnt.work;
    st->cnt.work.forwards++;
    st->cnt.work.pos_sum += pos;

    tsr_mesh_embed(st, token, x);

fwd_layers:
    for (uint32_t l = 0; l < L; l++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_LAYERS
        const float *rms_att = st->ctrl + l * dim;         // (dim,)
        const float *rms_ffn = st->ctrl + (L + l) * dim;   // (dim,)

        /* attention block */
        tsr_rmsnorm(st->xb, x, rms_att, dim, c->norm_eps);
        tsr_mesh_gemv_qkv(st, l, st->xb);
        tsr_rope(st->q, st->k, dim, kv_dim, hs, pos, c->rope_theta);
        tsr_attention(st, slot, l, pos);
        tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_O), st->xb, st->xb2);
        tsr_residual(x, st->xb2, dim);

        /* FFN block: w2(silu(w1 xb) * w3 xb) */
        tsr_rmsnorm(st->xb, x, rms_ffn, dim, c->norm_eps);
        tsr_mesh_ffn_up(st, l, st->xb);   /* hb = silu(w1 xb) * w3 xb */
        tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_2), st->hb, st->xb2);
        tsr_residual(x, st->xb2, dim);
    }
    /* cycle model: the layers' controller passes (2 norms; RoPE pairs, 2 residuals, SwiGLU) */
    st->cnt.work.norms += 2u * L;
    st->cnt.work.norm_elems += 2u * (uint64_t)L * dim;
    st->cnt.work.vec_elems += (uint64_t)L * (dim / 2u + 2u * dim + hidden);
    st->cnt.tokens_fed++;

    if (want_logits) {
        tsr_rmsnorm(x, x, st->ctrl + 2u * L * dim, dim, c->norm_eps);
        tsr_mesh_gemv(st, tsr_lay_mat_wcls(c), x, st->logits);
        st->cnt.work.norms++;   /* cycle model: final norm; logits the sampler scans */
        st->cnt.work.norm_elems += dim;
        st->cnt.work.logits += c->vocab_size;
        st->logits_valid = 1;
    }
}
