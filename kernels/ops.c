/*
 * ops.c - the controller's vector operations.
 *
 *   read vector(s) from controller memory (TSR_VEC words of fp32 a cycle)
 *     -> elementwise lanes / a reduction over TSR_SUM_LANES partial sums
 *     -> write back
 *
 * All fp32, in llama2.c run.c's operation order (the reductions in its
 * order when TSR_SUM_LANES is 1), so greedy F32 tokens agree with run.c.
 */
#include <math.h>

#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* Reductions                                                                 */

/* Partial k of S holds the elements i with i % S == k, added in order:
 * TSR_SUM_E elements a cycle, into TSR_SUM_E consecutive partials, so each
 * partial is added to once every TSR_SUM_DIST iterations (II = 1 when S is
 * at least TSR_FADD_LAT, else TSR_SUM_II).  Then the pairwise levels,
 * partial k += partial k + half for half = S/2, S/4, ..., 1, TSR_SUM_E
 * additions a cycle.  With S = 1: ((x0 + x1) + x2) + ..., run.c's order.
 * tsr_cycles.h tsr_cy_sum_s is what this costs. */
/* The pairwise levels over the partials (nothing when S = 1): fully
 * unrolled, so every index is a constant (no run-time selection among the
 * S registers), on TSR_SUM_E adders. */
static void sum_levels(float part[TSR_SUM_LANES])
{
#pragma HLS INLINE off
    /* its callers' partitioning (registers), stated where the levels index it */
#pragma HLS ARRAY_PARTITION variable=part type=complete
#pragma HLS ALLOCATION operation instances=fadd limit=TSR_LIT_SUM_E
#if TSR_SUM_LANES > 1
sum_level:
    for (uint32_t half = TSR_SUM_LANES / 2u; half >= 1u; half /= 2u) {
#pragma HLS UNROLL
sum_level_adds:
        for (uint32_t k = 0; k < TSR_SUM_LANES / 2u; k++) {
#pragma HLS UNROLL
            if (k < half) part[k] += part[k + half];
        }
    }
#else
    (void)part;
#endif
}

/* sum of x[i] (square 0) or of x[i]^2 (square 1).  Inlined, so each caller
 * has its own, on its own array.  The partials as rows of TSR_SUM_E in a
 * rotating chain of registers: a pass adds its elements into the head row
 * (row 0) and moves every row up one, the head's sums to the tail, so the
 * row a pass adds into is always the head (no index chosen at run time)
 * and comes back to the head TSR_SUM_ROWS passes later.  That is the
 * recurrence distance, held by the chain's length: an fadd has
 * TSR_SUM_ROWS x TSR_SUM_II >= TSR_FADD_LAT cycles before its sum is read
 * again (checked below), with no DEPENDENCE claim (UG1399 "pragma HLS
 * dependence" speaks of arrays; a completely partitioned array is
 * registers).  After T passes the partials stand rotated by T rows: the
 * chain holds partial (k + T * TSR_SUM_E) mod S at k.  The pairwise levels
 * need no unrotating: a level adds k and k + half (mod its size), so a
 * cyclic rotation only permutes its pairs and swaps an addition's
 * operands, and an fp32 addition is commutative: the sum is the same bits
 * as with the partials in order (as the gather's ssq, mesh.c). */
TSR_STATIC_CHECK(sum_chain_covers_fadd, TSR_SUM_ROWS * TSR_SUM_II >= TSR_FADD_LAT);
static float reduce(const float *x, uint32_t n, int square)
{
#pragma HLS INLINE
    float part[TSR_SUM_ROWS][TSR_SUM_E], flat[TSR_SUM_LANES];
#pragma HLS ARRAY_PARTITION variable=part type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=flat type=complete
sum_zero:
    for (uint32_t k = 0; k < TSR_SUM_ROWS; k++) {
#pragma HLS UNROLL
sum_zero_lanes:
        for (uint32_t e = 0; e < TSR_SUM_E; e++) {
#pragma HLS UNROLL
            part[k][e] = 0.0f;
        }
    }
sum_pass:
    for (uint32_t i = 0; i < n; i += TSR_SUM_E) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=TSR_LIT_SUM_II
        float head[TSR_SUM_E];
#pragma HLS ARRAY_PARTITION variable=head type=complete
sum_lanes:
        for (uint32_t e = 0; e < TSR_SUM_E; e++) {
#pragma HLS UNROLL
            float h = part[0][e];
            if (i + e < n) {
                float v = x[i + e];
                h = h + (square ? v * v : v);
            }
            head[e] = h;
        }
#if TSR_SUM_ROWS > 1
sum_rotate:
        for (uint32_t k = 0; k < TSR_SUM_ROWS - 1u; k++) {
#pragma HLS UNROLL
sum_rotate_lanes:
            for (uint32_t e = 0; e < TSR_SUM_E; e++) {
#pragma HLS UNROLL
                part[k][e] = part[k + 1u][e];
            }
        }
#endif
sum_tail:
        for (uint32_t e = 0; e < TSR_SUM_E; e++) {
#pragma HLS UNROLL
            part[TSR_SUM_ROWS - 1u][e] = head[e];
        }
    }
sum_flat:
    for (uint32_t k = 0; k < TSR_SUM_LANES; k++) {
#pragma HLS UNROLL
        flat[k] = part[k / TSR_SUM_E][k % TSR_SUM_E];
    }
    sum_levels(flat);
    return flat[0];
}

float tsr_reduce_sum(const float *x, uint32_t n)
{
#pragma HLS INLINE
    return reduce(x, n, 0);
}

float tsr_reduce_sumsq(const float *x, uint32_t n)
{
#pragma HLS INLINE
    return reduce(x, n, 1);
}

/* ------------------------------------------------------------------------ */
/* RMSNorm                                                                    */

float tsr_rms_scale(tsr_kstate *st, uint32_t it, uint32_t n)
{
#pragma HLS INLINE
    float ss;
#if TSR_SSQ_FUSED
    if (st->ssq_fresh[it]) {
        /* the residual gather that wrote x left its partials (mesh.c) */
        float part[TSR_SUM_LANES];
#pragma HLS ARRAY_PARTITION variable=part type=complete
        TSR_CHARGE(st, TSR_RG_NORM, tsr_cy_norm_s(n, TSR_SUM_LANES, 1));
norm_ssq_in:
        for (uint32_t k = 0; k < TSR_SUM_LANES; k++) {
#pragma HLS UNROLL
            part[k] = st->ssq[it][k];
        }
        sum_levels(part);
        ss = part[0];
        st->ssq_fresh[it] = 0;
    } else
#endif
    {
        TSR_CHARGE(st, TSR_RG_NORM, tsr_cy_norm_s(n, TSR_SUM_LANES, 0));
        ss = tsr_reduce_sumsq(st->cv[it] + TSR_CV_X, n);
    }
    ss /= (float)n;
    ss += st->cfg.norm_eps;
    return 1.0f / sqrtf(ss);
}

/* ------------------------------------------------------------------------ */
/* RoPE                                                                       */

void tsr_rope_angles(tsr_kstate *st, uint32_t it, uint32_t pos)
{
#pragma HLS INLINE
    uint32_t half = st->hs / 2u;
    TSR_CHARGE(st, TSR_RG_ROPE, tsr_cy_rope_angles(st->hs));
rope_angles:
    for (uint32_t j = 0; j < half; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_HALF_HS
#pragma HLS PIPELINE II=1
        float val = (float)pos * st->rope_freq[j];
        st->rope_cos[it][j] = cosf(val);
        st->rope_sin[it][j] = sinf(val);
    }
}

/* ------------------------------------------------------------------------ */
/* Softmax, SwiGLU                                                            */

void tsr_softmax(float *x, uint32_t n)
{
#pragma HLS INLINE
    float max_val = x[0];
softmax_max:
    for (uint32_t i = 1; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=TSR_D_CMP
        if (x[i] > max_val) max_val = x[i];
    }
softmax_exp:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=x type=inter dependent=false
        x[i] = expf(x[i] - max_val);
    }
    float sum = tsr_reduce_sum(x, n);
softmax_norm:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=1
        x[i] /= sum;
    }
}

void tsr_swiglu(float *hb, const float *hb2, uint32_t n)
{
swiglu:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_ROWS
#pragma HLS PIPELINE II=1
        float val = hb[i];
        val *= (1.0f / (1.0f + expf(-val)));
        val *= hb2[i];
        hb[i] = val;
    }
}

/* ------------------------------------------------------------------------ */
/* Quantization, argmax                                                       */

void tsr_quantize(const float *x, uint32_t n, uint32_t G, int8_t *q, float *s)
{
    uint32_t ng = tsr_cdiv(n, G);
quant_groups:
    for (uint32_t g = 0; g < ng; g++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_XS
        uint32_t j0 = g * G, len = n - j0 < G ? n - j0 : G;   /* the last group may be short */
        float amax = 0.0f;
quant_amax:
        for (uint32_t j = 0; j < len; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_GROUP
            float a = fabsf(x[j0 + j]);
            amax = a > amax ? a : amax;
        }
        float scale = amax / 127.0f;
        s[g] = scale;
        /* len values, then zeros up to G (an all-zero group: scale 0) */
        uint32_t nz = scale != 0.0f ? len : 0u;
quant_values:
        for (uint32_t j = 0; j < nz; j++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_MAX_GROUP
            q[j0 + j] = (int8_t)tsr_round_q8(x[j0 + j] / scale);
        }
quant_pad:
        for (uint32_t j = nz; j < G; j++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_MAX_GROUP
            q[j0 + j] = 0;
        }
    }
}

uint32_t tsr_argmax(const float *v, uint32_t n)
{
#pragma HLS INLINE
    uint32_t best = 0;
    float max_p = v[0];
argmax:
    for (uint32_t i = 1; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=TSR_D_CMP
        if (v[i] > max_p) {
            max_p = v[i];
            best = i;
        }
    }
    return best;
}
