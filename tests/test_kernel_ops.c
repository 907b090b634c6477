/*
 * test_kernel_ops.c - the kernel's building blocks (kernels/) against plain
 * math: tiled Q8 and F32 GEMV over several mesh shapes, RMSNorm, RoPE,
 * softmax, attention with GQA, the sampler, and LOAD/CONFIGURE refusals.
 *
 * A small synthetic checkpoint (dim 40, hidden 72, G 16: the group size
 * divides neither) is placed through the real path: weight image builder
 * (driver/weight_image.c) -> CONFIGURE and LOAD commands -> kernel state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The emulator's kernel state layout (the library is built with it). */
#ifndef TSR_EMU
#define TSR_EMU
#endif
#include "model.h"
#include "ref/golden.h"
#include "tsr_emu.h"
#include "tsr_ops.h"
#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* A synthetic checkpoint                                                     */

enum { DIM = 40, HID = 72, LAYERS = 2, HEADS = 4, KVH = 2, VOCAB = 50, SEQ = 16, G = 16 };
#define HS (DIM / HEADS)
#define KVD (KVH * HS)

typedef struct fixture {
    tsr_checkpoint ck;
    tsr_tensor     layer_t[8][LAYERS];   /* rms_att wq wk wv wo rms_ffn w1 w2 w3 */
    float         *pool;                 /* every tensor's values */
} fixture;

static uint64_t rng_state = 88172645463325252ull;
static float frand(void)   /* uniform in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static tsr_tensor make_t(float **at, int rows, int cols, int ones)
{
    tsr_tensor t = { .type = TSR_DT_F32, .rows = rows, .cols = cols, .f = *at };
    for (int i = 0; i < rows * cols; i++) (*at)[i] = ones ? 1.0f + 0.1f * frand() : 0.3f * frand();
    *at += rows * cols;
    return t;
}

static fixture *fixture_new(void)
{
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    size_t per_layer = 2 * DIM + 2 * DIM * DIM + 2 * KVD * DIM + 3 * HID * DIM;
    fx->pool = malloc((VOCAB * DIM + DIM + LAYERS * per_layer) * sizeof(float));
    assert_non_null(fx->pool);
    float *at = fx->pool;
    tsr_checkpoint *c = &fx->ck;
    c->cfg = (tsr_config){ .dim = DIM, .hidden_dim = HID, .n_layers = LAYERS, .n_heads = HEADS,
                           .n_kv_heads = KVH, .vocab_size = VOCAB, .seq_len = SEQ,
                           .shared_classifier = 1, .rope_theta = 10000.0f, .norm_eps = 1e-5f };
    c->tok_embedding = make_t(&at, VOCAB, DIM, 0);
    c->wcls = c->tok_embedding;
    c->rms_final = make_t(&at, 1, DIM, 1);
    tsr_tensor **slot[8] = { &c->rms_att, &c->wq, &c->wk, &c->wv, &c->wo, &c->rms_ffn, &c->w1, &c->w2 };
    for (int k = 0; k < 8; k++) *slot[k] = fx->layer_t[k];
    c->w3 = calloc(LAYERS, sizeof *c->w3);
    assert_non_null(c->w3);
    for (int l = 0; l < LAYERS; l++) {
        c->rms_att[l] = make_t(&at, 1, DIM, 1);
        c->wq[l] = make_t(&at, DIM, DIM, 0);
        c->wk[l] = make_t(&at, KVD, DIM, 0);
        c->wv[l] = make_t(&at, KVD, DIM, 0);
        c->wo[l] = make_t(&at, DIM, DIM, 0);
        c->rms_ffn[l] = make_t(&at, 1, DIM, 1);
        c->w1[l] = make_t(&at, HID, DIM, 0);
        c->w2[l] = make_t(&at, DIM, HID, 0);
        c->w3[l] = make_t(&at, HID, DIM, 0);
    }
    strcpy(c->path, "synthetic");
    return fx;
}

static void fixture_free(fixture *fx)
{
    free(fx->ck.w3);
    free(fx->pool);
    free(fx);
}

/* ------------------------------------------------------------------------ */
/* Kernel state: PEs allocated like the emulator, image streamed by LOAD     */

static tsr_kstate *kstate_new(int pes)
{
    tsr_kstate *st = calloc(1, sizeof *st);
    assert_non_null(st);
    tsr_kernel_init(st, (uint32_t)pes);
    for (int p = 0; p < pes; p++) {
        st->pe[p] = calloc(1, sizeof(tsr_pe));
        assert_non_null(st->pe[p]);
    }
    return st;
}

static void kstate_free(tsr_kstate *st, int pes)
{
    for (int p = 0; p < pes; p++) free(st->pe[p]);
    free(st);
}

static int kcmd(tsr_kstate *st, uint32_t op, uint32_t slot, uint32_t a0, uint32_t a1, uint32_t a2,
                uint32_t a3, const uint32_t *in, uint32_t *out)
{
    uint32_t cmd[TSR_CMD_WORDS] = { op, slot, a0, a1, a2, a3, 0, 0 };
    return tsr_kernel_run(st, cmd, in, out, NULL);
}

/* Place fx on a rows x cols mesh in dtype; returns the state. */
static tsr_kstate *place(fixture *fx, uint32_t rows, uint32_t cols, int f32)
{
    tsr_load_opts o = { .weights_f32 = f32, .group_size = G, .n_slots = 2 };
    tsr_kconfig kc;
    tsr_err e = { 0 };
    assert_int_equal(tsr_wimage_config(&fx->ck, &o, 1, &kc, &e), TSR_OK);
    kc.mesh_rows = rows;
    kc.mesh_cols = cols;
    tsr_wimage img;
    assert_int_equal(tsr_wimage_build(&fx->ck, &kc, &img, &e), TSR_OK);
    tsr_kstate *st = kstate_new((int)(rows * cols));
    uint32_t cfgw[TSR_KCONFIG_WORDS], fit[TSR_KFIT_WORDS];
    memcpy(cfgw, &kc, sizeof cfgw);
    assert_int_equal(kcmd(st, TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, cfgw, fit), TSR_K_OK);
    assert_int_equal(fit[0], TSR_K_OK);
    for (int i = 0; i < img.n_chunks; i++) {
        const tsr_wchunk *ch = &img.chunks[i];
        assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, ch->pe, ch->region, ch->offset, ch->length,
                              ch->data, NULL), TSR_K_OK);
    }
    tsr_wimage_free(&img);
    return st;
}

static const uint32_t MESHES[][2] = { { 1, 1 }, { 2, 1 }, { 1, 2 }, { 2, 2 }, { 1, 4 },
                                      { 4, 4 }, { 3, 2 }, { 8, 8 } };
#define N_MESHES (sizeof MESHES / sizeof MESHES[0])

static void assert_close(const float *a, const float *ref, int n, double rel)
{
    double scale = 0;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
    for (int i = 0; i < n; i++) {
        if (fabs(a[i] - ref[i]) > rel * scale) {
            print_error("element %d: %.9g vs %.9g\n", i, a[i], ref[i]);
            fail();
        }
    }
}

/* ------------------------------------------------------------------------ */
/* GEMV                                                                       */

/* Q8 GEMV of every matrix of layer 0 (dim 40 and hidden 72 inputs, G 16)
 * equals golden's plain per-row Q8 GEMV on every mesh shape. */
static void gemv_q8_tiled_matches_plain(void **state)
{
    (void)state;
    fixture *fx = fixture_new();
    golden g;
    assert_int_equal(golden_build(&g, &fx->ck, GOLDEN_Q8, G, SEQ), TSR_OK);
    const golden_mat *mats[] = { &g.layers[0].wq, &g.layers[0].wk, &g.layers[0].wv,
                                 &g.layers[0].wo, &g.layers[0].w1, &g.layers[0].w2,
                                 &g.layers[0].w3 };
    float x[HID], y[HID + VOCAB], want[HID + VOCAB], xs[HID];
    int8_t xq[HID];
    for (size_t k = 0; k < N_MESHES; k++) {
        tsr_kstate *st = place(fx, MESHES[k][0], MESHES[k][1], 0);
        for (int w = 0; w < TSR_W_COUNT; w++) {
            int n = mats[w]->cols, d = mats[w]->rows;
            for (int j = 0; j < n; j++) x[j] = frand();
            golden_quantize(x, n, G, xq, xs);
            golden_gemv_q8(mats[w], xq, xs, want);
            tsr_mesh_gemv(st, TSR_MAT_LAYER(0, w), x, y);
            assert_close(y, want, d, 1e-5);
        }
        /* the classifier (shared embedding), vocab rows */
        for (int j = 0; j < DIM; j++) x[j] = frand();
        golden_quantize(x, DIM, G, xq, xs);
        golden_gemv_q8(&g.wcls, xq, xs, want);
        tsr_mesh_gemv(st, TSR_MAT_EMB, x, y);
        assert_close(y, want, VOCAB, 1e-5);
        /* one row on a 1x1 mesh is bit-exact */
        if (MESHES[k][0] * MESHES[k][1] == 1) assert_memory_equal(y, want, sizeof(float) * VOCAB);
        /* the embedding gather dequantizes row 7 */
        tsr_mesh_embed(st, 7, x);
        for (int j = 0; j < DIM; j++)
            assert_float_equal(x[j], (float)g.tok_emb.q[7 * DIM + j] *
                                         g.tok_emb.s[7 * g.tok_emb.n_groups + j / G], 0.0f);
        kstate_free(st, (int)(MESHES[k][0] * MESHES[k][1]));
    }
    golden_free(&g);
    fixture_free(fx);
}

/* F32 GEMV equals W @ x in plain fp32 on every mesh shape. */
/* The emulator's SIMD rows (emu/tile_simd.c) against the numerics
 * contract's per-row loop, bit for bit: G 32 and 64, several chunks of
 * groups (ng up to 40), rows not a multiple of 8 (the caller finishes those),
 * weights spanning all of -128..127 and activations -127..127. */
static void simd_rows_bit_identical(void **state)
{
    (void)state;
    if (!tsr_emu_simd_available()) { skip(); return; }
    static const uint32_t shapes[][3] = { { 32, 3, 27 }, { 32, 17, 16 }, { 32, 40, 13 },
                                          { 64, 1, 8 }, { 64, 20, 21 } };   /* G, ng, rows */
    uint64_t rng = 12345;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        uint32_t G = shapes[k][0], ng = shapes[k][1], rows = shapes[k][2], n = ng * G;
        int8_t *w = malloc((size_t)rows * n), *x = malloc(n);    // (rows, n), (n,)
        float *ws = malloc(sizeof(float) * rows * ng), *xs = malloc(sizeof(float) * ng);
        float *got = calloc(rows, sizeof(float));                  // (rows,)
        assert_non_null(w); assert_non_null(x); assert_non_null(ws); assert_non_null(xs);
        assert_non_null(got);
        for (uint32_t i = 0; i < rows * n; i++) {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            w[i] = (int8_t)(rng >> 24);                     /* any int8, -128 included */
        }
        w[0] = -128;
        for (uint32_t j = 0; j < n; j++) {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            x[j] = (int8_t)((int)(rng % 255u) - 127);       /* the quantizer's range */
        }
        for (uint32_t i = 0; i < rows * ng; i++) ws[i] = 1e-3f * (float)(1 + i % 97);
        for (uint32_t g = 0; g < ng; g++) xs[g] = 3e-2f / (float)(1 + g % 13);
        uint32_t done = tsr_emu_tile_q8(w, ws, rows, ng, G, x, xs, got);
        assert_int_equal(done, rows / 8u * 8u);
        for (uint32_t i = 0; i < done; i++) {
            float acc = 0.0f;   /* numerics.md: groups ascending, ((float)isum * ws) * xs */
            for (uint32_t g = 0; g < ng; g++) {
                int32_t isum = 0;
                for (uint32_t j = 0; j < G; j++)
                    isum += (int32_t)w[(size_t)i * n + g * G + j] * (int32_t)x[g * G + j];
                acc += (float)isum * ws[i * ng + g] * xs[g];
            }
            assert_memory_equal(&got[i], &acc, sizeof acc);
        }
        assert_int_equal(tsr_emu_tile_q8(w, ws, rows, ng, 16, x, xs, got), 0);   /* G 16: not handled */
        free(w); free(x); free(ws); free(xs); free(got);
    }
}

static void gemv_f32_tiled_matches_plain(void **state)
{
    (void)state;
    fixture *fx = fixture_new();
    float x[HID], y[HID], want[HID];
    for (size_t k = 0; k < N_MESHES; k++) {
        tsr_kstate *st = place(fx, MESHES[k][0], MESHES[k][1], 1);
        const tsr_tensor *w2 = &fx->ck.w2[1];   // (DIM, HID)
        for (int j = 0; j < HID; j++) x[j] = frand();
        for (int i = 0; i < DIM; i++) {
            float acc = 0.0f;
            for (int j = 0; j < HID; j++) acc += w2->f[i * HID + j] * x[j];
            want[i] = acc;
        }
        tsr_mesh_gemv(st, TSR_MAT_LAYER(1, TSR_W_2), x, y);
        assert_close(y, want, DIM, 1e-5);
        if (MESHES[k][1] == 1) assert_memory_equal(y, want, sizeof(float) * DIM);
        kstate_free(st, (int)(MESHES[k][0] * MESHES[k][1]));
    }
    fixture_free(fx);
}

/* ------------------------------------------------------------------------ */
/* Vector ops                                                                 */

static void rmsnorm_matches_formula(void **state)
{
    (void)state;
    float x[DIM], w[DIM], o[DIM];
    double ss = 0;
    for (int j = 0; j < DIM; j++) {
        x[j] = frand() * 3.0f;
        w[j] = 1.0f + frand();
        ss += (double)x[j] * x[j];
    }
    tsr_rmsnorm(o, x, w, DIM, 1e-5f);
    double inv = 1.0 / sqrt(ss / DIM + 1e-5);
    for (int j = 0; j < DIM; j++) assert_float_equal(o[j], w[j] * x[j] * inv, 1e-5);
}

static void rope_rotates_pairs(void **state)
{
    (void)state;
    float q[DIM], k[KVD], q0[DIM], k0[KVD];
    for (int i = 0; i < DIM; i++) q[i] = q0[i] = frand();
    for (int i = 0; i < KVD; i++) k[i] = k0[i] = frand();
    const int pos = 5;
    tsr_rope(q, k, DIM, KVD, HS, pos, 10000.0f);
    for (int i = 0; i < DIM; i += 2) {
        double ang = pos * pow(10000.0, -(double)(i % HS) / HS);
        double c = cos(ang), s = sin(ang);
        assert_float_equal(q[i], q0[i] * c - q0[i + 1] * s, 1e-5);
        assert_float_equal(q[i + 1], q0[i] * s + q0[i + 1] * c, 1e-5);
        if (i < KVD) {
            assert_float_equal(k[i], k0[i] * c - k0[i + 1] * s, 1e-5);
            assert_float_equal(k[i + 1], k0[i] * s + k0[i + 1] * c, 1e-5);
        }
    }
    /* position 0 is the identity */
    memcpy(q, q0, sizeof q);
    memcpy(k, k0, sizeof k);
    tsr_rope(q, k, DIM, KVD, HS, 0, 10000.0f);
    assert_memory_equal(q, q0, sizeof q);
    assert_memory_equal(k, k0, sizeof k);
}

static void softmax_normalizes(void **state)
{
    (void)state;
    float x[7] = { 1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 3.0f, 100.0f };
    float ref[7];
    double sum = 0;
    for (int i = 0; i < 7; i++) sum += exp(x[i] - 100.0);
    for (int i = 0; i < 7; i++) ref[i] = (float)(exp(x[i] - 100.0) / sum);
    tsr_softmax(x, 7);
    for (int i = 0; i < 7; i++) assert_float_equal(x[i], ref[i], 1e-6);
    float one[1] = { -42.0f };
    tsr_softmax(one, 1);
    assert_float_equal(one[0], 1.0f, 0.0f);
}

/* Attention of layer 1 over 4 positions with GQA (4 heads, 2 KV heads),
 * on a mesh that spreads the KV units over PEs, equals the plain formula;
 * and a second slot's cache stays untouched. */
static void attention_gqa_matches_formula(void **state)
{
    (void)state;
    fixture *fx = fixture_new();
    tsr_kstate *st = place(fx, 2, 2, 0);
    float K[4][KVD], V[4][KVD], q[DIM];
    const uint32_t l = 1, slot = 1;
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < KVD; i++) st->k[i] = K[t][i] = frand();
        for (int i = 0; i < KVD; i++) st->v[i] = V[t][i] = frand();
        for (int i = 0; i < DIM; i++) st->q[i] = q[i] = frand();
        tsr_attention(st, slot, l, (uint32_t)t);
    }
    for (int h = 0; h < HEADS; h++) {
        int kvh = h / (HEADS / KVH);
        double sc[4], mx = -1e30, sum = 0;
        for (int t = 0; t < 4; t++) {
            double s = 0;
            for (int i = 0; i < HS; i++) s += (double)q[h * HS + i] * K[t][kvh * HS + i];
            sc[t] = s / sqrt((double)HS);
            mx = fmax(mx, sc[t]);
        }
        for (int t = 0; t < 4; t++) sum += (sc[t] = exp(sc[t] - mx));
        for (int i = 0; i < HS; i++) {
            double o = 0;
            for (int t = 0; t < 4; t++) o += sc[t] / sum * V[t][kvh * HS + i];
            assert_float_equal(st->xb[h * HS + i], o, 1e-5);
        }
    }
    assert_int_equal(st->cnt.attended, (1 + 2 + 3 + 4) * HEADS);
    /* slot 0's K block of unit (l, 0) is still zero (never written) */
    uint32_t u = tsr_lay_kv_unit(&st->cfg, l, 0), P = 4, p = tsr_lay_kv_pe(&st->cfg, u % P), j = u / P;
    const float *kc0 = st->pe[p]->f32 + st->kv_off[p] + (0 * tsr_lay_kv_units(&st->cfg, p) + j) * 2u * SEQ * HS;
    for (int i = 0; i < 4 * HS; i++) assert_float_equal(kc0[i], 0.0f, 0.0f);
    kstate_free(st, 4);
    fixture_free(fx);
}

/* ------------------------------------------------------------------------ */
/* Sampler                                                                    */

static void topp_to_zero_equals_greedy(void **state)
{
    (void)state;
    static float logits[VOCAB], work[VOCAB], cp[VOCAB];
    static int32_t ci[VOCAB];
    for (int trial = 0; trial < 50; trial++) {
        for (int i = 0; i < VOCAB; i++) logits[i] = 4.0f * frand();
        if (trial % 5 == 0) logits[11] = logits[30] = 9.0f;   // a tie: the first wins
        uint32_t want = tsr_argmax(logits, VOCAB);
        uint64_t rng = 1234 + (uint64_t)trial;
        memcpy(work, logits, sizeof work);
        assert_int_equal(tsr_sample(work, VOCAB, 1.0f, 1e-9f, &rng, cp, ci), (int32_t)want);
        memcpy(work, logits, sizeof work);
        assert_int_equal(tsr_sample(work, VOCAB, 0.0f, 0.9f, &rng, cp, ci), (int32_t)want);
        if (trial % 5 == 0) assert_int_equal(want, 11);
    }
}

static void same_seed_same_samples(void **state)
{
    (void)state;
    static float logits[VOCAB], work[VOCAB], cp[VOCAB];
    static int32_t ci[VOCAB];
    for (int i = 0; i < VOCAB; i++) logits[i] = 2.0f * frand();
    int32_t a[64], b[64], c[64];
    uint64_t ra = 42, rb = 42, rc = 43;
    int differ = 0, distinct = 0;
    for (int t = 0; t < 64; t++) {
        float tp = t % 2 ? 0.9f : 1.0f;   // alternate nucleus and plain multinomial
        memcpy(work, logits, sizeof work);
        a[t] = tsr_sample(work, VOCAB, 0.8f, tp, &ra, cp, ci);
        memcpy(work, logits, sizeof work);
        b[t] = tsr_sample(work, VOCAB, 0.8f, tp, &rb, cp, ci);
        memcpy(work, logits, sizeof work);
        c[t] = tsr_sample(work, VOCAB, 0.8f, tp, &rc, cp, ci);
        assert_int_equal(a[t], b[t]);
        assert_in_range(a[t], 0, VOCAB - 1);
        differ += a[t] != c[t];
        distinct += t > 0 && a[t] != a[t - 1];
    }
    assert_true(differ > 0);     // another seed, other samples
    assert_true(distinct > 10);  // it samples, not argmax
    /* the RNG is llama2.c's xorshift64*: first output for state 42 */
    uint64_t s = 42;
    uint64_t x = 42;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    assert_int_equal(tsr_rng_u32(&s), (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32));
}

/* Nucleus keeps only the top tokens: with one dominant token and p = 0.5,
 * every sample is that token. */
static void topp_keeps_the_nucleus(void **state)
{
    (void)state;
    static float logits[VOCAB], work[VOCAB], cp[VOCAB];
    static int32_t ci[VOCAB];
    for (int i = 0; i < VOCAB; i++) logits[i] = 0.0f;
    logits[17] = 8.0f;   // p ~ 0.98
    uint64_t rng = 7;
    for (int t = 0; t < 100; t++) {
        memcpy(work, logits, sizeof work);
        assert_int_equal(tsr_sample(work, VOCAB, 1.0f, 0.5f, &rng, cp, ci), 17);
    }
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                   */

static void load_out_of_bounds_refused(void **state)
{
    (void)state;
    fixture *fx = fixture_new();
    tsr_kstate *st = kstate_new(4);
    uint32_t data[64] = { 0 };
    /* before CONFIGURE nothing may be loaded */
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 0, TSR_REG_I8, 0, 4, data, NULL), TSR_K_ESTATE);
    kstate_free(st, 4);
    st = place(fx, 2, 2, 0);
    uint32_t used = st->i8_used[3];
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 3, TSR_REG_I8, used - 4, 4, data, NULL), TSR_K_OK);
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 3, TSR_REG_I8, used - 4, 8, data, NULL), TSR_K_EARG);
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 3, TSR_REG_I8, 0xFFFFFFF0u, 64, data, NULL), TSR_K_EARG);
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 4, TSR_REG_I8, 0, 4, data, NULL), TSR_K_EARG);
    /* fp32 weights end where the KV cache starts */
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 0, TSR_REG_F32, st->kv_off[0], 1, data, NULL), TSR_K_EARG);
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 0, TSR_REG_CTRL, (2 * LAYERS + 1) * DIM - 1, 2, data, NULL), TSR_K_EARG);
    assert_int_equal(kcmd(st, TSR_OP_LOAD, 0, 0, 9, 0, 1, data, NULL), TSR_K_EARG);
    assert_int_equal(kcmd(st, 99, 0, 0, 0, 0, 0, NULL, NULL), TSR_K_EOP);
    kstate_free(st, 4);
    fixture_free(fx);
}

static void configure_checks_profile_and_mesh(void **state)
{
    (void)state;
    fixture *fx = fixture_new();
    tsr_load_opts o = { .group_size = G };
    tsr_kconfig kc, bad;
    tsr_err e = { 0 };
    assert_int_equal(tsr_wimage_config(&fx->ck, &o, 4, &kc, &e), TSR_OK);
    assert_int_equal(kc.mesh_rows, 2);
    assert_int_equal(kc.mesh_cols, 2);
    tsr_kstate *st = kstate_new(4);
    uint32_t w[TSR_KCONFIG_WORDS], fit[TSR_KFIT_WORDS];
    bad = kc; bad.mesh_rows = 1; bad.mesh_cols = 3;       // C not a power of two
    memcpy(w, &bad, sizeof w);
    assert_int_equal(kcmd(st, TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, w, fit), TSR_K_EARG);
    bad = kc; bad.mesh_rows = 4;                          // 8 PEs, 4 exist
    memcpy(w, &bad, sizeof w);
    assert_int_equal(kcmd(st, TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, w, fit), TSR_K_ESHAPE);
    bad = kc; bad.vocab_size = TSR_MAX_VOCAB + 1;
    memcpy(w, &bad, sizeof w);
    assert_int_equal(kcmd(st, TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, w, fit), TSR_K_ESHAPE);
    assert_int_equal(tsr_wimage_check_profile(&bad, &e), TSR_ERR_UNSUPPORTED);
    bad = kc; bad.seq_len = TSR_MAX_SEQ; bad.n_slots = TSR_MAX_SLOTS;  // KV overflows a PE
    bad.dim = 2048; bad.n_heads = 16; bad.n_kv_heads = 16; bad.n_layers = 32;
    memcpy(w, &bad, sizeof w);
    assert_int_equal(kcmd(st, TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, w, fit), TSR_K_ECAPACITY);
    assert_int_equal(fit[0], TSR_K_ECAPACITY);
    assert_true(fit[2] > fit[5]);   // needs more fp32 words than a PE has
    assert_int_equal(tsr_wimage_check_profile(&bad, &e), TSR_ERR_CAPACITY);
    memcpy(w, &kc, sizeof w);
    assert_int_equal(kcmd(st, TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, w, fit), TSR_K_OK);
    /* decode with nothing pending is a state error; a bad slot an argument error */
    uint32_t out[4];
    assert_int_equal(kcmd(st, TSR_OP_DECODE, 0, 1, 0, 0, 0, NULL, out), TSR_K_ESTATE);
    assert_int_equal(kcmd(st, TSR_OP_RESET, 5, 0, 0, 0, 0, NULL, NULL), TSR_K_EARG);
    kstate_free(st, 4);
    fixture_free(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemv_q8_tiled_matches_plain),
        cmocka_unit_test(gemv_f32_tiled_matches_plain),
        cmocka_unit_test(simd_rows_bit_identical),
        cmocka_unit_test(rmsnorm_matches_formula),
        cmocka_unit_test(rope_rotates_pairs),
        cmocka_unit_test(softmax_normalizes),
        cmocka_unit_test(attention_gqa_matches_formula),
        cmocka_unit_test(topp_to_zero_equals_greedy),
        cmocka_unit_test(same_seed_same_samples),
        cmocka_unit_test(topp_keeps_the_nucleus),
        cmocka_unit_test(load_out_of_bounds_refused),
        cmocka_unit_test(configure_checks_profile_and_mesh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
