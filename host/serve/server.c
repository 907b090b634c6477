/* server.c - civetweb set up for tessera serve: where it listens, its
 * threads and timeouts, and which handler answers which path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <civetweb.h>

#include "serve.h"

struct srv_server {
    struct mg_context *mg;
    srv_ctx           *ctx;
};

/* ------------------------------------------------------------- routing --- */

static int route(struct mg_connection *c, void *arg)
{
    srv_ctx *ctx = arg;
    const char *uri = mg_get_request_info(c)->local_uri;
    if (!uri) uri = "";
    if (!strcmp(uri, "/v1/completions"))      return srv_handle_completions(c, ctx, 0);
    if (!strcmp(uri, "/v1/chat/completions")) return srv_handle_completions(c, ctx, 1);
    if (!strcmp(uri, "/v1/models") || !strncmp(uri, "/v1/models/", 11))
        return srv_handle_models(c, ctx);
    if (!strcmp(uri, "/health"))              return srv_handle_health(c, ctx);
    if (!strcmp(uri, "/metrics"))             return srv_handle_metrics(c, ctx);
    if (!strcmp(uri, "/") || !strcmp(uri, "/index.html")) return srv_handle_page(c, ctx);
    int st = 404;
    if (!strcmp(uri, "/v1/realtime")) {
        st = 426;
        srv_send_error(c, 426, "upgrade_required", NULL, "/v1/realtime is a WebSocket endpoint");
    } else {
        srv_send_error(c, 404, "not_found", NULL, "no such endpoint");
    }
    srv_metrics_request(ctx->metrics, SRV_EP_OTHER, st);
    return st;
}

/* A WebSocket upgrade that civetweb would refuse itself (another path, no
 * key, another protocol version) is refused here first, because civetweb
 * 1.15 writes such refusals without a status line (http_util.c). */
static int begin_request(struct mg_connection *c)
{
    const char *up = mg_get_header(c, "Upgrade"), *conn = mg_get_header(c, "Connection");
    if (!up || !strcasestr(up, "websocket") || !conn || !strcasestr(conn, "upgrade")) return 0;
    srv_ctx *ctx = mg_get_user_data(mg_get_context(c));
    const char *uri = mg_get_request_info(c)->local_uri, *version;
    int st = 0;
    if (!uri || strcmp(uri, "/v1/realtime")) {
        st = 404;
        srv_refuse_upgrade(c, st, "not_found", "the WebSocket endpoint is /v1/realtime");
    } else if (!mg_get_header(c, "Sec-WebSocket-Key")) {
        st = 400;
        srv_refuse_upgrade(c, st, "bad_upgrade", "a WebSocket upgrade needs Sec-WebSocket-Key");
    } else if (!(version = mg_get_header(c, "Sec-WebSocket-Version")) || strcmp(version, "13")) {
        st = 426;
        srv_refuse_upgrade(c, st, "bad_upgrade", "WebSocket version 13 (RFC 6455) is required");
    }
    if (st) srv_metrics_request(ctx->metrics, st == 404 ? SRV_EP_OTHER : SRV_EP_REALTIME, st);
    return st;
}

/* --------------------------------------------------------------- logging --- */

static int verbose;

static int log_message(const struct mg_connection *c, const char *msg)
{
    (void)c;
    if (verbose) fprintf(stderr, "tessera: civetweb: %s\n", msg);
    return 1;   /* handled: civetweb writes no log file */
}

static int log_access(const struct mg_connection *c, const char *msg)
{
    (void)c;
    if (verbose) fprintf(stderr, "tessera: %s\n", msg);
    return 1;
}

/* ------------------------------------------------------------ lifetime --- */

srv_server *srv_server_start(srv_ctx *ctx, int threads, int *port)
{
    verbose = ctx->cfg->verbose;
    srv_server *srv = calloc(1, sizeof *srv);
    if (!srv) return NULL;
    srv->ctx = ctx;
    char listen[300], nthreads[16];
    snprintf(listen, sizeof listen, "%s:%d", ctx->cfg->host, ctx->cfg->port);
    snprintf(nthreads, sizeof nthreads, "%d", threads);
    /* Timeouts: a client that sends nothing holds a thread 10 s at most;
     * the WebSocket read loop wakes every second, to notice mg_stop and to
     * ping a silent client (closed after a few unanswered pings). */
    const char *opts[] = {
        "listening_ports", listen,
        "num_threads", nthreads,
        "request_timeout_ms", "10000",
        "websocket_timeout_ms", "1000",
        "enable_websocket_ping_pong", "yes",
        "enable_keep_alive", "yes",
        "keep_alive_timeout_ms", "2000",
        "tcp_nodelay", "1",
        "max_request_size", "16384",
        NULL,
    };
    /* No access log unless asked: civetweb formats it with localtime(),
     * which is not thread-safe. */
    struct mg_callbacks cb = { .begin_request = begin_request, .log_message = log_message,
                               .log_access = verbose ? log_access : NULL };
    struct mg_init_data init = { .callbacks = &cb, .user_data = ctx, .configuration_options = opts };
    char err[256] = "";
    unsigned code = 0;
    struct mg_error_data ed = { .code = &code, .text = err, .text_buffer_size = sizeof err };
    mg_init_library(0);
    if (!(srv->mg = mg_start2(&init, &ed))) {
        /* civetweb's text does not say why a bind failed */
        fprintf(stderr, "tessera: serve: cannot listen on %s: %s%s\n", listen,
                err[0] ? err : "civetweb failed to start",
                strstr(err, "ports") ? " (is the port in use, or the address not this machine's?)"
                                     : "");
        mg_exit_library();
        free(srv);
        return NULL;
    }
    mg_set_request_handler(srv->mg, "/", route, ctx);
    mg_set_websocket_handler(srv->mg, "/v1/realtime", srv_ws_connect, srv_ws_ready, srv_ws_data,
                             srv_ws_close, ctx);
    struct mg_server_port ports[4];
    int n = mg_get_server_ports(srv->mg, 4, ports);
    *port = n > 0 ? ports[0].port : ctx->cfg->port;
    return srv;
}

void srv_server_stop(srv_server *srv)
{
    if (!srv) return;
    mg_stop(srv->mg);
    mg_exit_library();
    free(srv);
}
