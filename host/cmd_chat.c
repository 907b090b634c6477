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

static const cli_command chat_cmd = {
    "chat", CLI_CHAT,
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
    "without the key) continues the typed text as it is.  --chat-template NAME\n"
    "formats the conversation with that family instead (also for a model without\n"
    "a template).\n", tsr_chat_template_list, NULL
};

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

/* Print a token's text (the library's piece: textout_token's rule, as
 * tessera run), keeping it for the conversation's next turn. */
static int print_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)s;
    (void)token;
    chat_ctx *c = user;
    if (len) keep_reply(c, text, len);
    textout_print(&c->shown, stdout, text, len);
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

/* One chat: the device, model and sequence, the conversation so far, the
 * reply being printed and the sampler's settings. */
typedef struct chat {
    tsr_device *dev;
    tsr_model *m;
    tsr_seq *seq;
    tsr_model_info mi;
    chat_convo cv;
    chat_ctx cc;
    tsr_gen_opts go;
    int replies;
} chat;

/* Generate and print the reply to what the sequence holds.  Returns 0, or
 * -1 after printing an error. */
static int reply(chat *ch)
{
    chat_ctx *cc = &ch->cc;
    cc->len = 0;   /* the reply starts */
    active = ch->seq;
    textout_init(&cc->shown, NULL, 0);
    int rc = tsr_seq_generate(ch->seq, &ch->go, print_token, cc, NULL);
    active = NULL;
    textout_print_end(&cc->shown, stdout);
    textout_free(&cc->shown);
    fputc('\n', stdout);
    if (rc != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(ch->dev));
        return -1;
    }
    ch->replies++;
    if (ch->cv.family && convo_add(&ch->cv, "assistant", cc->reply ? cc->reply : "")) {
        cli_error("out of memory");
        return -1;
    }
    if (tsr_seq_was_cancelled(ch->seq)) fputs("[cancelled]\n", stderr);
    else if (tsr_seq_length(ch->seq) >= ch->mi.seq_len + 1) {   /* cut by the context */
        fprintf(stderr, "[the reply reached the end of the %d-token context: the next line "
                "starts a new conversation]\n", ch->mi.seq_len);
        /* ... now, so the next line does not announce it a second time */
        if (tsr_seq_reset(ch->seq) != TSR_OK) {
            cli_error("%s", tsr_device_errmsg(ch->dev));
            return -1;
        }
        convo_clear(&ch->cv);
    }
    return cli_flush_stdout();
}

/* Read lines until Ctrl-D or /quit: each a command, or a turn and its
 * reply.  Returns the exit status. */
static int converse(chat *ch, input *in)
{
    for (;;) {
        int got = input_line(in);
        if (got < 0) { fputc('\n', stderr); continue; }   /* Ctrl-C: the line is dropped */
        if (got == 0) {                                     /* Ctrl-D: done */
            if (isatty(STDIN_FILENO)) fputc('\n', stderr);   /* the shell's prompt on its own line */
            return 0;
        }
        int c = command(in->line, ch->dev, ch->m, ch->seq, &ch->replies, &ch->cv);
        if (c == 0) return 0;
        if (c == -2) return 1;
        if (c == 1) continue;
        int added = ch->cv.family ? append_turn(ch->dev, ch->m, ch->seq, &ch->cv, &ch->cc, in->line)
                                  : append_line(ch->dev, ch->m, ch->seq, in->line, in->line, 0);
        if (added < 0) return 1;
        if (added == 1) continue;                   /* skipped: too long */
        if (reply(ch)) return 1;
    }
}

/* Parse the options, the template family and the spec; one seed for the
 * session (random unless -s), said on stderr when the replies are
 * sampled, so that -s repeats them.  Returns 0, 1 after the help, -1 after
 * an error. */
static int setup(int argc, char **argv, cli_args *a, const char **family, char *spec,
                 size_t cap)
{
    int rc = cli_parse(&chat_cmd, argc, argv, a);
    if (rc) return rc;
    if (a->chat_template && cli_chat_template("chat", a->chat_template, family)) return -1;
    if (!a->model) {
        cli_error("chat: -m MODEL is required (see tessera chat --help)");
        return -1;
    }
    if (cli_device_spec("chat", spec, cap, a)) return -1;
    if (!a->seed) {
        a->seed = cli_random_seed();
        if (a->temperature > 0.0f)
            fprintf(stderr, "tessera: seed %llu (random; -s %llu repeats this session)\n",
                    (unsigned long long)a->seed, (unsigned long long)a->seed);
    }
    return 0;
}

int cmd_chat(int argc, char **argv)
{
    cli_args a = { .backend = "emu", .tokens = 128, .temperature = CLI_DEFAULT_TEMPERATURE,
                   .top_p = CLI_DEFAULT_TOP_P };
    const char *family = NULL;   /* --chat-template */
    char spec[600];   /* --backend refined by part=, pes=, threads=, xclbin= */
    int prc = setup(argc, argv, &a, &family, spec, sizeof spec);
    if (prc) return prc > 0 ? 0 : 2;

    chat ch = { .go = { .max_tokens = a.tokens, .temperature = a.temperature,
                        .top_p = a.top_p, .seed = a.seed } };
    input in;
    input_open(&in);
    /* The tokenizer is optional here: GGUF files carry theirs, and the
     * library says when a llama2.c checkpoint needs one. */
    tsr_model_opts mo = cli_model_opts(&a, 1);
    int status = cli_open_model(&a, spec, &mo, &ch.dev, &ch.m);
    if (status) goto out;
    status = 1;
    if (tsr_seq_open(ch.m, &ch.seq) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(ch.dev));
        goto out;
    }
    tsr_model_get_info(ch.m, &ch.mi);
    struct sigaction sa = { .sa_handler = on_sigint };   /* no SA_RESTART: reads return */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    ch.cc = (chat_ctx){ .bos = ch.mi.bos, .eos = ch.mi.eos };
    /* the model's chat template, or --chat-template's family; none: the
     * typed text as it is */
    const char *tmpl = NULL, *own = tsr_model_chat_template(ch.m, &tmpl);
    ch.cv.family = family ? family : tmpl ? own : NULL;
    ch.cv.tmpl = tmpl;
    status = converse(&ch, &in);
out:
    input_close(&in);
    convo_free(&ch.cv);
    free(ch.cc.reply);
    tsr_seq_close(ch.seq);
    tsr_model_close(ch.m);
    tsr_device_close(ch.dev);
    return status;
}
