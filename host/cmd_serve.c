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

static const char usage[] =
    "usage: tessera serve -m MODEL [-z TOKENIZER] [--host ADDR] [--port N] [--slots N]\n"
    "                     [--api-key KEY] [options]\n"
    "\n"
    "Serve MODEL over HTTP (OpenAI-compatible /v1/completions and\n"
    "/v1/chat/completions, streamed as server-sent events), a persistent WebSocket\n"
    "session per client (/v1/realtime: generate, interrupt, steer, reset), a\n"
    "playground page at /, /v1/models, /health and /metrics.  Stops on SIGINT or\n"
    "SIGTERM.  Protocol and limits: docs/server.md.\n"
    "\n"
    "  -m, --model FILE      llama2.c checkpoint or GGUF (as tessera run)\n"
    "  -z, --tokenizer FILE  llama2.c tokenizer.bin (GGUF files carry their own)\n"
    "      --host ADDR       listening address (default 127.0.0.1: this machine only)\n"
    "      --port N          listening port (default 8080; 0: any free port, printed)\n"
    "      --slots N         sequence slots on the device, shared by requests and\n"
    "                        WebSocket sessions (default 4; 0: as many as fit, <= 8)\n"
    "      --queue N         requests that may wait for a slot; beyond them, HTTP 503\n"
    "                        (default 16)\n"
    "      --alias NAME      the model's name in the API: /v1/models lists it, and a\n"
    "                        request naming another model gets 404 model_not_found\n"
    "                        (default: MODEL's file name)\n"
    "      --api-key KEY     require 'Authorization: Bearer KEY' (default: the\n"
    "                        TESSERA_API_KEY environment variable, else none)\n"
    "      --max-tokens N    most tokens one generation may ask for, and the default\n"
    "                        for chat and WebSocket requests (default 256)\n"
    "      --max-body BYTES  largest request body or WebSocket message (default 1048576)\n"
    "      --prefill-chunk N prompt tokens per device call; other clients' tokens run\n"
    "                        in between (default 64)\n"
    "      --quantum N       tokens per sequence in a decode call (every generating\n"
    "                        client in one call) while another client waits to start\n"
    "                        or prefill (default 4; a call has a fixed cost)\n"
    "      --chat-template NAME  format /v1/chat/completions with this family: plain,\n"
    "                        chatml, llama3, llama2, llama2-sys, phi3, gemma (default:\n"
    "                        the one the model's tokenizer.chat_template is; plain\n"
    "                        for a model without one, or with one of another family)\n"
    "  -v, --verbose         log requests and civetweb's messages to stderr\n"
    "      --backend SPEC    device: emu (default), emu:part=u55c,pes=16, or xrt:0\n"
    "      --xclbin FILE     xrt: the xclbin to load\n"
    "      --cards N         split the model's layers over N emulated devices in pipeline\n"
    "                        stages, as `tessera plan --cards N` proposes (the same tokens);\n"
    "                        under `mpirun -np N` (a build with MPI=1) stage k runs on rank k,\n"
    "                        rank 0 serves HTTP\n"
    "      --stages A-B,...  the split by hand: contiguous layer ranges from 0, one a device\n"
    CLI_PART_HELP
    CLI_PES_HELP
    "      --threads N       emulator worker threads over the PEs\n"
    CLI_WEIGHTS_HELP
    "      --seq-len N, --ctx N  context per sequence (default: the model's)\n"
    "  -h, --help            this text\n";

typedef struct serve_args {
    const char *model, *tokenizer, *backend, *part, *xclbin;
    int pes, threads, weights_f32, group_size, seq_len;
    int cards;            /* --cards N (0: one device) */
    const char *stages;   /* --stages A-B,C-D,... */
    int weights;          /* TSR_WEIGHTS_* */
    const char *kv;       /* --kv */
    const char *alias;    /* --alias: the model's name in the API */
    const char *chat_template;   /* --chat-template: a family name, or NULL */
    int slots, queue, prefill_chunk, quantum;
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

static int parse_args(int argc, char **argv, serve_args *a)
{
    for (int i = 0; i < argc; i++) {
        const char *o = cli_opt(&argc, argv, i), *v;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf(usage, tsr_part_list());
            exit(0);
        }
#define IS(s, l) (!strcmp(o, s) || !strcmp(o, l))
#define VAL() if (!(v = cli_value(argc, argv, &i))) return -1
#define INT(lo, hi, dst) do { VAL(); if (cli_int(o, v, lo, hi, dst)) return -1; } while (0)
        if (IS("-m", "--model"))              { VAL(); a->model = v; }
        else if (IS("-z", "--tokenizer"))     { VAL(); a->tokenizer = v; }
        else if (!strcmp(o, "--host"))        { VAL(); if (check_host(v)) return -1; a->cfg.host = v; }
        else if (!strcmp(o, "--port"))        INT(0, 65535, &a->cfg.port);
        else if (!strcmp(o, "--slots"))       INT(0, 8, &a->slots);
        else if (!strcmp(o, "--queue"))       INT(0, 4096, &a->queue);
        else if (!strcmp(o, "--api-key"))     { VAL(); if (check_key(o, v)) return -1; a->cfg.api_key = v; }
        else if (!strcmp(o, "--alias"))       { VAL(); if (check_alias(v)) return -1; a->alias = v; }
        else if (!strcmp(o, "--chat-template")) { VAL(); if (cli_chat_template("serve", v, &a->chat_template)) return -1; }
        else if (!strcmp(o, "--max-tokens"))  INT(1, 1 << 20, &a->cfg.lim.max_tokens);
        else if (!strcmp(o, "--max-body"))    { int n; INT(1024, 1 << 30, &n); a->cfg.lim.max_body = (size_t)n; }
        else if (!strcmp(o, "--prefill-chunk")) INT(1, 1 << 20, &a->prefill_chunk);
        else if (!strcmp(o, "--quantum"))     INT(1, 1 << 20, &a->quantum);
        else if (IS("-v", "--verbose"))       a->cfg.verbose = 1;
        else if (!strcmp(o, "--backend"))     { VAL(); a->backend = v; }
        else if (!strcmp(o, "--xclbin"))      { VAL(); a->xclbin = v; }
        else if (!strcmp(o, "--cards"))       INT(1, 16, &a->cards);
        else if (!strcmp(o, "--stages"))      { VAL(); a->stages = v; }
        else if (!strcmp(o, "--part"))        { VAL(); a->part = v; }
        else if (!strcmp(o, "--pes"))         INT(1, 1 << 16, &a->pes);
        else if (!strcmp(o, "--threads"))     INT(1, 1024, &a->threads);
        else if (!strcmp(o, "--group-size"))  INT(1, 1 << 16, &a->group_size);
        else if (IS("--seq-len", "--ctx"))    INT(1, 1 << 24, &a->seq_len);
        else if (!strcmp(o, "--weights"))     { VAL(); if (cli_weights(o, v, &a->weights_f32, &a->weights)) return -1; }
        else if (!strcmp(o, "--kv"))          { VAL(); if (cli_kv(o, v, &a->kv)) return -1; }
        else {
            cli_unknown("serve", o);
            return -1;
        }
#undef INT
#undef IS
#undef VAL
    }
    if (!a->model) {
        cli_error("serve: -m MODEL is required (see tessera serve --help)");
        return -1;
    }
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    serve_args a = { .backend = "emu", .slots = 4, .queue = 16, .prefill_chunk = 64, .quantum = 4,
                     .cfg = { .host = "127.0.0.1", .port = 8080,
                              .lim = { .max_body = 1 << 20, .max_tokens = 256 } } };
    a.cfg.api_key = getenv("TESSERA_API_KEY");
    if (parse_args(argc, argv, &a)) return 2;
    /* (an empty --api-key was refused above: an empty key is the
     * environment's, unless --api-key replaced it) */
    if (a.cfg.api_key && check_key("TESSERA_API_KEY", a.cfg.api_key)) return 2;
    char spec[600];
    if (cli_device_spec("serve", spec, sizeof spec, a.backend, a.part, a.pes, a.threads, a.xclbin) ||
        cli_spec_split("serve", spec, sizeof spec, a.cards, a.stages))
        return 2;
    const char *base = strrchr(a.model, '/');
    a.cfg.model_id = a.alias ? a.alias : base ? base + 1 : a.model;

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
    tsr_model_opts mo = { .tokenizer = a.tokenizer, .weights_f32 = a.weights_f32,
                          .weights = a.weights, .kv = a.kv,
                          .group_size = a.group_size, .seq_len = a.seq_len, .n_seqs = a.slots };
    if (tsr_model_load(dev, a.model, &mo, &model) != TSR_OK) {
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
    srv_sched_opts so = { .slots = ctx.info.n_seqs, .queue = a.queue,
                          .prefill_chunk = a.prefill_chunk, .quantum = a.quantum };
    if (!(metrics = srv_metrics_new()) || !(sched = srv_sched_start(dev, model, &so, metrics))) {
        cli_error("serve: cannot start the scheduler");
        goto out;
    }
    ctx.sched = sched;
    ctx.metrics = metrics;
    /* A thread per connection: every slot and waiting place, and spare
     * ones so that /health and refusals are answered when all are taken. */
    int port = 0;
    if (!(srv = srv_server_start(&ctx, ctx.info.n_seqs + a.queue + 8, &port))) goto out;
    printf("tessera: serving %s on http://%s:%d (%d slots, queue %d, context %d tokens, chat "
           "template %s%s)\n", a.cfg.model_id, a.cfg.host, port, ctx.info.n_seqs, a.queue,
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
