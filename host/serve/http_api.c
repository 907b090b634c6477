/* http_api.c - POST /v1/completions and /v1/chat/completions, OpenAI's
 * wire format: one JSON answer, or with "stream": true server-sent events
 * (one "data: {chunk}" per text piece, a chunk with the finish_reason,
 * optionally one with usage, then "data: [DONE]").
 *
 * The handler runs on civetweb's thread for the connection: it checks the
 * request, queues it on a one-shot session and writes out the session's
 * events.  A streamed client that goes away is noticed at the next write
 * and its slot freed at once; a non-streamed one is noticed when the
 * answer is written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <civetweb.h>
#include <jansson.h>

#include "serve.h"

#define STATUS_CLIENT_GONE 499   /* for /metrics: the client closed first */

typedef struct reply {
    struct mg_connection *c;
    srv_ctx     *ctx;
    int          chat, stream, include_usage;
    char         id[40];
    json_int_t   created;
} reply;

/* ----------------------------------------------------------- the chunks --- */

/* {"id", "object", "created", "model", "choices": [choice]} */
static json_t *envelope(const reply *r, const char *object, json_t *choice)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:[o]}", "id", r->id, "object", object, "created",
                     r->created, "model", r->ctx->cfg->model_id, "choices", choice);
}

/* OpenAI's usage, and when max_tokens was cut, the limit that cut it. */
static json_t *usage(const srv_stats *st)
{
    json_t *u = json_pack("{s:i,s:i,s:i}", "prompt_tokens", st->prompt_tokens,
                          "completion_tokens", st->completion_tokens, "total_tokens",
                          st->prompt_tokens + st->completion_tokens);
    if (u && st->max_tokens_limit)
        json_object_set_new(u, "max_tokens_limit", json_integer(st->max_tokens_limit));
    return u;
}

/* The header that names the server's --max-tokens on every answer. */
#define LIMIT_HEADER "X-Max-Tokens-Limit"

/* One streamed piece of text (text NULL: the role chunk that opens a chat
 * stream); finish: NULL, or the finish_reason of the last chunk. */
static json_t *chunk(const reply *r, const char *text, size_t len, const char *finish)
{
    json_t *fin = finish ? json_string(finish) : json_null();
    if (!r->chat)
        return envelope(r, "text_completion",
                        json_pack("{s:s%,s:i,s:n,s:o}", "text", text ? text : "", len, "index", 0,
                                  "logprobs", "finish_reason", fin));
    json_t *delta = finish ? json_object()
                  : text ? json_pack("{s:s%}", "content", text, len)
                         : json_pack("{s:s,s:s}", "role", "assistant", "content", "");
    return envelope(r, "chat.completion.chunk",
                    json_pack("{s:i,s:o,s:n,s:o}", "index", 0, "delta", delta, "logprobs",
                              "finish_reason", fin));
}

/* "data: JSON\n\n" as one HTTP chunk; steals o.  -1 when the client is gone. */
static int send_event(struct mg_connection *c, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) return 0;          /* nothing we could encode: skip, keep going */
    size_t n = strlen(text);
    char *line = malloc(n + 9);
    int rc = 0;
    if (line) {
        memcpy(line, "data: ", 6);
        memcpy(line + 6, text, n);
        memcpy(line + 6 + n, "\n\n", 3);
        rc = mg_send_chunk(c, line, (unsigned)(n + 8)) < 0 ? -1 : 0;
    }
    free(line);
    free(text);
    return rc;
}

/* ------------------------------------------------------------ streaming --- */

static int stream(reply *r, srv_session *ss)
{
    struct mg_connection *c = r->c;
    mg_response_header_start(c, 200);
    srv_date_header(c);
    mg_response_header_add(c, "Content-Type", "text/event-stream", -1);
    mg_response_header_add(c, "Cache-Control", "no-cache", -1);
    mg_response_header_add(c, "Transfer-Encoding", "chunked", -1);
    char lim[16];
    snprintf(lim, sizeof lim, "%d", r->ctx->cfg->lim.max_tokens);
    mg_response_header_add(c, LIMIT_HEADER, lim, -1);
    mg_response_header_send(c);
    if (r->chat && send_event(c, chunk(r, NULL, 0, NULL))) return STATUS_CLIENT_GONE;
    for (srv_event *e; (e = srv_session_next(ss)); srv_event_free(e)) {
        int gone = 0;
        if (e->kind == SRV_EV_TOKEN && e->len) {
            gone = send_event(c, chunk(r, e->text, e->len, NULL));
        } else if (e->kind == SRV_EV_DONE || e->kind == SRV_EV_ERROR) {
            if (e->kind == SRV_EV_DONE) {
                gone = send_event(c, chunk(r, "", 0, srv_reason_name(e->reason)));
                if (!gone && r->include_usage) {
                    gone = send_event(c, json_pack("{s:s,s:s,s:I,s:s,s:[],s:o}", "id", r->id,
                                                   "object", r->chat ? "chat.completion.chunk"
                                                                     : "text_completion",
                                                   "created", r->created, "model",
                                                   r->ctx->cfg->model_id, "choices", "usage",
                                                   usage(&e->stats)));
                }
            } else {
                gone = send_event(c, json_pack("{s:{s:s,s:s,s:s?}}", "error", "message",
                                               e->message, "type", "server_error", "code",
                                               e->code));
            }
            if (!gone) gone = mg_send_chunk(c, "data: [DONE]\n\n", 14) < 0;
            if (!gone) gone = mg_send_chunk(c, "", 0) < 0;   /* the last chunk */
            srv_event_free(e);
            return gone ? STATUS_CLIENT_GONE : 200;
        }
        if (gone) {
            srv_event_free(e);
            return STATUS_CLIENT_GONE;
        }
    }
    return STATUS_CLIENT_GONE;
}

/* --------------------------------------------------------- one answer --- */

static int answer_whole(reply *r, srv_session *ss)
{
    for (srv_event *e; (e = srv_session_next(ss)); srv_event_free(e)) {
        if (e->kind == SRV_EV_ERROR) {
            int st = e->status;
            srv_send_error(r->c, st, e->code, NULL, "%s", e->message);
            srv_event_free(e);
            return st;
        }
        if (e->kind != SRV_EV_DONE) continue;
        const char *text = e->text ? e->text : "", *fin = srv_reason_name(e->reason);
        json_t *choice = r->chat
            ? json_pack("{s:i,s:{s:s,s:s%},s:n,s:s}", "index", 0, "message", "role", "assistant",
                        "content", text, e->len, "logprobs", "finish_reason", fin)
            : json_pack("{s:s%,s:i,s:n,s:s}", "text", text, e->len, "index", 0, "logprobs",
                        "finish_reason", fin);
        json_t *o = envelope(r, r->chat ? "chat.completion" : "text_completion", choice);
        json_object_set_new(o, "usage", usage(&e->stats));
        char *body = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        srv_event_free(e);
        if (!body) {
            srv_send_error(r->c, 500, "server_error", NULL, "cannot encode the answer");
            return 500;
        }
        char lim[16];
        snprintf(lim, sizeof lim, "%d", r->ctx->cfg->lim.max_tokens);
        const char *hdr[] = { LIMIT_HEADER, lim, NULL };
        int rc = srv_send(r->c, 200, "application/json", body, strlen(body), hdr);
        free(body);
        return rc ? STATUS_CLIENT_GONE : 200;
    }
    return STATUS_CLIENT_GONE;
}

/* ----------------------------------------------------------- the handler --- */

static int is_json(const char *type)
{
    if (!type) return 0;
    while (*type == ' ') type++;
    size_t n = strlen("application/json");
    return !strncasecmp(type, "application/json", n) && (type[n] == '\0' || type[n] == ';' ||
                                                        type[n] == ' ');
}

/* Wait for the prompt to be accepted; then the status line can be sent. */
static int wait_started(reply *r, srv_session *ss)
{
    for (srv_event *e; (e = srv_session_next(ss)); srv_event_free(e)) {
        if (e->kind == SRV_EV_STARTED) {
            srv_event_free(e);
            return 0;
        }
        int st = e->kind == SRV_EV_ERROR ? e->status : 503;
        if (e->kind == SRV_EV_ERROR)
            srv_send_error(r->c, st, e->code, e->code && !strcmp(e->code, "context_length_exceeded")
                                                  ? (r->chat ? "messages" : "prompt") : NULL,
                           "%s", e->message);
        else
            srv_send_error(r->c, 503, "shutting_down", NULL, "the server is shutting down");
        srv_event_free(e);
        return st;
    }
    return STATUS_CLIENT_GONE;
}

/* The body is parsed on a deep stack when it might nest deep (bigstack.c). */
typedef struct parse_job {
    const char       *body;
    size_t            len;
    const srv_limits *lim;
    const srv_chat   *chat;   /* NULL: a completion */
    int               bad;
    srv_http_req      req;
    char              err[300];
    const char       *param;
} parse_job;

static void parse_on_big_stack(void *arg)
{
    parse_job *j = arg;
    j->bad = srv_parse_completion(j->body, j->len, j->lim, j->chat, &j->req, j->err,
                                  sizeof j->err, &j->param);
}

static int handle(struct mg_connection *c, srv_ctx *ctx, int chat)
{
    const struct mg_request_info *ri = mg_get_request_info(c);
    if (strcmp(ri->request_method, "POST")) {
        const char *allow[] = { "Allow", "POST", NULL };
        const char *msg = "{\"error\":{\"message\":\"use POST\",\"type\":\"invalid_request_error\"}}";
        srv_send(c, 405, "application/json", msg, strlen(msg), allow);
        return 405;
    }
    if (!srv_authorized(c, ctx, 0)) {
        srv_send_error(c, 401, "invalid_api_key", NULL, "a valid 'Authorization: Bearer KEY' "
                                                        "header is required");
        return 401;
    }
    if (!is_json(mg_get_header(c, "Content-Type"))) {
        srv_send_error(c, 415, "unsupported_media_type", NULL,
                       "the body must be JSON (Content-Type: application/json)");
        return 415;
    }
    if (srv_closing(ctx)) {
        srv_send_error(c, 503, "shutting_down", NULL, "the server is shutting down");
        return 503;
    }
    const char *lost = srv_sched_device_lost(ctx->sched);
    if (lost) {
        srv_send_error(c, 503, "device_unavailable", NULL, "the device failed: %s", lost);
        return 503;
    }
    char *body;
    size_t len;
    int st = srv_read_body(c, ctx->cfg->lim.max_body, &body, &len);
    if (st) {
        if (st == 411)
            srv_send_error(c, st, "length_required", NULL,
                           "a body needs Content-Length or Transfer-Encoding: chunked");
        else
            srv_send_error(c, st, st == 413 ? "request_too_large" : "invalid_body", NULL,
                           st == 413 ? "the body is larger than %zu bytes" : "cannot read the body",
                           ctx->cfg->lim.max_body);
        return st;
    }
    parse_job pj = { .body = body, .len = len, .lim = &ctx->cfg->lim,
                     .chat = chat ? &ctx->cfg->chat : NULL, .bad = -1 };
    snprintf(pj.err, sizeof pj.err, "out of memory");
    if (srv_json_shallow(body, len)) parse_on_big_stack(&pj);
    else if (srv_on_big_stack(parse_on_big_stack, &pj) != 0) pj.bad = -1;
    free(body);
    if (pj.bad) {
        srv_send_error(c, 400, "invalid_request", pj.param, "%s", pj.err);
        return 400;
    }
    srv_http_req req = pj.req;
    /* One model is served, under one name (--alias, else the file's);
     * a request for another is refused as OpenAI refuses an unknown model
     * (no "model" at all: the served one) */
    if (req.model_set && (req.model_set == 2 || strcmp(req.model, ctx->cfg->model_id))) {
        srv_cmd_free(req.cmd);
        srv_send_error(c, 404, "model_not_found", "model",
                       "this server serves one model, '%s' (tessera serve --alias names it)",
                       ctx->cfg->model_id);
        return 404;
    }
    srv_session *ss = srv_session_new(ctx->sched, 0);
    if (!ss) {
        srv_cmd_free(req.cmd);
        srv_send_error(c, 500, "server_error", NULL, "out of memory");
        return 500;
    }
    int adm = srv_session_admit(ss);
    if (adm != SRV_ADMITTED) {
        srv_cmd_free(req.cmd);
        srv_session_unref(ss);
        if (adm == SRV_BUSY)
            srv_send_error(c, 503, "server_busy", NULL, "every slot is busy and the queue is full");
        else
            srv_send_error(c, 503, "shutting_down", NULL, "the server is shutting down");
        return 503;
    }
    srv_session_submit(ss, req.cmd);
    reply r = { .c = c, .ctx = ctx, .chat = chat, .stream = req.stream,
                .include_usage = req.include_usage,
                .created = (json_int_t)time(NULL) };
    snprintf(r.id, sizeof r.id, "%s-%llu", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)srv_session_id(ss));
    st = wait_started(&r, ss);
    if (st == 0) st = r.stream ? stream(&r, ss) : answer_whole(&r, ss);
    srv_session_hangup(ss);
    srv_session_unref(ss);
    return st;
}

int srv_handle_completions(struct mg_connection *c, srv_ctx *ctx, int chat)
{
    srv_inflight(ctx, 1);
    int st = handle(c, ctx, chat);
    srv_inflight(ctx, -1);
    srv_metrics_request(ctx->metrics, chat ? SRV_EP_CHAT : SRV_EP_COMPLETIONS, st);
    return st;
}
