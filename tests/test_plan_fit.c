/*
 * test_plan_fit.c - plan's fabric estimate and utilisation ceiling
 * (driver/plan_fit.c, hw/ops.def, the shell columns of hw/parts.def).
 *
 *   - the stories15m profile's LUTs and flip-flops, group by group, are
 *     the operator counts of its loop nests times hw/ops.def's costs, and
 *     its header states them;
 *   - the same datapath at its former size (128 PEs, 48 with attention)
 *     is refused on a U55C, the message naming LUT and by how much;
 *   - the shell's share comes off the part before the ceiling;
 *   - `tessera plan` prints all five resources against the ceiling,
 *     --max-util moves the verdict, and the projection is at the profile's
 *     target clock.
 * The figures are estimates (nothing here has been through csynth); the
 * tests pin them so that a change to the table or the counts is seen.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "parts.h"
#include "plan.h"
#include "plan_fit.h"
#include "profiles.h"
#include "run_capture.h"
#include "tessera.h"
#include "test_util.h"

/* The U55C less its shell (hw/parts.def: platforminfo's figures). */
static void u55c_have(long have[TSR_FIT_R_COUNT])
{
    const tsr_part *p = tsr_part_find("u55c");
    assert_non_null(p);
    have[TSR_FIT_R_LUT] = p->lut - p->shell_lut;
    have[TSR_FIT_R_FF] = p->ff - p->shell_ff;
    have[TSR_FIT_R_DSP] = p->dsp - p->shell_dsp;
    have[TSR_FIT_R_BRAM] = p->bram36 - p->shell_bram36;
    have[TSR_FIT_R_URAM] = p->uram;   /* its shell's URAM is not known */
}

/* The shell's share of the U55C: what platforminfo leaves to kernels. */
static void test_u55c_shell(void **state)
{
    (void)state;
    long have[TSR_FIT_R_COUNT];
    u55c_have(have);
    assert_int_equal(have[TSR_FIT_R_LUT], 1146240);
    assert_int_equal(have[TSR_FIT_R_FF], 2292480);
    assert_int_equal(have[TSR_FIT_R_DSP], 8376);
    assert_int_equal(have[TSR_FIT_R_BRAM], 1776);
    assert_int_equal(tsr_part_find("u55c")->shell_uram, -1);
    /* 75 % of it, rounded down */
    assert_int_equal(tsr_fit_ceiling(have[TSR_FIT_R_LUT], TSR_FIT_CEILING_PCT), 859680);
    assert_int_equal(tsr_fit_ceiling(have[TSR_FIT_R_BRAM], 75.0), 1332);
    assert_int_equal(tsr_fit_ceiling(-1, 75.0), -1);
    /* a part whose shell is not known keeps its whole-device figures */
    assert_int_equal(tsr_part_find("u250")->shell_lut, -1);
    assert_int_equal(tsr_part_find("u250")->ff, 3456000);
}

/* The judge: the first resource over its ceiling, by how much; an unknown
 * figure is not judged. */
static void test_judge(void **state)
{
    (void)state;
    long have[TSR_FIT_R_COUNT] = { 1000, 2000, 100, 40, -1 };
    long need[TSR_FIT_R_COUNT] = { 750, 1500, 75, 30, 999999 };
    int over = -7;
    long by = -7;
    assert_int_equal(tsr_fit_judge(need, have, 75.0, &over, &by), 1);
    assert_int_equal(over, -7);   /* untouched when it fits */
    need[TSR_FIT_R_FF] = 1501;
    need[TSR_FIT_R_DSP] = 90;
    assert_int_equal(tsr_fit_judge(need, have, 75.0, &over, &by), 0);
    assert_int_equal(over, TSR_FIT_R_FF);
    assert_int_equal(by, 1);
    assert_string_equal(tsr_fit_resource_name(over), "FF");
    assert_int_equal(tsr_fit_judge(need, have, 90.0, &over, &by), 1);
}

/* stories15m: 32 PEs, 12 of them with attention.  The groups are the
 * counts of kernels/ times hw/ops.def; the header states the totals. */
static void test_stories15m_fabric(void **state)
{
    (void)state;
    const tsr_kprofile *p = tsr_profile_find("stories15m");
    assert_non_null(p);
    assert_int_equal(p->pes, 32);
    assert_int_equal(p->att_pes, 12);
    tsr_fit_dp d;
    tsr_fit_dp_of_profile(p, &d);
    tsr_fit_fabric f;
    tsr_fit_fabric_of(&d, &f);
    /* a PE's tiles: 32 fabric 8x8 products (91 LUT) and their tree
     * (17..21-bit adders: 553 LUT), isum's add, sitofp, two fmul, an fadd,
     * the accumulators' 8:1 read muxes, 12 counters: 4,685 LUT */
    assert_int_equal(f.g_lut[TSR_FIT_MAC], 32 * 4685);
    /* the roots the code builds: pe_root at the 16 even PEs (W13 takes 2
     * columns, TSR_W13_COLS): fabric expf, fdiv, fadd, two fmul, two
     * counters, 3,110 LUT; pe_root_best on all 32 (the classifier takes
     * 1): 46 compares and 31 selects, two counters, 3,376 LUT */
    assert_int_equal(p->w13_cols, 2);
    assert_int_equal(p->cls_cols, 1);
    assert_int_equal(f.g_lut[TSR_FIT_ROOT], 16 * 3110 + 32 * 3376);
    /* an attention PE's own datapath */
    assert_int_equal(f.lut_att_pe, 12324);
    assert_int_equal(f.g_lut[TSR_FIT_ATT], 12 * 12324);
    /* column trees: 8 mesh rows x (2 + 1) receivers, 4 adds each */
    assert_int_equal(f.g_lut[TSR_FIT_TREE], 24 * (4 * 226 + 64));
    assert_int_equal(f.lut, 649352);
    assert_int_equal(f.ff, 574165);
    long lut, ff;
    tsr_profile_stated_fabric("stories15m", &lut, &ff);
    assert_int_equal(lut, f.lut);
    assert_int_equal(ff, f.ff);
    /* plan's profile resources carry the same */
    tsr_plan_res r;
    tsr_plan_profile_resources(p, &r);
    assert_int_equal(r.lut, 649352);
    assert_int_equal(r.ff, 574165);
    assert_int_equal(r.dsp, 2743);   /* SwiGLU's 8 DSPs on 16 PEs, not 32 */
    /* under the ceiling of a U55C, every resource */
    long have[TSR_FIT_R_COUNT], need[TSR_FIT_R_COUNT] = { r.lut, r.ff, r.dsp, r.bram, r.uram };
    u55c_have(have);
    int over = -1;
    long by = 0;
    assert_int_equal(tsr_fit_judge(need, have, TSR_FIT_CEILING_PCT, &over, &by), 1);
    /* the generic profile states none */
    tsr_profile_stated_fabric("generic", &lut, &ff);
    assert_int_equal(lut, -1);
}

/* The stories15m datapath as it was before it was resized (128 PEs in 4
 * columns, 48 attention PEs, each KV head over 8): about 2.5 M LUTs, the
 * order of hls-review's 2.2 M, refused on a U55C by LUTs. */
static void test_former_stories15m_is_refused(void **state)
{
    (void)state;
    tsr_kprofile p = *tsr_profile_find("stories15m");
    p.pes = 128;
    p.mesh_rows = 128;
    p.att_pes = 48;
    p.kv_split_max = 8;
    p.pe_rows = 256;
    p.att_words = 256;
    p.w13_cols = 1;   /* SwiGLU on every PE, as it was */
    tsr_fit_dp d;
    tsr_fit_dp_of_profile(&p, &d);
    tsr_fit_fabric f;
    tsr_fit_fabric_of(&d, &f);
    assert_int_equal(f.lut, 2503216);
    assert_int_equal(f.g_lut[TSR_FIT_ROOT], 128 * (3110 + 3376));
    assert_int_equal(f.g_lut[TSR_FIT_ATT], 48 * 12324);
    long have[TSR_FIT_R_COUNT], need[TSR_FIT_R_COUNT] = { f.lut, f.ff, 7791, 1376, 640 };
    u55c_have(have);
    int over = -1;
    long by = 0;
    assert_int_equal(tsr_fit_judge(need, have, TSR_FIT_CEILING_PCT, &over, &by), 0);
    assert_int_equal(over, TSR_FIT_R_LUT);
    assert_int_equal(by, 2503216 - 859680);
    /* even the whole of what the shell leaves is not enough */
    assert_int_equal(tsr_fit_judge(need, have, 100.0, &over, &by), 0);
    assert_int_equal(over, TSR_FIT_R_LUT);
}

/* The command: five resources against the ceiling, the verdict, the
 * resource over it, the profile's clock. */
static void test_cli(void **state)
{
    (void)state;
    static char out[1 << 16], err[1 << 12];
    int rc = run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --profile stories15m", out,
                         err, sizeof err);
    assert_int_equal(rc, 0);
    const char *rows[] = { "  LUT        ", "  FF         ", "  DSP        ", "  BRAM36     ",
                           "  URAM       " };
    for (size_t i = 0; i < 5; i++) assert_non_null(strstr(out, rows[i]));
    assert_non_null(strstr(out, "  LUT        28153    649352    859680   1146240\n"));
    assert_non_null(strstr(out, "fit: FITS (LUT, FF, DSP, BRAM36, URAM under the 75% ceiling"));
    assert_non_null(strstr(out, "projected tokens/s at 300 MHz (the profile's target clock, "
                                "TSR_CLOCK_MHZ): 7469 at position 255"));
    /* a lower ceiling: over by LUTs, named, exit status 1 */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --profile stories15m "
                     "--max-util 55", out, err, sizeof err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "fit: DOES NOT FIT: LUT over the ceiling by 18920: needs 649352, "
                                "the ceiling is 630432 (55% of the 1146240 the shell leaves)"));
    assert_non_null(strstr(out, "OVER by 18920"));
    /* the model-sized datapath at 128 PEs: LUTs again */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --pes 128 --json", out, err,
                     sizeof err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "\"over\":{\"resource\":\"LUT\",\"by\":"));
    assert_non_null(strstr(out, "\"lut_have\":1146240,"));
    assert_non_null(strstr(out, "\"max_util\":75,"));
    assert_non_null(strstr(out, "\"clock_from\":\"part\","));   /* no profile: the part's */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --profile stories15m --json",
                     out, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"clock_mhz\":300,\"clock_from\":\"profile\","));
    assert_non_null(strstr(out, "\"profile\":{\"uram\":656,\"bram36\":1212,\"dsp\":2743,"
                                "\"lut\":649352,\"ff\":574165},"));
    assert_non_null(strstr(out, "\"over\":null,"));
    /* a ceiling outside 1..100 is an error */
    rc = run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --max-util 0", out, err,
                     sizeof err);
    assert_int_equal(rc, 2);
}

/* The public option: a ceiling outside (0, 100] is refused. */
static void test_report_ceiling(void **state)
{
    (void)state;
    static char buf[1 << 16];
    char err[256];
    int fits = 5;
    tsr_plan_opts o = { .part = "u55c", .shape = "stories15M", .profile = "stories15m",
                        .max_util = 101 };
    assert_int_equal(tsr_plan_report(NULL, &o, 0, buf, sizeof buf, &fits, err, sizeof err),
                     TSR_ERR_ARG);
    assert_non_null(strstr(err, "utilisation ceiling"));
    o.max_util = 80;
    assert_int_equal(tsr_plan_report(NULL, &o, 0, buf, sizeof buf, &fits, err, sizeof err), TSR_OK);
    assert_int_equal(fits, 1);
    assert_non_null(strstr(buf, "(ceiling: 80%)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u55c_shell),
        cmocka_unit_test(test_judge),
        cmocka_unit_test(test_stories15m_fabric),
        cmocka_unit_test(test_former_stories15m_is_refused),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_report_ceiling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
