/*
 * test_arch.c - the llama (Llama 3) and qwen2 architectures: tessera synth
 * --arch files load with their metadata; the device's logits equal a plain
 * C forward pass written here, which applies qwen2's biases and NEOX RoPE
 * and Llama 3's scaled RoPE the straightforward way (no row permutation,
 * frequencies from the converter's formula in double); other
 * architectures and malformed metadata are refused with one line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "tessera.h"
#include "gguf_write.h"
#include "test_util.h"

#define VOCAB_SPM tsr_test_path("vocab/ggml-vocab-llama-spm.gguf")
#define NTOK 6   /* prompt tokens of the logits tests */

/* ------------------------------------------------------------ helpers --- */

static void tmp_path(char *buf)
{
    strcpy(buf, "/tmp/tsr_arch_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

/* Write arch's shape (NULL: its tiny one) of type ty to path. */
static void synth(const char *path, const char *arch, const char *shape, int ty)
{
    char err[512];
    int rc = tsr_synth_gguf_file(arch, shape, VOCAB_SPM, path, ty, 7, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, TSR_OK);
}

static tsr_checkpoint *open_ck(const char *path)
{
    tsr_checkpoint *m = NULL;
    tsr_err e = { 0 };
    int rc = tsr_checkpoint_open(path, &m, &e);
    if (rc) print_error("%s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    return m;
}

/* ------------------------------------------------ reference forward --- */

/* A plain forward pass over a checkpoint, run.c's structure: every weight
 * dequantized with tsr_tensor_row, q/k/v biases added, RoPE by the file's
 * pairing (adjacent, or NEOX j with j + hs/2) at frequencies computed here
 * in double from the config (Llama 3 scaling: the converter's rule). */
typedef struct ref {
    const tsr_checkpoint *m;
    int dim, hid, hs, kvd, L, V, S;
    float *x, *xb, *xb2, *hb, *hb2, *q, *att, *logits, *row;  /* activations */
    float *kc, *vc;                                            /* (L, S, kvd) */
    double *freq;                                              /* (hs / 2,) */
} ref;

static void ref_init(ref *r, const tsr_checkpoint *m, int S)
{
    const tsr_config *c = &m->cfg;
    r->m = m;
    r->dim = c->dim; r->hid = c->hidden_dim; r->hs = c->dim / c->n_heads;
    r->kvd = c->n_kv_heads * r->hs; r->L = c->n_layers; r->V = c->vocab_size; r->S = S;
    int big = r->V > r->hid ? r->V : r->hid;
    r->x = calloc((size_t)r->dim, 4); r->xb = calloc((size_t)r->dim, 4);
    r->xb2 = calloc((size_t)r->dim, 4); r->hb = calloc((size_t)r->hid, 4);
    r->hb2 = calloc((size_t)r->hid, 4); r->q = calloc((size_t)r->dim, 4);
    r->att = calloc((size_t)S, 4); r->logits = calloc((size_t)r->V, 4);
    r->row = calloc((size_t)big, 4);
    r->kc = calloc((size_t)r->L * S * r->kvd, 4); r->vc = calloc((size_t)r->L * S * r->kvd, 4);
    r->freq = calloc((size_t)r->hs / 2, sizeof(double));
    for (int j = 0; j < r->hs / 2; j++) {
        double f = pow(c->rope_theta, -2.0 * j / r->hs);
        if (c->rope_scaled == 1) {
            double lo_wl = c->rope_orig_ctx / c->rope_low, hi_wl = c->rope_orig_ctx / c->rope_high;
            double wl = 2.0 * M_PI / f, k;
            if (wl < hi_wl) k = 1.0;
            else if (wl > lo_wl) k = c->rope_factor;
            else {
                double s = (c->rope_orig_ctx / wl - c->rope_low) / (c->rope_high - c->rope_low);
                k = 1.0 / ((1.0 - s) / c->rope_factor + s);
            }
            f /= k;
        }
        r->freq[j] = f;
    }
}

static void ref_free(ref *r)
{
    free(r->x); free(r->xb); free(r->xb2); free(r->hb); free(r->hb2); free(r->q);
    free(r->att); free(r->logits); free(r->row); free(r->kc); free(r->vc); free(r->freq);
}

/* W (d, n) @ x (n,) -> y (d,), in double */
static void matvec(ref *r, const tsr_tensor *w, const float *x, float *y, int d, int n)
{
    for (int i = 0; i < d; i++) {
        tsr_tensor_row(w, i, r->row);
        double s = 0;
        for (int j = 0; j < n; j++) s += (double)r->row[j] * x[j];
        y[i] = (float)s;
    }
}

static void rmsnorm(ref *r, float *o, const float *x, const tsr_tensor *w)
{
    double ss = 0;
    for (int i = 0; i < r->dim; i++) ss += (double)x[i] * x[i];
    float sc = (float)(1.0 / sqrt(ss / r->dim + r->m->cfg.norm_eps));
    tsr_tensor_row(w, 0, r->row);
    for (int i = 0; i < r->dim; i++) o[i] = r->row[i] * (sc * x[i]);
}

/* Rotate one head vector v (hs,) at position pos. */
static void rope(ref *r, float *v, int pos)
{
    int h = r->hs / 2;
    for (int j = 0; j < h; j++) {
        int a = r->m->cfg.rope_neox ? j : 2 * j, b = r->m->cfg.rope_neox ? j + h : 2 * j + 1;
        double th = pos * r->freq[j], c = cos(th), s = sin(th);
        double v0 = v[a], v1 = v[b];
        v[a] = (float)(v0 * c - v1 * s);
        v[b] = (float)(v0 * s + v1 * c);
    }
}

static void add_bias(ref *r, float *v, const tsr_tensor *b, int n)
{
    tsr_tensor_row(b, 0, r->row);
    for (int i = 0; i < n; i++) v[i] += r->row[i];
}

/* Token tok at position pos -> r->logits (V,). */
static void ref_forward(ref *r, int tok, int pos)
{
    const tsr_checkpoint *m = r->m;
    int dim = r->dim, hs = r->hs, kvd = r->kvd, kvmul = m->cfg.n_heads / m->cfg.n_kv_heads;
    tsr_tensor_row(&m->tok_embedding, tok, r->x);
    for (int l = 0; l < r->L; l++) {
        float *k = r->kc + ((size_t)l * r->S + pos) * kvd, *v = r->vc + ((size_t)l * r->S + pos) * kvd;
        rmsnorm(r, r->xb, r->x, &m->rms_att[l]);
        matvec(r, &m->wq[l], r->xb, r->q, dim, dim);
        matvec(r, &m->wk[l], r->xb, k, kvd, dim);
        matvec(r, &m->wv[l], r->xb, v, kvd, dim);
        if (m->cfg.qkv_bias) {
            add_bias(r, r->q, &m->bq[l], dim);
            add_bias(r, k, &m->bk[l], kvd);
            add_bias(r, v, &m->bv[l], kvd);
        }
        for (int h = 0; h < dim / hs; h++) rope(r, r->q + h * hs, pos);
        for (int h = 0; h < kvd / hs; h++) rope(r, k + h * hs, pos);
        for (int h = 0; h < dim / hs; h++) {
            const float *q = r->q + h * hs;
            int kh = h / kvmul;
            double mx = -1e30, sum = 0;
            for (int t = 0; t <= pos; t++) {
                const float *kt = r->kc + ((size_t)l * r->S + t) * kvd + kh * hs;
                double s = 0;
                for (int i = 0; i < hs; i++) s += (double)q[i] * kt[i];
                r->att[t] = (float)(s / sqrt((double)hs));
                if (r->att[t] > mx) mx = r->att[t];
            }
            for (int t = 0; t <= pos; t++) { r->att[t] = (float)exp(r->att[t] - mx); sum += r->att[t]; }
            for (int i = 0; i < hs; i++) {
                double o = 0;
                for (int t = 0; t <= pos; t++)
                    o += r->att[t] / sum * r->vc[((size_t)l * r->S + t) * kvd + kh * hs + i];
                r->xb[h * hs + i] = (float)o;
            }
        }
        matvec(r, &m->wo[l], r->xb, r->xb2, dim, dim);
        for (int i = 0; i < dim; i++) r->x[i] += r->xb2[i];
        rmsnorm(r, r->xb, r->x, &m->rms_ffn[l]);
        matvec(r, &m->w1[l], r->xb, r->hb, r->hid, dim);
        matvec(r, &m->w3[l], r->xb, r->hb2, r->hid, dim);
        for (int i = 0; i < r->hid; i++) r->hb[i] = r->hb[i] / (1.0f + expf(-r->hb[i])) * r->hb2[i];
        matvec(r, &m->w2[l], r->hb, r->xb2, dim, r->hid);
        for (int i = 0; i < dim; i++) r->x[i] += r->xb2[i];
    }
    rmsnorm(r, r->x, r->x, &m->rms_final);
    matvec(r, &m->wcls, r->x, r->logits, r->V, dim);
}

/* The device's logits after toks (n), F32 or quantized, into out (V). */
static void device_logits(const char *path, int f32, const int *toks, int n, float *out, int V)
{
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu", &dev), TSR_OK);
    tsr_model_opts o = { .weights_f32 = f32, .seq_len = 64, .n_seqs = 1 };
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, path, &o, &m);
    if (rc) print_error("%s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_tokens(s, toks, n), TSR_OK);
    tsr_gen_opts go = { .max_tokens = 1, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &go, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(tsr_seq_read_logits(s, out, V), TSR_OK);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* NMSE of got against want (n): sum (g - w)^2 / sum w^2. */
static double nmse(const float *got, const float *want, int n)
{
    double e = 0, p = 0;
    for (int i = 0; i < n; i++) {
        e += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        p += (double)want[i] * want[i];
    }
    return e / p;
}

/* The device against the reference on arch's tiny file of type ty: with
 * F32 weights on chip within float rounding (the angles' fp32 frequencies
 * included), in the file's quantization (an fp32 file: Q8_0) within tol
 * (the int8 activations' error). */
static void logits_match(const char *arch, int ty, double tol)
{
    char path[64];
    tmp_path(path);
    synth(path, arch, NULL, ty);
    tsr_checkpoint *m = open_ck(path);
    const int toks[NTOK] = { 1, 9038, 2501, 263, 931, 29892 };   /* BOS "Once upon a time," */
    ref r;
    ref_init(&r, m, 64);
    for (int i = 0; i < NTOK; i++) ref_forward(&r, toks[i], i);
    int V = m->cfg.vocab_size;
    float *dev = malloc((size_t)V * sizeof *dev);
    for (int f32 = 1; f32 >= 0; f32--) {
        device_logits(path, f32, toks, NTOK, dev, V);
        double e = nmse(dev, r.logits, V);
        print_message("%s %s: logits NMSE %.3g against the reference\n", arch,
                      f32 ? "F32 on chip" : "file's type on chip", e);
        assert_true(e < (f32 ? 1e-8 : tol));
        if (f32) {
            /* element by element, and the same greedy token */
            int best_d = 0, best_r = 0;
            for (int i = 0; i < V; i++) {
                assert_float_equal(dev[i], r.logits[i], 1e-4 + 1e-4 * fabsf(r.logits[i]));
                if (dev[i] > dev[best_d]) best_d = i;
                if (r.logits[i] > r.logits[best_r]) best_r = i;
            }
            assert_int_equal(best_d, best_r);
        }
    }
    free(dev);
    ref_free(&r);
    tsr_checkpoint_close(m);
    unlink(path);
}

/* -------------------------------------------------------------- tests --- */

/* Each arch's tiny file, in each type, opens with its metadata. */
static void synth_files_load(void **state)
{
    (void)state;
    static const char *const archs[2] = { "llama3", "qwen2" };
    for (int a = 0; a < 2; a++)
        for (int ty = TSR_SYNTH_F32; ty <= TSR_SYNTH_Q4_0; ty++) {
            char path[64];
            tmp_path(path);
            synth(path, archs[a], NULL, ty);
            tsr_checkpoint *m = open_ck(path);
            const tsr_config *c = &m->cfg;
            int qwen = a == 1;
            assert_int_equal(c->arch, qwen ? TSR_ARCH_QWEN2 : TSR_ARCH_LLAMA);
            assert_int_equal(c->qkv_bias, qwen);
            assert_int_equal(c->rope_neox, qwen);
            assert_int_equal(c->dim, 128);
            assert_int_equal(c->hidden_dim, qwen ? 320 : 384);
            assert_int_equal(c->n_layers, 2);
            assert_int_equal(c->n_heads, 4);
            assert_int_equal(c->n_kv_heads, 2);
            assert_int_equal(c->vocab_size, 32000);
            assert_int_equal(c->shared_classifier, 1);
            assert_float_equal(c->rope_theta, qwen ? 1e6f : 5e5f, 1.0f);
            assert_float_equal(c->norm_eps, qwen ? 1e-6f : 1e-5f, 1e-9f);
            /* the vocabulary's special ids came along */
            assert_int_equal(c->bos_id, 1);
            assert_int_equal(c->eos_id, 2);
            assert_int_equal(m->wq[0].type, ty == TSR_SYNTH_F32 ? TSR_DT_F32
                                          : ty == TSR_SYNTH_Q8_0 ? TSR_DT_Q8_0 : TSR_DT_Q4_0);
            if (qwen) {
                assert_int_equal(m->bq[1].cols, 128);
                assert_int_equal(m->bk[1].cols, 64);
                assert_int_equal(m->bv[1].type, TSR_DT_F32);
                assert_null(m->rope_ff);
            } else {
                /* Llama 3 factors: 1 for the short wavelengths, 32 for the long */
                assert_null(m->bq);
                assert_non_null(m->rope_ff);
                assert_float_equal(m->rope_ff[0], 1.0f, 0.0f);
                assert_float_equal(m->rope_ff[15], 32.0f, 0.0f);
                float f[16];
                tsr_checkpoint_rope_freqs(m, f);
                assert_float_equal(f[0], 1.0f, 0.0f);
                assert_float_equal(f[15], powf(5e5f, -30.0f / 32.0f) / 32.0f, 1e-10f);
            }
            tsr_checkpoint_close(m);
            unlink(path);
        }
    /* the real models' shapes, as plan takes them */
    tsr_config c;
    tsr_err e = { 0 };
    assert_int_equal(tsr_synth_shape("qwen2.5-0.5b", &c, &e), TSR_OK);
    assert_int_equal(c.dim, 896);
    assert_int_equal(c.n_kv_heads, 2);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(tsr_synth_shape("llama3.2-1b", &c, &e), TSR_OK);
    assert_int_equal(c.hidden_dim, 8192);
    assert_int_equal(c.rope_scaled, 1);
    /* a shape of the other architecture is refused */
    char path[64], err[256];
    tmp_path(path);
    assert_int_equal(tsr_synth_gguf_file("qwen2", "smollm2-135m", VOCAB_SPM, path,
                                         TSR_SYNTH_F32, 1, err, sizeof err), TSR_ERR_ARG);
    assert_non_null(strstr(err, "not of architecture qwen2"));
    assert_int_equal(tsr_synth_gguf_file("gpt2", NULL, VOCAB_SPM, path, TSR_SYNTH_F32, 1, err,
                                         sizeof err), TSR_ERR_ARG);
    unlink(path);
}

/* qwen2: biases before NEOX RoPE, the device against the reference. */
static void qwen2_logits_equal_reference(void **state)
{
    (void)state;
    logits_match("qwen2", TSR_SYNTH_F32, 1e-3);
    logits_match("qwen2", TSR_SYNTH_Q8_0, 1e-3);
}

/* Llama 3: the file's rope_freqs factors. */
static void llama3_scaled_rope_logits_equal_reference(void **state)
{
    (void)state;
    logits_match("llama3", TSR_SYNTH_F32, 1e-3);
    logits_match("llama3", TSR_SYNTH_Q4_0, 1e-2);
}

/* tessera plan on the real shapes: a U55C holds none of them, and the
 * plan says how many cards' memory they need and why a layer split
 * cannot hold them (the embedding stays whole on one card). */
static void plan_real_shapes(void **state)
{
    (void)state;
    static const struct { const char *shape; int weights; const char *floor, *emb; } c[] = {
        { "qwen2.5-0.5b", TSR_WEIGHTS_Q8, "need 13 cards'", "(151936 x 896) alone takes 153.2 MB" },
        { "qwen2.5-0.5b", TSR_WEIGHTS_Q4, "need 7 cards'", "(151936 x 896) alone takes 76.6 MB" },
        { "llama3.2-1b", TSR_WEIGHTS_Q8, "need 32 cards'", "(128256 x 2048) alone takes 295.5 MB" },
        { "llama3.2-1b", TSR_WEIGHTS_Q4, "need 16 cards'", "(128256 x 2048) alone takes 147.8 MB" },
    };
    static char out[1 << 16];
    for (int i = 0; i < 4; i++) {
        tsr_plan_opts o = { .part = "u55c", .shape = c[i].shape, .weights = c[i].weights };
        char err[256];
        int fits = -2;
        assert_int_equal(tsr_plan_report(NULL, &o, 0, out, sizeof out, &fits, err, sizeof err),
                         TSR_OK);
        assert_int_equal(fits, 0);
        assert_non_null(strstr(out, c[i].floor));
        assert_non_null(strstr(out, c[i].emb));
    }
}

/* The fuzzers' small seeds of the new metadata (tests/support/gguf_write.c)
 * open with it. */
static void tiny_seeds_open(void **state)
{
    (void)state;
    tsr_gbuf b = { 0 };
    tsr_gguf_build(&b, &(tsr_gguf_spec){ .qwen2 = 1 });
    tsr_checkpoint *m = NULL;
    tsr_err e = { 0 };
    assert_int_equal(tsr_checkpoint_open_memory(b.p, b.n, "q.gguf", &m, &e), TSR_OK);
    assert_int_equal(m->cfg.arch, TSR_ARCH_QWEN2);
    assert_int_equal(m->cfg.rope_neox, 1);
    assert_int_equal(m->bk[0].cols, 16);
    assert_float_equal(tsr_tensor_get(&m->bq[0], 5), (float)(5 % 7 - 3) / 4, 0.0f);
    tsr_checkpoint_close(m);
    free(b.p);
    b = (tsr_gbuf){ 0 };
    tsr_gguf_build(&b, &(tsr_gguf_spec){ .rope_freqs = 1 });
    assert_int_equal(tsr_checkpoint_open_memory(b.p, b.n, "l.gguf", &m, &e), TSR_OK);
    assert_int_equal(m->cfg.arch, TSR_ARCH_LLAMA);
    assert_int_equal(m->cfg.qkv_bias, 0);
    assert_float_equal(m->rope_ff[7], 8.0f, 0.0f);
    float f[8];
    tsr_checkpoint_rope_freqs(m, f);
    assert_float_equal(f[7], 1.0f / powf(5e5f, 14.0f / 16.0f) / 8.0f, 0.0f);
    tsr_checkpoint_close(m);
    free(b.p);
}

/* Another architecture, by name, in one line. */
static void other_architectures_refused(void **state)
{
    (void)state;
    static const char *const names[2] = { "gpt2", "phi3" };
    for (int i = 0; i < 2; i++) {
        tsr_gbuf b = { 0 };
        tsr_gguf_build(&b, &(tsr_gguf_spec){ .arch = names[i] });
        tsr_checkpoint *m = NULL;
        tsr_err e = { 0 };
        assert_int_equal(tsr_checkpoint_open_memory(b.p, b.n, "x.gguf", &m, &e),
                         TSR_ERR_UNSUPPORTED);
        assert_null(m);
        char want[96];
        snprintf(want, sizeof want, "x.gguf: architecture '%s' is not supported (llama, qwen2)",
                 names[i]);
        assert_string_equal(e.msg, want);
        free(b.p);
    }
}

/* Find the tensor info of name in a GGUF file's bytes: its first shape
 * word (ne[0]). */
static uint8_t *tensor_ne0(uint8_t *p, size_t n, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 8; i + nl + 12 < n; i++) {
        uint64_t len;
        memcpy(&len, p + i - 8, 8);
        if (len == nl && !memcmp(p + i, name, nl)) return p + i + nl + 4;
    }
    return NULL;
}

/* Metadata errors: a bias of the wrong length, a bias missing, a rope
 * factor that is no divisor, a qwen2 file with llama's keys. */
static void bad_metadata_refused(void **state)
{
    (void)state;
    char path[64];
    tmp_path(path);
    synth(path, "qwen2", NULL, TSR_SYNTH_F32);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *orig = malloc(n), *b = malloc(n);
    assert_int_equal(fread(orig, 1, n, f), n);
    fclose(f);
    unlink(path);

    tsr_checkpoint *m = NULL;
    tsr_err e = { 0 };
    memcpy(b, orig, n);
    uint8_t *ne0 = tensor_ne0(b, n, "blk.1.attn_k.bias");
    assert_non_null(ne0);
    uint64_t v = 32;   /* kv_dim is 64 */
    memcpy(ne0, &v, 8);
    assert_int_equal(tsr_checkpoint_open_memory(b, n, "q.gguf", &m, &e), TSR_ERR_FORMAT);
    assert_string_equal(e.msg, "q.gguf: tensor blk.1.attn_k.bias has shape [32, 1, 1, 1], "
                               "expected [64, 1] (cols, rows)");
    memcpy(b, orig, n);
    uint8_t *nm = tensor_ne0(b, n, "blk.0.attn_v.bias") - 4 - 4;   /* "bias" -> "biaz" */
    nm[3] = 'z';
    assert_int_equal(tsr_checkpoint_open_memory(b, n, "q.gguf", &m, &e), TSR_ERR_FORMAT);
    assert_string_equal(e.msg, "q.gguf: missing tensor blk.0.attn_v.bias");
    assert_null(m);
    free(orig);
    free(b);

    /* the llama tiny model's keys under a qwen2 name */
    tsr_gbuf g = { 0 };
    tsr_gguf_build(&g, &(tsr_gguf_spec){ .arch = "qwen2" });
    assert_int_equal(tsr_checkpoint_open_memory(g.p, g.n, "t.gguf", &m, &e), TSR_ERR_FORMAT);
    assert_string_equal(e.msg, "t.gguf: no qwen2.embedding_length");
    free(g.p);

    /* a rope factor of 0 */
    tmp_path(path);
    synth(path, "llama3", NULL, TSR_SYNTH_F32);
    f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc(n);
    assert_int_equal(fread(b, 1, n, f), n);
    fclose(f);
    unlink(path);
    /* rope_freqs.weight is the last tensor: its 16 floats end the file */
    float zero = 0.0f;
    memcpy(b + n - 16 * 4 + 3 * 4, &zero, 4);
    assert_int_equal(tsr_checkpoint_open_memory(b, n, "l.gguf", &m, &e), TSR_ERR_FORMAT);
    assert_string_equal(e.msg, "l.gguf: rope_freqs.weight[3] is 0, not a positive divisor");
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(synth_files_load),
        cmocka_unit_test(qwen2_logits_equal_reference),
        cmocka_unit_test(llama3_scaled_rope_logits_equal_reference),
        cmocka_unit_test(plan_real_shapes),
        cmocka_unit_test(tiny_seeds_open),
        cmocka_unit_test(other_architectures_refused),
        cmocka_unit_test(bad_metadata_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
