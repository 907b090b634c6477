/*
 * golden.c - the golden reference forward pass (test code).
 *
 * Reads top to bottom like llama2.c run.c: weights (build/free), the neural
 * net blocks (rmsnorm, softmax, matmul in F32 and Q8), the forward pass, and
 * the greedy generate loop.  The numerics are the project's numerics
 * contract (see golden.h); F32 mode keeps run.c's order of float operations
 * so its tokens match run.c's.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

/* ------------------------------------------------------------------------ */
/* Quantization (the Q8 group rule)                                           */

void golden_quantize(const float *x, int n, int group_size, int8_t *q,
                     float *s)
{
    int G = group_size;
    for (int g0 = 0, gi = 0; g0 < n; g0 += G, gi++) {
        int end = g0 + G < n ? g0 + G : n;   // last group may be short
        float amax = 0.0f;
        for (int j = g0; j < end; j++) {
            float a = fabsf(x[j]);
            if (a > amax) amax = a;
        }
        float scale = amax / 127.0f;
        s[gi] = scale;
        for (int j = g0; j < end; j++) {
            q[j] = scale == 0.0f ? 0 : (int8_t)roundf(x[j] / scale);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Weights: build and free                                                    */

/* Fill W from tensor t, row by row (tsr_tensor_row dequantizes a file's own
 * Q8_0), either as an fp32 copy (G == 0) or quantized per row in groups of G. */
static int mat_build(golden_mat *w, const tsr_tensor *t, int G)
{
    memset(w, 0, sizeof *w);
    w->rows = t->rows;
    w->cols = t->cols;
    size_t n = (size_t)t->rows * t->cols;
    if (G == 0) {
        w->f = malloc(n * sizeof(float));
        if (!w->f) return TSR_ERR_NOMEM;
        for (int r = 0; r < t->rows; r++) tsr_tensor_row(t, r, w->f + (size_t)r * t->cols);
        return TSR_OK;
    }
    w->group = G;
    w->n_groups = (t->cols + G - 1) / G;
    float *row = malloc((size_t)t->cols * sizeof(float));    // (cols,)
    w->q = malloc(n);
    w->s = malloc((size_t)t->rows * w->n_groups * sizeof(float));
    if (!row || !w->q || !w->s) { free(row); return TSR_ERR_NOMEM; }
    for (int r = 0; r < t->rows; r++) {
        tsr_tensor_row(t, r, row);
        golden_quantize(row, t->cols, G, w->q + (size_t)r * t->cols,
                        w->s + (size_t)r * w->n_groups);
    }
    free(row);
    return TSR_OK;
}

static void mat_free(golden_mat *w)
{
    free(w->f);
    free(w->q);
    free(w->s);
    memset(w, 0, sizeof *w);
}

/* An fp32 copy of a vector tensor (norm weights), (cols,). */
static float *vec_build(const tsr_tensor *t)
{
    float *v = malloc((size_t)t->cols * sizeof(float));
    if (v) tsr_tensor_row(t, 0, v);
    return v;
}

int golden_build(golden *g, const tsr_checkpoint *m, int mode, int group_size,
                 int seq_len)
{
    memset(g, 0, sizeof *g);
    const tsr_config *p = &m->cfg;
    if (mode != GOLDEN_F32 && mode != GOLDEN_Q8) return TSR_ERR_ARG;
    if (mode == GOLDEN_Q8 && group_size < 1) return TSR_ERR_ARG;
    if (seq_len < 0 || seq_len > p->seq_len) return TSR_ERR_ARG;
    int G = mode == GOLDEN_Q8 ? group_size : 0;
    int dim = p->dim, hidden = p->hidden_dim, L = p->n_layers;
    int kv_dim = p->n_kv_heads * (dim / p->n_heads);
    g->cfg = *p;
    g->mode = mode;
    g->group = G;
    g->seq_len = seq_len ? seq_len : p->seq_len;

    // weights
    int rc = TSR_ERR_NOMEM;
    g->layers = calloc((size_t)L, sizeof *g->layers);
    if (!g->layers) goto fail;
    if ((rc = mat_build(&g->tok_emb, &m->tok_embedding, G))) goto fail;
    for (int l = 0; l < L; l++) {
        golden_layer *ly = &g->layers[l];
        rc = TSR_ERR_NOMEM;
        if (!(ly->rms_att = vec_build(&m->rms_att[l]))) goto fail;
        if (!(ly->rms_ffn = vec_build(&m->rms_ffn[l]))) goto fail;
        if ((rc = mat_build(&ly->wq, &m->wq[l], G))) goto fail;
        if ((rc = mat_build(&ly->wk, &m->wk[l], G))) goto fail;
        if ((rc = mat_build(&ly->wv, &m->wv[l], G))) goto fail;
        if ((rc = mat_build(&ly->wo, &m->wo[l], G))) goto fail;
        if ((rc = mat_build(&ly->w1, &m->w1[l], G))) goto fail;
        if ((rc = mat_build(&ly->w2, &m->w2[l], G))) goto fail;
        if ((rc = mat_build(&ly->w3, &m->w3[l], G))) goto fail;
    }
    rc = TSR_ERR_NOMEM;
    if (!(g->rms_final = vec_build(&m->rms_final))) goto fail;
    if (p->shared_classifier) {
        g->wcls = g->tok_emb;   // same buffers; freed once, via tok_emb
    } else if ((rc = mat_build(&g->wcls, &m->wcls, G))) {
        goto fail;
    }

    // run state
    rc = TSR_ERR_NOMEM;
    int S = g->seq_len;
    int nmax = dim > hidden ? dim : hidden;
    size_t cache = (size_t)L * S * kv_dim;
    g->x = calloc((size_t)dim, sizeof(float));
    g->xb = calloc((size_t)dim, sizeof(float));
    g->xb2 = calloc((size_t)dim, sizeof(float));
    g->hb = calloc((size_t)hidden, sizeof(float));
    g->hb2 = calloc((size_t)hidden, sizeof(float));
    g->q = calloc((size_t)dim, sizeof(float));
    g->att = calloc((size_t)p->n_heads * S, sizeof(float));
    g->logits = calloc((size_t)p->vocab_size, sizeof(float));
    g->key_cache = calloc(cache, sizeof(float));
    g->value_cache = calloc(cache, sizeof(float));
    g->xq = calloc((size_t)nmax, 1);
    g->xs = calloc((size_t)nmax, sizeof(float));   // >= ceil(nmax / G) for any G
    if (!g->x || !g->xb || !g->xb2 || !g->hb || !g->hb2 || !g->q || !g->att ||
        !g->logits || !g->key_cache || !g->value_cache || !g->xq || !g->xs)
        goto fail;
    return TSR_OK;

fail:
    golden_free(g);
    return rc;
}

void golden_free(golden *g)
{
    if (!g) return;
    if (g->layers) {
        for (int l = 0; l < g->cfg.n_layers; l++) {
            golden_layer *ly = &g->layers[l];
            free(ly->rms_att);
            free(ly->rms_ffn);
            mat_free(&ly->wq);
            mat_free(&ly->wk);
            mat_free(&ly->wv);
            mat_free(&ly->wo);
            mat_free(&ly->w1);
            mat_free(&ly->w2);
            mat_free(&ly->w3);
        }
    }
    free(g->layers);
    if (g->wcls.f != g->tok_emb.f || g->wcls.q != g->tok_emb.q) mat_free(&g->wcls);
    mat_free(&g->tok_emb);
    free(g->rms_final);
    free(g->x);
    free(g->xb);
    free(g->xb2);
    free(g->hb);
    free(g->hb2);
    free(g->q);
    free(g->att);
    free(g->logits);
    free(g->key_cache);
    free(g->value_cache);
    free(g->xq);
    free(g->xs);
    memset(g, 0, sizeof *g);
}

/* ------------------------------------------------------------------------ */
/* Neural net blocks                                                          */

/* o (n,) = weight (n,) * x (n,) / rms(x); o may alias x.  As run.c, with the
 * model's eps. */
static void rmsnorm(float *o, const float *x, const float *weight, int n,
                    float eps)
{
    float ss = 0.0f;
    for (int j = 0; j < n; j++) ss += x[j] * x[j];
    ss /= n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int j = 0; j < n; j++) o[j] = weight[j] * (ss * x[j]);
}

/* In place over x (n,): subtract the max for stability, exp, normalize. */
static void softmax(float *x, int n)
{
    float max_val = x[0];
    for (int i = 1; i < n; i++) if (x[i] > max_val) max_val = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max_val);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

/* F32: W (d,n) @ x (n,) -> y (d,), one float accumulator per row, j ascending. */
static void matmul_f32(const golden_mat *w, const float *x, float *y)
{
    int d = w->rows, n = w->cols;
    for (int i = 0; i < d; i++) {
        float val = 0.0f;
        for (int j = 0; j < n; j++) val += w->f[(size_t)i * n + j] * x[j];
        y[i] = val;
    }
}

void golden_gemv_q8(const golden_mat *w, const int8_t *xq, const float *xs,
                    float *y)
{
    int d = w->rows, n = w->cols, G = w->group;
    for (int i = 0; i < d; i++) {
        const int8_t *wq = w->q + (size_t)i * n;          // (n,)
        const float *ws = w->s + (size_t)i * w->n_groups;  // (n_groups,)
        float val = 0.0f;
        for (int gi = 0; gi < w->n_groups; gi++) {
            int j0 = gi * G, end = j0 + G < n ? j0 + G : n;
            int32_t ival = 0;
            for (int j = j0; j < end; j++) ival += (int32_t)wq[j] * (int32_t)xq[j];
            val += (float)ival * ws[gi] * xs[gi];
        }
        y[i] = val;
    }
}

/* W (d,n) @ x (n,) -> y (d,) in the model's mode: Q8 quantizes x first. */
static void matmul(golden *g, const golden_mat *w, const float *x, float *y)
{
    if (g->mode == GOLDEN_F32) {
        matmul_f32(w, x, y);
        return;
    }
    golden_quantize(x, w->cols, g->group, g->xq, g->xs);
    golden_gemv_q8(w, g->xq, g->xs, y);
}

/* ------------------------------------------------------------------------ */
/* The forward pass                                                           */

const float *golden_forward(golden *g, int token, int pos)
{
    // aliases, as run.c
    const tsr_config *p = &g->cfg;
    float *x = g->x;
    int dim = p->dim;
    int head_size = dim / p->n_heads;
    int kv_dim = p->n_kv_heads * head_size;
    int kv_mul = p->n_heads / p->n_kv_heads;   // query heads per kv head
    int hidden_dim = p->hidden_dim;
    int S = g->seq_len;
    assert(token >= 0 && token < p->vocab_size);
    assert(pos >= 0 && pos < S);

    // token embedding: the row itself (F32) or its dequantized Q8 row
    const golden_mat *e = &g->tok_emb;
    for (int j = 0; j < dim; j++) {
        size_t at = (size_t)token * dim + j;
        x[j] = e->f ? e->f[at]
                    : (float)e->q[at] * e->s[(size_t)token * e->n_groups + j / e->group];
    }

    for (int l = 0; l < p->n_layers; l++) {
        golden_layer *w = &g->layers[l];
        float *k = g->key_cache + ((size_t)l * S + pos) * kv_dim;    // (kv_dim,)
        float *v = g->value_cache + ((size_t)l * S + pos) * kv_dim;  // (kv_dim,)

        // attention rmsnorm
        rmsnorm(g->xb, x, w->rms_att, dim, p->norm_eps);

        // qkv: q (dim,), k and v (kv_dim,) straight into the cache at pos
        matmul(g, &w->wq, g->xb, g->q);
        matmul(g, &w->wk, g->xb, k);
        matmul(g, &w->wv, g->xb, v);

        // RoPE on adjacent pairs (run.c style); k only covers kv_dim
        for (int i = 0; i < dim; i += 2) {
            int head_dim = i % head_size;
            float freq = 1.0f / powf(p->rope_theta, head_dim / (float)head_size);
            float val = pos * freq;
            float fcr = cosf(val);
            float fci = sinf(val);
            int rotn = i < kv_dim ? 2 : 1;   // 2: rotate q and k, 1: q only
            for (int r = 0; r < rotn; r++) {
                float *vec = r == 0 ? g->q : k;
                float v0 = vec[i];
                float v1 = vec[i + 1];
                vec[i] = v0 * fcr - v1 * fci;
                vec[i + 1] = v0 * fci + v1 * fcr;
            }
        }

        // multihead attention over positions 0..pos
        for (int h = 0; h < p->n_heads; h++) {
            const float *qh = g->q + h * head_size;   // (head_size,)
            float *att = g->att + (size_t)h * S;      // (pos + 1,) used
            int kvh = h / kv_mul;
            for (int t = 0; t <= pos; t++) {
                const float *kt = g->key_cache + ((size_t)l * S + t) * kv_dim + kvh * head_size;
                float score = 0.0f;
                for (int i = 0; i < head_size; i++) score += qh[i] * kt[i];
                score /= sqrtf(head_size);
                att[t] = score;
            }
            softmax(att, pos + 1);
            // xb_h (head_size,) = sum_t att[t] * v_t
            float *xbh = g->xb + h * head_size;
            memset(xbh, 0, (size_t)head_size * sizeof(float));
            for (int t = 0; t <= pos; t++) {
                const float *vt = g->value_cache + ((size_t)l * S + t) * kv_dim + kvh * head_size;
                float a = att[t];
                for (int i = 0; i < head_size; i++) xbh[i] += a * vt[i];
            }
        }

        // attention output, then residual
        matmul(g, &w->wo, g->xb, g->xb2);
        for (int i = 0; i < dim; i++) x[i] += g->xb2[i];

        // FFN: w2(silu(w1 xb) * w3 xb), then residual
        rmsnorm(g->xb, x, w->rms_ffn, dim, p->norm_eps);
        matmul(g, &w->w1, g->xb, g->hb);
        matmul(g, &w->w3, g->xb, g->hb2);
        for (int i = 0; i < hidden_dim; i++) {
            float val = g->hb[i];
            val *= (1.0f / (1.0f + expf(-val)));   // silu
            val *= g->hb2[i];
            g->hb[i] = val;
        }
        matmul(g, &w->w2, g->hb, g->xb2);
        for (int i = 0; i < dim; i++) x[i] += g->xb2[i];
    }

    // final rmsnorm, classifier
    rmsnorm(x, x, g->rms_final, dim, p->norm_eps);
    matmul(g, &g->wcls, x, g->logits);
    return g->logits;
}

/* ------------------------------------------------------------------------ */
/* Sampling and the generate loop                                             */

int golden_argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) if (v[i] > v[best]) best = i;
    return best;
}

int golden_generate_greedy(golden *g, const int *prompt, int n_prompt,
                           int steps, int *out)
{
    if (n_prompt < 1) return -1;
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= g->cfg.vocab_size) return -1;
    if (steps > g->seq_len) steps = g->seq_len;
    int token = prompt[0];
    int n = 0;
    out[n++] = token;
    for (int pos = 0; pos < steps; pos++) {
        const float *logits = golden_forward(g, token, pos);
        int next = pos < n_prompt - 1 ? prompt[pos + 1]   // force the prompt
                                      : golden_argmax(logits, g->cfg.vocab_size);
        if (next == 1) break;   // BOS delimits sequences, as run.c
        out[n++] = next;
        token = next;
    }
    return n;
}

double golden_nmse(const float *a, const float *ref, int n)
{
    double num = 0.0, den = 0.0;
    for (int i = 0; i < n; i++) {
        double d = (double)a[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
    return num / den;
}
