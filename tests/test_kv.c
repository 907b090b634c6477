/*
 * test_kv.c - the KV cache in fp32, IEEE half or int8 (--kv):
 *   - f16 and int8 decode the reference prompt through tessera run; with
 *     F32 weights an f32 cache gives llama2.c run.c's text exactly (and,
 *     as measured for this model, so does an f16 one);
 *   - the logits against the f32 cache's, along run.c's own tokens, at
 *     positions 50 and 200 (NMSE), with F32 weights (so only the cache
 *     differs) and with the default Q8_0 weights;
 *   - the KV bytes the device holds (--stats) and plan's: f16 half of
 *     f32, int8 a quarter plus one fp32 scale per head vector and position;
 *   - plan's longest context per precision for stories15M on a U55C;
 *   - a profile without a precision's array refuses it in one line.
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

#include "plan.h"
#include "run_capture.h"
#include "tessera.h"
#include "test_util.h"
#include "golden.h"
#include "greedy.h"

#define M260K    SHARED_MODEL("stories260K.bin")
#define M260K_SH SH_MODEL("stories260K.bin")
#define TOK512   SHARED_MODEL("tok512.bin")
#define TOK512_SH SH_MODEL("tok512.bin")
#define REF_TOKS SHARED_REF("stories260K_once_upon_a_time.tokens")
#define REF_TEXT SHARED_REF("stories260K_once_upon_a_time.txt")
#define TESSERA_15M TSR_BUILD_DIR "-stories15m/tessera"
#define V 512

static const char *const kvs[3] = { "f32", "f16", "int8" };

static int read_ids(int *ids, int cap)
{
    FILE *f = fopen(REF_TOKS, "r");
    assert_non_null(f);
    int n = 0;
    while (n < cap && fscanf(f, "%d", &ids[n]) == 1) n++;
    fclose(f);
    return n;
}



/* tessera run with each cache: exit 0 and text; f32 and f16 with F32
 * weights give run.c's text. */
static void every_precision_decodes_the_reference(void **state)
{
    (void)state;
    static char out[1 << 16], err[1 << 14], ref[1 << 16];
    FILE *f = fopen(REF_TEXT, "rb");
    assert_non_null(f);
    ref[fread(ref, 1, sizeof ref - 1, f)] = '\0';
    fclose(f);
    for (int k = 0; k < 3; k++) {
        for (int w = 0; w < 2; w++) {
            char cmd[512];
            snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " M260K_SH " -z " TOK512_SH " -p 'Once upon "
                     "a time' -t 0 -n 200 --kv %s%s", kvs[k], w ? " --weights f32" : "");
            assert_int_equal(run_capture(cmd, out, err, sizeof err), 0);
            assert_true(strncmp(out, "Once upon a time", 16) == 0);
            assert_true(strlen(out) > 300);
            if (w && k < 2) assert_string_equal(out, ref);
        }
    }
}

/* Logits at positions 50 and 200 along run.c's tokens, each cache, into
 * out[kv][0 or 1][V]. */
static void logits_along_reference(int f32_weights, float out[3][2][V])
{
    int ref[256];
    assert_int_equal(read_ids(ref, 256), 201);
    for (int k = 0; k < 3; k++) {
        tsr_device *dev = NULL;
        assert_int_equal(tsr_device_open("emu", &dev), TSR_OK);
        tsr_model_opts o = { .tokenizer = TOK512, .weights_f32 = f32_weights, .kv = kvs[k],
                             .n_seqs = 1 };
        tsr_model *m = NULL;
        assert_int_equal(tsr_model_load(dev, M260K, &o, &m), TSR_OK);
        tsr_seq *s = NULL;
        assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
        tsr_gen_opts one = { .max_tokens = 1, .ignore_stop = 1 };
        /* 51 tokens in: the next forward pass is at position 50 */
        assert_int_equal(tsr_seq_append_tokens(s, ref, 51), TSR_OK);
        assert_int_equal(tsr_seq_generate(s, &one, NULL, NULL, NULL), TSR_OK);
        assert_int_equal(tsr_seq_read_logits(s, out[k][0], V), TSR_OK);
        /* back to those 51, then run.c's next 150: position 200 */
        assert_int_equal(tsr_seq_truncate(s, 51), TSR_OK);
        assert_int_equal(tsr_seq_append_tokens(s, ref + 51, 150), TSR_OK);
        assert_int_equal(tsr_seq_generate(s, &one, NULL, NULL, NULL), TSR_OK);
        assert_int_equal(tsr_seq_read_logits(s, out[k][1], V), TSR_OK);
        tsr_seq_close(s);
        tsr_model_close(m);
        tsr_device_close(dev);
    }
}

static void logits_nmse_at_50_and_200(void **state)
{
    (void)state;
    static float lg[2][3][2][V];
    for (int w = 0; w < 2; w++) {
        logits_along_reference(w == 0, lg[w]);
        for (int k = 1; k < 3; k++)
            print_message("%s weights, %s KV: logits NMSE vs the f32 cache %.3e at position 50, "
                          "%.3e at position 200\n", w ? "Q8_0" : "F32", kvs[k],
                          golden_nmse(lg[w][k][0], lg[w][0][0], V), golden_nmse(lg[w][k][1], lg[w][0][1], V));
        for (int p = 0; p < 2; p++) {
            double h = golden_nmse(lg[w][1][p], lg[w][0][p], V), q = golden_nmse(lg[w][2][p], lg[w][0][p], V);
            /* measured, F32 weights: f16 3e-8 and 7e-8, int8 1.5e-4 and 1.1e-5; Q8_0
             * weights (the quantized inputs amplify a cache's rounding): f16 7e-5 and
             * 1.6e-5, int8 5e-4 and 3e-5.  The bounds are about 10x. */
            if (w == 0) {
                assert_true(h > 0 && h < 1e-6);
                assert_true(q > h && q < 2e-3);
            } else {
                assert_true(h > 0 && h < 1e-3);
                assert_true(q > 0 && q < 5e-3);
            }
        }
    }
}

/* The KV bytes on the device (--stats) and in plan: f16 = f32 / 2, int8 =
 * f32 / 4 + one fp32 scale per head vector per position. */
static void kv_bytes_shrink(void **state)
{
    (void)state;
    static char out[1 << 16], err[1 << 16];
    uint64_t run[3], plan[3];
    for (int k = 0; k < 3; k++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " M260K_SH " -z " TOK512_SH " -n 4 -t 0 --kv %s "
                 "--stats=all", kvs[k]);
        assert_int_equal(run_capture(cmd, out, err, sizeof err), 0);
        char want[32];
        snprintf(want, sizeof want, "onchip.kv %s\n", kvs[k]);
        assert_non_null(strstr(err, want));
        run[k] = counter_value(err, "onchip.kv_bytes");
        tsr_plan_opts o = { .part = "u55c", .pes = 16, .kv = kvs[k] };
        static char buf[1 << 16];
        char e[256];
        assert_int_equal(tsr_plan_report(M260K, &o, 1, buf, sizeof buf, NULL, e, sizeof e), TSR_OK);
        const char *kv = strstr(buf, "\"kv\":");
        assert_non_null(kv = strstr(kv + 1, "\"kv\":"));   /* the bytes' one */
        plan[k] = strtoull(kv + 5, NULL, 10);
    }
    uint64_t hs = 64 / 8;   /* stories260K: dim 64, 8 heads */
    for (int i = 0; i < 2; i++) {
        uint64_t *b = i ? plan : run;
        assert_true(b[0] > 0);
        assert_int_equal(b[1], b[0] / 2);
        assert_int_equal(b[2], b[0] / 4 + b[0] / 4 / hs * 4);
    }
    assert_int_equal(run[0], plan[0]);   /* 16 PEs, a 512-position cache: the same placement */
    print_message("stories260K KV bytes: f32 %llu, f16 %llu (%.2fx less), int8 %llu (%.2fx less; "
                  "head size 8, so the scales cost 50%%)\n", (unsigned long long)run[0],
                  (unsigned long long)run[1], (double)run[0] / run[1], (unsigned long long)run[2],
                  (double)run[0] / run[2]);
    /* stories15M (head size 48): about 4x */
    tsr_config cfg;
    tsr_err e = { 0 };
    assert_int_equal(tsr_synth_shape("stories15M", &cfg, &e), TSR_OK);
    tsr_plan p32, p8;
    tsr_plan_req r = { .part = "u55c", .pos = -1, .pes = 64 };
    assert_int_equal(tsr_plan_config(&cfg, &r, &p32, &e), TSR_OK);
    r.kv = TSR_KV_INT8;
    assert_int_equal(tsr_plan_config(&cfg, &r, &p8, &e), TSR_OK);
    double ratio = (double)p32.bytes.kv / (double)p8.bytes.kv;
    print_message("stories15M KV bytes: f32 %llu, int8 %llu (%.2fx less)\n",
                  (unsigned long long)p32.bytes.kv, (unsigned long long)p8.bytes.kv, ratio);
    assert_true(ratio > 3.6 && ratio < 4.0);
}

/* plan's longest context that fits a U55C, per precision, for stories15M. */
static void plan_longest_context_per_precision(void **state)
{
    (void)state;
    static char out[1 << 16], err[4096];
    /* on 16 PEs (plan's own choice, 32, has LUTs for an fp32 cache
     * only: the f16 and int8 converters on 24 attention PEs pass the
     * ceiling there) */
    assert_int_equal(run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --pes 16", out,
                                 err, sizeof err), 0);
    const char *l = strstr(out, "longest context that fits (");
    assert_non_null(l);
    int pes = 0, n[3] = { 0 };
    assert_int_equal(sscanf(l, "longest context that fits (%d PEs, the chip's limit, not the "
                               "model's): f32 KV %d, f16 KV %d, int8 KV %d positions", &pes,
                            &n[0], &n[1], &n[2]), 4);
    print_message("stories15M on a U55C (%d PEs): longest context f32 KV %d, f16 KV %d, int8 KV "
                  "%d positions\n", pes, n[0], n[1], n[2]);
    assert_true(n[0] >= 256);   /* the model's own context fits */
    assert_true(n[1] >= 2 * n[0] - 64);
    assert_true(n[2] >= n[1]);
    /* JSON has the same */
    assert_int_equal(run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --pes 16 --json",
                                 out, err, sizeof err), 0);
    char want[96];
    snprintf(want, sizeof want, "\"max_seq\":{\"f32\":%d,\"f16\":%d,\"int8\":%d}", n[0], n[1], n[2]);
    assert_non_null(strstr(out, want));
}

/* The stories15m profile builds an fp32 cache only. */
static void profile_without_the_array_refuses(void **state)
{
    (void)state;
    static char out[1 << 14], err[1 << 14];
    char path[] = "/tmp/tsr_kv15m_XXXXXX", cmd[512];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char e[256];
    assert_int_equal(tsr_synth_file("stories15M", path, 32, 3, e, sizeof e), TSR_OK);
    snprintf(cmd, sizeof cmd, TESSERA_15M " run -m %s -z " SH_MODEL("tokenizer.bin")
             " -n 4 --kv f16", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof err), 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "the stories15m profile has no f16 KV cache (--kv f32)"));
    unlink(path);
    /* plan says the same, before any mesh is tried */
    assert_int_equal(run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --profile "
                                 "stories15m --kv int8", out, err, sizeof err), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "the stories15m profile has no int8 KV cache (--kv f32)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_precision_decodes_the_reference),
        cmocka_unit_test(logits_nmse_at_50_and_200),
        cmocka_unit_test(kv_bytes_shrink),
        cmocka_unit_test(plan_longest_context_per_precision),
        cmocka_unit_test(profile_without_the_array_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
