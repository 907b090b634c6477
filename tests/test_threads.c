/*
 * test_threads.c - the calls tessera.h says are thread-safe, used from
 * several threads at once: `make test TSAN=1` runs this under
 * ThreadSanitizer.  Device open in many threads (the spec parser shared
 * strtok state), two sequences of one model generating at once (the
 * device's lock serialises them), cancel from another thread and from a
 * signal handler, two devices in two threads, per-thread error records,
 * and reading calls while another thread generates.  Every thread's
 * tokens must equal a single-threaded run's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera.h"
#include "test_util.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")
#define SPEC  "emu:pes=4,threads=1"
#define N_GEN 40
#define MAX_HIST 64

static const char *const prompts[2] = { "Once upon a time", "The little dog" };

static tsr_model *load(tsr_device *dev, int n_seqs)
{
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = n_seqs };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &o, &m), TSR_OK);
    return m;
}

/* Greedy history of prompt + N_GEN tokens on m; returns its length. */
static int run_one(tsr_model *m, const char *prompt, int *hist)
{
    tsr_seq *s = NULL;
    if (tsr_seq_open(m, &s) != TSR_OK) return -1;
    tsr_gen_opts g = { .max_tokens = N_GEN, .ignore_stop = 1 };
    int n = -1;
    const int *t;
    if (tsr_seq_append_text(s, prompt) == TSR_OK &&
        tsr_seq_generate(s, &g, NULL, NULL, NULL) == TSR_OK &&
        tsr_seq_tokens(s, &t, &n) == TSR_OK && n <= MAX_HIST)
        memcpy(hist, t, (size_t)n * sizeof *t);
    else
        n = -1;
    tsr_seq_close(s);
    return n;
}

/* The reference: each prompt alone, one thread. */
static int ref[2][MAX_HIST], n_ref[2];

static int setup_ref(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    if (tsr_device_open(SPEC, &dev) != TSR_OK) return -1;
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *m = NULL;
    if (tsr_model_load(dev, MODEL, &o, &m) != TSR_OK) return -1;
    for (int k = 0; k < 2; k++)
        if ((n_ref[k] = run_one(m, prompts[k], ref[k])) < N_GEN + 2) return -1;
    tsr_model_close(m);
    tsr_device_close(dev);
    return 0;
}

/* ---------------------------------------------------------- open --- */

typedef struct open_job { int k, ok; } open_job;

static void *open_many(void *arg)
{
    open_job *j = arg;
    static const struct { const char *spec; int rc; const char *want; } cases[] = {
        { "emu:pes=1,threads=1,part=u55c", TSR_OK, "" },
        { "emu:pes=3,pes=4", TSR_ERR_ARG, "pes given twice" },
        { "emu:part=u9000,pes=1", TSR_ERR_ARG, "unknown part 'u9000'" },
        { "emu:pes=1,simd=0,threads=1", TSR_OK, "" },
        { "emu:pes=1,simd=avx3", TSR_ERR_ARG, "simd=avx3: 0 (the kernel loops), 1 (this CPU's best" },
        { "emu:frob=1,pes=1", TSR_ERR_ARG, "unknown key 'frob'" },
        { "emu:pes=1,threads=1,xclbin=/x", TSR_ERR_ARG, "xclbin= is for the xrt backend" },
    };
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    j->ok = 1;
    for (int i = 0; i < 30; i++) {
        int c = (j->k + i) % nc;
        tsr_device *dev = NULL;
        int rc = tsr_device_open(cases[c].spec, &dev);
        if (rc != cases[c].rc || !strstr(tsr_device_errmsg(dev), cases[c].want) ||
            tsr_errcode(dev) != rc)
            j->ok = 0;
        tsr_device_close(dev);
    }
    return NULL;
}

/* tsr_device_open is thread-safe: 6 threads opening different specs at
 * once each get their own result and message. */
static void open_in_many_threads(void **state)
{
    (void)state;
    pthread_t th[6];
    open_job jobs[6];
    for (int k = 0; k < 6; k++) {
        jobs[k] = (open_job){ .k = k };
        assert_int_equal(pthread_create(&th[k], NULL, open_many, &jobs[k]), 0);
    }
    for (int k = 0; k < 6; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(jobs[k].ok, 1);
    }
}

/* ------------------------------------------------ one model, two seqs --- */

typedef struct gen_job {
    tsr_model  *m;
    int         k;
    int         hist[MAX_HIST], n;
} gen_job;

static void *gen_thread(void *arg)
{
    gen_job *j = arg;
    j->n = run_one(j->m, prompts[j->k], j->hist);
    return NULL;
}

/* Two threads generating on two sequences of one model at once: the
 * device's lock makes them take turns, and each gets its own tokens. */
static void two_sequences_at_once(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(SPEC, &dev), TSR_OK);
    tsr_model *m = load(dev, 2);
    for (int round = 0; round < 3; round++) {
        pthread_t th[2];
        gen_job jobs[2];
        for (int k = 0; k < 2; k++) {
            jobs[k] = (gen_job){ .m = m, .k = k };
            assert_int_equal(pthread_create(&th[k], NULL, gen_thread, &jobs[k]), 0);
        }
        for (int k = 0; k < 2; k++) {
            pthread_join(th[k], NULL);
            assert_int_equal(jobs[k].n, n_ref[k]);
            assert_memory_equal(jobs[k].hist, ref[k], (size_t)n_ref[k] * sizeof(int));
        }
    }
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* -------------------------------------------------------------- cancel --- */

typedef struct cancel_job {
    tsr_seq  *s;
    pthread_t gen;          /* the generating thread (for the signal)      */
    int       seen;         /* atomic: tokens the callback has seen        */
    int       by_signal;    /* 1: pthread_kill(gen, SIGUSR1), 0: cancel    */
    int       slow_us;      /* the callback's time per token, us           */
    int       at_cancel;    /* atomic: seen as the cancel was made         */
} cancel_job;

static int count(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    (void)token;
    cancel_job *c = user;
    if (c->slow_us) usleep((useconds_t)c->slow_us);
    __atomic_add_fetch(&c->seen, 1, __ATOMIC_RELEASE);
    return 0;
}

static void *canceller(void *arg)
{
    cancel_job *c = arg;
    while (__atomic_load_n(&c->seen, __ATOMIC_ACQUIRE) < 5) usleep(100);
    __atomic_store_n(&c->at_cancel, __atomic_load_n(&c->seen, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELEASE);
    if (c->by_signal) pthread_kill(c->gen, SIGUSR1);
    else tsr_seq_cancel(c->s);
    return NULL;
}

static tsr_seq *volatile sig_seq;   /* the sequence SIGUSR1 cancels */
static volatile sig_atomic_t sig_saw_cancelled = -1;

static void on_usr1(int sig)
{
    (void)sig;
    tsr_seq *s = sig_seq;
    if (!s) return;
    tsr_seq_cancel(s);                              /* async-signal-safe */
    sig_saw_cancelled = tsr_seq_was_cancelled(s);   /* so is this        */
}

/* A long generate stopped from another thread, then from a signal handler
 * run on the generating thread: each returns OK, cancelled, early. */
static void cancel_from_thread_and_signal(void **state)
{
    (void)state;
    struct sigaction sa = { .sa_handler = on_usr1 }, old;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(SPEC, &dev), TSR_OK);
    tsr_model *m = load(dev, 1);
    for (int by_signal = 0; by_signal <= 1; by_signal++) {
        tsr_seq *s = NULL;
        assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
        assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
        cancel_job c = { .s = s, .gen = pthread_self(), .by_signal = by_signal };
        sig_seq = s;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, canceller, &c), 0);
        tsr_gen_opts g = { .max_tokens = 500, .ignore_stop = 1 };
        int got = 0;
        assert_int_equal(tsr_seq_generate(s, &g, count, &c, &got), TSR_OK);
        pthread_join(th, NULL);
        sig_seq = NULL;
        print_message("cancel by %s after 5 tokens seen: %d generated\n",
                      by_signal ? "signal" : "thread", got);
        assert_int_equal(tsr_seq_was_cancelled(s), 1);
        assert_true(got >= 5 && got < 500);
        if (by_signal) assert_int_equal(sig_saw_cancelled, 0);   /* the earlier state */
        tsr_seq_close(s);
    }
    tsr_model_close(m);
    tsr_device_close(dev);
    sigaction(SIGUSR1, &old, NULL);
}

/* A callback slower than the device (2 ms a token: the device samples
 * ahead and the tokens reach the host in one burst): a cancel from another
 * thread after 5 tokens still stops the stream within one token, the
 * history holds only what the callback saw, and the next generate goes on
 * from there with the solo run's tokens (the device was rewound). */
static void cancel_with_a_slow_callback(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(SPEC, &dev), TSR_OK);
    tsr_model *m = load(dev, 1);
    for (int round = 0; round < 3; round++) {
        tsr_seq *s = NULL;
        assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
        assert_int_equal(tsr_seq_append_text(s, prompts[0]), TSR_OK);
        const int *t;
        int n0 = 0, n = 0, got = -1;
        assert_int_equal(tsr_seq_tokens(s, &t, &n0), TSR_OK);
        cancel_job j = { .s = s, .slow_us = 2000, .at_cancel = -1 };
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, canceller, &j), 0);
        tsr_gen_opts g = { .max_tokens = 200, .ignore_stop = 1 };
        assert_int_equal(tsr_seq_generate(s, &g, count, &j, &got), TSR_OK);
        pthread_join(th, NULL);
        int at = __atomic_load_n(&j.at_cancel, __ATOMIC_ACQUIRE);
        print_message("slow callback, cancel after %d tokens seen: %d generated\n", at, got);
        assert_int_equal(tsr_seq_was_cancelled(s), 1);
        assert_true(at >= 5);
        assert_true(got >= at && got <= at + 1);   /* within one token */
        assert_int_equal(got, __atomic_load_n(&j.seen, __ATOMIC_ACQUIRE));
        assert_int_equal(tsr_seq_tokens(s, &t, &n), TSR_OK);
        assert_int_equal(n, n0 + got);
        /* 3 more tokens continue the solo run: the device's KV cache and
         * pending token were rewound to what the callback saw */
        g.max_tokens = 3;
        assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
        assert_int_equal(got, 3);
        assert_int_equal(tsr_seq_was_cancelled(s), 0);
        assert_int_equal(tsr_seq_tokens(s, &t, &n), TSR_OK);
        assert_true(n <= n_ref[0]);
        assert_memory_equal(t, ref[0], (size_t)n * sizeof *t);
        tsr_seq_close(s);
    }
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* A cancel from another thread before generate starts (while this one
 * appends, or just before): kept, so the generate stops at once. */
static void *cancel_now(void *arg)
{
    tsr_seq_cancel(arg);
    return NULL;
}

static void cancel_before_generate_is_kept(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(SPEC, &dev), TSR_OK);
    tsr_model *m = load(dev, 1);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_now, s), 0);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    pthread_join(th, NULL);
    tsr_gen_opts g = { .max_tokens = 20, .ignore_stop = 1 };
    int got = -1;
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 0);
    assert_int_equal(tsr_seq_was_cancelled(s), 1);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
}

/* ------------------------------------------------------ two devices --- */

typedef struct dev_job { int k, n, hist[MAX_HIST], err_ok; } dev_job;

static void *own_device(void *arg)
{
    dev_job *j = arg;
    tsr_device *dev = NULL;
    j->n = -1;
    if (tsr_device_open(SPEC, &dev) != TSR_OK) { tsr_device_close(dev); return NULL; }
    /* a failure of this thread's own, with its own message */
    char bad[64];
    snprintf(bad, sizeof bad, "/nonexistent/model-%d.bin", j->k);
    tsr_model_opts o = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *m = NULL;
    j->err_ok = tsr_model_load(dev, bad, &o, &m) == TSR_ERR_IO &&
                strstr(tsr_device_errmsg(dev), bad) != NULL;
    if (tsr_model_load(dev, MODEL, &o, &m) == TSR_OK) {
        j->n = run_one(m, prompts[j->k], j->hist);
        tsr_model_close(m);
    }
    j->err_ok = j->err_ok && strstr(tsr_device_errmsg(dev), bad) != NULL;
    tsr_device_close(dev);
    return NULL;
}

/* Two devices in two threads never wait for each other and give the
 * single-threaded tokens. */
static void two_devices_two_threads(void **state)
{
    (void)state;
    pthread_t th[2];
    dev_job jobs[2];
    for (int k = 0; k < 2; k++) {
        jobs[k] = (dev_job){ .k = k };
        assert_int_equal(pthread_create(&th[k], NULL, own_device, &jobs[k]), 0);
    }
    for (int k = 0; k < 2; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(jobs[k].err_ok, 1);
        assert_int_equal(jobs[k].n, n_ref[k]);
        assert_memory_equal(jobs[k].hist, ref[k], (size_t)n_ref[k] * sizeof(int));
    }
}

/* -------------------------------------------- reads during a generate --- */

typedef struct reader {
    tsr_device *dev;
    tsr_seq    *other;   /* a sequence nobody else touches */
    tsr_model  *m;
    int         len;     /* its length                     */
    int         stop, ok, rounds;
} reader;

static void *read_while_generating(void *arg)
{
    reader *r = arg;
    r->ok = 1;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        tsr_traffic t = { 0 };
        tsr_seq_stats st = { 0 };
        tsr_model_info info = { 0 };
        const int *toks;
        int n;
        if (tsr_device_traffic(r->dev, &t) != TSR_OK ||
            tsr_seq_get_stats(r->other, &st) != TSR_OK ||
            tsr_model_get_info(r->m, &info) != TSR_OK ||
            tsr_seq_tokens(r->other, &toks, &n) != TSR_OK || n != r->len ||
            tsr_seq_length(r->other) != r->len)
            r->ok = 0;
        size_t len;
        if (!tsr_model_token_text(r->m, 1, 300, &len)) r->ok = 0;
        r->rounds++;
    }
    return NULL;
}

static void reads_while_another_thread_generates(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open(SPEC, &dev), TSR_OK);
    tsr_model *m = load(dev, 2);
    reader r = { .dev = dev, .m = m };
    assert_int_equal(tsr_seq_open(m, &r.other), TSR_OK);
    assert_int_equal(tsr_seq_append_text(r.other, "A"), TSR_OK);
    r.len = tsr_seq_length(r.other);
    assert_true(r.len >= 2);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_while_generating, &r), 0);
    int hist[MAX_HIST];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(run_one(m, prompts[0], hist), n_ref[0]);
        assert_memory_equal(hist, ref[0], (size_t)n_ref[0] * sizeof(int));
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    assert_int_equal(r.ok, 1);
    assert_true(r.rounds > 0);
    tsr_seq_close(r.other);
    tsr_model_close(m);
    tsr_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_in_many_threads),
        cmocka_unit_test(two_sequences_at_once),
        cmocka_unit_test(cancel_from_thread_and_signal),
        cmocka_unit_test(cancel_with_a_slow_callback),
        cmocka_unit_test(cancel_before_generate_is_kept),
        cmocka_unit_test(two_devices_two_threads),
        cmocka_unit_test(reads_while_another_thread_generates),
    };
    return cmocka_run_group_tests(tests, setup_ref, NULL);
}
