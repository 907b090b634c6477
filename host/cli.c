/* cli.c - the tessera program's option table, its parser and help, and
 * the helpers the commands share (see cli.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ------------------------------------------------------ the option table --- */

typedef enum kind {
    K_FLAG,      /* no value: the int field is set to 1                         */
    K_STR,       /* a string                                                    */
    K_INT,       /* an int in lo..hi                                            */
    K_FLOAT,     /* a float in lo..hi                                           */
    K_U64,       /* a non-negative integer                                      */
    K_WEIGHTS,   /* file|q8|q4|f32 into weights_f32 and weights                 */
    K_KV,        /* f32|f16|int8                                                */
    K_STATS      /* no value, or "=all": the string "" or "all"                 */
} kind;

/* One option.  names: "-s|--seed|--alias...": the short name (if any), the
 * long name the help shows, then aliases (llama.cpp's where the meaning is
 * the same).  help: lines joined by '\n'; a %s in it gets fill(). */
typedef struct row {
    const char *names, *arg;
    kind k;
    size_t off;
    double lo, hi;
    unsigned cmds;
    const char *help;
    const char *(*fill)(void);
} row;

#define F(field) offsetof(cli_args, field)
#define DEV (CLI_RUN | CLI_CHAT | CLI_BENCH | CLI_SERVE)
#define GEN (CLI_RUN | CLI_CHAT)

static const row rows[] = {
    /* ---------------------------------------------- model and tokenizer --- */
    { "-m|--model", "FILE", K_STR, F(model), 0, 0, DEV | CLI_PLAN | CLI_INFO,
      "llama2.c checkpoint (legacy, v1 fp32, v2 Q8_0) or GGUF\n"
      "(llama or qwen2 architecture; F32, F16, Q8_0, Q4_0 tensors)", NULL },
    { "-z|--tokenizer", "FILE", K_STR, F(tokenizer), 0, 0, DEV | CLI_INFO,
      "llama2.c tokenizer.bin matching the model's vocab\n"
      "(GGUF files carry their own; required for llama2.c)", NULL },
    { "--shape", "SHAPE", K_STR, F(shape), 0, 0, CLI_PLAN,
      "plan a shape instead of a file: stories15M, stories42M,\n"
      "stories110M, DIMxLAYERS[:hidden=H,...] (as tessera synth)", NULL },
    /* ------------------------------------------------- the prompt (run) --- */
    { "-p|--prompt", "TEXT", K_STR, F(prompt), 0, 0, CLI_RUN,
      "prompt (default: empty, i.e. BOS only: a model whose vocabulary\n"
      "adds no BOS, as Qwen2's, needs one); - reads it from stdin", NULL },
    { "-f|--file", "FILE", K_STR, F(prompt_file), 0, 0, CLI_RUN,
      "read the prompt from FILE (- for stdin); one trailing\n"
      "newline is dropped", NULL },
    /* ----------------------------------------------------------- length --- */
    { "-n|--steps", "N", K_INT, F(steps), 0, 1 << 30, CLI_RUN,
      "positions to run, the prompt's tokens (BOS first)\n"
      "included, as llama2.c's run.c -n (llama.cpp's -n is --n-predict\n"
      "here).  Generation stops earlier at the model's BOS or EOS\n"
      "(default 256; 0 = the whole context; clamped to the context\n"
      "with a warning)", NULL },
    { "--n-predict|--predict", "N", K_INT, F(n_predict), 1, 1 << 30, CLI_RUN,
      "tokens to generate after the prompt, as llama.cpp's -n\n"
      "(instead of -n; clamped to what the context leaves)", NULL },
    { "-n|--tokens|--n-predict|--predict", "N", K_INT, F(tokens), 1, 1 << 20, CLI_CHAT,
      "tokens per reply (default 128)", NULL },
    /* ---------------------------------------------------------- sampler --- */
    { "-t|--temperature|--temp", "T", K_FLOAT, F(temperature), 0, 100, GEN,
      "0 = greedy (default 0.8, as llama.cpp)", NULL },
    { "--top-p", "P", K_FLOAT, F(top_p), 1e-9, 1, GEN,
      "nucleus sampling threshold in (0,1] (default 0.9; 1 = off)", NULL },
    { "-s|--seed", "S", K_U64, F(seed), 0, 0, GEN,
      "sampler seed (default or 0: random, printed on stderr;\n"
      "-s with it repeats the text)", NULL },
    /* ----------------------------------------------------------- device --- */
    { "--backend|--device", "SPEC", K_STR, F(backend), 0, 0, DEV,
      "device: emu (default), emu:part=u55c,pes=16, or xrt:0 (Alveo card 0)", NULL },
    { "--xclbin", "FILE", K_STR, F(xclbin), 0, 0, DEV,
      "xrt: the xclbin to load (default: the one in bitstreams/ for the card)", NULL },
    { "--cards", "N", K_INT, F(cards), 1, TSR_MAX_CARDS, CLI_RUN | CLI_BENCH | CLI_SERVE,
      "split the model's layers over N emulated devices (2..16; 1:\n"
      "one device, no split) in pipeline stages, as `tessera plan\n"
      "--cards N --profile generic` proposes (the same tokens); under\n"
      "mpirun -np N, one a rank", NULL },
    { "--stages", "A-B,...", K_STR, F(stages), 0, 0, CLI_RUN | CLI_BENCH | CLI_SERVE,
      "the split by hand: two or more contiguous layer ranges from 0,\n"
      "one a device", NULL },
    { "--stage-batch", "N", K_INT, F(stage_batch), 1, 8, CLI_BENCH,
      "a split's stages (--cards or --stages) take up to N waiting\n"
      "sequences in one pass over its weights (1..8; with --batch B,\n"
      "at most B; default 1: one sequence a pass, stage k on one while\n"
      "stage k+1 runs the one before, what cards gain from; more: fewer\n"
      "passes over the weights, what the emulator's host gains from;\n"
      "the spec's batch=N)", NULL },
    { "--part", "NAME", K_STR, F(part), 0, 0, DEV | CLI_PLAN,
      "emulate (plan: plan for) the on-chip capacity of a part, one of\n"
      "%s\n"
      "(parts whose block counts hw/parts.def lacks are refused)", tsr_part_list },
    { "--pes", "N", K_INT, F(pes), 1, 1 << 16, DEV,
      "processing elements in the mesh (default 16; the\n"
      "emulator's kernel profile caps it: 1..64 for the\n"
      "generic profile, checked when the device opens)", NULL },
    { "--pes", "N", K_INT, F(pes), 1, 4096, CLI_PLAN,
      "PEs per card, 1..4096 (default: the power of two up to 256\n"
      "with the fastest projection that fits; 16 if none fits)", NULL },
    { "--threads", "N", K_INT, F(threads), 1, 1024, DEV,
      "emulator worker threads over the PEs (default: the CPUs\n"
      "this process may use; tokens do not depend on it; -t is\n"
      "the temperature, as in llama2.c)", NULL },
    { "--weights", "W", K_WEIGHTS, 0, 0, 0, DEV | CLI_PLAN,
      "on-chip weights: file (default: the file's own, Q8_0 at\n"
      "its group size or Q4_0 as int4; fp32 files as Q8_0),\n"
      "q8 (Q8_0), q4 (Q4_0, GGUF's rule, group 32), f32", NULL },
    { "--group-size", "N", K_INT, F(group_size), 1, 1 << 16, DEV | CLI_PLAN,
      "quantization group (default: the file's; 32 for fp32\n"
      "files); another than the file's re-quantizes, with a notice", NULL },
    { "--kv", "P", K_KV, F(kv), 0, 0, DEV | CLI_PLAN,
      "KV cache precision: f32 (default), f16 (IEEE half), int8\n"
      "(one fp32 scale per head vector per position)", NULL },
    { "-c|--ctx|--ctx-size|--seq-len|--seq", "N", K_INT, F(seq_len), 1, 1 << 24, DEV | CLI_PLAN,
      "context length on the device (default: the model's)", NULL },
    { "--chat-template", "NAME", K_STR, F(chat_template), 0, 0, CLI_CHAT | CLI_SERVE,
      "format the conversation with this family: %s\n"
      "(default: the family of the model's tokenizer.chat_template;\n"
      "plain, \"User: ...\\nAssistant:\", for a model without one)",
      tsr_chat_template_list },
    { "--stats", "[=all]", K_STATS, F(stats), 0, 0, CLI_RUN,
      "print a short table: tokens/s, time to first token, device\n"
      "cycles per token, off-chip traffic and key counters;\n"
      "--stats=all adds every kernel counter", NULL },
    /* ------------------------------------------------------------ bench --- */
    { "--prompt-tokens", "P", K_INT, F(prompt_tokens), 1, 1 << 24, CLI_BENCH,
      "prompt length in tokens, BOS included (default 32), up\n"
      "to the context less one (then 1 decode token is left)", NULL },
    { "--decode-tokens", "N", K_INT, F(decode_tokens), 1, 1 << 24, CLI_BENCH,
      "tokens generated per run (default 256, or what the\n"
      "context leaves after the prompt if that is less)", NULL },
    { "--batch", "B", K_INT, F(batch), 1, 8, CLI_BENCH,
      "also decode B sequences (1..8) together in each run:\n"
      "B fresh sequences (the model gets B slots), each\n"
      "prefilled with its own P-token prompt (not timed),\n"
      "then N tokens each, greedily, in one\n"
      "tsr_seq_generate_batch; reports their aggregate and\n"
      "per-sequence decode tokens/s next to the single\n"
      "sequence's, and the ratio (the device steps up to\n"
      "its batch limit of them in one pass over the weights)", NULL },
    { "--repeat", "K", K_INT, F(repeat), 1, 1 << 16, CLI_BENCH, "measured runs (default 3)", NULL },
    { "--warmup", "W", K_INT, F(warmup), 0, 1 << 16, CLI_BENCH,
      "unmeasured runs first (default 1)", NULL },
    { "--json", NULL, K_FLAG, F(json), 0, 0, CLI_BENCH,
      "one JSON line per measured run instead of the table\n"
      "(with --batch: batch, batch_decode_tok_s,\n"
      "batch_seq_decode_tok_s, batch_speedup)", NULL },
    { "--json", NULL, K_FLAG, F(json), 0, 0, CLI_PLAN, "the same as one JSON object", NULL },
    /* ------------------------------------------------------------ serve --- */
    { "--host", "ADDR", K_STR, F(host), 0, 0, CLI_SERVE,
      "listening address (default 127.0.0.1: this machine only)", NULL },
    { "--port", "N", K_INT, F(port), 0, 65535, CLI_SERVE,
      "listening port (default 8080; 0: any free port, printed)", NULL },
    { "--slots", "N", K_INT, F(slots), 0, 8, CLI_SERVE,
      "sequence slots on the device, shared by requests and\n"
      "WebSocket sessions (default 4; 0: as many as fit, <= 8)", NULL },
    { "--queue", "N", K_INT, F(queue), 0, 4096, CLI_SERVE,
      "requests that may wait for a slot; beyond them, HTTP 503\n"
      "(default 16)", NULL },
    { "--alias", "NAME", K_STR, F(alias), 0, 0, CLI_SERVE,
      "the model's name in the API: /v1/models lists it, and a\n"
      "request naming another model gets 404 model_not_found\n"
      "(default: MODEL's file name)", NULL },
    { "--api-key", "KEY", K_STR, F(api_key), 0, 0, CLI_SERVE,
      "require 'Authorization: Bearer KEY' (default: the\n"
      "TESSERA_API_KEY environment variable, else none)", NULL },
    { "--max-tokens", "N", K_INT, F(max_tokens), 1, 1 << 20, CLI_SERVE,
      "most tokens one generation may produce (a request asking\n"
      "more gets this many), and the default for chat and\n"
      "WebSocket requests (default 256)", NULL },
    { "--max-body", "BYTES", K_INT, F(max_body), 1024, 1 << 30, CLI_SERVE,
      "largest request body or WebSocket message (default 1048576)", NULL },
    { "--prefill-chunk", "N", K_INT, F(prefill_chunk), 1, 1 << 20, CLI_SERVE,
      "prompt tokens per device call; other clients' tokens run\n"
      "in between (default 64)", NULL },
    { "--quantum", "N", K_INT, F(quantum), 1, 1 << 20, CLI_SERVE,
      "tokens per sequence in a decode call (every generating\n"
      "client in one call) while another client waits to start\n"
      "or prefill (default 4; a call has a fixed cost)", NULL },
    { "-v|--verbose", NULL, K_FLAG, F(verbose), 0, 0, CLI_SERVE,
      "log requests and civetweb's messages to stderr", NULL },
    /* ------------------------------------------------------------- plan --- */
    { "--cols", "C", K_INT, F(cols), 1, 64, CLI_PLAN,
      "mesh columns: each matrix row is split over C PEs\n"
      "(a power of two; default: 1 with a profile whose sums\n"
      "keep run.c's order, else the profile's most that divide\n"
      "the PEs)", NULL },
    { "--kv-split", "N", K_INT, F(kv_split), 1, 4096, CLI_PLAN,
      "PEs per KV head: its positions spread over N PEs\n"
      "(a power of two; default: 1 with a profile whose sums\n"
      "keep run.c's order, else as many as the PEs allow)", NULL },
    { "--profile", "NAME", K_STR, F(profile), 0, 0, CLI_PLAN,
      "plan for a shipped synthesis profile: stories260k,\n"
      "stories15m, generic (its PEs, arrays and limits; names\n"
      "and shapes in any case)", NULL },
    { "--clock", "MHZ", K_INT, F(clock_mhz), 1, 10000, CLI_PLAN,
      "kernel clock (default: the part's)", NULL },
    { "--pos", "P", K_INT, F(pos), 0, 1 << 24, CLI_PLAN,
      "report the decode step (and the batched one) at position P\n"
      "(default: the last)", NULL },
    { "--cards", "K", K_INT, F(cards), 1, 1024, CLI_PLAN,
      "split the layers over K cards (default 1)", NULL },
    { "--max-util", "PCT", K_INT, F(max_util), 1, 100, CLI_PLAN,
      "utilisation ceiling: a design fits when its LUTs, FFs,\n"
      "DSPs, BRAM36 and URAM are each at most PCT % of what\n"
      "the platform shell leaves (default 75)", NULL },
    /* ------------------------------------------------------------ synth --- */
    { "--shape", "SHAPE", K_STR, F(shape), 0, 0, CLI_SYNTH,
      "stories260K | stories15M | stories42M | stories110M | DIMxLAYERS\n"
      "(DIMxLAYERS may add :hidden=H,heads=N,kv=K,vocab=V,seq=S,\n"
      "shared=0|1, the classifier shared with the embedding);\n"
      "with --arch llama3: llama3-tiny (default) | smollm2-135m |\n"
      "llama3.2-1b | DIMxLAYERS; qwen2: qwen2-tiny (default) |\n"
      "qwen2.5-0.5b | DIMxLAYERS", NULL },
    { "--arch", "ARCH", K_STR, F(arch), 0, 0, CLI_SYNTH,
      "llama3 or qwen2: write GGUF (needs --vocab)", NULL },
    { "--vocab", "FILE", K_STR, F(vocab), 0, 0, CLI_SYNTH,
      "a vocab-only GGUF (../shared/vocab/ggml-vocab-*.gguf)", NULL },
    { "-o|--output", "FILE", K_STR, F(out), 0, 0, CLI_SYNTH, "output path", NULL },
    { "--q8", NULL, K_FLAG, F(q8), 0, 0, CLI_SYNTH,
      "write version 2 (Q8_0) instead of version 1 (fp32); with\n"
      "--arch, Q8_0 matrices instead of F32", NULL },
    { "--q4", NULL, K_FLAG, F(q4), 0, 0, CLI_SYNTH, "(--arch) Q4_0 matrices", NULL },
    { "--legacy", NULL, K_FLAG, F(legacy), 0, 0, CLI_SYNTH,
      "write llama2.c's legacy (version 0) fp32 layout, which\n"
      "run.c and llama.cpp's llama-convert-llama2c-to-ggml read\n"
      "(the same weights as version 1 for the same seed)", NULL },
    { "--group-size", "N", K_INT, F(group_size), 1, 1 << 16, CLI_SYNTH,
      "Q8_0 group size (default 32; implies --q8)", NULL },
    { "-s|--seed", "S", K_U64, F(seed), 0, 0, CLI_SYNTH,
      "the weights' RNG seed (default 42)", NULL },
};
#define N_ROWS (sizeof rows / sizeof rows[0])
_Static_assert(N_ROWS <= 64, "cli_args.given has a bit a row");

/* The i-th '|'-separated name of r into buf; 0 when there is none. */
static int row_name(const row *r, int i, char *buf, size_t cap)
{
    const char *p = r->names;
    for (; i > 0 && p; i--) {
        p = strchr(p, '|');
        if (p) p++;
    }
    if (!p) return 0;
    size_t n = strcspn(p, "|");
    if (n >= cap) n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return 1;
}

/* The row of command c named arg, or NULL. */
static const row *find(unsigned cmd, const char *arg)
{
    char name[64];
    for (size_t k = 0; k < N_ROWS; k++) {
        if (!(rows[k].cmds & cmd)) continue;
        for (int i = 0; row_name(&rows[k], i, name, sizeof name); i++)
            if (!strcmp(name, arg)) return &rows[k];
    }
    return NULL;
}

/* Edit distance of a and b (each cut at 63 bytes): insertions, deletions,
 * substitutions and swaps of two neighbours (--prot for --port) count 1. */
static int distance(const char *a, const char *b)
{
    int d[64][64], la = (int)strnlen(a, 63), lb = (int)strnlen(b, 63);
    for (int i = 0; i <= la; i++) d[i][0] = i;
    for (int j = 0; j <= lb; j++) d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The name of command cmd nearest arg, when it is near enough to be a
 * typo (at most 2 edits, fewer than half the name); else NULL. */
static const char *nearest(unsigned cmd, const char *arg, char *buf, size_t cap)
{
    int best = 3;
    char name[64];
    buf[0] = '\0';
    for (size_t k = 0; k < N_ROWS; k++) {
        if (!(rows[k].cmds & cmd)) continue;
        for (int i = 0; row_name(&rows[k], i, name, sizeof name); i++) {
            int d = distance(arg, name);
            if (d < best && 2 * d < (int)strlen(name)) {
                best = d;
                snprintf(buf, cap, "%s", name);
            }
        }
    }
    return buf[0] ? buf : NULL;
}

const char *cli_nearest_word(const char *arg, const char *const *words, size_t n)
{
    const char *near = NULL;
    int best = 3;
    for (size_t k = 0; k < n; k++) {
        int d = distance(arg, words[k]);
        if (d < best && 2 * d < (int)strlen(words[k])) {
            best = d;
            near = words[k];
        }
    }
    return near;
}

void cli_help(const cli_command *c)
{
    printf(c->intro, c->fill ? c->fill() : "");
    fputs("\n", stdout);
    char name[64], col[128];
    for (size_t k = 0; k < N_ROWS; k++) {
        const row *r = &rows[k];
        if (!(r->cmds & c->bit)) continue;
        const char *shrt = "", *lng = NULL;
        char s[64] = "", l[64] = "", also[256] = "";
        for (int i = 0; row_name(r, i, name, sizeof name); i++) {
            if (name[1] != '-') { snprintf(s, sizeof s, "%s", name); shrt = s; }
            else if (!lng) { snprintf(l, sizeof l, "%s", name); lng = l; }
            else {
                size_t n = strlen(also);
                snprintf(also + n, sizeof also - n, "%s%s", n ? ", " : "", name);
            }
        }
        snprintf(col, sizeof col, "  %s%s%s%s%s", shrt[0] ? shrt : "  ", shrt[0] ? ", " : "  ",
                 lng ? lng : "", r->arg && r->arg[0] != '[' ? " " : "", r->arg ? r->arg : "");
        if (strlen(col) < 24) printf("%-24s", col);
        else printf("%s\n%24s", col, "");
        for (const char *p = r->help; *p;) {
            size_t n = strcspn(p, "\n");
            char line[256];
            snprintf(line, sizeof line, "%.*s", (int)n, p);
            if (strstr(line, "%s")) printf(line, r->fill ? r->fill() : "");
            else fputs(line, stdout);
            p += n;
            if (*p) { p++; printf("\n%24s", ""); }
        }
        if (also[0]) printf("\n%24s(also %s)", "", also);
        fputs("\n", stdout);
    }
    fputs("  -h, --help            this text\n", stdout);
    if (c->outro) fputs(c->outro, stdout);
}

int cli_given(const cli_args *a, const char *name)
{
    char n[64], want[64];
    snprintf(want, sizeof want, "--%s", name);
    for (size_t k = 0; k < N_ROWS && k < 64; k++)
        for (int i = 0; row_name(&rows[k], i, n, sizeof n); i++)
            if (!strcmp(n, want) && (a->given >> k & 1)) return 1;
    return 0;
}

/* The value of one row into a; -1 after printing an error. */
static int store(const row *r, const char *o, const char *v, cli_args *a)
{
    void *dst = (char *)a + r->off;
    switch (r->k) {
    case K_FLAG: *(int *)dst = 1; return 0;
    case K_STR: *(const char **)dst = v; return 0;
    case K_INT: return cli_int(o, v, (int)r->lo, (int)r->hi, dst);
    case K_FLOAT: return cli_float(o, v, (float)r->lo, (float)r->hi, dst);
    case K_U64: return cli_u64(o, v, dst);
    case K_STATS:
        if (strcmp(v, "") && strcmp(v, "all")) {
            cli_error("option %s: '%s' is not all (--stats or --stats=all)", o, v);
            return -1;
        }
        *(const char **)dst = v;
        return 0;
    case K_KV:
        if (strcmp(v, "f32") && strcmp(v, "f16") && strcmp(v, "int8")) {
            cli_error("option %s: '%s' is not f32, f16 or int8", o, v);
            return -1;
        }
        *(const char **)dst = v;
        return 0;
    case K_WEIGHTS:
        a->weights_f32 = !strcmp(v, "f32");
        if (!strcmp(v, "file") || a->weights_f32) a->weights = TSR_WEIGHTS_FILE;
        else if (!strcmp(v, "q8")) a->weights = TSR_WEIGHTS_Q8;
        else if (!strcmp(v, "q4")) a->weights = TSR_WEIGHTS_Q4;
        else {
            cli_error("option %s: '%s' is not file, q8, q4 or f32", o, v);
            return -1;
        }
        return 0;
    }
    return -1;
}

/* Split "--name=value" in place into "--name" "value" (argv has room);
 * returns the value, or NULL when arg i is not of that form. */
static const char *split(int *argc, char **argv, int i)
{
    char *a = argv[i], *eq;
    if (a[0] != '-' || a[1] != '-' || a[2] == '\0' || a[2] == '=' || !(eq = strchr(a, '=')))
        return NULL;
    memmove(argv + i + 2, argv + i + 1, (size_t)(*argc - i - 1) * sizeof *argv);
    *eq = '\0';
    argv[i + 1] = eq + 1;
    ++*argc;
    return eq + 1;
}

/* An argument that is no option of command c: one line, with the nearest
 * name when there is one. */
static void unknown(const cli_command *c, const char *arg)
{
    char near[64];
    if (arg[0] != '-')
        cli_error("%s: unexpected argument '%s': values follow their option, as in -m MODEL "
                  "(see tessera %s --help)", c->name, arg, c->name);
    else if (nearest(c->bit, arg, near, sizeof near))
        cli_error("%s: unknown option '%s'; did you mean '%s'? (see tessera %s --help)", c->name,
                  arg, near, c->name);
    else
        cli_error("%s: unknown option '%s' (see tessera %s --help)", c->name, arg, c->name);
}

int cli_parse(const cli_command *c, int argc, char **argv, cli_args *a)
{
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *eqv = split(&argc, argv, i), *v = eqv;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            cli_help(c);
            return 1;
        }
        const row *r = find(c->bit, o);
        if (!r) {
            unknown(c, o);
            return -1;
        }
        if (r->k == K_FLAG || r->k == K_STATS) {
            if (eqv && r->k == K_FLAG) {
                cli_error("%s: option %s takes no value (see tessera %s --help)", c->name, o,
                          c->name);
                return -1;
            }
            if (!eqv) v = "";
            if (eqv) i++;
        } else if (eqv) {
            i++;
        } else if (i + 1 >= argc) {
            cli_error("option %s needs a value", o);
            return -1;
        } else {
            v = argv[++i];
        }
        if (store(r, o, v, a)) return -1;
        a->given |= 1ull << (size_t)(r - rows);
    }
    return 0;
}

uint64_t cli_random_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    s &= (1ull << 53) - 1;
    return s ? s : 1;
}

/* ------------------------------------------------------------- helpers --- */

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tessera: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_flush_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write the output: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int cli_int(const char *opt, const char *val, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || *end || end == val || v < lo || v > hi) {
        cli_error("option %s: '%s' is not an integer in %d..%d", opt, val, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int cli_float(const char *opt, const char *val, float lo, float hi, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(val, &end);
    if (errno || *end || end == val || !(v >= lo && v <= hi)) {
        cli_error("option %s: '%s' is not a number in %g..%g", opt, val, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_u64(const char *opt, const char *val, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || *end || end == val || val[0] == '-') {
        cli_error("option %s: '%s' is not a non-negative integer", opt, val);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

const char *cli_s(long long n) { return n == 1 ? "" : "s"; }

int cli_read_prompt(const char *cmd, const char *path, char **out)
{
    int from_stdin = !strcmp(path, "-");
    FILE *f = from_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        cli_error("%s: cannot open the prompt file %s: %s", cmd, path, strerror(errno));
        return -1;
    }
    /* A bound, so that -f /dev/zero or an endless pipe cannot take all the
     * memory: 64 MiB is 4 bytes a position of the longest context --ctx
     * allows (2^24), and far past any model's */
    const size_t max = (size_t)1 << 26;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    for (size_t got = 1; buf && got > 0;) {
        if (len > max) {   /* one byte past the bound: reads stop at max + 1 */
            free(buf);
            if (!from_stdin) fclose(f);
            cli_error("%s: the prompt from %s is over %zu MiB, the most tessera reads", cmd,
                      from_stdin ? "stdin" : path, max >> 20);
            return -1;
        }
        if (len + 1 == cap) {
            char *p = realloc(buf, cap = cap * 2 > max + 2 ? max + 2 : cap * 2);
            if (!p) { free(buf); buf = NULL; break; }
            buf = p;
        }
        got = fread(buf + len, 1, cap - 1 - len, f);
        len += got;
    }
    int failed = !buf || ferror(f);
    int err = errno;
    if (!from_stdin) fclose(f);
    if (failed) {
        free(buf);
        cli_error("%s: cannot read the prompt from %s: %s", cmd, from_stdin ? "stdin" : path,
                  buf ? strerror(err) : "out of memory");
        return -1;
    }
    if (len > 0 && buf[len - 1] == '\n') len--;
    if (len > 0 && buf[len - 1] == '\r') len--;
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        cli_error("%s: the prompt from %s holds a NUL byte", cmd, from_stdin ? "stdin" : path);
        return -1;
    }
    *out = buf;
    return 0;
}

void cli_log_to_stderr(int level, const char *msg, void *user)
{
    (void)user;
    if (level <= TSR_LOG_WARN) fprintf(stderr, "tessera: %s\n", msg);
}

int cli_chat_template(const char *cmd, const char *name, const char **out)
{
    if ((*out = tsr_chat_template_find(name))) return 0;
    cli_error("%s: --chat-template '%s' is not a chat template family (one of: %s)", cmd, name,
              tsr_chat_template_list());
    return -1;
}

/* --- the device spec from --backend/--part/--pes/--threads/--xclbin and
 * the split (--cards, --stages) --- */
int cli_device_spec(const char *cmd, char *buf, size_t cap, const cli_args *a)
{
    const char *backend = a->backend ? a->backend : "emu";
    int n = snprintf(buf, cap, "%s", backend);
    const char *sep = strchr(backend, ':') ? "," : ":";
#define ADD(...) do { if (n >= 0 && (size_t)n < cap) { \
        n += snprintf(buf + n, cap - (size_t)n, __VA_ARGS__); sep = ","; } } while (0)
    if (a->part) ADD("%spart=%s", sep, a->part);
    if (a->pes) ADD("%spes=%d", sep, a->pes);
    if (a->threads) ADD("%sthreads=%d", sep, a->threads);
    if (a->xclbin) ADD("%sxclbin=%s", sep, a->xclbin);
    if (a->cards > 1) ADD("%scards=%d", sep, a->cards);
    if (a->stages) {
        ADD("%sstages=", sep);
        const char *p = a->stages;
        for (; *p && n >= 0 && (size_t)n + 1 < cap; p++) buf[n++] = *p == ',' ? '/' : *p;
        if (n >= 0 && (size_t)n < cap) buf[n] = '\0';
        if (*p) n = (int)cap;   /* what did not fit */
    }
#undef ADD
    if (n < 0 || (size_t)n >= cap) {
        cli_error("%s: device spec too long", cmd);
        return -1;
    }
    return 0;
}

tsr_model_opts cli_model_opts(const cli_args *a, int n_seqs)
{
    tsr_model_opts mo = { .tokenizer = a->tokenizer, .weights_f32 = a->weights_f32,
                          .weights = a->weights, .kv = a->kv, .group_size = a->group_size,
                          .seq_len = a->seq_len, .n_seqs = n_seqs };
    return mo;
}

int cli_open_device(const char *spec, tsr_device **dev)
{
    *dev = NULL;
    int rc = tsr_device_open(spec, dev);
    if (rc != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(*dev));
        return rc == TSR_ERR_ARG ? 2 : 1;
    }
    tsr_device_set_log(*dev, cli_log_to_stderr, NULL);
    return 0;
}

int cli_open_model(const cli_args *a, const char *spec, const tsr_model_opts *mo,
                   tsr_device **dev, tsr_model **m)
{
    *m = NULL;
    int status = cli_open_device(spec, dev);
    if (status) return status;
    if (tsr_model_load(*dev, a->model, mo, m) != TSR_OK) {
        cli_error("%s", tsr_device_errmsg(*dev));
        return 1;
    }
    return 0;
}
