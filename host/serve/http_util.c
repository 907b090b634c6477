/* http_util.c - what every HTTP handler needs: the clock, the API key,
 * whole responses, OpenAI-style errors, bounded request bodies.  civetweb
 * writes the status line, headers and chunked framing; jansson the JSON. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <civetweb.h>
#include <jansson.h>

#include "serve.h"

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int srv_closing(const srv_ctx *ctx)
{
    return __atomic_load_n(&ctx->closing, __ATOMIC_ACQUIRE);
}

void srv_inflight(srv_ctx *ctx, int delta)
{
    __atomic_add_fetch(&ctx->inflight, delta, __ATOMIC_ACQ_REL);
}

/* civetweb stops writing once mg_stop begins, so the streams' last events
 * must be out before it is called. */
void srv_drain(srv_ctx *ctx, double seconds)
{
    double until = srv_now() + seconds;
    struct timespec tick = { 0, 5 * 1000 * 1000 };
    while (__atomic_load_n(&ctx->inflight, __ATOMIC_ACQUIRE) > 0 && srv_now() < until)
        nanosleep(&tick, NULL);
}

/* ---------------------------------------------------------------- auth --- */

/* Equal strings, in time that depends only on the lengths. */
static int same_secret(const char *a, size_t na, const char *b, size_t nb)
{
    unsigned char diff = na != nb;
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

int srv_authorized(struct mg_connection *c, const srv_ctx *ctx, int allow_query)
{
    const char *key = ctx->cfg->api_key;
    if (!key || !*key) return 1;
    const char *h = mg_get_header(c, "Authorization");
    if (h && !strncasecmp(h, "Bearer ", 7)) {
        h += 7;
        while (*h == ' ') h++;
        return same_secret(h, strlen(h), key, strlen(key));
    }
    const struct mg_request_info *ri = mg_get_request_info(c);
    if (allow_query && ri->query_string) {
        char got[512];
        int n = mg_get_var(ri->query_string, strlen(ri->query_string), "api_key", got, sizeof got);
        if (n >= 0) return same_secret(got, (size_t)n, key, strlen(key));
    }
    return 0;
}

/* ---------------------------------------------------------------- paths --- */

int srv_path(const struct mg_connection *c, char *buf, size_t size)
{
    const char *raw = mg_get_request_info(c)->local_uri;
    if (!raw || size > INT_MAX) return -1;
    size_t n = strlen(raw);
    if (n >= size) return -1;   /* decoding never lengthens */
    int got = mg_url_decode(raw, (int)n, buf, (int)size, 0);
    if (got < 0 || strlen(buf) != (size_t)got) return -1;
    return got;
}

/* ----------------------------------------------------------- responses --- */

void srv_date_header(struct mg_connection *c)
{
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) && strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm))
        mg_response_header_add(c, "Date", date, -1);
}

int srv_send(struct mg_connection *c, int status, const char *type, const char *body,
             size_t len, const char *const *headers)
{
    char clen[32];
    snprintf(clen, sizeof clen, "%zu", len);
    mg_response_header_start(c, status);
    srv_date_header(c);
    mg_response_header_add(c, "Content-Type", type, -1);
    mg_response_header_add(c, "Content-Length", clen, -1);
    mg_response_header_add(c, "Cache-Control", "no-store", -1);
    for (; headers && headers[0]; headers += 2) mg_response_header_add(c, headers[0], headers[1], -1);
    mg_response_header_send(c);
    if (len && mg_write(c, body, len) != (int)len) return -1;
    return 0;
}

int srv_send_error(struct mg_connection *c, int status, const char *code, const char *param,
                   const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = status >= 500 ? "server_error"
                     : status == 401 ? "authentication_error"
                     : status == 503 ? "overloaded_error" : "invalid_request_error";
    json_t *o = json_pack("{s:{s:s%,s:s,s:s?,s:s?}}", "error", "message", msg, strlen(msg),
                          "type", type, "param", param, "code", code);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    /* A message that was not UTF-8 (it echoes client input) still gets an
     * answer, without the detail. */
    const char *body = text ? text : "{\"error\":{\"message\":\"bad request\"}}";
    const char *extra[] = { "Retry-After", "1", NULL };
    int rc = srv_send(c, status, "application/json", body, strlen(body),
                      status == 503 ? extra : NULL);
    free(text);
    json_decref(o);
    return rc;
}

/* An answer written whole, status line included, ending the connection:
 * for what civetweb 1.15 will not frame for us.  It cannot answer a
 * WebSocket upgrade request with a status of ours (mg_response_header_start,
 * and with it mg_send_http_error, refuse a connection marked WebSocket: its
 * own refusals come out as a body without a status line), and its status
 * line repeats the request's HTTP version, which a malformed request line
 * fills with the client's text. */
static void send_raw(struct mg_connection *c, int status, const char *code, const char *msg,
                     const char *extra_header)
{
    const char *type = status >= 500 && status != 503 ? "server_error"
                     : status == 503 ? "overloaded_error" : "invalid_request_error";
    json_t *o = json_pack("{s:{s:s,s:s,s:s}}", "error", "message", msg, "type", type, "code", code);
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    /* a message that is not UTF-8 (civetweb's may echo the request) still
     * gets an answer, without the detail */
    const char *b = body ? body : "{\"error\":{\"message\":\"bad request\"}}";
    mg_printf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                 "Cache-Control: no-store\r\n%sConnection: close\r\n\r\n%s", status,
              mg_get_response_code_text(c, status), strlen(b), extra_header, b);
    free(body);
}

void srv_refuse_upgrade(struct mg_connection *c, int status, const char *code, const char *msg)
{
    send_raw(c, status, code, msg, "Sec-WebSocket-Version: 13\r\n");
}

void srv_refuse_close(struct mg_connection *c, int status, const char *code, const char *msg)
{
    send_raw(c, status, code, msg, "");
}

/* ---------------------------------------------------------------- bodies --- */

int srv_read_body(struct mg_connection *c, size_t max, char **body, size_t *len)
{
    *body = NULL;
    *len = 0;
    const struct mg_request_info *ri = mg_get_request_info(c);
    long long cl = ri->content_length;
    const char *te = mg_get_header(c, "Transfer-Encoding");
    int chunked = te && !strcasecmp(te, "chunked");
    if (cl < 0 && !chunked) return 411;
    if (cl > (long long)max) return 413;
    size_t cap = cl >= 0 ? (size_t)cl + 1 : 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return 500;
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > max + 1) { free(buf); return 413; }
            char *p = realloc(buf, cap * 2);
            if (!p) { free(buf); return 500; }
            buf = p;
            cap *= 2;
        }
        int got = mg_read(c, buf + n, cap - 1 - n);
        if (got <= 0) break;
        n += (size_t)got;
        if (n > max) { free(buf); return 413; }
        if (cl >= 0 && n == (size_t)cl) break;
    }
    if (cl >= 0 && n != (size_t)cl) { free(buf); return 400; }
    buf[n] = '\0';
    *body = buf;
    *len = n;
    return 0;
}
