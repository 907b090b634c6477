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
    char uri[SRV_PATH_MAX];
    if (srv_path(c, uri, sizeof uri) < 0) uri[0] = '\0';   /* refused before (misframed) */
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

/* Whether civetweb 1.15 read the whole header block.  It parses the block
 * in place (each line's CR and LF become NULs) and stops without a word
 * after MG_MAX_HEADERS (64) fields, or at a line it does not take for a
 * field, such as a folded one (obs-fold, RFC 9112 section 5.2): the lines
 * after it, a Content-Length among them, go unread, and the body would
 * be read as the next request.  The block ended where it should only if
 * the empty line follows the last field's line.  An HTTP/1.1 request
 * without fields lacks Host, which section 3.2 makes a 400 anyway. */
static int headers_whole(const struct mg_request_info *ri)
{
    if (ri->num_headers >= MG_MAX_HEADERS) return 0;
    if (ri->num_headers == 0) return strcmp(ri->http_version, "1.1") != 0;
    const char *v = ri->http_headers[ri->num_headers - 1].value;
    const char *p = v + strlen(v);
    for (int nul = 0; nul < 2 && *p == '\0'; nul++) p++;   /* its CR and LF */
    return *p == '\r' || *p == '\n';
}

/* What civetweb 1.15 lets through that RFC 9112 refuses, answered 400
 * before any handler runs (the reason), or NULL:
 *   - a header block it did not read whole (headers_whole), or an
 *     HTTP/1.1 request without Host (section 3.2);
 *   - Content-Length twice, or beside Transfer-Encoding, or a
 *     Transfer-Encoding twice or other than chunked (section 6.3: a
 *     request framed two ways is smuggled past one of its readers;
 *     civetweb reads the first of each, and takes "identity" for no
 *     body), or a length that is not all digits (civetweb's strtoll takes
 *     "5abc" as 5);
 *   - a NUL byte written %00 in the path (srv_path). */
static const char *misframed(const struct mg_connection *c)
{
    const struct mg_request_info *ri = mg_get_request_info(c);
    if (!headers_whole(ri))
        return "the header block has a folded line, more than 63 fields, or no Host";
    int n_cl = 0, n_te = 0, host = 0;
    for (int i = 0; i < ri->num_headers; i++) {
        const char *name = ri->http_headers[i].name, *v = ri->http_headers[i].value;
        host |= !strcasecmp(name, "Host");
        if (!strcasecmp(name, "Transfer-Encoding")) {
            if (n_te++ || strcasecmp(v, "chunked"))
                return "Transfer-Encoding must be given once, as chunked";
        }
        if (strcasecmp(name, "Content-Length")) continue;
        n_cl++;
        if (!v || !v[0] || strspn(v, "0123456789") != strlen(v))
            return "Content-Length must be a decimal number";
    }
    if (!host && !strcmp(ri->http_version, "1.1")) return "an HTTP/1.1 request needs Host";
    if (n_cl > 1) return "Content-Length is given more than once";
    if (n_cl && n_te) return "Content-Length and Transfer-Encoding together";
    char path[SRV_PATH_MAX];
    if (srv_path(c, path, sizeof path) < 0) return "the path holds a NUL byte (%00), or is too long";
    return NULL;
}

/* Every request passes here first.  A misframed one is refused and its
 * connection closed, so that no byte after it is read as a request.  A
 * WebSocket upgrade that civetweb would refuse itself (another path, no
 * key, another protocol version) is refused here first, because civetweb
 * 1.15 writes such refusals without a status line (http_util.c). */
static int begin_request(struct mg_connection *c)
{
    srv_ctx *ctx = mg_get_user_data(mg_get_context(c));
    const char *why = misframed(c);
    if (why) {
        srv_refuse_close(c, 400, "bad_request", why);
        srv_metrics_request(ctx->metrics, SRV_EP_OTHER, 400);
        /* civetweb 1.15 has no call that ends a server connection after a
         * response but this one: on a connection of the server's it sets
         * the connection's must-close flag and shuts the socket (its
         * close_connection), and the request loop then stops; test
         * test_bad_input.py's smuggling case holds it to that */
        mg_close_connection(c);
        return 400;
    }
    const char *up = mg_get_header(c, "Upgrade"), *conn = mg_get_header(c, "Connection");
    if (!up || !strcasestr(up, "websocket") || !conn || !strcasestr(conn, "upgrade")) return 0;
    char uri[SRV_PATH_MAX];
    const char *version;
    int st = 0;
    if (srv_path(c, uri, sizeof uri) < 0 || strcmp(uri, "/v1/realtime")) {
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

/* The errors civetweb raises itself (a request line, headers or chunked
 * body it cannot parse, 411, 413, 505, ...): the API's JSON error instead
 * of its plain text, under a status line of our own, since civetweb's
 * would repeat the client's HTTP version as it came (a version of
 * "1.1 extra\r\nX: y" went into the status line as it was).  civetweb
 * closes these connections itself. */
static int http_error(struct mg_connection *c, int status, const char *msg)
{
    srv_ctx *ctx = mg_get_user_data(mg_get_context(c));
    const char *code = status == 404 ? "not_found" : status == 405 ? "method_not_allowed"
                     : status == 411 ? "length_required"
                     : status == 413 || status == 431 ? "request_too_large"
                     : status == 505 ? "http_version_not_supported"
                     : status >= 500 ? "server_error" : "bad_request";
    srv_refuse_close(c, status, code, msg && msg[0] ? msg : "the request cannot be read");
    srv_metrics_request(ctx->metrics, SRV_EP_OTHER, status);
    return 0;   /* answered */
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
        /* paths are decoded by srv_path, which refuses a %00: civetweb
         * decodes in place, so /v1/models/NAME%00x would name NAME */
        "decode_url", "no",
        NULL,
    };
    /* No access log unless asked: civetweb formats it with localtime(),
     * which is not thread-safe. */
    struct mg_callbacks cb = { .begin_request = begin_request, .http_error = http_error,
                               .log_message = log_message,
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
