/* cmd_run.c - tessera run: decode a prompt on a device and stream the text.
 *
 * Steps follow llama2.c run.c: -n STEPS counts positions, prompt included,
 * so the sequence ends with STEPS + 1 tokens (BOS first) unless the
 * model's BOS/EOS or Ctrl-C stops it early (Ctrl-C: the summary, then exit
 * status 130, as a shell reports a SIGINT).  The text of every token after
 * BOS is printed, the prompt's too, then a newline. */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "textout.h"

static const char usage[] =
    "usage: tessera run -m MODEL [-z TOKENIZER] [-p PROMPT | -f FILE] [-n STEPS] [-t TEMP] [-s SEED] [options]\n"
    "\n"
    "Load MODEL onto a device (weights streamed once into on-chip SRAM), then\n"
    "decode on the device and stream the text to stdout.  A summary (tokens,\n"
    "tokens/s, time to first token) goes to stderr, also after Ctrl-C, which\n"
    "stops the decode (exit status 130).\n"
    "\n"
    "  -m, --model FILE      llama2.c checkpoint (legacy, v1 fp32, v2 Q8_0) or GGUF\n"
    "                        (llama architecture; F32, F16, Q8_0, Q4_0 tensors)\n"
    "  -z, --tokenizer FILE  llama2.c tokenizer.bin matching the model's vocab\n"
    "                        (GGUF files carry their own; required for llama2.c)\n"
    "  -p, --prompt TEXT     prompt (default: empty, i.e. BOS only); - reads it from stdin\n"
    "  -f, --file FILE       read the prompt from FILE (- for stdin); one trailing\n"
    "                        newline is dropped\n"
    "  -n, --steps N         positions to run, the prompt's tokens (BOS first)\n"
    "                        included, as llama2.c's run.c -n; llama.cpp's -n counts\n"
    "                        generated tokens only.  Generation stops earlier at the\n"
    "                        model's BOS or EOS (default 256; 0 = the whole context;\n"
    "                        clamped to the context with a warning)\n"
    "  -t, --temperature T   0 = greedy (default 1.0)\n"
    "      --top-p P         nucleus sampling threshold in (0,1] (default 0.9; 1 = off)\n"
    "  -s, --seed S          sampler seed (default or 0: time-based, printed on stderr)\n"
    "      --backend SPEC    device: emu (default), emu:part=u55c,pes=16, or xrt:0 (Alveo card 0)\n"
    "      --xclbin FILE     xrt: the xclbin to load (default: the one in bitstreams/ for the card)\n"
    CLI_SPLIT_HELP
    CLI_PART_HELP
    CLI_PES_HELP
    "      --threads N       emulator worker threads over the PEs (default: the CPUs\n"
    "                        this process may use; tokens do not depend on it)\n"
    CLI_WEIGHTS_HELP
    CLI_CTX_HELP
    "      --stats           print off-chip traffic per phase and kernel counters (the\n"
    "                        on-chip weight formats and KV bytes among them)\n"
    "  -h, --help            this text\n";

typedef struct run_args {
    const char *model, *tokenizer, *prompt, *prompt_file, *backend, *part;
    const char *xclbin;   /* xrt: --xclbin FILE */
    int cards;            /* --cards N (0: one device) */
    const char *stages;   /* --stages A-B,C-D,... */
    int steps, pes, threads, weights_f32, weights, group_size, seq_len, stats;
    int prompt_given;     /* -p was passed */
    const char *kv;       /* --kv */
    float temperature, top_p;
    uint64_t seed;
} run_args;

/* Print a token's text as llama2.c's safe_printf does: a lone unprintable
 * byte (a control code from a byte-fallback token) is dropped. */
/* The sequence Ctrl-C cancels while it generates.  tsr_seq_cancel is
 * async-signal-safe (an atomic store and a wake-up). */
static tsr_seq *volatile cancel_target;

static void on_sigint(int sig)
{
    (void)sig;
    tsr_seq *s = cancel_target;
    if (s) tsr_seq_cancel(s);
}

typedef struct stream_ctx {
    tsr_model *model;
    int prev;
    int bos, eos;   /* the model's: they end the text, unprinted */
    textout text;   /* pieces into UTF-8 characters                 */
} stream_ctx;

/* Print what the text has ready (whole characters). */
static void print_ready(stream_ctx *c, int finish)
{
    const char *p;
    size_t n = finish ? textout_finish(&c->text, &p) : textout_take(&c->text, &p);
    if (n) fwrite(p, 1, n, stdout);
}

static int on_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    stream_ctx *c = user;
    if (token != c->bos && token != c->eos) {
        size_t n;
        const char *p = tsr_model_token_text(c->model, c->prev, token, &n);
        if (p && n && textout_push(&c->text, p, n) == 0) {
            print_ready(c, 0);
            fflush(stdout);
        }
    }
    c->prev = token;
    return 0;
}

static void print_stats(tsr_device *dev, tsr_seq *seq)
{
    tsr_traffic t = { 0 };
    tsr_seq_stats st = { 0 };
    tsr_device_traffic(dev, &t);
    tsr_seq_get_stats(seq, &st);
    fprintf(stderr,
            "off-chip traffic (bytes)   host->device   device->host\n"
            "  load                   %14llu %14llu\n"
            "  prefill                %14llu %14llu\n"
            "  decode                 %14llu %14llu\n"
            "  debug                  %14llu %14llu\n"
            "kernel invocations: %llu   weight images streamed: %llu\n"
            "prefill: %llu tokens, %.1f tokens/s   decode: %llu tokens, %.1f tokens/s\n",
            (unsigned long long)t.load_h2d, (unsigned long long)t.load_d2h,
            (unsigned long long)t.prefill_h2d, (unsigned long long)t.prefill_d2h,
            (unsigned long long)t.decode_h2d, (unsigned long long)t.decode_d2h,
            (unsigned long long)t.debug_h2d, (unsigned long long)t.debug_d2h,
            (unsigned long long)t.invocations, (unsigned long long)t.loads,
            (unsigned long long)st.prefill_tokens, st.prefill_tok_s,
            (unsigned long long)st.decode_tokens, st.decode_tok_s);
    if (t.link_passes)   /* a model split over devices: the stages' links */
        fprintf(stderr, "card links between stages (bytes, all hops): prefill %llu, decode %llu "
                "in %llu passes\n", (unsigned long long)t.link_prefill,
                (unsigned long long)t.link_decode, (unsigned long long)t.link_passes);
    char buf[8192];
    if (tsr_device_kernel_counters(dev, buf, sizeof buf) == TSR_OK)
        fprintf(stderr, "kernel counters:\n%s", buf);
    /* --- the cycle model's estimate from those counters (tessera plan) --- */
    const char *cyc = strstr(buf, "projected.cycles_per_token "), *at = strstr(buf, "cycle_model.last.position ");
    const char *tps = strstr(buf, "projected.tok_s "), *mhz = tps ? strstr(tps, " at ") : NULL;
    if (cyc && at && tps && mhz)
        fprintf(stderr, "projected (cycle model, not measured): %llu cycles for the last token "
                "(position %llu), %.0f tokens/s at %d MHz; compare tessera plan --pos\n",
                strtoull(cyc + 27, NULL, 10), strtoull(at + 26, NULL, 10),
                strtod(tps + 16, NULL), atoi(mhz + 4));
}

/* A progress bar on stderr for weight streams over 16 MB, when it is a
 * terminal. */
static void load_progress(uint64_t sent, uint64_t total, void *user)
{
    int *shown = user;
    if (total < (16u << 20)) return;
    *shown = 1;
    int pct = (int)(100 * sent / total);
    fprintf(stderr, "\rstreaming weights: [%-40.*s] %3d%% %llu/%llu MB", pct * 40 / 100,
            "########################################", pct,
            (unsigned long long)(sent >> 20), (unsigned long long)(total >> 20));
}

static int parse_args(int argc, char **argv, run_args *a)
{
    for (int i = 0; i < argc; i++) {
        const char *o = cli_opt(&argc, argv, i), *v;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf(usage, tsr_part_list());
            exit(0);
        }
#define IS(s, l) (!strcmp(o, s) || !strcmp(o, l))
#define VAL() if (!(v = cli_value(argc, argv, &i))) return -1
        if (IS("-m", "--model"))            { VAL(); a->model = v; }
        else if (IS("-z", "--tokenizer"))   { VAL(); a->tokenizer = v; }
        else if (IS("-p", "--prompt"))      { VAL(); a->prompt = v; a->prompt_given = 1; }
        else if (IS("-f", "--file"))        { VAL(); a->prompt_file = v; }
        else if (IS("-n", "--steps"))       { VAL(); if (cli_int(o, v, 0, 1 << 30, &a->steps)) return -1; }
        else if (IS("-t", "--temperature")) { VAL(); if (cli_float(o, v, 0.0f, 100.0f, &a->temperature)) return -1; }
        else if (IS("-s", "--seed"))        { VAL(); if (cli_u64(o, v, &a->seed)) return -1; }
        else if (!strcmp(o, "--top-p"))     { VAL(); if (cli_float(o, v, 1e-9f, 1.0f, &a->top_p)) return -1; }
        else if (!strcmp(o, "--backend"))   { VAL(); a->backend = v; }
        else if (!strcmp(o, "--device"))    { VAL(); a->backend = v; }
        else if (!strcmp(o, "--cards"))     { VAL(); if (cli_int(o, v, 1, 16, &a->cards)) return -1; }
        else if (!strcmp(o, "--stages"))    { VAL(); a->stages = v; }
        else if (!strcmp(o, "--part"))      { VAL(); a->part = v; }
        else if (!strcmp(o, "--xclbin"))    { VAL(); a->xclbin = v; }
        else if (!strcmp(o, "--pes"))       { VAL(); if (cli_int(o, v, 1, 1 << 16, &a->pes)) return -1; }
        else if (!strcmp(o, "--threads"))   { VAL(); if (cli_int(o, v, 1, 1024, &a->threads)) return -1; }
        else if (!strcmp(o, "--group-size")) { VAL(); if (cli_int(o, v, 1, 1 << 16, &a->group_size)) return -1; }
        else if (IS("--ctx", "--seq-len"))  { VAL(); if (cli_int(o, v, 1, 1 << 24, &a->seq_len)) return -1; }
        else if (!strcmp(o, "--stats"))     { a->stats = 1; }
        else if (!strcmp(o, "--weights")) { VAL(); if (cli_weights(o, v, &a->weights_f32, &a->weights)) return -1; }
        else if (!strcmp(o, "--kv"))      { VAL(); if (cli_kv(o, v, &a->kv)) return -1; }
        else {
            cli_unknown("run", o);
            return -1;
        }
#undef IS
#undef VAL
    }
    if (!a->model) {
        cli_error("run: -m MODEL is required (see tessera run --help)");
        return -1;
    }
    if (a->prompt_file && a->prompt_given) {
        cli_error("run: give the prompt as -p TEXT or -f FILE, not both");
        return -1;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_args a = { .prompt = "", .backend = "emu", .steps = 256, .temperature = 1.0f,
                   .top_p = 0.9f };
    a.seed = 0;
    if (parse_args(argc, argv, &a)) return 2;
    /* -f FILE, or -p - for stdin */
    char *prompt_text = NULL;
    const char *from = a.prompt_file ? a.prompt_file : !strcmp(a.prompt, "-") ? "-" : NULL;
    if (from) {
        if (cli_read_prompt("run", from, &prompt_text)) return 2;
        a.prompt = prompt_text;
    }
    int time_seed = a.seed == 0;
    if (time_seed) {
        a.seed = ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32)) & ((1ull << 53) - 1);
        if (a.seed == 0) a.seed = 1;
    }

    /* The device spec: --backend, refined by --part, --pes, --threads and
     * --xclbin. */
    char spec[512];
    if (cli_device_spec("run", spec, sizeof spec, a.backend, a.part, a.pes, a.threads, a.xclbin))
        return 2;
    /* --cards / --stages: spec keys cards= and stages= */
    if (cli_spec_split("run", spec, sizeof spec, a.cards, a.stages)) return 2;

    int rc, status = 1;
    tsr_device *dev = NULL;
    tsr_model *model = NULL;
    tsr_seq *seq = NULL;
    if ((rc = tsr_device_open(spec, &dev)) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        status = rc == TSR_ERR_ARG ? 2 : 1;
        goto out;
    }
    tsr_device_set_log(dev, cli_log_to_stderr, NULL);
    int bar_shown = 0;
    tsr_model_opts mo = { .tokenizer = a.tokenizer, .weights_f32 = a.weights_f32,
                          .weights = a.weights, .kv = a.kv,
                          .group_size = a.group_size, .seq_len = a.seq_len, .n_seqs = 1,
                          .progress = isatty(STDERR_FILENO) ? load_progress : NULL,
                          .progress_user = &bar_shown };
    rc = tsr_model_load(dev, a.model, &mo, &model);
    if (bar_shown) fprintf(stderr, "\n");
    if (rc != TSR_OK ||
        (rc = tsr_seq_open(model, &seq)) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        goto out;
    }
    tsr_model_info mi = { 0 };
    tsr_model_get_info(model, &mi);
    if (a.steps == 0 || a.steps > mi.seq_len) {
        if (a.steps > mi.seq_len)
            cli_error("warning: %d steps clamped to the context length %d", a.steps, mi.seq_len);
        a.steps = mi.seq_len;
    }

    /* Prompt: BOS + tokens.  The newest token stays pending on the device. */
    int cap = (int)strlen(a.prompt) + 3, n_prompt = 0;
    int *prompt = malloc((size_t)cap * sizeof *prompt);
    if (!prompt) { cli_error("out of memory"); goto out; }
    rc = tsr_model_tokenize(model, a.prompt, 1, prompt, cap, &n_prompt);
    if (rc == TSR_OK && n_prompt - 1 > mi.seq_len) {
        cli_error("%s: the prompt is %d tokens, longer than the context of %d tokens",
                  a.model, n_prompt, mi.seq_len);
        free(prompt);
        goto out;
    }
    if (rc != TSR_OK || (rc = tsr_seq_append_tokens(seq, prompt, n_prompt)) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        free(prompt);
        goto out;
    }
    stream_ctx sc = { .model = model, .prev = prompt[0], .bos = mi.bos, .eos = mi.eos };
    textout_init(&sc.text, NULL, 0);
    for (int i = 1; i < n_prompt && i <= a.steps; i++) on_token(seq, prompt[i], "", 0, &sc);
    free(prompt);

    int n_gen = a.steps - n_prompt + 1, got = 0;
    if (n_gen <= 0)   /* as run.c: -n counts the prompt's positions too */
        cli_error("warning: -n %d leaves no position after the prompt's %d tokens (BOS "
                  "included; -n counts them): no token is generated", a.steps, n_prompt);
    if (n_gen > 0) {
        /* A sampled run says its seed, so that -s repeats it. */
        if (time_seed && a.temperature > 0.0f)
            fprintf(stderr, "tessera: seed %llu (time-based; -s %llu repeats this run)\n",
                    (unsigned long long)a.seed, (unsigned long long)a.seed);
        tsr_gen_opts go = { .max_tokens = n_gen, .temperature = a.temperature,
                            .top_p = a.top_p, .seed = a.seed };
        /* Ctrl-C stops the decode; the summary still follows. */
        struct sigaction sa = { .sa_handler = on_sigint }, old_sa;
        sigemptyset(&sa.sa_mask);
        cancel_target = seq;
        sigaction(SIGINT, &sa, &old_sa);
        rc = tsr_seq_generate(seq, &go, on_token, &sc, &got);
        sigaction(SIGINT, &old_sa, NULL);
        cancel_target = NULL;
        if (rc != TSR_OK) {
            printf("\n");
            cli_error("%s", tsr_device_errmsg(dev));
            textout_free(&sc.text);
            goto out;
        }
    }
    print_ready(&sc, 1);
    textout_free(&sc.text);
    printf("\n");
    if (cli_flush_stdout()) goto out;
    tsr_seq_stats st = { 0 };
    tsr_seq_get_stats(seq, &st);
    int stopped = tsr_seq_was_cancelled(seq);
    fprintf(stderr, "tessera: %d token%s generated%s, %.1f tokens/s, time to first token %.2f ms\n",
            got, cli_s(got), stopped ? " (stopped by Ctrl-C)" : "", st.decode_tok_s, st.ttft_ms);
    if (a.stats) print_stats(dev, seq);
    status = stopped ? 128 + SIGINT : 0;
out:
    tsr_seq_close(seq);
    tsr_model_close(model);
    tsr_device_close(dev);
    free(prompt_text);
    return status;
}
