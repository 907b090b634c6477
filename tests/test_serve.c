/*
 * test_serve.c - tessera serve as curl sees it: greedy completions equal
 * tessera run's text (streamed and not), the -n / max_tokens mapping, the
 * OpenAI shapes, the API key, errors as 4xx JSON, /metrics, the page,
 * four streams at once in shared decode calls, and exit 0 on SIGTERM.
 * `make test TSAN=1` runs it against the ThreadSanitizer build of the
 * server too (the scheduler's batching, the connection threads).  The Python suites in tests/serve/ drive the same
 * server with the openai and websockets packages and a browser.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "run_capture.h"
#include "serve_proc.h"
#include "test_util.h"

#define MODEL SH_MODEL("stories260K.bin")   /* for shell command lines */
#define TOK   SH_MODEL("tok512.bin")
#define CURL  "curl -s -m 60 "
#define JSON_HDR " -H 'Content-Type: application/json' "

static serve_proc srv;            /* one server for the group: 4 slots */
static char out[1 << 20], err[1 << 16], cmd[1 << 17];

static int group_setup(void **state)
{
    (void)state;
    return serve_start(&srv, TESSERA_BIN, "-m " MODEL " -z " TOK " --slots 4");
}

static int group_teardown(void **state)
{
    (void)state;
    int st = serve_stop(&srv);
    unlink(srv.errpath);
    return st == 0 ? 0 : -1;          /* SIGTERM: exit 0 */
}

/* ------------------------------------------------------------- helpers --- */

/* POST body to path; out gets the answer.  Returns curl's exit status. */
static int post(const char *path, const char *body)
{
    snprintf(cmd, sizeof cmd, CURL "-N %s%s" JSON_HDR "-d '%s'", srv.url, path, body);
    return run_capture(cmd, out, err, sizeof out);
}

/* The HTTP status of a curl request (extra: curl's options and URL tail). */
static int status_of(const char *extra)
{
    snprintf(cmd, sizeof cmd, CURL "-o /dev/null -w '%%{http_code}' %s", extra);
    run_capture(cmd, out, err, sizeof out);
    return atoi(out);
}

/* tessera run's stdout for a prompt and -n steps, greedy. */
static void run_text(const char *prompt, int steps, char *text, size_t cap)
{
    char c[1024];
    snprintf(c, sizeof c, TESSERA_BIN " run -m " MODEL " -z " TOK " -t 0 -n %d -p '%s'", steps,
             prompt);
    assert_int_equal(run_capture(c, text, err, cap), 0);
}

/* The text of a non-streamed completion, and its usage. */
static void completion(const char *prompt, int max_tokens, char *text, size_t cap,
                       int *prompt_tokens, int *completion_tokens, const char **finish)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"prompt\": \"%s\", \"max_tokens\": %d, \"temperature\": 0}",
             prompt, max_tokens);
    assert_int_equal(post("/v1/completions", body), 0);
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    assert_non_null(o);
    json_t *choice = json_array_get(json_object_get(o, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(o, "object")), "text_completion");
    snprintf(text, cap, "%s", json_string_value(json_object_get(choice, "text")));
    json_t *u = json_object_get(o, "usage");
    *prompt_tokens = (int)json_integer_value(json_object_get(u, "prompt_tokens"));
    *completion_tokens = (int)json_integer_value(json_object_get(u, "completion_tokens"));
    assert_int_equal(json_integer_value(json_object_get(u, "total_tokens")),
                     *prompt_tokens + *completion_tokens);
    static char fin[32];
    snprintf(fin, sizeof fin, "%s", json_string_value(json_object_get(choice, "finish_reason")));
    *finish = fin;
    json_decref(o);
}

/* Join the text of a server-sent event stream (completions: choices[0].text,
 * chat: choices[0].delta.content); *finish gets the finish_reason, *done
 * whether the stream ended with data: [DONE]. */
static void sse_text(const char *s, int chat, char *text, size_t cap, char *finish, int *done)
{
    size_t n = 0;
    *done = 0;
    finish[0] = '\0';
    text[0] = '\0';
    for (const char *line = s; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, "data: ", 6)) continue;
        assert_false(*done);                         /* nothing after [DONE] */
        if (!strncmp(line + 6, "[DONE]", 6)) { *done = 1; continue; }
        json_error_t je;
        json_t *o = json_loadb(line + 6, strcspn(line + 6, "\n"), 0, &je);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(o, "object")),
                            chat ? "chat.completion.chunk" : "text_completion");
        json_t *c = json_array_get(json_object_get(o, "choices"), 0);
        if (c) {
            json_t *t = chat ? json_object_get(json_object_get(c, "delta"), "content")
                             : json_object_get(c, "text");
            const char *piece = json_string_value(t);
            if (piece) n += (size_t)snprintf(text + n, cap - n, "%s", piece);
            const char *f = json_string_value(json_object_get(c, "finish_reason"));
            if (f) snprintf(finish, 32, "%s", f);
        }
        json_decref(o);
    }
}

/* --------------------------------------------------- text equals run --- */

/* -n STEPS counts positions, the prompt (BOS included) among them:
 * max_tokens = STEPS + 1 - usage.prompt_tokens gives run's text. */
static void completion_equals_run(void **state)
{
    (void)state;
    static char text[8192], want[8192];
    int pt, ct;
    const char *fin;
    completion("Once upon a time", 60, text, sizeof text, &pt, &ct, &fin);
    assert_int_equal(pt, 5);                         /* BOS + 4 tokens */
    assert_int_equal(ct, 60);
    assert_string_equal(fin, "length");
    run_text("Once upon a time", 60 + pt - 1, want, sizeof want);
    assert_non_null(strstr(err, "60 tokens generated"));
    static char got[16384];
    snprintf(got, sizeof got, "Once upon a time%s\n", text);
    assert_string_equal(got, want);

    completion("The dog", 33, text, sizeof text, &pt, &ct, &fin);
    run_text("The dog", 33 + pt - 1, want, sizeof want);
    snprintf(got, sizeof got, "The dog%s\n", text);
    assert_string_equal(got, want);
}

static void streamed_completion_equals_run(void **state)
{
    (void)state;
    static char text[8192], want[8192];
    char fin[32];
    int done;
    assert_int_equal(post("/v1/completions", "{\"prompt\": \"Once upon a time\", \"max_tokens\": 60,"
                          " \"temperature\": 0, \"stream\": true}"), 0);
    sse_text(out, 0, text, sizeof text, fin, &done);
    assert_true(done);
    assert_string_equal(fin, "length");
    run_text("Once upon a time", 64, want, sizeof want);
    static char got[16384];
    snprintf(got, sizeof got, "Once upon a time%s\n", text);
    assert_string_equal(got, want);
    /* one event per token: 60 pieces and the closing one */
    assert_int_equal(lines_containing(out, "\"finish_reason\":null"), 60);
}

/* Chat is the completion of the documented template. */
static void chat_is_the_template_completed(void **state)
{
    (void)state;
    static char text[8192], streamed[8192];
    int pt, ct;
    const char *fin;
    completion("User: Hi\\nAssistant:", 20, text, sizeof text, &pt, &ct, &fin);
    assert_int_equal(post("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": "
                          "\"Hi\"}], \"max_tokens\": 20, \"temperature\": 0}"), 0);
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "object")), "chat.completion");
    json_t *msg = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "message");
    assert_string_equal(json_string_value(json_object_get(msg, "role")), "assistant");
    assert_string_equal(json_string_value(json_object_get(msg, "content")), text);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "usage"),
                                                        "prompt_tokens")), pt);
    json_decref(o);
    char f[32];
    int done;
    assert_int_equal(post("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": "
                          "\"Hi\"}], \"max_tokens\": 20, \"temperature\": 0, \"stream\": true}"), 0);
    assert_non_null(strstr(out, "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}"));
    sse_text(out, 1, streamed, sizeof streamed, f, &done);
    assert_true(done);
    assert_string_equal(streamed, text);
}

/* A stop string ends the text before it; usage still counts the tokens. */
static void stop_string_cuts_the_text(void **state)
{
    (void)state;
    static char full[8192];
    int pt, ct;
    const char *fin;
    completion("Once upon a time", 40, full, sizeof full, &pt, &ct, &fin);
    const char *lily = strstr(full, "Lily");
    assert_non_null(lily);
    assert_int_equal(post("/v1/completions", "{\"prompt\": \"Once upon a time\", \"max_tokens\": 40,"
                          " \"temperature\": 0, \"stop\": [\"Lily\", \"zzz\"]}"), 0);
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    json_t *c = json_array_get(json_object_get(o, "choices"), 0);
    assert_int_equal(strlen(json_string_value(json_object_get(c, "text"))), (size_t)(lily - full));
    assert_int_equal(strncmp(json_string_value(json_object_get(c, "text")), full,
                             (size_t)(lily - full)), 0);
    assert_string_equal(json_string_value(json_object_get(c, "finish_reason")), "stop");
    json_decref(o);
    /* streamed: the same text, the stop string never shown */
    static char text[8192];
    char f[32];
    int done;
    assert_int_equal(post("/v1/completions", "{\"prompt\": \"Once upon a time\", \"max_tokens\": 40,"
                          " \"temperature\": 0, \"stop\": \"Lily\", \"stream\": true}"), 0);
    sse_text(out, 0, text, sizeof text, f, &done);
    assert_int_equal(strlen(text), (size_t)(lily - full));
    assert_string_equal(f, "stop");
}

/* ------------------------------------------------------------ the rest --- */

static void bad_requests_get_4xx_json(void **state)
{
    (void)state;
    char x[512];
    snprintf(x, sizeof x, "%s/v1/nothing", srv.url);
    assert_int_equal(status_of(x), 404);
    snprintf(x, sizeof x, "%s/v1/completions", srv.url);
    assert_int_equal(status_of(x), 405);                      /* GET */
    snprintf(x, sizeof x, "-d '{}' %s/v1/completions", srv.url);
    assert_int_equal(status_of(x), 415);                      /* form-encoded */
    snprintf(x, sizeof x, JSON_HDR "-d '{\"prompt\": ' %s/v1/completions", srv.url);
    assert_int_equal(status_of(x), 400);
    snprintf(x, sizeof x, JSON_HDR "-d '{\"max_tokens\": \"ten\"}' %s/v1/completions", srv.url);
    assert_int_equal(status_of(x), 400);
    snprintf(x, sizeof x, JSON_HDR "-d '{\"max_tokens\": 0}' %s/v1/completions", srv.url);
    assert_int_equal(status_of(x), 400);
    snprintf(x, sizeof x, JSON_HDR "-d '{\"n\": 2}' %s/v1/completions", srv.url);
    assert_int_equal(status_of(x), 400);
    snprintf(x, sizeof x, JSON_HDR "-d '{\"messages\": []}' %s/v1/chat/completions", srv.url);
    assert_int_equal(status_of(x), 400);
    snprintf(x, sizeof x, "%s/v1/realtime", srv.url);
    assert_int_equal(status_of(x), 426);
    /* a body over --max-body (1 MiB) */
    snprintf(x, sizeof x, "head -c 2000000 /dev/zero | "
                          CURL "-o /dev/null -w '%%{http_code}'" JSON_HDR
                          "--data-binary @- %s/v1/completions", srv.url);
    run_capture(x, out, err, sizeof out);
    assert_int_equal(atoi(out), 413);
    /* the error's shape: {"error": {"message", "type", "param", "code"}} */
    assert_int_equal(post("/v1/completions", "{\"temperature\": 7}"), 0);
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    json_t *e = json_object_get(o, "error");
    assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "temperature"));
    assert_string_equal(json_string_value(json_object_get(e, "type")), "invalid_request_error");
    assert_string_equal(json_string_value(json_object_get(e, "param")), "temperature");
    json_decref(o);
    /* a prompt longer than the context */
    static char body[1 << 16];
    int n = snprintf(body, sizeof body, "{\"prompt\": \"");
    for (int i = 0; i < 700; i++) n += snprintf(body + n, sizeof body - (size_t)n, " dog");
    snprintf(body + n, sizeof body - (size_t)n, "\"}");
    assert_int_equal(post("/v1/completions", body), 0);
    assert_non_null(strstr(out, "context_length_exceeded"));
}

/* max_tokens over the server's --max-tokens (256 here) is cut to it, not
 * refused: the same text as asking for 256, usage names the limit, and
 * every answer carries it in a header; a request without temperature or
 * seed is sampled at 0.8 with a random seed (two such answers differ). */
static void max_tokens_over_the_limit_is_cut(void **state)
{
    (void)state;
    static char want[1 << 16];
    assert_int_equal(post("/v1/completions", "{\"prompt\": \"Once upon a time\", "
                          "\"max_tokens\": 256, \"temperature\": 0, \"seed\": 1}"), 0);
    json_error_t je;
    json_t *a = json_loads(out, 0, &je), *b;
    assert_non_null(a);
    assert_null(json_object_get(json_object_get(a, "usage"), "max_tokens_limit"));
    snprintf(want, sizeof want, "%s", json_string_value(json_object_get(
                 json_array_get(json_object_get(a, "choices"), 0), "text")));
    assert_true(strlen(want) > 100);
    assert_int_equal(post("/v1/completions", "{\"prompt\": \"Once upon a time\", "
                          "\"max_tokens\": 100000, \"temperature\": 0, \"seed\": 1}"), 0);
    b = json_loads(out, 0, &je);
    assert_non_null(b);
    json_t *u = json_object_get(b, "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "max_tokens_limit")), 256);
    assert_int_equal(json_integer_value(json_object_get(u, "completion_tokens")),
                     json_integer_value(json_object_get(json_object_get(a, "usage"),
                                                        "completion_tokens")));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(b, "choices"), 0), "text")), want);
    json_decref(a);
    json_decref(b);
    /* the header, streamed and not */
    snprintf(cmd, sizeof cmd, CURL "-i %s/v1/completions" JSON_HDR
             "-d '{\"prompt\": \"a\", \"max_tokens\": 2, \"stream\": true}'", srv.url);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_non_null(strcasestr(out, "X-Max-Tokens-Limit: 256\r\n"));
    snprintf(cmd, sizeof cmd, CURL "-i %s/v1/completions" JSON_HDR
             "-d '{\"prompt\": \"a\", \"max_tokens\": 2}'", srv.url);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_non_null(strcasestr(out, "X-Max-Tokens-Limit: 256\r\n"));
    /* the default sampler: 0.8 and a random seed, so two answers of 40
     * tokens differ (the chance they agree is nil on this model) */
    assert_int_equal(post("/v1/completions", "{\"prompt\": \"Once upon a time\", "
                          "\"max_tokens\": 40}"), 0);
    memcpy(want, out, sizeof want - 1);
    want[sizeof want - 1] = '\0';
    assert_int_equal(post("/v1/completions", "{\"prompt\": \"Once upon a time\", "
                          "\"max_tokens\": 40}"), 0);
    assert_true(strstr(want, "\"text\":") && strstr(out, "\"text\":"));
    assert_string_not_equal(strstr(want, "\"text\":"), strstr(out, "\"text\":"));
}

static void models_health_metrics(void **state)
{
    (void)state;
    snprintf(cmd, sizeof cmd, CURL "%s/v1/models", srv.url);
    run_capture(cmd, out, err, sizeof out);
    assert_non_null(strstr(out, "\"id\":\"stories260K.bin\""));
    assert_non_null(strstr(out, "\"context_length\":512"));
    snprintf(cmd, sizeof cmd, CURL "%s/health", srv.url);
    run_capture(cmd, out, err, sizeof out);
    assert_string_equal(out, "{\"status\":\"ok\",\"slots\":4,\"slots_busy\":0,\"queue\":0,"
                             "\"queue_capacity\":16}");
    snprintf(cmd, sizeof cmd, CURL "%s/metrics", srv.url);
    run_capture(cmd, out, err, sizeof out);
    assert_non_null(strstr(out, "# TYPE tessera_ttft_seconds histogram\n"));
    assert_non_null(strstr(out, "tessera_slots 4\n"));
    assert_non_null(strstr(out, "tessera_slots_busy 0\n"));
    assert_non_null(strstr(out, "tessera_queue_length 0\n"));
    assert_non_null(strstr(out, "tessera_token_seconds_bucket{le=\"+Inf\"} "));
    assert_non_null(strstr(out, "tessera_requests_total{endpoint=\"completions\",code=\"200\"} "));
    assert_non_null(strstr(out, "tessera_requests_total{endpoint=\"metrics\",code=\"200\"} 1\n"));
}

/* The value of the /metrics sample `name` in text (0 when absent). */
static double metric(const char *text, const char *name)
{
    char key[256];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(text, key);
    return p ? strtod(p + strlen(key), NULL) : 0.0;
}

/* Four greedy completions streamed at once: continuous batching puts the
 * four sequences into shared decode calls and passes (/metrics says so:
 * the passes' sequences add up to the tokens generated), and each
 * client's text is still tessera run's. */
static void concurrent_streams_share_decode_calls(void **state)
{
    (void)state;
    static const char *const prompts[4] = { "Once upon a time", "The little dog",
                                            "Lily and Ben", "One day, a bird" };
    static char before[1 << 16], text[8192], want[8192], got[16384];
    snprintf(cmd, sizeof cmd, CURL "%s/metrics", srv.url);
    run_capture(cmd, before, err, sizeof before);
    char dir[] = "/tmp/tsr_serve_XXXXXX";
    assert_non_null(mkdtemp(dir));
    int tokens = 0, longest = 0;
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "(");
    for (int i = 0; i < 4; i++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n,
                              CURL "-N -o %s/%d %s/v1/completions" JSON_HDR "-d '{\"prompt\": "
                              "\"%s\", \"max_tokens\": 80, \"temperature\": 0, \"stream\": "
                              "true, \"stream_options\": {\"include_usage\": true}}' & ",
                              dir, i, srv.url, prompts[i]);
    snprintf(cmd + n, sizeof cmd - n, "wait)");
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    for (int i = 0; i < 4; i++) {
        char c[256];
        snprintf(c, sizeof c, "(cat %s/%d && rm %s/%d)", dir, i, dir, i);
        assert_int_equal(run_capture(c, out, err, sizeof out), 0);
        char fin[32];
        int done;
        sse_text(out, 0, text, sizeof text, fin, &done);
        assert_true(done);
        const char *pt = strstr(out, "\"prompt_tokens\":");
        assert_non_null(pt);
        run_text(prompts[i], 80 + atoi(pt + 16) - 1, want, sizeof want);
        snprintf(got, sizeof got, "%s%s\n", prompts[i], text);
        assert_string_equal(got, want);
        const char *ct = strstr(out, "\"completion_tokens\":");
        assert_non_null(ct);
        int k = atoi(ct + 20);
        assert_true(k > 0 && k <= 80);
        tokens += k;
        if (k > longest) longest = k;
    }
    assert_int_equal(rmdir(dir), 0);
    snprintf(cmd, sizeof cmd, CURL "%s/metrics", srv.url);
    run_capture(cmd, out, err, sizeof out);
    double calls = metric(out, "tessera_decode_batch_size_count") -
                   metric(before, "tessera_decode_batch_size_count");
    double seqs = metric(out, "tessera_decode_batch_size_sum") -
                  metric(before, "tessera_decode_batch_size_sum");
    double shared = calls - (metric(out, "tessera_decode_batch_size_bucket{le=\"1\"}") -
                             metric(before, "tessera_decode_batch_size_bucket{le=\"1\"}"));
    double passes = metric(out, "tessera_decode_pass_batch_size_count") -
                    metric(before, "tessera_decode_pass_batch_size_count");
    double pass_seqs = metric(out, "tessera_decode_pass_batch_size_sum") -
                       metric(before, "tessera_decode_pass_batch_size_sum");
    print_message("4 streams: %.0f decode calls, %.0f of them shared, %.2f sequences a call, "
                  "%.0f passes for %d tokens\n", calls, shared, seqs / calls, passes, tokens);
    assert_true(calls > 0 && shared > 0 && seqs > calls);
    /* every token generated came from one pass's sequence; passes that held
     * several make fewer passes than tokens */
    assert_int_equal((int)pass_seqs, tokens);
    assert_true(passes >= longest && passes < tokens);
}

/* The page is in the binary and loads nothing from elsewhere. */
static void page_is_served_whole(void **state)
{
    (void)state;
    snprintf(cmd, sizeof cmd, CURL "-i %s/", srv.url);
    run_capture(cmd, out, err, sizeof out);
    assert_non_null(strstr(out, "200 OK"));
    assert_non_null(strstr(out, "Content-Security-Policy: default-src 'self'"));
    assert_non_null(strstr(out, "<title>tessera playground</title>"));
    assert_non_null(strstr(out, "/v1/realtime"));
    assert_null(strstr(out, "https://"));
    assert_non_null(strstr(out, "</html>\n"));
}

/* --api-key: Bearer required on the API; /health stays open. */
static void api_key_is_required(void **state)
{
    (void)state;
    serve_proc p;
    assert_int_equal(serve_start(&p, TESSERA_BIN, "-m " MODEL " -z " TOK " --api-key s3cret"), 0);
    char x[512];
    snprintf(x, sizeof x, "%s/v1/models", p.url);
    assert_int_equal(status_of(x), 401);
    snprintf(x, sizeof x, "-H 'Authorization: Bearer wrong' %s/v1/models", p.url);
    assert_int_equal(status_of(x), 401);
    snprintf(x, sizeof x, "-H 'Authorization: Bearer s3cret' %s/v1/models", p.url);
    assert_int_equal(status_of(x), 200);
    snprintf(x, sizeof x, JSON_HDR "-d '{}' %s/v1/completions", p.url);
    assert_int_equal(status_of(x), 401);
    snprintf(x, sizeof x, "%s/metrics", p.url);
    assert_int_equal(status_of(x), 401);
    snprintf(x, sizeof x, "%s/health", p.url);
    assert_int_equal(status_of(x), 200);
    assert_int_equal(serve_stop(&p), 0);
    unlink(p.errpath);
}

static void bad_options_and_busy_port(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " serve", out, err, sizeof out), 2);
    assert_non_null(strstr(err, "-m MODEL is required"));
    assert_int_equal(run_capture(TESSERA_BIN " serve -m " MODEL " --port 70000", out, err,
                                 sizeof out), 2);
    /* civetweb would listen on 231.1.1.1; an empty key would serve without one */
    assert_int_equal(run_capture(TESSERA_BIN " serve -m " MODEL " --host 999.1.1.1", out, err,
                                 sizeof out), 2);
    assert_non_null(strstr(err, "--host '999.1.1.1' is not an IPv4 address"));
    assert_int_equal(run_capture(TESSERA_BIN " serve -m " MODEL " --host ' +383.0.0.1'", out, err,
                                 sizeof out), 2);   /* sscanf's blanks and signs */
    assert_non_null(strstr(err, "is not an IPv4 address"));
    assert_int_equal(run_capture("TESSERA_API_KEY= " TESSERA_BIN " serve -m " MODEL, out, err,
                                 sizeof out), 2);
    assert_non_null(strstr(err, "TESSERA_API_KEY is empty"));
    assert_int_equal(run_capture(TESSERA_BIN " serve -m " MODEL " --api-key ''", out, err,
                                 sizeof out), 2);
    assert_non_null(strstr(err, "--api-key is empty"));
    assert_int_equal(run_capture(TESSERA_BIN " serve --help", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "--api-key KEY"));
    assert_non_null(strstr(out, "u55c, u280, u250, u200, vu9p, v80, vck5000"));   /* run's list */
    /* the group's server holds its port */
    snprintf(cmd, sizeof cmd, "timeout 30 " TESSERA_BIN " serve -m " MODEL " -z " TOK " --port %d",
             srv.port);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 1);
    assert_non_null(strstr(err, "cannot listen on 127.0.0.1:"));
    assert_non_null(strstr(err, "is the port in use"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(completion_equals_run),
        cmocka_unit_test(streamed_completion_equals_run),
        cmocka_unit_test(chat_is_the_template_completed),
        cmocka_unit_test(stop_string_cuts_the_text),
        cmocka_unit_test(bad_requests_get_4xx_json),
        cmocka_unit_test(max_tokens_over_the_limit_is_cut),
        cmocka_unit_test(models_health_metrics),
        cmocka_unit_test(page_is_served_whole),
        cmocka_unit_test(api_key_is_required),
        cmocka_unit_test(bad_options_and_busy_port),
        cmocka_unit_test(concurrent_streams_share_decode_calls),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
