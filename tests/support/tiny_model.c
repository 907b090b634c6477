/*
 * tiny_model.c - the kernel tests' synthetic checkpoint (see tiny_model.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tiny_model.h"

static uint64_t rng_state = 88172645463325252ull;

int tm_reseed(void **state)
{
    (void)state;
    rng_state = 88172645463325252ull;
    return 0;
}

float tm_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* A (rows, cols) tensor from the pool at *at: norm weights near 1, matrix
 * entries in [-0.3, 0.3). */
static tsr_tensor make_t(float **at, int rows, int cols, int norm)
{
    tsr_tensor t = { .type = TSR_DT_F32, .rows = rows, .cols = cols, .f = *at };
    for (int i = 0; i < rows * cols; i++) (*at)[i] = norm ? 1.0f + 0.1f * tm_rand() : 0.3f * tm_rand();
    *at += rows * cols;
    return t;
}

tsr_config tm_cfg(int shared)
{
    return (tsr_config){ .dim = DIM, .hidden_dim = HID, .n_layers = LAYERS, .n_heads = HEADS,
                         .n_kv_heads = KVH, .vocab_size = VOCAB, .seq_len = SEQ,
                         .shared_classifier = shared, .rope_theta = 10000.0f, .norm_eps = 1e-5f,
                         .format = TSR_FMT_LLAMA2C_V1 };
}

tm_model *tm_new(int shared)
{
    tm_model *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    size_t per_layer = 2 * DIM + 2 * DIM * DIM + 2 * KVD * DIM + 3 * HID * DIM;
    fx->pool = malloc((2 * VOCAB * DIM + DIM + LAYERS * per_layer) * sizeof(float));
    assert_non_null(fx->pool);
    float *at = fx->pool;
    tsr_checkpoint *c = &fx->ck;
    c->cfg = tm_cfg(shared);
    fx->emb = at;
    c->tok_embedding = make_t(&at, VOCAB, DIM, 0);
    c->wcls = shared ? c->tok_embedding : make_t(&at, VOCAB, DIM, 0);
    c->rms_final = make_t(&at, 1, DIM, 1);
    tsr_tensor **slot[9] = { &c->rms_att, &c->wq, &c->wk, &c->wv, &c->wo,
                             &c->rms_ffn, &c->w1, &c->w2, &c->w3 };
    for (int k = 0; k < 9; k++) *slot[k] = fx->t[k];
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

void tm_free(tm_model *fx)
{
    if (!fx) return;
    free(fx->pool);
    free(fx);
}

tsr_kconfig tm_config(const tm_model *fx, tm_mesh m, int f32, int G, int kv_split)
{
    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    tsr_load_opts o = { .weights_f32 = f32, .group_size = G, .n_slots = 2 };
    tsr_mesh_opts mo = { .pes = m.pes, .cols = m.cols, .kv_split = kv_split };
    tsr_kconfig kc;
    tsr_err e = { 0 };
    int rc = tsr_wimage_config(&fx->ck, &o, &mo, &prof, &kc, &e);
    if (rc) print_error("config: %s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    return kc;
}

tsr_kstate *tm_place(const tm_model *fx, tm_mesh m, int f32, int G, int kv_split)
{
    tsr_kstate *st = rig_state_new();
    tsr_load_opts o = { .weights_f32 = f32, .group_size = G, .n_slots = 2 };
    tsr_mesh_opts mo = { .pes = m.pes, .cols = m.cols, .kv_split = kv_split };
    rig_place(st, &fx->ck, &o, &mo, NULL);
    return st;
}

tsr_kstate *tm_configured(const tm_model *fx, tm_mesh m, int f32, int G, int kv_split)
{
    tsr_kstate *st = rig_state_new();
    tsr_kconfig kc = tm_config(fx, m, f32, G, kv_split);
    uint32_t fit[TSR_KFIT_WORDS];
    assert_int_equal(rig_configure(st, &kc, fit), TSR_K_OK);
    return st;
}
