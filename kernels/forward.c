/*
 * forward.c - one token through the transformer, on the mesh.
 *
 *   embed (gather row), this token's RoPE angles -> per layer: rmsnorm ->
 *   [q|k|v] GEMV -> gather with RoPE, on to the KV PEs -> attention (KV
 *   PEs) -> wo GEMV + residual -> rmsnorm -> [w1,w3] GEMV with SwiGLU on
 *   the PEs -> w2 GEMV + residual -> [final rmsnorm -> classifier -> the
 *   greedy token on the mesh, or the logits]
 *
 * A pipeline stage (kconfig.stage) runs its own layers only: a stage after
 * the first takes each item's residual vector off its link-in port instead
 * of the embedding row; a stage before the last ends by sending it on its
 * link-out port instead of the classifier's stage:
 *
 *   [link-in ->] layers l0 .. l1-1 [-> link-out]
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

/* A stage's link-out: the header, then each item's residual vector, one
 * stream word a cycle. */
static void link_send(tsr_kstate *st, const tsr_item *items, uint32_t nx,
                      volatile float *link_out)
{
#pragma HLS INLINE
    uint32_t dim = st->cfg.dim;
    TSR_CHARGE(st, TSR_RG_LINK, tsr_cy_link_out(nx, dim));
    TSR_LINK_PUT(link_out, 0u, (float)nx);
    TSR_LINK_PUT(link_out, 1u, (float)items[0].slot);
    TSR_LINK_PUT(link_out, 2u, (float)items[0].pos);
    TSR_LINK_PUT(link_out, 3u, (float)dim);
link_send_items:
    for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
link_send_words:
        for (uint32_t i = 0; i < dim; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM
#pragma HLS PIPELINE II=1
            TSR_LINK_PUT(link_out, TSR_LINK_HDR + b * dim + i, st->cv[b][TSR_CV_X + i]);
        }
    }
}

/* A stage's link-in: item b's residual vector off the stream, after the
 * header (FORWARD read and checked it). */
static void link_take(tsr_kstate *st, uint32_t b, volatile const float *link_in)
{
#pragma HLS INLINE
    uint32_t dim = st->cfg.dim;
link_take_words:
    for (uint32_t i = 0; i < dim; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM
#pragma HLS PIPELINE II=1
        st->cv[b][TSR_CV_X + i] = TSR_LINK_GET(link_in, TSR_LINK_HDR + b * dim + i);
    }
}

/* A pass's start: the cycle mark, then each item's residual stream (its
 * embedding row, or off link-in when from_link) and its RoPE angles. */
static void fwd_begin(tsr_kstate *st, const tsr_item *items, uint32_t nx, uint32_t from_link,
                      volatile const float *link_in)
{
#pragma HLS INLINE
    /* cycle accounting: this pass starts here */
fwd_mark:
    for (uint32_t r = 0; r < TSR_RG_COUNT; r++) {
#pragma HLS UNROLL
        st->cnt.cyc_mark[r] = st->cnt.cyc[r];
    }
    st->cnt.last_pos = items[nx - 1u].pos;
    /* each item's residual stream: its embedding row, or off link-in */
    if (from_link) TSR_CHARGE(st, TSR_RG_LINK, tsr_cy_link_in(nx, st->cfg.dim));
fwd_embed:
    for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
        if (from_link) link_take(st, b, link_in);
        else tsr_mesh_embed(st, b, items[b].token);
        st->ssq_fresh[b] = 0;
        tsr_rope_angles(st, b, items[b].pos);
    }
}

/* A stage's outputs for each of the nx items: the gather of matrix mat
 * (into word yw, flags gf) and, after QKV (att_l: the layer + 1, else 0),
 * the item's attention; the classifier (last): the greedy token on the
 * mesh, or the logits gathered. */
static void fwd_outputs(tsr_kstate *st, tsr_item *items, uint32_t nx, uint32_t mat, uint32_t yw,
                        uint32_t gf, int last, uint32_t att_l)
{
#pragma HLS INLINE
fwd_outputs:
    for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
        uint32_t mode = items[b].mode;
        if (last && mode == TSR_FWD_GREEDY) {
            items[b].next = tsr_mesh_best(st, mat, b);   /* the logits stay on the mesh */
            continue;
        }
        if (last && mode == TSR_FWD_NONE) continue;
        tsr_mesh_gather(st, mat, b, yw, gf, items[b].pos);
        /* head outputs -> xn; an earlier item of the same slot (a
         * prompt block) has stored its k, v already */
        if (att_l) tsr_attention(st, b, items[b].slot, att_l - 1u, items[b].pos);
    }
}

void tsr_forward(tsr_kstate *st, tsr_item *items, uint32_t nx, volatile const float *link_in,
                 volatile float *link_out)
{
#pragma HLS INLINE
    const tsr_kconfig *c = &st->cfg;
    uint32_t dim = c->dim, hidden = c->hidden_dim, L = c->n_layers, cls = tsr_lay_mat_wcls(c);
    uint32_t gather_only = items[0].mode == TSR_FWD_GATHER, any_out = 0, any_greedy = 0;
    uint32_t from_link = (c->stage & TSR_STAGE_LINK_IN) != 0u;
    uint32_t to_link = (c->stage & TSR_STAGE_LINK_OUT) != 0u;
fwd_modes:
    for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
        any_out |= items[b].mode != TSR_FWD_NONE;
        any_greedy |= items[b].mode == TSR_FWD_GREEDY;
    }
    /* the stages: 4 per layer, then the classifier's (not for a prefill
     * block) or a stage's link-out; READ_LOGITS after a greedy pass: only
     * the classifier's gather */
    uint32_t k0 = gather_only ? 4u * L : 0u, nst = 4u * L + (any_out || to_link ? 1u : 0u);
    if (!gather_only) fwd_begin(st, items, nx, from_link, link_in);
fwd_stages:
    for (uint32_t k = k0; k < nst; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_STAGES
        int last = k == 4u * L;   /* the classifier */
        uint32_t l = k / 4u, w = k % 4u;   /* the stage's layer and its place in the layer */
        uint32_t mat = last ? cls : 1u + k;
        if (last && to_link) {
            /* not the last pipeline stage: the residual vectors move on */
            link_send(st, items, nx, link_out);
            continue;
        }
        if (!gather_only) {
            /* each item's input */
            uint32_t norm, row, n;
            tsr_stage_input(k, L, dim, hidden, &norm, &row, &n);
            /* (a platform may make them all at once, or its outputs of
             * the previous stage may have) */
            if (!TSR_FAST_STAGE_INPUTS(st, nx, n, row, norm)) {
fwd_inputs:
                for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
                    float ss = norm ? tsr_rms_scale(st, b, dim) : 0.0f;
                    tsr_mesh_input(st, b, n, row, ss, !norm);
                }
            }
            /* one pass over the weights for every item; W13: SwiGLU on the
             * PEs; the classifier: each item's best row (greedy) */
            tsr_mesh_gemv(st, mat, nx, last && any_greedy ? TSR_JOB_ARGMAX : 0u);
        }
        /* each item's outputs: q | k | v with RoPE on to the KV PEs, then
         * its attention; x += wo xb, x += w2 hb; silu(w1 xb) * w3 xb
         * straight into the W2 input; the logits, or the greedy token */
        uint32_t yw = w == TSR_LAYER_QKV ? TSR_CVW_QKV : w == TSR_LAYER_W13 ? TSR_CVW_XN : TSR_CVW_X;
        uint32_t gf = last ? TSR_GATHER_LOGITS : w == TSR_LAYER_QKV ? TSR_GATHER_QKV
                    : w == TSR_LAYER_W13 ? TSR_GATHER_INPUT : TSR_GATHER_ADD;
        /* (a platform may run the items' gathers and attention its own
         * way) */
        if (!TSR_FAST_STAGE_OUTPUTS(st, items, nx, k, nst, mat, yw, gf))
            fwd_outputs(st, items, nx, mat, yw, gf, last, !last && w == TSR_LAYER_QKV ? l + 1u : 0u);
    }
    if (gather_only) {
        st->logits_on_pes = 0;
        return;
    }
    st->cnt.tokens_fed += nx;
    if (any_out) {
        st->logits_valid = 1;
        st->logits_slot = items[0].slot;
        st->logits_pos = items[0].pos;
        /* READ_LOGITS: item 0's, gathered if the pass left them on the mesh */
        st->logits_on_pes = items[0].mode == TSR_FWD_GREEDY ? 1u : 0u;
    }
}
