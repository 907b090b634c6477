/*
 * test_batch.c - tsr_seq_generate_batch through the public API on the
 * emulator: several sequences decoded together, one pass over the weights
 * a step, each with its own prompt, sampler and stop rule.
 *
 *   batched = solo    four sequences of different prompt lengths and
 *                     samplers (greedy, top-p, multinomial, different
 *                     seeds; the multinomial story ends at BOS/EOS while
 *                     the others go on) get the tokens each gets alone, on
 *                     the device's whole batch (one command) and on a
 *                     device stepping at most 3 at a time
 *   turns             four sequences on a device stepping two take turns
 *                     a pass each: all four have a token after two passes
 *   stop one          a sequence cancelled from its own callback, from
 *                     another thread, or stopped by its callback's return
 *                     value stops; the others' tokens are their solo ones,
 *                     and the stopped one continues from what it kept
 *   logits owner      tsr_seq_read_logits gives a sequence's own logits,
 *                     bit-identical to its solo run's, and refuses them
 *                     (TSR_ERR_STATE) once another sequence's pass (of a
 *                     prompt as long: the slot decides, not the position)
 *                     or prefill, a truncate or a reset has come since;
 *                     after a batch only the first sequence still going
 *                     at its last step has them
 *   refusals          every misuse returns its documented code, with a
 *                     message naming the sequence, and changes nothing; a
 *                     cancel before the call stops only its sequence;
 *                     batch= outside 1..8 in a device spec is refused
 *
 * Model: stories260K with tok512 (../shared/models).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera.h"
#include "greedy.h"
#include "test_util.h"
#include "tsr_emu.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")

enum { NSEQ = 4, CAP = 600 };

/* Four prompts of different lengths, and four samplers. */
static const char *const PROMPTS[NSEQ] = {
    "Once upon a time", "The little dog", "Tom and Lily went to the park. They saw a big",
    "One day",
};

static tsr_gen_opts sampler(int k, int max_tokens)
{
    tsr_gen_opts o = { .max_tokens = max_tokens };
    switch (k) {
    case 0: break;                                                     /* greedy, stops */
    case 1: o.temperature = 0.8f; o.top_p = 0.9f; o.seed = 11; o.ignore_stop = 1; break;
    case 2: o.temperature = 1.0f; o.seed = 12345; break;               /* multinomial, stops */
    default: o.temperature = 1.2f; o.top_p = 0.5f; o.seed = 7; o.ignore_stop = 1; break;
    }
    return o;
}

static tsr_device *open_dev(const char *spec, tsr_model **m)
{
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(spec, &dev), TSR_OK);
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 8 };
    int rc = tsr_model_load(dev, MODEL, &o, m);
    if (rc) fprintf(stderr, "load: %s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    return dev;
}

static tsr_seq *seq_with(tsr_model *m, const char *prompt)
{
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, prompt), TSR_OK);
    return s;
}

/* Each prompt alone with its sampler on a fresh sequence: the histories. */
static void solo_histories(tsr_model *m, int max_tokens, int want[NSEQ][CAP], int n_want[NSEQ])
{
    for (int k = 0; k < NSEQ; k++) {
        tsr_seq *s = seq_with(m, PROMPTS[k]);
        tsr_gen_opts o = sampler(k, max_tokens);
        assert_int_equal(tsr_seq_generate(s, &o, NULL, NULL, NULL), TSR_OK);
        n_want[k] = seq_history(s, want[k], CAP);
        tsr_seq_close(s);
    }
}

/* The value of the counter line "name value" in the kernel's counters. */
static uint64_t counter(tsr_device *dev, const char *name)
{
    static char text[1 << 16];
    assert_int_equal(tsr_device_kernel_counters(dev, text, sizeof text), TSR_OK);
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtoull(p + n + 1, NULL, 10);
    fail_msg("counter %s missing", name);
    return 0;
}

/* What the callback saw, per sequence, and what it does. */
typedef struct seen {
    tsr_seq *seq[NSEQ];
    int      tok[NSEQ][CAP];
    int      n[NSEQ];        /* atomic: the other thread reads it        */
    int      cancel_at[NSEQ];/* > 0: tsr_seq_cancel(itself) at that count */
    int      stop_at[NSEQ];  /* > 0: return 1 at that count              */
    int      order[64];      /* the sequences of the first 64 callbacks   */
    int      n_order;
} seen;

static int index_of(seen *w, const tsr_seq *s)
{
    for (int k = 0; k < NSEQ; k++)
        if (w->seq[k] == s) return k;
    fail_msg("callback for a sequence not in the batch");
    return -1;
}

static int record(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    seen *w = user;
    int k = index_of(w, s);
    int i = __atomic_load_n(&w->n[k], __ATOMIC_RELAXED);
    assert_true(i < CAP);
    w->tok[k][i] = token;
    __atomic_store_n(&w->n[k], i + 1, __ATOMIC_RELEASE);
    if (w->n_order < 64) w->order[w->n_order++] = k;
    if (w->cancel_at[k] && i + 1 == w->cancel_at[k]) tsr_seq_cancel(s);
    return w->stop_at[k] && i + 1 >= w->stop_at[k];
}

/* A batch's start: each prompt's solo history with its sampler (want,
 * n_want), then a fresh sequence per prompt in w (its callback record
 * cleared) and its sampler in o, each up to max_tokens. */
static void start_batch(tsr_model *m, int max_tokens, int want[NSEQ][CAP], int n_want[NSEQ],
                        seen *w, tsr_gen_opts o[NSEQ])
{
    solo_histories(m, max_tokens, want, n_want);
    memset(w, 0, sizeof *w);
    for (int k = 0; k < NSEQ; k++) {
        w->seq[k] = seq_with(m, PROMPTS[k]);
        o[k] = sampler(k, max_tokens);
    }
}

/* Close w's sequences, then m and dev. */
static void finish_batch(seen *w, tsr_model *m, tsr_device *dev)
{
    for (int k = 0; k < NSEQ; k++) tsr_seq_close(w->seq[k]);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* ------------------------------------------------------------- tests --- */

/* Four sequences in one call get their solo tokens, also streamed to the
 * callback one by one; on the emulator's batch limit (8) the call is one
 * DECODE_BATCH whose passes feed one item a token, and with batch=3 the
 * four take turns (a DECODE_BATCH of three a pass) while all four go.  Then both again
 * kept to an AVX2-only CPU's paths (simd=avx2): a pass of 4 or 3 items
 * takes the AVX2 GEMM, a solo run the one-item rows. */
static void batched_equals_solo(void **state)
{
    (void)state;
    static const char *const specs[] = { "emu", "emu:batch=3", "emu:simd=avx2",
                                         "emu:simd=avx2,batch=3" };
    for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
        tsr_model *m = NULL;
        tsr_device *dev = open_dev(specs[c], &m);
        static int want[NSEQ][CAP], got_h[CAP];
        int n_want[NSEQ];
        static seen w;
        tsr_gen_opts o[NSEQ];
        start_batch(m, 450, want, n_want, &w, o);
        uint64_t batches = counter(dev, "runs.decode_batch"), decodes = counter(dev, "runs.decode");
        uint64_t fed = counter(dev, "tokens_fed");
        tsr_traffic t0 = { 0 }, t1 = { 0 };
        assert_int_equal(tsr_device_traffic(dev, &t0), TSR_OK);
        int n_gen[NSEQ] = { -1, -1, -1, -1 };
        assert_int_equal(tsr_seq_generate_batch(w.seq, NSEQ, o, record, &w, n_gen), TSR_OK);
        assert_int_equal(tsr_device_traffic(dev, &t1), TSR_OK);
        int total = 0, stopped_early = 0;
        uint64_t h2d = 0, d2h = 0;
        for (int k = 0; k < NSEQ; k++) {
            int n = seq_history(w.seq[k], got_h, CAP);
            assert_int_equal(n, n_want[k]);
            assert_memory_equal(got_h, want[k], (size_t)n * sizeof(int));
            /* the callback saw exactly the generated tail, in order */
            assert_int_equal(w.n[k], n_gen[k]);
            assert_memory_equal(w.tok[k], got_h + n - n_gen[k], (size_t)n_gen[k] * sizeof(int));
            assert_int_equal(tsr_seq_was_cancelled(w.seq[k]), 0);
            total += n_gen[k];
            stopped_early += n_gen[k] < 450;
            tsr_seq_stats st = { 0 };
            assert_int_equal(tsr_seq_get_stats(w.seq[k], &st), TSR_OK);
            assert_int_equal(st.decode_tokens, (uint64_t)n_gen[k]);
            assert_true(st.decode_tok_s > 0.0);
            h2d += st.decode_h2d;
            d2h += st.decode_d2h;
        }
        /* the samplers that ignore BOS/EOS run to 450 */
        assert_int_equal(n_gen[1], 450);
        assert_int_equal(n_gen[3], 450);
        print_message("%s: %d, %d, %d, %d tokens (%d stopped at BOS/EOS)\n", specs[c], n_gen[0],
                      n_gen[1], n_gen[2], n_gen[3], stopped_early);
        /* the multinomial story ends (BOS/EOS) while the others go on */
        assert_true(n_gen[2] < 450);
        assert_true(w.tok[2][n_gen[2] - 1] == 1 || w.tok[2][n_gen[2] - 1] == 2);
        /* the device's decode traffic, shared out: the parts add up */
        assert_int_equal(h2d, t1.decode_h2d - t0.decode_h2d);
        assert_int_equal(d2h, t1.decode_d2h - t0.decode_d2h);
        /* one forward-pass item per token, in the commands the limit allows */
        assert_int_equal(counter(dev, "tokens_fed") - fed, (uint64_t)total);
        /* the whole batch: one command; batch=3: the four take turns, three
         * a pass, until the multinomial story ends, then one command for
         * the three left */
        if (c % 2 == 0) assert_int_equal(counter(dev, "runs.decode_batch") - batches, 1);
        else assert_true(counter(dev, "runs.decode_batch") - batches > (uint64_t)n_gen[2]);
        assert_int_equal(counter(dev, "runs.decode") - decodes, 0);
        finish_batch(&w, m, dev);
    }
    assert_int_equal(tsr_emu_vec_limit, TSR_EMU_VEC_AVX2);   /* simd=avx2 took hold */
    tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
}

/* Four sequences on a device that steps two at a time (batch=2) take
 * turns a pass each: the first four tokens the callback sees are one of
 * each (passes 1 and 2), and every sequence's tokens are still its solo
 * ones.  (Before turns, the first two ran to their ends before the others
 * began.) */
static void four_take_turns_on_two(void **state)
{
    (void)state;
    tsr_model *m = NULL;
    tsr_device *dev = open_dev("emu:batch=2", &m);
    static int want[NSEQ][CAP], got_h[CAP];
    int n_want[NSEQ];
    static seen w;
    tsr_gen_opts o[NSEQ];
    start_batch(m, 40, want, n_want, &w, o);
    int n_gen[NSEQ] = { -1, -1, -1, -1 };
    assert_int_equal(tsr_seq_generate_batch(w.seq, NSEQ, o, record, &w, n_gen), TSR_OK);
    for (int k = 0; k < NSEQ; k++) {
        int n = seq_history(w.seq[k], got_h, CAP);
        assert_int_equal(n, n_want[k]);
        assert_memory_equal(got_h, want[k], (size_t)n * sizeof(int));
        assert_true(n_gen[k] >= 2);
    }
    assert_true(w.n_order >= 8);
    int first[NSEQ] = { 0 };
    for (int t = 0; t < 4; t++) first[w.order[t]]++;
    for (int k = 0; k < NSEQ; k++) assert_int_equal(first[k], 1);
    /* and the next pair of passes: each one's second token */
    for (int t = 4; t < 8; t++) first[w.order[t]]++;
    for (int k = 0; k < NSEQ; k++) assert_int_equal(first[k], 2);
    finish_batch(&w, m, dev);
}

/* Sequence 1 cancels itself from its callback at its 10th token, sequence
 * 0's callback returns non-zero at its 5th: sequence 1 keeps a prefix of
 * its solo tokens (the device may sample ahead of a cancel) and reports
 * the cancel, sequence 0 ends exactly at its 5th and continues from there
 * as its solo run does (greedy: no RNG the device may have run ahead),
 * the others get their solo tokens. */
static void stop_one_from_its_callback(void **state)
{
    (void)state;
    tsr_model *m = NULL;
    tsr_device *dev = open_dev("emu", &m);
    static int want[NSEQ][CAP], got_h[CAP];
    int n_want[NSEQ], plen[NSEQ];
    static seen w;
    tsr_gen_opts o[NSEQ];
    start_batch(m, 120, want, n_want, &w, o);
    w.cancel_at[1] = 10;
    w.stop_at[0] = 5;
    for (int k = 0; k < NSEQ; k++) plen[k] = tsr_seq_length(w.seq[k]);
    int n_gen[NSEQ];
    assert_int_equal(tsr_seq_generate_batch(w.seq, NSEQ, o, record, &w, n_gen), TSR_OK);
    for (int k = 0; k < NSEQ; k++) {
        int n = seq_history(w.seq[k], got_h, CAP);
        assert_int_equal(n, plen[k] + n_gen[k]);
        assert_true(n <= n_want[k]);
        assert_memory_equal(got_h, want[k], (size_t)n * sizeof(int));   /* a prefix, or all */
        assert_int_equal(tsr_seq_was_cancelled(w.seq[k]), k == 1);
        if (k >= 2) assert_int_equal(n, n_want[k]);
    }
    print_message("cancelled at its 10th token, sequence 1 kept %d\n", n_gen[1]);
    assert_true(n_gen[1] >= 10 && n_gen[1] < 120);
    assert_int_equal(n_gen[1], w.n[1]);   /* it saw every token it kept */
    assert_int_equal(n_gen[0], 5);
    assert_int_equal(w.n[0], 5);

    /* sequence 0 goes on from its 5th token: its solo run's next tokens */
    tsr_gen_opts more = sampler(0, 120 - 5);
    int got = 0;
    assert_int_equal(tsr_seq_generate(w.seq[0], &more, NULL, NULL, &got), TSR_OK);
    int n = seq_history(w.seq[0], got_h, CAP);
    assert_int_equal(n, n_want[0]);
    assert_memory_equal(got_h, want[0], (size_t)n * sizeof(int));
    finish_batch(&w, m, dev);
}

/* Another thread cancels sequence 1 once it has 8 tokens, in a long batch
 * (each up to the end of its context): sequence 1 stops early, the others
 * run to their solo ends. */
typedef struct canceller {
    seen    *w;
    int      at;   /* sequence 1's tokens when the cancel was issued */
} canceller;

static void *cancel_later(void *arg)
{
    canceller *c = arg;
    while (__atomic_load_n(&c->w->n[1], __ATOMIC_ACQUIRE) < 8) usleep(100);
    c->at = __atomic_load_n(&c->w->n[1], __ATOMIC_ACQUIRE);
    tsr_seq_cancel(c->w->seq[1]);
    return NULL;
}

static void cancel_one_from_another_thread(void **state)
{
    (void)state;
    tsr_model *m = NULL;
    tsr_device *dev = open_dev("emu", &m);
    static int want[NSEQ][CAP], got_h[CAP];
    int n_want[NSEQ];
    static seen w;
    tsr_gen_opts o[NSEQ];
    start_batch(m, 512, want, n_want, &w, o);
    canceller c = { .w = &w };
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_later, &c), 0);
    int n_gen[NSEQ];
    assert_int_equal(tsr_seq_generate_batch(w.seq, NSEQ, o, record, &w, n_gen), TSR_OK);
    pthread_join(th, NULL);
    print_message("cancel issued at sequence 1's token %d, it kept %d\n", c.at, n_gen[1]);
    for (int k = 0; k < NSEQ; k++) {
        int n = seq_history(w.seq[k], got_h, CAP);
        assert_true(n <= n_want[k]);
        assert_memory_equal(got_h, want[k], (size_t)n * sizeof(int));
        assert_int_equal(tsr_seq_was_cancelled(w.seq[k]), k == 1);
        if (k != 1) assert_int_equal(n, n_want[k]);
        else assert_true(n < n_want[k] && n_gen[1] >= c.at);
    }
    finish_batch(&w, m, dev);
}

/* From inside a callback, a batch is a call that drives the device. */
typedef struct nested {
    tsr_seq *seqs[2];
    int      rc;
} nested;

static int generate_inside(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    (void)token;
    nested *x = user;
    tsr_gen_opts o[2] = { { .max_tokens = 1 }, { .max_tokens = 1 } };
    x->rc = tsr_seq_generate_batch(x->seqs, 2, o, NULL, NULL, NULL);
    return 1;
}

/* Misuse returns its documented code, names the sequence, and changes no
 * sequence; a cancel before the call stops only its sequence. */
static void refusals(void **state)
{
    (void)state;
    tsr_model *m = NULL;
    tsr_device *dev = open_dev("emu", &m);
    tsr_seq *a = seq_with(m, "Once upon a time"), *b = seq_with(m, "The dog"), *empty = NULL;
    assert_int_equal(tsr_seq_open(m, &empty), TSR_OK);
    int la = tsr_seq_length(a), lb = tsr_seq_length(b);
    tsr_gen_opts o[9];
    for (int k = 0; k < 9; k++) o[k] = (tsr_gen_opts){ .max_tokens = 4 };
    int n_gen[9];

    tsr_seq *ab[2] = { a, b };
    assert_int_equal(tsr_seq_generate_batch(NULL, 2, o, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_int_equal(tsr_seq_generate_batch(ab, 0, o, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_int_equal(tsr_seq_generate_batch(ab, 2, NULL, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "NULL options"));
    tsr_seq *with_null[2] = { a, NULL };
    assert_int_equal(tsr_seq_generate_batch(with_null, 2, o, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "sequence 1 is NULL"));
    tsr_seq *twice[3] = { a, b, a };
    assert_int_equal(tsr_seq_generate_batch(twice, 3, o, NULL, NULL, n_gen), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "sequence 2 is sequence 0 again"));
    tsr_seq *nine[9] = { a, b, empty, a, b, empty, a, b, empty };
    assert_int_equal(tsr_seq_generate_batch(nine, 9, o, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "at most 8"));
    tsr_seq *with_empty[3] = { a, b, empty };
    assert_int_equal(tsr_seq_generate_batch(with_empty, 3, o, NULL, NULL, NULL), TSR_ERR_STATE);
    assert_non_null(strstr(tsr_device_errmsg(dev), "sequence 2: the sequence is empty"));
    o[1].temperature = NAN;
    assert_int_equal(tsr_seq_generate_batch(ab, 2, o, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "sequence 1: max_tokens, temperature"));
    o[1].temperature = 0.0f;
    o[1].max_tokens = -1;
    assert_int_equal(tsr_seq_generate_batch(ab, 2, o, NULL, NULL, NULL), TSR_ERR_ARG);
    o[1].max_tokens = 4;
    o[0].reserved[2] = 1;
    assert_int_equal(tsr_seq_generate_batch(ab, 2, o, NULL, NULL, NULL), TSR_ERR_UNSUPPORTED);
    assert_int_equal(tsr_errcode(dev), TSR_ERR_UNSUPPORTED);
    o[0].reserved[2] = 0;

    /* batch= in the device spec takes 1..8 */
    static const char *const bad_specs[] = { "emu:batch=0", "emu:batch=9", "emu:batch=x" };
    for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++) {
        tsr_device *bad = NULL;
        assert_int_equal(tsr_device_open(bad_specs[i], &bad), TSR_ERR_ARG);
        assert_non_null(strstr(tsr_device_errmsg(bad), "batch=")); /* what, and the range */
        assert_non_null(strstr(tsr_device_errmsg(bad), "1..8"));
        tsr_device_close(bad);
    }

    /* a sequence of another device */
    tsr_model *m2 = NULL;
    tsr_device *dev2 = open_dev("emu:pes=4", &m2);
    tsr_seq *other = seq_with(m2, "Once");
    tsr_seq *mixed[2] = { a, other };
    assert_int_equal(tsr_seq_generate_batch(mixed, 2, o, NULL, NULL, NULL), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "sequence 1 belongs to another device"));

    /* from inside a callback: STATE; the outer sequence stops at its token */
    nested x = { { a, b }, -1 };
    assert_int_equal(tsr_seq_generate(b, &o[0], generate_inside, &x, NULL), TSR_OK);
    assert_int_equal(x.rc, TSR_ERR_STATE);
    lb += 1;   /* b's one token */
    assert_int_equal(tsr_seq_length(b), lb);

    /* none of the refused calls touched a or b */
    assert_int_equal(tsr_seq_length(a), la);
    assert_int_equal(tsr_seq_length(b), lb);

    /* a cancel before the call: that sequence gets nothing, the other runs */
    tsr_seq_cancel(a);
    assert_int_equal(tsr_seq_generate_batch(ab, 2, o, NULL, NULL, n_gen), TSR_OK);
    assert_int_equal(n_gen[0], 0);
    assert_int_equal(n_gen[1], 4);
    assert_int_equal(tsr_seq_was_cancelled(a), 1);
    assert_int_equal(tsr_seq_was_cancelled(b), 0);
    assert_int_equal(tsr_seq_length(a), la);
    assert_int_equal(tsr_seq_length(b), lb + 4);
    /* the cancel was taken: the next batch runs both */
    assert_int_equal(tsr_seq_generate_batch(ab, 2, o, NULL, NULL, n_gen), TSR_OK);
    assert_int_equal(n_gen[0], 4);
    assert_int_equal(n_gen[1], 4);

    /* a sequence of a replaced model */
    tsr_model_opts f32 = { .tokenizer = TOK, .weights_f32 = 1, .n_seqs = 8 };
    tsr_model *mf = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &f32, &mf), TSR_OK);
    assert_int_equal(tsr_seq_generate_batch(ab, 2, o, NULL, NULL, NULL), TSR_ERR_STATE);
    assert_non_null(strstr(tsr_device_errmsg(dev), "no longer resident"));

    tsr_seq_close(other);
    tsr_model_close(m2);
    tsr_device_close(dev2);
    tsr_seq_close(a);
    tsr_seq_close(b);
    tsr_seq_close(empty);
    tsr_model_close(mf);
    tsr_model_close(m);
    tsr_device_close(dev);
}

enum { V = 512 };   /* tok512's vocab */

/* s's logits, which must be there. */
static void logits_of(tsr_seq *s, float *out)
{
    assert_int_equal(tsr_seq_read_logits(s, out, V), TSR_OK);
}

static void logits_owner(void **state)
{
    (void)state;
    static float a1[V], b1[V], got[V];
    tsr_gen_opts one = { .max_tokens = 1, .ignore_stop = 1 };
    tsr_model *m = NULL;
    tsr_device *dev = open_dev("emu", &m);
    /* each prompt's next-token logits alone */
    tsr_seq *a = seq_with(m, PROMPTS[0]), *b = seq_with(m, PROMPTS[2]);
    assert_int_equal(tsr_seq_generate(a, &one, NULL, NULL, NULL), TSR_OK);
    logits_of(a, a1);
    assert_int_equal(tsr_seq_generate(b, &one, NULL, NULL, NULL), TSR_OK);
    logits_of(b, b1);
    assert_true(memcmp(a1, b1, sizeof a1) != 0);
    /* b's pass came last: a's are gone, b's stay until b moves */
    assert_int_equal(tsr_seq_read_logits(a, got, V), TSR_ERR_STATE);
    logits_of(b, got);
    assert_memory_equal(got, b1, sizeof got);
    /* a truncate or a reset of their owner clears them */
    assert_int_equal(tsr_seq_truncate(b, tsr_seq_length(b) - 1), TSR_OK);
    assert_int_equal(tsr_seq_read_logits(b, got, V), TSR_ERR_STATE);
    assert_int_equal(tsr_seq_generate(b, &one, NULL, NULL, NULL), TSR_OK);
    logits_of(b, got);
    assert_memory_equal(got, b1, sizeof got);   /* the same position again */
    assert_int_equal(tsr_seq_reset(b), TSR_OK);
    assert_int_equal(tsr_seq_read_logits(b, got, V), TSR_ERR_STATE);

    /* two prompts of one length: the other's pass is at the same position,
     * so only the slot tells them apart; then another sequence's prefill */
    const int pa[3] = { 1, 300, 301 }, pb[3] = { 1, 400, 401 };
    tsr_seq *e = NULL, *f = NULL;
    assert_int_equal(tsr_seq_open(m, &e), TSR_OK);
    assert_int_equal(tsr_seq_open(m, &f), TSR_OK);
    assert_int_equal(tsr_seq_append_tokens(e, pa, 3), TSR_OK);
    assert_int_equal(tsr_seq_append_tokens(f, pb, 3), TSR_OK);
    assert_int_equal(tsr_seq_generate(e, &one, NULL, NULL, NULL), TSR_OK);
    logits_of(e, a1);
    assert_int_equal(tsr_seq_generate(f, &one, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(tsr_seq_length(e), tsr_seq_length(f));
    assert_int_equal(tsr_seq_read_logits(e, got, V), TSR_ERR_STATE);
    logits_of(f, got);
    assert_true(memcmp(got, a1, sizeof got) != 0);
    assert_int_equal(tsr_seq_append_tokens(e, pa, 1), TSR_OK);
    assert_int_equal(tsr_seq_read_logits(f, got, V), TSR_ERR_STATE);
    tsr_seq_close(e);
    tsr_seq_close(f);

    /* a batch of two fresh sequences, one token each: its one pass's first
     * sequence has the logits its solo run had; the other has none */
    tsr_seq *c = seq_with(m, PROMPTS[0]), *d = seq_with(m, PROMPTS[2]);
    tsr_seq *both[2] = { c, d };
    tsr_gen_opts o2[2] = { one, one };
    int n[2] = { 0, 0 };
    assert_int_equal(tsr_seq_generate_batch(both, 2, o2, NULL, NULL, n), TSR_OK);
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 1);
    logits_of(c, got);
    tsr_seq *c0 = seq_with(m, PROMPTS[0]);   /* c's solo run */
    assert_int_equal(tsr_seq_generate(c0, &one, NULL, NULL, NULL), TSR_OK);
    logits_of(c0, b1);
    assert_memory_equal(got, b1, sizeof got);
    assert_int_equal(tsr_seq_read_logits(d, got, V), TSR_ERR_STATE);
    tsr_seq_close(c0);
    /* c done after 1 more token, d after 3: d goes on alone, so its last
     * pass's logits are d's and c has none */
    tsr_gen_opts o13[2] = { one, one };
    o13[1].max_tokens = 3;
    assert_int_equal(tsr_seq_generate_batch(both, 2, o13, NULL, NULL, n), TSR_OK);
    assert_int_equal(n[0], 1);
    assert_int_equal(n[1], 3);
    assert_int_equal(tsr_seq_read_logits(c, got, V), TSR_ERR_STATE);
    logits_of(d, got);
    tsr_seq_close(a);
    tsr_seq_close(b);
    tsr_seq_close(c);
    tsr_seq_close(d);
    tsr_model_close(m);
    tsr_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batched_equals_solo),
        cmocka_unit_test(four_take_turns_on_two),
        cmocka_unit_test(stop_one_from_its_callback),
        cmocka_unit_test(cancel_one_from_another_thread),
        cmocka_unit_test(logits_owner),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
