/*
 * ops.c - vector operations on the controller's activation vectors.
 *
 * Dataflow of each op: read vector(s) from controller buffers -> compute
 * elementwise / with one reduction -> write back.  All fp32, in the exact
 * operation order of llama2.c run.c so greedy tokens agree with it.
 */
#include <math.h>

#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* Norm                                                                       */

void tsr_rmsnorm(float *o, const float *x, const float *w, uint32_t n, float eps)
{
    float ss = 0.0f;
rmsnorm_sumsq:
    for (uint32_t j = 0; j < n; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM
#pragma HLS PIPELINE II=1
        ss += x[j] * x[j];
    }
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
rmsnorm_scale:
    for (uint32_t j = 0; j < n; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM
#pragma HLS PIPELINE II=1
        o[j] = w[j] * (ss * x[j]);
    }
}

/* ------------------------------------------------------------------------ */
/* RoPE                                                                       */

void tsr_rope(float *q, float *k, uint32_t dim, uint32_t kv_dim, uint32_t head_size,
              uint32_t pos, float theta)
{
rope_pairs:
    for (uint32_t i = 0; i < dim; i += 2) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM/2
        uint32_t head_dim = i % head_size;
        float freq = 1.0f / powf(theta, (float)head_dim / (float)head_size);
        float val = (float)pos * freq;
        float fcr = cosf(val);
        float fci = sinf(val);
        float v0 = q[i], v1 = q[i + 1];
        q[i] = v0 * fcr - v1 * fci;
        q[i + 1] = v0 * fci + v1 * fcr;
        if (i < kv_dim) {
            v0 = k[i];
            v1 = k[i + 1];
            k[i] = v0 * fcr - v1 * fci;
            k[i + 1] = v0 * fci + v1 * fcr;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Softmax, SwiGLU, residual                                                  */

void tsr_softmax(float *x, uint32_t n)
{
    float max_val = x[0];
softmax_max:
    for (uint32_t i = 1; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
        if (x[i] > max_val) max_val = x[i];
    }
    float sum = 0.0f;
softmax_exp:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
        x[i] = expf(x[i] - max_val);
        sum += x[i];
    }
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
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_HIDDEN
#pragma HLS PIPELINE II=1
        float val = hb[i];
        val *= (1.0f / (1.0f + expf(-val)));
        val *= hb2[i];
        hb[i] = val;
    }
}

void tsr_residual(float *x, const float *d, uint32_t n)
{
residual:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM
#pragma HLS PIPELINE II=1
        x[i] += d[i];
    }
}

/* ------------------------------------------------------------------------ */
/* Activation quantization (in front of the MAC arrays)                       */

void tsr_quantize(const float *x, uint32_t n, uint32_t G, int8_t *q, float *s)
{
    uint32_t ng = tsr_cdiv(n, G);
quant_groups:
    for (uint32_t g = 0; g < ng; g++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN_GROUPS
        uint32_t j0 = g * G, len = n - j0 < G ? n - j0 : G;   /* the last group may be short */
        const float *xg = x + j0;                             // (len,)
        int8_t *qg = q + j0;                                  // (G,)
        float amax = 0.0f;
quant_amax:
        for (uint32_t j = 0; j < len; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_GROUP
#pragma HLS PIPELINE II=1
            float a = fabsf(xg[j]);
            amax = a > amax ? a : amax;
        }
        float scale = amax / 127.0f;
        s[g] = scale;
        /* len values, then zeros up to G (an all-zero group: scale 0) */
        uint32_t nz = scale != 0.0f ? len : 0u;
quant_values:
        for (uint32_t j = 0; j < nz; j++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_MAX_GROUP
#pragma HLS PIPELINE II=1
            qg[j] = (int8_t)tsr_round_q8(xg[j] / scale);
        }
quant_pad:
        for (uint32_t j = nz; j < G; j++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_MAX_GROUP
#pragma HLS PIPELINE II=1
            qg[j] = 0;
        }
    }
}

uint32_t tsr_argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;
    float max_p = v[0];
argmax:
    for (uint32_t i = 1; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
        if (v[i] > max_p) {
            max_p = v[i];
            best = i;
        }
    }
    return best;
}
