/*
 * test_kernel_layout.c - where the kernel puts things and what it refuses:
 *
 *   layout     every weight (row, group) in exactly one PE's tile, the
 *              tables CONFIGURE builds equal to tsr_layout.h's; KV head
 *              homes across the attention PEs with kv_split
 *   configure  refusals by kind (EARG, ESHAPE, ECAPACITY) and the fit
 *              words that say why; the driver's figures equal the kernel's
 *   commands   LOAD bounds, slots, positions, READ_COUNTERS' words
 *   image      tsr_wimage_config / tsr_wimage_check_profile against the
 *              shipped profiles' limits (driver/profiles.c)
 *
 * Compiled with the emulator's generic profile; the model is
 * tests/support/tiny_model.h on the rig (tests/support/kernel_rig.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_rig.h"
#include "model.h"
#include "profiles.h"
#include "tiny_model.h"
#include "tsr_ops.h"
#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* Layout                                                                     */

static tsr_config shape_of(const char *spec)
{
    tsr_config c;
    tsr_err e = { 0 };
    assert_int_equal(tsr_synth_shape(spec, &c, &e), TSR_OK);
    return c;
}

/* A CONFIGURE block for shape c on P PEs in C columns (no profile). */
static tsr_kconfig ktm_config(const tsr_config *c, uint32_t P, uint32_t C, uint32_t G, int q8,
                              uint32_t kv_split, uint32_t att_pes)
{
    tsr_kconfig k = { .magic = TSR_KCONFIG_MAGIC, .dim = (uint32_t)c->dim,
                      .hidden_dim = (uint32_t)c->hidden_dim, .n_layers = (uint32_t)c->n_layers,
                      .n_heads = (uint32_t)c->n_heads, .n_kv_heads = (uint32_t)c->n_kv_heads,
                      .vocab_size = (uint32_t)c->vocab_size, .seq_len = (uint32_t)c->seq_len,
                      .n_slots = 1, .dtype = q8 ? TSR_KDT_Q8 : TSR_KDT_F32, .group = G,
                      .mesh_rows = P / C, .mesh_cols = C,
                      .shared_classifier = (uint32_t)c->shared_classifier, .kv_split = kv_split,
                      .att_pes = att_pes, .rope_theta = 10000.0f, .norm_eps = 1e-5f };
    return k;
}

/* Every (row, group) of every matrix lands in exactly one PE's tile, in
 * whole TSR_VEC-row units; each PE's tiles sit one after another in matrix
 * order, word aligned; CONFIGURE's tables are the layout's. */
static void layout_every_row_in_one_tile(void **state)
{
    (void)state;
    tsr_config shapes[4] = { tm_cfg(0), shape_of("stories260K"), shape_of("stories15M"),
                             shape_of("128x3:hidden=344,heads=8,kv=2,vocab=1000,shared=0") };
    static const uint32_t pes[] = { 1, 2, 3, 4, 6, 16, 64 }, cols[] = { 1, 2, 4, 8, 16 };
    tsr_kstate *st = rig_state_new();
    uint8_t *hits = malloc(32000u * 64u);
    assert_non_null(hits);
    int configured_ok = 0;
    for (int s = 0; s < 4; s++)
        for (size_t a = 0; a < sizeof pes / sizeof pes[0]; a++)
            for (size_t b = 0; b < sizeof cols / sizeof cols[0]; b++) {
                uint32_t P = pes[a], C = cols[b];
                if (P % C || C > TSR_MAX_MESH_COLS) continue;
                tsr_kconfig kc = ktm_config(&shapes[s], P, C, 32, 1, 1,
                                            P < TSR_ATT_PES ? P : TSR_ATT_PES);
                uint32_t fit[TSR_KFIT_WORDS];
                int ok = rig_configure(st, &kc, fit) == TSR_K_OK;
                configured_ok += ok;
                uint32_t nm = tsr_lay_n_mats(&kc), rot = 0;
                uint32_t w_off[64] = { 0 }, f_off[64] = { 0 };
                for (uint32_t m = 0; m < nm; m++) {
                    uint32_t d, n, pair;
                    tsr_lay_mat_shape(&kc, m, &d, &n, &pair);
                    uint32_t ng = tsr_cdiv(n, 32);
                    memset(hits, 0, (size_t)d * ng);
                    assert_int_equal(tsr_lay_rot(&kc, m), rot);
                    for (uint32_t p = 0; p < P; p++) {
                        tsr_tile t = tsr_lay_tile(&kc, m, rot, p);
                        assert_true(t.row0 % TSR_VEC == 0 || (t.rows == 0 && t.row0 == d));
                        assert_true(t.rows % TSR_VEC == 0 || t.row0 + t.rows == d);
                        assert_true(t.row0 + t.rows <= d && t.g0 + t.ngroups <= ng);
                        for (uint32_t i = 0; i < t.rows; i++)
                            for (uint32_t g = 0; g < t.ngroups; g++) hits[(t.row0 + i) * ng + t.g0 + g]++;
                        /* the PEs of one of the matrix's mesh rows (its own
                         * C_m columns) share its row block */
                        uint32_t Cm = tsr_lay_mat_cols(&kc, m);
                        assert_true(Cm >= 1 && Cm <= C && C % Cm == 0);
                        assert_int_equal(t.cols, Cm);
                        tsr_tile t0 = tsr_lay_tile(&kc, m, rot, p - p % Cm);
                        assert_int_equal(t.row0, t0.row0);
                        assert_int_equal(t.rows, t0.rows);
                        if (ok) {
                            const tsr_ktab kt = tsr_ktab_of(st, p, m), *k = &kt;
                            assert_int_equal(k->row0, t.row0);
                            assert_int_equal(k->rows, t.rows);
                            assert_int_equal(k->g0, t.g0);
                            assert_int_equal(k->ngroups, t.ngroups);
                            assert_int_equal(k->cols, t.cols);
                            assert_int_equal(k->w_off, w_off[p]);
                            assert_int_equal(k->f_off, f_off[p]);
                            assert_int_equal(k->w_off % TSR_LANES, 0);
                        }
                        w_off[p] += tsr_lay_tile_w8(&kc, t);
                        f_off[p] += tsr_lay_tile_f32(&kc, t);
                    }
                    for (uint32_t i = 0; i < d * ng; i++) {
                        if (hits[i] != 1) {
                            print_error("shape %d, %u PEs x %u cols, matrix %u: row %u group %u "
                                        "in %u tiles\n", s, P, C, m, i / ng, i % ng, hits[i]);
                            fail();
                        }
                    }
                    rot = tsr_lay_rot_next(&kc, m, rot);
                }
                for (uint32_t p = 0; p < P; p++) {
                    uint64_t b8, f32w;
                    tsr_lay_pe_weights(&kc, p, &b8, &f32w, NULL);
                    assert_int_equal(b8, w_off[p]);
                    assert_int_equal(f32w, f_off[p]);
                    if (ok) {
                        assert_int_equal(st->w8_used[p], w_off[p]);
                        assert_int_equal(st->f32_used[p], f_off[p]);
                    }
                }
            }
    assert_true(configured_ok > 20);   /* the tables were compared, not only the layout */
    free(hits);
    rig_state_free(st);
}

/* KV head h lives on the kv_split PEs of one group inside [0, att_pes),
 * place q holding positions t % Q == q; every head has exactly one home,
 * the homes are distinct PEs when there are enough groups, and no PE past
 * att_pes holds KV.  CONFIGURE's tables agree. */
static void layout_kv_homes(void **state)
{
    (void)state;
    tsr_config shapes[4] = { tm_cfg(1), shape_of("stories260K"), shape_of("stories15M"),
                             shape_of("512x2:heads=32,kv=8,vocab=256") };
    static const uint32_t pes[] = { 1, 4, 6, 16, 64 }, splits[] = { 1, 2, 4, 8, 16 };
    tsr_kstate *st = rig_state_new();
    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    int checked = 0;
    for (int s = 0; s < 4; s++)
        for (size_t a = 0; a < sizeof pes / sizeof pes[0]; a++)
            for (size_t b = 0; b < sizeof splits / sizeof splits[0]; b++) {
                tsr_checkpoint ck = { .cfg = shapes[s] };
                ck.cfg.seq_len = 64;
                strcpy(ck.path, "shape");
                tsr_load_opts o = { .group_size = 32, .n_slots = 2 };
                tsr_mesh_opts mo = { .pes = (int)pes[a], .kv_split = (int)splits[b] };
                tsr_kconfig kc;
                if (tsr_wimage_config(&ck, &o, &mo, &prof, &kc, NULL) != TSR_OK) continue;
                uint32_t Q = kc.kv_split, A = kc.att_pes, H = kc.n_kv_heads, P = pes[a];
                uint32_t groups = A / Q, heads_seen[64] = { 0 };
                assert_true(A <= P && A % Q == 0);
                uint32_t fit[TSR_KFIT_WORDS];
                int ok = rig_configure(st, &kc, fit) == TSR_K_OK;
                uint32_t homes[64];
                for (uint32_t h = 0; h < H; h++) {
                    uint32_t pe0, j;
                    tsr_lay_kv_home(&kc, h, &pe0, &j);
                    assert_true(pe0 < A);
                    assert_int_equal(pe0 % Q, 0);
                    homes[h] = pe0;
                    for (uint32_t q = 0; q < Q; q++) {
                        uint32_t h0, place, n = tsr_lay_kv_heads(&kc, pe0 + q, &h0, &place);
                        assert_true(h >= h0 && h < h0 + n);
                        assert_int_equal(h - h0, j);
                        assert_int_equal(place, q);
                    }
                    if (ok) {
                        assert_int_equal(st->kv_pe[h], pe0);
                        assert_int_equal(st->kv_j[h], j);
                    }
                }
                for (uint32_t p = 0; p < P; p++) {
                    uint32_t h0, place, n = tsr_lay_kv_heads(&kc, p, &h0, &place);
                    if (p >= A) assert_int_equal(n, 0);
                    if (Q > 1) assert_true(n <= 1);
                    for (uint32_t h = h0; h < h0 + n; h++) heads_seen[h]++;
                    uint64_t words = (uint64_t)n * kc.n_slots * kc.n_layers * 2u *
                                     tsr_lay_head_size(&kc) * tsr_lay_seq_words(&kc);
                    assert_int_equal(tsr_lay_kv_words(&kc, p), words);
                    if (ok) {
                        assert_int_equal(st->kv_nh[p], n);
                        if (n) assert_int_equal(st->kv_h0[p], h0);
                        if (n) assert_int_equal(st->kv_q[p], place);
                    }
                }
                for (uint32_t h = 0; h < H; h++) assert_int_equal(heads_seen[h], Q);
                if (H <= groups)   /* a group each: homes strictly ascend */
                    for (uint32_t h = 1; h < H; h++) assert_true(homes[h] > homes[h - 1]);
                assert_true(tsr_lay_seq_words(&kc) * Q >= kc.seq_len);
                checked++;
            }
    assert_true(checked >= 30);   /* the valid (PEs, split) pairs of the four shapes */
    rig_state_free(st);
}

/* CONFIGURE refuses what the profile cannot hold, with the status that
 * says which kind of limit, and leaves the device unconfigured; on a
 * capacity refusal the fit words name the memory that overflows. */
static void configure_refusals(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    tsr_kstate *st = rig_state_new();
    const tsr_kconfig good = tm_config(fx, (tm_mesh){ 16, 2 }, 0, 32, 0);
    uint32_t fit[TSR_KFIT_WORDS];
    assert_int_equal(rig_configure(st, &good, fit), TSR_K_OK);
    tsr_wneed need;
    tsr_wimage_need(&good, &need);   /* the driver's figures are the kernel's */
    assert_int_equal(fit[TSR_KFIT_W8_WORDS], tsr_cdiv((uint32_t)need.pe_w8_max, TSR_LANES));
    assert_int_equal(fit[TSR_KFIT_F32_WORDS], need.pe_f32_max);
    assert_int_equal(fit[TSR_KFIT_KV_WORDS], need.pe_kv_max);
    assert_int_equal(fit[TSR_KFIT_ROWS], need.pe_rows_max);
    assert_int_equal(fit[TSR_KFIT_CTRL_WORDS], need.ctrl_words);
    assert_int_equal(fit[TSR_KFIT_TOTAL_LO] | (uint64_t)fit[TSR_KFIT_TOTAL_HI] << 32,
                     need.total_bytes);

    struct { const char *what; tsr_kconfig c; int want; } bad[24];
    int nb = 0;
#define BAD(WHAT, WANT, EDIT) do { tsr_kconfig c_ = good; EDIT; bad[nb].what = WHAT; \
        bad[nb].c = c_; bad[nb].want = WANT; nb++; } while (0)
    BAD("magic", TSR_K_EARG, c_.magic = 0x74737231u);
    BAD("no layers", TSR_K_EARG, c_.n_layers = 0);
    BAD("heads do not divide dim", TSR_K_EARG, c_.n_heads = 7);
    BAD("dtype", TSR_K_EARG, c_.dtype = 5);
    BAD("columns not a power of two", TSR_K_EARG, (c_.mesh_rows = 4, c_.mesh_cols = 3));
    BAD("group not a power of two", TSR_K_EARG, c_.group = 24);
    BAD("kv_split not a power of two", TSR_K_EARG, (c_.kv_split = 3, c_.att_pes = 15));
    BAD("more PEs than the profile", TSR_K_ESHAPE,
        (c_.mesh_rows = TSR_MAX_PES / 2 + 1, c_.mesh_cols = 2));
    BAD("more mesh rows", TSR_K_ESHAPE, (c_.mesh_rows = TSR_MAX_MESH_ROWS + 1, c_.mesh_cols = 1));
    BAD("more mesh columns", TSR_K_ESHAPE, (c_.mesh_rows = 1, c_.mesh_cols = TSR_MAX_MESH_COLS * 2));
    BAD("kv_split over the profile's", TSR_K_ESHAPE,
        (c_.mesh_rows = TSR_MAX_PES, c_.mesh_cols = 1, c_.att_pes = TSR_ATT_PES,
         c_.n_kv_heads = 1, c_.n_heads = 5, c_.kv_split = TSR_MAX_KV_SPLIT * 2));
    BAD("KV heads x kv_split over att_pes", TSR_K_ESHAPE, (c_.kv_split = 4, c_.att_pes = 16));
    BAD("att_pes not whole groups", TSR_K_ESHAPE, (c_.kv_split = 2, c_.att_pes = 15));
    BAD("att_pes over the mesh", TSR_K_ESHAPE, c_.att_pes = 17);
    BAD("query slice not whole bus words", TSR_K_ESHAPE, c_.n_kv_heads = 10);
    BAD("group below the profile's", TSR_K_ESHAPE, c_.group = TSR_MIN_GROUP / 2);
    BAD("group over the profile's", TSR_K_ESHAPE, c_.group = TSR_MAX_GROUP * 2);
    BAD("seq_len over the profile's", TSR_K_ESHAPE, c_.seq_len = TSR_MAX_SEQ + 1);
    BAD("slots over the profile's", TSR_K_ESHAPE, c_.n_slots = TSR_MAX_SLOTS + 1);
    BAD("vocab over the profile's", TSR_K_ESHAPE, c_.vocab_size = TSR_MAX_VOCAB + 1);
#undef BAD
    for (int i = 0; i < nb; i++) {
        int rc = rig_configure(st, &bad[i].c, fit);
        if (rc != bad[i].want) print_error("%s: status %d, want %d\n", bad[i].what, rc, bad[i].want);
        assert_int_equal(rc, bad[i].want);
        assert_int_equal(fit[TSR_KFIT_STATUS], bad[i].want);
        assert_int_equal(st->configured, 0);
        /* and nothing runs on an unconfigured device */
        uint32_t tok = 1, a[6] = { 1 };
        assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, 0, a, &tok, 1, NULL, 0, NULL), TSR_K_ESTATE);
        assert_int_equal(rig_configure(st, &good, fit), TSR_K_OK);
    }

    /* capacity, one PE memory at a time: only the overflowing word is over */
    struct { tsr_config c; uint32_t pes, G; int q8, slots, word; } cap[] = {
        /* KV: 32 layers of 4 heads x 4096 positions x 8 slots on one PE */
        { { .dim = 64, .hidden_dim = 64, .n_layers = 32, .n_heads = 4, .n_kv_heads = 4,
            .vocab_size = 16, .seq_len = TSR_MAX_SEQ }, 1, 32, 1, TSR_MAX_SLOTS,
          TSR_KFIT_KV_WORDS },
        /* int8 tiles: 4 wide layers and a 32768 vocabulary (or the profile's
         * largest, if smaller) on one PE, G 256: the rows still fit */
        { { .dim = 2048, .hidden_dim = 8192, .n_layers = 4, .n_heads = 32, .n_kv_heads = 32,
            .vocab_size = TSR_MAX_VOCAB < 32768 ? TSR_MAX_VOCAB : 32768, .seq_len = 16,
            .shared_classifier = 1 }, 1, 256, 1, 1,
          TSR_KFIT_W8_WORDS },
        /* fp32 tiles (F32 mode) of a 1024-wide layer on one PE */
        { { .dim = 1024, .hidden_dim = 1024, .n_layers = 1, .n_heads = 16, .n_kv_heads = 16,
            .vocab_size = 1024, .seq_len = 16, .shared_classifier = 1 }, 1, 32, 0, 1,
          TSR_KFIT_F32_WORDS },
    };
    static const int words[] = { TSR_KFIT_W8_WORDS, TSR_KFIT_F32_WORDS, TSR_KFIT_KV_WORDS,
                                 TSR_KFIT_ROWS };
    static const uint32_t limits[] = { TSR_PE_W8_WORDS, TSR_PE_F32_WORDS, TSR_PE_KV_WORDS,
                                       TSR_PE_ROWS };
    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    for (size_t i = 0; i < sizeof cap / sizeof cap[0]; i++) {
        if (!cap[i].q8 && !TSR_WITH_F32) continue;
        tsr_kconfig c = ktm_config(&cap[i].c, cap[i].pes, 1, cap[i].G, cap[i].q8, 1, 1);
        c.n_slots = (uint32_t)cap[i].slots;
        assert_int_equal(rig_configure(st, &c, fit), TSR_K_ECAPACITY);
        assert_int_equal(fit[TSR_KFIT_STATUS], TSR_K_ECAPACITY);
        assert_int_equal(st->configured, 0);
        for (int w = 0; w < 4; w++) {
            if (words[w] == cap[i].word) assert_true(fit[words[w]] > limits[w]);
            else assert_true(fit[words[w]] <= limits[w]);
        }
        tsr_wimage_need(&c, &need);
        assert_int_equal(fit[TSR_KFIT_TOTAL_LO] | (uint64_t)fit[TSR_KFIT_TOTAL_HI] << 32,
                         need.total_bytes);
        /* the driver refuses the same config before anything streams */
        tsr_err e = { 0 };
        assert_int_equal(tsr_wimage_check_profile(&c, &prof, TSR_PROFILE_NAME, &e),
                         TSR_ERR_CAPACITY);
        static const char *const names[] = { "int8", "fp32", "KV cache", "partial sums" };
        for (int w = 0; w < 4; w++)
            if (words[w] == cap[i].word && !strstr(e.msg, names[w])) {
                print_error("capacity message does not name %s: %s\n", names[w], e.msg);
                fail();
            }
    }
    rig_state_free(st);
    tm_free(fx);
}

/* LOAD of int8 tiles through the kernel loop (load_w8_words, not the
 * emulator's transposed layout): a range that starts and ends inside
 * 32-byte words writes its bytes and keeps every other byte of those words
 * and of their neighbours. */
static void load_w8_keeps_the_bytes_around(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    tsr_kstate *st = tm_place(fx, (tm_mesh){ 4, 2 }, 0, 32, 0);
    st->emu_tr = 0;   /* the kernel's own loop */
    assert_true(st->w8_used[0] >= 128u);
    uint32_t old[32], fresh[16];
    for (uint32_t i = 0; i < 32; i++) old[i] = 0x01010101u * (i + 1u);
    for (uint32_t i = 0; i < 16; i++) fresh[i] = 0x80808080u + 0x01010101u * i;
#define LOAD(OFF, LEN, PAY, WORDS) \
    rig_cmd(st, TSR_OP_LOAD, 0, (uint32_t[6]){ 0, TSR_REG_W8, OFF, LEN }, PAY, WORDS, NULL, 0, NULL)
    assert_int_equal(LOAD(0, 128, old, 32), TSR_K_OK);
    const int8_t *w = &st->w8[0][0][0];
    for (uint32_t b = 0; b < 128; b++) assert_int_equal((uint8_t)w[b], (uint8_t)(old[b / 4] >> (8 * (b % 4))));
    /* bytes 36..85: word 1 from its fifth byte, all of word 2, word 3's
     * first 6 bytes (the last payload word's first two) */
    assert_int_equal(LOAD(36, 50, fresh, 13), TSR_K_OK);
    for (uint32_t b = 0; b < 128; b++) {
        uint32_t want = b >= 36 && b < 86 ? fresh[(b - 36) / 4] >> (8 * ((b - 36) % 4))
                                          : old[b / 4] >> (8 * (b % 4));
        if ((uint8_t)w[b] != (uint8_t)want) print_error("byte %u: %u, want %u\n", b, (uint8_t)w[b], (uint8_t)want);
        assert_int_equal((uint8_t)w[b], (uint8_t)want);
    }
    /* inside one word */
    assert_int_equal(LOAD(100, 3, fresh, 1), TSR_K_OK);
    for (uint32_t b = 96; b < 128; b++) {
        uint32_t want = b >= 100 && b < 103 ? fresh[0] >> (8 * (b - 100)) : old[b / 4] >> (8 * (b % 4));
        assert_int_equal((uint8_t)w[b], (uint8_t)want);
    }
#undef LOAD
    rig_state_free(st);
    tm_free(fx);
}

/* LOAD stays inside the configured tiles; every other command checks its
 * arguments and the device's state. */
static void commands_check_arguments(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    tsr_kstate *st = rig_state_new();
    uint32_t data[64] = { 0 }, out[8];
    uint32_t a[6] = { 0, TSR_REG_W8, 0, 4 };
    assert_int_equal(rig_cmd(st, TSR_OP_LOAD, 0, a, data, 1, NULL, 0, NULL), TSR_K_ESTATE);
    rig_state_free(st);
    st = tm_place(fx, (tm_mesh){ 4, 2 }, 0, 32, 0);
    uint32_t used = st->w8_used[3];
#define LOAD(PE, REG, OFF, LEN, WORDS) \
    rig_cmd(st, TSR_OP_LOAD, 0, (uint32_t[6]){ PE, REG, OFF, LEN }, data, WORDS, NULL, 0, NULL)
    assert_int_equal(LOAD(3, TSR_REG_W8, used - 4, 4, 1), TSR_K_OK);
    assert_int_equal(LOAD(3, TSR_REG_W8, used - 4, 8, 2), TSR_K_EARG);         /* past the tiles */
    assert_int_equal(LOAD(3, TSR_REG_W8, 0xFFFFFFF0u, 64, 16), TSR_K_EARG);    /* wraps */
    assert_int_equal(LOAD(3, TSR_REG_W8, 0, 64, 8), TSR_K_EARG);               /* payload short */
    assert_int_equal(LOAD(4, TSR_REG_W8, 0, 4, 1), TSR_K_EARG);                /* no PE 4 */
    assert_int_equal(LOAD(0, TSR_REG_F32, st->f32_used[0], 1, 1), TSR_K_EARG); /* KV is not weights */
    assert_int_equal(LOAD(0, TSR_REG_CTRL, tsr_lay_ctrl_words(&st->cfg) - 1, 2, 2), TSR_K_EARG);
    assert_int_equal(LOAD(0, TSR_REG_CTRL, tsr_lay_ctrl_words(&st->cfg) - 1, 1, 1), TSR_K_OK);
    assert_int_equal(LOAD(1, TSR_REG_CTRL, 0, 1, 1), TSR_K_EARG);               /* controller is pe 0 */
    assert_int_equal(LOAD(0, TSR_REG_COUNT, 0, 1, 1), TSR_K_EARG);
#undef LOAD
    assert_int_equal(rig_cmd(st, TSR_OP_COUNT + 3, 0, NULL, NULL, 0, NULL, 0, NULL), TSR_K_EOP);
    /* sequences: a slot that does not exist, decode with nothing pending,
     * ids outside the vocabulary, positions past seq_len, truncation forward */
    float pay[2] = { 0.0f, 0.0f };
    assert_int_equal(rig_cmd(st, TSR_OP_RESET, 2, NULL, NULL, 0, NULL, 0, NULL), TSR_K_EARG);
    assert_int_equal(rig_cmd(st, TSR_OP_DECODE, 0, (uint32_t[6]){ 1 }, pay, 2, out, 8, NULL),
                     TSR_K_ESTATE);
    uint32_t ids[SEQ + 2];
    for (int i = 0; i < SEQ + 2; i++) ids[i] = (uint32_t)(i % VOCAB);
    ids[1] = VOCAB;
    assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, 0, (uint32_t[6]){ 3 }, ids, 3, NULL, 0, NULL),
                     TSR_K_EARG);
    ids[1] = 1;
    assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, 0, (uint32_t[6]){ SEQ + 2 }, ids, SEQ + 2,
                             NULL, 0, NULL), TSR_K_ERANGE);
    assert_int_equal(st->pos[0], 0);
    assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, 0, (uint32_t[6]){ 3 }, ids, 3, NULL, 0, NULL),
                     TSR_K_OK);
    assert_int_equal(st->pos[0], 2);
    assert_int_equal(st->pending[0], (int32_t)ids[2]);
    assert_int_equal(rig_cmd(st, TSR_OP_TRUNCATE, 0, (uint32_t[6]){ 3, 5 }, NULL, 0, NULL, 0, NULL),
                     TSR_K_ERANGE);
    assert_int_equal(rig_cmd(st, TSR_OP_TRUNCATE, 0, (uint32_t[6]){ 1, VOCAB }, NULL, 0, NULL, 0,
                             NULL), TSR_K_EARG);
    assert_int_equal(rig_cmd(st, TSR_OP_TRUNCATE, 0, (uint32_t[6]){ 1, 5 }, NULL, 0, NULL, 0, NULL),
                     TSR_K_OK);
    assert_int_equal(st->pos[0], 1);
    assert_int_equal(st->pending[0], 5);
    rig_state_free(st);
    tm_free(fx);
}

/* READ_COUNTERS answers every field of tsr_kcounters as (low, high) word
 * pairs in field order, and TSR_KCOUNTERS_FIXED counts the fields before
 * pe_sram_bytes (the host sizes its read by it). */
static void read_counters_answers_every_field(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    tsr_kstate *st = tm_place(fx, (tm_mesh){ 4, 2 }, 0, 32, 0);
    uint32_t ids[3] = { 1, 7, 9 }, n = 0;
    assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, 0, (uint32_t[6]){ 3 }, ids, 3, NULL, 0, NULL),
                     TSR_K_OK);
    static uint32_t out[TSR_OUT_WORDS];
    assert_int_equal(rig_cmd(st, TSR_OP_READ_COUNTERS, 0, NULL, NULL, 0, out, TSR_OUT_WORDS, &n),
                     TSR_K_OK);
    assert_int_equal(n, sizeof(tsr_kcounters) / 4u);
    uint64_t want[sizeof(tsr_kcounters) / 8u];
    memcpy(want, &st->cnt, sizeof want);
    for (uint32_t i = 0; i < n / 2u; i++)
        assert_int_equal((uint64_t)out[2 * i] | (uint64_t)out[2 * i + 1] << 32, want[i]);
    assert_int_equal(st->cnt.runs[TSR_OP_PREFILL], 1);
    assert_int_equal(st->cnt.tokens_fed, 2);
    assert_int_equal(st->cnt.n_pes, 4);
    rig_state_free(st);
    tm_free(fx);
    assert_int_equal(offsetof(tsr_kcounters, pe_sram_bytes), 8u * TSR_KCOUNTERS_FIXED);
}

/* ------------------------------------------------------------------------ */
/* The weight image's checks against the shipped profiles                     */

static tsr_checkpoint model_of(const char *spec)
{
    tsr_checkpoint ck = { .cfg = shape_of(spec) };
    snprintf(ck.path, sizeof ck.path, "%s", spec);
    return ck;
}

/* Configure m (seq, slots, group G, q8) on pes PEs of profile pf and check
 * it; the status, and e's message. */
static int check(const tsr_checkpoint *m, const char *name, int pes, int cols, int seq, int slots,
                 int G, int q8, tsr_kconfig *kc, tsr_err *e)
{
    const tsr_kprofile *pf = tsr_profile_find(name);
    assert_non_null(pf);
    tsr_load_opts o = { .weights_f32 = !q8, .group_size = G, .seq_len = seq, .n_slots = slots };
    tsr_mesh_opts mo = { .pes = pes, .cols = cols };
    int rc = tsr_wimage_config(m, &o, &mo, pf, kc, e);
    return rc ? rc : tsr_wimage_check_profile(kc, pf, name, e);
}

/* The shipped profiles and the models they are built for (profile
 * headers): PEs to place them on (0: the profile's), sequence slots (0:
 * the profile's), PEs for an F32 run (0: the profile has no F32 path). */
static const struct { const char *prof, *model; int pes, slots, f32_pes; } TARGETS[] = {
    { "generic", "stories110M", 16, 1, 64 },   /* "Q8_0 ... on 16 PEs", "F32 up to 64" */
    { "stories260k", "stories260K", 0, 0, 4 },
    { "stories15m", "stories15M", 0, 0, 0 },
};
#define N_TARGETS (sizeof TARGETS / sizeof TARGETS[0])

/* Each shipped profile takes its model at its limits: its PEs, the
 * longest context it has (or the model's), every slot, Q8_0 at llama2.c's
 * groups 32 and 64 in some mesh the profile allows (1 column first, the
 * driver's default), and F32 where the profile has that datapath. */
static void wimage_profiles_take_their_models(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_TARGETS; k++) {
        const char *name = TARGETS[k].prof;
        const tsr_kprofile *pf = tsr_profile_find(name);
        assert_non_null(pf);
        tsr_checkpoint m = model_of(TARGETS[k].model);
        int pes = TARGETS[k].pes ? TARGETS[k].pes : (int)pf->pes;
        int slots = TARGETS[k].slots ? TARGETS[k].slots : (int)pf->slots;
        int seq = m.cfg.seq_len < (int)pf->seq ? m.cfg.seq_len : (int)pf->seq;
        tsr_kconfig kc;
        for (int G = 32; G <= 64; G *= 2) {
            if (G < (int)pf->group_min || G > (int)pf->group_max) continue;
            tsr_err e1 = { 0 }, e = { 0 };
            int rc = check(&m, name, pes, 1, seq, slots, G, 1, &kc, &e1);
            for (int cols = 2; cols <= (int)pf->mesh_cols && rc != TSR_OK; cols *= 2)
                if (pes % cols == 0) rc = check(&m, name, pes, cols, seq, slots, G, 1, &kc, &e);
            if (rc) print_error("%s on %s, %d PEs, G %d, 1 column: %s\n", TARGETS[k].model, name,
                                pes, G, e1.msg);
            assert_int_equal(rc, TSR_OK);
        }
        tsr_err e = { 0 };
        if (TARGETS[k].f32_pes) {
            int rc = check(&m, name, TARGETS[k].f32_pes, 1, seq, 1, 32, 0, &kc, &e);
            if (rc) print_error("%s F32 on %s: %s\n", TARGETS[k].model, name, e.msg);
            assert_int_equal(rc, TSR_OK);
        } else {
            assert_int_equal(pf->with_f32, 0);
            assert_int_equal(check(&m, name, pes, 1, seq, 1, 32, 0, &kc, &e), TSR_ERR_UNSUPPORTED);
            assert_non_null(strstr(e.msg, "F32"));
        }
    }
}

/* One more of any limit is refused with the status the driver's load loop
 * relies on: UNSUPPORTED for a shape, CAPACITY for memory (and for slots,
 * which the loader then steps down), each message naming the limit and the
 * profile; too few PEs is a capacity refusal naming the memory the
 * layout's needs overflow first. */
static void wimage_profiles_refuse_past_limits(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_TARGETS; k++) {
        const char *name = TARGETS[k].prof;
        const tsr_kprofile *pf = tsr_profile_find(name);
        assert_non_null(pf);
        tsr_checkpoint m = model_of(TARGETS[k].model);
        int pes = TARGETS[k].pes ? TARGETS[k].pes : (int)pf->pes;
        int seq = m.cfg.seq_len < (int)pf->seq ? m.cfg.seq_len : (int)pf->seq;
        tsr_load_opts o = { .group_size = 32, .seq_len = seq };
        tsr_mesh_opts mo = { .pes = pes };
        tsr_kconfig ok;
        tsr_err e = { 0 };
        assert_int_equal(tsr_wimage_config(&m, &o, &mo, pf, &ok, &e), TSR_OK);
        struct { const char *what; tsr_kconfig c; int want; } over[8];
        int no = 0;
#define OVER(WHAT, WANT, EDIT) do { tsr_kconfig c_ = ok; EDIT; over[no].what = WHAT; \
        over[no].c = c_; over[no].want = WANT; no++; } while (0)
        OVER("seq_len", TSR_ERR_UNSUPPORTED, c_.seq_len = pf->seq + 1);
        OVER("n_layers", TSR_ERR_UNSUPPORTED, c_.n_layers = pf->layers + 1);
        OVER("vocab_size", TSR_ERR_UNSUPPORTED, c_.vocab_size = pf->vocab + 1);
        OVER("sequence slots", TSR_ERR_CAPACITY, c_.n_slots = pf->slots + 1);
        OVER("group size", TSR_ERR_UNSUPPORTED, c_.group = pf->group_max * 2);
        OVER("minimum", TSR_ERR_UNSUPPORTED, c_.group = pf->group_min / 2);
        OVER("PEs", TSR_ERR_UNSUPPORTED, (c_.mesh_rows = pf->pes + 1, c_.mesh_cols = 1));
        OVER("KV split", TSR_ERR_UNSUPPORTED, c_.kv_split = pf->kv_split_max * 2);
#undef OVER
        for (int i = 0; i < no; i++) {
            tsr_err e2 = { 0 };
            int rc = tsr_wimage_check_profile(&over[i].c, pf, name, &e2);
            if (rc != over[i].want || !strstr(e2.msg, over[i].what) || !strstr(e2.msg, name))
                print_error("%s, %s over: status %d (want %d): %s\n", name, over[i].what, rc,
                            over[i].want, e2.msg);
            assert_int_equal(rc, over[i].want);
            assert_non_null(strstr(e2.msg, over[i].what));
            assert_non_null(strstr(e2.msg, name));
        }
        int refused = 0;
        for (int p = pes / 2; p >= 1; p /= 2) {
            tsr_kconfig kc;
            tsr_err e3 = { 0 };
            int rc = check(&m, name, p, 1, seq, 1, 32, 1, &kc, &e3);
            if (rc == TSR_OK) continue;
            assert_int_equal(rc, TSR_ERR_CAPACITY);
            tsr_wneed nd;
            tsr_wimage_need(&kc, &nd);
            const char *why = nd.pe_w8_max > (uint64_t)pf->w8_words * pf->lanes ? "int8"
                              : nd.pe_f32_max > pf->f32_words                    ? "fp32"
                              : nd.pe_kv_max > pf->kv_words                      ? "KV cache"
                                                                                 : "partial sums";
            if (!strstr(e3.msg, why)) print_error("%s on %d PEs: %s (want %s)\n", name, p, e3.msg, why);
            assert_non_null(strstr(e3.msg, why));
            refused++;
        }
        assert_true(refused > 0);
    }
}

/* tsr_wimage_config's own checks, and its default KV split: one PE per KV
 * head where the profile keeps run.c's order, else as many as fit. */
static void wimage_config_mesh_options(void **state)
{
    (void)state;
    tsr_checkpoint m = model_of("stories15M");
    const tsr_kprofile *gen = tsr_profile_find("generic"), *p15 = tsr_profile_find("stories15m");
    assert_non_null(gen);
    assert_non_null(p15);
    tsr_kconfig kc;
    tsr_err e = { 0 };
#define CFG(PF, PES, COLS, SPLIT, G) \
    tsr_wimage_config(&m, &(tsr_load_opts){ .group_size = G }, \
                      &(tsr_mesh_opts){ .pes = PES, .cols = COLS, .kv_split = SPLIT }, PF, &kc, &e)
    assert_int_equal(CFG(gen, 16, 4, 0, 0), TSR_OK);
    assert_int_equal(kc.mesh_rows, 4);
    assert_int_equal(kc.mesh_cols, 4);
    assert_int_equal(kc.group, TSR_WIMAGE_DEFAULT_GROUP);
    assert_int_equal(kc.kv_split, 1);   /* generic: TSR_SUM_LANES 1 */
    assert_int_equal(kc.att_pes, 6);    /* a PE per KV head: no idle attention PEs */
    assert_int_equal(CFG(gen, 16, 3, 0, 32), TSR_ERR_ARG);   /* columns: a power of two */
    assert_int_equal(CFG(gen, 12, 8, 0, 32), TSR_ERR_ARG);   /* ... that divides the PEs */
    assert_int_equal(CFG(gen, 16, 1, 3, 32), TSR_ERR_ARG);   /* split: a power of two */
    assert_int_equal(CFG(gen, 16, 1, 4, 32), TSR_ERR_ARG);   /* 6 heads x 4 > 16 PEs */
    assert_int_equal(CFG(gen, 16, 1, 2, 24), TSR_ERR_UNSUPPORTED);
    assert_int_equal(CFG(gen, 16, 1, 2, 32), TSR_OK);
    assert_int_equal(kc.kv_split, 2);
    assert_int_equal(kc.att_pes, 12);   /* 6 KV heads x 2 */
    assert_int_equal(CFG(p15, (int)p15->pes, 1, 0, 32), TSR_OK);
    uint32_t att = p15->pes < p15->att_pes ? p15->pes : p15->att_pes, Q = kc.kv_split, H = 6;
    if (p15->sum_lanes > 1) {   /* spread as far as the PEs and the profile allow */
        assert_true(Q > 1 && (Q & (Q - 1)) == 0);
        assert_true(Q * H <= att && Q <= p15->kv_split_max);
        assert_true(2 * Q * H > att || 2 * Q > p15->kv_split_max);
    }
    assert_int_equal(kc.att_pes % Q, 0);
    assert_true(kc.att_pes <= att && kc.att_pes + Q > att);
#undef CFG
    tsr_load_opts o = { .seq_len = m.cfg.seq_len + 1 };
    assert_int_equal(tsr_wimage_config(&m, &o, &(tsr_mesh_opts){ .pes = 16 }, gen, &kc, &e),
                     TSR_ERR_ARG);   /* past the trained context of a llama2.c file */
}

/* The PE-to-SLR assignment (tsr_layout.h tsr_lay_slr_pe0): whole mesh rows
 * of the profile's columns, the first SLRs the lighter; every mesh row of
 * every matrix (C_m dividing the mesh's columns) and every KV head group
 * inside one SLR; the kernel's TSR_SLR_PE0 / TSR_SLR_OF of the compiled
 * profile the same rule; the stories15m profile's three SLRs. */
static void slr_assignment_keeps_rows_whole(void **state)
{
    (void)state;
    /* stories15m: 32 PEs in rows of 4 over the U55C's 3 SLRs */
    assert_int_equal(tsr_profile_slrs("stories15m"), 3);
    assert_int_equal(tsr_profile_slrs("stories260k"), 1);
    assert_int_equal(tsr_profile_slrs("generic"), 1);
    static const uint32_t want[] = { 0, 8, 20, 32 };
    for (uint32_t s = 0; s <= 3; s++) assert_int_equal(tsr_lay_slr_pe0(32, 4, 3, s), want[s]);
    assert_int_equal(tsr_lay_slr_of(32, 4, 3, 7), 0);
    assert_int_equal(tsr_lay_slr_of(32, 4, 3, 8), 1);
    assert_int_equal(tsr_lay_slr_of(32, 4, 3, 11), 1);   /* the last attention PE */
    assert_int_equal(tsr_lay_slr_of(32, 4, 3, 20), 2);
    assert_int_equal(tsr_lay_slr_of(32, 4, 3, 31), 2);
    /* any profile shape: contiguous, whole rows, rows of every C_m and KV
     * groups of every split up to C inside one SLR */
    for (uint32_t C = 1; C <= 16; C *= 2)
        for (uint32_t R = 1; R <= 16; R++)
            for (uint32_t S = 1; S <= 4 && S <= R; S++) {
                uint32_t P = R * C, prev = 0;
                assert_int_equal(tsr_lay_slr_pe0(P, C, S, 0), 0);
                assert_int_equal(tsr_lay_slr_pe0(P, C, S, S), P);
                for (uint32_t s = 1; s <= S; s++) {
                    uint32_t b = tsr_lay_slr_pe0(P, C, S, s), n = b - prev;
                    assert_true(b > prev && b % C == 0);
                    assert_true(n / C == R / S || n / C == R / S + 1);
                    prev = b;
                }
                for (uint32_t Cm = 1; Cm <= C; Cm *= 2)
                    for (uint32_t p = 0; p < P; p++)
                        assert_int_equal(tsr_lay_slr_of(P, C, S, p),
                                         tsr_lay_slr_of(P, C, S, p / Cm * Cm));
            }
    /* the kernel's macros, for the profile it was built with */
    for (uint32_t s = 0; s <= TSR_SLRS; s++)
        assert_int_equal(TSR_SLR_PE0(s), tsr_lay_slr_pe0(TSR_PES, TSR_MAX_MESH_COLS, TSR_SLRS, s));
    for (uint32_t p = 0; p < TSR_PES; p++)
        assert_int_equal(TSR_SLR_OF(p), tsr_lay_slr_of(TSR_PES, TSR_MAX_MESH_COLS, TSR_SLRS, p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slr_assignment_keeps_rows_whole),
        cmocka_unit_test_setup(layout_every_row_in_one_tile, tm_reseed),
        cmocka_unit_test_setup(layout_kv_homes, tm_reseed),
        cmocka_unit_test_setup(configure_refusals, tm_reseed),
        cmocka_unit_test_setup(commands_check_arguments, tm_reseed),
        cmocka_unit_test_setup(load_w8_keeps_the_bytes_around, tm_reseed),
        cmocka_unit_test_setup(read_counters_answers_every_field, tm_reseed),
        cmocka_unit_test_setup(wimage_profiles_take_their_models, tm_reseed),
        cmocka_unit_test_setup(wimage_profiles_refuse_past_limits, tm_reseed),
        cmocka_unit_test_setup(wimage_config_mesh_options, tm_reseed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
