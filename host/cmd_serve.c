/* cmd_serve.c - tessera serve: the model behind HTTP and WebSocket.
 *
 * Loads the model once, starts the scheduler (the one thread that calls
 * the device, host/serve/sched.c) and civetweb (host/serve/server.c), and
 * serves until SIGINT or SIGTERM.  Then it stops admitting, stops every
 * generation within a token (streams end with finish_reason "shutdown"),
 * waits for the connections to finish, frees the device and exits 0.
 * The protocol and the design: docs/server.md. */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "serve/serve.h"

static const cli_command serve_cmd = {
    "serve", CLI_SERVE,
    "usage: tessera serve -m MODEL [-z TOKENIZER] [--host ADDR] [--port N] [--slots N]\n"
    "                     [--api-key KEY] [options]\n"
    "\n"
    "Serve MODEL over HTTP (OpenAI-compatible /v1/completions and\n"
    "/v1/chat/completions, streamed as server-sent events), a persistent WebSocket\n"
    "session per client (/v1/realtime: generate, interrupt, steer, reset), a\n"
    "playground page at /, /v1/models, /health and /metrics.  Stops on SIGINT or\n"
    "SIGTERM.  A request without temperature or seed gets 0.8 and a random seed,\n"
    "as tessera run; without top_p, 1 (OpenAI's; tessera run's is 0.9).\n"
    "Protocol and limits: docs/server.md.\n", NULL, NULL
};

typedef struct serve_args {
    cli_args o;           /* the options */
    const char *chat_template;   /* --chat-template: a family name, or NULL */
    srv_config cfg;
} serve_args;

/* --host: civetweb reads an address with sscanf("%u.%u.%u.%u"), which
 * skips blanks, takes signs and keeps each field modulo 256 (999.1.1.1
 * would listen on 231.1.1.1, ' 383.0.0.1' on 127.0.0.1), so whatever it
 * would read as four fields, or digits and dots alone, must be an IPv4
 * address as inet_pton has it; a name (localhost) goes to civetweb as it
 * is. */
static int check_host(const char *v)
{
    struct in_addr a;
    unsigned f[4];
    int quad = sscanf(v, "%u.%u.%u.%u", &f[0], &f[1], &f[2], &f[3]) == 4;
    if ((quad || (v[0] && strspn(v, "0123456789.") == strlen(v))) && inet_pton(AF_INET, v, &a) != 1) {
        cli_error("serve: --host '%s' is not an IPv4 address", v);
        return -1;
    }
    return 0;
}

/* An empty key would turn authentication off without a word. */
static int check_key(const char *what, const char *v)
{
    if (!v[0]) {
        cli_error("serve: %s is empty (leave it out to serve without a key)", what);
        return -1;
    }
    return 0;
}

/* A name a client can send back: not empty, no longer than a request's
 * "model" field is kept (127 bytes), and UTF-8 without control bytes, so
 * that it goes into JSON and a /v1/models/NAME path as it is. */
static int check_alias(const char *v)
{
    size_t n = strlen(v);
    int ctl = 0;
    for (size_t i = 0; i < n; i++) ctl |= (unsigned char)v[i] < 0x20 || v[i] == 0x7f;
    json_t *j = json_string(v);   /* NULL when v is not UTF-8 */
    json_decref(j);
    if (!n || n > 127 || ctl || !j) {
        cli_error("serve: --alias '%s' must be 1..127 bytes of UTF-8 without control "
                  "characters", v);
        return -1;
    }
    return 0;
}

/* 0, 1 after the help, -1 after an error. */
static int parse_args(int argc, char **argv, serve_args *a)
{
    int rc = cli_parse(&serve_cmd, argc, argv, &a->o);
    if (rc) return rc;
    const cli_args *o = &a->o;
    if ((o->host && check_host(o->host)) || (cli_given(o, "api-key") && check_key("--api-key", o->api_key)) ||
        (o->alias && check_alias(o->alias)) ||
        (o->chat_template && cli_chat_template("serve", o->chat_template, &a->chat_template)))
        return -1;
    if (!o->model) {
        cli_error("serve: -m MODEL is required (see tessera serve --help)");
        return -1;
    }
    a->cfg.host = o->host;
    a->cfg.port = o->port;
    a->cfg.api_key = o->api_key;
    a->cfg.verbose = o->verbose;
    a->cfg.lim.max_tokens = o->max_tokens;
    a->cfg.lim.max_body = (size_t)o->max_body;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    serve_args a = { .o = { .backend = "emu", .slots = 4, .queue = 16, .prefill_chunk = 64,
                            .quantum = 4, .host = "127.0.0.1", .port = 8080, .max_body = 1 << 20,
                            .max_tokens = 256, .api_key = getenv("TESSERA_API_KEY") } };
    int prc = parse_args(argc, argv, &a);
    if (prc) return prc > 0 ? 0 : 2;
    /* (an empty --api-key was refused above: an empty key is the
     * environment's, unless --api-key replaced it) */
    if (a.cfg.api_key && check_key("TESSERA_API_KEY", a.cfg.api_key)) return 2;
    char spec[600];
    if (cli_device_spec("serve", spec, sizeof spec, &a.o)) return 2;
    const char *base = strrchr(a.o.model, '/');
    a.cfg.model_id = a.o.alias ? a.o.alias : base ? base + 1 : a.o.model;

    /* SIGINT and SIGTERM are taken by sigwait below: blocked here, before
     * any thread starts, so that every thread inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);     /* a client gone mid-write is an error code */
    json_object_seed(0);          /* before any thread uses jansson */

    int rc, status = 1;
    tsr_device *dev = NULL;
    tsr_model *model = NULL;
    srv_metrics *metrics = NULL;
    srv_sched *sched = NULL;
    srv_server *srv = NULL;
    if ((rc = tsr_device_open(spec, &dev)) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        status = rc == TSR_ERR_ARG ? 2 : 1;
        goto out;
    }
    tsr_device_set_log(dev, cli_log_to_stderr, NULL);
    tsr_model_opts mo = cli_model_opts(&a.o, a.o.slots);
    if (tsr_model_load(dev, a.o.model, &mo, &model) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        goto out;
    }
    /* the model's chat template, unless --chat-template names another
     * family (the library said when the model's is of none it knows) */
    const char *tmpl = NULL, *family = tsr_model_chat_template(model, &tmpl);
    a.cfg.chat = (srv_chat){ .family = a.chat_template ? a.chat_template : family, .tmpl = tmpl };
    srv_ctx ctx = { .cfg = &a.cfg };
    tsr_model_get_info(model, &ctx.info);
    a.cfg.lim.ctx = ctx.info.seq_len;
    srv_sched_opts so = { .slots = ctx.info.n_seqs, .queue = a.o.queue,
                          .prefill_chunk = a.o.prefill_chunk, .quantum = a.o.quantum };
    if (!(metrics = srv_metrics_new()) || !(sched = srv_sched_start(dev, model, &so, metrics))) {
        cli_error("serve: cannot start the scheduler");
        goto out;
    }
    ctx.sched = sched;
    ctx.metrics = metrics;
    /* A thread per connection: every slot and waiting place, and spare
     * ones so that /health and refusals are answered when all are taken. */
    int port = 0;
    if (!(srv = srv_server_start(&ctx, ctx.info.n_seqs + a.o.queue + 8, &port))) goto out;
    printf("tessera: serving %s on http://%s:%d (%d slots, queue %d, context %d tokens, chat "
           "template %s%s)\n", a.cfg.model_id, a.cfg.host, port, ctx.info.n_seqs, a.o.queue,
           ctx.info.seq_len, a.cfg.chat.family,
           a.cfg.api_key && *a.cfg.api_key ? ", API key required" : "");
    if (cli_flush_stdout()) goto out;

    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "tessera: serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    __atomic_store_n(&ctx.closing, 1, __ATOMIC_RELEASE);
    srv_sched_close(sched);       /* generations end within a token, */
    srv_drain(&ctx, 3.0);         /* their ends are written, sessions closed */
    srv_server_stop(srv);
    srv = NULL;
    status = 0;
out:
    srv_server_stop(srv);
    srv_sched_stop(sched);        /* the last sequences are closed */
    srv_metrics_free(metrics);
    tsr_model_close(model);
    tsr_device_close(dev);
    return status;
}
