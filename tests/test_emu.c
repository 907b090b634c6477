/*
 * test_emu.c - the emulator end to end, through the public API, against the
 * llama2.c reference output and the golden reference (tests/ref).
 *
 * stories260K (../shared/models): dim 64, hidden 172, 5 layers, 8 heads,
 * 4 KV heads (GQA), vocab 512, seq 512.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "golden.h"
#include "model.h"
#include "tsr_kernel.h"
#include "tessera.h"
#include "tsr_emu.h"
#include "greedy.h"
#include "test_util.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")
#define REF_TOKENS SHARED_REF("stories260K_once_upon_a_time.tokens")
#define STEPS 200

/* ------------------------------------------------------------ helpers --- */

/* The reference ids (BOS first), one per line; returns the count. */
static int read_ref_tokens(int *ids, int cap)
{
    FILE *f = fopen(REF_TOKENS, "r");
    assert_non_null(f);
    int n = 0;
    while (n < cap && fscanf(f, "%d", &ids[n]) == 1) n++;
    fclose(f);
    return n;
}

static tsr_device *open_dev(const char *spec)
{
    tsr_device *dev = NULL;
    int rc = tsr_device_open(spec, &dev);
    if (rc) fprintf(stderr, "open %s: %s\n", spec, tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    return dev;
}

static tsr_model *load(tsr_device *dev, int f32, int group)
{
    tsr_model_opts o = { .tokenizer = TOK, .weights_f32 = f32, .group_size = group };
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, MODEL, &o, &m);
    if (rc) fprintf(stderr, "load: %s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    return m;
}

/* llama2.c-style greedy run: prompt "Once upon a time", STEPS positions;
 * ids gets the whole history (BOS first); returns its length. */
static int run_greedy(tsr_model *m, int *ids, int cap)
{
    return greedy_history(m, "Once upon a time", STEPS, 0, ids, cap, NULL, 0);
}

/* --------------------------------------------------------------- tests --- */

/* F32 weights reproduce llama2.c run.c's tokens exactly. */
static void f32_matches_llama2c_reference(void **state)
{
    (void)state;
    int ref[STEPS + 8], got[STEPS + 8];
    int n_ref = read_ref_tokens(ref, STEPS + 8);
    assert_int_equal(n_ref, STEPS + 1);
    tsr_device *dev = open_dev("emu");
    tsr_model *m = load(dev, 1, 0);
    int n = run_greedy(m, got, STEPS + 8);
    assert_int_equal(n, n_ref);
    for (int i = 0; i < n; i++) assert_int_equal(got[i], ref[i]);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* The same on other mesh shapes: the tiling must not change the tokens. */
static void f32_matches_reference_on_other_meshes(void **state)
{
    (void)state;
    const char *specs[] = { "emu:pes=1", "emu:pes=4", "emu:pes=8" };
    int ref[STEPS + 8], got[STEPS + 8];
    read_ref_tokens(ref, STEPS + 8);
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        tsr_device *dev = open_dev(specs[k]);
        tsr_model *m = load(dev, 1, 0);
        int n = run_greedy(m, got, STEPS + 8);
        assert_int_equal(n, STEPS + 1);
        for (int i = 0; i < n; i++) assert_int_equal(got[i], ref[i]);
        tsr_model_close(m);
        tsr_device_close(dev);
    }
}

/* The PEs spread over 1, 2, 3 or 4 worker threads give identical greedy
 * tokens (each PE writes only its own memories; a tree step reads its
 * partner's after the step before it ended): on the default mesh, and on a
 * 4 x 4 mesh with each KV head over 2 PEs. */
static void threads_give_identical_tokens(void **state)
{
    (void)state;
    static const char *const specs[][4] = {
        { "emu:threads=1", "emu:threads=2", "emu:threads=4", "emu:threads=3" },
        { "emu:pes=16,cols=4,kvsplit=2,threads=1", "emu:pes=16,cols=4,kvsplit=2,threads=2",
          "emu:pes=16,cols=4,kvsplit=2,threads=4", "emu:pes=16,cols=4,kvsplit=2,threads=3" },
    };
    for (size_t g = 0; g < 2; g++) {
        int first[STEPS + 8], got[STEPS + 8], n_first = 0;
        for (size_t k = 0; k < 4; k++) {
            tsr_device *dev = open_dev(specs[g][k]);
            tsr_model *m = load(dev, 0, 32);
            int n = run_greedy(m, k ? got : first, STEPS + 8);
            if (k == 0) n_first = n;
            else {
                assert_int_equal(n, n_first);
                assert_memory_equal(got, first, (size_t)n * sizeof(int));
            }
            tsr_model_close(m);
            tsr_device_close(dev);
        }
        assert_int_equal(n_first, STEPS + 1);
    }
}

/* Greedy tokens (125 positions, BOS/EOS ignored) and the last logits of a
 * run on spec (Q8_0, group G). */
static int run_q8(const char *spec, int G, int *ids, float *logits)
{
    tsr_device *dev = open_dev(spec);
    tsr_model *m = load(dev, 0, G);
    int n = greedy_history(m, "Once upon a time", 125, 1, ids, 160, logits, 512);
    tsr_model_close(m);
    tsr_device_close(dev);
    return n;
}

/* The emulator's SIMD rows (emu/tile_simd.c) and unpadded attention
 * passes (emu/att_rows.c) give the same tokens and bit-identical logits as
 * the kernel's portable loops, at group sizes 32 and 64: on the default
 * 16 x 1 mesh, on 6 PEs over 4 threads (worker blocks that are not whole
 * mesh rows), on a 4 x 2 mesh with each KV head over 2 PEs (column and
 * attention trees), and kept to an AVX2-only CPU's paths (simd=avx2: the
 * AVX2 GEMM for prompt blocks, no AVX-512, AVX-VNNI or AMX). */
static void simd_rows_match_portable_loops(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        { "emu:simd=0,threads=1", "emu:threads=2" },
        { "emu:simd=0,pes=6,threads=1", "emu:pes=6,threads=4" },
        { "emu:simd=0,pes=8,cols=2,kvsplit=2,threads=1", "emu:pes=8,cols=2,kvsplit=2,threads=2" },
        /* last: "simd=avx2" keeps the process to an AVX2-only CPU's paths */
        { "emu:simd=0,threads=1", "emu:simd=avx2,threads=2" },
    };
    static const int groups[] = { 32, 64 };
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            int a[160], b[160];
            float la[512], lb[512];
            int na = run_q8(pairs[k][0], groups[g], a, la);
            int nb = run_q8(pairs[k][1], groups[g], b, lb);
            assert_int_equal(na, nb);
            assert_true(na > 100);
            assert_memory_equal(a, b, (size_t)na * sizeof(int));
            assert_memory_equal(la, lb, sizeof la);
        }
    }
    assert_int_equal(tsr_emu_vec_limit, TSR_EMU_VEC_AVX2);   /* simd=avx2 took hold */
    tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
}

/* Q8_0 (group 32, the default) on the default mesh (16 PEs, one column)
 * equals the golden reference's Q8 mode token for token over 200 steps,
 * and its logits bit for bit; records NMSE and top-1 agreement against
 * F32. */
static void q8_matches_golden_q8(void **state)
{
    (void)state;
    tsr_checkpoint *ck = NULL;
    assert_int_equal(tsr_checkpoint_open(MODEL, &ck, NULL), TSR_OK);
    golden gq, gf;
    assert_int_equal(golden_build(&gq, ck, GOLDEN_Q8, 32, 0), TSR_OK);
    assert_int_equal(golden_build(&gf, ck, GOLDEN_F32, 0, 0), TSR_OK);

    int ref[STEPS + 8], want[STEPS + 8], got[STEPS + 8];
    read_ref_tokens(ref, STEPS + 8);
    int n_want = golden_generate_greedy(&gq, ref, 5, STEPS, want);

    tsr_device *dev = open_dev("emu");
    tsr_model *m = load(dev, 0, 32);
    int n = run_greedy(m, got, STEPS + 8);
    assert_int_equal(n, n_want);
    for (int i = 0; i < n; i++) assert_int_equal(got[i], want[i]);

    /* Position-0 logits of the device (Q8) against the golden F32. */
    int vocab = ck->cfg.vocab_size;
    float *dl = malloc((size_t)vocab * sizeof *dl);
    assert_non_null(dl);
    logits_after_bos(m, dl, vocab);
    const float *fl = golden_forward(&gf, 1, 0);
    double nmse = golden_nmse(dl, fl, vocab);
    /* The device's Q8 logits against the golden Q8 logits. */
    const float *ql = golden_forward(&gq, 1, 0);
    double nmse_q = golden_nmse(dl, ql, vocab);
    /* one mesh column: every row in runq.c's order, so bit for bit (ql is
     * golden's buffer: compare before the next golden_forward) */
    assert_memory_equal(dl, ql, (size_t)vocab * sizeof *dl);

    /* Top-1 agreement of Q8 against F32 along the F32 (reference) path. */
    int agree = 0;
    for (int pos = 0; pos < STEPS; pos++) {
        int a = golden_argmax(golden_forward(&gf, ref[pos], pos), vocab);
        int b = golden_argmax(golden_forward(&gq, ref[pos], pos), vocab);
        agree += a == b;
    }
    print_message("q8_0 g32: position-0 logits NMSE vs f32 = %.3e (vs golden q8 %.3e), "
                  "top-1 agreement vs f32 over %d steps = %.3f\n",
                  nmse, nmse_q, STEPS, agree / (double)STEPS);
    assert_true(nmse < 1e-2);
    assert_true(agree >= STEPS * 9 / 10);

    free(dl);
    tsr_model_close(m);
    tsr_device_close(dev);
    golden_free(&gq);
    golden_free(&gf);
    tsr_checkpoint_close(ck);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Off-chip budgets from the counters.  A command is TSR_CMD_WORDS words in
 * and TSR_RESP_WORDS out (driver/kcmd.c).  Prefill of P tokens: one
 * command and the 4P bytes of ids in, the same fixed cost for any P.
 * Decode of N tokens: one command in; out the 4N bytes of ids, the
 * response, and 4 bytes for each read of the token count the host polls
 * while the kernel streams.  The host reads the count after each publish
 * (N + 1 of them) or each 1 ms wait slice without one, so the polls are
 * bounded by N + 2 plus the decode's milliseconds.  The weight image
 * crosses once. */
static void offchip_budgets(void **state)
{
    (void)state;
    const uint64_t cmd = 4u * TSR_CMD_WORDS, resp = 4u * TSR_RESP_WORDS;
    tsr_device *dev = open_dev("emu");
    tsr_model *m = load(dev, 0, 32);
    tsr_traffic t0 = { 0 }, t1 = { 0 }, t2 = { 0 }, t3 = { 0 };
    tsr_device_traffic(dev, &t0);
    assert_int_equal(t0.loads, 1);
    assert_true(t0.load_h2d > 0);

    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);   /* a RESET */
    tsr_device_traffic(dev, &t1);
    assert_int_equal(t1.prefill_h2d - t0.prefill_h2d, cmd);
    assert_int_equal(t1.prefill_d2h - t0.prefill_d2h, resp);
    int prompt[12] = { 1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315 };
    assert_int_equal(tsr_seq_append_tokens(s, prompt, 12), TSR_OK);
    tsr_device_traffic(dev, &t2);
    uint64_t in12 = t2.prefill_h2d - t1.prefill_h2d;
    assert_true(in12 >= 4 * 12 && in12 <= 4 * 12 + 64);
    assert_int_equal(t2.prefill_d2h - t1.prefill_d2h, resp);
    assert_int_equal(tsr_seq_append_tokens(s, prompt + 1, 3), TSR_OK);
    tsr_device_traffic(dev, &t3);
    assert_int_equal(t3.prefill_h2d - t2.prefill_h2d - 4 * 3, in12 - 4 * 12);   /* per call, not per token */

    const int N = 100;
    tsr_gen_opts go = { .max_tokens = N, .ignore_stop = 1 };
    int got = 0;
    double ms = now_ms();
    assert_int_equal(tsr_seq_generate(s, &go, NULL, NULL, &got), TSR_OK);
    ms = now_ms() - ms;
    assert_int_equal(got, N);
    tsr_device_traffic(dev, &t2);
    uint64_t out = t2.decode_d2h - t3.decode_d2h, in = t2.decode_h2d - t3.decode_h2d;
    uint64_t polls = (out - 4u * N - resp) / 4u;
    print_message("decode of %d tokens: %llu bytes in, %llu out (%llu count reads in %.1f ms)\n", N,
                  (unsigned long long)in, (unsigned long long)out, (unsigned long long)polls, ms);
    assert_true(out >= 4u * N + resp + 4u);
    assert_true(polls <= (uint64_t)N + 2u + (uint64_t)ms + 2u);
    assert_true(in <= cmd + 64);
    assert_int_equal(t2.load_h2d, t0.load_h2d);

    /* More prompts, and loading the same model again: no second stream. */
    tsr_seq_close(s);
    tsr_model *m2 = load(dev, 0, 32);
    assert_int_equal(tsr_seq_open(m2, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "The cat"), TSR_OK);
    assert_int_equal(tsr_seq_generate(s, &go, NULL, NULL, &got), TSR_OK);
    tsr_device_traffic(dev, &t2);
    assert_int_equal(t2.loads, 1);
    assert_int_equal(t2.load_h2d, t0.load_h2d);
    tsr_seq_close(s);
    tsr_model_close(m2);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* Top-p: p -> 0 equals greedy; a seed gives the same tokens every time. */
static void sampling_top_p_and_seed(void **state)
{
    (void)state;
    tsr_device *dev = open_dev("emu");
    tsr_model *m = load(dev, 0, 32);
    int runs[3][64];
    const tsr_gen_opts opts[3] = {
        { .max_tokens = 60, .temperature = 0.0f, .ignore_stop = 1 },           /* greedy */
        { .max_tokens = 60, .temperature = 1.0f, .top_p = 1e-6f, .seed = 7, .ignore_stop = 1 },
        { .max_tokens = 60, .temperature = 1.0f, .top_p = 0.9f, .seed = 7, .ignore_stop = 1 },
    };
    for (int r = 0; r < 3; r++) {
        tsr_seq *s = NULL;
        assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
        assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
        int got = 0;
        assert_int_equal(tsr_seq_generate(s, &opts[r], NULL, NULL, &got), TSR_OK);
        assert_int_equal(got, 60);
        const int *t;
        int n;
        tsr_seq_tokens(s, &t, &n);
        memcpy(runs[r], t + n - 60, 60 * sizeof(int));
        tsr_seq_close(s);
    }
    assert_memory_equal(runs[0], runs[1], 60 * sizeof(int));
    /* Same seed, same distribution: identical again. */
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    assert_int_equal(tsr_seq_generate(s, &opts[2], NULL, NULL, NULL), TSR_OK);
    const int *t;
    int n;
    tsr_seq_tokens(s, &t, &n);
    assert_memory_equal(runs[2], t + n - 60, 60 * sizeof(int));
    /* Sampling at temperature 1 differs from greedy somewhere in 60 tokens. */
    assert_true(memcmp(runs[0], runs[2], 60 * sizeof(int)) != 0);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* Cancel from another thread returns promptly with the tokens so far. */
typedef struct cancel_ctx {
    tsr_seq *s;
    int seen;   /* atomic: the token callback counts, the canceller reads */
} cancel_ctx;

static int count_tokens(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    (void)token;
    cancel_ctx *c = user;
    __atomic_add_fetch(&c->seen, 1, __ATOMIC_RELAXED);
    return 0;
}

static void *canceller(void *arg)
{
    cancel_ctx *c = arg;
    while (__atomic_load_n(&c->seen, __ATOMIC_RELAXED) < 20) usleep(100);
    tsr_seq_cancel(c->s);
    return NULL;
}

static void cancel_from_another_thread(void **state)
{
    (void)state;
    tsr_device *dev = open_dev("emu");
    tsr_model *m = load(dev, 0, 32);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    cancel_ctx c = { .s = s };
    pthread_t th;
    pthread_create(&th, NULL, canceller, &c);
    tsr_gen_opts go = { .max_tokens = 500, .ignore_stop = 1 };
    int got = 0;
    assert_int_equal(tsr_seq_generate(s, &go, count_tokens, &c, &got), TSR_OK);
    pthread_join(th, NULL);
    assert_int_equal(tsr_seq_was_cancelled(s), 1);
    assert_true(got >= 20);
    assert_true(got < 500);
    assert_int_equal(tsr_seq_length(s), 5 + got);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* A file whose own context is more than the device holds loads with the
 * most of it that fits: the profile's maximum, then halved while the KV
 * cache does not fit; a context asked for is refused as it is. */
static void file_context_cut_to_fit(void **state)
{
    (void)state;
    char path[] = "/tmp/tsr_ctx_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512];
    /* 8 layers of 8 KV heads x 64: 4 KiB of fp32 K and V per position and
     * layer, 32 KiB a position: 8192 positions need 256 MiB of KV */
    assert_int_equal(tsr_synth_file("512x8:heads=8,vocab=512,seq=8192", path, 32, 1, err,
                                    sizeof err), TSR_OK);
    tsr_device *dev = open_dev("emu:pes=4");
    tsr_model_opts o = { .tokenizer = SHARED_MODEL("tok512.bin"), .n_seqs = 1 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, path, &o, &m), TSR_OK);
    tsr_model_info mi = { 0 };
    assert_int_equal(tsr_model_get_info(m, &mi), TSR_OK);
    /* 4 PEs x 8 MiB of fp32 KV: 1024 positions (32 MiB) fit, 2048 do not */
    assert_int_equal(mi.seq_len, 1024);
    tsr_model_close(m);
    tsr_model_opts asked = o;
    asked.seq_len = 8192;
    assert_int_not_equal(tsr_model_load(dev, path, &asked, &m), TSR_OK);
    assert_null(m);
    tsr_device_close(dev);
    unlink(path);
}

/* A model too large for the part is refused before any weight streams. */
static void capacity_refused_before_streaming(void **state)
{
    (void)state;
    char path[] = "/tmp/tsr_cap_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    /* stories15M shape in fp32: ~60 MB of F32 weights against a U55C's ~40 MB. */
    char err[512];
    assert_int_equal(tsr_synth_file("stories15M", path, 0, 1, err, sizeof err), TSR_OK);
    tsr_device *dev = open_dev("emu:part=u55c");
    tsr_model_opts o = { .tokenizer = SHARED_MODEL("tokenizer.bin"), .weights_f32 = 1,
                         .seq_len = 256 };
    tsr_model *m = NULL;
    uint64_t need = 0, have = 0;
    assert_int_equal(tsr_model_fit(dev, path, &o, &need, &have), TSR_ERR_CAPACITY);
    assert_true(need > have);
    assert_int_equal(have, 39714816);   /* U55C: 2016 BRAM36 x 4 KiB + 960 URAM x 32 KiB of data */
    assert_int_equal(tsr_model_load(dev, path, &o, &m), TSR_ERR_CAPACITY);
    assert_null(m);
    const char *msg = tsr_device_errmsg(dev);
    print_message("refused: %s\n", msg);
    assert_non_null(strstr(msg, "u55c"));
    assert_non_null(strstr(msg, "bytes"));
    tsr_traffic t = { 0 };
    tsr_device_traffic(dev, &t);
    assert_int_equal(t.load_h2d, 0);
    assert_int_equal(t.loads, 0);
    /* The same model in Q8_0 fits the U55C. */
    o.weights_f32 = 0;
    assert_int_equal(tsr_model_load(dev, path, &o, &m), TSR_OK);
    tsr_model_close(m);
    tsr_device_close(dev);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_matches_llama2c_reference),
        cmocka_unit_test(f32_matches_reference_on_other_meshes),
        cmocka_unit_test(q8_matches_golden_q8),
        cmocka_unit_test(threads_give_identical_tokens),
        cmocka_unit_test(simd_rows_match_portable_loops),
        cmocka_unit_test(offchip_budgets),
        cmocka_unit_test(sampling_top_p_and_seed),
        cmocka_unit_test(cancel_from_another_thread),
        cmocka_unit_test(file_context_cut_to_fit),
        cmocka_unit_test(capacity_refused_before_streaming),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
