/*
 * test_bench.c - tessera bench as a user runs it: one JSON line per measured
 * run (warm-up runs unprinted) with the requested token count, and one-line
 * usage errors with exit status 2; and make bench's script (host/bench.sh):
 * no ratio without a peer, and with peers (stand-ins here that log their
 * calls) ratios from their figures of the same run, their runs interleaved
 * with tessera's.  No wall-clock assertions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_capture.h"
#include "test_util.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define MODEL_SH SH_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")
#define TOK_SH SH_MODEL("tok512.bin")


/* The number after "key": in line (which ends at '\n'); asserts it is there. */
static double json_num(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    const char *eol = strchr(line, '\n');
    assert_non_null(p);
    assert_true(eol == NULL || p < eol);
    return strtod(p + strlen(pat), NULL);
}

static char out[1 << 16], err[1 << 16];

/* CPUs this process may run on: the emulator's default worker count. */
static int cpus_available(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

/* Two measured runs after one warm-up: exactly two JSON lines, each with
 * 16 decode tokens, a positive decode rate and every documented field. */
static void json_lines_per_run(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                 " --prompt-tokens 8 --decode-tokens 16 --repeat 2 --warmup 1 --json",
                 out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_int_equal(count_lines(out), 2);
    static const char *const keys[] = { "\"model\":", "\"backend\":\"emu\"", "\"threads\":",
        "\"weights\":\"q8\"", "\"group_size\":32", "\"kv\":\"f32\"", "\"prefill_tok_s\":", "\"ttft_ms\":",
        "\"load_gb_s\":", "\"load_prep_s\":", "\"load_stream_s\":", "\"load_s\":",
        "\"peak_rss_mb\":" };
    const char *line = out;
    for (int i = 0; i < 2; i++) {
        const char *eol = strchr(line, '\n');
        assert_non_null(eol);
        assert_int_equal(line[0], '{');
        assert_int_equal(eol[-1], '}');
        assert_int_equal((int)json_num(line, "decode_tokens"), 16);
        /* no --threads: the emulator's default, the CPUs we may run on */
        assert_int_equal((int)json_num(line, "threads"), cpus_available());
        assert_int_equal((int)json_num(line, "prompt_tokens"), 8);
        assert_true(json_num(line, "decode_tok_s") > 0.0);
        assert_true(json_num(line, "prefill_tok_s") > 0.0);
        assert_true(json_num(line, "peak_rss_mb") > 0.0);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *p = strstr(line, keys[k]);
            assert_true(p != NULL && p < eol);
        }
        line = eol + 1;
    }
}

/* --threads appends threads=T to the spec; JSON reports it. */
static void threads_option_reaches_spec(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                 " --decode-tokens 4 --repeat 1 --warmup 0 --threads 2 --json",
                 out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, "\"backend\":\"emu:threads=2\""));
    assert_int_equal((int)json_num(out, "threads"), 2);
    assert_int_equal((int)json_num(out, "decode_tokens"), 4);
}

/* Each of the n strings want[] occurs in text. */
static void assert_all_in(const char *text, const char *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strstr(text, want[i])) fail_msg("missing \"%s\" in:\n%s", want[i], text);
}

/* The table's rows: a line each, the metric's name first. */
static const char *const TABLE_ROWS[] = {
    "\ndecode tokens/s ", "\nprefill tokens/s ", "\ntime to first token, ms ",
    "\nweight stream GB/s ", "\nimage preparation, s ", "\nmodel load, s ", "\npeak RSS MB ",
};
#define N_TABLE_ROWS (sizeof TABLE_ROWS / sizeof TABLE_ROWS[0])

/* Without --json: a table with the metrics. */
static void table_has_metrics(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                 " --decode-tokens 8 --repeat 3 --warmup 0", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_all_in(out, TABLE_ROWS, N_TABLE_ROWS);
    assert_null(strstr(out, "batch"));
    assert_null(strchr(out, '{'));
}

static void bad_repeat_is_usage_error(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH " --repeat 0", out, err, sizeof out);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "--repeat"));
    assert_string_equal(out, "");
}

static void unknown_option_is_usage_error(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH " --frobnicate", out, err, sizeof out);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "--frobnicate"));
}

/* More tokens than the context (stories260K: 512) is refused up front. */
static void too_many_tokens_is_usage_error(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                 " --prompt-tokens 500 --decode-tokens 100", out, err, sizeof out);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "context"));
}

/* A llama2.c checkpoint without -z: the library's one-line error, exit 1. */
static void llama2c_without_tokenizer_fails(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " --decode-tokens 4", out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "tokenizer"));
}

/* ---- the context: default decode count clamped, --ctx ---------------- */

#define GGUF SHARED_MODEL("stories260K-q8_0.gguf")
#define GGUF_SH SH_MODEL("stories260K-q8_0.gguf")

/* No --decode-tokens: the default 256 shrinks to what the context leaves
 * (64 - 32 prompt = 32), with one stderr line saying so. */
static void default_decode_clamped_to_context(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                 " --ctx 64 --repeat 1 --warmup 0 --json", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_int_equal(count_lines(out), 1);
    assert_int_equal((int)json_num(out, "decode_tokens"), 32);
    assert_int_equal((int)json_num(out, "prompt_tokens"), 32);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "256 decode tokens (the default) clamped to 32: the context is 64"));
}

/* The reviewer's case: a GGUF file (context_length 128) with defaults. */
static void gguf_defaults_fit_its_context(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " GGUF_SH " --threads 2 --repeat 1 --warmup 0 --json",
                 out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_int_equal((int)json_num(out, "decode_tokens"), 96);
    assert_non_null(strstr(err, "clamped to 96: the context is 128 tokens"));
}

/* --ctx 512 (alias --seq-len): the full default of 256 decode tokens, and
 * the library's warning about the file's context_length. */
static void gguf_ctx_512_runs_the_default(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " GGUF_SH " --seq-len 512 --repeat 1 --warmup 0 --json",
                 out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_int_equal((int)json_num(out, "decode_tokens"), 256);
    assert_null(strstr(err, "clamped"));
    assert_non_null(strstr(err, "context 512 exceeds the file's llama.context_length 128"));
}

/* Counts the context cannot take, refused up front with exit 2 and one
 * line: both counts given explicitly are never clamped; a prompt that
 * fills the context leaves no decode token, and the error says the
 * prompt's limit, not a decode count that cannot fix it. */
static void counts_beyond_the_context_are_refused(void **state)
{
    (void)state;
    static const struct { const char *args, *msg; } cases[] = {
        { " --ctx 64 --prompt-tokens 32 --decode-tokens 256",
          "32 prompt + 256 decode tokens exceed the context of 64 tokens "
          "(--prompt-tokens, --decode-tokens or --ctx to change)" },
        { " --ctx 64 --prompt-tokens 64",
          "64 prompt tokens leave no room to decode in the context of 64 "
          "tokens (--prompt-tokens up to 63, or --ctx to change)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH "%s",
                 cases[i].args);
        assert_int_equal(run_capture(cmd, out, err, sizeof out), 2);
        assert_int_equal(count_lines(err), 1);
        assert_non_null(strstr(err, cases[i].msg));
        assert_string_equal(out, "");
    }
}

/* --pes reaches the device, whose profile sets the limit (exit 2). */
static void pes_beyond_the_profile_is_refused(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH " --pes 100", out, err, sizeof out);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "pes=100 outside 1..64"));
    rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH " --pes 4 --decode-tokens 4"
                     " --repeat 1 --warmup 0 --json", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"backend\":\"emu:pes=4\""));
}

/* Counts of one are singular: "1 run after 1 warm-up", not "1 runs". */
static void table_counts_are_singular_for_one(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                         " --repeat 1 --warmup 1 --prompt-tokens 1 --decode-tokens 4",
                         out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "prompt 1 token, decode 4 tokens, 1 run after 1 warm-up\n"));
    rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                     " --repeat 2 --warmup 0 --prompt-tokens 2 --decode-tokens 1",
                     out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "prompt 2 tokens, decode 1 token, 2 runs after 0 warm-ups\n"));
}

/* ---- make bench: host/bench.sh ----------------------------------------- */

static char dir[64];

/* Write an executable script at dir/name. */
static void script(const char *name, const char *body)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s", body);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

/* A folder with a tessera that logs its bench runs to dir/log before it
 * runs the real one, and stand-ins for runq (100 tok/s) and llama-bench
 * (pp 400, tg 200 tok/s) that log theirs. */
static void bench_dir(void)
{
    strcpy(dir, "/tmp/tsr_bench_sh_XXXXXX");
    assert_non_null(mkdtemp(dir));
    char body[512];
    snprintf(body, sizeof body, "[ \"$1\" = bench ] && echo tessera >> %s/log\nexec %s%s \"$@\"\n",
             dir, TESSERA_BIN[0] == '/' ? "" : TSR_SOURCE_DIR "/", TESSERA_BIN);
    script("tessera", body);
    snprintf(body, sizeof body, "echo \"runq $OMP_NUM_THREADS\" >> %s/log\n"
             "echo 'achieved tok/s: 100.000000' >&2\n", dir);
    script("runq", body);
    snprintf(body, sizeof body, "echo llama >> %s/log\n"
             "echo '{\"n_prompt\": 16, \"n_gen\": 0, \"avg_ts\": 400.000000}'\n"
             "echo '{\"n_prompt\": 0, \"n_gen\": 8, \"avg_ts\": 200.000000}'\n", dir);
    script("llama-bench", body);
    char gguf[128];
    snprintf(gguf, sizeof gguf, "%s/stories15M.q8_0.gguf", dir);
    FILE *f = fopen(gguf, "w");   /* the stand-in never reads it */
    assert_non_null(f);
    fclose(f);
}

/* Run bench.sh on stories15M, 1 thread, 2 rounds, 8 tokens, with the extra
 * environment env; the report's stories15M row split at '|' into col[]. */
static void bench_sh(const char *env, char *row, size_t cap, char *col[17])
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd %s && %s BENCH_SHAPES=stories15M BENCH_THREADS=1 BENCH_ROUNDS=2 "
             "BENCH_DECODE=8 sh host/bench.sh %s/tessera \"$TSR_SHARED\" %s/bench %s/out.md",
             TSR_SOURCE_DIR, env, dir, dir, dir);
    int rc = run_capture(cmd, out, err, sizeof out);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    char path[128];
    snprintf(path, sizeof path, "%s/out.md", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    row[0] = '\0';
    char line[1024];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "| stories15M | 1 |", 18)) snprintf(row, cap, "%s", line);
    fclose(f);
    assert_true(row[0] != '\0');
    int n = 0;
    for (char *p = strtok(row, "|"); p && n < 17; p = strtok(NULL, "|")) {
        while (*p == ' ') p++;
        char *e = p + strlen(p);
        while (e > p && (e[-1] == ' ' || e[-1] == '\n')) *--e = '\0';
        col[n++] = p;
    }
    assert_int_equal(n, 17);   /* 16 columns and the newline after the last bar */
}

/* Remove the folder of bench_dir. */
static void rm_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
}

/* "1.23x" of a / b, as bench.sh prints it. */
/* col is "R.RRx", the script's ratio a / b from the unrounded a, where the
 * table shows a to one decimal: R within what those two roundings allow. */
static void assert_ratio(const char *col, double a, double b)
{
    size_t n = strlen(col);
    assert_true(n > 1 && col[n - 1] == 'x');
    double r = atof(col);
    assert_true(r >= (a - 0.05) / b - 0.005 && r <= (a + 0.05) / b + 0.005);
}

/* No peer given: the peer columns and every ratio say "-"; the script
 * holds no peer figures of its own. */
static void bench_sh_without_peers_has_no_ratio(void **state)
{
    (void)state;
    bench_dir();
    char row[1024], *col[17];
    bench_sh("", row, sizeof row, col);
    assert_true(atof(col[3]) > 0.0);   /* tessera's decode tok/s, from a 1-token prompt */
    assert_true(atof(col[6]) > 0.0);   /* and after the prompt */
    const int peer_cols[] = { 4, 5, 7, 8, 10, 11 };
    for (size_t i = 0; i < sizeof peer_cols / sizeof peer_cols[0]; i++)
        assert_string_equal(col[peer_cols[i]], "-");
    rm_dir();
}

/* A report rewritten over an earlier one (make bench DOCS=1 over
 * docs/benchmarks.md) keeps what was written after the report's end
 * marker, once, and regenerates everything before it. */
static void bench_sh_keeps_sections_after_the_marker(void **state)
{
    (void)state;
    bench_dir();
    char row[1024], *col[17], cmd[512];
    bench_sh("", row, sizeof row, col);
    snprintf(cmd, sizeof cmd, "(cd %s && grep -c 'the sections below are kept' out.md && "
             "sed -i 's/^| stories15M | 1 |.*/| stories15M | 1 | stale |/' out.md && "
             "printf '\\n## Hand-written\\n\\nkept text\\n' >> out.md)", dir);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, "1\n");
    bench_sh("", row, sizeof row, col);
    assert_true(atof(col[3]) > 0.0);   /* the stale row was regenerated */
    snprintf(cmd, sizeof cmd, "(cd %s && grep -c '^| stories15M | 1 |' out.md && "
             "grep -c '^kept text$' out.md && tail -n 1 out.md)", dir);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, "1\n1\nkept text\n");
    rm_dir();
}

/* Peers given: their own figures of this run, the ratios from them
 * (llama-bench's tg against the decode from a 1-token prompt, runq's
 * against the decode after the prompt), and the runs interleaved: tessera
 * twice, runq, llama-bench, tessera twice, ... */
static void bench_sh_measures_peers_in_the_run(void **state)
{
    (void)state;
    bench_dir();
    char env[512], row[1024], *col[17];
    snprintf(env, sizeof env, "RUNQ=%s/runq LLAMA_BENCH=%s/llama-bench LLAMA_GGUF_DIR=%s",
             dir, dir, dir);
    bench_sh(env, row, sizeof row, col);
    double decode = atof(col[3]), after = atof(col[6]), prefill = atof(col[9]);
    assert_true(decode > 0.0 && after > 0.0 && prefill > 0.0);
    assert_string_equal(col[4], "200.0");
    assert_ratio(col[5], decode, 200.0);
    assert_string_equal(col[7], "100.0");
    assert_ratio(col[8], after, 100.0);
    assert_string_equal(col[10], "400.0");
    assert_ratio(col[11], prefill, 400.0);
    char log[128];
    snprintf(log, sizeof log, "cat %s/log", dir);
    assert_int_equal(run_capture(log, out, err, sizeof out), 0);
    assert_string_equal(out, "tessera\ntessera\nrunq 1\nllama\ntessera\ntessera\nrunq 1\nllama\n");
    /* one file per shape works as the directory does */
    snprintf(log, sizeof log, "rm %s/log", dir);
    run_capture(log, out, err, sizeof out);
    snprintf(env, sizeof env, "LLAMA_BENCH=%s/llama-bench LLAMA_GGUF_stories15M=%s/stories15M.q8_0.gguf",
             dir, dir);
    bench_sh(env, row, sizeof row, col);
    assert_string_equal(col[7], "-");
    assert_string_equal(col[4], "200.0");
    rm_dir();
}

/* ---- --batch B, and prompts up to the context ------------------------ */

/* --batch 4: each JSON line adds the batch's aggregate and per-sequence
 * rates and their ratio to the single sequence's, with the same token
 * counts; the table adds their rows. */
static void batch_json_and_table(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                 " --prompt-tokens 12 --decode-tokens 24 --batch 4 --repeat 2 --warmup 0 --json",
                 out, err, sizeof out);
    if (rc) fprintf(stderr, "%s", err);
    assert_int_equal(rc, 0);
    assert_int_equal(count_lines(out), 2);
    const char *line = out;
    for (int i = 0; i < 2; i++) {
        assert_int_equal((int)json_num(line, "batch"), 4);
        assert_int_equal((int)json_num(line, "decode_tokens"), 24);
        double single = json_num(line, "decode_tok_s"), agg = json_num(line, "batch_decode_tok_s");
        double per = json_num(line, "batch_seq_decode_tok_s"), ratio = json_num(line, "batch_speedup");
        assert_true(single > 0.0 && agg > 0.0 && per > 0.0);
        /* the ratio is the two rates' (printed to 3 decimals) */
        assert_true(ratio > 0.0 && ratio - agg / single < 0.01 && agg / single - ratio < 0.01);
        line = strchr(line, '\n') + 1;
    }
    /* without --batch, no batch fields */
    rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                     " --decode-tokens 4 --repeat 1 --warmup 0 --json", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "batch"));
    rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                     " --decode-tokens 8 --batch 2 --repeat 1 --warmup 0", out, err, sizeof out);
    assert_int_equal(rc, 0);
    static const char *const batch_rows[] = {
        "\nbatch: 2 sequences decoded together in each run", "\nbatch decode tokens/s ",
        "\nbatch per-sequence tok/s ", "\nbatch / single decode ",
    };
    assert_all_in(out, batch_rows, sizeof batch_rows / sizeof batch_rows[0]);
    assert_all_in(out, TABLE_ROWS, N_TABLE_ROWS);
}

static void batch_out_of_range_is_usage_error(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH " --batch 9", out, err,
                         sizeof out);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "--batch: '9' is not an integer in 1..8"));
    rc = run_capture(TESSERA_BIN " bench --help", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "--batch B"));
    assert_non_null(strstr(out, "batch_decode_tok_s"));
}

/* A prompt of the context less one (stories260K: 511 of 512): the prefill
 * runs and is reported, and the default decode count shrinks to the one
 * token left. */
static void prompt_up_to_the_context(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                 " --prompt-tokens 511 --repeat 1 --warmup 0 --json", out, err, sizeof out);
    if (rc) fprintf(stderr, "%s", err);
    assert_int_equal(rc, 0);
    assert_int_equal((int)json_num(out, "prompt_tokens"), 511);
    assert_int_equal((int)json_num(out, "decode_tokens"), 1);
    assert_true(json_num(out, "prefill_tok_s") > 0.0);
    assert_non_null(strstr(err, "clamped to 1: the context is 512 tokens, 511 of them prompt"));
    /* and with a batch of two such prompts */
    rc = run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH
                     " --prompt-tokens 511 --batch 2 --repeat 1 --warmup 0 --json", out, err,
                     sizeof out);
    assert_int_equal(rc, 0);
    assert_true(json_num(out, "batch_decode_tok_s") > 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_lines_per_run),
        cmocka_unit_test(threads_option_reaches_spec),
        cmocka_unit_test(table_has_metrics),
        cmocka_unit_test(table_counts_are_singular_for_one),
        cmocka_unit_test(bad_repeat_is_usage_error),
        cmocka_unit_test(unknown_option_is_usage_error),
        cmocka_unit_test(too_many_tokens_is_usage_error),
        cmocka_unit_test(llama2c_without_tokenizer_fails),
        cmocka_unit_test(default_decode_clamped_to_context),
        cmocka_unit_test(gguf_defaults_fit_its_context),
        cmocka_unit_test(gguf_ctx_512_runs_the_default),
        cmocka_unit_test(counts_beyond_the_context_are_refused),
        cmocka_unit_test(pes_beyond_the_profile_is_refused),
        cmocka_unit_test(bench_sh_without_peers_has_no_ratio),
        cmocka_unit_test(bench_sh_keeps_sections_after_the_marker),
        cmocka_unit_test(bench_sh_measures_peers_in_the_run),
        cmocka_unit_test(batch_json_and_table),
        cmocka_unit_test(batch_out_of_range_is_usage_error),
        cmocka_unit_test(prompt_up_to_the_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
