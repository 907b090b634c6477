/*
 * test_plan.c - `tessera plan` against the code's own cycle accounting.
 *
 * The kernel charges every loop on the per-token path where it runs
 * (kernels/tsr_cycles.h), a parallel region its slowest PE; plan computes
 * the same charges from the layout alone (driver/plan.c).  Here the two are
 * held equal region by region:
 *   - stories260K on the emulator's generic profile, several meshes
 *     (PEs, mesh columns, KV split) and positions;
 *   - the stories15M shape on an emulator built with the stories15m
 *     synthesis profile (make's build-stories15m/), its default 32-PE
 *     mesh (sized to plan's utilisation ceiling on a U55C), at position
 *     255: the projection there must be at least 7,000 tokens/s at the
 *     profile's 300 MHz with the controller at most 30% of the cycles
 *     (projections from the code, not wall-clock measurements);
 *   - a kernel built with its PE loops serialised (TSR_SERIAL_PES, make's
 *     build-serial/) charges the sum over the PEs, so the projection moves
 *     with the code;
 *   - passes of several items (tsr_plan_pass): the last pass of a blocked
 *     PREFILL (stories260K on the generic profile, blocks of 16, several
 *     meshes; the stories15M shape on the stories15m profile, blocks of 2)
 *     and the last step of a batched decode of three sequences at
 *     different positions equal plan's pass of those positions, and plan
 *     prints the prefill and batched-decode projections they add up to.
 * Also: the plan's stationary bytes equal the emulator's per-PE SRAM, each
 * synthesis profile's stated resource estimate equals what plan computes
 * for its arrays, stories15M fits a U55C and stories110M needs a split,
 * parts with unknown figures say exactly which, unknown JSON numbers are
 * null, the exit status is the verdict and bad arguments get one-line
 * errors.
 *
 * Models: stories260K (../shared/models), a stories15M-shape synthetic
 * checkpoint written to /tmp.
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
#include "plan.h"
#include "profiles.h"
#include "run_capture.h"
#include "tessera.h"
#include "test_util.h"
#include "greedy.h"

#define M260K  SHARED_MODEL("stories260K.bin")
#define M260K_SH SH_MODEL("stories260K.bin")
#define TOK512 SHARED_MODEL("tok512.bin")
#define TOK32K SHARED_MODEL("tokenizer.bin")
#define TOK512_SH SH_MODEL("tok512.bin")
#define TOK32K_SH SH_MODEL("tokenizer.bin")
#define Q4_GGUF SHARED_MODEL("stories260K-q4_0.gguf")

/* The emulators built with another kernel profile or with serial PE loops
 * (Makefile: emu-profiles). */
#define TESSERA_15M    TSR_BUILD_DIR "-stories15m/tessera"
#define TESSERA_SERIAL TSR_BUILD_DIR "-serial/tessera"

/* ------------------------------------------------------------ helpers --- */


static double counter_f(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
    fail_msg("counter %s missing", name);
    return 0;
}

/* Sum of the pe<i>.sram_bytes lines. */
static uint64_t pe_sram_total(const char *text, int pes)
{
    uint64_t sum = 0;
    for (int p = 0; p < pes; p++) {
        char name[32];
        snprintf(name, sizeof name, "pe%d.sram_bytes", p);
        sum += counter_value(text, name);
    }
    return sum;
}

/* Every region's cycles of the last forward pass in text (the kernel's
 * counters) equal the plan's c, and so do the totals. */
static void assert_cycles_equal(const char *text, const tsr_plan_cycles *c)
{
    for (int r = 0; r < TSR_RG_COUNT; r++) {
        char name[64];
        snprintf(name, sizeof name, "cycles.%s", tsr_plan_region_name(r));
        uint64_t got = counter_value(text, name);
        if (got != c->rg[r])
            fprintf(stderr, "region %s: kernel %llu, plan %llu\n", tsr_plan_region_name(r),
                    (unsigned long long)got, (unsigned long long)c->rg[r]);
        assert_int_equal(got, c->rg[r]);
    }
    assert_int_equal(counter_value(text, "cycles.controller"), c->controller);
    assert_int_equal(counter_value(text, "cycles.mesh"), c->mesh);
    assert_int_equal(counter_value(text, "cycles.total"), c->total);
    assert_true(c->total > 0);
}

static void assert_regions_equal(const char *text, const tsr_plan *pl)
{
    assert_cycles_equal(text, &pl->cyc);
}

/* Plan the model file at path on u55c with a profile's datapath. */
static void plan_file_kv(const char *path, const char *profile, int pes, int cols, int kv_split,
                         int seq, int pos, int kv, tsr_plan *pl)
{
    tsr_checkpoint *ck = NULL;
    tsr_err e = {0};
    assert_int_equal(tsr_checkpoint_open(path, &ck, &e), TSR_OK);
    tsr_plan_req rq = { .part = "u55c", .profile = profile, .pes = pes, .cols = cols,
                        .kv_split = kv_split, .seq_len = seq, .pos = pos, .kv = kv };
    int rc = tsr_plan_config(&ck->cfg, &rq, pl, &e);
    if (rc) fprintf(stderr, "plan: %s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    tsr_checkpoint_close(ck);
}

static void plan_file(const char *path, const char *profile, int pes, int cols, int kv_split,
                      int seq, int pos, tsr_plan *pl)
{
    plan_file_kv(path, profile, pes, cols, kv_split, seq, pos, TSR_KV_F32, pl);
}

static const char *const kv_names[3] = { "f32", "f16", "int8" };

/* Load path on the emulator (pes PEs, cols mesh columns, kv_split, context
 * seq), feed n_prompt tokens (BOS, then 3..), decode one token: its forward
 * pass is at position n_prompt - 1.  The kernel's counters against plan's
 * (the generic profile: the emulator's). */
static void check_against_run_kv(const char *path, const char *tok, int pes, int cols,
                                 int kv_split, int seq, int n_prompt, int kv)
{
    char spec[96];
    snprintf(spec, sizeof spec, "emu:pes=%d,cols=%d,kvsplit=%d", pes, cols, kv_split);
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(spec, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = tok, .seq_len = seq, .n_seqs = 1, .kv = kv_names[kv] };
    uint64_t need = 0, have = 0;
    assert_int_equal(tsr_model_fit(dev, path, &mo, &need, &have), TSR_OK);
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, path, &mo, &m);
    if (rc) fprintf(stderr, "load: %s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    int toks[64];
    assert_true(n_prompt <= 64);
    toks[0] = 1;
    for (int i = 1; i < n_prompt; i++) toks[i] = 2 + i;
    assert_int_equal(tsr_seq_append_tokens(s, toks, n_prompt), TSR_OK);
    tsr_gen_opts go = { .max_tokens = 1, .ignore_stop = 1 };
    int got = 0;
    assert_int_equal(tsr_seq_generate(s, &go, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 1);
    static char text[1 << 16];
    assert_int_equal(tsr_device_kernel_counters(dev, text, sizeof text), TSR_OK);

    int pos = n_prompt - 1;
    tsr_plan pl;
    plan_file_kv(path, "generic", pes, cols, kv_split, seq, pos, kv, &pl);
    assert_int_equal(pl.pes, pes);
    assert_int_equal(pl.kc.mesh_cols, (uint32_t)cols);
    assert_int_equal(pl.kc.kv_split, (uint32_t)kv_split);
    /* bytes: the plan's stationary bytes = the emulator's per-PE SRAM + the
     * controller's norms = tsr_model_fit's need */
    assert_int_equal(pl.bytes.stationary - pl.bytes.norms, pe_sram_total(text, pes));
    assert_int_equal(pl.bytes.stationary, need);
    /* cycles: region by region */
    assert_int_equal(counter_value(text, "cycles.position"), (uint64_t)pos);
    assert_regions_equal(text, &pl);
    /* the greedy id to the host, and the cancel word and the sequence's,
     * read from host memory after the step (tsr_kernel.c
     * fwd_items_decode): 4 + 2 x 300 */
    assert_int_equal(counter_value(text, "cycles.sample"), TSR_D_BUS + 2u * TSR_D_HOSTRD);
    assert_int_equal(TSR_D_HOSTRD, 300);

    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* The last prefill pass of feed positions 0..feed-1 in blocks of B: its
 * positions into pos, their count returned. */
static uint32_t last_block(uint32_t feed, uint32_t B, uint32_t *pos)
{
    uint32_t first = (feed - 1u) / B * B;
    for (uint32_t p = first; p < feed; p++) pos[p - first] = p;
    return feed - first;
}

/* A prompt of n_prompt tokens (BOS, then 3..) prefilled on the emulator in
 * one append: the kernel feeds positions 0..n_prompt-2 in blocks of the
 * profile's TSR_MAX_BLOCK, and its counters' last pass (cyc - cyc_mark)
 * equals plan's pass of that block, region by region.  Then a batched
 * greedy decode of three sequences with different prompt lengths (n_prompt
 * and two shorter): its last step, one item a sequence each at its own
 * position, equals plan's pass of those three. */
static void check_passes_against_run(const char *path, const char *tok, int pes, int cols,
                                     int kv_split, int seq, int n_prompt)
{
    char spec[96];
    snprintf(spec, sizeof spec, "emu:pes=%d,cols=%d,kvsplit=%d", pes, cols, kv_split);
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(spec, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = tok, .seq_len = seq, .n_seqs = 3 };
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, path, &mo, &m);
    if (rc) fprintf(stderr, "load: %s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    tsr_plan pl;
    plan_file(path, "generic", pes, cols, kv_split, seq, 0, &pl);
    uint32_t B = pl.prof.block, pos[TSR_PLAN_MAX_ITEMS];
    assert_int_equal(B, TSR_MAX_BLOCK);
    static char text[1 << 16];

    /* the prefill's last block */
    int toks[128], lens[3] = { n_prompt, n_prompt - 5, n_prompt / 2 };
    assert_true(n_prompt <= 128 && lens[2] >= 2);
    toks[0] = 1;
    for (int i = 1; i < n_prompt; i++) toks[i] = 2 + i;
    tsr_seq *s[3] = { NULL, NULL, NULL };
    for (int k = 0; k < 3; k++) assert_int_equal(tsr_seq_open(m, &s[k]), TSR_OK);
    assert_int_equal(tsr_seq_append_tokens(s[0], toks, n_prompt), TSR_OK);
    assert_int_equal(tsr_device_kernel_counters(dev, text, sizeof text), TSR_OK);
    uint32_t nx = last_block((uint32_t)n_prompt - 1u, B, pos);
    assert_int_equal(counter_value(text, "cycles.position"), pos[nx - 1u]);
    tsr_plan_cycles c;
    tsr_plan_pass(&pl.kc, pl.prof.sum_lanes, pl.prof.pes, &pl.slr, pos, nx, 0, &c);
    assert_cycles_equal(text, &c);

    /* the batch's last step: 3 items at lens[k] - 1 + n - 1 */
    for (int k = 1; k < 3; k++) assert_int_equal(tsr_seq_append_tokens(s[k], toks, lens[k]), TSR_OK);
    enum { N = 6 };
    tsr_gen_opts go[3] = { { .max_tokens = N, .ignore_stop = 1 }, { .max_tokens = N, .ignore_stop = 1 },
                           { .max_tokens = N, .ignore_stop = 1 } };
    int got[3];
    assert_int_equal(tsr_seq_generate_batch(s, 3, go, NULL, NULL, got), TSR_OK);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(got[k], N);
        pos[k] = (uint32_t)(lens[k] + N - 2);
    }
    assert_int_equal(tsr_device_kernel_counters(dev, text, sizeof text), TSR_OK);
    assert_int_equal(counter_value(text, "cycles.position"), pos[2]);
    tsr_plan_pass(&pl.kc, pl.prof.sum_lanes, pl.prof.pes, &pl.slr, pos, 3, TSR_PLAN_DECODE, &c);
    assert_cycles_equal(text, &c);
    /* three ids, the cancel word and the three sequences' */
    assert_int_equal(c.rg[TSR_RG_SAMPLE], 3u * TSR_D_BUS + 4u * TSR_D_HOSTRD);
    for (int k = 0; k < 3; k++) tsr_seq_close(s[k]);
    tsr_model_close(m);
    tsr_device_close(dev);
}

static void check_against_run(const char *path, const char *tok, int pes, int cols, int kv_split,
                              int seq, int n_prompt)
{
    check_against_run_kv(path, tok, pes, cols, kv_split, seq, n_prompt, TSR_KV_F32);
}

/* A stories15M-shape Q8_0 checkpoint in /tmp; caller unlinks path. */
static void synth_15m(char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/tsr_plan_15m_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_int_equal(tsr_synth_file("stories15M", path, 32, 7, err, sizeof err), TSR_OK);
}

/* ------------------------------------------------------------- tests --- */

/* `tessera run -m path -z tokenizer.bin args` on the stories15m profile's
 * emulator, its stdout in out and stderr in err (cap each); it must
 * succeed. */
static void run_15m(const char *path, const char *args, char *out, char *err, size_t cap)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, TESSERA_15M " run -m %s -z " TOK32K_SH " %s", path, args);
    int rc = run_capture(cmd, out, err, cap);
    if (rc) fprintf(stderr, "%s\n%s", cmd, err);
    assert_int_equal(rc, 0);
}

/* stories260K: the regions of the kernel equal plan's on four meshes. */
static void test_260k_regions(void **state)
{
    (void)state;
    check_against_run(M260K, TOK512, 4, 1, 1, 512, 20);    /* the bring-up mesh   */
    check_against_run(M260K, TOK512, 8, 1, 1, 128, 3);
    check_against_run(M260K, TOK512, 16, 4, 1, 256, 41);   /* column trees         */
    check_against_run(M260K, TOK512, 16, 1, 4, 256, 34);   /* heads over 4 PEs     */
}

/* A qwen2 model (QKV biases: the QKV gather one add deeper, the bias
 * rows and RoPE's table in the controller's bytes) and a Llama 3 one
 * (rope_freqs): plan's regions and bytes equal the emulator's, per token
 * and for prefill blocks and batches. */
static void test_arch_regions(void **state)
{
    (void)state;
    static const char *const archs[2] = { "qwen2", "llama3" };
    for (int a = 0; a < 2; a++) {
        char path[64], err[256];
        snprintf(path, sizeof path, "/tmp/tsr_plan_arch_XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(tsr_synth_gguf_file(archs[a], NULL,
                                             tsr_test_path("vocab/ggml-vocab-llama-spm.gguf"),
                                             path, TSR_SYNTH_Q8_0, 3, err, sizeof err), TSR_OK);
        check_against_run(path, NULL, 8, 1, 1, 64, 9);
        check_against_run(path, NULL, 16, 4, 2, 64, 17);
        check_passes_against_run(path, NULL, 8, 2, 1, 64, 12);
        unlink(path);
    }
}

/* The same with the f16 and int8 caches (their conversions and scales
 * deepen the attention passes; the KV bytes shrink), and with the Q4_0
 * GGUF on its own weights (Q4_0 tiles, a Q8_0 classifier and w2). */
static void test_260k_regions_kv_and_q4(void **state)
{
    (void)state;
    for (int kv = TSR_KV_F16; kv <= TSR_KV_INT8; kv++) {
        check_against_run_kv(M260K, TOK512, 4, 1, 1, 512, 20, kv);
        check_against_run_kv(M260K, TOK512, 16, 1, 4, 256, 34, kv);
    }
    check_against_run(Q4_GGUF, NULL, 8, 1, 1, 128, 30);
    check_against_run(Q4_GGUF, NULL, 16, 4, 1, 128, 9);
    check_against_run_kv(Q4_GGUF, NULL, 16, 1, 2, 128, 60, TSR_KV_INT8);
    /* the charges differ where the code differs: the same step with an
     * int8 cache is deeper in attention, the same elsewhere */
    tsr_plan a, b;
    plan_file_kv(M260K, "generic", 4, 1, 1, 512, 100, TSR_KV_F32, &a);
    plan_file_kv(M260K, "generic", 4, 1, 1, 512, 100, TSR_KV_INT8, &b);
    assert_true(b.cyc.rg[TSR_RG_ATTN] > a.cyc.rg[TSR_RG_ATTN]);
    assert_int_equal(b.cyc.rg[TSR_RG_GEMV], a.cyc.rg[TSR_RG_GEMV]);
}

/* stories42M in Q4_0 fits where its Q8_0 form does not: two U55Cs with a
 * shorter context (Q8_0 fits at none), and the U250 with an int8 cache at
 * the model's whole context (each under plan's 75 % ceiling). */
static void test_q4_fits_where_q8_does_not(void **state)
{
    (void)state;
    tsr_config cfg;
    tsr_err e = {0};
    tsr_plan q8, q4;
    assert_int_equal(tsr_synth_shape("stories42M", &cfg, &e), TSR_OK);
    tsr_plan_req rq = { .part = "u55c", .pos = -1, .weights = TSR_WEIGHTS_Q8, .cards = 2 };
    assert_int_equal(tsr_plan_config(&cfg, &rq, &q8, &e), TSR_OK);
    rq.weights = TSR_WEIGHTS_Q4;
    assert_int_equal(tsr_plan_config(&cfg, &rq, &q4, &e), TSR_OK);
    print_message("stories42M on two U55Cs: Q8_0 %llu weight+scale bytes, longest context that "
                  "fits %d; Q4_0 %llu, %d\n",
                  (unsigned long long)(q8.bytes.weights + q8.bytes.scales), q8.fix_seq,
                  (unsigned long long)(q4.bytes.weights + q4.bytes.scales), q4.fix_seq);
    assert_int_equal(q8.fix_seq, 0);
    assert_true(q4.fix_seq >= 128);
    /* about half the bytes: 16 + 4 bytes a group of 32 against 32 + 4 */
    double r = (double)(q8.bytes.weights + q8.bytes.scales) / (double)(q4.bytes.weights + q4.bytes.scales);
    assert_true(r > 1.7 && r < 1.85);
    rq.seq_len = q4.fix_seq;
    assert_int_equal(tsr_plan_config(&cfg, &rq, &q4, &e), TSR_OK);
    assert_true(q4.fits);
    rq.weights = TSR_WEIGHTS_Q8;
    assert_int_equal(tsr_plan_config(&cfg, &rq, &q8, &e), TSR_OK);
    assert_false(q8.fits);
    /* the U250, int8 KV, 1024 positions */
    tsr_plan_req r2 = { .part = "u250", .pos = -1, .kv = TSR_KV_INT8, .weights = TSR_WEIGHTS_Q4 };
    assert_int_equal(tsr_plan_config(&cfg, &r2, &q4, &e), TSR_OK);
    assert_true(q4.fits);
    assert_int_equal(q4.kc.seq_len, 1024);
    r2.weights = TSR_WEIGHTS_Q8;
    assert_int_equal(tsr_plan_config(&cfg, &r2, &q8, &e), TSR_OK);
    assert_false(q8.fits);
    /* and plan says Q4_0 */
    static char buf[1 << 16];
    char err[256];
    tsr_plan_opts o = { .part = "u250", .shape = "stories42M", .kv = "int8",
                        .weights = TSR_WEIGHTS_Q4 };
    assert_int_equal(tsr_plan_report(NULL, &o, 0, buf, sizeof buf, NULL, err, sizeof err), TSR_OK);
    assert_non_null(strstr(buf, "weights: Q4_0 group 32\n"));
    assert_non_null(strstr(buf, "int4 (Q4_0) and int8 tiles"));
    assert_non_null(strstr(buf, "fit: FITS"));
}

/* The stories15M shape on the stories15m profile's emulator, at position
 * 255 of its 256: the code's charges equal plan's, and the projection
 * clears 7,000 tokens/s at the profile's target clock with the controller
 * at most 30%. */
static void test_15m_regions_and_projection(void **state)
{
    (void)state;
    char path[64];
    static char out[1 << 17], err[1 << 17];
    synth_15m(path, sizeof path);
    run_15m(path, "-n 256 -t 0 --stats=all", out, err, sizeof err);
    assert_non_null(strstr(err, "profile stories15m, 32 PEs"));
    assert_int_equal(counter_value(err, "cycles.position"), 255);

    tsr_plan pl;
    plan_file(path, "stories15m", 0, 0, 0, 0, 255, &pl);
    assert_int_equal(pl.pes, 32);
    assert_true(pl.fits);
    assert_int_equal(pl.clock_mhz, 300);
    assert_int_equal(pl.clock_from, 1);   /* the profile's TSR_CLOCK_MHZ */
    assert_regions_equal(err, &pl);
    /* the projection, from the code's counters (300 MHz) */
    double tok_s = counter_f(err, "projected.tok_s");
    double share = counter_f(err, "cycles.controller_share");
    fprintf(stderr, "stories15M on u55c, 32 PEs, position 255: %llu cycles, %.0f tok/s, "
                    "controller %.1f%%\n", (unsigned long long)pl.cyc.total, tok_s, 100 * share);
    assert_true(tok_s >= 7000.0);
    assert_true(share <= 0.30);
    assert_true(pl.tok_s >= 7000.0);

    /* Its three SLRs (TSR_SLRS): PEs [0, 8), [8, 20), [20, 32), attention
     * PEs 0..11 reaching SLR 1.  By hand, with TSR_D_SLR = 2 a crossing:
     * per layer 4 input passes (the broadcast to SLR 2: 2 crossings, 4
     * cycles each), 4 gathers (2 crossings out with the request and 2 back
     * with the word: 8 each), the QKV latch (1 crossing: 2) and the head
     * outputs' collect (out and back: 4); the classifier's input (4); the
     * argmax tree 16 cycles against 10 (subtrees of 12 PEs: 4 levels, 3
     * results: 2, 2 cycles a level, and 2 crossings: 4; against log2 32
     * levels).  The emulator's counters above hold the kernel to the same
     * charges. */
    assert_int_equal(pl.slrs, 3);
    assert_int_equal(pl.slr.bcast, 4);
    assert_int_equal(pl.slr.gather, 8);
    assert_int_equal(pl.slr.latch, 2);
    assert_int_equal(pl.slr.collect, 4);
    assert_int_equal(pl.slr.best, 6);
    tsr_plan_cycles one;
    uint32_t at = 255;
    tsr_plan_pass(&pl.kc, pl.prof.sum_lanes, pl.prof.pes, NULL, &at, 1, TSR_PLAN_DECODE, &one);
    uint32_t L = pl.kc.n_layers;
    assert_int_equal(L, 6);
    assert_int_equal(pl.cyc.rg[TSR_RG_INPUT] - one.rg[TSR_RG_INPUT], (4 * L + 1) * 4);
    assert_int_equal(pl.cyc.rg[TSR_RG_GATHER] - one.rg[TSR_RG_GATHER], L * (4 * 8 + 2));
    assert_int_equal(pl.cyc.rg[TSR_RG_ATT_IO] - one.rg[TSR_RG_ATT_IO], L * 4);
    assert_int_equal(pl.cyc.rg[TSR_RG_ARGMAX] - one.rg[TSR_RG_ARGMAX], 6);
    assert_int_equal(pl.cyc.total - one.total, 334);
    unlink(path);
}

/* Passes of several items: a blocked prefill's last block and a batched
 * decode's last step, on the meshes of test_260k_regions, with prompts
 * whose last block is full, partial, or a single position. */
static void test_260k_passes(void **state)
{
    (void)state;
    check_passes_against_run(M260K, TOK512, 4, 1, 1, 512, 34);    /* 33 fed: 16, 16, 1 */
    check_passes_against_run(M260K, TOK512, 8, 1, 1, 128, 17);    /* 16: one full block */
    check_passes_against_run(M260K, TOK512, 16, 4, 1, 256, 41);   /* column trees        */
    check_passes_against_run(M260K, TOK512, 16, 1, 4, 256, 30);   /* heads over 4 PEs    */
}

/* The stories15M shape on the stories15m profile's emulator: `tessera run
 * -n 1 --stats=all` after a prompt runs the prefill alone (blocks of 2), and
 * its last pass equals plan's; plan's 128-token projection is the sum of
 * its passes. */
static void test_15m_prefill_pass(void **state)
{
    (void)state;
    char path[64];
    static char out[1 << 17], err[1 << 17];
    synth_15m(path, sizeof path);
    run_15m(path, "-p \"Once upon a time, there was a little\" -n 1 -t 0 --stats=all", out, err,
            sizeof err);
    assert_non_null(strstr(err, "0 tokens generated"));
    tsr_plan pl;
    plan_file(path, "stories15m", 0, 0, 0, 0, 255, &pl);
    assert_int_equal(pl.prof.block, 2);
    uint32_t feed = (uint32_t)counter_value(err, "cycles.position") + 1u, pos[2];
    assert_true(feed >= 8);
    uint32_t nx = last_block(feed, pl.prof.block, pos);
    tsr_plan_cycles c;
    tsr_plan_pass(&pl.kc, pl.prof.sum_lanes, pl.prof.pes, &pl.slr, pos, nx, 0, &c);
    assert_cycles_equal(err, &c);
    /* the plan's prompt: 128 positions in 64 passes of 2, their sum */
    assert_int_equal(pl.prefill_tokens, 128);
    assert_int_equal(pl.prefill_passes, 64);
    uint64_t sum = 0;
    for (uint32_t p = 0; p < 128; p += 2) {
        uint32_t two[2] = { p, p + 1 };
        tsr_plan_pass(&pl.kc, pl.prof.sum_lanes, pl.prof.pes, &pl.slr, two, 2, 0, &c);
        sum += c.total;
    }
    assert_int_equal(pl.prefill_cycles, sum);
    assert_true(pl.prefill_cycles < pl.prefill_cycles_1);   /* a tile's depth once a pass */
    assert_true(fabs(pl.prefill_tok_s - 128 * 300e6 / (double)sum) < 1e-6 * pl.prefill_tok_s);
    /* the stories15m profile holds one sequence: its batch is one */
    assert_int_equal(pl.batch, 1);
    assert_int_equal(pl.batch_cyc.total, pl.cyc.total);
    unlink(path);
}

/* plan's batched decode: the profile's limit (min(slots, block)) of
 * sequences a step at the reported position, aggregate tokens/s = that
 * many at the clock over the step's cycles, in the text and the JSON. */
static void test_batch_projection(void **state)
{
    (void)state;
    tsr_plan pl;
    plan_file(M260K, "generic", 16, 1, 1, 512, 200, &pl);
    assert_int_equal(pl.batch, TSR_MAX_SLOTS < TSR_MAX_BLOCK ? TSR_MAX_SLOTS : TSR_MAX_BLOCK);
    uint32_t pos[TSR_PLAN_MAX_ITEMS];
    for (int b = 0; b < pl.batch; b++) pos[b] = 200;
    tsr_plan_cycles c;
    tsr_plan_pass(&pl.kc, pl.prof.sum_lanes, pl.prof.pes, &pl.slr, pos, (uint32_t)pl.batch, TSR_PLAN_DECODE, &c);
    assert_int_equal(pl.batch_cyc.total, c.total);
    /* one pass for all: more cycles than one sequence's step, fewer than
     * that many steps */
    assert_true(c.total > pl.cyc.total && c.total < (uint64_t)pl.batch * pl.cyc.total);
    assert_true(fabs(pl.batch_tok_s - pl.batch * 300e6 / (double)c.total) < 1e-6 * pl.batch_tok_s);
    /* the generic profile's blocks of 64: 128 positions in 2 passes */
    assert_int_equal(pl.block, 64);
    assert_int_equal(pl.prefill_passes, 2);
    assert_int_equal(pl.prefill_cycles, tsr_plan_prefill(&pl.kc, pl.prof.sum_lanes, pl.prof.pes, &pl.slr,
                                                         128, 64, NULL));
    static char buf[1 << 16], want[256];
    tsr_plan_format(&pl, "m", 0, buf, sizeof buf);
    snprintf(want, sizeof want, "projected prefill tokens/s at 300 MHz: %.0f\n", pl.prefill_tok_s);
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof want, "projected batched decode (%d sequences a step, one pass over the "
             "weights for all, each at position 200", pl.batch);
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof want, "projected tokens/s at 300 MHz: %.0f aggregate", pl.batch_tok_s);
    assert_non_null(strstr(buf, want));
    tsr_plan_format(&pl, "m", 1, buf, sizeof buf);
    snprintf(want, sizeof want, "\"prefill\":{\"tokens\":128,\"block\":64,\"passes\":2,"
             "\"cycles\":%llu,", (unsigned long long)pl.prefill_cycles);
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof want, "\"batch\":{\"sequences\":%d,\"position\":200,\"cycles\":%llu,",
             pl.batch, (unsigned long long)c.total);
    assert_non_null(strstr(buf, want));
}

/* The PE loops serialised (TSR_SERIAL_PES): each mesh step charges the sum
 * over its PEs, so the same run projects more cycles in exactly the mesh
 * regions, and the controller's stay. */
static void test_serial_pes_change_the_projection(void **state)
{
    (void)state;
    static char out[1 << 16], err1[1 << 16], err2[1 << 16];
    const char *args = " run -m " M260K_SH " -z " TOK512_SH " -n 40 -t 0 --pes 8 --stats=all";
    char cmd[512];
    snprintf(cmd, sizeof cmd, TESSERA_BIN "%s", args);
    assert_int_equal(run_capture(cmd, out, err1, sizeof err1), 0);
    snprintf(cmd, sizeof cmd, TESSERA_SERIAL "%s", args);
    assert_int_equal(run_capture(cmd, out, err2, sizeof err2), 0);
    assert_non_null(strstr(err2, "PE loops serialised"));
    assert_int_equal(counter_value(err1, "cycles.controller"), counter_value(err2, "cycles.controller"));
    uint64_t g1 = counter_value(err1, "cycles.gemv"), g2 = counter_value(err2, "cycles.gemv");
    uint64_t a1 = counter_value(err1, "cycles.attention"), a2 = counter_value(err2, "cycles.attention");
    /* 8 PEs in series: between 2x (uneven tiles) and 8x the parallel step */
    assert_true(g2 >= 2 * g1 && g2 <= 8 * g1);
    assert_true(a2 > a1);
    assert_true(counter_value(err2, "cycles.total") > counter_value(err1, "cycles.total"));
}

/* Each synthesis profile's header states what plan computes for its
 * arrays and datapath. */
static void test_profile_estimates(void **state)
{
    (void)state;
    const char *names[] = { "stories260k", "stories15m" };
    for (size_t i = 0; i < 2; i++) {
        const tsr_kprofile *p = tsr_profile_find(names[i]);
        assert_non_null(p);
        tsr_plan_res r;
        tsr_plan_profile_resources(p, &r);
        long u, b, d;
        tsr_profile_stated(names[i], &u, &b, &d);
        if (u != r.uram || b != r.bram || d != r.dsp)
            fprintf(stderr, "%s: header states URAM %ld BRAM36 %ld DSP %ld, plan computes %ld %ld "
                            "%ld\n", names[i], u, b, d, r.uram, r.bram, r.dsp);
        assert_int_equal(u, r.uram);
        assert_int_equal(b, r.bram);
        assert_int_equal(d, r.dsp);
        long lut, ff;
        tsr_profile_stated_fabric(names[i], &lut, &ff);
        assert_int_equal(lut, r.lut);
        assert_int_equal(ff, r.ff);
        /* a U55C holds it, under the ceiling of what its shell leaves */
        assert_true(r.uram <= 960 * 3 / 4 && r.bram <= 1776 * 3 / 4 && r.dsp <= 8376 * 3 / 4);
        assert_true(r.lut <= 1146240 * 3 / 4 && r.ff <= 2292480 * 3 / 4);
    }
    long u, b, d;
    tsr_profile_stated("generic", &u, &b, &d);
    assert_int_equal(u, -1);
    assert_null(tsr_profile_find("nosuch"));
}

/* Attention grows with the position; the GEMVs do not. */
static void test_cycles_grow_with_position(void **state)
{
    (void)state;
    tsr_plan a, b;
    plan_file(M260K, "generic", 4, 1, 1, 512, 0, &a);
    plan_file(M260K, "generic", 4, 1, 1, 512, 511, &b);
    uint64_t sum = 0;
    for (int r = 0; r < TSR_RG_COUNT; r++) sum += b.cyc.rg[r];
    assert_int_equal(b.cyc.total, sum + b.cyc.links);
    assert_int_equal(b.cyc.controller + b.cyc.mesh + b.cyc.links, b.cyc.total);
    assert_int_equal(a.cyc.rg[TSR_RG_GEMV], b.cyc.rg[TSR_RG_GEMV]);
    assert_true(b.cyc.rg[TSR_RG_ATTN] > a.cyc.rg[TSR_RG_ATTN]);
    assert_true(b.cycles_mean > (double)a.cyc.total && b.cycles_mean < (double)b.cyc.total);
    assert_int_equal(b.clock_mhz, 300);
}

/* stories15M Q8_0 fits a U55C; stories110M Q8_0 does not, and the plan
 * proposes a split over cards that does. */
static void test_fit_and_split(void **state)
{
    (void)state;
    tsr_config cfg;
    tsr_err e = {0};
    tsr_plan pl;
    assert_int_equal(tsr_synth_shape("stories15M", &cfg, &e), TSR_OK);
    tsr_plan_req rq = { .part = "u55c", .pos = -1 };
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_true(pl.decidable);
    assert_true(pl.fits);
    assert_true(pl.pes_chosen);
    assert_true(pl.res.uram <= 960 && pl.res.bram <= 2016 && pl.res.dsp <= 9024);
    assert_true(pl.tok_s > 0);

    /* stories110M: no split fits, since the first card holds the whole
     * embedding and a layer (the last the tied classifier's copy and a
     * layer), more than a U55C's URAM; said with the embedding's bytes */
    assert_int_equal(tsr_synth_shape("stories110M", &cfg, &e), TSR_OK);
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_true(pl.decidable);
    assert_false(pl.fits);
    assert_int_equal(pl.fix_cards, 0);
    assert_int_equal(pl.emb_bytes, 32000ull * 768 + 4ull * (768 / 32) * 32000);
    rq.cards = cfg.n_layers;   /* one layer a card: still the first card */
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_false(pl.fits);
    assert_int_equal(pl.bounds[1], 1);
    rq.cards = 0;

    /* stories42M: a split does, on U250s (on U55Cs the first card's
     * embedding and a layer are over the ceiling of its URAM) */
    assert_int_equal(tsr_synth_shape("stories42M", &cfg, &e), TSR_OK);
    rq.part = "u250";
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_true(pl.decidable);
    assert_false(pl.fits);
    assert_true(pl.res.bram > 2688 * 3 / 4);
    assert_true(pl.fix_cards >= 2 && pl.fix_cards <= cfg.n_layers);
    int K = pl.fix_cards;
    /* the proposal holds: K cards fit, K - 1 do not */
    rq.cards = K;
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_true(pl.fits);
    assert_int_equal(pl.cards, K);
    /* each hop: the link's latency, the vector (and its header) a word a
     * cycle into the next card, and off this one's bus (tsr_cycles.h) */
    uint64_t words = TSR_LINK_HDR + (uint64_t)cfg.dim;
    assert_int_equal(pl.cyc.links, (uint64_t)(K - 1) * (TSR_LINK_HOP + words + words + TSR_D_BUS));
    if (K > 2) {
        rq.cards = K - 1;
        assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
        assert_false(pl.fits);
    }
    rq.part = "u55c";
    /* an int8 KV cache shrinks the KV bytes to a quarter plus scales */
    tsr_plan_req r8 = { .part = "u55c", .pos = -1, .pes = 16, .kv = TSR_KV_INT8 };
    tsr_plan_req r32 = { .part = "u55c", .pos = -1, .pes = 16 };
    tsr_plan p8, p32;
    assert_int_equal(tsr_plan_config(&cfg, &r8, &p8, &e), TSR_OK);
    assert_int_equal(tsr_plan_config(&cfg, &r32, &p32, &e), TSR_OK);
    uint64_t hs = (uint64_t)cfg.dim / (uint64_t)cfg.n_heads;
    assert_int_equal(p8.bytes.kv, p32.bytes.kv / 4u + p32.bytes.kv / 4u / hs * 4u);
}

/* Parts without known block counts are reported, not guessed. */
static void test_unknown_part_figures(void **state)
{
    (void)state;
    tsr_config cfg;
    tsr_err e = {0};
    tsr_plan pl;
    assert_int_equal(tsr_synth_shape("stories15M", &cfg, &e), TSR_OK);
    tsr_plan_req rq = { .part = "v80", .pos = -1, .pes = 16 };
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_false(pl.decidable);
    assert_false(pl.fits);
    assert_int_equal(pl.clock_mhz, -1);
    assert_string_equal(pl.why, "v80: the parts table (hw/parts.def) does not know its BRAM36, "
                                "URAM, DSP, LUT and FF counts");
    /* the VCK5000's DSP count is in the table: only the blocks are unknown */
    rq.part = "vck5000";
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_false(pl.decidable);
    assert_int_equal(pl.dsp_have, 1968);
    assert_int_equal(pl.uram_have, -1);
    assert_string_equal(pl.why, "vck5000: the parts table (hw/parts.def) does not know its "
                                "BRAM36, URAM, LUT and FF counts");
    /* no PE count is chosen when the fit cannot be decided */
    rq.pes = 0;
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_int_equal(pl.pes_chosen, 2);
    assert_int_equal(pl.pes, 16);
    static char buf[1 << 16];
    tsr_plan_format(&pl, "stories15M", 0, buf, sizeof buf);
    assert_null(strstr(buf, "fastest projected that fits"));
    assert_non_null(strstr(buf, "16 PEs per card (4 x 4), the default: no count chosen, the fit "
                                "cannot be decided"));
    assert_non_null(strstr(buf, "fit: CANNOT DECIDE: vck5000"));
    rq.part = "nosuch";
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_ERR_ARG);
    assert_non_null(strstr(e.msg, "u55c, u280, u250, u200, vu9p, v80, vck5000"));
    rq.part = NULL;
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_ERR_ARG);
    assert_string_equal(e.msg, "plan: no part given (valid: u55c, u280, u250, u200, vu9p, v80, "
                               "vck5000)");
}

/* JSON: a number plan cannot know is null, never 0; known ones are numbers. */
static void test_json_unknowns_are_null(void **state)
{
    (void)state;
    static char buf[1 << 16];
    char err[256];
    int fits = 5;
    /* vck5000: no clock, no block counts, no off-chip bandwidth */
    tsr_plan_opts o = { .part = "vck5000", .shape = "stories15M", .pes = 16 };
    assert_int_equal(tsr_plan_report(NULL, &o, 1, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, -1);
    const char *null_keys[] = { "\"tok_s\":null,", "\"tok_s_mean\":null,", "\"stream_gbps\":null,",
                                "\"clock_mhz\":null,", "\"offchip_gbps\":null,",
                                "\"uram_have\":null,", "\"bram36_have\":null,", "\"lut_have\":null,",
                                "\"ff_have\":null,", "\"fits\":null," };
    for (size_t i = 0; i < sizeof null_keys / sizeof null_keys[0]; i++) {
        if (!strstr(buf, null_keys[i])) fprintf(stderr, "missing %s in %s", null_keys[i], buf);
        assert_non_null(strstr(buf, null_keys[i]));
    }
    assert_non_null(strstr(buf, "\"dsp_have\":1968,"));
    assert_non_null(strstr(buf, "\"decidable\":false,"));
    assert_null(strstr(buf, ":0.0,"));
    assert_null(strstr(buf, ":0.00,"));
    assert_null(strstr(buf, ":-1,"));
    /* the regions, named as the kernel's counters name them */
    assert_non_null(strstr(buf, "\"gemv\":"));
    assert_non_null(strstr(buf, "\"controller_share\":"));
    /* u250: a clock, so real numbers; stories42M does not fit, no shorter
     * context does (null), a split does (a number) */
    o.part = "u250";
    o.shape = "stories42M";
    o.pes = 0;
    assert_int_equal(tsr_plan_report(NULL, &o, 1, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, 0);
    assert_non_null(strstr(buf, "\"clock_mhz\":300,"));
    assert_non_null(strstr(buf, "\"offchip_gbps\":77,"));
    assert_non_null(strstr(buf, "\"fits\":false,"));
    assert_non_null(strstr(buf, "\"fix\":{\"seq_len\":null,\"kv_int8_fits\":false,\"cards\":"));
    assert_null(strstr(buf, "\"tok_s\":null"));
    assert_null(strstr(buf, "\"cards\":null"));
    assert_null(strstr(buf, ",}"));
    assert_int_equal(buf[strlen(buf) - 2], '}');
}

/* The public report: text and JSON, with and without a profile. */
static void test_report(void **state)
{
    (void)state;
    static char buf[1 << 16];
    char err[256];
    int fits = -1;
    tsr_plan_opts o = { .part = "u55c", .pes = 4, .profile = "stories260k" };
    assert_int_equal(tsr_plan_report(M260K, &o, 0, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, 1);
    assert_non_null(strstr(buf, "fit: FITS"));
    assert_non_null(strstr(buf, "profile: stories260k (its datapath and arrays)"));
    assert_non_null(strstr(buf, "profile stories260k's arrays and datapath, every PE at its "
                                "profile size"));
    assert_non_null(strstr(buf, "projected tokens/s at 300 MHz"));
    assert_non_null(strstr(buf, "controller"));
    assert_int_equal(tsr_plan_report(M260K, &o, 1, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_true(buf[0] == '{');
    assert_non_null(strstr(buf, "\"fits\":true"));
    /* a profile that cannot hold the model: not a fit, and why */
    tsr_plan_opts f = { .part = "u55c", .profile = "stories15m" };
    assert_int_equal(tsr_plan_report(M260K, &f, 0, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, 0);
    assert_non_null(strstr(buf, "DOES NOT HOLD THE MODEL: n_heads 8 exceeds the stories15m "
                                "profile's maximum 6"));
    /* the mesh line points at that reason, not at a PE count search */
    assert_non_null(strstr(buf, "the default: the profile does not hold the model (below)"));
    assert_null(strstr(buf, "no power of two up to 256 fits"));
    f.shape = "stories15M";
    f.weights_f32 = 1;
    assert_int_equal(tsr_plan_report(NULL, &f, 0, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, 0);
    assert_non_null(strstr(buf, "the stories15m profile has no F32 datapath"));
    o.kv = "f16";
    o.profile = NULL;
    assert_int_equal(tsr_plan_report(M260K, &o, 0, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_non_null(strstr(buf, "KV:      f16 x 512 positions"));
    assert_null(strstr(buf, "projection"));
    o.kv = "bf16";
    assert_int_equal(tsr_plan_report(M260K, &o, 0, buf, sizeof buf, &fits, err, sizeof err),
                     TSR_ERR_ARG);
    assert_non_null(strstr(err, "f32, f16, int8"));
    o.kv = NULL;
    o.profile = "nosuch";
    assert_int_equal(tsr_plan_report(M260K, &o, 0, buf, sizeof buf, &fits, err, sizeof err),
                     TSR_ERR_ARG);
    assert_non_null(strstr(err, "generic, stories260k, stories15m"));
}

/* Bad arguments through the CLI: exit 2 and a one-line error that lists
 * the valid choices. */
static void test_cli_errors(void **state)
{
    (void)state;
    static char out[1 << 16], err[4096];
    static const struct { const char *args, *msg; } cases[] = {
        { "--part nosuch", "unknown part 'nosuch' (valid: u55c, u280, u250, u200, vu9p, v80, vck5000)" },
        { "--part u55c --pes 0", "option --pes: '0' is not an integer in 1..4096" },
        { "--part u55c --clock 0", "option --clock: '0' is not an integer in 1..10000" },
        { "--part u55c --kv f8", "option --kv: 'f8' is not f32, f16 or int8" },
        { "--part u55c --weights q5", "option --weights: 'q5' is not file, q8, q4 or f32" },
        { "--part u55c --pos 512", "position 512 outside the context 0..511" },
        { "--part u55c --pes 4097", "option --pes: '4097' is not an integer in 1..4096" },
        { "--part u55c --cols 0", "option --cols: '0' is not an integer in 1..64" },
        { "--part u55c --profile nosuch", "unknown profile 'nosuch' (valid: generic, stories260k, stories15m)" },
        { "", "plan: --part is required (valid: u55c, u280, u250, u200, vu9p, v80, vck5000)" },
        { "--part u55c -m /nonexistent/model.bin", "/nonexistent/model.bin" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, TESSERA_BIN " plan -m " M260K_SH " %s", cases[i].args);
        int rc = run_capture(cmd, out, err, sizeof err);
        if (!strstr(err, cases[i].msg)) fprintf(stderr, "%s -> %s", cases[i].args, err);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(err, cases[i].msg));
        assert_int_equal(count_lines(err), 1);
        assert_int_equal(out[0], '\0');
    }
    /* no model and no shape */
    int rc = run_capture(TESSERA_BIN " plan --part u55c", out, err, sizeof err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "plan: give one of -m MODEL or --shape SHAPE"));
    assert_int_equal(count_lines(err), 1);
}

/* The exit status is the verdict: 0 fits, 1 does not fit, 3 cannot decide;
 * --help documents it and the options. */
/* docs/parts.md's fit / speed table is what its own command prints today
 * (hw/parts_table.sh over tessera plan --json): a change to the layout, the
 * cycle accounting or the parts table that moves a figure must regenerate
 * the page (it had gone stale in 15 of its 21 rows). */
static void test_parts_md_is_current(void **state)
{
    (void)state;
    static char table[1 << 14], doc[1 << 14], err[4096];
    assert_int_equal(run_capture("sh '" TSR_SOURCE_DIR "/hw/parts_table.sh' " TESSERA_BIN, table,
                                 err, sizeof table), 0);
    assert_non_null(strstr(table, "| stories15M | u55c | yes |"));
    /* the page's table: from its header line to the first blank line */
    assert_int_equal(run_capture("sed -n '/^| model | part | fits one card/,/^$/p' '" TSR_SOURCE_DIR
                                 "/docs/parts.md' | sed '/^$/d'", doc, err, sizeof doc), 0);
    assert_string_equal(doc, table);
}

static void test_cli_exit_status(void **state)
{
    (void)state;
    static char out[1 << 16], err[1 << 16];   /* run_capture caps both at sizeof err */
    /* does not fit: 1, with the smallest changes that fit */
    int rc = run_capture(TESSERA_BIN " plan --shape stories42M --part u250", out, err, sizeof err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "fit: DOES NOT FIT"));
    assert_non_null(strstr(out, "split the layers over"));
    assert_non_null(strstr(out, "projected decode (the kernel's cycle accounting"));
    assert_int_equal(err[0], '\0');
    /* fits, on the stories15m profile: 0, the region split and the share */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --profile stories15m", out,
                     err, sizeof err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "fit: FITS"));
    assert_non_null(strstr(out, "32 PEs per card (8 x 4)"));
    assert_non_null(strstr(out, "12 with attention, each KV head over 2"));
    assert_non_null(strstr(out, "cycles/token at position 255"));
    assert_non_null(strstr(out, "controller"));
    assert_non_null(strstr(out, "gemv "));
    /* cannot decide: 3, and no claim of a chosen count (JSON too) */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part v80", out, err, sizeof err);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "fit: CANNOT DECIDE"));
    assert_null(strstr(out, "fastest projected that fits"));
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part vck5000 --json", out, err, sizeof err);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "\"tok_s\":null,"));
    /* help: exit 0, the statuses and the options */
    rc = run_capture(TESSERA_BIN " plan --help", out, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "exit status: 0 fits, 1 does not fit, 2 error"));
    assert_non_null(strstr(out, "3 cannot decide"));
    assert_non_null(strstr(out, "PEs per card, 1..4096"));
    assert_non_null(strstr(out, "--profile NAME"));
    assert_non_null(strstr(out, "--kv-split N"));
    assert_non_null(strstr(out, "--cols C"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_260k_regions),
        cmocka_unit_test(test_arch_regions),
        cmocka_unit_test(test_260k_regions_kv_and_q4),
        cmocka_unit_test(test_q4_fits_where_q8_does_not),
        cmocka_unit_test(test_15m_regions_and_projection),
        cmocka_unit_test(test_serial_pes_change_the_projection),
        cmocka_unit_test(test_260k_passes),
        cmocka_unit_test(test_15m_prefill_pass),
        cmocka_unit_test(test_batch_projection),
        cmocka_unit_test(test_profile_estimates),
        cmocka_unit_test(test_cycles_grow_with_position),
        cmocka_unit_test(test_fit_and_split),
        cmocka_unit_test(test_unknown_part_figures),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_json_unknowns_are_null),
        cmocka_unit_test(test_cli_errors),
        cmocka_unit_test(test_cli_exit_status),
        cmocka_unit_test(test_parts_md_is_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
