/* sched.c - the scheduler: one thread that owns every call on the device.
 *
 * Calls on one device must not overlap (docs/driver-api.md), so the
 * connection threads never call the library; they queue commands on their
 * sessions (session.c) and this thread runs them, one device call at a
 * time, round robin over the sessions that have work:
 *
 *   start     open the session's sequence (first turn), tokenize the text,
 *             check the context, post STARTED
 *   prefill   append up to prefill_chunk tokens per call
 *   decode    every session that is generating, in one call
 *             (tsr_seq_generate_batch: each step of the device is one pass
 *             over the weights for all of them, continuous batching); a
 *             quantum of tokens each (--quantum) while other sessions have
 *             work; when the generating sessions are all the work, one
 *             call for all they asked for.  A call of greedy sequences
 *             only yields from the token callback as soon as anything
 *             changes (a new client, an interrupt, a hang-up): an exact
 *             stop, the driver rewinds what the device sampled past it
 *
 * So a new request's start and prefill chunks run between decode calls,
 * and wait at most one pass of them when the generating sequences are
 * greedy (a quantum when one samples).  A call has a fixed cost (a kernel
 * command; in the emulator a thread start and wake-ups), which the
 * quantum spreads over its tokens.  A sampled session yields only at
 * quantum boundaries, never by a rewind, so its random stream never skips
 * a token and a seed gives the text of tessera run -s SEED, busy or not
 * (an interrupted turn excepted); the batch gives every sequence its solo
 * run's tokens.  Interrupts, steers, resets and hang-ups stop any call at
 * their session's next token; during a prompt's prefill they wait for the
 * prompt to be in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_private.h"

/* ---------------------------------------------------------------- turns --- */

static srv_turn *turn_new(srv_cmd *c)
{
    srv_turn *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cmd = c;
    t->last = -1;
    textout_init(&t->out, c->gen.stop, c->gen.n_stop);
    return t;
}

static void turn_free(srv_turn *t)
{
    if (!t) return;
    srv_cmd_free(t->cmd);
    free(t->toks);
    textout_free(&t->out);
    free(t);
}

static void post(srv_sched *s, srv_session *ss, srv_event *e)
{
    pthread_mutex_lock(&s->mu);
    srv_post_locked(ss, e);
    pthread_mutex_unlock(&s->mu);
}

/* Post the event that ends a turn.  A one-shot (HTTP) session is done
 * with the device then: its slot is free before the client has the
 * answer, so the client's next request finds it free. */
static void conclude(srv_sched *s, srv_session *ss, srv_event *last)
{
    if (!ss->persistent) {
        tsr_seq_close(ss->seq);
        ss->seq = NULL;
    }
    pthread_mutex_lock(&s->mu);
    ss->active = NULL;
    ss->stop_gen = 0;
    ss->t_stop = 0;
    if (!ss->persistent) srv_detach_locked(s, ss);
    srv_post_locked(ss, last);
    pthread_mutex_unlock(&s->mu);
}

static void end_turn(srv_sched *s, srv_session *ss, srv_turn *t, srv_event *last)
{
    turn_free(t);
    conclude(s, ss, last);
}

/* The turn failed: an ERROR event ends it.  A device error may leave the
 * sequence half-written, so it is closed (a persistent session gets a new,
 * empty one with its next turn). */
static void fail_turn(srv_sched *s, srv_session *ss, srv_turn *t, int status, const char *code,
                      int close_seq, const char *fmt, const char *detail)
{
    srv_event *e = srv_event_new(SRV_EV_ERROR);
    if (e) {
        e->status = status;
        e->code = code;
        snprintf(e->message, sizeof e->message, fmt, detail);
    }
    if (close_seq) {
        tsr_seq_close(ss->seq);
        ss->seq = NULL;
    }
    end_turn(s, ss, t, e);
}

/* A device call failed.  TSR_ERR_DEVICE means the device is gone (a
 * card's transport, a stage's rank that died or stalled past its link's
 * deadline): 503 for this turn and, at once, for every later one, which
 * /health reports too, so a supervisor restarts the server.  Anything
 * else is this turn's own failure (500). */
static void device_failed(srv_sched *s, srv_session *ss, srv_turn *t, int rc)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s: %s", tsr_strerror(rc), tsr_device_errmsg(s->dev));
    if (rc != TSR_ERR_DEVICE) {
        fail_turn(s, ss, t, 500, "device_error", 1, "%s", msg);
        return;
    }
    if (!__atomic_load_n(&s->dev_lost, __ATOMIC_ACQUIRE)) {
        snprintf(s->dev_lost_msg, sizeof s->dev_lost_msg, "%s", msg);
        __atomic_store_n(&s->dev_lost, 1, __ATOMIC_RELEASE);
    }
    fail_turn(s, ss, t, 503, "device_unavailable", 1, "the device failed: %s", msg);
}

const char *srv_sched_device_lost(srv_sched *s)
{
    return __atomic_load_n(&s->dev_lost, __ATOMIC_ACQUIRE) ? s->dev_lost_msg : NULL;
}

static void finish(srv_sched *s, srv_session *ss, srv_turn *t, srv_reason why)
{
    const char *p;
    size_t n = textout_finish(&t->out, &p);
    if (n) {
        srv_event *tail = srv_event_new(SRV_EV_TOKEN);
        if (tail && (tail->text = strndup(p, n))) tail->len = n;
        post(s, ss, tail);
    }
    t->st.completion_tokens = t->generated;
    t->st.history_tokens = ss->seq ? tsr_seq_length(ss->seq) : 0;
    if (t->generated > 0) {
        t->st.ttft_ms = 1e3 * (t->t_first - t->cmd->t_recv);
        t->st.decode_ms = 1e3 * (t->t_last - t->t_first);
    }
    if (t->t_stop > 0) t->st.stop_ms = 1e3 * (srv_now() - t->t_stop);
    srv_event *done = srv_event_new(SRV_EV_DONE);
    if (done) {
        done->reason = why;
        done->stats = t->st;
        if ((done->text = strndup(t->out.buf ? t->out.buf : "", t->out.len))) done->len = t->out.len;
    }
    srv_metrics_turn(s->metrics, &t->st);
    end_turn(s, ss, t, done);
}

/* --------------------------------------------------------------- start --- */

static void start(srv_sched *s, srv_session *ss, srv_turn *t)
{
    t->t_start = srv_now();
    t->st.queue_ms = 1e3 * (t->t_start - t->cmd->t_recv);
    int rc;
    if (__atomic_load_n(&s->dev_lost, __ATOMIC_ACQUIRE)) {
        fail_turn(s, ss, t, 503, "device_unavailable", 0, "the device failed: %s",
                  s->dev_lost_msg);
        return;
    }
    if (!ss->seq && (rc = tsr_seq_open(s->model, &ss->seq)) != TSR_OK) {
        device_failed(s, ss, t, rc);
        return;
    }
    const char *text = t->cmd->text ? t->cmd->text : "";
    int len = tsr_seq_length(ss->seq), n = 0;
    size_t cap = strlen(text) + 3;   /* BOS, the dummy space, a token per byte */
    if (!(t->toks = malloc(cap * sizeof *t->toks))) {
        fail_turn(s, ss, t, 500, "server_error", 0, "%s", "out of memory");
        return;
    }
    if ((rc = tsr_model_tokenize(s->model, text, len == 0, t->toks, (int)cap, &n)) != TSR_OK) {
        fail_turn(s, ss, t, 400, "invalid_prompt", 0, "cannot tokenize the text: %s",
                  tsr_device_errmsg(s->dev));
        return;
    }
    if (len + n == 0) {   /* nothing to generate from: no BOS in this vocabulary */
        fail_turn(s, ss, t, 400, "invalid_prompt", 0, "%s",
                  "the prompt is empty and this model's vocabulary adds no BOS: give a prompt");
        return;
    }
    /* Every token but the newest takes a KV entry (tsr_seq_append_tokens). */
    if (len + n - 1 > s->info.seq_len) {
        char msg[200];
        if (len)
            snprintf(msg, sizeof msg, "%d more tokens after the session's %d pass the context "
                     "of %d tokens", n, len, s->info.seq_len);
        else
            snprintf(msg, sizeof msg, "the prompt is %d tokens (BOS included), more than the "
                     "context of %d tokens holds", n, s->info.seq_len);
        fail_turn(s, ss, t, 400, "context_length_exceeded", 0, "%s", msg);
        return;
    }
    t->n_toks = n;
    t->st.prompt_tokens = n;
    t->st.max_tokens_limit = t->cmd->gen.cut_to;
    srv_event *e = srv_event_new(SRV_EV_STARTED);
    if (e) e->stats.prompt_tokens = n;
    post(s, ss, e);
    t->phase = n > 0 ? SRV_PH_PREFILL : SRV_PH_DECODE;
}

/* ------------------------------------------------------------- prefill --- */

static void prefill(srv_sched *s, srv_session *ss, srv_turn *t)
{
    int k = t->n_toks - t->n_in;
    if (k > s->o.prefill_chunk) k = s->o.prefill_chunk;
    tsr_seq_stats a = { 0 }, b = { 0 };
    tsr_seq_get_stats(ss->seq, &a);
    int rc = tsr_seq_append_tokens(ss->seq, t->toks + t->n_in, k);
    tsr_seq_get_stats(ss->seq, &b);
    t->st.prefill_h2d += b.prefill_h2d - a.prefill_h2d;
    if (rc != TSR_OK) {
        device_failed(s, ss, t, rc);
        return;
    }
    t->n_in += k;
    if (t->n_in == t->n_toks) t->phase = SRV_PH_DECODE;
}

/* -------------------------------------------------------------- decode --- */

/* A session of a decode call. */
typedef struct tok_ctx {
    srv_session *ss;
    srv_turn    *t;
} tok_ctx;

/* One decode call: its sessions, and their sequences in the same order. */
typedef struct dec_call {
    srv_sched *s;
    int        n;
    tsr_seq   *seq[SRV_BATCH_MAX];
    tok_ctx    c[SRV_BATCH_MAX];
    int        before[SRV_BATCH_MAX];   /* (n,) the turn's tokens before the call */
    int        want[SRV_BATCH_MAX];     /* (n,) tokens asked of the call          */
    int        room[SRV_BATCH_MAX];     /* (n,) tokens the context still holds    */
    int        ended;                   /* a turn ended inside the call           */
} dec_call;

/* The token callback, on this thread inside tsr_seq_generate_batch, for
 * the sequence seq: text out to its client; non-zero to stop that
 * sequence exactly here (the others go on). */
static int on_token(tsr_seq *seq, int token, const char *text, size_t len, void *user)
{
    dec_call *d = user;
    int k = 0;
    while (k < d->n - 1 && d->seq[k] != seq) k++;
    srv_sched *s = d->s;
    srv_session *ss = d->c[k].ss;
    srv_turn *t = d->c[k].t;
    double now = srv_now();
    if (t->generated == 0) t->t_first = now;
    else srv_metrics_token_gap(s->metrics, now - t->t_last);
    t->t_last = now;
    t->generated++;
    t->last = token;
    /* the library's piece (none for BOS and EOS, which end the text) */
    if (len) textout_push(&t->out, text, len);
    const char *p;
    size_t n = textout_take(&t->out, &p);
    srv_event *e = srv_event_new(SRV_EV_TOKEN);
    if (e) {
        e->token = token;
        if ((e->text = strndup(p, n))) e->len = n;
    }
    post(s, ss, e);
    /* A turn that ends here (its stop token or string, its max_tokens, the
     * context) ends the call at the next pass when the others can yield,
     * so that its client has the end now, not when the longest turn of a
     * long call ends. */
    int in_call = t->generated - d->before[k];
    int ends = t->out.stopped || token == s->info.bos || token == s->info.eos ||
               t->generated >= t->cmd->gen.max_tokens || in_call >= d->room[k];
    if (ends) d->ended = 1;
    if (t->out.stopped) return 1;
    if (d->ended && t->yields && !ends && in_call < d->want[k]) return 1;
    if (!__atomic_load_n(&s->preempt, __ATOMIC_ACQUIRE)) return 0;
    /* Something changed: a long call yields to whoever came; any call
     * stops for its own session's interrupt, steer, reset or hang-up. */
    pthread_mutex_lock(&s->mu);
    int stop = ss->stop_gen || ss->gone || s->closing;
    pthread_mutex_unlock(&s->mu);
    t->st.tokens_after_stop += stop;   /* this token came after the stop */
    return t->yields || stop;
}

/* Generate for the n sessions ss[] (1 <= n <= SRV_BATCH_MAX, each with a
 * turn in its decode phase) in one device call, every sequence a token at
 * each of the device's steps: one pass over the weights a step for all of
 * them (tsr_seq_generate_batch: each sequence's tokens are those of its
 * solo run).  alone: no other session has work.  Each gets a quantum of
 * tokens, or, when alone and all greedy, all it asked for.  A call whose
 * sequences are all greedy yields from the token callback as soon as
 * anything changes, at the next pass (a rewind is exact for greedy
 * sequences); a sampled one never yields by a rewind, so that its random
 * stream skips no token, and a call that has one runs its quantum. */
static void decode(srv_sched *s, srv_session *const *ss, int n, int alone)
{
    dec_call d = { .s = s };
    tsr_gen_opts go[SRV_BATCH_MAX];
    int remaining[SRV_BATCH_MAX], all_greedy = 1;
    for (int k = 0; k < n; k++) {
        srv_turn *t = ss[k]->active;
        const srv_gen *g = &t->cmd->gen;
        int left = g->max_tokens - t->generated;
        int room = s->info.seq_len - (tsr_seq_length(ss[k]->seq) - 1);
        if (left <= 0 || room <= 0) {
            finish(s, ss[k], t, SRV_R_LENGTH);
            continue;
        }
        all_greedy &= g->temperature == 0.0f;
        remaining[d.n] = left;
        d.room[d.n] = room;
        d.seq[d.n] = ss[k]->seq;
        d.c[d.n++] = (tok_ctx){ .ss = ss[k], .t = t };
    }
    if (d.n == 0) return;
    int long_call = alone && all_greedy;
    tsr_seq_stats a[SRV_BATCH_MAX] = { 0 };
    int *before = d.before, got[SRV_BATCH_MAX];
    for (int k = 0; k < d.n; k++) {
        srv_turn *t = d.c[k].t;
        const srv_gen *g = &t->cmd->gen;
        int want = long_call || remaining[k] < s->o.quantum ? remaining[k] : s->o.quantum;
        d.want[k] = want;
        t->yields = all_greedy;
        go[k] = (tsr_gen_opts){ .max_tokens = want, .temperature = g->temperature,
                                .top_p = g->top_p, .seed = g->seed };
        tsr_seq_get_stats(d.seq[k], &a[k]);
        before[k] = t->generated;
    }
    int rc = tsr_seq_generate_batch(d.seq, d.n, go, on_token, &d, got);
    if ((rc == TSR_ERR_ARG || rc == TSR_ERR_STATE) && d.n > 1) {
        /* refused before anything ran (the call changes no sequence): each
         * alone, so that only the one at fault fails */
        for (int k = 0; k < d.n; k++) decode(s, &d.c[k].ss, 1, 0);
        return;
    }
    srv_metrics_decode_call(s->metrics, d.n, rc == TSR_OK ? got : NULL);
    for (int k = 0; k < d.n; k++) {
        srv_session *sk = d.c[k].ss;
        srv_turn *t = d.c[k].t;
        tsr_seq_stats b = { 0 };
        tsr_seq_get_stats(d.seq[k], &b);
        t->st.decode_h2d += b.decode_h2d - a[k].decode_h2d;
        t->st.decode_d2h += b.decode_d2h - a[k].decode_d2h;
        if (rc != TSR_OK) {
            device_failed(s, sk, t, rc);
            continue;
        }
        if (t->out.stopped ||
            (t->generated > before[k] && (t->last == s->info.eos || t->last == s->info.bos)))
            finish(s, sk, t, SRV_R_STOP);
        else if (t->generated >= t->cmd->gen.max_tokens || got[k] == 0)
            finish(s, sk, t, SRV_R_LENGTH);
    }
}

/* ---------------------------------------------------------------- step --- */

/* Close a hung-up session's sequence and let go of it. */
static void cleanup(srv_sched *s, srv_session *ss)
{
    pthread_mutex_lock(&s->mu);
    srv_turn *t = ss->active;
    ss->active = NULL;
    pthread_mutex_unlock(&s->mu);
    turn_free(t);
    tsr_seq_close(ss->seq);
    ss->seq = NULL;
    pthread_mutex_lock(&s->mu);
    srv_detach_locked(s, ss);
    pthread_mutex_unlock(&s->mu);
}

/* One unit of work for ss: at most one device call. */
/* Under s->mu: the session's state for one step.  Returns 1 when its
 * running generation is to stop (*why says why), else 0 with *c the next
 * command when it runs none (or, closing, a persistent session's goodbye
 * posted).  *closing gets whether the server closes. */
static int take_locked(srv_sched *s, srv_session *ss, srv_cmd **c, srv_reason *why, int *closing)
{
    *closing = s->closing;
    *c = NULL;
    srv_turn *t = ss->active;
    int stop = t && t->phase == SRV_PH_DECODE && (ss->stop_gen || *closing);
    if (stop && ss->stop_gen) t->t_stop = ss->t_stop;
    *why = *closing ? SRV_R_SHUTDOWN
         : ss->cmds && ss->cmds->kind == SRV_STEER ? SRV_R_STEERED : SRV_R_INTERRUPTED;
    if (t) return stop;
    ss->stop_gen = 0;
    ss->t_stop = 0;
    if ((*c = ss->cmds)) {
        ss->cmds = (*c)->next;
        ss->n_cmds--;
    } else if (*closing && ss->persistent && !ss->bye_sent) {
        srv_event *bye = srv_event_new(SRV_EV_CLOSE);
        if (bye) {
            bye->status = 1001;
            snprintf(bye->message, sizeof bye->message, "the server is shutting down");
        }
        srv_post_locked(ss, bye);
        ss->bye_sent = 1;
    }
    return 0;
}

/* A command taken from the session's queue: a reset or a cancelled one is
 * answered here (NULL); otherwise its turn, now the session's active one
 * (NULL after an error, answered). */
static srv_turn *begin(srv_sched *s, srv_session *ss, srv_cmd *c, int closing)
{
    srv_event *e;
    if (c->kind == SRV_RESET) {
        tsr_seq_close(ss->seq);     /* a new sequence also forgets the seed */
        ss->seq = NULL;
        if ((e = srv_event_new(SRV_EV_DONE))) e->reason = SRV_R_RESET;
        post(s, ss, e);
        srv_cmd_free(c);
        return NULL;
    }
    if (c->cancelled || closing) {
        if ((e = srv_event_new(SRV_EV_DONE))) {
            e->reason = closing ? SRV_R_SHUTDOWN : SRV_R_INTERRUPTED;
            e->stats.history_tokens = ss->seq ? tsr_seq_length(ss->seq) : 0;
        }
        srv_cmd_free(c);
        conclude(s, ss, e);
        return NULL;
    }
    srv_turn *t = turn_new(c);
    if (!t) {
        srv_cmd_free(c);
        if ((e = srv_event_new(SRV_EV_ERROR))) {
            e->status = 500;
            e->code = "server_error";
            snprintf(e->message, sizeof e->message, "out of memory");
        }
        conclude(s, ss, e);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    ss->active = t;
    pthread_mutex_unlock(&s->mu);
    return t;
}

static void step(srv_sched *s, srv_session *ss, int alone)
{
    pthread_mutex_lock(&s->mu);
    if (ss->gone) {
        pthread_mutex_unlock(&s->mu);
        cleanup(s, ss);
        return;
    }
    srv_cmd *c;
    srv_reason why;
    int closing, stop = take_locked(s, ss, &c, &why, &closing);
    srv_turn *t = ss->active;
    pthread_mutex_unlock(&s->mu);

    if (stop) {
        finish(s, ss, t, why);
        return;
    }
    if (c && !(t = begin(s, ss, c, closing))) return;
    if (!t) return;
    switch (t->phase) {
    case SRV_PH_START:   start(s, ss, t); break;
    case SRV_PH_PREFILL: prefill(s, ss, t); break;
    case SRV_PH_DECODE:  decode(s, &ss, 1, alone); break;
    }
}

/* ---------------------------------------------------------- the thread --- */

static int has_work_locked(const srv_sched *s, const srv_session *ss)
{
    if (ss->admit != SRV_SLOTTED) return 0;
    return ss->gone || ss->active || ss->cmds ||
           (s->closing && ss->persistent && !ss->bye_sent);
}

/* A session whose turn can join a decode call as it is: generating, with
 * nothing to stop it first (step() handles those one by one). */
static int decode_ready_locked(const srv_sched *s, const srv_session *ss)
{
    return ss->admit == SRV_SLOTTED && !ss->gone && !s->closing && !ss->stop_gen &&
           ss->active && ss->active->phase == SRV_PH_DECODE;
}

/* The next session with work after s->rr (round robin), and only one
 * whose work a decode call does not do (a start, a prefill chunk, a stop)
 * when not_decoding; *n (optional) gets how many have such work. */
static srv_session *pick_locked(srv_sched *s, int not_decoding, int *n)
{
    srv_session *first = NULL, *after = NULL;
    int past = s->rr == NULL, count = 0;
    for (srv_session *ss = s->live; ss; ss = ss->next) {
        if (has_work_locked(s, ss) && !(not_decoding && decode_ready_locked(s, ss))) {
            count++;
            if (!first) first = ss;
            if (past && !after) after = ss;
        }
        if (ss == s->rr) past = 1;
    }
    if (n) *n = count;
    srv_session *pick = after ? after : first;
    if (pick) s->rr = pick;
    return pick;
}

static void *sched_main(void *arg)
{
    srv_sched *s = arg;
    int batched = 0;   /* the last call was a decode call of several */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int n = 0;
        srv_session *rr = s->rr, *ss = pick_locked(s, 0, &n), *other;
        if (!ss) {
            if (s->quit) break;
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        /* after a decode call, other work first: it waits one decode call,
         * not one for each generating session the round robin passes */
        if (batched) {
            s->rr = rr;
            if ((other = pick_locked(s, 1, NULL))) ss = other;
            else s->rr = ss;
        }
        /* Continuous batching: a session that is generating takes every
         * other one that is into its call (at most the 8 sequences of a
         * tsr_seq_generate_batch; a device whose batch is smaller steps
         * them in turn), so all of them advance a token a pass over the
         * weights; a session
         * with anything else to do (a new turn, a prefill chunk, a stop)
         * gets a step of its own between two such calls. */
        srv_session *batch[SRV_BATCH_MAX] = { ss };
        int m = 1;
        if (decode_ready_locked(s, ss))
            for (srv_session *o = s->live; o && m < SRV_BATCH_MAX; o = o->next)
                if (o != ss && decode_ready_locked(s, o)) batch[m++] = o;
        for (int k = 0; k < m; k++) batch[k]->refs++;
        __atomic_store_n(&s->preempt, 0, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&s->mu);
        batched = m > 1;
        if (m > 1) decode(s, batch, m, n == m);
        else step(s, ss, n == 1);
        pthread_mutex_lock(&s->mu);
        for (int k = 0; k < m; k++) srv_unref_locked(batch[k]);
    }
    /* Sessions left when told to quit (their clients are gone) give back
     * their sequences before the device closes. */
    while (s->live) {
        srv_session *ss = s->live;
        ss->refs++;
        pthread_mutex_unlock(&s->mu);
        cleanup(s, ss);
        pthread_mutex_lock(&s->mu);
        srv_unref_locked(ss);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------ lifetime --- */

srv_sched *srv_sched_start(tsr_device *dev, tsr_model *m, const srv_sched_opts *o,
                           srv_metrics *metrics)
{
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->dev = dev;
    s->model = m;
    s->metrics = metrics;
    s->o = *o;
    tsr_model_get_info(m, &s->info);
    if (s->o.slots <= 0 || s->o.slots > s->info.n_seqs) s->o.slots = s->info.n_seqs;
    if (s->o.prefill_chunk <= 0) s->o.prefill_chunk = 64;
    if (s->o.quantum <= 0) s->o.quantum = 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    if (pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        pthread_cond_destroy(&s->work);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    return s;
}

void srv_sched_close(srv_sched *s)
{
    pthread_mutex_lock(&s->mu);
    s->closing = 1;
    for (srv_session *ss = s->live, *next; ss; ss = next) {
        next = ss->next;
        if (ss->admit == SRV_WAITING) {
            srv_event *e = srv_event_new(SRV_EV_ERROR);
            if (e) {
                e->status = 503;
                e->code = "shutting_down";
                snprintf(e->message, sizeof e->message, "the server is shutting down");
            }
            srv_post_locked(ss, e);
            srv_detach_locked(s, ss);
        } else if (ss->active && !ss->stop_gen) {
            ss->stop_gen = 1;
            ss->t_stop = srv_now();
        }
    }
    srv_kick_locked(s);
    pthread_mutex_unlock(&s->mu);
}

void srv_sched_stop(srv_sched *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void srv_sched_snapshot_get(srv_sched *s, srv_sched_snapshot *out)
{
    pthread_mutex_lock(&s->mu);
    *out = (srv_sched_snapshot){ .slots = s->o.slots, .busy = s->slots_used,
                                 .queued = s->queue_len, .queue_cap = s->o.queue };
    pthread_mutex_unlock(&s->mu);
}
