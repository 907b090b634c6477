/* request.c - OpenAI-style JSON request bodies into srv_cmds.
 *
 * jansson parses (it refuses invalid UTF-8, NUL in strings, integers that
 * do not fit 64 bits, nesting past 2048 levels); this file checks fields.
 * Unknown fields are ignored, so that clients sending more than we use
 * keep working; known fields of the wrong type or out of range, and
 * features we do not have (n > 1, echo, logprobs, tools), are refused with
 * the field's name.  A JSON null counts as absent. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../defaults.h"
#include "serve.h"

void srv_gen_free(srv_gen *g)
{
    for (int i = 0; i < g->n_stop; i++) free(g->stop[i]);
    g->n_stop = 0;
}

void srv_cmd_free(srv_cmd *c)
{
    if (!c) return;
    free(c->text);
    srv_gen_free(&c->gen);
    free(c);
}

/* A field, or NULL when absent or null. */
static json_t *field(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

static int fail(char *err, size_t errlen, const char **param, const char *name,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail(char *err, size_t errlen, const char **param, const char *name,
                const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (param) *param = name;
    return -1;
}

/* ------------------------------------------------------------ sampling --- */

static int parse_stop(const json_t *v, srv_gen *g, char *err, size_t errlen, const char **param)
{
    const char *one[1] = { NULL };
    size_t n = 0;
    if (json_is_string(v)) {
        one[0] = json_string_value(v);
        n = 1;
    } else if (json_is_array(v)) {
        n = json_array_size(v);
        if (n > SRV_MAX_STOP)
            return fail(err, errlen, param, "stop", "'stop' takes at most %d strings",
                        SRV_MAX_STOP);
    } else {
        return fail(err, errlen, param, "stop", "'stop' must be a string or an array of strings");
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_is_array(v) ? json_array_get(v, i) : NULL;
        if (s && !json_is_string(s))
            return fail(err, errlen, param, "stop", "'stop' must be a string or an array of strings");
        const char *text = s ? json_string_value(s) : one[0];
        size_t len = strlen(text);
        if (len == 0 || len > SRV_MAX_STOP_LEN)
            return fail(err, errlen, param, "stop", "each stop string must be 1..%d bytes",
                        SRV_MAX_STOP_LEN);
        if (!(g->stop[g->n_stop] = strdup(text)))
            return fail(err, errlen, param, NULL, "out of memory");
        g->n_stop++;
    }
    return 0;
}

void srv_gen_defaults(srv_gen *g, int max_tokens)
{
    static unsigned long calls;   /* two requests in one nanosecond differ too */
    unsigned long k = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    *g = (srv_gen){ .max_tokens = max_tokens, .temperature = TSR_DEFAULT_TEMPERATURE,
                    .top_p = 1.0f };
    g->seed = (((uint64_t)(srv_now() * 1e9) ^ ((uint64_t)k << 40)) & ((1ull << 53) - 1)) | 1u;
}

int srv_parse_gen(const void *json, const srv_limits *lim, int min_tokens, srv_gen *g,
                  char *err, size_t errlen, const char **param)
{
    const json_t *o = json;
    const char *keys[] = { "max_completion_tokens", "max_tokens" };
    for (int k = 0; k < 2; k++) {
        json_t *v = field(o, keys[k]);
        if (!v) continue;
        json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
        if (n < min_tokens)
            return fail(err, errlen, param, keys[k],
                        "'%s' must be an integer of at least %d (one over the server's "
                        "--max-tokens, %d, is cut to it)", keys[k], min_tokens, lim->max_tokens);
        g->cut_to = n > lim->max_tokens ? lim->max_tokens : 0;
        g->max_tokens = n > lim->max_tokens ? lim->max_tokens : (int)n;
        break;
    }
    json_t *v;
    if ((v = field(o, "temperature"))) {
        double t = json_is_number(v) ? json_number_value(v) : -1.0;
        if (!(t >= 0.0 && t <= 2.0))
            return fail(err, errlen, param, "temperature", "'temperature' must be a number in 0..2");
        g->temperature = (float)t;
    }
    if ((v = field(o, "top_p"))) {
        double p = json_is_number(v) ? json_number_value(v) : -1.0;
        if (!(p > 0.0 && p <= 1.0))
            return fail(err, errlen, param, "top_p", "'top_p' must be a number in (0, 1]");
        g->top_p = (float)p;
    }
    if ((v = field(o, "seed"))) {
        if (!json_is_integer(v))
            return fail(err, errlen, param, "seed", "'seed' must be an integer");
        g->seed = (uint64_t)json_integer_value(v);
    }
    if ((v = field(o, "stop")) && parse_stop(v, g, err, errlen, param)) return -1;
    return 0;
}

/* --------------------------------------- fields we have no use for yet --- */

/* Refuse a feature's field unless it holds its neutral value. */
static int unsupported(const json_t *o, char *err, size_t errlen, const char **param)
{
    json_t *v;
    if ((v = field(o, "n")) && !(json_is_integer(v) && json_integer_value(v) == 1))
        return fail(err, errlen, param, "n", "only 'n': 1 is supported");
    if ((v = field(o, "best_of")) && !(json_is_integer(v) && json_integer_value(v) == 1))
        return fail(err, errlen, param, "best_of", "only 'best_of': 1 is supported");
    if ((v = field(o, "echo")) && !json_is_false(v))
        return fail(err, errlen, param, "echo", "'echo' is not supported");
    if ((v = field(o, "logprobs")) && !json_is_false(v))
        return fail(err, errlen, param, "logprobs", "'logprobs' is not supported");
    if ((v = field(o, "suffix")) && !(json_is_string(v) && !*json_string_value(v)))
        return fail(err, errlen, param, "suffix", "'suffix' is not supported");
    const char *pen[] = { "presence_penalty", "frequency_penalty" };
    for (int i = 0; i < 2; i++)
        if ((v = field(o, pen[i])) && !(json_is_number(v) && json_number_value(v) == 0.0))
            return fail(err, errlen, param, pen[i], "'%s' is not supported (only 0)", pen[i]);
    if ((v = field(o, "logit_bias")) && !(json_is_object(v) && json_object_size(v) == 0))
        return fail(err, errlen, param, "logit_bias", "'logit_bias' is not supported");
    if ((v = field(o, "tools")) && !(json_is_array(v) && json_array_size(v) == 0))
        return fail(err, errlen, param, "tools", "'tools' are not supported");
    return 0;
}

/* ------------------------------------------------------------- bodies --- */

static int parse_common(const json_t *o, const srv_limits *lim, srv_http_req *r, char *err,
                        size_t errlen, const char **param)
{
    json_t *v;
    if ((v = field(o, "model"))) {
        if (!json_is_string(v))
            return fail(err, errlen, param, "model", "'model' must be a string");
        const char *name = json_string_value(v);
        r->model_set = strlen(name) < sizeof r->model ? 1 : 2;
        snprintf(r->model, sizeof r->model, "%s", name);
    }
    if ((v = field(o, "stream"))) {
        if (!json_is_boolean(v))
            return fail(err, errlen, param, "stream", "'stream' must be true or false");
        r->stream = json_is_true(v);
    }
    if ((v = field(o, "stream_options"))) {
        json_t *u = json_is_object(v) ? field(v, "include_usage") : NULL;
        if (!json_is_object(v) || (u && !json_is_boolean(u)))
            return fail(err, errlen, param, "stream_options",
                        "'stream_options' must be an object with a boolean 'include_usage'");
        r->include_usage = json_is_true(u);
    }
    if ((v = field(o, "user")) && !json_is_string(v))
        return fail(err, errlen, param, "user", "'user' must be a string");
    if (unsupported(o, err, errlen, param)) return -1;
    return srv_parse_gen(o, lim, 1, &r->cmd->gen, err, errlen, param);
}

/* "prompt": a string, or an array holding one string. */
static char *prompt_text(const json_t *o, char *err, size_t errlen, const char **param)
{
    json_t *v = field(o, "prompt");
    if (!v) return strdup("");
    if (json_is_array(v) && json_array_size(v) == 1 && json_is_string(json_array_get(v, 0)))
        v = json_array_get(v, 0);
    if (!json_is_string(v)) {
        fail(err, errlen, param, "prompt", "'prompt' must be a string (or an array of one string)");
        return NULL;
    }
    return strdup(json_string_value(v));
}

int srv_parse_completion(const char *body, size_t len, const srv_limits *lim, const srv_chat *chat,
                         srv_http_req *out, char *err, size_t errlen, const char **param)
{
    memset(out, 0, sizeof *out);
    if (param) *param = NULL;
    if (errlen) err[0] = '\0';
    json_error_t je;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        snprintf(err, errlen, "invalid JSON at line %d, column %d: %s", je.line, je.column,
                 je.text);
        return -1;
    }
    srv_cmd *c = calloc(1, sizeof *c);
    int rc = -1;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    out->cmd = c;
    c->kind = SRV_GENERATE;
    c->t_recv = srv_now();
    /* OpenAI's defaults: 16 tokens for completions, as many as fit for chat. */
    srv_gen_defaults(&c->gen, chat ? lim->max_tokens : 16);
    if (!json_is_object(o)) {
        snprintf(err, errlen, "the body must be a JSON object");
        goto out;
    }
    if (parse_common(o, lim, out, err, errlen, param)) goto out;
    if (chat) {
        json_t *m = field(o, "messages");
        if (!m) {
            fail(err, errlen, param, "messages", "'messages' is required");
            goto out;
        }
        if (!(c->text = srv_chat_prompt(m, chat, lim->max_body, err, errlen))) {
            if (param) *param = "messages";
            goto out;
        }
    } else if (!(c->text = prompt_text(o, err, errlen, param))) {
        goto out;
    }
    rc = 0;
out:
    json_decref(o);
    if (rc) {
        if (errlen && !err[0]) snprintf(err, errlen, "out of memory");
        srv_cmd_free(out->cmd);
        out->cmd = NULL;
    }
    return rc;
}
