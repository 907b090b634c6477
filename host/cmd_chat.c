/* cmd_chat.c - tessera chat: an interactive loop over one sequence.
 *
 * Each line typed is appended to the same sequence (its KV cache stays on
 * the device) and a reply is generated.  On a terminal, lines are read
 * with libedit (line editing, history of the session); otherwise plain
 * lines from stdin.  Ctrl-C cancels the reply being generated, or the line
 * being typed, not the program; Ctrl-D (end of input) ends the program.
 * /reset, /stats, /help and /quit are commands, not text.
 *
 * A model with a chat template (GGUF tokenizer.chat_template), or
 * --chat-template NAME, makes each line a user message: the conversation
 * is formatted with the template's family (tsr_chat_format) and only its
 * new part is appended (chat_convo.c).  A model without one (the llama2.c
 * checkpoints) continues the typed text as it is, as before. */
#include <errno.h>
#include <histedit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_convo.h"
#include "cli.h"
#include "textout.h"

static const char usage[] =
    "usage: tessera chat -m MODEL [-z TOKENIZER] [-n TOKENS] [-t TEMP] [-s SEED] [options]\n"
    "\n"
    "Read lines (with line editing and history on a terminal); each is appended\n"
    "to one sequence on the device and the model continues it for up to TOKENS\n"
    "tokens.  A reply that reaches the end of the context says so; the next line\n"
    "then starts a new conversation (the sequence is emptied); a line too long\n"
    "for the context on its own is skipped.  Ctrl-C stops the current reply (or\n"
    "drops the line being typed); Ctrl-D quits.  Commands: /reset (a new\n"
    "conversation), /stats (tokens, context and speed so far), /help, /quit.\n"
    "\n"
    "A model with a chat template (GGUF tokenizer.chat_template) gets each line as\n"
    "a user message in its template's format, and replies as the assistant; the\n"
    "families: %s (a template of another family:\n"
    "plain, with a notice).  A model without one (llama2.c checkpoints, GGUF files\n"
    "without the key) continues the typed text as it is.\n"
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
    CLI_PART_HELP
    CLI_PES_HELP
    "      --threads N       emulator worker threads over the PEs (default: the CPUs\n"
    "                        this process may use; tokens do not depend on it)\n"
    CLI_WEIGHTS_HELP
    CLI_CTX_HELP
    "      --chat-template NAME  format the conversation with this family instead\n"
    "                        (also for a model without a template; plain is\n"
    "                        \"User: ...\\nAssistant:\", as tessera serve formats it)\n"
    "  -h, --help            this text\n";

/* The sequence Ctrl-C cancels while a reply is generated; otherwise Ctrl-C
 * only marks the line being typed as dropped.  tsr_seq_cancel() is
 * async-signal-safe (an atomic store and a wake-up). */
static tsr_seq *volatile active;
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    tsr_seq *s = active;
    if (s) tsr_seq_cancel(s);
    else interrupted = 1;
}

typedef struct chat_ctx {
    tsr_model *model;
    int prev;
    int bos, eos;   /* the model's: they end the text, unprinted */
    char  *reply;   /* (cap,) the reply's text so far, NUL-terminated */
    size_t len, cap;
    textout shown;  /* the reply as printed: whole UTF-8 characters */
} chat_ctx;

/* Keep the reply's text, for the conversation's next turn. */
static void keep_reply(chat_ctx *c, const char *p, size_t n)
{
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        while (cap < c->len + n + 1) cap *= 2;
        char *r = realloc(c->reply, cap);
        if (!r) return;   /* the next turn then prefills the reply as text */
        c->reply = r;
        c->cap = cap;
    }
    memcpy(c->reply + c->len, p, n);
    c->len += n;
    c->reply[c->len] = '\0';
}

static int print_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    chat_ctx *c = user;
    size_t n;
    const char *p = tsr_model_token_text(c->model, c->prev, token, &n);
    if (p && n && token != c->bos && token != c->eos) {
        keep_reply(c, p, n);
        const char *q;
        size_t k = textout_push(&c->shown, p, n) == 0 ? textout_take(&c->shown, &q) : 0;
        if (k) fwrite(q, 1, k, stdout);
    }
    fflush(stdout);
    c->prev = token;
    return 0;
}

/* ---------------------------------------------------------------- input --- */

/* Lines from libedit on a terminal, from stdin otherwise. */
typedef struct input {
    EditLine *el;        /* NULL: not a terminal           */
    History  *hist;
    char     *line;      /* (cap,) the line, without '\n'  */
    size_t    cap;
} input;

static const char *prompt(EditLine *el) { (void)el; return "> "; }

static void input_open(input *in)
{
    memset(in, 0, sizeof *in);
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) return;
    /* The prompt and the editing go to stderr; stdout carries replies. */
    in->el = el_init("tessera", stdin, stderr, stderr);
    in->hist = history_init();
    if (!in->el || !in->hist) {
        if (in->el) el_end(in->el);
        if (in->hist) history_end(in->hist);
        in->el = NULL;
        in->hist = NULL;
        return;
    }
    HistEvent ev;
    history(in->hist, &ev, H_SETSIZE, 500);
    el_set(in->el, EL_EDITOR, "emacs");
    el_set(in->el, EL_PROMPT, prompt);
    el_set(in->el, EL_HIST, history, in->hist);
    el_set(in->el, EL_SIGNAL, 1);   /* libedit restores the terminal around signals */
    el_source(in->el, NULL);        /* ~/.editrc, as other libedit programs read it */
}

static void input_close(input *in)
{
    if (in->el) el_end(in->el);
    if (in->hist) history_end(in->hist);
    free(in->line);
}

/* Next line into in->line: 1, or 0 at end of input (Ctrl-D), or -1 when
 * Ctrl-C dropped the line being typed. */
static int input_line(input *in)
{
    const char *got = NULL;
    size_t len = 0;
    interrupted = 0;
    if (in->el) {
        int count = 0;
        got = el_gets(in->el, &count);
        if (interrupted || (!got && count < 0 && errno == EINTR)) return -1;
        if (!got || count <= 0) return 0;
        len = (size_t)count;
    } else {
        fputs("> ", stderr);
        errno = 0;
        ssize_t n = getline(&in->line, &in->cap, stdin);
        if (n < 0) {
            if (errno == EINTR || interrupted) { clearerr(stdin); return -1; }
            return 0;
        }
        len = (size_t)n;
        got = in->line;
    }
    if (got != in->line) {   /* copy out of libedit's buffer */
        char *p = realloc(in->line, len + 1);
        if (!p) return 0;
        memcpy(p, got, len);
        in->line = p;
        in->cap = len + 1;
    }
    in->line[len] = '\0';
    while (len > 0 && (in->line[len - 1] == '\n' || in->line[len - 1] == '\r')) in->line[--len] = '\0';
    if (in->el && len > 0) {
        HistEvent ev;
        history(in->hist, &ev, H_ENTER, in->line);
    }
    return 1;
}

/* ------------------------------------------------------------- sequence --- */

/* Append text (a typed line, or a turn's new text) to seq; when the context
 * is full, empty the sequence (a new conversation) and append fresh there
 * (the line as a conversation's first).  Returns 0 when text is in, 2 when
 * fresh is (a new conversation), 1 when the line was skipped (too long for
 * the context on its own), -1 on a device error (printed). */
static int append_line(tsr_device *dev, tsr_model *m, tsr_seq *seq, const char *text,
                       const char *line, int templated)
{
    int rc = tsr_seq_append_text(seq, text);
    if (rc == TSR_OK) return 0;
    if (rc != TSR_ERR_RANGE) {
        cli_error("%s", tsr_device_errmsg(dev));
        return -1;
    }
    tsr_model_info mi = { 0 };
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
        cli_error("chat: the %d-token context is full: starting a new conversation",
                  mi.seq_len);
        if ((rc = tsr_seq_reset(seq)) == TSR_OK) rc = tsr_seq_append_text(seq, line);
        if (rc == TSR_OK) return 2;
        if (rc != TSR_ERR_RANGE) {
            cli_error("%s", tsr_device_errmsg(dev));
            return -1;
        }
    }
    cli_error("chat: this line is %d tokens (BOS%s included), more than the %d-token context: "
              "skipped", nt, templated ? " and the chat template's text" : "", mi.seq_len);
    return 1;
}

/* A user line in a templated chat: the conversation formatted, and the
 * part the sequence does not hold appended (after it is rewound to what
 * the new text continues).  Returns as append_line; a skipped line ends
 * the conversation (the sequence is emptied). */
static int append_turn(tsr_device *dev, tsr_model *m, tsr_seq *seq, chat_convo *cv,
                       const chat_ctx *cc, const char *line)
{
    chat_convo one = { .family = cv->family, .tmpl = cv->tmpl };
    size_t tl = 0, fl = 0, from;
    char *t = NULL, *fresh = NULL;
    int rc = -1, keep, nt = 0;
    const int *toks = NULL;
    if (convo_add(cv, "user", line) || convo_add(&one, "user", line) ||
        !(t = convo_text(cv, &tl)) || !(fresh = convo_text(&one, &fl))) {
        cli_error("out of memory");
        goto out;
    }
    tsr_seq_tokens(seq, &toks, &nt);
    int stop = nt > cv->mark && (toks[nt - 1] == cc->eos || toks[nt - 1] == cc->bos);
    convo_delta(cv, t, tl, nt, stop, &from, &keep);
    int st = keep == nt ? TSR_OK : keep > 0 ? tsr_seq_truncate(seq, keep) : tsr_seq_reset(seq);
    if (st != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(dev));
        goto out;
    }
    rc = append_line(dev, m, seq, t + from, fresh, 1);
    if (rc == 0) {
        convo_hold(cv, t, tl, tsr_seq_length(seq));
        t = NULL;
    } else if (rc == 2) {   /* a new conversation: this line its first */
        convo_clear(cv);
        if (convo_add(cv, "user", line)) { cli_error("out of memory"); rc = -1; goto out; }
        convo_hold(cv, fresh, fl, tsr_seq_length(seq));
        fresh = NULL;
    } else if (rc == 1) {   /* skipped: what the sequence holds no longer matches */
        convo_clear(cv);
        if (tsr_seq_reset(seq) != TSR_OK) { cli_error("%s", tsr_device_errmsg(dev)); rc = -1; }
    }
out:
    if (rc < 0 && cv->n > 0) convo_drop_last(cv);
    convo_free(&one);
    free(t);
    free(fresh);
    return rc;
}

static void print_stats(tsr_model *m, tsr_seq *seq, int replies)
{
    tsr_model_info mi = { 0 };
    tsr_seq_stats st = { 0 };
    tsr_model_get_info(m, &mi);
    tsr_seq_get_stats(seq, &st);
    int len = tsr_seq_length(seq);
    if (len > mi.seq_len) len = mi.seq_len;   /* the last token sampled, not yet in the cache */
    fprintf(stderr,
            "tessera: %d token%s of the %d-token context in use; %d repl%s so far: %llu "
            "prompt token%s, %llu generated; last reply %.1f tokens/s, first token after %.2f ms\n",
            len, cli_s(len), mi.seq_len, replies, replies == 1 ? "y" : "ies",
            (unsigned long long)st.prefill_tokens, cli_s((long long)st.prefill_tokens),
            (unsigned long long)st.decode_tokens, st.decode_tok_s, st.ttft_ms);
}

/* A slash command: 1 handled, 0 quit, -1 not a command (text), -2 error. */
static int command(const char *line, tsr_device *dev, tsr_model *m, tsr_seq *seq, int *replies,
                   chat_convo *cv)
{
    if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) return 0;
    if (!strcmp(line, "/help")) {
        fputs("tessera: /reset starts a new conversation, /stats shows the context and speed, "
              "/quit (or Ctrl-D) ends; Ctrl-C stops a reply\n", stderr);
        return 1;
    }
    if (!strcmp(line, "/stats")) {
        print_stats(m, seq, *replies);
        return 1;
    }
    if (!strcmp(line, "/reset")) {
        if (tsr_seq_reset(seq) != TSR_OK) {
            cli_error("%s", tsr_device_errmsg(dev));
            return -2;
        }
        *replies = 0;
        convo_clear(cv);
        fputs("tessera: a new conversation\n", stderr);
        return 1;
    }
    if (line[0] == '/' && line[1] && !strpbrk(line, " \t")) {
        /* one word after a slash: a mistyped command, not text */
        fprintf(stderr, "tessera: unknown command %s (/help lists them)\n", line);
        return 1;
    }
    return -1;
}

int cmd_chat(int argc, char **argv)
{
    const char *model = NULL, *tok = NULL, *backend = "emu", *part = NULL;
    const char *xclbin = NULL;   /* xrt: --xclbin FILE */
    int n = 128, f32 = 0, wfmt = 0, pes = 0, threads = 0, seq_len = 0, group = 0;
    const char *kv = NULL;
    const char *family = NULL;   /* --chat-template */
    float temp = 0.8f, top_p = 0.9f;
    uint64_t seed = 42;
    for (int i = 0; i < argc; i++) {
        const char *o = cli_opt(&argc, argv, i), *v;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf(usage, tsr_chat_template_list(), tsr_part_list());
            return 0;
        }
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
        else if (IS("--ctx", "--seq-len"))  { VAL(); if (cli_int(o, v, 1, 1 << 24, &seq_len)) return 2; }
        else if (!strcmp(o, "--weights")) { VAL(); if (cli_weights(o, v, &f32, &wfmt)) return 2; }
        else if (!strcmp(o, "--group-size")) { VAL(); if (cli_int(o, v, 1, 1 << 16, &group)) return 2; }
        else if (!strcmp(o, "--kv"))      { VAL(); if (cli_kv(o, v, &kv)) return 2; }
        else if (!strcmp(o, "--chat-template")) { VAL(); if (cli_chat_template("chat", v, &family)) return 2; }
        else {
            cli_unknown("chat", o);
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
    chat_convo cv = { 0 };
    chat_ctx cc = { 0 };
    input in;
    input_open(&in);
    /* The tokenizer is optional here: GGUF files carry theirs, and the
     * library says when a llama2.c checkpoint needs one. */
    tsr_model_opts mo = { .tokenizer = tok, .weights_f32 = f32, .weights = wfmt, .kv = kv,
                          .group_size = group, .seq_len = seq_len, .n_seqs = 1 };
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
    tsr_model_info mi = { 0 };
    tsr_model_get_info(m, &mi);
    struct sigaction sa = { .sa_handler = on_sigint };   /* no SA_RESTART: reads return */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    cc.model = m;
    cc.prev = mi.bos;
    cc.bos = mi.bos;
    cc.eos = mi.eos;
    /* the model's chat template, or --chat-template's family; none: the
     * typed text as it is */
    const char *tmpl = NULL, *own = tsr_model_chat_template(m, &tmpl);
    cv.family = family ? family : tmpl ? own : NULL;
    cv.tmpl = tmpl;
    tsr_gen_opts go = { .max_tokens = n, .temperature = temp, .top_p = top_p, .seed = seed };
    int replies = 0, done = 0;
    for (;;) {
        int got = input_line(&in);
        if (got < 0) { fputc('\n', stderr); continue; }   /* Ctrl-C: the line is dropped */
        if (got == 0) {                                     /* Ctrl-D: done */
            if (isatty(STDIN_FILENO)) fputc('\n', stderr);   /* the shell's prompt on its own line */
            done = 1;
            break;
        }
        int c = command(in.line, dev, m, seq, &replies, &cv);
        if (c == 0) { done = 1; break; }
        if (c == -2) break;
        if (c == 1) continue;
        int added = cv.family ? append_turn(dev, m, seq, &cv, &cc, in.line)
                              : append_line(dev, m, seq, in.line, in.line, 0);
        if (added < 0) break;
        if (added == 1) continue;                   /* skipped: too long */
        cc.len = 0;                                 /* the reply starts */
        /* The typed text is in the history; the reply continues it. */
        const int *t;
        int nt;
        tsr_seq_tokens(seq, &t, &nt);
        cc.prev = t[nt - 1];
        active = seq;
        textout_init(&cc.shown, NULL, 0);
        rc = tsr_seq_generate(seq, &go, print_token, &cc, NULL);
        active = NULL;
        const char *rest;
        size_t n_rest = textout_finish(&cc.shown, &rest);
        if (n_rest) fwrite(rest, 1, n_rest, stdout);
        textout_free(&cc.shown);
        fputc('\n', stdout);
        if (rc != TSR_OK) {
            cli_error("%s", tsr_device_errmsg(dev));
            break;
        }
        replies++;
        if (cv.family && convo_add(&cv, "assistant", cc.reply ? cc.reply : "")) {
            cli_error("out of memory");
            break;
        }
        if (tsr_seq_was_cancelled(seq)) fputs("[cancelled]\n", stderr);
        else if (tsr_seq_length(seq) >= mi.seq_len + 1)   /* cut by the context */
            fprintf(stderr, "[the reply reached the end of the %d-token context: the next line "
                    "starts a new conversation]\n", mi.seq_len);
        if (cli_flush_stdout()) break;
    }
    status = done ? 0 : 1;
out:
    input_close(&in);
    convo_free(&cv);
    free(cc.reply);
    tsr_seq_close(seq);
    tsr_model_close(m);
    tsr_device_close(dev);
    return status;
}
