/* http_info.c - the small GET endpoints: /health (open, for probes),
 * /v1/models and /metrics (behind the API key when there is one), and the
 * playground page at / (open: it asks for the key itself). */
#include <stdlib.h>
#include <string.h>

#include <civetweb.h>
#include <jansson.h>

#include "serve.h"

/* 0 when the request is a GET, else the status sent. */
static int only_get(struct mg_connection *c)
{
    if (!strcmp(mg_get_request_info(c)->request_method, "GET")) return 0;
    const char *allow[] = { "Allow", "GET", NULL };
    const char *msg = "{\"error\":{\"message\":\"use GET\",\"type\":\"invalid_request_error\"}}";
    srv_send(c, 405, "application/json", msg, strlen(msg), allow);
    return 405;
}

static int deny(struct mg_connection *c)
{
    srv_send_error(c, 401, "invalid_api_key", NULL,
                   "a valid 'Authorization: Bearer KEY' header is required");
    return 401;
}

static int send_json(struct mg_connection *c, int status, json_t *o)
{
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!body) {
        srv_send_error(c, 500, "server_error", NULL, "out of memory");
        return 500;
    }
    srv_send(c, status, "application/json", body, strlen(body), NULL);
    free(body);
    return status;
}

int srv_handle_health(struct mg_connection *c, srv_ctx *ctx)
{
    int st = only_get(c);
    if (!st) {
        srv_sched_snapshot g;
        srv_sched_snapshot_get(ctx->sched, &g);
        const char *lost = srv_sched_device_lost(ctx->sched);
        const char *status = srv_closing(ctx) ? "shutting_down" : lost ? "device_failed" : "ok";
        st = send_json(c, srv_closing(ctx) || lost ? 503 : 200,
                       json_pack("{s:s,s:i,s:i,s:i,s:i,s:s*}", "status", status, "slots", g.slots,
                                 "slots_busy", g.busy, "queue", g.queued, "queue_capacity",
                                 g.queue_cap,
                                 "error", lost));
    }
    srv_metrics_request(ctx->metrics, SRV_EP_HEALTH, st);
    return st;
}

static json_t *model_object(const srv_ctx *ctx)
{
    return json_pack("{s:s,s:s,s:i,s:s,s:i}", "id", ctx->cfg->model_id, "object", "model",
                     "created", 0, "owned_by", "tessera", "context_length", ctx->info.seq_len);
}

int srv_handle_models(struct mg_connection *c, srv_ctx *ctx)
{
    int st = only_get(c);
    if (!st && !srv_authorized(c, ctx, 0)) st = deny(c);
    if (!st) {
        char uri[SRV_PATH_MAX];
        if (srv_path(c, uri, sizeof uri) < 0) uri[0] = '\0';
        const char *name = uri + strlen("/v1/models");
        if (!*name || !strcmp(name, "/"))
            st = send_json(c, 200, json_pack("{s:s,s:[o]}", "object", "list", "data",
                                             model_object(ctx)));
        else if (name[0] == '/' && !strcmp(name + 1, ctx->cfg->model_id))
            st = send_json(c, 200, model_object(ctx));
        else {
            srv_send_error(c, 404, "model_not_found", "model",
                           "this server serves one model, '%s' (tessera serve --alias names it)",
                           ctx->cfg->model_id);
            st = 404;
        }
    }
    srv_metrics_request(ctx->metrics, SRV_EP_MODELS, st);
    return st;
}

int srv_handle_metrics(struct mg_connection *c, srv_ctx *ctx)
{
    int st = only_get(c);
    if (!st && !srv_authorized(c, ctx, 0)) st = deny(c);
    /* Counted before the text is made, so a scrape sees itself. */
    srv_metrics_request(ctx->metrics, SRV_EP_METRICS, st ? st : 200);
    if (!st) {
        srv_sched_snapshot g;
        srv_sched_snapshot_get(ctx->sched, &g);
        char *text = srv_metrics_text(ctx->metrics, &g);
        if (!text) {
            srv_send_error(c, 500, "server_error", NULL, "out of memory");
            return 500;
        }
        srv_send(c, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text), NULL);
        free(text);
        st = 200;
    }
    return st;
}

int srv_handle_page(struct mg_connection *c, srv_ctx *ctx)
{
    int st = only_get(c);
    if (!st) {
        const char *csp[] = { "Content-Security-Policy",
                              "default-src 'self'; script-src 'unsafe-inline'; "
                              "style-src 'unsafe-inline'; connect-src 'self'",
                              NULL };
        srv_send(c, 200, "text/html; charset=utf-8", srv_page_html, srv_page_html_len, csp);
        st = 200;
    }
    srv_metrics_request(ctx->metrics, SRV_EP_PAGE, st);
    return st;
}
