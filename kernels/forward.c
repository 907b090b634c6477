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
 *
 * The pass is a loop over stages, one a matrix, so each mesh operation has
 * one call site: in hardware one instance of each (UG1399, "pragma HLS
 * allocation": an instance per call), whatever the layer count.
 */
#include "tsr_hls.h"

/* A layer's four stages, in order (the matrices TSR_MAT_LAYER(l, w)). */
enum { STAGE_QKV = 0, STAGE_WO, STAGE_W13, STAGE_W2 };

int32_t tsr_forward(tsr_kstate *st, uint32_t slot, uint32_t token, uint32_t pos, int mode)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t dim = c->dim, hidden = c->hidden_dim, L = c->n_layers, cls = tsr_lay_mat_wcls(c);
    int greedy = mode == TSR_FWD_GREEDY;
    /* the stages: 4 per layer, then the classifier's (not for a prefill);
     * READ_LOGITS after a greedy pass: only the classifier's gather */
    uint32_t k0 = mode == TSR_FWD_GATHER ? 4u * L : 0u;
    uint32_t nst = 4u * L + (mode == TSR_FWD_NONE ? 0u : 1u);
    if (mode != TSR_FWD_GATHER) {
        /* cycle accounting: this pass starts here */
fwd_mark:
        for (uint32_t r = 0; r < TSR_RG_COUNT; r++) {
#pragma HLS UNROLL
            st->cnt.cyc_mark[r] = st->cnt.cyc[r];
        }
        st->cnt.last_pos = pos;
        tsr_mesh_embed(st, token);
        st->ssq_fresh = 0;
        tsr_rope_angles(st, pos);
    }

    int32_t next = 0;
    uint32_t l = 0, w = 0;   /* the stage's layer and its place in the layer */
fwd_stages:
    for (uint32_t k = k0; k < nst; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_STAGES
        int last = k == 4u * L;   /* the classifier */
        uint32_t mat = last ? cls : 1u + k;
        if (mode != TSR_FWD_GATHER) {
            /* the input: RMSNorm of x (rms_att, rms_ffn, rms_final), or the
             * xn that attention / the W13 gather left */
            if (last || w == STAGE_QKV || w == STAGE_W13) {
                uint32_t row = last ? 2u * L : w == STAGE_QKV ? l : L + l;
                float ss = tsr_rms_scale(st, dim);
                tsr_mesh_input(st, dim, row, ss);
            } else {
                tsr_mesh_input_ready(st, w == STAGE_WO ? dim : hidden);
            }
            tsr_mesh_gemv(st, mat, last && greedy ? TSR_JOB_ARGMAX : 0u);   /* W13: SwiGLU on the PEs */
        }
        if (last && greedy) {
            next = tsr_mesh_best(st, cls);   /* the logits stay on the mesh */
        } else {
            /* q | k | v with RoPE on to the KV PEs; x += wo xb, x += w2 hb;
             * silu(w1 xb) * w3 xb straight into the W2 input; the logits */
            uint32_t yw = last ? TSR_CVW_LOGITS : w == STAGE_QKV ? TSR_CVW_QKV
                        : w == STAGE_W13 ? TSR_CVW_XN : TSR_CVW_X;
            uint32_t gf = last ? 0u : w == STAGE_QKV ? TSR_GATHER_QKV
                        : w == STAGE_W13 ? TSR_GATHER_INPUT : TSR_GATHER_ADD;
            tsr_mesh_gather(st, mat, yw, gf, slot);
        }
        if (!last && w == STAGE_QKV) tsr_attention(st, slot, l, pos);   /* head outputs -> xn */
        if (++w == 4u) {
            w = 0;
            l++;
        }
    }
    if (mode == TSR_FWD_GATHER) {
        st->logits_on_pes = 0;
        return 0;
    }
    st->cnt.tokens_fed++;
    if (mode != TSR_FWD_NONE) {
        st->logits_valid = 1;
        st->logits_on_pes = greedy ? 1u : 0u;   /* READ_LOGITS gathers them if asked */
    }
    return next;
}
