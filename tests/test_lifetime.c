/*
 * test_lifetime.c - tessera.h's lifetime rule and the calls whose promises
 * issue 16 found broken: closing in every order, calls on handles whose
 * device or model was closed (TSR_ERR_STATE, never a crash; run under ASan
 * with SANITIZE=1), per-thread error records, calls from callbacks, count
 * overflow, image_bytes, fit equal to load, NaN sampler options, and a
 * cancel that arrives before generate.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera.h"
#include "test_util.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")

static tsr_device *open_emu(void)
{
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=4,threads=1", &dev), TSR_OK);
    return dev;
}

static tsr_model *load(tsr_device *dev, int n_seqs)
{
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = n_seqs };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &o, &m), TSR_OK);
    return m;
}

/* A sequence with a prompt and a few generated tokens. */
static tsr_seq *busy_seq(tsr_model *m)
{
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    tsr_gen_opts g = { .max_tokens = 4, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, NULL), TSR_OK);
    return s;
}

/* Every call on a model handle that needs its host side or its device. */
static void model_calls_refused(tsr_model *m)
{
    tsr_seq *s = (tsr_seq *)0x1;
    assert_int_equal(tsr_seq_open(m, &s), TSR_ERR_STATE);
    assert_null(s);
    tsr_model_info info = { 0 };
    assert_int_equal(tsr_model_get_info(m, &info), TSR_ERR_STATE);
    int toks[8], n = 0;
    assert_int_equal(tsr_model_tokenize(m, "hi", 1, toks, 8, &n), TSR_ERR_STATE);
    size_t len = 7;
    assert_null(tsr_model_token_text(m, 1, 300, &len));
    assert_int_equal(len, 0);
}

/* Every call on a sequence handle that drives the device. */
static void seq_drive_refused(tsr_seq *s)
{
    int tok = 300;
    tsr_gen_opts g = { .max_tokens = 2 };
    int n = 5;
    float logits[512];
    assert_int_equal(tsr_seq_append_tokens(s, &tok, 1), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_append_text(s, " more"), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &n), TSR_ERR_STATE);
    assert_int_equal(n, 0);
    assert_int_equal(tsr_seq_truncate(s, 1), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_reset(s), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_read_logits(s, logits, 512), TSR_ERR_STATE);
}

/* Every call on a sequence handle. */
static void seq_calls_refused(tsr_seq *s)
{
    int tok = 300;
    tsr_gen_opts g = { .max_tokens = 2 };
    const int *t = NULL;
    int n = 5;
    tsr_seq_stats st = { 0 };
    float logits[512];
    assert_int_equal(tsr_seq_append_tokens(s, &tok, 1), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_append_text(s, " more"), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &n), TSR_ERR_STATE);
    assert_int_equal(n, 0);
    assert_int_equal(tsr_seq_truncate(s, 1), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_reset(s), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_read_logits(s, logits, 512), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_length(s), 0);
    assert_int_equal(tsr_seq_tokens(s, &t, &n), TSR_ERR_STATE);
    assert_null(t);
    assert_int_equal(tsr_seq_get_stats(s, &st), TSR_ERR_STATE);
    tsr_seq_cancel(s);                            /* harmless, lock-free */
    assert_int_equal(tsr_seq_was_cancelled(s), 0);
}

/* The steps: load a model, close the device, open a sequence on
 * the model.  That was a SIGSEGV; it is TSR_ERR_STATE. */
static void seq_open_after_device_close(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model *m = load(dev, 1);
    tsr_device_close(dev);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_ERR_STATE);
    assert_null(s);
    tsr_model_close(m);
}

/* Device closed first: its model and sequence refuse every call, then
 * close (the sequence before the model, and the other way round). */
static void device_before_model_and_sequence(void **state)
{
    (void)state;
    for (int seq_first = 0; seq_first <= 1; seq_first++) {
        tsr_device *dev = open_emu();
        tsr_model *m = load(dev, 2);
        tsr_seq *s = busy_seq(m);
        tsr_device_close(dev);
        model_calls_refused(m);
        seq_calls_refused(s);
        if (seq_first) { tsr_seq_close(s); tsr_model_close(m); }
        else           { tsr_model_close(m); seq_calls_refused(s); tsr_seq_close(s); }
    }
}

/* Model closed before its sequence: the sequence refuses every call, its
 * slot is free for a new model's sequence. */
static void model_before_sequence(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model *m = load(dev, 1);
    tsr_seq *s = busy_seq(m);
    tsr_model_close(m);
    seq_calls_refused(s);
    tsr_model *m2 = load(dev, 1);
    tsr_seq *s2 = busy_seq(m2);   /* the one slot is free again */
    assert_int_equal(tsr_seq_length(s2), 5 + 4);
    tsr_seq_close(s);
    tsr_seq_close(s2);
    tsr_model_close(m2);
    tsr_device_close(dev);
}

/* A sequence of a model that another load replaced and that was then
 * closed: a dangling pointer before, TSR_ERR_STATE now. */
static void sequence_of_replaced_closed_model(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model *a = load(dev, 1);
    tsr_seq *s = busy_seq(a);
    tsr_model_opts f32 = { .tokenizer = TOK, .weights_f32 = 1, .n_seqs = 1 };
    tsr_model *b = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &f32, &b), TSR_OK);
    seq_drive_refused(s);                /* replaced: the history still reads */
    const int *t = NULL;
    int n = 0;
    assert_int_equal(tsr_seq_tokens(s, &t, &n), TSR_OK);
    assert_int_equal(n, 9);
    assert_int_equal(tsr_seq_length(s), 9);
    tsr_seq *none = NULL;                /* a replaced model opens no sequence... */
    assert_int_equal(tsr_seq_open(a, &none), TSR_ERR_STATE);
    tsr_model_info info = { 0 };                 /* ...but its host side still answers */
    assert_int_equal(tsr_model_get_info(a, &info), TSR_OK);
    tsr_model_close(a);
    seq_calls_refused(s);                /* replaced, then closed */
    tsr_seq *s2 = busy_seq(b);
    tsr_seq_close(s);
    tsr_seq_close(s2);
    tsr_model_close(b);
    tsr_device_close(dev);
}

/* All six orders of closing a device, a model and a sequence, each after
 * use: after each close, the handles still open keep the rule (a model
 * whose device is closed, a sequence whose device or model is closed,
 * refuse every call with TSR_ERR_STATE; while both are open, a sequence
 * still generates); under ASan (SANITIZE=1) any use after free or leak
 * fails the run too. */
static void every_close_order(void **state)
{
    (void)state;
    static const char orders[6][4] = { "dms", "dsm", "mds", "msd", "sdm", "smd" };
    for (int k = 0; k < 6; k++) {
        tsr_device *dev = open_emu();
        tsr_model *m = load(dev, 2);
        tsr_seq *s = busy_seq(m);
        int d_open = 1, m_open = 1, s_open = 1;
        for (int i = 0; i < 3; i++) {
            switch (orders[k][i]) {
            case 'd': tsr_device_close(dev); d_open = 0; break;
            case 'm': tsr_model_close(m); m_open = 0; break;
            case 's': tsr_seq_close(s); s_open = 0; break;
            }
            if (m_open && !d_open) model_calls_refused(m);
            if (s_open && (!d_open || !m_open)) seq_calls_refused(s);
            if (s_open && d_open && m_open) {
                tsr_gen_opts g = { .max_tokens = 2, .ignore_stop = 1 };
                int n = 0;
                assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &n), TSR_OK);
                assert_int_equal(n, 2);
            }
            if (m_open && d_open) {
                tsr_model_info info = { 0 };
                assert_int_equal(tsr_model_get_info(m, &info), TSR_OK);
            }
        }
    }
    /* several models and sequences, the device first */
    tsr_device *dev = open_emu();
    tsr_model *a = load(dev, 2), *b = load(dev, 2);
    tsr_seq *s1 = busy_seq(b), *s2 = busy_seq(b);
    tsr_device_close(dev);
    tsr_seq_close(s2);
    tsr_model_close(a);
    tsr_seq_close(s1);
    tsr_model_close(b);
}

/* ------------------------------------------------------------ errors --- */

typedef struct other_view { tsr_device *dev; int code; char msg[64]; } other_view;

static void *look_from_other_thread(void *arg)
{
    other_view *v = arg;
    v->code = tsr_errcode(v->dev);
    snprintf(v->msg, sizeof v->msg, "%s", tsr_device_errmsg(v->dev));
    return NULL;
}

/* tsr_errcode() is the code tsr_device_errmsg() describes, per thread. */
static void errcode_per_thread(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    assert_int_equal(tsr_errcode(dev), TSR_OK);
    assert_string_equal(tsr_device_errmsg(dev), "");
    tsr_model *m = NULL;
    tsr_model_opts o = { .tokenizer = TOK };
    assert_int_equal(tsr_model_load(dev, "/nonexistent/model.bin", &o, &m), TSR_ERR_IO);
    assert_int_equal(tsr_errcode(dev), TSR_ERR_IO);
    assert_non_null(strstr(tsr_device_errmsg(dev), "/nonexistent/model.bin"));
    other_view v = { .dev = dev, .code = -1 };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, look_from_other_thread, &v), 0);
    pthread_join(th, NULL);
    assert_int_equal(v.code, TSR_OK);            /* that thread never failed */
    assert_string_equal(v.msg, "");
    /* a later success keeps the last failure */
    m = load(dev, 1);
    assert_int_equal(tsr_errcode(dev), TSR_ERR_IO);
    tsr_model_close(m);
    tsr_device_close(dev);
    assert_int_equal(tsr_errcode(NULL), TSR_OK);
}

/* ------------------------------------------------------ from callbacks --- */

typedef struct cb_ctx {
    tsr_model *m;
    tsr_seq   *other;
    int        seen, append_rc, text_ok, stats_rc, len, traffic_rc;
} cb_ctx;

static int probe(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    cb_ctx *c = user;
    if (c->seen++ == 0) {
        int tok = 300;
        c->append_rc = tsr_seq_append_tokens(c->other, &tok, 1);   /* drives the device */
        size_t n = 0;
        c->text_ok = tsr_model_token_text(c->m, 1, token, &n) != NULL;
        tsr_seq_stats st = { 0 };
        c->stats_rc = tsr_seq_get_stats(s, &st);
        c->len = tsr_seq_length(s);
        tsr_traffic t = { 0 };
        c->traffic_rc = tsr_device_traffic(NULL, &t) == TSR_ERR_ARG ? TSR_OK : -1;
    }
    return 0;
}

/* From a token callback, reading calls work and driving calls return
 * TSR_ERR_STATE (the generate owns the device). */
static void calls_from_a_callback(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model *m = load(dev, 2);
    cb_ctx c = { .m = m };
    assert_int_equal(tsr_seq_open(m, &c.other), TSR_OK);
    assert_int_equal(tsr_seq_append_text(c.other, "A"), TSR_OK);
    int other_len = tsr_seq_length(c.other);
    assert_true(other_len >= 2);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    tsr_gen_opts g = { .max_tokens = 3, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &g, probe, &c, NULL), TSR_OK);
    assert_int_equal(c.seen, 3);
    assert_int_equal(c.append_rc, TSR_ERR_STATE);
    assert_int_equal(c.text_ok, 1);
    assert_int_equal(c.stats_rc, TSR_OK);
    assert_int_equal(c.len, 5);                  /* the history before this generate */
    assert_int_equal(c.traffic_rc, TSR_OK);
    assert_int_equal(tsr_seq_length(c.other), other_len);   /* the refused append: nothing */
    tsr_seq_close(s);
    tsr_seq_close(c.other);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* ------------------------------------------------------------- bounds --- */

/* n = INT_MAX used to overflow n_hist + n - 1, pass the range check and
 * overflow the heap; it is RANGE, and no token is read. */
static void append_int_max_is_range(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model *m = load(dev, 1);
    tsr_seq *s = busy_seq(m);
    int one = 300;
    assert_int_equal(tsr_seq_append_tokens(s, &one, INT_MAX), TSR_ERR_RANGE);
    assert_non_null(strstr(tsr_device_errmsg(dev), "context"));
    assert_int_equal(tsr_seq_length(s), 9);
    assert_int_equal(tsr_seq_reset(s), TSR_OK);
    assert_int_equal(tsr_seq_append_tokens(s, &one, INT_MAX), TSR_ERR_RANGE);
    assert_int_equal(tsr_seq_append_tokens(s, &one, INT_MIN), TSR_ERR_ARG);
    assert_int_equal(tsr_seq_length(s), 0);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* ------------------------------------------------------ header promises --- */

typedef struct total { uint64_t total, calls, last_sent; } total;

static void take_total(uint64_t sent, uint64_t t, void *user)
{
    total *p = user;
    p->total = t;
    p->last_sent = sent;
    p->calls++;
}

/* image_bytes is the progress callback's total: set on the load that
 * streams, and on one that finds the same image resident. */
static void image_bytes_is_set(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    total q8 = { 0 };
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 1, .progress = take_total,
                         .progress_user = &q8 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &o, &m), TSR_OK);
    tsr_model_info info = { 0 };
    assert_int_equal(tsr_model_get_info(m, &info), TSR_OK);
    assert_true(q8.calls >= 2);
    assert_true(info.image_bytes > 0);
    assert_int_equal(info.image_bytes, q8.total);
    tsr_traffic t = { 0 };
    assert_int_equal(tsr_device_traffic(dev, &t), TSR_OK);
    assert_true(info.image_bytes < t.load_h2d);   /* plus the 32-byte commands */
    /* the same image again: nothing streams, the size is still known */
    total again = { 0 };
    o.progress_user = &again;
    tsr_model *m2 = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &o, &m2), TSR_OK);
    assert_int_equal(again.calls, 0);
    tsr_model_info info2 = { 0 };
    assert_int_equal(tsr_model_get_info(m2, &info2), TSR_OK);
    assert_int_equal(info2.image_bytes, info.image_bytes);
    /* F32 weights: a bigger image */
    total f = { 0 };
    tsr_model_opts of = { .tokenizer = TOK, .weights_f32 = 1, .n_seqs = 1,
                          .progress = take_total, .progress_user = &f };
    tsr_model *m3 = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &of, &m3), TSR_OK);
    tsr_model_info info3 = { 0 };
    assert_int_equal(tsr_model_get_info(m3, &info3), TSR_OK);
    assert_int_equal(info3.image_bytes, f.total);
    assert_true(info3.image_bytes > 3 * info.image_bytes);
    tsr_model_close(m);
    tsr_model_close(m2);
    tsr_model_close(m3);
    tsr_device_close(dev);
}

/* tsr_model_fit places the slots tsr_model_load would: with n_seqs = 0,
 * as many as fit (8 for stories260K), not one. */
static void fit_equals_load(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model_opts any = { .tokenizer = TOK }, eight = { .tokenizer = TOK, .n_seqs = 8 },
                   one = { .tokenizer = TOK, .n_seqs = 1 };
    uint64_t need0 = 0, need8 = 0, need1 = 0, have = 0;
    assert_int_equal(tsr_model_fit(dev, MODEL, &any, &need0, &have), TSR_OK);
    assert_int_equal(tsr_model_fit(dev, MODEL, &eight, &need8, NULL), TSR_OK);
    assert_int_equal(tsr_model_fit(dev, MODEL, &one, &need1, NULL), TSR_OK);
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &any, &m), TSR_OK);
    tsr_model_info info = { 0 };
    assert_int_equal(tsr_model_get_info(m, &info), TSR_OK);
    assert_int_equal(info.n_seqs, 8);
    assert_int_equal(need0, need8);
    assert_true(need1 < need0);
    tsr_model_close(m);
    tsr_device_close(dev);

    /* a part whose SRAM holds fewer slots: fit and load agree on that too */
    assert_int_equal(tsr_device_open("emu:part=u200,threads=1", &dev), TSR_OK);
    tsr_model_opts ctx = { .tokenizer = SHARED_MODEL("tokenizer.bin") };
    char path[] = "/tmp/tsr_fit15m_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char err[256];
    assert_int_equal(tsr_synth_file("stories15M", path, 32, 1, err, sizeof err), TSR_OK);
    uint64_t need = 0;
    assert_int_equal(tsr_model_fit(dev, path, &ctx, &need, &have), TSR_OK);
    {
        m = NULL;
        assert_int_equal(tsr_model_load(dev, path, &ctx, &m), TSR_OK);
        assert_int_equal(tsr_model_get_info(m, &info), TSR_OK);
        print_message("stories15M on a u200: %d slots, %llu of %llu bytes\n",
                      info.n_seqs, (unsigned long long)need, (unsigned long long)have);
        assert_true(info.n_seqs >= 1 && info.n_seqs < 8);
        tsr_model_opts exact = ctx;
        exact.n_seqs = info.n_seqs;
        uint64_t need_exact = 0;
        assert_int_equal(tsr_model_fit(dev, path, &exact, &need_exact, NULL), TSR_OK);
        assert_int_equal(need, need_exact);
        tsr_model_close(m);
    }
    tsr_device_close(dev);
    unlink(path);
}

/* The API refuses what the CLI refuses: a NaN or infinite temperature or
 * top_p. */
static void nan_sampler_options_rejected(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model *m = load(dev, 1);
    tsr_seq *s = busy_seq(m);
    const float bad[] = { NAN, -NAN, INFINITY, -INFINITY, -1.0f };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsr_gen_opts t = { .max_tokens = 2, .temperature = bad[i] };
        tsr_gen_opts p = { .max_tokens = 2, .top_p = bad[i] };
        assert_int_equal(tsr_seq_generate(s, &t, NULL, NULL, NULL), TSR_ERR_ARG);
        assert_non_null(strstr(tsr_device_errmsg(dev), "temperature"));
        assert_int_equal(tsr_seq_generate(s, &p, NULL, NULL, NULL), TSR_ERR_ARG);
    }
    assert_int_equal(tsr_seq_length(s), 9);
    tsr_gen_opts ok = { .max_tokens = 2, .temperature = 0.8f, .top_p = 0.9f, .seed = 3 };
    int got = 0;
    assert_int_equal(tsr_seq_generate(s, &ok, NULL, NULL, &got), TSR_OK);
    assert_true(got >= 1);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* A cancel that arrives before generate starts is kept: that generate
 * returns at once, cancelled; the next one runs. */
static void cancel_before_generate_is_kept(void **state)
{
    (void)state;
    tsr_device *dev = open_emu();
    tsr_model *m = load(dev, 1);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    tsr_seq_cancel(s);                                      /* before anything */
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    tsr_gen_opts g = { .max_tokens = 10, .ignore_stop = 1 };
    int got = -1;
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 0);
    assert_int_equal(tsr_seq_was_cancelled(s), 1);
    assert_int_equal(tsr_seq_length(s), 5);
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 10);
    assert_int_equal(tsr_seq_was_cancelled(s), 0);
    /* an error before decoding keeps the cancel for the next generate */
    tsr_seq_cancel(s);
    tsr_gen_opts nan_t = { .max_tokens = 10, .temperature = NAN };
    assert_int_equal(tsr_seq_generate(s, &nan_t, NULL, NULL, &got), TSR_ERR_ARG);
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 0);
    assert_int_equal(tsr_seq_was_cancelled(s), 1);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seq_open_after_device_close),
        cmocka_unit_test(device_before_model_and_sequence),
        cmocka_unit_test(model_before_sequence),
        cmocka_unit_test(sequence_of_replaced_closed_model),
        cmocka_unit_test(every_close_order),
        cmocka_unit_test(errcode_per_thread),
        cmocka_unit_test(calls_from_a_callback),
        cmocka_unit_test(append_int_max_is_range),
        cmocka_unit_test(image_bytes_is_set),
        cmocka_unit_test(fit_equals_load),
        cmocka_unit_test(nan_sampler_options_rejected),
        cmocka_unit_test(cancel_before_generate_is_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
