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

static const cli_command bench_cmd = {
    "bench", CLI_BENCH,
    "usage: tessera bench -m MODEL [-z TOKENIZER] [options]\n"
    "\n"
    "Load MODEL once (the weight stream is timed), then run W warm-up and K\n"
    "measured passes, each on a fresh sequence: prefill P prompt tokens, then\n"
    "generate exactly N tokens greedily (BOS/EOS do not stop it).  Prints the\n"
    "median and min..max over the K runs of decode tokens/s, prefill tokens/s\n"
    "and time to first token, plus the weight stream rate (GB/s, from the\n"
    "first chunk to the last: the image is built PE by PE as it streams), the\n"
    "time before the first chunk (open, non-finite check, tokenizer; configure),\n"
    "the whole load, and the peak RSS.  The prompt is token ids, so any\n"
    "tokenizer of the model's vocab size will do.  With --cards or --stages,\n"
    "also the decode tokens/s on the cards' own clocks, single and --batch,\n"
    "and each card's layers and busy share.\n", NULL, NULL
};

/* One measured run. */
typedef struct bench_run {
    double decode_tok_s, prefill_tok_s, ttft_ms;
    double batch_tok_s, batch_seq_tok_s;   /* --batch: aggregate, per sequence */
    double dev_tok_s, dev_batch_tok_s;     /* a split: decode tokens/s on the cards'
                                              clocks, single and --batch */
} bench_run;

/* 0, 1 after the help, -1 after an error. */
static int parse_args(int argc, char **argv, cli_args *a)
{
    int rc = cli_parse(&bench_cmd, argc, argv, a);
    if (rc) return rc;
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

/* One bench: its options, device spec, the model's info and load times,
 * and the measured runs. */
typedef struct bench {
    cli_args a;
    char spec[512];           /* --backend refined by part=, pes=, threads=, xclbin= */
    int threads, gs;
    const char *wname;        /* on chip: "f32", "q8", "q4", "mixed" */
    tsr_model_info mi;
    tsr_traffic tr;
    double load_s, prep_s, stream_s, load_gb_s;
    tsr_pipeline last_pipe;   /* a split's cards after the last run */
    bench_run *runs;          /* (repeat,) */
} bench;

/* The device spec, with --stage-batch's batch=N.  Returns 0, or -1 after
 * an error. */
static int bench_spec(bench *b)
{
    if (cli_device_spec("bench", b->spec, sizeof b->spec, &b->a)) return -1;
    if (b->a.stage_batch) {
        size_t n = strlen(b->spec);
        if (b->a.cards < 2 && !b->a.stages) {
            cli_error("bench: --stage-batch needs --cards N or --stages (a split)");
            return -1;
        }
        if ((size_t)snprintf(b->spec + n, sizeof b->spec - n, ",batch=%d", b->a.stage_batch) >=
            sizeof b->spec - n) {
            cli_error("bench: device spec too long");
            return -1;
        }
    }
    b->threads = spec_threads(b->spec);
    if (b->a.pes && b->threads > b->a.pes) b->threads = b->a.pes;   /* the emulator caps it so */
    return 0;
}

/* Prompt and decode tokens against the context: the default decode count
 * shrinks to what the context leaves (a stories15M-shape model has 256
 * positions, GGUF files say 128); a count the user asked for is never
 * changed.  Returns 0, or -1 after an error. */
static int bench_fit(bench *b)
{
    cli_args *a = &b->a;
    int ctx = b->mi.seq_len;
    if (!cli_given(a, "decode-tokens") && a->prompt_tokens < ctx &&
        a->prompt_tokens + a->decode_tokens > ctx) {
        int left = ctx - a->prompt_tokens;
        cli_error("bench: %d decode tokens (the default) clamped to %d: the context is %d "
                  "tokens, %d of them prompt (--decode-tokens or --ctx to change)",
                  a->decode_tokens, left, ctx, a->prompt_tokens);
        a->decode_tokens = left;
    }
    if (a->prompt_tokens >= ctx) {
        cli_error("%s: %d prompt tokens leave no room to decode in the context of %d tokens "
                  "(--prompt-tokens up to %d, or --ctx to change)",
                  a->model, a->prompt_tokens, ctx, ctx - 1);
        return -1;
    }
    if (a->prompt_tokens + a->decode_tokens > ctx) {
        cli_error("%s: %d prompt + %d decode tokens exceed the context of %d tokens "
                  "(--prompt-tokens, --decode-tokens or --ctx to change)",
                  a->model, a->prompt_tokens, a->decode_tokens, ctx);
        return -1;
    }
    return 0;
}

/* Load the model once, timed: preparing the image (read, quantize, tile,
 * hash) and configuring the device, then the weight stream itself, told
 * apart by the progress callback's first call (sent = 0).  Returns 0, or
 * the exit status after an error. */
static int bench_load(bench *b, tsr_device **dev, tsr_model **model)
{
    stream_clock sc = { 0.0, 0.0 };
    tsr_model_opts mo = cli_model_opts(&b->a, b->a.batch > 1 ? b->a.batch : 1);
    mo.progress = stream_tick;
    mo.progress_user = &sc;
    int status = cli_open_device(b->spec, dev);
    if (status) return status;
    double t0 = now_s();
    int rc = tsr_model_load(*dev, b->a.model, &mo, model);
    b->load_s = now_s() - t0;
    if (rc != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(*dev));
        return 1;
    }
    tsr_device_traffic(*dev, &b->tr);
    b->stream_s = sc.start > 0 ? sc.end - sc.start : b->load_s;
    b->prep_s = sc.start > 0 ? sc.start - t0 : 0.0;
    b->load_gb_s = b->stream_s > 0 ? (double)b->tr.load_h2d / b->stream_s / 1e9 : 0.0;
    tsr_model_get_info(*model, &b->mi);
    /* what is on chip: "f32", "q8", "q4", or "mixed" (Q4_0 and Q8_0 kinds) */
    b->wname = b->a.weights_f32 ? "f32" : !strncmp(b->mi.weights, "Q8_0", 4) ? "q8"
             : !strncmp(b->mi.weights, "Q4_0 group", 10) ? "q4" : "mixed";
    b->gs = b->mi.group_size;
    return bench_fit(b) ? 2 : 0;
}

/* One measured run as a JSON line. */
static void print_json_run(const bench *b, const bench_run *r)
{
    const cli_args *a = &b->a;
    printf("{\"model\":");
    json_str(a->model);
    printf(",\"backend\":");
    json_str(b->spec);
    printf(",\"threads\":%d,\"weights\":\"%s\",\"group_size\":%d,\"kv\":\"%s\","
           "\"prompt_tokens\":%d,\"decode_tokens\":%d,\"decode_tok_s\":%.3f,"
           "\"prefill_tok_s\":%.3f,\"ttft_ms\":%.3f,\"load_gb_s\":%.4f,"
           "\"load_prep_s\":%.4f,\"load_stream_s\":%.4f,\"load_s\":%.4f,"
           "\"peak_rss_mb\":%.1f",
           b->threads, b->wname, b->gs, b->mi.kv, a->prompt_tokens, a->decode_tokens,
           r->decode_tok_s, r->prefill_tok_s, r->ttft_ms, b->load_gb_s, b->prep_s, b->stream_s,
           b->load_s, peak_rss_mb());
    if (a->batch)
        printf(",\"batch\":%d,\"batch_decode_tok_s\":%.3f,\"batch_seq_decode_tok_s\":%.3f,"
               "\"batch_speedup\":%.3f", a->batch, r->batch_tok_s, r->batch_seq_tok_s,
               r->decode_tok_s > 0 ? r->batch_tok_s / r->decode_tok_s : 0.0);
    if (b->last_pipe.cards > 1) {
        printf(",\"cards\":%d,\"device_decode_tok_s\":%.1f", b->last_pipe.cards, r->dev_tok_s);
        if (a->batch) printf(",\"device_batch_decode_tok_s\":%.1f", r->dev_batch_tok_s);
    }
    printf("}\n");
}

/* Warm-up and measured runs; each measured one into b->runs (and printed
 * with --json).  Returns 0, or -1 after an error. */
static int bench_runs(bench *b, tsr_device *dev, tsr_model *model, int *prompt)
{
    const cli_args *a = &b->a;
    for (int k = -a->warmup; k < a->repeat; k++) {
        bench_run r = { 0 };
        int got = 0, rc;
        make_prompt(prompt, a->prompt_tokens, 0, b->mi.vocab_size, b->mi.bos);
        tsr_pipeline p0 = { 0 }, p1 = { 0 }, p2 = { 0 };
        tsr_device_pipeline(dev, &p0);
        rc = one_run(model, prompt, a->prompt_tokens, a->decode_tokens, &r, &got);
        tsr_device_pipeline(dev, &p1);
        if (rc == TSR_OK && got == a->decode_tokens && a->batch)
            rc = batch_run(model, a->batch, prompt, a->prompt_tokens, a->decode_tokens,
                           b->mi.vocab_size, b->mi.bos, &r, &got);
        tsr_device_pipeline(dev, &p2);
        r.dev_tok_s = dev_rate(&p0, &p1);
        r.dev_batch_tok_s = dev_rate(&p1, &p2);
        b->last_pipe = p2;
        if (rc != TSR_OK) {
            cli_error("%s", tsr_device_errmsg(dev));
            return -1;
        }
        if (got != a->decode_tokens) {
            cli_error("%s: generated %d token%s, expected %d", a->model, got, cli_s(got),
                      a->decode_tokens);
            return -1;
        }
        if (k < 0) continue; // warm-up: not measured
        b->runs[k] = r;
        if (a->json) {
            print_json_run(b, &r);
            if (cli_flush_stdout()) return -1;
        }
    }
    return 0;
}

/* A split's cards: each card's layers and its share of the busiest card's
 * cycles over all the runs. */
static void print_cards(const tsr_pipeline *p)
{
    uint64_t most = 0;
    for (int c = 0; c < p->cards; c++)
        if (p->busy_cycles[c] > most) most = p->busy_cycles[c];
    printf("cards (%d, %d MHz clocks): layers and busy cycles (share of the busiest)\n",
           p->cards, p->clock_mhz);
    for (int c = 0; c < p->cards; c++)
        printf("  card %d: layers %u-%u, %llu cycles in %llu passes (%.0f%%)\n", c,
               p->first_layer[c], p->first_layer[c] + p->n_layers[c] - 1u,
               (unsigned long long)p->busy_cycles[c], (unsigned long long)p->passes[c],
               most ? 100.0 * (double)p->busy_cycles[c] / (double)most : 0.0);
}

enum { N_METRICS = 9 };

/* (metrics, repeat): decode, prefill, TTFT; with --batch the batch's
 * aggregate and per-sequence rates and its ratio to the single one; on
 * a split, the same on the cards' clocks. */
static void metric_values(const bench *b, double *v)
{
    int n = b->a.repeat;
    for (int k = 0; k < n; k++) {
        const bench_run *r = &b->runs[k];
        v[0 * n + k] = r->decode_tok_s;
        v[1 * n + k] = r->prefill_tok_s;
        v[2 * n + k] = r->ttft_ms;
        v[3 * n + k] = r->batch_tok_s;
        v[4 * n + k] = r->batch_seq_tok_s;
        v[5 * n + k] = r->decode_tok_s > 0 ? r->batch_tok_s / r->decode_tok_s : 0.0;
        v[6 * n + k] = r->dev_tok_s;
        v[7 * n + k] = r->dev_batch_tok_s;
        v[8 * n + k] = r->dev_tok_s > 0 ? r->dev_batch_tok_s / r->dev_tok_s : 0.0;
    }
}

/* The table: median and min..max of each metric over the runs, the load.
 * Returns 0, or -1 after an error. */
static int print_table(const bench *b)
{
    const cli_args *a = &b->a;
    int split = b->last_pipe.cards > 1;
    int order[N_METRICS], nm = 0;   /* the rows shown */
    order[nm++] = 0;
    order[nm++] = 1;
    order[nm++] = 2;
    if (a->batch) order[nm++] = 3, order[nm++] = 4, order[nm++] = 5;
    if (split) order[nm++] = 6;
    if (split && a->batch) order[nm++] = 7, order[nm++] = 8;
    double *v = malloc(N_METRICS * (size_t)a->repeat * sizeof *v);
    if (!v) { cli_error("out of memory"); return -1; }
    metric_values(b, v);
    static const char *const names[N_METRICS] = {
        "decode tokens/s", "prefill tokens/s", "time to first token, ms",
        "batch decode tokens/s", "batch per-sequence tok/s", "batch / single decode",
        "cards' clocks decode tok/s", "cards' clocks batch tok/s", "cards' batch / single"
    };
    printf("model %s  backend %s  threads %d  weights %s", a->model, b->spec, b->threads, b->wname);
    if (b->gs) printf(" (group size %d)", b->gs);
    printf("  KV %s", b->mi.kv);
    printf("\nprompt %d token%s, decode %d token%s, %d run%s after %d warm-up%s\n",
           a->prompt_tokens, cli_s(a->prompt_tokens), a->decode_tokens, cli_s(a->decode_tokens),
           a->repeat, cli_s(a->repeat), a->warmup, cli_s(a->warmup));
    if (a->batch)
        printf("batch: %d sequence%s decoded together in each run (aggregate tokens/s over "
               "the call)\n", a->batch, cli_s(a->batch));
    printf("\n%-26s %12s %25s\n", "metric", "median", "min..max");
    for (int j = 0; j < nm; j++) {
        int m = order[j];
        double med, lo, hi;
        summarize(v + (size_t)m * a->repeat, a->repeat, &med, &lo, &hi);
        char range[64];
        snprintf(range, sizeof range, "%.2f..%.2f", lo, hi);
        printf("%-26s %12.2f %25s\n", names[m], med, range);
    }
    free(v);
    if (split) print_cards(&b->last_pipe);
    printf("%-26s %12.3f   (%llu bytes streamed in %.3f s)\n", "weight stream GB/s",
           b->load_gb_s, (unsigned long long)b->tr.load_h2d, b->stream_s);
    printf("%-26s %12.3f   (open, non-finite check, tokenizer; configure)\n",
           "image preparation, s", b->prep_s);
    printf("%-26s %12.3f   (all of it: the image is built PE by PE as it streams)\n",
           "model load, s", b->load_s);
    printf("%-26s %12.1f\n", "peak RSS MB", peak_rss_mb());
    return cli_flush_stdout();
}

int cmd_bench(int argc, char **argv)
{
    bench b = { .a = { .backend = "emu", .prompt_tokens = 32, .decode_tokens = 256,
                       .repeat = 3, .warmup = 1 } };
    int prc = parse_args(argc, argv, &b.a);
    if (prc) return prc > 0 ? 0 : 2;
    if (bench_spec(&b)) return 2;
    int *prompt = NULL;       // (prompt_tokens,) token ids
    tsr_device *dev = NULL;
    tsr_model *model = NULL;
    int status = bench_load(&b, &dev, &model);
    if (status) goto out;
    status = 1;
    prompt = malloc((size_t)b.a.prompt_tokens * sizeof *prompt);
    b.runs = malloc((size_t)b.a.repeat * sizeof *b.runs);
    if (!prompt || !b.runs) {
        cli_error("out of memory");
        goto out;
    }
    if (bench_runs(&b, dev, model, prompt) || (!b.a.json && print_table(&b))) goto out;
    status = 0;
out:
    free(prompt);
    free(b.runs);
    tsr_model_close(model);
    tsr_device_close(dev);
    return status;
}
