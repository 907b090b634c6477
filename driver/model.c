/*
 * model.c - format-independent parts of a loaded model: tensor access
 * (dequantizing Q8_0 on the fly), parameter count, the non-finite weight
 * check, shape checks, close.
 * The file formats themselves live in format_*.c.
 */
#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model.h"
#include "tokenizer.h"
#include "tsr_half.h"

/* ------------------------------------------------------------------------ */
/* Tensors                                                                    */

static float rd_half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return tsr_f32_from_f16(h);
}

/* A GGUF block of t: block gi of its stored bytes. */
static inline const uint8_t *ggml_block(const tsr_tensor *t, size_t gi)
{
    return t->blk + gi * (t->type == TSR_DT_Q8_0 ? TSR_GGML_Q8_BYTES : TSR_GGML_Q4_BYTES);
}

float tsr_tensor_scale(const tsr_tensor *t, size_t gi)
{
    return t->blk ? rd_half(ggml_block(t, gi)) : t->s[gi];
}

const int8_t *tsr_tensor_q8(const tsr_tensor *t, size_t gi)
{
    return t->blk ? (const int8_t *)(ggml_block(t, gi) + 2) : t->q + gi * (size_t)t->group;
}

const uint8_t *tsr_tensor_q4(const tsr_tensor *t, size_t gi)
{
    return t->blk ? ggml_block(t, gi) + 2 : t->q4 + gi * 16u;
}

/* Q4_0 element k (0..31) of a group's 16 nibble bytes b. */
static inline int q4_value(const uint8_t *b, size_t k)
{
    uint8_t v = b[k % 16u];
    return (k < 16u ? v & 15 : v >> 4) - 8;
}

float tsr_tensor_get(const tsr_tensor *t, size_t i)
{
    assert(i < (size_t)t->rows * (size_t)t->cols);
    switch (t->type) {
    case TSR_DT_F32: return t->f[i];
    case TSR_DT_F16: return rd_half(t->blk + 2 * i);
    case TSR_DT_Q4_0: return (float)q4_value(tsr_tensor_q4(t, i / 32u), i % 32u) *
                             tsr_tensor_scale(t, i / 32u);
    default: {
        // groups run over the flattened tensor, so the scale index ignores rows
        size_t g = (size_t)t->group;
        return (float)tsr_tensor_q8(t, i / g)[i % g] * tsr_tensor_scale(t, i / g);
    }
    }
}

void tsr_tensor_span(const tsr_tensor *t, int r, int c0, int n, float *out)
{
    assert(r >= 0 && r < t->rows && c0 >= 0 && n >= 0 && c0 + n <= t->cols);
    size_t base = (size_t)r * (size_t)t->cols + (size_t)c0;   // flat index of out[0]
    size_t nn = (size_t)n;
    switch (t->type) {
    case TSR_DT_F32:
        for (size_t j = 0; j < nn; j++) out[j] = t->f[base + j];
        return;
    case TSR_DT_F16:
        for (size_t j = 0; j < nn; j++) out[j] = rd_half(t->blk + 2 * (base + j));
        return;
    default: {
        /* group by group: one scale per group, no division per element (a
         * Q8_0 group may straddle two rows) */
        size_t g = t->type == TSR_DT_Q4_0 ? 32u : (size_t)t->group;
        for (size_t j = 0; j < nn;) {
            size_t i = base + j, gi = i / g, k = i % g, end = j + (g - k);
            if (end > nn) end = nn;
            float s = tsr_tensor_scale(t, gi);
            if (t->type == TSR_DT_Q4_0) {
                const uint8_t *b = tsr_tensor_q4(t, gi);
                for (; j < end; j++, k++) out[j] = (float)q4_value(b, k) * s;
            } else {
                const int8_t *q = tsr_tensor_q8(t, gi);
                for (; j < end; j++, k++) out[j] = (float)q[k] * s;
            }
        }
        return;
    }
    }
}

void tsr_tensor_row(const tsr_tensor *t, int r, float *out)
{
    assert(r >= 0 && r < t->rows);
    tsr_tensor_span(t, r, 0, t->cols, out);
}

/* ------------------------------------------------------------------------ */
/* Model                                                                      */

/* The storage of one tensor for the kinds scan: 8 (Q8_0 in whole groups
 * along its rows), 9 (Q8_0 in groups across its rows' ends), 4 (Q4_0), 0
 * (anything else). */
static int stored_as(const tsr_tensor *t)
{
    if (t->type == TSR_DT_Q4_0) return 4;
    if (t->type == TSR_DT_Q8_0 && t->group > 0) return t->cols % t->group == 0 ? 8 : 9;
    return 0;
}

void tsr_checkpoint_scan_kinds(tsr_checkpoint *m)
{
    int L = m->cfg.n_layers, st[TSR_KIND_COUNT];
    for (int k = 0; k < TSR_KIND_COUNT; k++) st[k] = -1;   /* -1: no tensor seen */
#define SEE(kind, t) do { int s_ = stored_as(t); st[kind] = st[kind] == -1 || st[kind] == s_ ? s_ : 0; } while (0)
    SEE(TSR_KIND_EMB, &m->tok_embedding);
    if (!m->cfg.shared_classifier) SEE(TSR_KIND_CLS, &m->wcls);
    for (int l = 0; l < L; l++) {
        SEE(TSR_KIND_QKV, &m->wq[l]);
        SEE(TSR_KIND_QKV, &m->wk[l]);
        SEE(TSR_KIND_QKV, &m->wv[l]);
        SEE(TSR_KIND_WO, &m->wo[l]);
        SEE(TSR_KIND_W13, &m->w1[l]);
        SEE(TSR_KIND_W13, &m->w3[l]);
        SEE(TSR_KIND_W2, &m->w2[l]);
    }
#undef SEE
    m->cfg.kinds_q8 = m->cfg.kinds_q4 = m->cfg.kinds_q8x = 0;
    for (int k = 0; k < TSR_KIND_COUNT; k++) {
        if (st[k] == 8) m->cfg.kinds_q8 |= 1u << k;
        if (st[k] == 9) m->cfg.kinds_q8x |= 1u << k;
        if (st[k] == 4) m->cfg.kinds_q4 |= 1u << k;
    }
}

uint64_t tsr_checkpoint_param_count(const tsr_checkpoint *m)
{
    const tsr_config *p = &m->cfg;
    uint64_t dim = (uint64_t)p->dim, hidden = (uint64_t)p->hidden_dim;
    uint64_t kv_dim = (uint64_t)p->n_kv_heads * (dim / (uint64_t)p->n_heads);
    uint64_t per_layer = 2 * dim                 // rms_att, rms_ffn
                       + 2 * dim * dim           // wq, wo
                       + 2 * kv_dim * dim        // wk, wv
                       + 3 * hidden * dim;       // w1, w2, w3
    uint64_t n = (uint64_t)p->vocab_size * dim   // tok_embedding
               + (uint64_t)p->n_layers * per_layer
               + dim;                            // rms_final
    if (!p->shared_classifier) n += (uint64_t)p->vocab_size * dim;
    if (p->qkv_bias) n += (uint64_t)p->n_layers * (dim + 2 * kv_dim);   // bq, bk, bv
    return n;
}

/* ------------------------------------------------------------------------ */
/* RoPE frequencies                                                           */

float tsr_rope_llama3_factor(const tsr_config *c, double f)
{
    if (!c->rope_scaled) return 1.0f;
    if (c->rope_scaled == 2) return c->rope_factor;
    double ctx = c->rope_orig_ctx, lo = c->rope_low, hi = c->rope_high, k = c->rope_factor;
    double wavelen = 2.0 * 3.14159265358979323846 / f;
    if (wavelen < ctx / hi) return 1.0f;
    if (wavelen > ctx / lo) return (float)k;
    double s = (ctx / wavelen - lo) / (hi - lo);
    return (float)(1.0 / ((1.0 - s) / k + s));
}

void tsr_checkpoint_rope_freqs(const tsr_checkpoint *m, float *out)
{
    const tsr_config *c = &m->cfg;
    uint32_t hs = (uint32_t)(c->dim / c->n_heads);
    for (uint32_t j = 0; j < hs / 2u; j++) {
        /* run.c's frequency, bit for bit (the kernel computed it so before) */
        float f = 1.0f / powf(c->rope_theta, (float)(2u * j) / (float)hs);
        if (m->rope_ff) f = f / m->rope_ff[j];
        else if (c->rope_scaled) f = f / tsr_rope_llama3_factor(c, f);
        out[j] = f;
    }
}

/* ------------------------------------------------------------------------ */
/* Non-finite weights                                                         */

/* Values of x[0..n) outside [-lim, lim], NaN included; *first gets the
 * first one's index.  The first pass is branch-free so that it
 * vectorizes: a clean model costs one read of its fp32 data. */
static uint64_t count_out_of_range(const float *x, size_t n, float lim, size_t *first)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) any |= !(fabsf(x[i]) <= lim);   /* NaN fails <= */
    if (!any) return 0;
    uint64_t count = 0;
    for (size_t i = n; i-- > 0;)
        if (!(fabsf(x[i]) <= lim)) { count++; *first = i; }
    return count;
}

/* Tensor kinds, in the order of the name tables below. */
enum { T_EMB, T_RMS_ATT, T_WQ, T_WK, T_WV, T_WO, T_RMS_FFN, T_W1, T_W2, T_W3, T_RMS_FINAL,
       T_WCLS, T_BQ, T_BK, T_BV, T_KINDS };

/* The tensor's name in the file: llama2.c model.py's state_dict keys (what
 * export.py writes), or the GGUF names llama.cpp's converter writes. */
static void tensor_name(const tsr_checkpoint *m, int kind, int layer, char *buf, size_t cap)
{
    static const char *const l2c[T_KINDS] = {
        "tok_embeddings.weight", "layers.%d.attention_norm.weight",
        "layers.%d.attention.wq.weight", "layers.%d.attention.wk.weight",
        "layers.%d.attention.wv.weight", "layers.%d.attention.wo.weight",
        "layers.%d.ffn_norm.weight", "layers.%d.feed_forward.w1.weight",
        "layers.%d.feed_forward.w2.weight", "layers.%d.feed_forward.w3.weight",
        "norm.weight", "output.weight", "layers.%d.attention.wq.bias",
        "layers.%d.attention.wk.bias", "layers.%d.attention.wv.bias",
    };
    static const char *const gguf[T_KINDS] = {
        "token_embd.weight", "blk.%d.attn_norm.weight", "blk.%d.attn_q.weight",
        "blk.%d.attn_k.weight", "blk.%d.attn_v.weight", "blk.%d.attn_output.weight",
        "blk.%d.ffn_norm.weight", "blk.%d.ffn_gate.weight", "blk.%d.ffn_down.weight",
        "blk.%d.ffn_up.weight", "output_norm.weight", "output.weight", "blk.%d.attn_q.bias",
        "blk.%d.attn_k.bias", "blk.%d.attn_v.bias",
    };
    const char *fmt = (m->cfg.format == TSR_FMT_GGUF ? gguf : l2c)[kind];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(buf, cap, fmt, layer);   /* names without %d ignore the layer */
#pragma GCC diagnostic pop
}

/* Halves at x + i * stride (i < n, 2 bytes each, any alignment) that are
 * not finite (exponent all ones); *first gets the first one's index and
 * *nan whether it is a NaN.  The first pass is branch-free. */
static uint64_t count_half_nonfinite(const uint8_t *x, size_t n, size_t stride, size_t *first,
                                     int *nan)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, x + i * stride, 2);
        any |= (h & 0x7c00u) == 0x7c00u;
    }
    if (!any) return 0;
    uint64_t count = 0;
    for (size_t i = n; i-- > 0;) {
        uint16_t h;
        memcpy(&h, x + i * stride, 2);
        if ((h & 0x7c00u) == 0x7c00u) {
            count++;
            *first = i;
            *nan = (h & 0x3ffu) != 0;
        }
    }
    return count;
}

/* An F32 or F16 tensor must hold finite values; a Q8_0 / Q4_0 tensor
 * finite scales small enough that every q * s (|q| <= 128) is finite too:
 * a larger one dequantizes to an infinity (a finite half always is). */
static int check_tensor(const tsr_checkpoint *m, const tsr_tensor *t, int kind, int layer,
                        tsr_err *e)
{
    size_t numel = (size_t)t->rows * (size_t)t->cols, first = 0;
    int dense = t->type == TSR_DT_F32 || t->type == TSR_DT_F16, nan = 0;
    uint64_t bad;
    const char *what = "";
    if (t->type == TSR_DT_F16 || t->blk) {
        size_t ng = t->type == TSR_DT_F16 ? numel : numel / (size_t)t->group;
        size_t stride = t->type == TSR_DT_F16 ? 2u : t->type == TSR_DT_Q8_0 ? TSR_GGML_Q8_BYTES
                                                                            : TSR_GGML_Q4_BYTES;
        bad = count_half_nonfinite(t->blk, ng, stride, &first, &nan);
        what = nan ? "NaN" : "Inf";
    } else {
        const float *v = dense ? t->f : t->s;
        bad = dense ? count_out_of_range(v, numel, FLT_MAX, &first)
                    : count_out_of_range(v, numel / (size_t)t->group, FLT_MAX / 128.0f, &first);
        if (bad) what = isnan(v[first]) ? "NaN" : isinf(v[first]) ? "Inf" : "too large";
    }
    if (!bad) return TSR_OK;
    char name[64];
    tensor_name(m, kind, layer, name, sizeof name);
    if (dense)
        return tsr_seterr(e, TSR_ERR_FORMAT,
                          "%s: tensor %s holds %llu non-finite weight%s (the first, %s, at "
                          "element %zu): refused", m->path, name, (unsigned long long)bad,
                          bad == 1 ? "" : "s", what, first);
    return tsr_seterr(e, TSR_ERR_FORMAT,
                      "%s: tensor %s holds %llu %s scale%s that %s not finite or too large to "
                      "dequantize (the first, %s, of group %zu): refused", m->path, name,
                      (unsigned long long)bad, t->type == TSR_DT_Q4_0 ? "Q4_0" : "Q8_0",
                      bad == 1 ? "" : "s", bad == 1 ? "is" : "are", what, first);
}

int tsr_checkpoint_check_finite(const tsr_checkpoint *m, tsr_err *e)
{
    int rc;
    if ((rc = check_tensor(m, &m->tok_embedding, T_EMB, 0, e))) return rc;
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const tsr_tensor *per[9] = { &m->rms_att[l], &m->wq[l], &m->wk[l], &m->wv[l],
                                     &m->wo[l], &m->rms_ffn[l], &m->w1[l], &m->w2[l],
                                     &m->w3[l] };
        for (int k = 0; k < 9; k++)
            if ((rc = check_tensor(m, per[k], T_RMS_ATT + k, l, e))) return rc;
        if (m->cfg.qkv_bias &&
            ((rc = check_tensor(m, &m->bq[l], T_BQ, l, e)) ||
             (rc = check_tensor(m, &m->bk[l], T_BK, l, e)) ||
             (rc = check_tensor(m, &m->bv[l], T_BV, l, e))))
            return rc;
    }
    if ((rc = check_tensor(m, &m->rms_final, T_RMS_FINAL, 0, e))) return rc;
    if (!m->cfg.shared_classifier && (rc = check_tensor(m, &m->wcls, T_WCLS, 0, e))) return rc;
    return TSR_OK;
}

int tsr_checkpoint_stage_view(const tsr_checkpoint *m, int l0, int l1, tsr_checkpoint *view,
                              tsr_err *e)
{
    if (!m || !view || l0 < 0 || l1 <= l0 || l1 > m->cfg.n_layers)
        return tsr_seterr(e, TSR_ERR_ARG, "stage layers %d..%d outside the model's 0..%d", l0,
                          l1, m ? m->cfg.n_layers : 0);
    *view = *m;
    view->cfg.n_layers = l1 - l0;
    view->rms_att = m->rms_att + l0;
    view->wq = m->wq + l0;
    view->wk = m->wk + l0;
    view->wv = m->wv + l0;
    view->wo = m->wo + l0;
    view->rms_ffn = m->rms_ffn + l0;
    view->w1 = m->w1 + l0;
    view->w2 = m->w2 + l0;
    view->w3 = m->w3 + l0;
    view->bq = m->bq ? m->bq + l0 : NULL;
    view->bk = m->bk ? m->bk + l0 : NULL;
    view->bv = m->bv ? m->bv + l0 : NULL;
    /* nothing of the view is its own */
    view->map = NULL;
    view->map_len = 0;
    view->owned = NULL;
    view->tok = NULL;
    view->chat_template = NULL;
    return TSR_OK;
}

void tsr_checkpoint_close(tsr_checkpoint *m)
{
    if (!m) return;
    if (m->map) munmap(m->map, m->map_len);
    free(m->owned);
    tsr_tokenizer_free(m->tok);
    free(m->chat_template);
    free(m);
}

void tsr_checkpoint_prefetch(const tsr_checkpoint *m)
{
    if (m && m->map) (void)madvise(m->map, m->map_len, MADV_WILLNEED);
}

void tsr_checkpoint_evict(const tsr_checkpoint *m)
{
    /* MADV_DONTNEED on a read-only private file mapping never written
     * only unmaps: the pages stay in the page cache, the next touch maps
     * them again */
    if (m && m->map) (void)madvise(m->map, m->map_len, MADV_DONTNEED);
}

/* A tensor without its data: shape and type stay. */
static void clear_data(tsr_tensor *t)
{
    t->f = NULL;
    t->q = NULL;
    t->q4 = NULL;
    t->s = NULL;
    t->blk = NULL;
}

void tsr_checkpoint_drop_weights(tsr_checkpoint *m)
{
    if (!m) return;
    if (m->map) munmap(m->map, m->map_len);
    m->map = NULL;   /* owned stays: it holds the per-layer tensor arrays */
    clear_data(&m->tok_embedding);
    clear_data(&m->rms_final);
    clear_data(&m->wcls);
    tsr_tensor *per[12] = { m->rms_att, m->wq, m->wk, m->wv, m->wo, m->rms_ffn, m->w1, m->w2,
                            m->w3, m->bq, m->bk, m->bv };
    for (int k = 0; k < 12; k++)
        for (int l = 0; per[k] && l < m->cfg.n_layers; l++) clear_data(&per[k][l]);
}

/* ------------------------------------------------------------------------ */
/* Shape checks                                                               */

/* One range check: returns 0 when lo <= v <= hi, else records the problem. */
static int check_range(const char *name, const char *field, long long v,
                       long long hi, int code, tsr_err *e)
{
    if (v >= 1 && v <= hi) return 0;
    tsr_seterr(e, code, "%s: %s %lld out of range (1..%lld)", name, field, v, hi);
    return 1;
}

int tsr_config_check(const tsr_config *cfg, const char *name, int code,
                     tsr_err *e)
{
    const tsr_config *p = cfg;
    if (check_range(name, "dim", p->dim, TSR_CKPT_MAX_DIM, code, e) ||
        check_range(name, "hidden_dim", p->hidden_dim, TSR_CKPT_MAX_DIM, code, e) ||
        check_range(name, "n_layers", p->n_layers, TSR_CKPT_MAX_LAYERS, code, e) ||
        check_range(name, "n_heads", p->n_heads, p->dim, code, e) ||
        check_range(name, "n_kv_heads", p->n_kv_heads, p->n_heads, code, e) ||
        check_range(name, "vocab_size", p->vocab_size, TSR_CKPT_MAX_VOCAB, code, e) ||
        check_range(name, "seq_len", p->seq_len, TSR_CKPT_MAX_SEQ, code, e))
        return code;
    if (p->dim % p->n_heads != 0)
        return tsr_seterr(e, code, "%s: n_heads %d does not divide dim %d",
                          name, p->n_heads, p->dim);
    if (p->n_heads % p->n_kv_heads != 0)
        return tsr_seterr(e, code, "%s: n_kv_heads %d does not divide n_heads %d",
                          name, p->n_kv_heads, p->n_heads);
    int head_size = p->dim / p->n_heads;
    if (head_size % 2 != 0)   // RoPE rotates pairs
        return tsr_seterr(e, code, "%s: head_size %d (dim %d / n_heads %d) is odd",
                          name, head_size, p->dim, p->n_heads);
    if (p->format != TSR_FMT_LLAMA2C_V2) return TSR_OK;

    // Q8_0: the exporter quantizes each tensor's flat element list in whole
    // groups, so a tensor that leaves a remainder cannot be in a valid file.
    if (p->group_size <= 0)
        return tsr_seterr(e, code, "%s: Q8_0 group_size %d must be > 0",
                          name, p->group_size);
    uint64_t dim = (uint64_t)p->dim, hidden = (uint64_t)p->hidden_dim;
    uint64_t kv_dim = (uint64_t)p->n_kv_heads * (uint64_t)head_size;
    const struct { const char *what; uint64_t n; } q[] = {
        { "tok_embedding", (uint64_t)p->vocab_size * dim },
        { "wq/wo", dim * dim },
        { "wk/wv", kv_dim * dim },
        { "w1/w2/w3", hidden * dim },
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        if (q[i].n % (uint64_t)p->group_size != 0)
            return tsr_seterr(e, code,
                "%s: Q8_0 group_size %d does not divide the %llu elements of %s",
                name, p->group_size, (unsigned long long)q[i].n, q[i].what);
    return TSR_OK;
}
