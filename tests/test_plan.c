/*
 * test_plan.c - `tessera plan` against the emulator: the plan's stationary
 * on-chip bytes equal the emulator's per-PE SRAM total, the plan's cycles
 * for a decode step at position p equal the estimate from the counters of a
 * real run to p, stories15M Q8_0 fits a U55C while stories110M needs a split
 * over cards, parts with unknown figures say exactly which and never claim a
 * choice, unknown JSON numbers are null, the exit status is the verdict
 * (0 fits, 1 does not, 3 cannot decide) and bad arguments get one-line
 * errors with exit status 2.
 *
 * Models: stories260K (../shared/models), and a stories15M-shape synthetic
 * checkpoint written to /tmp (the 110M shape is planned from its config).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "plan.h"
#include "run_capture.h"
#include "tessera.h"
#include "test_util.h"

#define M260K  SHARED_MODEL("stories260K.bin")
#define M260K_SH SH_MODEL("stories260K.bin")
#define TOK512 SHARED_MODEL("tok512.bin")
#define TOK32K SHARED_MODEL("tokenizer.bin")

/* ------------------------------------------------------------ helpers --- */

/* The value of the counter line "name value" in text, or fail. */
static uint64_t counter(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtoull(p + n + 1, NULL, 10);
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
        sum += counter(text, name);
    }
    return sum;
}

/* Plan the model file at path on u55c with pes PEs and a context of seq. */
static void plan_file(const char *path, int pes, int seq, int pos, tsr_plan *pl)
{
    tsr_checkpoint *ck = NULL;
    tsr_err e = {0};
    assert_int_equal(tsr_checkpoint_open(path, &ck, &e), TSR_OK);
    tsr_plan_req rq = { .part = "u55c", .pes = pes, .seq_len = seq, .pos = pos };
    int rc = tsr_plan_config(&ck->cfg, &rq, pl, &e);
    if (rc) fprintf(stderr, "plan: %s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    tsr_checkpoint_close(ck);
}

/* Load path on the emulator with pes PEs and context seq, feed n_prompt
 * tokens (BOS, then 2..), decode one token: its forward pass is at position
 * n_prompt - 1.  Checks the emulator's bytes and cycles against the plan. */
static void check_against_run(const char *path, const char *tok, int pes, int seq, int n_prompt)
{
    char spec[64];
    snprintf(spec, sizeof spec, "emu:pes=%d", pes);
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(spec, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = tok, .seq_len = seq, .n_seqs = 1 };
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
    plan_file(path, pes, seq, pos, &pl);
    assert_int_equal(pl.pes, pes);
    /* (a) bytes: the plan's stationary bytes = the emulator's per-PE SRAM
     * + the controller's norms = tsr_model_fit's need */
    assert_int_equal(pl.bytes.stationary - pl.bytes.norms, pe_sram_total(text, pes));
    assert_int_equal(pl.bytes.stationary, need);
    /* (b) cycles of the decode step at pos: plan = estimate from the run */
    assert_int_equal(counter(text, "cycle_model.last.position"), (uint64_t)pos);
    assert_int_equal(counter(text, "cycle_model.last.gemv_pe_macs"), pl.work.gemv_pe_macs);
    assert_int_equal(counter(text, "cycle_model.last.attn_len"), pl.work.attn_len);
    assert_int_equal(counter(text, "cycle_model.last.logits"), pl.work.logits);
    assert_int_equal(counter(text, "projected.cycles_per_token"), pl.cyc.total);
    assert_true(pl.cyc.total > 0);

    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
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

/* (a) + (b) on stories260K, at two positions and two meshes. */
static void test_260k_matches_emulator(void **state)
{
    (void)state;
    check_against_run(M260K, TOK512, 4, 512, 20);
    check_against_run(M260K, TOK512, 8, 128, 3);
}

/* (a) + (b) on the stories15M shape. */
static void test_15m_matches_emulator(void **state)
{
    (void)state;
    char path[64];
    synth_15m(path, sizeof path);
    check_against_run(path, TOK32K, 16, 64, 10);
    unlink(path);
}

/* The cycle model adds its parts; attention grows with the position. */
static void test_cycles_grow_with_position(void **state)
{
    (void)state;
    tsr_plan a, b;
    plan_file(M260K, 4, 512, 0, &a);
    plan_file(M260K, 4, 512, 511, &b);
    const tsr_plan_cycles *c = &b.cyc;
    assert_int_equal(c->total, c->gemv_macs + c->gemv_trees + c->gemv_io + c->embed +
                                   c->attention + c->norms + c->vector + c->sample + c->links);
    assert_int_equal(a.cyc.gemv_macs, b.cyc.gemv_macs);
    assert_true(b.cyc.attention > a.cyc.attention);
    /* 5 layers x ceil(4 KV heads / 4 PEs) x 2 query heads x 512 positions */
    assert_int_equal(b.work.attn_len, 5u * 1u * 2u * 512u);
    assert_true(b.cycles_mean > (double)a.cyc.total && b.cycles_mean < (double)b.cyc.total);
    assert_int_equal(b.clock_mhz, 300);
}

/* (c) stories15M Q8_0 fits a U55C; stories110M Q8_0 does not, and the plan
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
    assert_true(pl.uram <= 960 && pl.bram <= 2016 && pl.dsp <= 9024);
    assert_true(pl.tok_s > 0);

    assert_int_equal(tsr_synth_shape("stories110M", &cfg, &e), TSR_OK);
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_true(pl.decidable);
    assert_false(pl.fits);
    assert_true(pl.uram > 960);
    assert_true(pl.fix_cards >= 2 && pl.fix_cards <= cfg.n_layers);
    int K = pl.fix_cards;
    /* the proposal holds: K cards fit, K - 1 do not */
    rq.cards = K;
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_true(pl.fits);
    assert_int_equal(pl.cards, K);
    assert_int_equal(pl.cyc.links, (uint64_t)(K - 1) * 1000u);
    if (K > 2) {
        rq.cards = K - 1;
        assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
        assert_false(pl.fits);
    }
    /* an int8 KV cache shrinks the KV bytes to a quarter plus scales */
    tsr_plan_req r8 = { .part = "u55c", .pos = -1, .pes = 16, .kv = TSR_KV_INT8 };
    tsr_plan_req r32 = { .part = "u55c", .pos = -1, .pes = 16 };
    tsr_plan p8, p32;
    assert_int_equal(tsr_plan_config(&cfg, &r8, &p8, &e), TSR_OK);
    assert_int_equal(tsr_plan_config(&cfg, &r32, &p32, &e), TSR_OK);
    assert_int_equal(p8.bytes.kv, p32.bytes.kv / 4u + p32.bytes.kv / 4u / 64u * 4u);
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
                                "URAM and DSP counts");
    /* the VCK5000's DSP count is in the table: only the blocks are unknown */
    rq.part = "vck5000";
    assert_int_equal(tsr_plan_config(&cfg, &rq, &pl, &e), TSR_OK);
    assert_false(pl.decidable);
    assert_int_equal(pl.dsp_have, 1968);
    assert_int_equal(pl.uram_have, -1);
    assert_string_equal(pl.why, "vck5000: the parts table (hw/parts.def) does not know its "
                                "BRAM36 and URAM counts");
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
                                "\"uram_have\":null,", "\"bram36_have\":null,", "\"fits\":null," };
    for (size_t i = 0; i < sizeof null_keys / sizeof null_keys[0]; i++) {
        if (!strstr(buf, null_keys[i])) fprintf(stderr, "missing %s in %s", null_keys[i], buf);
        assert_non_null(strstr(buf, null_keys[i]));
    }
    assert_non_null(strstr(buf, "\"dsp_have\":1968,"));
    assert_non_null(strstr(buf, "\"decidable\":false,"));
    assert_non_null(strstr(buf, "\"weight_bytes_per_token\":17086464,"));
    assert_null(strstr(buf, ":0.0,"));
    assert_null(strstr(buf, ":0.00,"));
    assert_null(strstr(buf, ":-1,"));
    /* u55c: a clock, so real numbers; stories110M does not fit, no shorter
     * context does (null), a split does (a number) */
    o.part = "u55c";
    o.shape = "stories110M";
    o.pes = 0;
    assert_int_equal(tsr_plan_report(NULL, &o, 1, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, 0);
    assert_non_null(strstr(buf, "\"clock_mhz\":300,"));
    assert_non_null(strstr(buf, "\"offchip_gbps\":460,"));
    assert_non_null(strstr(buf, "\"fits\":false,"));
    assert_non_null(strstr(buf, "\"fix\":{\"seq_len\":null,\"kv_int8_fits\":false,\"cards\":"));
    assert_null(strstr(buf, "\"tok_s\":null"));
    assert_null(strstr(buf, "\"cards\":null"));
    assert_null(strstr(buf, ",}"));
    assert_int_equal(buf[strlen(buf) - 2], '}');
}

/* The public report: text and JSON. */
static void test_report(void **state)
{
    (void)state;
    static char buf[1 << 16];
    char err[256];
    int fits = -1;
    tsr_plan_opts o = { .part = "u55c", .pes = 4 };
    assert_int_equal(tsr_plan_report(M260K, &o, 0, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, 1);
    assert_non_null(strstr(buf, "fit: FITS"));
    assert_non_null(strstr(buf, "projected tokens/s at 300 MHz"));
    assert_non_null(strstr(buf, "stationary: weights + scales + KV + norms = 957120"));
    assert_int_equal(tsr_plan_report(M260K, &o, 1, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_true(buf[0] == '{');
    assert_non_null(strstr(buf, "\"stationary\":957120"));
    assert_non_null(strstr(buf, "\"fits\":true"));
    o.kv = "f16";
    assert_int_equal(tsr_plan_report(M260K, &o, 0, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_non_null(strstr(buf, "projection: the kernel stores an fp32 KV cache today"));
    o.kv = "bf16";
    assert_int_equal(tsr_plan_report(M260K, &o, 0, buf, sizeof buf, &fits, err, sizeof err),
                     TSR_ERR_ARG);
    assert_non_null(strstr(err, "f32, f16, int8"));
}

/* (d) bad arguments through the CLI: exit 2 and a one-line error that lists
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
        { "--part u55c --weights q4", "option --weights: 'q4' is not q8 or f32" },
        { "--part u55c --pos 512", "position 512 outside the context 0..511" },
        { "--part u55c --pes 4097", "option --pes: '4097' is not an integer in 1..4096" },
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
 * --help documents it and the --pes range. */
static void test_cli_exit_status(void **state)
{
    (void)state;
    static char out[1 << 16], err[4096];
    /* does not fit: 1, with the smallest changes that fit */
    int rc = run_capture(TESSERA_BIN " plan --shape stories110M --part u55c", out, err, sizeof err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "fit: DOES NOT FIT"));
    assert_non_null(strstr(out, "--cards 8: split the layers over 8 cards"));
    assert_non_null(strstr(out, "projected decode (cycle model, not measured on hardware)"));
    assert_int_equal(err[0], '\0');
    /* fits, at the stories15m profile's mesh: 0, and the profile note */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --pes 16", out, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "fit: FITS"));
    assert_non_null(strstr(out, "  URAM          38       488"));
    assert_non_null(strstr(out, "shipped profiles: stories260k (4 PEs), stories15m (16 PEs)"));
    /* cannot decide: 3, and no claim of a chosen count (JSON too) */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part v80", out, err, sizeof err);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "fit: CANNOT DECIDE"));
    assert_null(strstr(out, "fastest projected that fits"));
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part vck5000 --json", out, err, sizeof err);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "\"tok_s\":null,"));
    /* help: exit 0, the statuses and the limits */
    rc = run_capture(TESSERA_BIN " plan --help", out, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "exit status: 0 fits, 1 does not fit, 2 error"));
    assert_non_null(strstr(out, "3 cannot decide"));
    assert_non_null(strstr(out, "PEs per card, 1..4096"));
    assert_non_null(strstr(out, "stories15m = --pes 16"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_260k_matches_emulator),
        cmocka_unit_test(test_15m_matches_emulator),
        cmocka_unit_test(test_cycles_grow_with_position),
        cmocka_unit_test(test_fit_and_split),
        cmocka_unit_test(test_unknown_part_figures),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_json_unknowns_are_null),
        cmocka_unit_test(test_cli_errors),
        cmocka_unit_test(test_cli_exit_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
