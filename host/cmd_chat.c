/* cmd_chat.c - tessera chat: an interactive loop over one sequence.
 *
 * Each line typed is appended to the same sequence (its KV cache stays on
 * the device) and a reply is generated.  Ctrl-C cancels the reply being
 * generated, not the program; Ctrl-D (end of input) ends the program. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: tessera chat -m MODEL [-z TOKENIZER] [-n TOKENS] [-t TEMP] [-s SEED] [options]\n"
    "\n"
    "Read lines from stdin; each is appended to one sequence on the device and\n"
    "the model continues it for up to TOKENS tokens.  When the context is full\n"
    "a new conversation starts (the sequence is emptied); a line too long for\n"
    "the context on its own is skipped.  Ctrl-C stops the current reply;\n"
    "Ctrl-D quits.\n"
    "\n"
    "  -m, --model FILE      llama2.c checkpoint (legacy, v1 fp32, v2 Q8_0) or GGUF\n"
    "  -z, --tokenizer FILE  llama2.c tokenizer.bin matching the model's vocab\n"
    "                        (GGUF files carry their own; required for llama2.c)\n"
    "  -n, --tokens N        tokens per reply (default 128)\n"
    "  -t, --temperature T   0 = greedy (default 0.8)\n"
    "      --top-p P         nucleus threshold in (0,1] (default 0.9)\n"
    "  -s, --seed S          sampler seed (default 42)\n"
    "      --backend SPEC    device spec (default emu)\n"
    "      --xclbin FILE     xrt: the xclbin to load (appends xclbin=FILE to the spec)\n"
    "      --part NAME       emulate a card's on-chip capacity: u55c, u280, u250, u200, vu9p\n"
    CLI_PES_HELP
    "      --threads N       emulator worker threads over the PEs (default: the CPUs\n"
    "                        this process may use; tokens do not depend on it)\n"
    "      --weights q8|f32  on-chip weight format (default q8)\n"
    "      --seq-len N, --ctx N  context length on the device (default: the model's)\n"
    "  -h, --help            this text\n";

static tsr_seq *volatile active;   /* the sequence Ctrl-C cancels */

static void on_sigint(int sig)
{
    (void)sig;
    tsr_seq *s = active;
    if (s) tsr_seq_cancel(s);       /* writes one volatile int: signal-safe */
}

typedef struct chat_ctx {
    tsr_model *model;
    int prev;
} chat_ctx;

static int print_token(tsr_seq *s, int token, void *user)
{
    (void)s;
    chat_ctx *c = user;
    size_t n;
    const char *p = tsr_model_token_text(c->model, c->prev, token, &n);
    if (p && token != 1 && token != 2) fwrite(p, 1, n, stdout);
    fflush(stdout);
    c->prev = token;
    return 0;
}

/* Append line to seq; when the context is full, empty the sequence (a new
 * conversation) and append it there.  Returns 0 when the line is in, 1 when
 * it was skipped (too long for the context on its own), -1 on a device
 * error (printed). */
static int append_line(tsr_device *dev, tsr_model *m, tsr_seq *seq, const char *line)
{
    int rc = tsr_seq_append_text(seq, line);
    if (rc == TSR_OK) return 0;
    if (rc != TSR_ERR_RANGE) {
        cli_error("%s", tsr_device_errmsg(dev));
        return -1;
    }
    tsr_model_info mi;
    tsr_model_get_info(m, &mi);
    /* The line's length as the first line of a conversation (BOS first). */
    size_t cap = strlen(line) + 3;
    int *t = malloc(cap * sizeof *t), nt = 0;   // (cap,) token ids
    if (!t || tsr_model_tokenize(m, line, 1, t, (int)cap, &nt) != TSR_OK) {
        free(t);
        cli_error("%s", t ? tsr_device_errmsg(dev) : "out of memory");
        return -1;
    }
    free(t);
    if (nt <= mi.seq_len && tsr_seq_length(seq) > 0) {
        cli_error("chat: the context of %d tokens is full: starting a new conversation",
                  mi.seq_len);
        if ((rc = tsr_seq_reset(seq)) == TSR_OK) rc = tsr_seq_append_text(seq, line);
        if (rc == TSR_OK) return 0;
        if (rc != TSR_ERR_RANGE) {
            cli_error("%s", tsr_device_errmsg(dev));
            return -1;
        }
    }
    cli_error("chat: this line is %d tokens (BOS included), more than the context of %d "
              "tokens: skipped", nt, mi.seq_len);
    return 1;
}

int cmd_chat(int argc, char **argv)
{
    const char *model = NULL, *tok = NULL, *backend = "emu", *part = NULL;
    const char *xclbin = NULL;   /* xrt: --xclbin FILE */
    int n = 128, f32 = 0, pes = 0, threads = 0, seq_len = 0;
    float temp = 0.8f, top_p = 0.9f;
    uint64_t seed = 42;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) { fputs(usage, stdout); return 0; }
#define IS(s, l) (!strcmp(o, s) || !strcmp(o, l))
#define VAL() if (!(v = cli_value(argc, argv, &i))) return 2
        if (IS("-m", "--model"))            { VAL(); model = v; }
        else if (IS("-z", "--tokenizer"))   { VAL(); tok = v; }
        else if (IS("-n", "--tokens"))      { VAL(); if (cli_int(o, v, 1, 1 << 20, &n)) return 2; }
        else if (IS("-t", "--temperature")) { VAL(); if (cli_float(o, v, 0.0f, 100.0f, &temp)) return 2; }
        else if (IS("-s", "--seed"))        { VAL(); if (cli_u64(o, v, &seed)) return 2; }
        else if (!strcmp(o, "--top-p"))     { VAL(); if (cli_float(o, v, 1e-9f, 1.0f, &top_p)) return 2; }
        else if (!strcmp(o, "--backend"))   { VAL(); backend = v; }
        else if (!strcmp(o, "--xclbin"))    { VAL(); xclbin = v; }
        else if (!strcmp(o, "--part"))      { VAL(); part = v; }
        else if (!strcmp(o, "--pes"))       { VAL(); if (cli_int(o, v, 1, 1 << 16, &pes)) return 2; }
        else if (!strcmp(o, "--threads"))   { VAL(); if (cli_int(o, v, 1, 1024, &threads)) return 2; }
        else if (IS("--seq-len", "--ctx"))  { VAL(); if (cli_int(o, v, 1, 1 << 24, &seq_len)) return 2; }
        else if (!strcmp(o, "--weights")) { VAL(); if (cli_weights(o, v, &f32)) return 2; }
        else {
            cli_error("chat: unknown option '%s' (see tessera chat --help)", o);
            return 2;
        }
#undef IS
#undef VAL
    }
    if (!model) {
        cli_error("chat: -m MODEL is required (see tessera chat --help)");
        return 2;
    }
    char spec[600];   /* --backend refined by part=, pes=, threads=, xclbin= */
    if (cli_device_spec("chat", spec, sizeof spec, backend, part, pes, threads, xclbin))
        return 2;

    int status = 1, rc;
    tsr_device *dev = NULL;
    tsr_model *m = NULL;
    tsr_seq *seq = NULL;
    char *line = NULL;
    size_t cap = 0;
    /* The tokenizer is optional here: GGUF files carry theirs, and the
     * library says when a llama2.c checkpoint needs one. */
    tsr_model_opts mo = { .tokenizer = tok, .weights_f32 = f32, .seq_len = seq_len, .n_seqs = 1 };
    if ((rc = tsr_device_open(spec, &dev)) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        status = rc == TSR_ERR_ARG ? 2 : 1;
        goto out;
    }
    tsr_device_set_log(dev, cli_log_to_stderr, NULL);
    if (tsr_model_load(dev, model, &mo, &m) != TSR_OK ||
        tsr_seq_open(m, &seq) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        goto out;
    }
    struct sigaction sa = { .sa_handler = on_sigint };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    chat_ctx cc = { .model = m, .prev = 1 };
    tsr_gen_opts go = { .max_tokens = n, .temperature = temp, .top_p = top_p, .seed = seed };
    for (;;) {
        fputs("> ", stderr);
        errno = 0;
        ssize_t len = getline(&line, &cap, stdin);
        if (len < 0) {
            if (errno == EINTR) { clearerr(stdin); fputc('\n', stderr); continue; }
            break;                                  /* Ctrl-D: done */
        }
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        int added = append_line(dev, m, seq, line);
        if (added < 0) break;
        if (added > 0) continue;                    /* skipped: too long */
        /* The typed text is in the history; the reply continues it. */
        const int *t;
        int nt;
        tsr_seq_tokens(seq, &t, &nt);
        cc.prev = t[nt - 1];
        active = seq;
        rc = tsr_seq_generate(seq, &go, print_token, &cc, NULL);
        active = NULL;
        fputc('\n', stdout);
        if (rc != TSR_OK) {
            cli_error("%s", tsr_device_errmsg(dev));
            break;
        }
        if (tsr_seq_was_cancelled(seq)) fputs("[cancelled]\n", stderr);
        if (cli_flush_stdout()) break;
    }
    status = feof(stdin) ? 0 : 1;
out:
    free(line);
    tsr_seq_close(seq);
    tsr_model_close(m);
    tsr_device_close(dev);
    return status;
}
