/*
 * test_stages.c - a model split over pipeline stages, on the kernel side
 * (kernels/forward.c, FORWARD in kernels/tsr_kernel.c): each stage its own
 * tsr_kstate holding layers [l0, l1) (driver: tsr_checkpoint_stage_view,
 * tsr_mesh_opts.stage), the residual vectors carried from one stage's
 * link-out to the next one's link-in by the test, the sampled id back to
 * stage 0 as the next pass's token.
 *
 *   split == one device   stories260K (5 layers) over 2 and 4 stages, F32
 *                         and its own Q8_0 (the llama2.c v2 file and the
 *                         Q8_0 GGUF), greedy and seeded top-p: the tokens
 *                         of PREFILL + DECODE on one device, bit for bit
 *   link words            a hop carries TSR_LINK_HDR + dim words a token,
 *                         its header says (items, slot, position, dim); a
 *                         link-in that carries another pass is refused
 *   plan == counters      each stage's last pass, region by region, equals
 *                         tsr_plan_pass of the stage's config (the link
 *                         region: the hop constant and the words)
 *   what a stage holds    a middle stage holds no embedding or classifier
 *                         rows; the stages' weight bytes add up to the
 *                         single device's plus the tied classifier's copy
 *
 * On the rig (tests/support/kernel_rig.c): the kernels on this thread.
 *
 * And through the driver (tessera.h, "emu:cards=N"): N emulated devices in
 * one process, each its own kernel instance, the command layer moving the
 * vectors (driver/kcmd.c):
 *
 *   api split == one device  stories260K (the llama2.c file in F32 and as
 *                         Q8_0, the F32 and Q8_0 GGUF files) over 2 and 4
 *                         cards, greedy and seeded: the same tokens
 *   api traffic           per decoded token and hop 16 + 4 x dim bytes over
 *                         the card links; the weights cross the host link
 *                         once (the split's load bytes: the one device's,
 *                         plus the tied classifier's copy on the last card
 *                         and each card's configuration)
 *   api stages            stages= by hand gives the same tokens; a split
 *                         the model cannot take is refused
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

#include "tessera.h"
#include "kernel_rig.h"
#include "model.h"
#include "plan.h"
#include "test_util.h"
#include "weight_image.h"

/* The compiled profile's SLR crossings, as the kernel charges them. */
static const tsr_cy_slr *slr_cy_of(void)
{
    static tsr_cy_slr f;
    f = TSR_CY_SLR;
    return &f;
}
#define slr_cy (*slr_cy_of())

enum { MAXK = 5, NGEN = 40, PES = 4 };

/* One stage: its state and config. */
typedef struct stage { tsr_kstate *st; tsr_kconfig kc; } stage;

typedef struct split {
    int K;
    stage s[MAXK];
} split;

/* The stages of m over layer bounds b[0] = 0 < b[1] < ... < b[K] = L,
 * placed with o on PES PEs. */
static void split_place(const tsr_checkpoint *m, const tsr_load_opts *o, const int *b, int K,
                        split *sp)
{
    sp->K = K;
    for (int k = 0; k < K; k++) {
        tsr_checkpoint view;
        tsr_err e = { 0 };
        assert_int_equal(tsr_checkpoint_stage_view(m, b[k], b[k + 1], &view, &e), TSR_OK);
        int stg = (int)tsr_lay_stage(k == 0, k == K - 1);
        tsr_mesh_opts mo = { .pes = PES, .stage = stg };
        sp->s[k].st = rig_state_new();
        rig_place(sp->s[k].st, &view, o, &mo, &sp->s[k].kc);
        assert_int_equal(sp->s[k].kc.n_layers, (uint32_t)(b[k + 1] - b[k]));
        assert_int_equal(sp->s[k].kc.stage, (uint32_t)stg);
    }
}

static void split_free(split *sp)
{
    for (int k = 0; k < sp->K; k++) rig_state_free(sp->s[k].st);
}

static float link_buf[2][TSR_LINK_WORDS];

/* FORWARD on st with the link ports li, lo, room answer words in out;
 * the status. */
static int forward_n(tsr_kstate *st, uint32_t slot, const uint32_t a[6], const void *in,
                     uint32_t in_words, uint32_t *out, uint32_t room, uint32_t *out_n,
                     const float *li, float *lo)
{
    uint32_t c[TSR_CMD_WORDS] = { 0 }, none = 0, hdr[TSR_CTL_CMD0] = { 0 }, n = 0;
    c[TSR_CMD_OP] = TSR_OP_FORWARD;
    c[TSR_CMD_SLOT] = slot;
    c[TSR_CMD_IN_WORDS] = in_words;
    c[TSR_CMD_OUT_WORDS] = out ? room : 0u;
    for (int i = 0; i < 6; i++) c[TSR_CMD_A0 + i] = a[i];
    const uint32_t *w = in ? in : &none;
    uint32_t *ow = out ? out : &none;
    int rc = tsr_kernel_exec(st, c, w, (const float *)(const void *)w, ow, (float *)(void *)ow,
                             hdr, li, lo, &n);
    if (out_n) *out_n = n;
    return rc;
}

static int forward(tsr_kstate *st, uint32_t slot, const uint32_t a[6], const void *in,
                   uint32_t in_words, uint32_t *out, uint32_t *out_n, const float *li, float *lo)
{
    return forward_n(st, slot, a, in, in_words, out, 1, out_n, li, lo);
}

/* One pass of n tokens ids at the next positions through every stage; with
 * sample, the id the last stage samples (else -1).  *hop_words gets the
 * words the last hop carried. */
static int32_t split_pass_slot(split *sp, uint32_t slot, const int32_t *ids, uint32_t n,
                               int sample, float temp, float top_p, uint64_t seed, int reseed,
                               uint32_t *hop_words)
{
    uint32_t pay[2 + 16];
    memcpy(&pay[0], &temp, 4);
    memcpy(&pay[1], &top_p, 4);
    for (uint32_t i = 0; i < n; i++) pay[2 + i] = (uint32_t)ids[i];
    uint32_t flags = (sample ? TSR_FWDC_SAMPLE : 0u) | (reseed ? TSR_FWDC_RESEED : 0u);
    uint32_t a[6] = { n, flags, (uint32_t)seed, (uint32_t)(seed >> 32), 0, 0 };
    int32_t next = -1;
    for (int k = 0; k < sp->K; k++) {
        const float *li = k > 0 ? link_buf[(k - 1) & 1] : NULL;
        float *lo = k < sp->K - 1 ? link_buf[k & 1] : NULL;
        uint32_t out = 0, on = 0;
        int last = k == sp->K - 1;
        a[1] = last ? flags : 0u;   /* the sampler is the last stage's */
        assert_int_equal(forward(sp->s[k].st, slot, a, pay, k == 0 ? 2u + n : 2u,
                                 last && sample ? &out : NULL, &on, li, lo), TSR_K_OK);
        if (lo) {
            /* the hop: the header, then the vectors */
            uint32_t dim = sp->s[k].kc.dim;
            assert_true(lo[0] == (float)n);
            assert_true(lo[1] == (float)slot);
            assert_true(lo[3] == (float)dim);
            if (hop_words) *hop_words = TSR_LINK_HDR + n * dim;
        }
        if (last && sample) {
            assert_int_equal(on, 1);
            next = (int32_t)out;
        }
    }
    return next;
}

static int32_t split_pass(split *sp, const int32_t *ids, uint32_t n, int sample, float temp,
                          float top_p, uint64_t seed, int reseed, uint32_t *hop_words)
{
    return split_pass_slot(sp, 0, ids, n, sample, temp, top_p, seed, reseed, hop_words);
}

/* The prompt of np tokens but the last into slot's KV caches on every
 * stage, in blocks (no sampling). */
static void split_prefill(split *sp, uint32_t slot, const int32_t *prompt, int np)
{
    for (int fed = 0; fed < np - 1;) {
        uint32_t n = (uint32_t)(np - 1 - fed);
        if (n > TSR_MAX_BLOCK) n = TSR_MAX_BLOCK;
        split_pass_slot(sp, slot, prompt + fed, n, 0, 0, 0, 0, 0, NULL);
        fed += (int)n;
    }
}

/* The tokens of the split: the prompt in blocks (no sampling), its last
 * token sampled, then NGEN - 1 more, each fed back to stage 0. */
static void split_run(split *sp, const int32_t *prompt, int np, float temp, float top_p,
                      uint64_t seed, int32_t *toks)
{
    split_prefill(sp, 0, prompt, np);
    int32_t cur = prompt[np - 1];
    for (int i = 0; i < NGEN; i++) {
        uint32_t hop = 0;
        toks[i] = split_pass(sp, &cur, 1, 1, temp, top_p, seed, i == 0, &hop);
        if (sp->K > 1) assert_int_equal(hop, TSR_LINK_HDR + sp->s[0].kc.dim);
        assert_true(toks[i] >= 0 && (uint32_t)toks[i] < sp->s[0].kc.vocab_size);
        cur = toks[i];
    }
}

/* The reference: the whole model on one device, PREFILL + DECODE. */
static void single_run(const tsr_checkpoint *m, const tsr_load_opts *o, const int32_t *prompt,
                       int np, float temp, float top_p, uint64_t seed, int32_t *toks)
{
    tsr_kstate *st = rig_state_new();
    tsr_mesh_opts mo = { .pes = PES };
    rig_place(st, m, o, &mo, NULL);
    assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, 0, (uint32_t[6]){ (uint32_t)np }, prompt,
                             (uint32_t)np, NULL, 0, NULL), TSR_K_OK);
    float pay[2] = { temp, top_p };
    uint32_t ans[NGEN + 1], n = 0;
    uint32_t a[6] = { NGEN, (uint32_t)seed, (uint32_t)(seed >> 32),
                      TSR_DEC_RESEED | TSR_DEC_IGNORE_STOP };
    assert_int_equal(rig_cmd(st, TSR_OP_DECODE, 0, a, pay, 2, ans, NGEN + 1, &n), TSR_K_OK);
    assert_int_equal(ans[0], NGEN);
    for (int i = 0; i < NGEN; i++) toks[i] = (int32_t)ans[1 + i];
    rig_state_free(st);
}

static tsr_checkpoint *open_model(const char *name)
{
    tsr_checkpoint *ck = NULL;
    tsr_err e = { 0 };
    int rc = tsr_checkpoint_open(tsr_test_path(name), &ck, &e);
    if (rc) print_error("%s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    return ck;
}

/* "Once upon a time" in tok512 ids, BOS first: the first five ids of
 * run.c's reference run (reference/stories260K_once_upon_a_time.tokens). */
static const int32_t PROMPT[] = { 1, 403, 407, 261, 378 };
enum { NP = 5 };

/* The reference run's ids after the prompt (run.c, temperature 0). */
static void runc_tokens(int32_t *ids)
{
    FILE *f = fopen(SHARED_REF("stories260K_once_upon_a_time.tokens"), "r");
    assert_non_null(f);
    int v, i = 0;
    while (i < NP + NGEN && fscanf(f, "%d", &v) == 1) {
        if (i < NP) assert_int_equal(v, PROMPT[i]);
        else ids[i - NP] = v;
        i++;
    }
    fclose(f);
    assert_int_equal(i, NP + NGEN);
}

static void splits_equal_single(const char *model, int f32, int seqlen)
{
    tsr_checkpoint *ck = open_model(model);
    tsr_load_opts o = { .weights_f32 = f32, .seq_len = seqlen, .n_slots = 1 };
    int L = ck->cfg.n_layers;
    assert_int_equal(L, 5);
    static const int b2[] = { 0, 3, 5 }, b4[] = { 0, 1, 2, 4, 5 };
    static const struct { float t, p; uint64_t seed; } smp[] = { { 0.0f, 0.9f, 0 },
                                                                 { 1.0f, 0.9f, 42 } };
    int np = NP;
    for (size_t q = 0; q < 2; q++) {
        int32_t want[NGEN], got[NGEN];
        single_run(ck, &o, PROMPT, np, smp[q].t, smp[q].p, smp[q].seed, want);
        if (f32 && smp[q].t == 0.0f) {
            /* one device in F32 is run.c (test_golden); so is the split */
            int32_t ref[NGEN];
            runc_tokens(ref);
            assert_memory_equal(want, ref, sizeof ref);
        }
        for (int K = 1; K <= 4; K *= 2) {
            split sp;
            int b1[] = { 0, L };
            split_place(ck, &o, K == 1 ? b1 : K == 2 ? b2 : b4, K, &sp);
            split_run(&sp, PROMPT, np, smp[q].t, smp[q].p, smp[q].seed, got);
            for (int i = 0; i < NGEN; i++)
                if (got[i] != want[i])
                    fail_msg("%s %s, %d stages, T %.1f: token %d is %d, one device %d", model,
                             f32 ? "F32" : "Q8_0", K, smp[q].t, i, got[i], want[i]);
            split_free(&sp);
        }
    }
    tsr_checkpoint_close(ck);
}

static void split_f32(void **state)
{
    (void)state;
    splits_equal_single("models/stories260K.bin", 1, 0);
}

static void split_q8(void **state)
{
    (void)state;
    splits_equal_single("models/stories260K.bin", 0, 0);
}

static void split_q8_gguf(void **state)
{
    (void)state;
    splits_equal_single("models/stories260K-q8_0.gguf", 0, 256);
}

/* Each stage's pass, region by region, is what plan computes from its
 * config: a middle stage charges link-in (TSR_LINK_HOP plus a word a
 * cycle) and link-out, no embedding and no classifier. */
static void plan_equals_stage_counters(void **state)
{
    (void)state;
    tsr_checkpoint *ck = open_model("models/stories260K.bin");
    tsr_load_opts o = { .n_slots = 1 };
    static const int b3[] = { 0, 2, 4, 5 };
    split sp;
    split_place(ck, &o, b3, 3, &sp);
    int32_t toks[NGEN];
    split_run(&sp, PROMPT, NP, 0.0f, 0.0f, 0, toks);
    uint32_t pos = NP - 1u + NGEN - 1u;   /* the last pass's position */
    for (int k = 0; k < 3; k++) {
        const tsr_kstate *st = sp.s[k].st;
        assert_int_equal(st->cnt.last_pos, pos);
        tsr_plan_cycles c;
        tsr_plan_pass(&sp.s[k].kc, TSR_SUM_LANES, TSR_PES, &slr_cy, &pos, 1, 1, &c);
        for (int r = 0; r < TSR_RG_COUNT; r++) {
            uint64_t run = st->cnt.cyc[r] - st->cnt.cyc_mark[r];
            if (run != c.rg[r])
                fail_msg("stage %d, region %s: kernel %llu, plan %llu", k, tsr_plan_region_name(r),
                         (unsigned long long)run, (unsigned long long)c.rg[r]);
        }
        uint64_t link = st->cnt.cyc[TSR_RG_LINK] - st->cnt.cyc_mark[TSR_RG_LINK];
        uint64_t words = TSR_LINK_HDR + ck->cfg.dim;
        uint64_t want = (k > 0 ? TSR_LINK_HOP + words : 0u) + (k < 2 ? TSR_D_BUS + words : 0u);
        assert_int_equal(link, want);
        uint64_t embed = st->cnt.cyc[TSR_RG_EMBED] - st->cnt.cyc_mark[TSR_RG_EMBED];
        uint64_t argmax = st->cnt.cyc[TSR_RG_ARGMAX] - st->cnt.cyc_mark[TSR_RG_ARGMAX];
        assert_int_equal(embed != 0, k == 0);
        assert_int_equal(argmax != 0, k == 2);
    }
    split_free(&sp);
    tsr_checkpoint_close(ck);
}

/* A link-in whose header is another pass's is refused; a stage refuses
 * the whole-model commands. */
static void link_header_checked(void **state)
{
    (void)state;
    tsr_checkpoint *ck = open_model("models/stories260K.bin");
    tsr_load_opts o = { .n_slots = 1 };
    static const int b2[] = { 0, 3, 5 };
    split sp;
    split_place(ck, &o, b2, 2, &sp);
    int32_t id = 1;
    split_pass(&sp, &id, 1, 0, 0, 0, 0, 0, NULL);   /* position 0 on both */
    uint32_t pay[3] = { 0, 0, 1 }, a[6] = { 1, 0, 0, 0, 0, 0 };
    /* stage 0 moves on to position 1; stage 1's link still says 0 */
    link_buf[0][2] = 0.0f;
    assert_int_equal(forward(sp.s[1].st, 0, a, pay, 2, NULL, NULL, link_buf[0], NULL), TSR_K_EARG);
    link_buf[0][2] = 1.0f;
    link_buf[0][3] = 63.0f;   /* not its dim */
    assert_int_equal(forward(sp.s[1].st, 0, a, pay, 2, NULL, NULL, link_buf[0], NULL), TSR_K_EARG);
    /* no link-in port at all */
    assert_int_equal(forward(sp.s[1].st, 0, a, pay, 2, NULL, NULL, NULL, NULL), TSR_K_ESTATE);
    /* sampling on a stage that is not the last */
    a[1] = TSR_FWDC_SAMPLE;
    uint32_t out = 0;
    assert_int_equal(forward(sp.s[0].st, 0, a, pay, 3, &out, NULL, NULL, link_buf[0]), TSR_K_EARG);
    /* PREFILL and DECODE need the whole model */
    assert_int_equal(rig_cmd(sp.s[0].st, TSR_OP_PREFILL, 0, (uint32_t[6]){ 1 }, &pay[2], 1, NULL,
                             0, NULL), TSR_K_ESTATE);
    split_free(&sp);
    tsr_checkpoint_close(ck);
}

/* A FORWARD batch record (TSR_FWDB_*) of slot with token id. */
static void fwdb_record(uint32_t *r, uint32_t slot, int32_t id, float temp, float top_p,
                        uint64_t seed, int reseed)
{
    memset(r, 0, 4u * TSR_FWDB_WORDS);
    r[TSR_FWDB_SLOT] = slot;
    r[TSR_FWDB_TOKEN] = (uint32_t)id;
    r[TSR_FWDB_FLAGS] = reseed ? TSR_FWDC_RESEED : 0u;
    r[TSR_FWDB_SEED_LO] = (uint32_t)seed;
    r[TSR_FWDB_SEED_HI] = (uint32_t)(seed >> 32);
    memcpy(&r[TSR_FWDB_TEMP], &temp, 4);
    memcpy(&r[TSR_FWDB_TOP_P], &top_p, 4);
}

/* One batched FORWARD (TSR_FWDC_BATCH) of m records through every stage,
 * the last sampling each: the ids into next[]. */
static void split_batch_pass(split *sp, const uint32_t *recs, uint32_t m, int32_t *next)
{
    uint32_t out[8] = { 0 }, on = 0;
    for (int k = 0; k < sp->K; k++) {
        const float *li = k > 0 ? link_buf[(k - 1) & 1] : NULL;
        float *lo = k < sp->K - 1 ? link_buf[k & 1] : NULL;
        int last = k == sp->K - 1;
        uint32_t a[6] = { m, TSR_FWDC_BATCH | (last ? TSR_FWDC_SAMPLE : 0u) };
        assert_int_equal(forward_n(sp->s[k].st, recs[TSR_FWDB_SLOT], a, recs, m * TSR_FWDB_WORDS,
                                   last ? out : NULL, m, &on, li, lo), TSR_K_OK);
        if (lo) {
            /* one hop for all: item 0's header, then the m vectors */
            assert_true(lo[0] == (float)m);
            assert_true(lo[1] == (float)recs[TSR_FWDB_SLOT]);
        }
    }
    assert_int_equal(on, m);
    for (uint32_t b = 0; b < m; b++) next[b] = (int32_t)out[b];
}

/* Two sequences (greedy, and seeded top-p) stepping together over 2 and
 * 4 stages, a batched FORWARD a token: each gets its one-device tokens;
 * and what a batched FORWARD refuses. */
static void batch_forward(void **state)
{
    (void)state;
    tsr_checkpoint *ck = open_model("models/stories260K.bin");
    tsr_load_opts o = { .n_slots = 2, .seq_len = 64 };
    int32_t want[2][NGEN];
    single_run(ck, &o, PROMPT, NP, 0.0f, 0.9f, 0, want[0]);
    single_run(ck, &o, PROMPT, NP, 1.0f, 0.9f, 42, want[1]);
    static const int b2[] = { 0, 3, 5 }, b4[] = { 0, 1, 2, 4, 5 };
    for (int K = 2; K <= 4; K += 2) {
        split sp;
        split_place(ck, &o, K == 2 ? b2 : b4, K, &sp);
        /* slot 1 first: item 0 need not be slot 0 */
        split_prefill(&sp, 1, PROMPT, NP);
        split_prefill(&sp, 0, PROMPT, NP);
        int32_t cur[2] = { PROMPT[NP - 1], PROMPT[NP - 1] }, got[2][NGEN];
        for (int i = 0; i < NGEN; i++) {
            uint32_t recs[2 * TSR_FWDB_WORDS], next[2];
            fwdb_record(recs, 1, cur[1], 1.0f, 0.9f, 42, i == 0);
            fwdb_record(recs + TSR_FWDB_WORDS, 0, cur[0], 0.0f, 0.9f, 0, i == 0);
            split_batch_pass(&sp, recs, 2, (int32_t *)next);
            got[1][i] = cur[1] = (int32_t)next[0];
            got[0][i] = cur[0] = (int32_t)next[1];
        }
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < NGEN; i++)
                if (got[q][i] != want[q][i])
                    fail_msg("%d stages, sequence %d of 2: token %d is %d, one device %d", K, q, i,
                             got[q][i], want[q][i]);
        assert_int_equal(sp.s[0].st->pos[0], NP - 1 + NGEN);
        assert_int_equal(sp.s[K - 1].st->pos[1], NP - 1 + NGEN);

        /* refused: a slot twice, more items than a pass takes, a reserved
         * word set, an id past the vocabulary, a link header of another
         * slot, a position past seq_len; a single slot's FORWARD past
         * n_slots */
        uint32_t recs[9 * TSR_FWDB_WORDS], out[9], a[6] = { 2, TSR_FWDC_BATCH };
        fwdb_record(recs, 0, 1, 0, 0, 0, 0);
        fwdb_record(recs + TSR_FWDB_WORDS, 0, 1, 0, 0, 0, 0);
        assert_int_equal(forward_n(sp.s[0].st, 0, a, recs, 2 * TSR_FWDB_WORDS, NULL, 0, NULL, NULL,
                                   link_buf[0]), TSR_K_EARG);
        for (uint32_t b = 0; b < 9; b++) fwdb_record(recs + b * TSR_FWDB_WORDS, b % 2, 1, 0, 0, 0, 0);
        a[0] = TSR_MAX_BATCH + 1u;
        assert_int_equal(forward_n(sp.s[0].st, 0, a, recs, 9 * TSR_FWDB_WORDS, NULL, 0, NULL, NULL,
                                   link_buf[0]), TSR_K_EARG);
        a[0] = 1;
        fwdb_record(recs, 0, 1, 0, 0, 0, 0);
        recs[TSR_FWDB_RESERVED] = 1;   /* a word for later: zero */
        assert_int_equal(forward_n(sp.s[0].st, 0, a, recs, TSR_FWDB_WORDS, NULL, 0, NULL, NULL,
                                   link_buf[0]), TSR_K_EARG);
        fwdb_record(recs, 0, (int32_t)sp.s[0].kc.vocab_size, 0, 0, 0, 0);
        assert_int_equal(forward_n(sp.s[0].st, 0, a, recs, TSR_FWDB_WORDS, NULL, 0, NULL, NULL,
                                   link_buf[0]), TSR_K_EARG);
        /* stage 1's link says slot 0 at its position; the record says 1 */
        fwdb_record(recs, 0, 1, 0, 0, 0, 0);
        assert_int_equal(forward_n(sp.s[0].st, 0, a, recs, TSR_FWDB_WORDS, NULL, 0, NULL, NULL,
                                   link_buf[0]), TSR_K_OK);
        fwdb_record(recs, 1, 1, 0, 0, 0, 0);
        assert_int_equal(forward_n(sp.s[1].st, 1, a, recs, TSR_FWDB_WORDS, NULL, 0, NULL,
                                   link_buf[0], K > 2 ? link_buf[1] : NULL), TSR_K_EARG);
        /* sampling with no room for every id */
        a[0] = 2;
        a[1] = TSR_FWDC_BATCH | TSR_FWDC_SAMPLE;
        fwdb_record(recs + TSR_FWDB_WORDS, 0, 1, 0, 0, 0, 0);
        assert_int_equal(forward_n(sp.s[K - 1].st, 1, a, recs, 2 * TSR_FWDB_WORDS, out, 1, NULL,
                                   link_buf[0], NULL), TSR_K_EARG);
        uint32_t one[3] = { 0, 0, 1 }, a1[6] = { 1, 0 };
        assert_int_equal(forward_n(sp.s[0].st, 2, a1, one, 3, NULL, 0, NULL, NULL, link_buf[0]),
                         TSR_K_EARG);
        /* slot 1 at seq_len */
        sp.s[0].st->pos[1] = (int32_t)sp.s[0].kc.seq_len;
        a[0] = 1;
        a[1] = TSR_FWDC_BATCH;
        assert_int_equal(forward_n(sp.s[0].st, 1, a, recs, TSR_FWDB_WORDS, NULL, 0, NULL, NULL,
                                   link_buf[0]), TSR_K_ERANGE);
        split_free(&sp);
    }
    tsr_checkpoint_close(ck);
}

/* What each stage holds: the first the embedding, a middle one neither it
 * nor a classifier, the last the (tied) classifier; every layer's tiles on
 * exactly one stage. */
static void stage_holdings(void **state)
{
    (void)state;
    tsr_checkpoint *ck = open_model("models/stories260K.bin");
    tsr_load_opts o = { .n_slots = 1 };
    static const int b3[] = { 0, 2, 4, 5 };
    split sp;
    split_place(ck, &o, b3, 3, &sp);
    tsr_kstate *one = rig_state_new();
    tsr_mesh_opts mo = { .pes = PES };
    tsr_kconfig kc1;
    rig_place(one, ck, &o, &mo, &kc1);
    uint32_t d, n, pair;
    uint64_t sum = 0, whole = 0, emb = 0;
    for (int k = 0; k < 3; k++) {
        const tsr_kconfig *kc = &sp.s[k].kc;
        tsr_lay_mat_shape(kc, TSR_MAT_EMB, &d, &n, &pair);
        assert_int_equal(d, k == 1 ? 0u : kc->vocab_size);   /* tied: the last holds it too */
        for (uint32_t p = 0; p < PES; p++) {
            uint64_t w8, f32;
            tsr_lay_pe_weights(kc, p, &w8, &f32, NULL);
            sum += w8 + 4u * f32;
        }
    }
    for (uint32_t p = 0; p < PES; p++) {
        uint64_t w8, f32;
        tsr_lay_pe_weights(&kc1, p, &w8, &f32, NULL);
        whole += w8 + 4u * f32;
        tsr_tile t = tsr_lay_tile(&kc1, TSR_MAT_EMB, 0, p);
        emb += tsr_lay_tile_w8(&kc1, t) + 4u * tsr_lay_tile_f32(&kc1, t);
    }
    assert_true(emb > 0);
    assert_int_equal(sum, whole + emb);
    rig_state_free(one);
    split_free(&sp);
    tsr_checkpoint_close(ck);
}

/* ---- through the driver ---------------------------------------------- */

enum { API_GEN = 48 };

typedef struct api_run {
    int toks[API_GEN], n;
    tsr_traffic t;
    int dim;
} api_run;

/* Load model (tokenizer tok, NULL for GGUF) on spec, append the prompt,
 * generate API_GEN tokens with T / top_p / seed (ignore_stop). */
static void api_generate(const char *spec, const char *model, const char *tok, int f32,
                         float temp, float top_p, uint64_t seed, api_run *r)
{
    tsr_device *dev = NULL;
    tsr_model *m = NULL;
    tsr_seq *s = NULL;
    int rc = tsr_device_open(spec, &dev);
    if (rc) fail_msg("%s: %s", spec, tsr_device_errmsg(dev));
    tsr_model_opts mo = { .tokenizer = tok ? tsr_test_path(tok) : NULL, .weights_f32 = f32,
                          .seq_len = 256, .n_seqs = 1 };
    rc = tsr_model_load(dev, tsr_test_path(model), &mo, &m);
    if (rc) fail_msg("%s %s: %s", spec, model, tsr_device_errmsg(dev));
    tsr_model_info info = { 0 };
    assert_int_equal(tsr_model_get_info(m, &info), TSR_OK);
    r->dim = info.dim;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_tokens(s, PROMPT, NP), TSR_OK);
    tsr_gen_opts g = { .max_tokens = API_GEN, .temperature = temp, .top_p = top_p,
                       .seed = seed, .ignore_stop = 1 };
    r->n = 0;
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &r->n), TSR_OK);
    assert_int_equal(r->n, API_GEN);
    const int *all;
    int n_all;
    assert_int_equal(tsr_seq_tokens(s, &all, &n_all), TSR_OK);
    assert_int_equal(n_all, NP + API_GEN);
    memcpy(r->toks, all + NP, sizeof r->toks);
    r->t = (tsr_traffic){ 0 };   /* size 0: the whole struct */
    assert_int_equal(tsr_device_traffic(dev, &r->t), TSR_OK);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

static void api_splits(const char *model, const char *tok, int f32)
{
    static const struct { float t, p; uint64_t seed; } smp[] = { { 0.0f, 0.9f, 0 },
                                                                 { 1.0f, 0.9f, 42 } };
    for (size_t q = 0; q < 2; q++) {
        api_run one, split;
        api_generate("emu:pes=4,threads=1", model, tok, f32, smp[q].t, smp[q].p, smp[q].seed, &one);
        assert_int_equal(one.t.link_decode, 0);
        assert_int_equal(one.t.link_passes, 0);
        for (int K = 2; K <= 4; K += 2) {
            char spec[64];
            snprintf(spec, sizeof spec, "emu:pes=4,threads=1,cards=%d", K);
            api_generate(spec, model, tok, f32, smp[q].t, smp[q].p, smp[q].seed, &split);
            for (int i = 0; i < API_GEN; i++)
                if (split.toks[i] != one.toks[i])
                    fail_msg("%s %s, %d cards, T %.1f: token %d is %d, one device %d", model,
                             f32 ? "F32" : "quantized", K, smp[q].t, i, split.toks[i],
                             one.toks[i]);
            /* per decoded token, each of the K - 1 hops: the header and
             * the residual vector; the last token sampled is never fed */
            uint64_t hop = 4u * (TSR_LINK_HDR + (uint64_t)split.dim);
            assert_int_equal(split.t.link_decode, (uint64_t)API_GEN * (uint64_t)(K - 1) * hop);
            assert_true(split.t.link_prefill >= (uint64_t)(K - 1) * (4u * TSR_LINK_HDR +
                                                                      4u * (NP - 1u) * split.dim));
            /* the weights once: the one device's bytes, plus the tied
             * classifier's copy and each card's configuration and
             * commands (the streams' chunks are per card) */
            assert_int_equal(split.t.loads, 1);
            assert_true(split.t.load_h2d > one.t.load_h2d);
            uint64_t emb = f32 ? 512u * 64u * 4u : 512u * 64u + 512u * 64u / 32u * 4u;
            assert_true(split.t.load_h2d - one.t.load_h2d <= emb + (uint64_t)K * 8192u);
        }
    }
}

static void api_split_llama2c(void **state)
{
    (void)state;
    api_splits("models/stories260K.bin", "models/tok512.bin", 1);   /* F32 */
    api_splits("models/stories260K.bin", "models/tok512.bin", 0);   /* as Q8_0 */
}

static void api_split_gguf(void **state)
{
    (void)state;
    api_splits("models/stories260K-f32.gguf", NULL, 1);
    api_splits("models/stories260K-q8_0.gguf", NULL, 0);
}

/* Two sequences of one split generated together get the tokens each gets
 * alone on one device: in turn through the stages (a pass each), and
 * with batch=2 together (one pass of a stage for both). */
static void api_batch_on_split(void **state)
{
    (void)state;
    api_run want[2];
    api_generate("emu:pes=4,threads=1", "models/stories260K.bin", "models/tok512.bin", 1, 0.0f,
                 0.9f, 0, &want[0]);
    api_generate("emu:pes=4,threads=1", "models/stories260K.bin", "models/tok512.bin", 1, 1.0f,
                 0.9f, 42, &want[1]);
    for (int together = 0; together < 2; together++) {
        tsr_device *dev = NULL;
        assert_int_equal(tsr_device_open(together ? "emu:pes=4,threads=1,cards=3,batch=2"
                                                  : "emu:pes=4,threads=1,cards=3", &dev), TSR_OK);
        tsr_model *m = NULL;
        tsr_model_opts mo = { .tokenizer = tsr_test_path("models/tok512.bin"), .weights_f32 = 1,
                              .seq_len = 256, .n_seqs = 2 };
        assert_int_equal(tsr_model_load(dev, tsr_test_path("models/stories260K.bin"), &mo, &m),
                         TSR_OK);
        tsr_seq *s[2];
        tsr_gen_opts g[2] = { { .max_tokens = API_GEN, .temperature = 0.0f, .top_p = 0.9f,
                                .ignore_stop = 1 },
                              { .max_tokens = API_GEN, .temperature = 1.0f, .top_p = 0.9f,
                                .seed = 42, .ignore_stop = 1 } };
        for (int i = 0; i < 2; i++) {
            assert_int_equal(tsr_seq_open(m, &s[i]), TSR_OK);
            assert_int_equal(tsr_seq_append_tokens(s[i], PROMPT, NP), TSR_OK);
        }
        int ng[2] = { 0, 0 };
        tsr_pipeline p0 = { 0 }, p1 = { 0 };
        assert_int_equal(tsr_device_pipeline(dev, &p0), TSR_OK);
        assert_int_equal(tsr_seq_generate_batch(s, 2, g, NULL, NULL, ng), TSR_OK);
        assert_int_equal(tsr_device_pipeline(dev, &p1), TSR_OK);
        for (int c = 0; c < 3; c++)   /* a pass a token each, or one for both */
            assert_int_equal(p1.passes[c] - p0.passes[c], (together ? 1 : 2) * API_GEN);
        for (int i = 0; i < 2; i++) {
            const int *all;
            int n_all;
            assert_int_equal(ng[i], API_GEN);
            assert_int_equal(tsr_seq_tokens(s[i], &all, &n_all), TSR_OK);
            assert_int_equal(n_all, NP + API_GEN);
            assert_memory_equal(all + NP, want[i].toks, sizeof want[i].toks);
            tsr_seq_close(s[i]);
        }
        tsr_model_close(m);
        tsr_device_close(dev);
    }
}

/* ---- a stories110M-shape model: the pipeline's device clocks ---------- */

enum { PIPE_GEN = 24, PIPE_SEQS = 4 };

static const int32_t PROMPT_B[] = { 1, 9038, 2501, 263, 931 };

/* A stories110M-shape Q8_0 file, written once for the tests below. */
static const char *model_110m(void)
{
    static char path[64];
    if (path[0]) return path;
    snprintf(path, sizeof path, "/tmp/tsr_stages110m_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512];
    if (tsr_synth_file("stories110M", path, 32, 7, err, sizeof err)) fail_msg("synth: %s", err);
    return path;
}

/* n sequences, sequence i from prompt (i % 2 ? B : A), PIPE_GEN greedy
 * tokens each in one tsr_seq_generate_batch on dev's model m: the tokens
 * into toks[i], the decode's pipeline figures (the difference over the
 * call) into *p. */
static void pipe_generate(tsr_device *dev, tsr_model *m, int n, int toks[][PIPE_GEN],
                          tsr_pipeline *p)
{
    tsr_seq *s[PIPE_SEQS];
    tsr_gen_opts g[PIPE_SEQS];
    int ng[PIPE_SEQS];
    for (int i = 0; i < n; i++) {
        assert_int_equal(tsr_seq_open(m, &s[i]), TSR_OK);
        assert_int_equal(tsr_seq_append_tokens(s[i], i % 2 ? PROMPT_B : PROMPT, NP), TSR_OK);
        g[i] = (tsr_gen_opts){ .max_tokens = PIPE_GEN, .temperature = 0.0f, .ignore_stop = 1 };
    }
    tsr_pipeline before = { 0 };
    assert_int_equal(tsr_device_pipeline(dev, &before), TSR_OK);
    assert_int_equal(tsr_seq_generate_batch(s, n, g, NULL, NULL, ng), TSR_OK);
    assert_int_equal(tsr_device_pipeline(dev, p), TSR_OK);
    p->decode_cycles -= before.decode_cycles;
    p->decode_tokens -= before.decode_tokens;
    for (int c = 0; c < p->cards; c++) p->busy_cycles[c] -= before.busy_cycles[c];
    for (int i = 0; i < n; i++) {
        const int *all;
        int n_all;
        assert_int_equal(ng[i], PIPE_GEN);
        assert_int_equal(tsr_seq_tokens(s[i], &all, &n_all), TSR_OK);
        memcpy(toks[i], all + NP, sizeof toks[i]);
        tsr_seq_close(s[i]);
    }
}

/* Four sequences in flight over four cards of a stories110M-shape Q8_0
 * model: each sequence's tokens are its solo run's; on the cards' clocks
 * the four give at least 3x one sequence's tokens per second (the split
 * balances the stages' cycles: the classifier weighs about 3.5 layers),
 * and plan's projection of the same split (tsr_plan_pipeline) agrees
 * within 5%, one sequence and four. */
static void api_pipeline_110m(void **state)
{
    (void)state;
    const char *path = model_110m();
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=16,cards=4", &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = SHARED_MODEL("tokenizer.bin"), .seq_len = 256,
                          .n_seqs = PIPE_SEQS };
    tsr_model *m = NULL;
    if (tsr_model_load(dev, path, &mo, &m)) fail_msg("load: %s", tsr_device_errmsg(dev));
    int solo[2][PIPE_GEN], four[PIPE_SEQS][PIPE_GEN], tmp[1][PIPE_GEN];
    tsr_pipeline p1 = { 0 }, p4 = { 0 }, pb = { 0 };
    pipe_generate(dev, m, 1, tmp, &p1);
    memcpy(solo[0], tmp[0], sizeof solo[0]);
    /* prompt B alone: seq 0 of a run of one takes prompt A, so run two */
    {
        int two[2][PIPE_GEN];
        pipe_generate(dev, m, 2, two, &pb);
        assert_memory_equal(two[0], solo[0], sizeof solo[0]);
        memcpy(solo[1], two[1], sizeof solo[1]);
    }
    pipe_generate(dev, m, PIPE_SEQS, four, &p4);
    for (int i = 0; i < PIPE_SEQS; i++)
        for (int t = 0; t < PIPE_GEN; t++)
            if (four[i][t] != solo[i % 2][t])
                fail_msg("sequence %d of 4, token %d: %d, alone %d", i, t, four[i][t], solo[i % 2][t]);
    assert_int_equal(p1.cards, 4);
    assert_int_equal(p1.decode_tokens, PIPE_GEN);
    assert_int_equal(p4.decode_tokens, PIPE_SEQS * PIPE_GEN);
    double c1 = (double)p1.decode_cycles / (double)p1.decode_tokens;
    double c4 = (double)p4.decode_cycles / (double)p4.decode_tokens;
    print_message("stories110M-shape Q8_0 over 4 cards, layers %u+%u+%u+%u: one sequence %.0f "
                  "cycles/token, four %.0f (%.2fx tokens/s on the cards' clocks)\n",
                  p1.n_layers[0], p1.n_layers[1], p1.n_layers[2], p1.n_layers[3], c1, c4, c1 / c4);
    assert_true(c1 / c4 >= 3.0);

    /* plan: the same split, mid-decode */
    tsr_checkpoint *ck = NULL;
    tsr_err e = { 0 };
    assert_int_equal(tsr_checkpoint_open(path, &ck, &e), TSR_OK);
    tsr_load_opts o = { .seq_len = 256, .n_slots = PIPE_SEQS };
    tsr_mesh_opts mesh = { .pes = 16 };
    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    tsr_kconfig kc;
    assert_int_equal(tsr_wimage_config(ck, &o, &mesh, &prof, &kc, &e), TSR_OK);
    uint32_t bounds[5];
    tsr_plan_card_split(&kc, TSR_SUM_LANES, TSR_PES, &slr_cy, 4, bounds);
    for (int c = 0; c < 4; c++) {
        assert_int_equal(p1.first_layer[c], bounds[c]);
        assert_int_equal(p1.n_layers[c], bounds[c + 1] - bounds[c]);
    }
    tsr_plan_pipe pp1, pp4;
    uint32_t mid = NP + PIPE_GEN / 2u;
    tsr_plan_pipeline(&kc, TSR_SUM_LANES, TSR_PES, &slr_cy, bounds, 4, mid, 1, &pp1);
    tsr_plan_pipeline(&kc, TSR_SUM_LANES, TSR_PES, &slr_cy, bounds, 4, mid, PIPE_SEQS, &pp4);
    print_message("plan: one sequence %.0f cycles/token, four %.0f (%.2fx)\n", (double)pp1.round,
                  pp4.cycles_per_token, (double)pp1.round / pp4.cycles_per_token);
    assert_true(fabs(c1 / (double)pp1.round - 1.0) < 0.05);
    assert_true(fabs(c4 / pp4.cycles_per_token - 1.0) < 0.05);
    tsr_checkpoint_close(ck);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* The same model over 8 cards of the split plan proposes for 8, and on
 * one device: the same tokens, greedy and seeded. */
static void api_split_110m_8_cards(void **state)
{
    (void)state;
    const char *path = model_110m();
    static const struct { float t; uint64_t seed; } smp[] = { { 0.0f, 0 }, { 1.0f, 42 } };
    int want[2][PIPE_GEN];
    for (int c = 0; c < 2; c++) {
        const char *spec = c ? "emu:pes=16,cards=8" : "emu:pes=16";
        tsr_device *dev = NULL;
        assert_int_equal(tsr_device_open(spec, &dev), TSR_OK);
        tsr_model_opts mo = { .tokenizer = SHARED_MODEL("tokenizer.bin"), .seq_len = 256,
                              .n_seqs = 1 };
        tsr_model *m = NULL;
        if (tsr_model_load(dev, path, &mo, &m)) fail_msg("%s: %s", spec, tsr_device_errmsg(dev));
        for (int q = 0; q < 2; q++) {
            tsr_seq *s = NULL;
            assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
            assert_int_equal(tsr_seq_append_tokens(s, PROMPT, NP), TSR_OK);
            tsr_gen_opts g = { .max_tokens = PIPE_GEN, .temperature = smp[q].t, .top_p = 0.9f,
                               .seed = smp[q].seed, .ignore_stop = 1 };
            int n = 0;
            assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &n), TSR_OK);
            assert_int_equal(n, PIPE_GEN);
            const int *all;
            int n_all;
            assert_int_equal(tsr_seq_tokens(s, &all, &n_all), TSR_OK);
            if (!c) memcpy(want[q], all + NP, sizeof want[q]);
            else
                for (int t = 0; t < PIPE_GEN; t++)
                    if (all[NP + t] != want[q][t])
                        fail_msg("8 cards, T %.1f: token %d is %d, one device %d", smp[q].t, t,
                                 all[NP + t], want[q][t]);
            tsr_seq_close(s);
        }
        if (c) {
            tsr_pipeline p = { 0 };
            assert_int_equal(tsr_device_pipeline(dev, &p), TSR_OK);
            assert_int_equal(p.cards, 8);
            uint32_t sum = 0;
            for (int k = 0; k < 8; k++) {
                assert_true(p.n_layers[k] >= 1);
                assert_int_equal(p.first_layer[k], sum);
                sum += p.n_layers[k];
            }
            assert_int_equal(sum, 12);
        }
        tsr_model_close(m);
        tsr_device_close(dev);
    }
    unlink(path);
}

/* stages= by hand: the same tokens as one device; bad splits refused. */
static void api_stages_by_hand(void **state)
{
    (void)state;
    api_run one, split;
    api_generate("emu:pes=4,threads=1", "models/stories260K.bin", "models/tok512.bin", 1, 0, 0, 0,
                 &one);
    api_generate("emu:pes=4,threads=1,stages=0-0/1-3/4-4", "models/stories260K.bin",
                 "models/tok512.bin", 1, 0, 0, 0, &split);
    assert_memory_equal(split.toks, one.toks, sizeof one.toks);
    assert_int_equal(split.t.link_decode, API_GEN * 2u * 4u * (TSR_LINK_HDR + 64u));
    /* refused, saying why: a gap, an overlap, one range (no split), a
     * trailing separator, and cards= against stages= */
    static const struct { const char *spec, *why; } bad[] = {
        { "emu:stages=0-1/3-4", "range 2 starts at layer 3, not 2" },
        { "emu:stages=0-1/1-4", "range 2 starts at layer 1, not 2" },
        { "emu:stages=0-4", "a split needs two ranges or more" },
        { "emu:stages=0-1/2-4/", "'/' after range 2" },
        { "emu:stages=0-1/2-4,cards=3", "cards=3, stages= gives 2 ranges" },
        { "emu:cards=3,stages=0-1/2-4", "stages= gives 2 ranges, cards=3" },
    };
    tsr_device *dev = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dev = NULL;
        assert_int_equal(tsr_device_open(bad[i].spec, &dev), TSR_ERR_ARG);
        if (!strstr(tsr_device_errmsg(dev), bad[i].why))
            fail_msg("%s: '%s', not '...%s...'", bad[i].spec, tsr_device_errmsg(dev), bad[i].why);
        tsr_device_close(dev);
    }
    /* stages that do not cover the model's 5 layers */
    dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=4,threads=1,stages=0-1/2-3", &dev), TSR_OK);
    tsr_model *m = NULL;
    tsr_model_opts mo = { .tokenizer = tsr_test_path("models/tok512.bin"), .n_seqs = 1 };
    assert_int_equal(tsr_model_load(dev, tsr_test_path("models/stories260K.bin"), &mo, &m),
                     TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "stages end at layer 3"));
    tsr_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_f32),
        cmocka_unit_test(split_q8),
        cmocka_unit_test(split_q8_gguf),
        cmocka_unit_test(plan_equals_stage_counters),
        cmocka_unit_test(link_header_checked),
        cmocka_unit_test(batch_forward),
        cmocka_unit_test(stage_holdings),
        cmocka_unit_test(api_split_llama2c),
        cmocka_unit_test(api_split_gguf),
        cmocka_unit_test(api_batch_on_split),
        cmocka_unit_test(api_stages_by_hand),
        cmocka_unit_test(api_pipeline_110m),
        cmocka_unit_test(api_split_110m_8_cards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
