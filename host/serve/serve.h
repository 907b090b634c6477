/* serve.h - tessera serve: the parts of the server and how they meet.
 *
 *   civetweb threads, one per connection          the scheduler thread (one)
 *   http_api.c, realtime.c                         sched.c
 *     read and check the request (request.c) ---->   owns every device call:
 *       a srv_cmd on the client's srv_session          open, append, generate,
 *     wait for the session's srv_events <--------      close; generates for all
 *     and write them out (SSE, JSON, WS frames)        the sessions at once (a
 *                                                      batched decode call)
 *
 * A session is one client of the device: an HTTP request (one generation)
 * or a WebSocket connection (one sequence for the connection's lifetime).
 * Only the scheduler thread touches libtessera handles; connection threads
 * never block it, since tokens go through each session's own event queue
 * and a slow client only slows its own writes.
 *
 * host/serve/ talks to the library only through tessera.h. */
#ifndef TSR_SERVE_H
#define TSR_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "tessera.h"
#include "../textout.h"

struct mg_connection;

/* ------------------------------------------------------------- limits --- */

#define SRV_MAX_STOP     4     /* stop strings per request (OpenAI's bound)  */
#define SRV_MAX_STOP_LEN 256   /* bytes per stop string                      */

typedef struct srv_limits {
    size_t max_body;     /* request body / WebSocket message, bytes         */
    int    max_tokens;   /* tokens one generation may ask for               */
    int    ctx;          /* context per sequence on the device, tokens      */
} srv_limits;

/* ------------------------------------------------------------- requests --- */

/* One generation's settings, as a request gives them. */
typedef struct srv_gen {
    int      max_tokens;           /* tokens to generate, >= 0              */
    int      cut_to;               /* the request asked for more than the
                                      server's --max-tokens: that limit, which
                                      max_tokens now is; else 0              */
    float    temperature, top_p;   /* 0: greedy; top_p in (0,1], 1: off     */
    uint64_t seed;
    char    *stop[SRV_MAX_STOP];   /* owned, n_stop of them                 */
    int      n_stop;
} srv_gen;

/* What a client asks of its session. */
typedef enum srv_cmd_kind {
    SRV_GENERATE,   /* append text (may be empty), then generate            */
    SRV_STEER,      /* stop the running generation, then as SRV_GENERATE     */
    SRV_RESET,      /* stop the running generation, empty the sequence       */
} srv_cmd_kind;

typedef struct srv_cmd {
    srv_cmd_kind kind;
    char        *text;       /* to append, UTF-8 (owned); NULL: none         */
    srv_gen      gen;
    double       t_recv;     /* when the request arrived (srv_now), s        */
    int          cancelled;  /* an interrupt came before it started          */
    struct srv_cmd *next;
} srv_cmd;

void srv_cmd_free(srv_cmd *c);
void srv_gen_free(srv_gen *g);

/* The chat template /v1/chat/completions formats with. */
typedef struct srv_chat {
    const char *family;   /* a tsr_chat_template_list() name (static)        */
    const char *tmpl;     /* the model's template text (details of the
                             family), or NULL                                */
} srv_chat;

/* request.c: OpenAI-style JSON bodies into commands.  Each returns NULL
 * after writing a one-line reason into err (and the offending field into
 * *param, or NULL); the caller answers 400.  Unknown fields are ignored;
 * known fields of the wrong type or range are refused. */
typedef struct srv_http_req {
    srv_cmd *cmd;
    int      stream;          /* "stream": true                              */
    int      include_usage;   /* "stream_options": {"include_usage": true}   */
    char     model[128];      /* "model" as the client named it              */
    int      model_set;       /* 1: "model" given (in model); 2: given, and
                                 longer than model holds                     */
} srv_http_req;

/* chat: NULL for /v1/completions ("prompt"), else the template that
 * formats /v1/chat/completions' "messages". */
int srv_parse_completion(const char *body, size_t len, const srv_limits *lim, const srv_chat *chat,
                         srv_http_req *out, char *err, size_t errlen, const char **param);

/* A request's sampling fields ("max_tokens", "temperature", ...) into g,
 * starting from the defaults in g.  json is a jansson json_t *.  A token
 * count below min_tokens is refused: 1 for HTTP (OpenAI refuses 0), 0 for
 * a WebSocket message (0: append the text only); one above lim->max_tokens
 * is cut to it (g->cut_to says so; the context cuts a generation short
 * too, with finish_reason "length").  Returns 0, or -1 with err filled. */
/* The settings of a generation whose request gives none: max_tokens
 * tokens, defaults.h's temperature, top_p 1 (off, as OpenAI's) and a
 * random seed (a different one each call). */
void srv_gen_defaults(srv_gen *g, int max_tokens);

int srv_parse_gen(const void *json, const srv_limits *lim, int min_tokens, srv_gen *g,
                  char *err, size_t errlen, const char **param);

/* chat_template.c: messages (a jansson array) into one prompt with the
 * chat template chat names (tsr_chat_format, with the generation prompt;
 * the families are documented in docs/server.md).  Returns a malloc'd
 * string of at most max_bytes bytes, or NULL with err filled. */
char *srv_chat_prompt(const void *messages, const srv_chat *chat, size_t max_bytes, char *err,
                      size_t errlen);

/* -------------------------------------------------------------- events --- */

typedef enum srv_reason {
    SRV_R_STOP,          /* end of text (EOS/BOS) or a stop string            */
    SRV_R_LENGTH,        /* max_tokens, or the context is full                */
    SRV_R_INTERRUPTED,   /* an interrupt, or a reset                          */
    SRV_R_STEERED,       /* a steer took over                                 */
    SRV_R_RESET,         /* the answer to a reset: the sequence is empty      */
    SRV_R_SHUTDOWN,      /* the server is stopping                            */
} srv_reason;

const char *srv_reason_name(srv_reason r);   /* "stop", "length", ...       */

/* One turn's figures: a done message's stats and an answer's usage. */
typedef struct srv_stats {
    int      prompt_tokens;       /* appended by this turn (BOS included)    */
    int      completion_tokens;   /* generated (an EOS included)             */
    int      history_tokens;      /* the sequence's length after the turn    */
    int      max_tokens_limit;    /* max_tokens was cut to --max-tokens: it;
                                     else 0                                  */
    uint64_t prefill_h2d;         /* bytes host->device of the append        */
    uint64_t decode_h2d, decode_d2h;
    double   queue_ms;            /* arrival to the first device call        */
    double   ttft_ms;             /* arrival to the first token              */
    double   decode_ms;           /* first token to the last                 */
    /* a turn that an interrupt, steer or reset stopped: tokens generated
     * after it reached the server (the token in flight: 0 or 1), and the
     * time from its arrival to the turn's end, ms */
    int      tokens_after_stop;
    double   stop_ms;
} srv_stats;

typedef enum srv_ev_kind {
    SRV_EV_STARTED,   /* the prompt is accepted: stats.prompt_tokens         */
    SRV_EV_TOKEN,     /* token (-1: text released at the end) and text       */
    SRV_EV_DONE,      /* reason, stats, text (the whole turn's text)         */
    SRV_EV_ERROR,     /* status (HTTP), code, message: the turn failed       */
    SRV_EV_CLOSE,     /* WebSocket: close with status (code) and message     */
} srv_ev_kind;

typedef struct srv_event {
    srv_ev_kind kind;
    int         token;
    char       *text;          /* UTF-8, owned; NULL when none               */
    size_t      len;
    srv_reason  reason;
    srv_stats   stats;
    int         status;
    const char *code;          /* static, e.g. "context_length_exceeded"     */
    char        message[240];
    struct srv_event *next;
} srv_event;

/* A new event of kind k (calloc'd, token -1; NULL when out of memory). */
srv_event *srv_event_new(srv_ev_kind k);
void srv_event_free(srv_event *e);

/* ---------------------------------------------------- scheduler, sessions --- */

typedef struct srv_sched   srv_sched;
typedef struct srv_session srv_session;
typedef struct srv_metrics srv_metrics;

typedef struct srv_sched_opts {
    int slots;           /* sequences the device holds (tsr_model_opts.n_seqs) */
    int queue;           /* sessions that may wait for a slot                  */
    int prefill_chunk;   /* tokens per append call; other sessions run between */
    int quantum;         /* tokens per generate call while others wait         */
} srv_sched_opts;

/* Start the scheduler thread over a loaded model (it takes over every
 * later call on dev and m until srv_sched_stop).  NULL on failure. */
srv_sched *srv_sched_start(tsr_device *dev, tsr_model *m, const srv_sched_opts *o,
                           srv_metrics *metrics);
/* Begin the shutdown: admit nobody, stop every generation within a token,
 * answer queued work with SRV_R_SHUTDOWN or a 503 error. */
void srv_sched_close(srv_sched *s);
/* Wait for the thread to finish the hung-up sessions, then free s.  The
 * caller closes the model and device after it. */
void srv_sched_stop(srv_sched *s);
/* The scheduler's gauges at one moment, as it publishes them for /health
 * and /metrics (which reads this struct and never calls the scheduler:
 * calls go scheduler -> metrics only). */
typedef struct srv_sched_snapshot {
    int slots;       /* sequence slots on the device                    */
    int busy;        /* held by a request or a WebSocket session        */
    int queued;      /* waiting for a slot                              */
    int queue_cap;   /* waiting places; beyond them, 503                */
} srv_sched_snapshot;

/* Fill *out with s's gauges, taken together under its lock.  Any thread. */
void srv_sched_snapshot_get(srv_sched *s, srv_sched_snapshot *out);
/* NULL while the device works; once a device call failed with
 * TSR_ERR_DEVICE (a card or a stage's rank is gone), why, for good: every
 * request is then answered 503.  Any thread. */
const char *srv_sched_device_lost(srv_sched *s);

/* A new session for a client (persistent: a WebSocket connection that
 * keeps its sequence between turns).  The caller holds one reference. */
srv_session *srv_session_new(srv_sched *s, int persistent);

enum { SRV_ADMITTED = 0, SRV_BUSY = 1, SRV_CLOSING = 2 };
/* Ask for a slot: SRV_ADMITTED (a slot, or a place in the queue; it waits
 * there), SRV_BUSY (slots and queue full), SRV_CLOSING (shutting down). */
int srv_session_admit(srv_session *ss);

/* Hand a command to the session (ownership passes).  A steer or reset
 * stops the running generation at its next token.  Returns 0, or -1 when
 * too many commands are pending (the caller still owns nothing: c is freed). */
int srv_session_submit(srv_session *ss, srv_cmd *c);
/* Stop the running generation (and those queued) within one token. */
void srv_session_interrupt(srv_session *ss);
/* Queue an event from the connection side (an error about a message, a
 * WebSocket close), so that it goes out in order with the others. */
void srv_session_post(srv_session *ss, srv_event *e);
/* The next event, waiting for it; NULL once the session is hung up and
 * nothing is left. */
srv_event *srv_session_next(srv_session *ss);
/* The client has gone (or is done): its slot is freed at once, pending
 * events are dropped, waiters wake. */
void srv_session_hangup(srv_session *ss);
void srv_session_unref(srv_session *ss);
/* A short id for the session ("42"), for response ids. */
uint64_t srv_session_id(const srv_session *ss);

/* -------------------------------------------------------------- metrics --- */

enum { SRV_EP_COMPLETIONS, SRV_EP_CHAT, SRV_EP_REALTIME, SRV_EP_MODELS, SRV_EP_HEALTH,
       SRV_EP_METRICS, SRV_EP_PAGE, SRV_EP_OTHER, SRV_EP_COUNT };

srv_metrics *srv_metrics_new(void);
void srv_metrics_free(srv_metrics *m);
void srv_metrics_request(srv_metrics *m, int endpoint, int status);
void srv_metrics_turn(srv_metrics *m, const srv_stats *st);
void srv_metrics_token_gap(srv_metrics *m, double seconds);
/* A decode call of the scheduler, over n sequences (1..8); got (n,)
 * (optional: NULL for a failed call) the tokens each kept. */
void srv_metrics_decode_call(srv_metrics *m, int n, const int *got);
/* Prometheus text format (version 0.0.4) into a malloc'd string: m's
 * counters and histograms, then the scheduler's gauges from snap. */
char *srv_metrics_text(srv_metrics *m, const srv_sched_snapshot *snap);

/* ------------------------------------------------------------ the server --- */

typedef struct srv_config {
    const char *host;        /* listening address, default 127.0.0.1         */
    int         port;        /* 0: any free port                             */
    const char *api_key;     /* NULL: none; else Bearer required             */
    const char *model_id;    /* the name /v1/models gives                    */
    srv_chat    chat;        /* the chat template                            */
    srv_limits  lim;
    int         verbose;     /* log every request to stderr                  */
} srv_config;

typedef struct srv_server srv_server;

/* The shared state every handler sees. */
typedef struct srv_ctx {
    const srv_config *cfg;
    srv_sched        *sched;
    srv_metrics      *metrics;
    tsr_model_info    info;
    int               closing;   /* atomic (srv_closing): shutdown begun    */
    int               inflight;  /* atomic: generations being answered and
                                    WebSocket connections open              */
} srv_ctx;

/* Has the shutdown begun?  (New requests get 503.) */
int  srv_closing(const srv_ctx *ctx);
/* Count a request or connection in and out of ctx->inflight. */
void srv_inflight(srv_ctx *ctx, int delta);
/* Shutdown: wait until nothing is in flight, at most seconds. */
void srv_drain(srv_ctx *ctx, double seconds);

/* server.c: start civetweb on cfg->host:cfg->port with every handler.
 * *port gets the port bound.  NULL (after printing why) on failure. */
srv_server *srv_server_start(srv_ctx *ctx, int threads, int *port);
/* Stop listening and wait for every connection to finish. */
void srv_server_stop(srv_server *srv);

/* http_api.c / http_info.c / realtime.c: the handlers server.c registers. */
int  srv_handle_completions(struct mg_connection *c, srv_ctx *ctx, int chat);
int  srv_handle_models(struct mg_connection *c, srv_ctx *ctx);
int  srv_handle_health(struct mg_connection *c, srv_ctx *ctx);
int  srv_handle_metrics(struct mg_connection *c, srv_ctx *ctx);
int  srv_handle_page(struct mg_connection *c, srv_ctx *ctx);
int  srv_ws_connect(const struct mg_connection *c, void *ctx);
void srv_ws_ready(struct mg_connection *c, void *ctx);
int  srv_ws_data(struct mg_connection *c, int bits, char *data, size_t len, void *ctx);
void srv_ws_close(const struct mg_connection *c, void *ctx);

/* http_util.c: shared pieces of the HTTP handlers. */
double srv_now(void);   /* monotonic clock, seconds */
/* 1 when the request may pass: no key configured, or "Authorization:
 * Bearer KEY" (or, when allow_query, ?api_key=KEY) matches. */
int  srv_authorized(struct mg_connection *c, const srv_ctx *ctx, int allow_query);
/* Send a complete response: status, content type, body (len bytes), and
 * extra "Name: value" headers (NULL-terminated pairs, may be NULL). */
int  srv_send(struct mg_connection *c, int status, const char *type, const char *body,
              size_t len, const char *const *headers);
/* The Date header (RFC 9110), made here with gmtime_r: civetweb makes it
 * with gmtime(), whose buffer its threads share, when a response has none. */
void srv_date_header(struct mg_connection *c);
/* An OpenAI-style error: {"error": {"message", "type", "param", "code"}}. */
int  srv_send_error(struct mg_connection *c, int status, const char *code, const char *param,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The request's path, %-decoded into buf (size bytes; SRV_PATH_MAX: a
 * longer path is refused, 400).  Returns its length, or -1 when it holds a
 * NUL byte (%00) or does not fit: such a path names nothing here. */
#define SRV_PATH_MAX 4096   /* on a connection thread's stack (100 KB)  */
int srv_path(const struct mg_connection *c, char *buf, size_t size);
/* Refuse a WebSocket upgrade request with an HTTP status and a JSON
 * error (civetweb's own answer API cannot, see http_util.c). */
void srv_refuse_upgrade(struct mg_connection *c, int status, const char *code, const char *msg);
/* The same answer for a request refused before civetweb could frame one
 * (a misframed request, an error civetweb raised), with Connection: close;
 * the caller sees that the connection does close. */
void srv_refuse_close(struct mg_connection *c, int status, const char *code, const char *msg);
/* Read the whole body (at most max bytes) into a malloc'd buffer.
 * Returns 0, or the HTTP status to answer (413 too large, 400 unreadable,
 * 411 length required, 500 no memory). */
int  srv_read_body(struct mg_connection *c, size_t max, char **body, size_t *len);

/* bigstack.c: fn(arg) on a thread with a stack deep enough for jansson's
 * 2048 levels (civetweb's threads have 100 KB); returns when fn has.
 * -1 when no thread could be started (fn did not run). */
int  srv_on_big_stack(void (*fn)(void *), void *arg);
/* 1 when text (len bytes) cannot nest deep enough to need that: fewer
 * than 128 '[' and '{' bytes in all, strings included. */
int  srv_json_shallow(const char *text, size_t len);

/* page.c: the playground page, built into the binary. */
extern const char srv_page_html[];
extern const unsigned int srv_page_html_len;

#endif
