/*
 * device.c - the public API's dispatch layer (after ggml-backend.c).
 *
 * Every public call lands here: handles and arguments are checked, state
 * rules are enforced, and only then is a backend hook called, so a backend
 * never repeats those checks.  Host-side bookkeeping (each sequence's token
 * history, which token is pending on the device, timing) lives here too.
 *
 * Device-side state per sequence slot: `pos` tokens in the KV cache and one
 * pending token (the newest, not yet fed through the model).  The host
 * mirrors it: n_kv == pos and, when n_hist > 0, hist[n_kv] is pending, so
 * n_kv == n_hist - 1 after every prefill and decode.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "device.h"
#include "model.h"
#include "tokenizer.h"

/* ------------------------------------------------------------ helpers --- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tsr_log(tsr_device *dev, int level, const char *fmt, ...)
{
    if (!dev || !dev->log) return;
    char line[TSR_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    dev->log(level, line, dev->log_user);
}

static const tsr_backend_iface *find_backend(const char *name)
{
    static const tsr_backend_iface *const all[] = {
        &tsr_backend_emu,
#ifdef TSR_WITH_XRT
        &tsr_backend_xrt,
#endif
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

/* A model handle is usable while it is the one resident on its device. */
static int check_model(const tsr_model *m)
{
    if (!m) return TSR_ERR_ARG;
    if (m->dev->resident != m)
        return tsr_seterr(&m->dev->err, TSR_ERR_STATE,
                          "model %s is no longer resident on the device", m->ck->path);
    return TSR_OK;
}

static int check_seq(const tsr_seq *s)
{
    if (!s) return TSR_ERR_ARG;
    return check_model(s->model);
}

/* ------------------------------------------------------------- device --- */

int tsr_device_open(const char *spec, tsr_device **out)
{
    if (!out) return TSR_ERR_ARG;
    *out = NULL;
    tsr_device *dev = calloc(1, sizeof *dev);
    if (!dev) return TSR_ERR_NOMEM;
    *out = dev;
    int rc = tsr_devspec_parse(spec, &dev->spec, &dev->err);
    if (rc) return rc;
    dev->be = find_backend(dev->spec.backend);
    if (!dev->be)
        return tsr_seterr(&dev->err, TSR_ERR_UNSUPPORTED,
                          "backend '%s' is not built into this libtessera", dev->spec.backend);
    return tsr_kcmd_open(&dev->k, dev->be, &dev->spec, &dev->err);
}

void tsr_device_close(tsr_device *dev)
{
    if (!dev) return;
    for (int i = 0; i < TSR_MAX_SEQ_SLOTS; i++)
        if (dev->slots[i]) tsr_seq_close(dev->slots[i]);
    /* Models stay caller-owned handles, but lose their device. */
    for (tsr_model *m = dev->models; m; m = m->next) m->dev = NULL;
    tsr_kcmd_close(&dev->k);
    free(dev);
}

const char *tsr_device_errmsg(const tsr_device *dev)
{
    return dev ? dev->err.msg : "no device handle";
}

void tsr_device_set_log(tsr_device *dev, tsr_log_fn fn, void *user)
{
    if (!dev) return;
    dev->log = fn;
    dev->log_user = user;
}

int tsr_device_traffic(const tsr_device *dev, tsr_traffic *t)
{
    if (!dev || !t) return TSR_ERR_ARG;
    memset(t, 0, sizeof *t);
    if (!dev->k.b) return TSR_OK;
    tsr_link_counters c = dev->k.link;
    t->load_h2d = c.h2d[TSR_PHASE_LOAD];       t->load_d2h = c.d2h[TSR_PHASE_LOAD];
    t->prefill_h2d = c.h2d[TSR_PHASE_PREFILL]; t->prefill_d2h = c.d2h[TSR_PHASE_PREFILL];
    t->decode_h2d = c.h2d[TSR_PHASE_DECODE];   t->decode_d2h = c.d2h[TSR_PHASE_DECODE];
    t->debug_h2d = c.h2d[TSR_PHASE_DEBUG];     t->debug_d2h = c.d2h[TSR_PHASE_DEBUG];
    for (int p = 0; p < TSR_PHASE_COUNT; p++) t->invocations += c.invocations[p];
    t->loads = dev->loads;
    return TSR_OK;
}

int tsr_device_kernel_counters(tsr_device *dev, char *buf, size_t len)
{
    if (!dev || !buf || len == 0) return TSR_ERR_ARG;
    buf[0] = '\0';
    if (!dev->resident)
        return tsr_seterr(&dev->err, TSR_ERR_STATE, "no model loaded on the device");
    return tsr_kcmd_counters_text(&dev->k, buf, len, &dev->err);
}

/* -------------------------------------------------------------- model --- */

static void detach_model(tsr_device *dev, tsr_model *m)
{
    for (tsr_model **p = &dev->models; *p; p = &(*p)->next)
        if (*p == m) { *p = m->next; break; }
    if (dev->resident == m) dev->resident = NULL;
}

/* Place an opened checkpoint (path or memory) on dev; takes ck. */
static int load_checkpoint(tsr_device *dev, tsr_checkpoint *ck, const char *path,
                           const tsr_model_opts *opts, tsr_model **out);

int tsr_model_load(tsr_device *dev, const char *path, const tsr_model_opts *opts,
                   tsr_model **out)
{
    if (!dev || !path || !out) return TSR_ERR_ARG;
    *out = NULL;
    tsr_checkpoint *ck = NULL;
    int rc = tsr_checkpoint_open(path, &ck, &dev->err);
    return rc ? rc : load_checkpoint(dev, ck, path, opts, out);
}

int tsr_model_fit(tsr_device *dev, const char *path, const tsr_model_opts *opts,
                  uint64_t *need_bytes, uint64_t *have_bytes)
{
    if (!dev || !path) return TSR_ERR_ARG;
    if (!dev->k.b) return tsr_seterr(&dev->err, TSR_ERR_STATE, "device is not open");
    tsr_model_opts o = {0};
    if (opts) o = *opts;
    tsr_checkpoint *ck = NULL;
    int rc = tsr_checkpoint_open(path, &ck, &dev->err);
    if (rc) return rc;
    tsr_load_opts lo = {
        .weights_f32 = o.weights_f32,
        .group_size = o.group_size ? o.group_size : TSR_DEFAULT_GROUP,
        .seq_len = o.seq_len ? o.seq_len : ck->cfg.seq_len,
        .n_slots = o.n_seqs ? o.n_seqs : 1,
    };
    uint64_t need = 0, have = 0;
    rc = tsr_kcmd_fit(&dev->k, ck, &lo, &need, &have, &dev->err);
    tsr_checkpoint_close(ck);
    if (need_bytes) *need_bytes = need;
    if (have_bytes) *have_bytes = have;
    return rc;
}

int tsr_model_load_memory(tsr_device *dev, const void *data, size_t len,
                          const tsr_model_opts *opts, tsr_model **out)
{
    if (!dev || !data || !out) return TSR_ERR_ARG;
    *out = NULL;
    tsr_checkpoint *ck = NULL;
    int rc = tsr_checkpoint_open_memory(data, len, "(memory)", &ck, &dev->err);
    return rc ? rc : load_checkpoint(dev, ck, "(memory)", opts, out);
}

static int load_checkpoint(tsr_device *dev, tsr_checkpoint *ck, const char *path,
                           const tsr_model_opts *opts, tsr_model **out)
{
    int rc;
    if (!dev->k.b) {
        tsr_checkpoint_close(ck);
        return tsr_seterr(&dev->err, TSR_ERR_STATE, "device is not open");
    }
    tsr_model_opts o = {0};
    if (opts) o = *opts;
    if (o.group_size < 0 || o.seq_len < 0 || o.n_seqs < 0 || o.n_seqs > TSR_MAX_SEQ_SLOTS) {
        tsr_checkpoint_close(ck);
        return tsr_seterr(&dev->err, TSR_ERR_ARG,
                          "model options: group_size, seq_len must be >= 0, n_seqs in 0..%d",
                          TSR_MAX_SEQ_SLOTS);
    }
    tsr_model *m = calloc(1, sizeof *m);
    if (!m) {
        tsr_checkpoint_close(ck);
        return tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory");
    }
    m->ck = ck;
    const tsr_config *c = &m->ck->cfg;
    if (!o.tokenizer && ck->tok) {
        m->tok = ck->tok;   // the file's own tokenizer (GGUF); the model takes it
        ck->tok = NULL;
    } else if (!o.tokenizer) {
        rc = tsr_seterr(&dev->err, TSR_ERR_ARG,
                        "%s: a tokenizer file is needed for llama2.c checkpoints", path);
        goto fail;
    } else {
        rc = tsr_tokenizer_load(o.tokenizer, c->vocab_size, &m->tok, &dev->err);
        if (rc) goto fail;
    }

    m->dev = dev;
    m->seq_len = o.seq_len ? o.seq_len : c->seq_len;
    if (m->seq_len > c->seq_len && c->format == TSR_FMT_GGUF)
        tsr_log(dev, TSR_LOG_WARN, "%s: context %d exceeds the file's llama.context_length %d "
                "(fine if the model was trained longer; converters may write less)",
                path, m->seq_len, c->seq_len);
    m->lo.weights_f32 = o.weights_f32;
    m->lo.group_size = o.group_size ? o.group_size : TSR_DEFAULT_GROUP;
    m->lo.seq_len = m->seq_len;
    m->lo.progress = o.progress;
    m->lo.progress_user = o.progress_user;

    /* Sequence slots: as many as asked, or as many as the KV budget allows. */
    uint64_t need = 0, have = 0;
    int slots = o.n_seqs ? o.n_seqs : TSR_MAX_SEQ_SLOTS;
    for (;;) {
        m->lo.n_slots = slots;
        rc = tsr_kcmd_fit(&dev->k, m->ck, &m->lo, &need, &have, &dev->err);
        if (rc != TSR_ERR_CAPACITY || o.n_seqs || slots == 1) break;
        slots--;
    }
    if (rc) goto fail;
    m->n_slots = slots;

    /* Another model's sequences lose their slots. */
    for (int i = 0; i < TSR_MAX_SEQ_SLOTS; i++)
        if (dev->slots[i]) { dev->slots[i]->slot = -1; dev->slots[i] = NULL; }
    if (dev->resident) dev->resident = NULL;

    /* The backend streams nothing when the same image (content hash) is
     * already resident; count only images that crossed the link. */
    uint64_t before = dev->k.link.h2d[TSR_PHASE_LOAD];
    rc = tsr_kcmd_load(&dev->k, m->ck, &m->lo, &dev->err);
    if (rc) goto fail;
    if (dev->k.link.h2d[TSR_PHASE_LOAD] != before) dev->loads++;
    m->next = dev->models;
    dev->models = m;
    dev->resident = m;
    tsr_log(dev, TSR_LOG_INFO, "%s: resident on %s, %d sequence slot(s) of %d tokens, "
            "%llu of %llu on-chip bytes", path, dev->be->name, m->n_slots, m->seq_len,
            (unsigned long long)need, (unsigned long long)have);
    *out = m;
    return TSR_OK;
fail:
    tsr_tokenizer_free(m->tok);
    tsr_checkpoint_close(m->ck);
    free(m);
    return rc;
}

void tsr_model_close(tsr_model *m)
{
    if (!m) return;
    if (m->dev) {
        for (int i = 0; i < TSR_MAX_SEQ_SLOTS; i++)
            if (m->dev->slots[i] && m->dev->slots[i]->model == m)
                tsr_seq_close(m->dev->slots[i]);
        detach_model(m->dev, m);
    }
    tsr_tokenizer_free(m->tok);
    tsr_checkpoint_close(m->ck);
    free(m);
}

int tsr_model_get_info(const tsr_model *m, tsr_model_info *info)
{
    if (!m || !info) return TSR_ERR_ARG;
    const tsr_config *c = &m->ck->cfg;
    memset(info, 0, sizeof *info);
    info->dim = c->dim;
    info->hidden_dim = c->hidden_dim;
    info->n_layers = c->n_layers;
    info->n_heads = c->n_heads;
    info->n_kv_heads = c->n_kv_heads;
    info->vocab_size = c->vocab_size;
    info->seq_len = m->seq_len;
    info->n_seqs = m->n_slots;
    info->n_params = tsr_checkpoint_param_count(m->ck);
    return TSR_OK;
}

int tsr_model_tokenize(tsr_model *m, const char *text, int bos, int *tokens,
                       int max_tokens, int *n_tokens)
{
    if (!m || !text || !tokens || !n_tokens || max_tokens < 0) return TSR_ERR_ARG;
    tsr_err *e = m->dev ? &m->dev->err : NULL;
    return tsr_tokenizer_encode(m->tok, text, bos, 0, tokens, max_tokens, n_tokens, e);
}

const char *tsr_model_token_text(const tsr_model *m, int prev, int token, size_t *len)
{
    if (len) *len = 0;
    if (!m || !len || token < 0 || token >= m->ck->cfg.vocab_size) return NULL;
    return tsr_tokenizer_piece(m->tok, prev, token, len);
}

/* ----------------------------------------------------------- sequence --- */

int tsr_seq_open(tsr_model *m, tsr_seq **out)
{
    if (!m || !out) return TSR_ERR_ARG;
    *out = NULL;
    int rc = check_model(m);
    if (rc) return rc;
    tsr_device *dev = m->dev;
    int slot = -1;
    for (int i = 0; i < m->n_slots; i++)
        if (!dev->slots[i]) { slot = i; break; }
    if (slot < 0)
        return tsr_seterr(&dev->err, TSR_ERR_NOSLOT,
                          "all %d sequence slots are in use (the KV budget holds %d)",
                          m->n_slots, m->n_slots);
    tsr_seq *s = calloc(1, sizeof *s);
    if (!s) return tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory");
    s->cap = m->seq_len + 1;
    s->hist = malloc((size_t)s->cap * sizeof *s->hist);
    if (!s->hist) { free(s); return tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory"); }
    s->model = m;
    s->slot = slot;
    rc = tsr_kcmd_reset(&dev->k, slot, &dev->err);
    if (rc) { free(s->hist); free(s); return rc; }
    dev->slots[slot] = s;
    *out = s;
    return TSR_OK;
}

void tsr_seq_close(tsr_seq *s)
{
    if (!s) return;
    if (s->slot >= 0 && s->model->dev && s->model->dev->slots[s->slot] == s)
        s->model->dev->slots[s->slot] = NULL;
    free(s->hist);
    free(s);
}

/* Snapshot the device's link counters, to charge a call's traffic to s. */
static void link_snapshot(const tsr_seq *s, tsr_link_counters *c)
{
    *c = s->model->dev->k.link;
}

static void charge(tsr_seq *s, const tsr_link_counters *before)
{
    tsr_link_counters now;
    link_snapshot(s, &now);
    s->st.prefill_h2d += now.h2d[TSR_PHASE_PREFILL] - before->h2d[TSR_PHASE_PREFILL];
    s->st.prefill_d2h += now.d2h[TSR_PHASE_PREFILL] - before->d2h[TSR_PHASE_PREFILL];
    s->st.decode_h2d += now.h2d[TSR_PHASE_DECODE] - before->h2d[TSR_PHASE_DECODE];
    s->st.decode_d2h += now.d2h[TSR_PHASE_DECODE] - before->d2h[TSR_PHASE_DECODE];
    for (int p = 0; p < TSR_PHASE_COUNT; p++)
        s->st.invocations += now.invocations[p] - before->invocations[p];
}

int tsr_seq_append_tokens(tsr_seq *s, const int *tokens, int n)
{
    int rc = check_seq(s);
    if (rc) return rc;
    tsr_device *dev = s->model->dev;
    if (!tokens || n < 0)
        return tsr_seterr(&dev->err, TSR_ERR_ARG, "append: NULL tokens or negative count");
    if (n == 0) return TSR_OK;
    int vocab = s->model->ck->cfg.vocab_size;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return tsr_seterr(&dev->err, TSR_ERR_ARG,
                              "append: token %d at index %d is outside the vocab (0..%d)",
                              tokens[i], i, vocab - 1);
    /* Every token but the newest gets a KV entry; seq_len bounds the KV. */
    if (s->n_hist + n - 1 > s->model->seq_len)
        return tsr_seterr(&dev->err, TSR_ERR_RANGE,
                          "append: %d tokens after %d would pass the context of %d tokens",
                          n, s->n_hist, s->model->seq_len);
    tsr_link_counters before;
    link_snapshot(s, &before);
    double t0 = now_s();
    rc = tsr_kcmd_prefill(&dev->k, s->slot, tokens, n, &dev->err);
    s->st.prefill_seconds += now_s() - t0;
    charge(s, &before);
    if (rc) return rc;
    memcpy(s->hist + s->n_hist, tokens, (size_t)n * sizeof *tokens);
    s->n_hist += n;
    s->n_kv = s->n_hist - 1;
    s->st.prefill_tokens += (uint64_t)n;
    return TSR_OK;
}

int tsr_seq_append_text(tsr_seq *s, const char *text)
{
    int rc = check_seq(s);
    if (rc) return rc;
    tsr_device *dev = s->model->dev;
    if (!text) return tsr_seterr(&dev->err, TSR_ERR_ARG, "append: NULL text");
    /* Upper bound: BOS, the dummy space, one token per byte (byte fallback). */
    size_t max = strlen(text) + 3;
    int *toks = malloc(max * sizeof *toks);
    if (!toks) return tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory");
    int n = 0;
    rc = tsr_tokenizer_encode(s->model->tok, text, s->n_hist == 0, 0, toks, (int)max, &n,
                              &dev->err);
    if (!rc) rc = tsr_seq_append_tokens(s, toks, n);
    free(toks);
    return rc;
}

/* Bridges the backend's token callback to the public one, with timing. */
typedef struct gen_ctx {
    tsr_seq     *s;
    tsr_token_cb cb;
    void        *user;
    double       t_start, t_first, t_last;
    int          n;        /* tokens the callback has seen                */
    int          stopped;  /* the callback asked to stop after token n    */
} gen_ctx;

static int on_token(int token, void *user)
{
    gen_ctx *g = user;
    if (g->stopped) return 1;   /* already asked; later tokens are dropped */
    double t = now_s();
    if (g->n == 0) g->t_first = t;
    g->t_last = t;
    g->n++;
    g->stopped = g->cb ? g->cb(g->s, token, g->user) != 0 : 0;
    return g->stopped;
}

int tsr_seq_generate(tsr_seq *s, const tsr_gen_opts *opts, tsr_token_cb cb, void *user,
                     int *n_generated)
{
    if (n_generated) *n_generated = 0;
    int rc = check_seq(s);
    if (rc) return rc;
    tsr_device *dev = s->model->dev;
    if (!opts) return tsr_seterr(&dev->err, TSR_ERR_ARG, "generate: NULL options");
    if (opts->max_tokens < 0 || opts->temperature < 0.0f || opts->top_p < 0.0f)
        return tsr_seterr(&dev->err, TSR_ERR_ARG,
                          "generate: max_tokens, temperature and top_p must be >= 0");
    if (s->n_hist == 0)
        return tsr_seterr(&dev->err, TSR_ERR_STATE,
                          "generate: the sequence is empty; append a prompt first");
    int room = s->model->seq_len - s->n_kv;
    int n = opts->max_tokens < room ? opts->max_tokens : room;
    s->cancel = 0;
    s->cancelled = 0;
    if (n <= 0) return TSR_OK;

    tsr_sampler smp = {
        .temperature = opts->temperature,
        .top_p = opts->top_p > 0.0f ? opts->top_p : 1.0f,
        .seed = opts->seed ? opts->seed : TSR_DEFAULT_SEED,
        .reseed = !s->seeded || opts->seed != s->seed,
        .ignore_stop = opts->ignore_stop,
    };
    s->seeded = 1;
    s->seed = opts->seed;

    int *out = malloc((size_t)n * sizeof *out);
    if (!out) return tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory");
    gen_ctx g = { .s = s, .cb = cb, .user = user, .t_start = now_s() };
    tsr_link_counters before;
    link_snapshot(s, &before);
    int got = 0;
    int n_hist0 = s->n_hist;
    rc = tsr_kcmd_decode(&dev->k, s->slot, n, &smp, out, &got, on_token, &g, (int *)&s->cancel,
                         &dev->err);
    charge(s, &before);
    /* The device may have sampled past the token whose callback asked to
     * stop: rewind it, so the history is exactly what the caller saw. */
    if (rc == TSR_OK && g.stopped && got > g.n) {
        got = g.n;
        rc = tsr_kcmd_truncate(&dev->k, s->slot, n_hist0 + got - 1, out[got - 1], &dev->err);
    }
    if (got > 0) {
        memcpy(s->hist + n_hist0, out, (size_t)got * sizeof *out);
        s->n_hist = n_hist0 + got;
        s->n_kv = s->n_hist - 1;
    } else {
        s->n_hist = n_hist0;
    }
    free(out);
    s->cancelled = s->cancel != 0;
    s->st.decode_tokens += (uint64_t)got;
    if (g.n > 0) {
        s->st.ttft_ms = 1e3 * (g.t_first - g.t_start);
        /* Tokens reach the host in bursts (it polls the output buffer), so
         * the rate is taken over the whole call, not between callbacks. */
        double wall = now_s() - g.t_start;
        s->st.decode_tok_s = wall > 0 ? g.n / wall : 0.0;
    }
    if (n_generated) *n_generated = got;
    return rc;
}

void tsr_seq_cancel(tsr_seq *s)
{
    if (!s) return;
    __atomic_store_n(&s->cancel, 1, __ATOMIC_RELEASE);   /* kcmd polls it (acquire) */
    tsr_kcmd_interrupt(&s->model->dev->k);   /* async-signal-safe */
}

int tsr_seq_was_cancelled(const tsr_seq *s)
{
    return s ? s->cancelled : 0;
}

int tsr_seq_length(const tsr_seq *s)
{
    return s ? s->n_hist : 0;
}

int tsr_seq_tokens(const tsr_seq *s, const int **tokens, int *n)
{
    if (!s || !tokens || !n) return TSR_ERR_ARG;
    *tokens = s->hist;
    *n = s->n_hist;
    return TSR_OK;
}

int tsr_seq_truncate(tsr_seq *s, int n)
{
    int rc = check_seq(s);
    if (rc) return rc;
    tsr_device *dev = s->model->dev;
    if (n < 1 || n > s->n_hist)
        return tsr_seterr(&dev->err, TSR_ERR_RANGE,
                          "truncate: length %d outside 1..%d", n, s->n_hist);
    rc = tsr_kcmd_truncate(&dev->k, s->slot, n - 1, s->hist[n - 1], &dev->err);
    if (rc) return rc;
    s->n_hist = n;
    s->n_kv = n - 1;
    return TSR_OK;
}

int tsr_seq_reset(tsr_seq *s)
{
    int rc = check_seq(s);
    if (rc) return rc;
    tsr_device *dev = s->model->dev;
    rc = tsr_kcmd_reset(&dev->k, s->slot, &dev->err);
    if (rc) return rc;
    s->n_hist = 0;
    s->n_kv = 0;
    return TSR_OK;
}

int tsr_seq_get_stats(const tsr_seq *s, tsr_seq_stats *st)
{
    if (!s || !st) return TSR_ERR_ARG;
    memset(st, 0, sizeof *st);
    st->prefill_tokens = s->st.prefill_tokens;
    st->decode_tokens = s->st.decode_tokens;
    st->prefill_h2d = s->st.prefill_h2d;
    st->prefill_d2h = s->st.prefill_d2h;
    st->decode_h2d = s->st.decode_h2d;
    st->decode_d2h = s->st.decode_d2h;
    st->invocations = s->st.invocations;
    st->ttft_ms = s->st.ttft_ms;
    st->decode_tok_s = s->st.decode_tok_s;
    st->prefill_tok_s = s->st.prefill_seconds > 0
                            ? (double)s->st.prefill_tokens / s->st.prefill_seconds : 0.0;
    return TSR_OK;
}

int tsr_seq_read_logits(tsr_seq *s, float *logits, int n)
{
    int rc = check_seq(s);
    if (rc) return rc;
    tsr_device *dev = s->model->dev;
    if (!logits || n < s->model->ck->cfg.vocab_size)
        return tsr_seterr(&dev->err, TSR_ERR_ARG, "read_logits: need room for %d floats",
                          s->model->ck->cfg.vocab_size);
    return tsr_kcmd_read_logits(&dev->k, logits, s->model->ck->cfg.vocab_size, &dev->err);
}
