/* cli.h - the tessera program's option table and shared helpers
 * (host/cli.c).  The commands (host/cmd_*.c, declared in commands.h) use
 * them; main.c only dispatches.  host/ talks to the library only through
 * the public header tessera.h.  Single-threaded: the commands call these
 * from main's thread before any other starts. */
#ifndef TSR_CLI_H
#define TSR_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "defaults.h"
#include "tessera.h"

/* ------------------------------------------------------ the option table --- */

/* The commands, as bits: a row of the option table says which take it. */
enum {
    CLI_RUN = 1 << 0, CLI_CHAT = 1 << 1, CLI_BENCH = 1 << 2, CLI_SERVE = 1 << 3,
    CLI_PLAN = 1 << 4, CLI_INFO = 1 << 5, CLI_SYNTH = 1 << 6
};

/* Every option value of every command: cli_parse writes the fields of the
 * options given and leaves the rest as the command set them (its
 * defaults).  Strings point into argv (not owned). */
typedef struct cli_args {
    /* the model and the device */
    const char *model, *tokenizer, *backend, *part, *xclbin, *stages, *kv;
    int pes, threads, cards, group_size, seq_len;
    int weights_f32, weights;        /* --weights: f32 flag, TSR_WEIGHTS_*   */
    /* generation (run, chat) */
    const char *prompt, *prompt_file, *chat_template;
    int steps;                       /* run -n: positions, prompt included   */
    int n_predict;                   /* run --n-predict: generated tokens (0: none given) */
    int tokens;                      /* chat -n: tokens per reply            */
    float temperature, top_p;
    uint64_t seed;                   /* 0: random (cli_seed)                 */
    const char *stats;               /* --stats: "" (the table) or "all"; NULL: none */
    /* bench */
    int prompt_tokens, decode_tokens, repeat, warmup, batch, stage_batch, json;
    /* serve */
    const char *host, *api_key, *alias;
    int port, slots, queue, max_tokens, max_body, prefill_chunk, quantum, verbose;
    /* plan */
    const char *shape, *profile;
    int cols, kv_split, clock_mhz, pos, max_util;
    /* synth */
    const char *out, *arch, *vocab;
    int q8, q4, legacy;
    uint64_t given;                  /* bit k: the table's row k was given   */
} cli_args;

/* A command as its help and errors name it: name ("run"), its bit
 * (CLI_RUN), the help's text before the options (a printf format whose %s,
 * if any, gets fill()) and after them (NULL: none). */
typedef struct cli_command {
    const char *name;
    unsigned bit;
    const char *intro;
    const char *(*fill)(void);
    const char *outro;
} cli_command;

/* Parse a command's argv (after the command's name) into *a: each option
 * of the table that the command takes, under its long name, its short
 * name or an alias (llama.cpp's names where the meaning is the same), as
 * "--name VALUE" or "--name=VALUE".  Returns 0, 1 after printing the help
 * (-h, --help; the command exits 0), or -1 after printing one error line
 * (an unknown option with the nearest name: "did you mean"; a bad value;
 * the command exits 2).  argv must have room for 2 argc entries (main
 * gives every command that). */
int cli_parse(const cli_command *c, int argc, char **argv, cli_args *a);

/* Print the help of command c to stdout: intro, the table's rows it takes,
 * outro. */
void cli_help(const cli_command *c);

/* The word of words[0..n) nearest arg when it is near enough to be a typo
 * (at most 2 edits, fewer than half the word: "runn" for "run"), else
 * NULL.  Returns one of words; used for the command names. */
const char *cli_nearest_word(const char *arg, const char *const *words, size_t n);

/* Whether option `name` (its long name, without "--") was given. */
int cli_given(const cli_args *a, const char *name);

/* The sampler's defaults for run and chat: the one temperature of
 * defaults.h (the server's too), and seed 0 meaning a random seed. */
#define CLI_DEFAULT_TEMPERATURE TSR_DEFAULT_TEMPERATURE
#define CLI_DEFAULT_TOP_P 0.9f

/* A random sampler seed (time and pid; never 0), under 2^53 so that JSON
 * numbers carry it exactly. */
uint64_t cli_random_seed(void);

/* ------------------------------------------------------------- helpers --- */

/* Flush stdout; on a write error (a full disk, a closed pipe) print it and
 * return -1. */
int cli_flush_stdout(void);

/* Print "tessera: <msg>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse an int / float / u64 option value; on a bad value print an error
 * naming the option and return -1. */
int cli_int(const char *opt, const char *val, int lo, int hi, int *out);
int cli_float(const char *opt, const char *val, float lo, float hi, float *out);
int cli_u64(const char *opt, const char *val, uint64_t *out);

/* The library's log hook for the commands: warnings and errors to stderr
 * as "tessera: <msg>" lines (set with tsr_device_set_log). */
void cli_log_to_stderr(int level, const char *msg, void *user);

/* Write the device spec "BACKEND[:key=val,...]" into buf (cap bytes): the
 * --backend value refined by part=, pes=, threads=, xclbin=, then cards=N
 * (cards > 1) and stages=A-B/C-D/... (--stages' "A-B,C-D,..."; the spec's
 * keys are ','-separated, so its ranges take '/').  Returns 0, or -1 after
 * printing an error naming cmd when it does not fit. */
int cli_device_spec(const char *cmd, char *buf, size_t cap, const cli_args *a);

/* The tsr_model_opts of a, for n_seqs sequence slots (progress unset). */
tsr_model_opts cli_model_opts(const cli_args *a, int n_seqs);

/* Open the device of spec, its log hook cli_log_to_stderr.  Returns 0,
 * or the exit status after printing the library's error: 2 for a bad
 * spec, 1 otherwise (*dev NULL or to be closed by the caller). */
int cli_open_device(const char *spec, tsr_device **dev);

/* Open the device of spec (its log hook: cli_log_to_stderr), then load
 * a->model on it with *mo.  Returns 0, or the exit status after printing
 * the library's error: 2 for a bad spec, 1 otherwise.  *dev and *m are set
 * as far as they opened (NULL otherwise); the caller closes them. */
int cli_open_model(const cli_args *a, const char *spec, const tsr_model_opts *mo,
                   tsr_device **dev, tsr_model **m);

/* Read a whole prompt from path ("-": stdin) into *out (NUL-terminated,
 * malloc'd; one trailing newline dropped).  Returns 0, or -1 after
 * printing an error naming cmd. */
int cli_read_prompt(const char *cmd, const char *path, char **out);

/* --chat-template NAME: *out gets the library's name for the family
 * (tsr_chat_template_find).  Returns 0, or -1 after printing one line
 * naming cmd and listing the families. */
int cli_chat_template(const char *cmd, const char *name, const char **out);

/* "s" unless n is 1: printf("%d token%s", n, cli_s(n)). */
const char *cli_s(long long n);

#endif
