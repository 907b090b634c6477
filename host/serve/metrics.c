/* metrics.c - counters and histograms for /metrics, in the Prometheus text
 * exposition format (version 0.0.4: "# HELP", "# TYPE", then one sample a
 * line; histograms as cumulative _bucket{le=...}, _sum and _count). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

static const char *const endpoint_name[SRV_EP_COUNT] = {
    "completions", "chat_completions", "realtime", "models", "health", "metrics", "page", "other",
};

/* Upper bounds in seconds. */
static const double ttft_le[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                  1, 2.5, 5, 10 };
static const double gap_le[]  = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                  0.025, 0.05, 0.1, 0.25, 1 };
static const double batch_le[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
#define N_TTFT (sizeof ttft_le / sizeof ttft_le[0])
#define N_BATCH (sizeof batch_le / sizeof batch_le[0])
#define N_GAP  (sizeof gap_le / sizeof gap_le[0])
#define N_STATUS 600

typedef struct hist {
    const double *le;
    size_t   n;
    uint64_t count[16];   /* (n,) per bucket, not cumulative */
    uint64_t total;
    double   sum;
} hist;

struct srv_metrics {
    pthread_mutex_t mu;
    uint64_t requests[SRV_EP_COUNT][N_STATUS];
    uint64_t prompt_tokens, completion_tokens, turns;
    hist     ttft, gap, batch, pass;
};

srv_metrics *srv_metrics_new(void)
{
    srv_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->ttft = (hist){ .le = ttft_le, .n = N_TTFT };
    m->gap = (hist){ .le = gap_le, .n = N_GAP };
    m->batch = (hist){ .le = batch_le, .n = N_BATCH };
    m->pass = (hist){ .le = batch_le, .n = N_BATCH };
    return m;
}

void srv_metrics_free(srv_metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* count observations of the value v */
static void observe_n(hist *h, double v, uint64_t count)
{
    size_t i = 0;
    while (i < h->n && v > h->le[i]) i++;
    if (i < h->n) h->count[i] += count;
    h->total += count;
    h->sum += v * (double)count;
}

static void observe(hist *h, double v)
{
    observe_n(h, v, 1);
}

void srv_metrics_request(srv_metrics *m, int endpoint, int status)
{
    if (endpoint < 0 || endpoint >= SRV_EP_COUNT || status < 100 || status >= N_STATUS) return;
    pthread_mutex_lock(&m->mu);
    m->requests[endpoint][status]++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_turn(srv_metrics *m, const srv_stats *st)
{
    pthread_mutex_lock(&m->mu);
    m->turns++;
    m->prompt_tokens += (uint64_t)st->prompt_tokens;
    m->completion_tokens += (uint64_t)st->completion_tokens;
    if (st->completion_tokens > 0) observe(&m->ttft, st->ttft_ms / 1e3);
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_token_gap(srv_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    observe(&m->gap, seconds);
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_decode_call(srv_metrics *m, int n, const int *got)
{
    /* The call's sequences start together, each a token a pass until it
     * stops: with got sorted high to low, got[j - 1] - got[j] passes held
     * j sequences (the tokens a pass kept; passes past a stop, whose
     * tokens the driver dropped, are not counted). */
    int g[N_BATCH + 1] = { 0 };
    int k = got && n >= 1 && (size_t)n <= N_BATCH ? n : 0;
    for (int i = 0; i < k; i++) {
        int v = got[i] > 0 ? got[i] : 0, j = i;
        for (; j > 0 && g[j - 1] < v; j--) g[j] = g[j - 1];
        g[j] = v;
    }
    pthread_mutex_lock(&m->mu);
    observe(&m->batch, n);
    for (int j = 1; j <= k; j++)
        if (g[j - 1] > g[j]) observe_n(&m->pass, j, (uint64_t)(g[j - 1] - g[j]));
    pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------------ the text --- */

typedef struct out {
    char  *p;
    size_t len, cap;
    int    failed;
} out;

static void say(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(out *o, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = o->cap - o->len;
        int n = o->failed ? 0 : vsnprintf(o->p + o->len, room, fmt, ap);
        va_end(ap);
        if (o->failed || n < 0) { o->failed = 1; return; }
        if ((size_t)n < room) { o->len += (size_t)n; return; }
        char *p = realloc(o->p, o->cap * 2 + (size_t)n);
        if (!p) { o->failed = 1; return; }
        o->p = p;
        o->cap = o->cap * 2 + (size_t)n;
    }
}

static void say_hist(out *o, const char *name, const char *help, const hist *h)
{
    say(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < h->n; i++) {
        cum += h->count[i];
        say(o, "%s_bucket{le=\"%g\"} %llu\n", name, h->le[i], (unsigned long long)cum);
    }
    say(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name,
        (unsigned long long)h->total, name, h->sum, name, (unsigned long long)h->total);
}

char *srv_metrics_text(srv_metrics *m, const srv_sched_snapshot *snap)
{
    out o = { .cap = 4096 };
    if (!(o.p = malloc(o.cap))) return NULL;
    int slots = snap->slots, busy = snap->busy, queued = snap->queued, cap = snap->queue_cap;
    pthread_mutex_lock(&m->mu);
    say(&o, "# HELP tessera_requests_total Requests answered, by endpoint and HTTP status "
            "(realtime: WebSocket upgrades, 101).\n# TYPE tessera_requests_total counter\n");
    for (int e = 0; e < SRV_EP_COUNT; e++)
        for (int c = 0; c < N_STATUS; c++)
            if (m->requests[e][c])
                say(&o, "tessera_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n",
                    endpoint_name[e], c, (unsigned long long)m->requests[e][c]);
    say(&o, "# HELP tessera_generations_total Generations finished (HTTP requests and "
            "WebSocket turns).\n# TYPE tessera_generations_total counter\n"
            "tessera_generations_total %llu\n", (unsigned long long)m->turns);
    say(&o, "# HELP tessera_prompt_tokens_total Tokens appended to sequences (BOS included).\n"
            "# TYPE tessera_prompt_tokens_total counter\ntessera_prompt_tokens_total %llu\n",
        (unsigned long long)m->prompt_tokens);
    say(&o, "# HELP tessera_completion_tokens_total Tokens generated.\n"
            "# TYPE tessera_completion_tokens_total counter\ntessera_completion_tokens_total %llu\n",
        (unsigned long long)m->completion_tokens);
    say_hist(&o, "tessera_ttft_seconds", "Request arrival to its first token.", &m->ttft);
    say_hist(&o, "tessera_token_seconds", "Time between consecutive tokens of one generation.",
             &m->gap);
    say_hist(&o, "tessera_decode_batch_size", "Sequences in each decode call (continuous "
             "batching: every generating sequence, one pass over the weights a token).",
             &m->batch);
    say_hist(&o, "tessera_decode_pass_batch_size", "Sequences in each pass over the weights "
             "of a decode call (the tokens it kept): _count passes, _sum tokens.", &m->pass);
    pthread_mutex_unlock(&m->mu);
    say(&o, "# HELP tessera_slots Sequence slots on the device.\n# TYPE tessera_slots gauge\n"
            "tessera_slots %d\n", slots);
    say(&o, "# HELP tessera_slots_busy Slots held by a request or a WebSocket session.\n"
            "# TYPE tessera_slots_busy gauge\ntessera_slots_busy %d\n", busy);
    say(&o, "# HELP tessera_queue_length Requests and sessions waiting for a slot.\n"
            "# TYPE tessera_queue_length gauge\ntessera_queue_length %d\n", queued);
    say(&o, "# HELP tessera_queue_capacity Waiting places; beyond them, 503.\n"
            "# TYPE tessera_queue_capacity gauge\ntessera_queue_capacity %d\n", cap);
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    return o.p;
}
