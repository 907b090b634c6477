/* realtime.c - the persistent WebSocket session at /v1/realtime.
 *
 * A connection owns one sequence for its lifetime, so its KV cache carries
 * over from message to message.  Client messages (JSON text frames):
 *   {"type": "generate", "text": T, "max_tokens": N, ...sampling}
 *   {"type": "steer", "text": T, ...}    stop, append T, go on generating
 *   {"type": "interrupt"}                stop within one token
 *   {"type": "reset"}                    stop, empty the sequence
 * Server messages:
 *   {"type": "token", "id": N, "text": T}
 *   {"type": "done", "reason": R, "text": T, "stats": {...}}
 *   {"type": "error", "code": C, "message": M}
 * docs/server.md has the whole protocol and one exchange.
 *
 * civetweb reads frames on the connection's thread and calls srv_ws_data;
 * a writer thread per connection turns the session's events into frames,
 * so a slow reader never holds up the scheduler.  Closes go through the
 * writer too, so that nothing is written after one. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <civetweb.h>
#include <jansson.h>

#include "serve.h"

typedef struct ws_conn {
    srv_ctx              *ctx;
    struct mg_connection *c;
    srv_session          *ss;
    pthread_t             writer;
    pthread_mutex_t       mu;
    pthread_cond_t        cv;
    int                   close_sent;   /* [mu] the writer sent a close      */
    int                   writer_done;  /* [mu]                              */
    int                   refused;      /* no slot: only a close follows     */
    char                 *msg;          /* (msg_len,) a fragmented message   */
    size_t                msg_len;
} ws_conn;

/* ---------------------------------------------------------- the writer --- */

static json_t *stats_json(const srv_stats *st)
{
    json_t *o = json_pack("{s:i,s:i,s:i,s:I,s:I,s:I,s:f,s:f,s:f}", "prompt_tokens",
                          st->prompt_tokens, "completion_tokens", st->completion_tokens,
                          "history_tokens", st->history_tokens, "prefill_h2d_bytes",
                          (json_int_t)st->prefill_h2d, "decode_h2d_bytes",
                          (json_int_t)st->decode_h2d, "decode_d2h_bytes",
                          (json_int_t)st->decode_d2h, "queue_ms", st->queue_ms, "ttft_ms",
                          st->ttft_ms, "decode_ms", st->decode_ms);
    /* max_tokens cut to the server's --max-tokens: that limit */
    if (o && st->max_tokens_limit)
        json_object_set_new(o, "max_tokens_limit", json_integer(st->max_tokens_limit));
    /* a turn an interrupt or steer stopped: how fast the stop took hold */
    if (o && st->stop_ms > 0) {
        json_object_set_new(o, "tokens_after_stop", json_integer(st->tokens_after_stop));
        json_object_set_new(o, "stop_ms", json_real(st->stop_ms));
    }
    return o;
}

/* The message for an event; NULL for events the protocol does not show. */
static json_t *event_json(const srv_event *e)
{
    const char *text = e->text ? e->text : "";
    switch (e->kind) {
    case SRV_EV_TOKEN:
        return e->token >= 0
            ? json_pack("{s:s,s:i,s:s%}", "type", "token", "id", e->token, "text", text, e->len)
            : json_pack("{s:s,s:s%}", "type", "token", "text", text, e->len);
    case SRV_EV_DONE:
        return json_pack("{s:s,s:s,s:s%,s:o}", "type", "done", "reason",
                         srv_reason_name(e->reason), "text", text, e->len, "stats",
                         stats_json(&e->stats));
    case SRV_EV_ERROR:
        return json_pack("{s:s,s:s,s:s}", "type", "error", "code", e->code ? e->code : "error",
                         "message", e->message);
    default:
        return NULL;
    }
}

static int send_close(struct mg_connection *c, int code, const char *reason)
{
    unsigned char frame[125];
    size_t n = strlen(reason);
    if (n > sizeof frame - 2) n = sizeof frame - 2;
    frame[0] = (unsigned char)(code >> 8);
    frame[1] = (unsigned char)code;
    memcpy(frame + 2, reason, n);
    return mg_websocket_write(c, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE, (const char *)frame, n + 2);
}

static void *writer_main(void *arg)
{
    ws_conn *w = arg;
    for (srv_event *e; (e = srv_session_next(w->ss)); srv_event_free(e)) {
        if (e->kind == SRV_EV_CLOSE) {
            send_close(w->c, e->status, e->message);
            pthread_mutex_lock(&w->mu);
            w->close_sent = 1;
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
            srv_event_free(e);
            break;
        }
        json_t *o = event_json(e);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        int rc = text ? mg_websocket_write(w->c, MG_WEBSOCKET_OPCODE_TEXT, text, strlen(text)) : 1;
        free(text);
        if (rc <= 0) {               /* the client is gone */
            srv_event_free(e);
            break;
        }
    }
    pthread_mutex_lock(&w->mu);
    w->writer_done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void post_error(ws_conn *w, const char *code, const char *fmt, const char *detail)
{
    srv_event *e = srv_event_new(SRV_EV_ERROR);
    if (!e) return;
    e->code = code;
    snprintf(e->message, sizeof e->message, fmt, detail);
    srv_session_post(w->ss, e);
}

/* Queue a close and wait (at most 2 s) until the writer has sent it, so
 * that civetweb may close the socket after it. */
static void close_with(ws_conn *w, int code, const char *reason)
{
    srv_event *e = srv_event_new(SRV_EV_CLOSE);
    if (!e) return;
    e->status = code;
    snprintf(e->message, sizeof e->message, "%s", reason);
    srv_session_post(w->ss, e);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    pthread_mutex_lock(&w->mu);
    while (!w->close_sent && !w->writer_done &&
           pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&w->mu);
}

/* ------------------------------------------------------- the handshake --- */

/* A browser page on another site must not drive the server: a request
 * that names an Origin must come from this server's own page. */
static int same_origin(const struct mg_connection *c)
{
    const char *origin = mg_get_header(c, "Origin"), *host = mg_get_header(c, "Host");
    if (!origin) return 1;
    return host && !strncmp(origin, "http://", 7) && !strcmp(origin + 7, host);
}

int srv_ws_connect(const struct mg_connection *cc, void *arg)
{
    srv_ctx *ctx = arg;
    struct mg_connection *c = (struct mg_connection *)cc;   /* civetweb's signature */
    int st = 0;
    if (!srv_authorized(c, ctx, 1)) {
        st = 401;
        srv_refuse_upgrade(c, st, "invalid_api_key",
               "a valid 'Authorization: Bearer KEY' header or ?api_key= is required");
    } else if (!same_origin(c)) {
        st = 403;
        srv_refuse_upgrade(c, st, "bad_origin", "WebSocket connections from another origin are refused");
    } else if (srv_closing(ctx)) {
        st = 503;
        srv_refuse_upgrade(c, st, "shutting_down", "the server is shutting down");
    } else if (srv_sched_device_lost(ctx->sched)) {
        st = 503;
        srv_refuse_upgrade(c, st, "device_unavailable", "the device failed");
    }
    srv_metrics_request(ctx->metrics, SRV_EP_REALTIME, st ? st : 101);
    return st != 0;
}

void srv_ws_ready(struct mg_connection *c, void *arg)
{
    srv_ctx *ctx = arg;
    ws_conn *w = calloc(1, sizeof *w);
    if (!w) return;
    w->ctx = ctx;
    w->c = c;
    if (!(w->ss = srv_session_new(ctx->sched, 1))) {
        free(w);
        return;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int adm = srv_session_admit(w->ss);
    if (pthread_create(&w->writer, NULL, writer_main, w) != 0) {
        srv_session_hangup(w->ss);
        srv_session_unref(w->ss);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return;
    }
    mg_set_user_connection_data(c, w);
    srv_inflight(ctx, 1);
    if (adm != SRV_ADMITTED) {
        w->refused = 1;
        post_error(w, adm == SRV_BUSY ? "server_busy" : "shutting_down", "%s",
                   adm == SRV_BUSY ? "every slot is busy and the queue is full"
                                   : "the server is shutting down");
        close_with(w, 1013, adm == SRV_BUSY ? "server busy" : "shutting down");
    }
}

void srv_ws_close(const struct mg_connection *c, void *arg)
{
    (void)arg;
    ws_conn *w = mg_get_user_connection_data(c);
    if (!w) return;
    srv_session_hangup(w->ss);
    pthread_join(w->writer, NULL);
    srv_session_unref(w->ss);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->msg);
    srv_inflight(w->ctx, -1);
    free(w);
}

/* ----------------------------------------------------------- messages --- */

static srv_cmd *new_cmd(ws_conn *w, srv_cmd_kind kind, const json_t *o)
{
    const srv_limits *lim = &w->ctx->cfg->lim;
    srv_cmd *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->kind = kind;
    c->t_recv = srv_now();
    srv_gen_defaults(&c->gen, lim->max_tokens);
    char err[240];
    const char *param = NULL;
    const json_t *text = json_object_get(o, "text");
    if (text && !json_is_string(text) && !json_is_null(text)) {
        post_error(w, "invalid_request", "%s", "'text' must be a string");
    } else if (srv_parse_gen(o, lim, 0, &c->gen, err, sizeof err, &param)) {
        post_error(w, "invalid_request", "%s", err);
    } else if (!(c->text = strdup(json_is_string(text) ? json_string_value(text) : ""))) {
        post_error(w, "server_error", "%s", "out of memory");
    } else {
        return c;
    }
    srv_cmd_free(c);
    return NULL;
}

typedef struct msg_job {
    ws_conn    *w;
    const char *data;
    size_t      len;
} msg_job;

static void on_message_deep(void *arg);

/* A whole message: checked and acted on, from a deep stack when it might
 * nest deep (bigstack.c). */
static void on_message(ws_conn *w, const char *data, size_t len)
{
    msg_job j = { w, data, len };
    if (srv_json_shallow(data, len))
        on_message_deep(&j);
    else if (srv_on_big_stack(on_message_deep, &j) != 0)
        post_error(w, "server_error", "%s", "cannot start a thread for the message");
}

static void on_message_deep(void *arg)
{
    msg_job *j = arg;
    ws_conn *w = j->w;
    const char *data = j->data;
    size_t len = j->len;
    json_error_t je;
    json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(o)) {
        char msg[200];
        if (o) snprintf(msg, sizeof msg, "a message must be a JSON object");
        else snprintf(msg, sizeof msg, "invalid JSON at column %d: %s", je.column, je.text);
        post_error(w, "invalid_json", "%s", msg);
        json_decref(o);
        return;
    }
    const json_t *type = json_object_get(o, "type");
    const char *t = json_is_string(type) ? json_string_value(type) : "";
    if (!strcmp(t, "interrupt")) {
        srv_session_interrupt(w->ss);
    } else if (!strcmp(t, "generate") || !strcmp(t, "steer") || !strcmp(t, "reset")) {
        srv_cmd_kind kind = t[0] == 'g' ? SRV_GENERATE : t[0] == 's' ? SRV_STEER : SRV_RESET;
        srv_cmd *c = new_cmd(w, kind, o);
        if (c && srv_session_submit(w->ss, c))
            post_error(w, "busy", "%s", "too many messages are waiting; wait for a done");
    } else {
        post_error(w, "unknown_type", "%s",
                   "'type' must be generate, steer, interrupt or reset");
    }
    json_decref(o);
}

/* Valid UTF-8 (RFC 3629), as jansson checks every string it makes. */
static int valid_utf8(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    json_decref(j);
    return j != NULL;
}

/* A close code a peer may send (RFC 6455 section 7.4): 1000-1003,
 * 1007-1011, or 3000-4999 (registered and private). */
static int close_code_ok(int code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
           (code >= 3000 && code <= 4999);
}

/* What RFC 6455 makes a protocol error (1002) in a frame's first byte and
 * length, that civetweb 1.15 passes on: a reserved bit set with no
 * extension agreed (section 5.2), a control frame fragmented or over 125
 * bytes (section 5.5; of the control frames only a close reaches here
 * while civetweb's ping-pong is on).  NULL when the frame is well formed. */
static const char *frame_error(int bits, size_t len)
{
    int op = bits & 0x0f;
    if (bits & 0x70) return "reserved bits set";
    if (op >= 0x8 && !(bits & 0x80)) return "a fragmented control frame";
    if (op >= 0x8 && len > 125) return "a control frame over 125 bytes";
    return NULL;
}

/* A close frame: the answer echoes the peer's code (1000 when it gave
 * none), or fails a close that breaks RFC 6455 section 5.5.1 or 7.4. */
static void on_close_frame(ws_conn *w, const char *data, size_t len)
{
    pthread_mutex_lock(&w->mu);
    int sent = w->close_sent;
    pthread_mutex_unlock(&w->mu);
    int code = len >= 2 ? ((unsigned char)data[0] << 8) | (unsigned char)data[1] : 1000;
    const char *why = "";
    if (len == 1 || (len >= 2 && !close_code_ok(code))) {
        code = 1002;
        why = len == 1 ? "a close frame of 1 byte" : "an invalid close code";
    } else if (len > 2 && !valid_utf8(data + 2, len - 2)) {
        code = 1007;
        why = "the close reason is not UTF-8";
    }
    if (!sent) close_with(w, code, why);
}

/* A frame of a text message that is neither whole in one frame nor
 * wrong: gathered into w->msg (RFC 6455 section 5.4, bounded by the
 * caller), handled once its last frame is in.  Returns srv_ws_data's. */
static int on_fragment(ws_conn *w, const char *data, size_t len, int fin)
{
    char *p = realloc(w->msg, w->msg_len + len + 1);
    if (!p) {
        close_with(w, 1011, "out of memory");
        return 0;
    }
    w->msg = p;
    memcpy(w->msg + w->msg_len, data, len);
    w->msg_len += len;
    if (fin) {
        if (!valid_utf8(w->msg, w->msg_len)) {
            close_with(w, 1007, "a text message that is not UTF-8");
            return 0;
        }
        on_message(w, w->msg, w->msg_len);
        free(w->msg);
        w->msg = NULL;
        w->msg_len = 0;
    }
    return 1;
}

/* Why a data frame of opcode op cannot be taken, with its close code in
 * *code; NULL when it can. */
static const char *data_frame_error(const ws_conn *w, int op, size_t len, int *code)
{
    *code = 1002;
    if (op == MG_WEBSOCKET_OPCODE_BINARY) {
        *code = 1003;
        return "binary messages are not supported";
    }
    if (op == MG_WEBSOCKET_OPCODE_CONTINUATION && !w->msg) return "continuation without a message";
    if (op != MG_WEBSOCKET_OPCODE_TEXT && op != MG_WEBSOCKET_OPCODE_CONTINUATION)
        return "unknown opcode";
    if (w->msg_len + len > w->ctx->cfg->lim.max_body) {
        *code = 1009;
        return "message too big";
    }
    if (op == MG_WEBSOCKET_OPCODE_TEXT && w->msg) return "a new message inside a fragmented one";
    return NULL;
}

int srv_ws_data(struct mg_connection *c, int bits, char *data, size_t len, void *arg)
{
    (void)arg;
    ws_conn *w = mg_get_user_connection_data(c);
    if (!w) return 0;
    int op = bits & 0x0f, fin = bits & 0x80, code;
    const char *bad = frame_error(bits, len);
    if (bad) {
        close_with(w, 1002, bad);
        return 0;
    }
    if (op == MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE) {
        on_close_frame(w, data, len);
        return 0;
    }
    /* civetweb answers pings and takes pongs itself while its
     * enable_websocket_ping_pong is on (server.c): this is for when not */
    if (op == MG_WEBSOCKET_OPCODE_PING) {
        mg_websocket_write(c, MG_WEBSOCKET_OPCODE_PONG, data, len);
        return 1;
    }
    if (op == MG_WEBSOCKET_OPCODE_PONG || w->refused) return 1;
    if ((bad = data_frame_error(w, op, len, &code))) {
        close_with(w, code, bad);
        return 0;
    }
    if (op == MG_WEBSOCKET_OPCODE_TEXT && fin) {   /* the usual case: one frame */
        if (!valid_utf8(data, len)) {
            close_with(w, 1007, "a text message that is not UTF-8");
            return 0;
        }
        on_message(w, data, len);
        return 1;
    }
    return on_fragment(w, data, len, fin);
}
