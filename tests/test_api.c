/*
 * test_api.c - the public driver API as a host program uses it: steering
 * (cancel, append, continue), several sequences on one device, rewind, and
 * misuse that must return its documented error.
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
#include <unistd.h>

#include "tessera.h"
#include "tsr_kernel.h"   /* TSR_CMD_WORDS: a command's bytes on the link */
#include "greedy.h"
#include "test_util.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")

typedef struct fixture {
    tsr_device *dev;
    tsr_model  *m;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(tsr_device_open("emu", &f->dev), TSR_OK);
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 4 };
    assert_int_equal(tsr_model_load(f->dev, MODEL, &o, &f->m), TSR_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tsr_model_close(f->m);
    tsr_device_close(f->dev);
    free(f);
    return 0;
}

static int stop_after_10(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    (void)token;
    int *seen = user;
    return ++*seen >= 10;
}

/* Generate 50, cancel after 10, append, generate 20: equal to one
 * uninterrupted run over the same history; the append sends only its
 * tokens (plus one 32-byte command). */
static void steering_equals_uninterrupted(void **state)
{
    fixture *f = *state;
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    tsr_gen_opts g50 = { .max_tokens = 50, .ignore_stop = 1 };
    int seen = 0, got = 0;
    assert_int_equal(tsr_seq_generate(s, &g50, stop_after_10, &seen, &got), TSR_OK);
    assert_int_equal(got, 10);
    assert_int_equal(tsr_seq_length(s), 5 + 10);

    int instr[16], n_instr = 0;
    assert_int_equal(tsr_model_tokenize(f->m, " The dog said", 0, instr, 16, &n_instr), TSR_OK);
    tsr_seq_stats before = { 0 }, after = { 0 };
    tsr_seq_get_stats(s, &before);
    assert_int_equal(tsr_seq_append_tokens(s, instr, n_instr), TSR_OK);
    tsr_seq_get_stats(s, &after);
    assert_int_equal(after.prefill_h2d - before.prefill_h2d, 4u * TSR_CMD_WORDS + 4 * (uint64_t)n_instr);
    tsr_gen_opts g20 = { .max_tokens = 20, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &g20, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 20);
    int steered[128];
    int n = seq_history(s, steered, 128);
    assert_int_equal(n, 15 + n_instr + 20);

    /* One uninterrupted run: the same history up to the last 20, then 20. */
    tsr_seq *u = NULL;
    assert_int_equal(tsr_seq_open(f->m, &u), TSR_OK);
    assert_int_equal(tsr_seq_append_tokens(u, steered, n - 20), TSR_OK);
    assert_int_equal(tsr_seq_generate(u, &g20, NULL, NULL, &got), TSR_OK);
    int whole[128];
    assert_int_equal(seq_history(u, whole, 128), n);
    assert_memory_equal(whole, steered, (size_t)n * sizeof(int));
    tsr_seq_close(u);
    tsr_seq_close(s);
}

/* Two sequences interleaved token by token equal each run alone. */
static void interleaved_sequences_do_not_disturb(void **state)
{
    fixture *f = *state;
    const char *prompts[2] = { "Once upon a time", "The little dog" };
    int alone[2][64], n_alone[2];
    tsr_gen_opts g30 = { .max_tokens = 30, .ignore_stop = 1 };
    for (int k = 0; k < 2; k++) {
        tsr_seq *s = NULL;
        assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
        assert_int_equal(tsr_seq_append_text(s, prompts[k]), TSR_OK);
        assert_int_equal(tsr_seq_generate(s, &g30, NULL, NULL, NULL), TSR_OK);
        n_alone[k] = seq_history(s, alone[k], 64);
        tsr_seq_close(s);
    }
    tsr_seq *s[2] = { NULL, NULL };
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tsr_seq_open(f->m, &s[k]), TSR_OK);
        assert_int_equal(tsr_seq_append_text(s[k], prompts[k]), TSR_OK);
    }
    tsr_gen_opts g1 = { .max_tokens = 1, .ignore_stop = 1 };
    for (int i = 0; i < 30; i++)
        for (int k = 0; k < 2; k++)
            assert_int_equal(tsr_seq_generate(s[k], &g1, NULL, NULL, NULL), TSR_OK);
    for (int k = 0; k < 2; k++) {
        int h[64];
        int n = seq_history(s[k], h, 64);
        assert_int_equal(n, n_alone[k]);
        assert_memory_equal(h, alone[k], (size_t)n * sizeof(int));
        tsr_seq_close(s[k]);
    }
}

/* Rewind keeps the KV cache of the kept prefix: regenerating from it gives
 * the same tokens again. */
static void truncate_then_regenerate(void **state)
{
    fixture *f = *state;
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    tsr_gen_opts g = { .max_tokens = 40, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, NULL), TSR_OK);
    int first[64];
    int n = seq_history(s, first, 64);
    assert_int_equal(tsr_seq_truncate(s, 20), TSR_OK);
    assert_int_equal(tsr_seq_length(s), 20);
    tsr_gen_opts g2 = { .max_tokens = n - 20, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &g2, NULL, NULL, NULL), TSR_OK);
    int again[64];
    assert_int_equal(seq_history(s, again, 64), n);
    assert_memory_equal(again, first, (size_t)n * sizeof(int));
    assert_int_equal(tsr_seq_truncate(s, 0), TSR_ERR_RANGE);
    assert_int_equal(tsr_seq_truncate(s, n + 1), TSR_ERR_RANGE);
    assert_int_equal(tsr_seq_reset(s), TSR_OK);
    assert_int_equal(tsr_seq_length(s), 0);
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, NULL), TSR_ERR_STATE);
    tsr_seq_close(s);
}

/* The sampler's RNG (tsr_gen_opts.seed): a sequence seeded with s
 * samples as a fresh one with s does; after a truncate the same seed goes
 * on (another tail), and a new seed restarts it (the fresh sequence's
 * tail for that seed); reset keeps it going too. */
static void sampler_rng_across_truncate(void **state)
{
    fixture *f = *state;
    tsr_gen_opts g7 = { .max_tokens = 30, .temperature = 1.0f, .seed = 7, .ignore_stop = 1 };
    tsr_gen_opts g9 = g7;
    g9.seed = 9;
    int want7[64], want9[64], got[64];
    int n7 = 0, n9 = 0;
    for (int k = 0; k < 2; k++) {   /* fresh sequences, seeds 7 and 9 */
        tsr_seq *s = NULL;
        assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
        assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
        assert_int_equal(tsr_seq_generate(s, k ? &g9 : &g7, NULL, NULL, NULL), TSR_OK);
        if (k) n9 = seq_history(s, want9, 64);
        else n7 = seq_history(s, want7, 64);
        tsr_seq_close(s);
    }
    assert_int_equal(n7, n9);
    assert_memory_not_equal(want7, want9, (size_t)n7 * sizeof(int));
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    int p = tsr_seq_length(s);
    assert_int_equal(tsr_seq_generate(s, &g7, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(seq_history(s, got, 64), n7);
    assert_memory_equal(got, want7, (size_t)n7 * sizeof(int));
    /* the same seed after a truncate: the RNG goes on, another tail */
    assert_int_equal(tsr_seq_truncate(s, p), TSR_OK);
    assert_int_equal(tsr_seq_generate(s, &g7, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(seq_history(s, got, 64), n7);
    assert_memory_equal(got, want7, (size_t)p * sizeof(int));
    assert_memory_not_equal(got + p, want7 + p, (size_t)(n7 - p) * sizeof(int));
    /* a new seed restarts it: seed 9's fresh tail */
    assert_int_equal(tsr_seq_truncate(s, p), TSR_OK);
    assert_int_equal(tsr_seq_generate(s, &g9, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(seq_history(s, got, 64), n9);
    assert_memory_equal(got, want9, (size_t)n9 * sizeof(int));
    /* reset keeps it going: the prompt again with seed 9 is not seed 9's
     * fresh tail */
    assert_int_equal(tsr_seq_reset(s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    assert_int_equal(tsr_seq_generate(s, &g9, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(seq_history(s, got, 64), n9);
    assert_memory_not_equal(got + p, want9 + p, (size_t)(n9 - p) * sizeof(int));
    tsr_seq_close(s);
}

/* Misuse returns the documented error and never crashes. */
static void misuse_returns_errors(void **state)
{
    fixture *f = *state;
    tsr_seq *s = NULL;
    tsr_gen_opts g = { .max_tokens = 1 };
    int tok = 1;
    /* NULL handles. */
    assert_int_equal(tsr_seq_open(NULL, &s), TSR_ERR_ARG);
    assert_int_equal(tsr_seq_append_tokens(NULL, &tok, 1), TSR_ERR_ARG);
    assert_int_equal(tsr_seq_generate(NULL, &g, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_int_equal(tsr_model_load(NULL, MODEL, NULL, NULL), TSR_ERR_ARG);
    assert_int_equal(tsr_device_traffic(NULL, NULL), TSR_ERR_ARG);
    tsr_seq_close(NULL);
    tsr_model_close(NULL);
    tsr_device_close(NULL);
    assert_string_equal(tsr_strerror(TSR_ERR_NOSLOT), "no free sequence slot");
    assert_string_equal(tsr_strerror(9999), "unknown status");
    assert_string_equal(tsr_version(), TSR_VERSION_STRING);

    /* Appending beyond seq_len: refused, nothing appended. */
    assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
    tsr_model_info mi = { 0 };
    tsr_model_get_info(f->m, &mi);
    int *many = calloc((size_t)mi.seq_len + 2, sizeof *many);
    for (int i = 0; i < mi.seq_len + 2; i++) many[i] = 300;
    assert_int_equal(tsr_seq_append_tokens(s, many, mi.seq_len + 2), TSR_ERR_RANGE);
    assert_int_equal(tsr_seq_length(s), 0);
    assert_non_null(strstr(tsr_device_errmsg(f->dev), "context"));
    free(many);
    int bad = 512;
    assert_int_equal(tsr_seq_append_tokens(s, &bad, 1), TSR_ERR_ARG);

    /* More sequences than fit: the fixture asked for 4 slots. */
    tsr_seq *more[4] = { s, NULL, NULL, NULL };
    for (int i = 1; i < 4; i++) assert_int_equal(tsr_seq_open(f->m, &more[i]), TSR_OK);
    tsr_seq *extra = NULL;
    assert_int_equal(tsr_seq_open(f->m, &extra), TSR_ERR_NOSLOT);
    assert_null(extra);
    tsr_seq_close(more[3]);
    assert_int_equal(tsr_seq_open(f->m, &extra), TSR_OK);
    tsr_seq_close(extra);
    for (int i = 0; i < 3; i++) tsr_seq_close(more[i]);

    /* Bad device specs. */
    tsr_device *d = NULL;
    assert_int_equal(tsr_device_open("emu:pes=zero", &d), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(d), "pes"));
    tsr_device_close(d);
    assert_int_equal(tsr_device_open("emu:part=u9000", &d), TSR_ERR_ARG);
    tsr_device_close(d);
    assert_int_equal(tsr_device_open("emu:pes=3,pes=4", &d), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(d), "pes given twice"));
    tsr_device_close(d);
    assert_int_equal(tsr_device_open("gpu:0", &d), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(d), "unknown backend 'gpu'"));
    tsr_device_close(d);
}

/* A model handle whose weights another load replaced is refused. */
static void replaced_model_is_stale(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu", &dev), TSR_OK);
    tsr_model_opts q8 = { .tokenizer = TOK }, f32 = { .tokenizer = TOK, .weights_f32 = 1 };
    tsr_model *a = NULL, *b = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &q8, &a), TSR_OK);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(a, &s), TSR_OK);
    assert_int_equal(tsr_model_load(dev, MODEL, &f32, &b), TSR_OK);
    int tok = 1;
    assert_int_equal(tsr_seq_append_tokens(s, &tok, 1), TSR_ERR_STATE);
    tsr_seq *s2 = NULL;
    assert_int_equal(tsr_seq_open(a, &s2), TSR_ERR_STATE);
    tsr_traffic t = { 0 };
    tsr_device_traffic(dev, &t);
    assert_int_equal(t.loads, 2);
    tsr_seq_close(s);
    tsr_model_close(a);
    tsr_model_close(b);
    tsr_device_close(dev);
}

/* Cancel on a long decode of a stories15M-shape model stops within about
 * one token: counted in tokens, not in wall-clock time. */
typedef struct cancel15 {
    tsr_seq *s;
    int      seen;       /* atomic: tokens the callback has seen        */
    int      at_cancel;  /* seen when the cancel was issued (read after join) */
} cancel15;

static int count_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    (void)token;
    __atomic_add_fetch(&((cancel15 *)user)->seen, 1, __ATOMIC_RELEASE);
    return 0;
}

static void *cancel_later(void *arg)
{
    cancel15 *c = arg;
    while (__atomic_load_n(&c->seen, __ATOMIC_ACQUIRE) < 8) usleep(200);
    c->at_cancel = __atomic_load_n(&c->seen, __ATOMIC_ACQUIRE);
    tsr_seq_cancel(c->s);
    return NULL;
}

static void cancel_long_decode_15m(void **state)
{
    (void)state;
    char path[] = "/tmp/tsr_api15m_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512];
    assert_int_equal(tsr_synth_file("stories15M", path, 32, 5, err, sizeof err), TSR_OK);
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu", &dev), TSR_OK);
    tsr_model_opts o = { .tokenizer = SHARED_MODEL("tokenizer.bin"), .n_seqs = 1 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, path, &o, &m), TSR_OK);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    cancel15 c = { .s = s };
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &c);
    tsr_gen_opts go = { .max_tokens = 250, .ignore_stop = 1 };
    int got = 0;
    assert_int_equal(tsr_seq_generate(s, &go, count_token, &c, &got), TSR_OK);
    pthread_join(th, NULL);
    print_message("stories15M shape: cancel issued after %d tokens seen, decode returned %d\n",
                  c.at_cancel, got);
    assert_int_equal(tsr_seq_was_cancelled(s), 1);
    assert_true(got >= c.at_cancel);
    assert_true(got <= c.at_cancel + 2);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
    unlink(path);
}

/* A model loaded from memory decodes the same tokens as from its file, and
 * its weight image is the one already resident (nothing streams again). */
static void load_from_memory(void **state)
{
    fixture *f = *state;
    FILE *fp = fopen(MODEL, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *buf = malloc((size_t)len);
    assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
    fclose(fp);

    int a[64], b[64], na, nb;
    tsr_gen_opts g = { .max_tokens = 30, .ignore_stop = 1 };
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, NULL), TSR_OK);
    na = seq_history(s, a, 64);
    tsr_seq_close(s);

    tsr_traffic t0 = { 0 }, t1 = { 0 };
    tsr_device_traffic(f->dev, &t0);
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 4 };
    tsr_model *mm = NULL;
    assert_int_equal(tsr_model_load_memory(f->dev, buf, (size_t)len, &o, &mm), TSR_OK);
    tsr_device_traffic(f->dev, &t1);
    assert_int_equal(t1.loads, t0.loads);
    assert_int_equal(tsr_seq_open(mm, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, NULL), TSR_OK);
    nb = seq_history(s, b, 64);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na * sizeof(int));
    tsr_seq_close(s);
    tsr_model_close(mm);
    /* A truncated buffer is refused with a format error. */
    assert_int_equal(tsr_model_load_memory(f->dev, buf, (size_t)len - 1, &o, &mm),
                     TSR_ERR_FORMAT);
    assert_non_null(strstr(tsr_device_errmsg(f->dev), "truncated"));
    free(buf);
}

/* tessera info's on-chip figures are the emulator's own fit figures. */
static void inspect_onchip_bytes_match_fit(void **state)
{
    (void)state;
    const char *files[] = { MODEL, SHARED_MODEL("stories260K-q4_0.gguf") };
    for (int k = 0; k < 2; k++) {
        tsr_file_info fi = { 0 };
        char err[256];
        assert_int_equal(tsr_file_inspect(files[k], &fi, err, sizeof err), TSR_OK);
        tsr_device *dev = NULL;
        assert_int_equal(tsr_device_open("emu", &dev), TSR_OK);
        for (int f32 = 0; f32 <= 1; f32++) {
            tsr_model_opts o = { .tokenizer = TOK, .weights_f32 = f32, .n_seqs = 1,
                                 .weights = TSR_WEIGHTS_Q8, .group_size = 32 };
            uint64_t need = 0, have = 0;
            assert_int_equal(tsr_model_fit(dev, files[k], &o, &need, &have), TSR_OK);
            assert_int_equal(need, f32 ? fi.onchip_f32_bytes : fi.onchip_q8_bytes);
        }
        /* and the default placement: the file's own formats */
        tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 1 };
        uint64_t need = 0;
        assert_int_equal(tsr_model_fit(dev, files[k], &o, &need, NULL), TSR_OK);
        assert_int_equal(need, fi.onchip_bytes);
        assert_string_equal(fi.onchip_weights, k ? "Q4_0 (embedding, wq/wk/wv, wo, w1/w3) + "
                                                   "Q8_0 group 32 (w2, classifier)"
                                                 : "Q8_0 group 32");
        tsr_device_close(dev);
        if (k == 1) {
            assert_string_equal(fi.architecture, "llama");
            assert_int_equal(fi.tensors_f32, 11);
            assert_int_equal(fi.tensors_f16, 5);
            assert_int_equal(fi.tensors_q8_0, 1);
            assert_int_equal(fi.tensors_q4_0, 31);
        }
    }
}

/* ------------------------------------- the callback: its stop, its text --- */

/* What one generate's callback saw: its tokens and their text. */
typedef struct stop_rec {
    tsr_seq *seq[2];
    int      at;          /* stop at this token of seq[0]              */
    int      cancel;      /* 1: stop by tsr_seq_cancel, 0: by returning 1 */
    int      n[2];        /* tokens each sequence's callback saw        */
    int      tok[2][64];
    char     text[2][1024];
    size_t   len[2];
} stop_rec;

static int stop_cb(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    stop_rec *r = user;
    int k = s == r->seq[0] ? 0 : 1;
    assert_non_null(text);
    assert_true(r->n[k] < 64 && r->len[k] + len < sizeof r->text[k]);
    r->tok[k][r->n[k]++] = token;
    memcpy(r->text[k] + r->len[k], text, len);
    r->len[k] += len;
    if (k != 0 || r->n[0] != r->at) return 0;
    if (!r->cancel) return 1;
    tsr_seq_cancel(s);
    return 0;
}

/* Generate (alone, or batched with a second sequence that runs on) and
 * stop seq 0 at token at, by returning 1 or by a cancel from the
 * callback: r gets what the callback saw; the history's growth and the
 * counts are checked equal to it. */
static void stop_run(const char *spec, int batch, int at, int cancel, stop_rec *r)
{
    tsr_device *dev = NULL;
    tsr_model *m = NULL;
    assert_int_equal(tsr_device_open(spec, &dev), TSR_OK);
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 2 };
    assert_int_equal(tsr_model_load(dev, MODEL, &o, &m), TSR_OK);
    memset(r, 0, sizeof *r);
    r->at = at;
    r->cancel = cancel;
    int len0[2];
    for (int k = 0; k < 1 + batch; k++) {
        assert_int_equal(tsr_seq_open(m, &r->seq[k]), TSR_OK);
        assert_int_equal(tsr_seq_append_text(r->seq[k], k ? "The cat" : "Once upon a time"),
                         TSR_OK);
        len0[k] = tsr_seq_length(r->seq[k]);
    }
    tsr_gen_opts g[2] = { { .max_tokens = 40, .ignore_stop = 1 },
                          { .max_tokens = 30, .ignore_stop = 1 } };
    int got[2] = { -1, -1 };
    if (batch)
        assert_int_equal(tsr_seq_generate_batch(r->seq, 2, g, stop_cb, r, got), TSR_OK);
    else
        assert_int_equal(tsr_seq_generate(r->seq[0], g, stop_cb, r, got), TSR_OK);
    for (int k = 0; k < 1 + batch; k++) {
        const int *hist;
        int n;
        assert_int_equal(tsr_seq_tokens(r->seq[k], &hist, &n), TSR_OK);
        assert_int_equal(got[k], r->n[k]);            /* counted = seen        */
        assert_int_equal(n - len0[k], r->n[k]);       /* history = seen        */
        assert_memory_equal(hist + len0[k], r->tok[k], (size_t)r->n[k] * sizeof(int));
        assert_int_equal(tsr_seq_was_cancelled(r->seq[k]), k == 0 && r->cancel);
        tsr_seq_close(r->seq[k]);
    }
    assert_int_equal(r->n[0], at);                    /* nothing past its stop */
    if (batch) assert_int_equal(r->n[1], 30);         /* the other runs on     */
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* A cancel from the callback stops exactly where returning non-zero does:
 * the token the callback was given is the last, in the count, the history
 * and the callbacks, alone or in a batch, on one device or split over two
 * (where the device runs ahead of the host), at the first token or later. */
static void cancel_in_callback_is_a_stop(void **state)
{
    (void)state;
    static const char *const specs[] = { "emu:pes=4,threads=1", "emu:pes=4,threads=2",
                                         "emu:pes=4,threads=1,cards=2" };
    static const int ats[] = { 1, 4, 17 };
    for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++)
        for (int batch = 0; batch <= 1; batch++)
            for (size_t a = 0; a < sizeof ats / sizeof ats[0]; a++) {
                stop_rec ret, can;
                stop_run(specs[c], batch, ats[a], 0, &ret);
                stop_run(specs[c], batch, ats[a], 1, &can);
                assert_int_equal(can.n[0], ret.n[0]);
                assert_memory_equal(can.tok[0], ret.tok[0], (size_t)ret.n[0] * sizeof(int));
            }
}

/* The callback's text: the pieces, joined, are the reference's greedy
 * text after the prompt, and each is what tsr_model_token_text gives. */
static void callback_text_is_the_text(void **state)
{
    fixture *f = *state;
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(f->m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    stop_rec r = { .seq = { s }, .at = 40 };
    tsr_gen_opts g = { .max_tokens = 40 };
    assert_int_equal(tsr_seq_generate(s, &g, stop_cb, &r, NULL), TSR_OK);
    r.text[0][r.len[0]] = '\0';
    char ref[4096] = "";
    FILE *fp = fopen(SHARED_REF("stories260K_once_upon_a_time.txt"), "r");
    assert_non_null(fp);
    size_t nref = fread(ref, 1, sizeof ref - 1, fp);
    fclose(fp);
    ref[nref] = '\0';
    const char *prompt = "Once upon a time";
    assert_memory_equal(ref, prompt, strlen(prompt));
    assert_true(r.len[0] > 100);
    print_message("40 tokens, %zu bytes of text: %.60s...\n", r.len[0], r.text[0]);
    assert_memory_equal(r.text[0], ref + strlen(prompt), r.len[0]);
    const int *hist;
    int n;
    assert_int_equal(tsr_seq_tokens(s, &hist, &n), TSR_OK);
    size_t at = 0;
    for (int i = n - r.n[0]; i < n; i++) {
        size_t len = 0;
        const char *t = tsr_model_token_text(f->m, hist[i - 1], hist[i], &len);
        assert_non_null(t);
        assert_memory_equal(r.text[0] + at, t, len);
        at += len;
    }
    assert_int_equal(at, r.len[0]);
    tsr_seq_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(steering_equals_uninterrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(interleaved_sequences_do_not_disturb, setup, teardown),
        cmocka_unit_test_setup_teardown(truncate_then_regenerate, setup, teardown),
        cmocka_unit_test_setup_teardown(sampler_rng_across_truncate, setup, teardown),
        cmocka_unit_test_setup_teardown(misuse_returns_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(load_from_memory, setup, teardown),
        cmocka_unit_test(replaced_model_is_stale),
        cmocka_unit_test(inspect_onchip_bytes_match_fit),
        cmocka_unit_test(cancel_long_decode_15m),
        cmocka_unit_test(cancel_in_callback_is_a_stop),
        cmocka_unit_test_setup_teardown(callback_text_is_the_text, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
