/* ref.c - the driver API doing, in process, what a test or benchmark asks
 * of tessera serve: the reference for the server's tokens and timings.
 *
 *   serve_ref MODEL TOKENIZER [--ctx N] [--threads N] STEP...
 *     a:TEXT   append TEXT (BOS first when the sequence is empty)
 *     g:N      generate up to N tokens, greedy
 *     t:N:TEXT a turn: append TEXT, then generate up to N (one step, so that
 *              its time to first token has nothing else in it)
 *     r        empty the sequence
 * With no STEP on the command line, steps are read from stdin, one a line,
 * each answered as soon as it is done (a benchmark interleaves them with
 * its other measurements).
 *
 * One JSON line per step on stdout, times in ms since the program started:
 *   {"step":"a","tokens":[...],"h2d":B,"t0":T,"t1":T}
 *   {"step":"g","tokens":[...],"times":[T,...],"t0":T,"t1":T}
 * h2d is the host->device bytes of the append (tsr_seq_get_stats). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessera.h>

static double t_start;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec - t_start;
}

typedef struct gen_log {
    int    *tokens;   /* (cap,) */
    double *times;    /* (cap,) */
    int     n, cap;
} gen_log;

static int on_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    gen_log *g = user;
    if (g->n < g->cap) {
        g->tokens[g->n] = token;
        g->times[g->n] = now_ms();
        g->n++;
    }
    return 0;
}

static void print_ints(const int *v, int n)
{
    printf("[");
    for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", v[i]);
    printf("]");
}

int main(int argc, char **argv)
{
    t_start = 0;
    t_start = now_ms();
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL TOKENIZER [--ctx N] [--threads N] STEP...\n", argv[0]);
        return 2;
    }
    int first = 3, ctx = 0;
    char spec[64] = "emu";
    while (first + 1 < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "--ctx")) ctx = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--threads"))
            snprintf(spec, sizeof spec, "emu:threads=%d", atoi(argv[first + 1]));
        else break;
        first += 2;
    }
    tsr_device *dev = NULL;
    tsr_model *m = NULL;
    tsr_seq *s = NULL;
    tsr_model_opts mo = { .tokenizer = argv[2], .seq_len = ctx, .n_seqs = 1 };
    int rc;
    if ((rc = tsr_device_open(spec, &dev)) != TSR_OK ||
        (rc = tsr_model_load(dev, argv[1], &mo, &m)) != TSR_OK ||
        (rc = tsr_seq_open(m, &s)) != TSR_OK) {
        fprintf(stderr, "serve_ref: %s: %s\n", tsr_strerror(rc), dev ? tsr_device_errmsg(dev) : "");
        return 1;
    }
    char line[4096];
    int from_stdin = first >= argc;
    for (int i = first; rc == TSR_OK; i++) {
        const char *step;
        if (!from_stdin) {
            if (i >= argc) break;
            step = argv[i];
        } else {
            if (!fgets(line, sizeof line, stdin)) break;
            line[strcspn(line, "\n")] = '\0';
            step = line;
        }
        double t0 = now_ms();
        if (!strncmp(step, "a:", 2)) {
            tsr_seq_stats a = { 0 }, b = { 0 };
            int len0 = tsr_seq_length(s);
            tsr_seq_get_stats(s, &a);
            rc = tsr_seq_append_text(s, step + 2);
            tsr_seq_get_stats(s, &b);
            double t1 = now_ms();
            const int *h;
            int n;
            tsr_seq_tokens(s, &h, &n);
            printf("{\"step\":\"a\",\"tokens\":");
            print_ints(h + len0, n - len0);
            printf(",\"h2d\":%llu,\"t0\":%.4f,\"t1\":%.4f}\n",
                   (unsigned long long)(b.prefill_h2d - a.prefill_h2d), t0, t1);
        } else if (!strncmp(step, "g:", 2) || !strncmp(step, "t:", 2)) {
            int want = atoi(step + 2);
            const char *text = step[0] == 't' ? strchr(step + 2, ':') : NULL;
            if (step[0] == 't' && (!text || (rc = tsr_seq_append_text(s, text + 1)) != TSR_OK)) {
                fprintf(stderr, "serve_ref: bad turn '%s'\n", step);
                return 2;
            }
            gen_log g = { .cap = want > 0 ? want : 1 };
            g.tokens = malloc((size_t)g.cap * sizeof *g.tokens);
            g.times = malloc((size_t)g.cap * sizeof *g.times);
            if (!g.tokens || !g.times) return 1;
            tsr_gen_opts go = { .max_tokens = want };
            rc = tsr_seq_generate(s, &go, on_token, &g, NULL);
            double t1 = now_ms();
            printf("{\"step\":\"%c\",\"tokens\":", step[0]);
            print_ints(g.tokens, g.n);
            printf(",\"times\":[");
            for (int k = 0; k < g.n; k++) printf(k ? ",%.4f" : "%.4f", g.times[k]);
            printf("],\"t0\":%.4f,\"t1\":%.4f}\n", t0, t1);
            free(g.tokens);
            free(g.times);
        } else if (!strcmp(step, "r")) {
            rc = tsr_seq_reset(s);
            printf("{\"step\":\"r\"}\n");
        } else {
            fprintf(stderr, "serve_ref: unknown step '%s'\n", step);
            return 2;
        }
        fflush(stdout);
    }
    if (rc != TSR_OK) fprintf(stderr, "serve_ref: %s: %s\n", tsr_strerror(rc), tsr_device_errmsg(dev));
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
    return rc == TSR_OK ? 0 : 1;
}
