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

static const cli_command run_cmd = {
    "run", CLI_RUN,
    "usage: tessera run -m MODEL [-z TOKENIZER] [-p PROMPT | -f FILE] [-n STEPS] [-t TEMP] [-s SEED] [options]\n"
    "\n"
    "Load MODEL onto a device (weights streamed once into on-chip SRAM), then\n"
    "decode on the device and stream the text to stdout.  A summary (tokens,\n"
    "tokens/s, time to first token) goes to stderr, also after Ctrl-C, which\n"
    "stops the decode (exit status 130).  llama.cpp's names are aliases where\n"
    "they mean the same (--temp, -c/--ctx-size, --n-predict).\n", NULL, NULL
};

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
    int bos, eos;   /* the model's: they end the text, unprinted */
    textout text;   /* pieces into UTF-8 characters                 */
} stream_ctx;

/* Print a generated token's text: the piece the library hands the
 * callback is textout_token's (none for BOS and EOS). */
static int on_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)s;
    (void)token;
    stream_ctx *c = user;
    textout_print(&c->text, stdout, text, len);
    return 0;
}

/* The value text of counter `name` in the counters' "name value" lines,
 * or NULL. */
static const char *counter(const char *buf, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == ' ') return p + n + 1;
    return NULL;
}

/* Counter `name` as one line of text (up to its newline) into out. */
static const char *counter_text(const char *buf, const char *name, char *out, size_t cap)
{
    const char *v = counter(buf, name);
    snprintf(out, cap, "%.*s", v ? (int)strcspn(v, "\n") : 1, v ? v : "?");
    return out;
}

/* --stats=all: the traffic of every phase, then every kernel counter. */
static void print_all(const tsr_traffic *t, const char *buf)
{
    fprintf(stderr,
            "off-chip traffic (bytes)   host->device   device->host\n"
            "  load                   %14llu %14llu\n"
            "  prefill                %14llu %14llu\n"
            "  decode                 %14llu %14llu\n"
            "  debug                  %14llu %14llu\n"
            "kernel invocations: %llu   weight images streamed: %llu\n",
            (unsigned long long)t->load_h2d, (unsigned long long)t->load_d2h,
            (unsigned long long)t->prefill_h2d, (unsigned long long)t->prefill_d2h,
            (unsigned long long)t->decode_h2d, (unsigned long long)t->decode_d2h,
            (unsigned long long)t->debug_h2d, (unsigned long long)t->debug_d2h,
            (unsigned long long)t->invocations, (unsigned long long)t->loads);
    if (t->link_passes)   /* a model split over devices: the stages' links */
        fprintf(stderr, "card links between stages (bytes, all hops): prefill %llu, decode %llu "
                "in %llu passes\n", (unsigned long long)t->link_prefill,
                (unsigned long long)t->link_decode, (unsigned long long)t->link_passes);
    fprintf(stderr, "kernel counters:\n%s", buf);
}

/* --stats: a short table (speed, the cycle model's cycles per token, the
 * off-chip bytes, a few key counters); --stats=all adds print_all's. */
static void print_stats(tsr_device *dev, tsr_seq *seq, int all)
{
    tsr_traffic t = { 0 };
    tsr_seq_stats st = { 0 };
    tsr_device_traffic(dev, &t);
    tsr_seq_get_stats(seq, &st);
    static char buf[1 << 14];
    if (tsr_device_kernel_counters(dev, buf, sizeof buf) != TSR_OK) buf[0] = '\0';
    char kv[64], w[128], prof[128], macs[32], kvb[32];
    fprintf(stderr,
            "stats                        prefill         decode\n"
            "  tokens              %14llu %14llu\n"
            "  tokens/s            %14.1f %14.1f\n"
            "  bytes host->device  %14llu %14llu\n"
            "  bytes device->host  %14llu %14llu\n"
            "  time to first token %11.2f ms\n",
            (unsigned long long)st.prefill_tokens, (unsigned long long)st.decode_tokens,
            st.prefill_tok_s, st.decode_tok_s, (unsigned long long)t.prefill_h2d,
            (unsigned long long)t.decode_h2d, (unsigned long long)t.prefill_d2h,
            (unsigned long long)t.decode_d2h, st.ttft_ms);
    /* the cycle model's estimate from the counters (tessera plan's) */
    const char *cyc = counter(buf, "cycles.total"), *at = counter(buf, "cycles.position");
    const char *tps = counter(buf, "projected.tok_s"), *mhz = tps ? strstr(tps, " at ") : NULL;
    if (cyc && at && tps && mhz)
        fprintf(stderr, "  device cycles/token %14llu (the last, position %llu: %.0f tokens/s at "
                "%d MHz,\n                      projected by the cycle model, not measured; "
                "compare tessera plan --pos)\n",
                strtoull(cyc, NULL, 10), strtoull(at, NULL, 10), strtod(tps, NULL), atoi(mhz + 4));
    fprintf(stderr, "  kernel              profile %s; %llu invocations, %s MACs, %llu bytes loaded\n"
            "  on chip             weights %s; KV cache %s, %s bytes\n",
            counter_text(buf, "profile", prof, sizeof prof), (unsigned long long)t.invocations,
            counter_text(buf, "macs", macs, sizeof macs), (unsigned long long)t.load_h2d,
            counter_text(buf, "onchip.weights", w, sizeof w),
            counter_text(buf, "onchip.kv", kv, sizeof kv),
            counter_text(buf, "onchip.kv_bytes", kvb, sizeof kvb));
    if (t.link_passes && !all)   /* a model split over devices: the stages' links */
        fprintf(stderr, "  card links          prefill %llu, decode %llu bytes in %llu passes\n",
                (unsigned long long)t.link_prefill, (unsigned long long)t.link_decode,
                (unsigned long long)t.link_passes);
    if (all) print_all(&t, buf);
    else fputs("  (--stats=all: the traffic of every phase and every kernel counter)\n", stderr);
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

/* 0, 1 after the help, -1 after an error. */
static int parse_args(int argc, char **argv, cli_args *a)
{
    int rc = cli_parse(&run_cmd, argc, argv, a);
    if (rc) return rc;
    if (!a->model) {
        cli_error("run: -m MODEL is required (see tessera run --help)");
        return -1;
    }
    if (a->prompt_file && cli_given(a, "prompt")) {
        cli_error("run: give the prompt as -p TEXT or -f FILE, not both");
        return -1;
    }
    if (a->n_predict && cli_given(a, "steps")) {
        cli_error("run: give -n STEPS (positions, the prompt's included) or --n-predict N "
                  "(tokens generated), not both");
        return -1;
    }
    return 0;
}

/* Tokenize the prompt (BOS first) and append it (its newest token stays
 * pending on the device); print it; with --n-predict, set a->steps from
 * its length.  Returns the prompt's tokens, or -1 after an error. */
static int feed_prompt(cli_args *a, tsr_device *dev, tsr_seq *seq, const tsr_model_info *mi,
                       stream_ctx *sc)
{
    int cap = (int)strlen(a->prompt) + 3, n = 0;
    int *prompt = malloc((size_t)cap * sizeof *prompt);   /* (cap,) token ids */
    if (!prompt) {
        cli_error("out of memory");
        return -1;
    }
    int rc = tsr_model_tokenize(sc->model, a->prompt, 1, prompt, cap, &n);
    int i0 = rc == TSR_OK && n > 0 && prompt[0] == mi->bos;   /* a BOS first: not echoed */
    if (rc == TSR_OK && n == 0) {
        cli_error("%s: the prompt is empty and this model's vocabulary adds no BOS: give one "
                  "with -p TEXT", a->model);
        n = -1;
    } else if (rc == TSR_OK && n - 1 > mi->seq_len) {
        cli_error("%s: the prompt is %d tokens, longer than the context of %d tokens",
                  a->model, n, mi->seq_len);
        n = -1;
    } else if (rc != TSR_OK || tsr_seq_append_tokens(seq, prompt, n) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        n = -1;
    } else if (a->n_predict) {   /* llama.cpp's count: tokens after the prompt */
        int room = mi->seq_len - (n - 1);
        if (a->n_predict > room)
            cli_error("warning: --n-predict %d clamped to %d: the context length %d less the "
                      "prompt's %d tokens (--ctx N sets it)", a->n_predict, room, mi->seq_len,
                      n - 1);
        a->steps = n - 1 + (a->n_predict < room ? a->n_predict : room);
    }
    if (n > 0) {   /* echo the prompt: all of it, but a BOS the vocabulary put first */
        int prev = i0 ? prompt[0] : -1;   /* -1: the start of a text */
        for (int i = i0; i < n && i - i0 < a->steps; i++) {
            size_t len;
            const char *p = textout_token(sc->model, prev, prompt[i], sc->bos, sc->eos, &len);
            textout_print(&sc->text, stdout, p, len);
            prev = prompt[i];
        }
    }
    free(prompt);
    return n;
}

/* Generate n_gen tokens, printed as they come; Ctrl-C stops it.  Returns
 * 0, or -1 after printing the device's error. */
static int generate(const cli_args *a, int n_gen, tsr_device *dev,
                    tsr_seq *seq, stream_ctx *sc, int *got)
{
    tsr_gen_opts go = { .max_tokens = n_gen, .temperature = a->temperature, .top_p = a->top_p,
                        .seed = a->seed };
    /* Ctrl-C stops the decode; the summary still follows. */
    struct sigaction sa = { .sa_handler = on_sigint }, old_sa;
    sigemptyset(&sa.sa_mask);
    cancel_target = seq;
    sigaction(SIGINT, &sa, &old_sa);
    int rc = tsr_seq_generate(seq, &go, on_token, sc, got);
    sigaction(SIGINT, &old_sa, NULL);
    cancel_target = NULL;
    if (rc != TSR_OK) {
        printf("\n");
        cli_error("%s", tsr_device_errmsg(dev));
        return -1;
    }
    return 0;
}

/* After parsing: the prompt from -f FILE or -p - (stdin) into *text, a
 * random seed unless -s, and the device spec.  Returns 0, or 2 after an
 * error. */
static int prepare(cli_args *a, char **text, int *random_seed, char *spec, size_t cap)
{
    const char *from = a->prompt_file ? a->prompt_file : !strcmp(a->prompt, "-") ? "-" : NULL;
    if (from) {
        if (cli_read_prompt("run", from, text)) return 2;
        a->prompt = *text;
    }
    *random_seed = a->seed == 0;
    if (*random_seed) a->seed = cli_random_seed();
    /* --backend, refined by --part, --pes, --threads, --xclbin, the split */
    return cli_device_spec("run", spec, cap, a) ? 2 : 0;
}

int cmd_run(int argc, char **argv)
{
    cli_args a = { .prompt = "", .backend = "emu", .steps = 256,
                   .temperature = CLI_DEFAULT_TEMPERATURE, .top_p = CLI_DEFAULT_TOP_P };
    int prc = parse_args(argc, argv, &a);
    if (prc) return prc > 0 ? 0 : 2;
    char *prompt_text = NULL, spec[512];
    int random_seed, status = prepare(&a, &prompt_text, &random_seed, spec, sizeof spec);
    tsr_device *dev = NULL;
    tsr_model *model = NULL;
    tsr_seq *seq = NULL;
    if (status) goto out;
    int bar_shown = 0;
    tsr_model_opts mo = cli_model_opts(&a, 1);
    mo.progress = isatty(STDERR_FILENO) ? load_progress : NULL;
    mo.progress_user = &bar_shown;
    status = cli_open_model(&a, spec, &mo, &dev, &model);
    if (bar_shown) fprintf(stderr, "\n");
    if (status) goto out;
    status = 1;
    if (tsr_seq_open(model, &seq) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        goto out;
    }
    tsr_model_info mi = { 0 };
    tsr_model_get_info(model, &mi);
    if (!a.n_predict && (a.steps == 0 || a.steps > mi.seq_len)) {
        if (a.steps > mi.seq_len)
            cli_error("warning: %d steps clamped to the context length %d (--ctx N sets it)",
                      a.steps, mi.seq_len);
        a.steps = mi.seq_len;
    }
    stream_ctx sc = { .model = model, .bos = mi.bos, .eos = mi.eos };
    textout_init(&sc.text, NULL, 0);
    /* A sampled run says its seed, so that -s repeats it: before the
     * prompt's echo, so that the line does not land inside the text */
    if (random_seed && a.temperature > 0.0f)
        fprintf(stderr, "tessera: seed %llu (random; -s %llu repeats this run)\n",
                (unsigned long long)a.seed, (unsigned long long)a.seed);
    int n_prompt = feed_prompt(&a, dev, seq, &mi, &sc), got = 0;
    /* -n counts positions, the prompt's included, as run.c's steps: the
     * last of them samples the last token */
    int n_gen = a.steps - n_prompt + 1;
    if (n_prompt > 0 && n_gen <= 0)   /* as run.c: -n counts the prompt's positions too */
        cli_error("warning: -n %d leaves no position after the prompt's %d tokens (BOS "
                  "included; -n counts them): no token is generated", a.steps, n_prompt);
    if (n_prompt < 0 || (n_gen > 0 && generate(&a, n_gen, dev, seq, &sc, &got))) {
        textout_free(&sc.text);
        goto out;
    }
    textout_print_end(&sc.text, stdout);
    textout_free(&sc.text);
    printf("\n");
    if (cli_flush_stdout()) goto out;
    tsr_seq_stats st = { 0 };
    tsr_seq_get_stats(seq, &st);
    int stopped = tsr_seq_was_cancelled(seq);
    fprintf(stderr, "tessera: %d token%s generated%s, %.1f tokens/s, time to first token %.2f ms\n",
            got, cli_s(got), stopped ? " (stopped by Ctrl-C)" : "", st.decode_tok_s, st.ttft_ms);
    if (a.stats) print_stats(dev, seq, !strcmp(a.stats, "all"));
    status = stopped ? 128 + SIGINT : 0;
out:
    tsr_seq_close(seq);
    tsr_model_close(model);
    tsr_device_close(dev);
    free(prompt_text);
    return status;
}
