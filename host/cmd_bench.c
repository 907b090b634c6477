/* cmd_bench.c - tessera bench: decode throughput, prefill throughput, time
 * to first token, weight-stream rate and peak RSS of one model on a device,
 * and with --batch B the decode throughput of B sequences decoded together.
 *
 * The model is loaded once (that load is timed here: GB/s = the device's
 * load_h2d bytes / wall seconds of tsr_model_load).  Then W warm-up runs and
 * K measured runs, each on a fresh sequence: append P prompt token ids
 * (prefill), generate exactly N tokens greedily with ignore_stop = 1.  The
 * per-run figures are the library's sequence stats.  With --batch B each
 * run then does the same for B fresh sequences in one
 * tsr_seq_generate_batch: aggregate tokens/s = B x N / wall seconds of that
 * call, per sequence the mean of their stats.  The prompt is token ids,
 * not text, so that P is exact for any vocab: the model's BOS, then
 * (i * 7919 + 31 k) % vocab for sequence k. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli.h"

static const char usage[] =
    "usage: tessera bench -m MODEL [-z TOKENIZER] [options]\n"
    "\n"
    "Load MODEL once (the weight stream is timed), then run W warm-up and K\n"
    "measured passes, each on a fresh sequence: prefill P prompt tokens, then\n"
    "generate exactly N tokens greedily (BOS/EOS do not stop it).  Prints the\n"
    "median and min..max over the K runs of decode tokens/s, prefill tokens/s\n"
    "and time to first token, plus the weight stream rate (GB/s, from the\n"
    "first chunk to the last: the image is built PE by PE as it streams), the\n"
    "time before the first chunk (open, non-finite check, tokenizer; configure),\n"
    "the whole load, and the peak RSS.\n"
    "\n"
    "  -m, --model FILE      llama2.c checkpoint or GGUF file\n"
    "  -z, --tokenizer FILE  llama2.c tokenizer.bin (required for llama2.c files;\n"
    "                        the prompt is token ids, so any tokenizer of the\n"
    "                        model's vocab size will do)\n"
    "      --prompt-tokens P prompt length in tokens, BOS included (default 32), up\n"
    "                        to the context less one (then 1 decode token is left)\n"
    "      --decode-tokens N tokens generated per run (default 256, or what the\n"
    "                        context leaves after the prompt if that is less)\n"
    "      --ctx N           context length on the device (default: the model's;\n"
    "                        GGUF context_length may understate it; --seq-len N\n"
    "                        is the same)\n"
    "      --batch B         also decode B sequences (1..8) together in each run:\n"
    "                        B fresh sequences (the model gets B slots), each\n"
    "                        prefilled with its own P-token prompt (not timed),\n"
    "                        then N tokens each, greedily, in one\n"
    "                        tsr_seq_generate_batch; reports their aggregate and\n"
    "                        per-sequence decode tokens/s next to the single\n"
    "                        sequence's, and the ratio (the device steps up to\n"
    "                        its batch limit of them in one pass over the weights)\n"
    "      --repeat K        measured runs (default 3)\n"
    "      --warmup W        unmeasured runs first (default 1)\n"
    "      --backend SPEC    device spec (default emu)\n"
    "      --xclbin FILE     xrt: the xclbin to load (appends xclbin=FILE to the spec)\n"
    CLI_PART_HELP
    CLI_PES_HELP
    CLI_SPLIT_HELP
    "                        (with --cards or --stages, also the decode tokens/s on the\n"
    "                        cards' own clocks, single and --batch, and each card's layers\n"
    "                        and busy share)\n"
    "      --stage-batch N   a split's stages (--cards or --stages) take up to N waiting\n"
    "                        sequences in one pass over its weights (1..8; with --batch B,\n"
    "                        at most B; default 1: one\n"
    "                        sequence a pass, stage k on one while stage k+1 runs the\n"
    "                        one before, what cards gain from; more: fewer passes over\n"
    "                        the weights, what the emulator's host gains from; the\n"
    "                        spec's batch=N)\n"
    "      --threads T       append threads=T to the device spec (emulator\n"
    "                        default: the CPUs this process may use)\n"
    CLI_WEIGHTS_HELP
    "      --json            one JSON line per measured run instead of the table\n"
    "                        (with --batch: batch, batch_decode_tok_s,\n"
    "                        batch_seq_decode_tok_s, batch_speedup)\n"
    "  -h, --help            this text\n";

typedef struct bench_args {
    const char *model, *tokenizer, *backend, *part;
    int prompt_tokens, decode_tokens, repeat, warmup, threads, weights_f32, group_size, json;
    int batch;              /* --batch B: 0 none */
    int weights;            /* TSR_WEIGHTS_* */
    const char *kv;         /* --kv */
    int pes, seq_len;       /* 0: the device's / the model's default */
    int decode_given;       /* --decode-tokens was passed: never clamp it */
    const char *xclbin;   /* xrt: --xclbin FILE */
    int cards;              /* --cards N: 0 one device */
    const char *stages;     /* --stages A-B,... */
    int stage_batch;        /* --stage-batch N: 0 the spec's */
} bench_args;

/* One measured run. */
typedef struct bench_run {
    double decode_tok_s, prefill_tok_s, ttft_ms;
    double batch_tok_s, batch_seq_tok_s;   /* --batch: aggregate, per sequence */
    double dev_tok_s, dev_batch_tok_s;     /* a split: decode tokens/s on the cards'
                                              clocks, single and --batch */
} bench_run;

static int parse_args(int argc, char **argv, bench_args *a)
{
    for (int i = 0; i < argc; i++) {
        const char *o = cli_opt(&argc, argv, i), *v;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf(usage, tsr_part_list());
            exit(0);
        }
#define IS(s, l) (!strcmp(o, s) || !strcmp(o, l))
#define VAL() if (!(v = cli_value(argc, argv, &i))) return -1
        if (IS("-m", "--model"))                   { VAL(); a->model = v; }
        else if (IS("-z", "--tokenizer"))          { VAL(); a->tokenizer = v; }
        else if (!strcmp(o, "--prompt-tokens"))    { VAL(); if (cli_int(o, v, 1, 1 << 24, &a->prompt_tokens)) return -1; }
        else if (!strcmp(o, "--decode-tokens"))    { VAL(); if (cli_int(o, v, 1, 1 << 24, &a->decode_tokens)) return -1; a->decode_given = 1; }
        else if (IS("--ctx", "--seq-len"))         { VAL(); if (cli_int(o, v, 1, 1 << 24, &a->seq_len)) return -1; }
        else if (!strcmp(o, "--pes"))              { VAL(); if (cli_int(o, v, 1, 1 << 16, &a->pes)) return -1; }
        else if (!strcmp(o, "--part"))             { VAL(); a->part = v; }
        else if (!strcmp(o, "--repeat"))           { VAL(); if (cli_int(o, v, 1, 1 << 16, &a->repeat)) return -1; }
        else if (!strcmp(o, "--batch"))            { VAL(); if (cli_int(o, v, 1, 8, &a->batch)) return -1; }
        else if (!strcmp(o, "--cards"))            { VAL(); if (cli_int(o, v, 1, TSR_MAX_CARDS, &a->cards)) return -1; }
        else if (!strcmp(o, "--stages"))           { VAL(); a->stages = v; }
        else if (!strcmp(o, "--stage-batch"))      { VAL(); if (cli_int(o, v, 1, 8, &a->stage_batch)) return -1; }
        else if (!strcmp(o, "--warmup"))           { VAL(); if (cli_int(o, v, 0, 1 << 16, &a->warmup)) return -1; }
        else if (!strcmp(o, "--threads"))          { VAL(); if (cli_int(o, v, 1, 1024, &a->threads)) return -1; }
        else if (!strcmp(o, "--group-size"))       { VAL(); if (cli_int(o, v, 1, 1 << 16, &a->group_size)) return -1; }
        else if (!strcmp(o, "--backend"))          { VAL(); a->backend = v; }
        else if (!strcmp(o, "--xclbin"))           { VAL(); a->xclbin = v; }
        else if (!strcmp(o, "--json"))             { a->json = 1; }
        else if (!strcmp(o, "--weights")) { VAL(); if (cli_weights(o, v, &a->weights_f32, &a->weights)) return -1; }
        else if (!strcmp(o, "--kv"))      { VAL(); if (cli_kv(o, v, &a->kv)) return -1; }
        else {
            cli_unknown("bench", o);
            return -1;
        }
#undef IS
#undef VAL
    }
    if (!a->model) {
        cli_error("bench: -m MODEL is required (see tessera bench --help)");
        return -1;
    }
    return 0;
}

/* Decode tokens/s on a split's cards' clocks between two readings (0: one
 * device, or no decode between them). */
static double dev_rate(const tsr_pipeline *a, const tsr_pipeline *b)
{
    uint64_t cy = b->decode_cycles - a->decode_cycles, n = b->decode_tokens - a->decode_tokens;
    return b->cards > 1 && cy ? (double)n * b->clock_mhz * 1e6 / (double)cy : 0.0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Peak resident set of this process so far, MB (Linux: ru_maxrss in KB). */
static double peak_rss_mb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
    return (double)ru.ru_maxrss / 1024.0;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Median, min and max of v (n values, n >= 1); sorts v in place. */
static void summarize(double *v, int n, double *med, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    *med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The worker threads a spec asks for: threads=T in it, else the emulator's
 * default, the CPUs this process may run on (capped by the PEs, which the
 * report does not know: 16 by default). */
static int spec_threads(const char *spec)
{
    const char *p = strstr(spec, "threads=");
    if (p) return atoi(p + 8);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    return 1;
}

/* When the weight stream started and last moved (progress callback). */
typedef struct stream_clock {
    double start, end;   /* seconds (now_s); 0: not called */
} stream_clock;

static void stream_tick(uint64_t sent, uint64_t total, void *user)
{
    stream_clock *c = user;
    (void)total;
    double t = now_s();
    if (sent == 0 || c->start == 0) c->start = t;
    c->end = t;
}

/* Print s as a JSON string (quotes, backslashes and control bytes escaped). */
static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* Sequence k's prompt: n ids, BOS first. */
static void make_prompt(int *ids, int n, int k, int vocab, int bos)
{
    ids[0] = bos;
    for (int i = 1; i < n; i++) ids[i] = (int)(((long long)i * 7919 + 31 * k) % vocab);
}

/* One run on a fresh sequence: prefill prompt (n_prompt ids), generate n_gen
 * tokens.  Returns a status; the failure is in tsr_device_errmsg(). */
static int one_run(tsr_model *model, const int *prompt, int n_prompt, int n_gen,
                   bench_run *r, int *got)
{
    tsr_seq *seq = NULL;
    int rc = tsr_seq_open(model, &seq);
    if (rc == TSR_OK) rc = tsr_seq_append_tokens(seq, prompt, n_prompt);
    tsr_gen_opts go = { .max_tokens = n_gen, .temperature = 0.0f, .ignore_stop = 1 };
    if (rc == TSR_OK) rc = tsr_seq_generate(seq, &go, NULL, NULL, got);
    tsr_seq_stats st = { 0 };
    if (rc == TSR_OK) rc = tsr_seq_get_stats(seq, &st);
    if (rc == TSR_OK) {
        r->decode_tok_s = st.decode_tok_s;
        r->prefill_tok_s = st.prefill_tok_s;
        r->ttft_ms = st.ttft_ms;
    }
    tsr_seq_close(seq);
    return rc;
}

/* The batched run: b fresh sequences, each prefilled with its own prompt
 * (n_prompt ids, written into ids), then n_gen tokens each in one
 * tsr_seq_generate_batch.  *got gets the fewest any sequence generated. */
static int batch_run(tsr_model *model, int b, int *ids, int n_prompt, int n_gen, int vocab, int bos,
                     bench_run *r, int *got)
{
    tsr_seq *seqs[8] = { NULL };
    tsr_gen_opts go[8];
    int n_got[8] = { 0 }, rc = TSR_OK;
    for (int k = 0; k < b && rc == TSR_OK; k++) {
        go[k] = (tsr_gen_opts){ .max_tokens = n_gen, .temperature = 0.0f, .ignore_stop = 1 };
        make_prompt(ids, n_prompt, k, vocab, bos);
        rc = tsr_seq_open(model, &seqs[k]);
        if (rc == TSR_OK) rc = tsr_seq_append_tokens(seqs[k], ids, n_prompt);
    }
    double t0 = now_s();
    if (rc == TSR_OK) rc = tsr_seq_generate_batch(seqs, b, go, NULL, NULL, n_got);
    double wall = now_s() - t0;
    double per_seq = 0.0;
    int total = 0;
    *got = n_gen;
    for (int k = 0; k < b && rc == TSR_OK; k++) {
        tsr_seq_stats st = { 0 };
        if ((rc = tsr_seq_get_stats(seqs[k], &st)) != TSR_OK) break;
        per_seq += st.decode_tok_s / b;
        total += n_got[k];
        if (n_got[k] < *got) *got = n_got[k];
    }
    r->batch_tok_s = wall > 0 ? total / wall : 0.0;
    r->batch_seq_tok_s = per_seq;
    for (int k = 0; k < b; k++) tsr_seq_close(seqs[k]);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    bench_args a = { .backend = "emu", .prompt_tokens = 32, .decode_tokens = 256,
                     .repeat = 3, .warmup = 1 };
    if (parse_args(argc, argv, &a)) return 2;

    char spec[512];   /* --backend refined by part=, pes=, threads=, xclbin= */
    if (cli_device_spec("bench", spec, sizeof spec, a.backend, a.part, a.pes, a.threads,
                        a.xclbin) ||
        cli_spec_split("bench", spec, sizeof spec, a.cards, a.stages))
        return 2;
    if (a.stage_batch) {
        size_t n = strlen(spec);
        if (a.cards < 2 && !a.stages) {
            cli_error("bench: --stage-batch needs --cards N or --stages (a split)");
            return 2;
        }
        if ((size_t)snprintf(spec + n, sizeof spec - n, ",batch=%d", a.stage_batch) >=
            sizeof spec - n) {
            cli_error("bench: device spec too long");
            return 2;
        }
    }
    int threads = spec_threads(spec);
    if (a.pes && threads > a.pes) threads = a.pes;   /* the emulator caps it so */

    int rc, status = 1;
    int *prompt = NULL;       // (prompt_tokens,) token ids
    bench_run *runs = NULL;   // (repeat,)
    tsr_device *dev = NULL;
    tsr_model *model = NULL;
    if ((rc = tsr_device_open(spec, &dev)) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        status = rc == TSR_ERR_ARG ? 2 : 1;
        goto out;
    }

    tsr_device_set_log(dev, cli_log_to_stderr, NULL);

    /* Load once, timed: preparing the image (read, quantize, tile, hash)
     * and configuring the device, then the weight stream itself, told apart
     * by the progress callback's first call (sent = 0). */
    stream_clock sc = { 0.0, 0.0 };
    tsr_model_opts mo = { .tokenizer = a.tokenizer, .weights_f32 = a.weights_f32,
                          .weights = a.weights, .kv = a.kv,
                          .group_size = a.group_size, .seq_len = a.seq_len,
                          .n_seqs = a.batch > 1 ? a.batch : 1,
                          .progress = stream_tick, .progress_user = &sc };
    double t0 = now_s();
    rc = tsr_model_load(dev, a.model, &mo, &model);
    double load_s = now_s() - t0;
    if (rc != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        goto out;
    }
    tsr_traffic tr = { 0 };
    tsr_device_traffic(dev, &tr);
    double stream_s = sc.start > 0 ? sc.end - sc.start : load_s;
    double prep_s = sc.start > 0 ? sc.start - t0 : 0.0;
    double load_gb_s = stream_s > 0 ? (double)tr.load_h2d / stream_s / 1e9 : 0.0;
    tsr_model_info mi = { 0 };
    tsr_model_get_info(model, &mi);
    /* The default decode count shrinks to what the context leaves (a
     * stories15M-shape model has 256 positions, GGUF files say 128); a
     * count the user asked for is never changed. */
    if (!a.decode_given && a.prompt_tokens < mi.seq_len &&
        a.prompt_tokens + a.decode_tokens > mi.seq_len) {
        int left = mi.seq_len - a.prompt_tokens;
        cli_error("bench: %d decode tokens (the default) clamped to %d: the context is %d "
                  "tokens, %d of them prompt (--decode-tokens or --ctx to change)",
                  a.decode_tokens, left, mi.seq_len, a.prompt_tokens);
        a.decode_tokens = left;
    }
    if (a.prompt_tokens >= mi.seq_len) {
        cli_error("%s: %d prompt tokens leave no room to decode in the context of %d tokens "
                  "(--prompt-tokens up to %d, or --ctx to change)",
                  a.model, a.prompt_tokens, mi.seq_len, mi.seq_len - 1);
        status = 2;
        goto out;
    }
    if (a.prompt_tokens + a.decode_tokens > mi.seq_len) {
        cli_error("%s: %d prompt + %d decode tokens exceed the context of %d tokens "
                  "(--prompt-tokens, --decode-tokens or --ctx to change)",
                  a.model, a.prompt_tokens, a.decode_tokens, mi.seq_len);
        status = 2;
        goto out;
    }

    prompt = malloc((size_t)a.prompt_tokens * sizeof *prompt);
    runs = malloc((size_t)a.repeat * sizeof *runs);
    if (!prompt || !runs) { cli_error("out of memory"); goto out; }

    /* what is on chip: "f32", "q8", "q4", or "mixed" (Q4_0 and Q8_0 kinds) */
    const char *wname = a.weights_f32 ? "f32" : !strncmp(mi.weights, "Q8_0", 4) ? "q8"
                      : !strncmp(mi.weights, "Q4_0 group", 10) ? "q4" : "mixed";
    int gs = mi.group_size;
    tsr_pipeline last_pipe = { 0 };
    memset(&last_pipe, 0, sizeof last_pipe);
    for (int k = -a.warmup; k < a.repeat; k++) {
        bench_run r = { 0 };
        int got = 0;
        make_prompt(prompt, a.prompt_tokens, 0, mi.vocab_size, mi.bos);
        tsr_pipeline p0 = { 0 }, p1 = { 0 }, p2 = { 0 };
        tsr_device_pipeline(dev, &p0);
        if ((rc = one_run(model, prompt, a.prompt_tokens, a.decode_tokens, &r, &got)) == TSR_OK &&
            got == a.decode_tokens && a.batch) {
            tsr_device_pipeline(dev, &p1);
            rc = batch_run(model, a.batch, prompt, a.prompt_tokens, a.decode_tokens,
                           mi.vocab_size, mi.bos, &r, &got);
        } else {
            tsr_device_pipeline(dev, &p1);
        }
        tsr_device_pipeline(dev, &p2);
        r.dev_tok_s = dev_rate(&p0, &p1);
        r.dev_batch_tok_s = dev_rate(&p1, &p2);
        last_pipe = p2;
        if (rc != TSR_OK) {
            cli_error("%s", tsr_device_errmsg(dev));
            goto out;
        }
        if (got != a.decode_tokens) {
            cli_error("%s: generated %d token%s, expected %d", a.model, got, cli_s(got),
                      a.decode_tokens);
            goto out;
        }
        if (k < 0) continue; // warm-up: not measured
        runs[k] = r;
        if (a.json) {
            printf("{\"model\":");
            json_str(a.model);
            printf(",\"backend\":");
            json_str(spec);
            printf(",\"threads\":%d,\"weights\":\"%s\",\"group_size\":%d,\"kv\":\"%s\","
                   "\"prompt_tokens\":%d,\"decode_tokens\":%d,\"decode_tok_s\":%.3f,"
                   "\"prefill_tok_s\":%.3f,\"ttft_ms\":%.3f,\"load_gb_s\":%.4f,"
                   "\"load_prep_s\":%.4f,\"load_stream_s\":%.4f,\"load_s\":%.4f,"
                   "\"peak_rss_mb\":%.1f",
                   threads, wname, gs, mi.kv, a.prompt_tokens, got, r.decode_tok_s,
                   r.prefill_tok_s, r.ttft_ms, load_gb_s, prep_s, stream_s, load_s,
                   peak_rss_mb());
            if (a.batch)
                printf(",\"batch\":%d,\"batch_decode_tok_s\":%.3f,\"batch_seq_decode_tok_s\":%.3f,"
                       "\"batch_speedup\":%.3f", a.batch, r.batch_tok_s, r.batch_seq_tok_s,
                       r.decode_tok_s > 0 ? r.batch_tok_s / r.decode_tok_s : 0.0);
            if (last_pipe.cards > 1) {
                printf(",\"cards\":%d,\"device_decode_tok_s\":%.1f", last_pipe.cards, r.dev_tok_s);
                if (a.batch) printf(",\"device_batch_decode_tok_s\":%.1f", r.dev_batch_tok_s);
            }
            printf("}\n");
            if (cli_flush_stdout()) goto out;
        }
    }

    if (!a.json) {
        /* (metrics, repeat): decode, prefill, TTFT; with --batch the batch's
         * aggregate and per-sequence rates and its ratio to the single one */
        enum { N_METRICS = 9 };
        int split = last_pipe.cards > 1;
        int order[N_METRICS], nm = 0;   /* the rows shown */
        order[nm++] = 0;
        order[nm++] = 1;
        order[nm++] = 2;
        if (a.batch) order[nm++] = 3, order[nm++] = 4, order[nm++] = 5;
        if (split) order[nm++] = 6;
        if (split && a.batch) order[nm++] = 7, order[nm++] = 8;
        double *v = malloc(N_METRICS * (size_t)a.repeat * sizeof *v);
        if (!v) { cli_error("out of memory"); goto out; }
        for (int k = 0; k < a.repeat; k++) {
            const bench_run *r = &runs[k];
            v[0 * a.repeat + k] = r->decode_tok_s;
            v[1 * a.repeat + k] = r->prefill_tok_s;
            v[2 * a.repeat + k] = r->ttft_ms;
            v[3 * a.repeat + k] = r->batch_tok_s;
            v[4 * a.repeat + k] = r->batch_seq_tok_s;
            v[5 * a.repeat + k] = r->decode_tok_s > 0 ? r->batch_tok_s / r->decode_tok_s : 0.0;
            v[6 * a.repeat + k] = r->dev_tok_s;
            v[7 * a.repeat + k] = r->dev_batch_tok_s;
            v[8 * a.repeat + k] = r->dev_tok_s > 0 ? r->dev_batch_tok_s / r->dev_tok_s : 0.0;
        }
        static const char *const names[N_METRICS] = {
            "decode tokens/s", "prefill tokens/s", "time to first token, ms",
            "batch decode tokens/s", "batch per-sequence tok/s", "batch / single decode",
            "cards' clocks decode tok/s", "cards' clocks batch tok/s", "cards' batch / single"
        };
        printf("model %s  backend %s  threads %d  weights %s", a.model, spec, threads, wname);
        if (gs) printf(" (group size %d)", gs);
        printf("  KV %s", mi.kv);
        printf("\nprompt %d token%s, decode %d token%s, %d run%s after %d warm-up%s\n",
               a.prompt_tokens, cli_s(a.prompt_tokens), a.decode_tokens, cli_s(a.decode_tokens),
               a.repeat, cli_s(a.repeat), a.warmup, cli_s(a.warmup));
        if (a.batch)
            printf("batch: %d sequence%s decoded together in each run (aggregate tokens/s over "
                   "the call)\n", a.batch, cli_s(a.batch));
        printf("\n%-26s %12s %25s\n", "metric", "median", "min..max");
        for (int j = 0; j < nm; j++) {
            int m = order[j];
            double med, lo, hi;
            summarize(v + (size_t)m * a.repeat, a.repeat, &med, &lo, &hi);
            char range[64];
            snprintf(range, sizeof range, "%.2f..%.2f", lo, hi);
            printf("%-26s %12.2f %25s\n", names[m], med, range);
        }
        if (split) {
            /* each card: its layers and its share of the busiest card's
             * cycles over all the runs */
            uint64_t most = 0;
            for (int c = 0; c < last_pipe.cards; c++)
                if (last_pipe.busy_cycles[c] > most) most = last_pipe.busy_cycles[c];
            printf("cards (%d, %d MHz clocks): layers and busy cycles (share of the busiest)\n",
                   last_pipe.cards, last_pipe.clock_mhz);
            for (int c = 0; c < last_pipe.cards; c++)
                printf("  card %d: layers %u-%u, %llu cycles in %llu passes (%.0f%%)\n", c,
                       last_pipe.first_layer[c], last_pipe.first_layer[c] + last_pipe.n_layers[c] - 1u,
                       (unsigned long long)last_pipe.busy_cycles[c],
                       (unsigned long long)last_pipe.passes[c],
                       most ? 100.0 * (double)last_pipe.busy_cycles[c] / (double)most : 0.0);
        }
        printf("%-26s %12.3f   (%llu bytes streamed in %.3f s)\n", "weight stream GB/s",
               load_gb_s, (unsigned long long)tr.load_h2d, stream_s);
        printf("%-26s %12.3f   (open, non-finite check, tokenizer; configure)\n",
               "image preparation, s", prep_s);
        printf("%-26s %12.3f   (all of it: the image is built PE by PE as it streams)\n",
               "model load, s", load_s);
        printf("%-26s %12.1f\n", "peak RSS MB", peak_rss_mb());
        free(v);
        if (cli_flush_stdout()) goto out;
    }
    status = 0;
out:
    free(prompt);
    free(runs);
    tsr_model_close(model);
    tsr_device_close(dev);
    return status;
}
