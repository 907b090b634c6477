/*
 * test_cli.c - the tessera program as a user runs it: exact text on the
 * real model, and one-line errors with a non-zero exit on bad input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_capture.h"
#include "test_util.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define MODEL_SH SH_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")
#define TOK_SH SH_MODEL("tok512.bin")


static char out[1 << 16], err[1 << 16];

/* F32 greedy on stories260K prints llama2.c's text exactly. */
static void run_prints_reference_text(void **state)
{
    (void)state;
    FILE *f = fopen(SHARED_REF("stories260K_once_upon_a_time.txt"), "rb");
    assert_non_null(f);
    static char want[1 << 14];
    size_t n = fread(want, 1, sizeof want - 1, f);
    want[n] = '\0';
    fclose(f);
    int rc = run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                 " --weights f32 -t 0 -n 200 -p 'Once upon a time'", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, want);
    assert_non_null(strstr(err, "tokens/s"));
    assert_non_null(strstr(err, "time to first token"));
}

static void run_missing_model_is_one_line_error(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " run -m /nonexistent/m.bin -z " TOK_SH, out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "/nonexistent/m.bin"));
    assert_int_equal(count_lines(err), 1);
}

static void run_mismatched_tokenizer_is_refused(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " SH_MODEL("tokenizer.bin"),
                 out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "tokenizer.bin"));
    assert_int_equal(count_lines(err), 1);
    /* the model given as the tokenizer too: the error says which is which */
    rc = run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " MODEL_SH, out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "not a llama2.c tokenizer.bin? -z takes the tokenizer, -m the model"));
    assert_int_equal(count_lines(err), 1);
}

static void run_directory_tokenizer_is_refused(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " run -m " MODEL_SH " -z /tmp", out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_string_equal(err, "tessera: /tmp: is not a regular file (a directory)\n");
}

/* A directory as the model: the same clean line, no stale errno text. */
static void run_directory_model_is_refused_cleanly(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " run -m /tmp -z " TOK_SH, out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_string_equal(err, "tessera: /tmp: is not a regular file (a directory)\n");
}

/* A named pipe as -m or -z is refused before it is opened (opening one
 * for reading would wait for a writer forever); timeout guards a hang. */
static void fifo_model_or_tokenizer_is_refused(void **state)
{
    (void)state;
    char path[] = "/tmp/tsr_cli_fifo_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    char cmd[512], want[256];
    snprintf(want, sizeof want, "tessera: %s: is not a regular file (a named pipe)\n", path);
    snprintf(cmd, sizeof cmd, "timeout 20 " TESSERA_BIN " run -m %s -z " TOK_SH, path);
    int rc1 = run_capture(cmd, out, err, sizeof out);
    int ok1 = !strcmp(err, want);
    snprintf(cmd, sizeof cmd, "timeout 20 " TESSERA_BIN " run -m " MODEL_SH " -z %s", path);
    int rc2 = run_capture(cmd, out, err, sizeof out);
    int ok2 = !strcmp(err, want);
    snprintf(cmd, sizeof cmd, "timeout 20 " TESSERA_BIN " info -m %s", path);
    int rc3 = run_capture(cmd, out, err, sizeof out);
    int ok3 = !strcmp(err, want);
    unlink(path);
    assert_int_equal(rc1, 1);
    assert_true(ok1);
    assert_int_equal(rc2, 1);
    assert_true(ok2);
    assert_int_equal(rc3, 1);
    assert_true(ok3);
}

/* info on a tokenizer.bin says what the file seems to be. */
static void info_on_a_tokenizer_says_so(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " info -m " SH_MODEL("tokenizer.bin"), out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "tokenizer.bin: not a model checkpoint (a llama2.c tokenizer file?"));
    assert_null(strstr(err, "hidden_dim"));
}

/* --pes: the option takes what a spec can say, the help names the
 * emulator's cap, and the device refuses past it (exit 2). */
static void pes_limits_are_coherent(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " run --help", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "1..64 for the\n"));
    assert_non_null(strstr(out, "or GGUF"));
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " --pes 100", out, err,
                                 sizeof out), 2);
    assert_string_equal(err, "tessera: emu: pes=100 outside 1..64 (profile generic)\n");
    assert_int_equal(run_capture(TESSERA_BIN " chat --help", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "1..64 for the\n"));
    assert_non_null(strstr(out, "--ctx N"));
    assert_non_null(strstr(out, "--threads N"));
}

/* The emulator loads no xclbin: saying one is an error, not ignored. */
static void emu_refuses_an_xclbin(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " --xclbin /tmp/k.xclbin", out,
                         err, sizeof out);
    assert_int_equal(rc, 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "xclbin= is for the xrt backend"));
    rc = run_capture(TESSERA_BIN " chat -m " MODEL_SH " -z " TOK_SH " --backend emu:xclbin=/tmp/k.xclbin"
                     " </dev/null", out, err, sizeof out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "xclbin= is for the xrt backend"));
}

static void gguf_info_names_the_format(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " info -m " SH_MODEL("stories260K-f32.gguf"), out, err,
                 sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "format:      GGUF"));
}

static void output_write_error_exits_nonzero(void **state)
{
    (void)state;
    int st = system(TESSERA_BIN " info -m " MODEL_SH " >/dev/full 2>/dev/null");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
}

static void run_prompt_longer_than_context_is_refused(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " --seq-len 8 -t 0"
                 " -p 'Once upon a time there was a little girl named Lily who loved to play'",
                 out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "longer than the context of 8 tokens"));
}

static void run_steps_beyond_context_are_clamped(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " --seq-len 16 -n 100 -t 0"
                 " -p 'Once upon a time'", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "100 steps clamped to the context length 16"));
    /* 16 positions: 4 prompt tokens after BOS plus 12 generated. */
    assert_non_null(strstr(err, "12 tokens generated"));
}

static void run_bad_options_exit_2(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " --weights q5", out, err,
                         sizeof out), 2);
    assert_non_null(strstr(err, "--weights"));
    assert_int_equal(run_capture(TESSERA_BIN " run --bogus", out, err, sizeof out), 2);
    assert_string_equal(err, "tessera: run: unknown option '--bogus' (see tessera run --help)\n");
    /* a model path without -m: named as a value without its option */
    assert_int_equal(run_capture(TESSERA_BIN " info " MODEL_SH, out, err, sizeof out), 2);
    assert_non_null(strstr(err, "info: unexpected argument '"));
    assert_non_null(strstr(err, "values follow their option, as in -m MODEL (see tessera info --help)"));
    assert_int_equal(count_lines(err), 1);
    assert_int_equal(run_capture(TESSERA_BIN " frobnicate", out, err, sizeof out), 2);
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " --backend gpu", out, err,
                         sizeof out), 2);
    assert_non_null(strstr(err, "unknown backend 'gpu'"));
    /* synth: a bad shape or group size is a usage error; an unwritable
     * output a runtime failure */
    assert_int_equal(run_capture(TESSERA_BIN " synth --shape bogus -o /tmp/tsr_cli_synth.bin", out,
                                 err, sizeof out), 2);
    assert_non_null(strstr(err, "bogus: unknown shape"));
    /* names in either case: the shape's and the profile's */
    assert_int_equal(run_capture(TESSERA_BIN " plan --shape STORIES15m --part u55c --profile "
                                 "Stories15M", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "dim 288, hidden 768, 6 layers"));
    assert_int_equal(run_capture(TESSERA_BIN " synth --shape stories260K --q8 --group-size 3 -o "
                                 "/tmp/tsr_cli_synth.bin", out, err, sizeof out), 2);
    assert_int_equal(run_capture(TESSERA_BIN " synth --shape stories260K -o /nonexistent/dir/x.bin",
                                 out, err, sizeof out), 1);
    assert_int_equal(access("/tmp/tsr_cli_synth.bin", F_OK), -1);   /* nothing written */
}

/* -n inside the prompt, as run.c: the prompt's first tokens, nothing
 * generated, and a warning that says why. */
static void run_steps_inside_the_prompt_warn(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 3 -p 'Once upon a time'", out, err, sizeof out), 0);
    assert_string_equal(out, "Once upon a\n");
    assert_non_null(strstr(err, "tessera: warning: -n 3 leaves no position after the prompt's 5 "
                                "tokens (BOS included; -n counts them): no token is generated\n"));
    assert_non_null(strstr(err, "tessera: 0 tokens generated"));
}

/* "--name=value" is "--name value": the same text; a value is never
 * split, so a prompt that looks like one stays the prompt; a flag given
 * a value, and an empty value, are one-line usage errors. */
static void long_options_take_name_equals_value(void **state)
{
    (void)state;
    static char want[1 << 14];
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " --weights f32 -t 0 -n 40 -p 'Once upon a time'",
                                 want, err, sizeof want), 0);
    assert_true(strlen(want) > 16);
    assert_int_equal(run_capture(TESSERA_BIN " run --model=" MODEL_SH " --tokenizer=" TOK_SH
                                 " --weights=f32 --temperature=0 --steps=40 --threads=2"
                                 " --prompt='Once upon a time'", out, err, sizeof out), 0);
    assert_string_equal(out, want);
    /* the value of -p is "--steps=3" itself: 3 is not the step count */
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 30 -p --steps=3", out, err, sizeof out), 0);
    assert_true(strncmp(out, "--steps=3", 9) == 0);
    assert_true(strlen(out) > 9);
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " --stats=1", out,
                                 err, sizeof out), 2);
    assert_string_equal(err, "tessera: option --stats: '1' is not all (--stats or --stats=all)\n");
    assert_int_equal(run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH " --json=1", out,
                                 err, sizeof out), 2);
    assert_string_equal(err, "tessera: bench: option --json takes no value (see tessera bench --help)\n");
    assert_int_equal(run_capture(TESSERA_BIN " bench -m " MODEL_SH " -z " TOK_SH " --threads=", out,
                                 err, sizeof out), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "--threads"));
    assert_int_equal(run_capture(TESSERA_BIN " info --model=" MODEL_SH, out, err, sizeof out), 0);
    assert_non_null(strstr(out, "format:      llama2.c legacy (fp32)"));
}

/* Each line continues the same sequence: the second reply follows the
 * first without re-prefilling it (greedy, so the text is fixed). */
static void chat_continues_one_sequence(void **state)
{
    (void)state;
    int rc = run_capture("printf 'Once upon a time\\nThe dog\\n' | " TESSERA_BIN " chat -m " MODEL_SH
                 " -z " TOK_SH " -n 12 -t 0", out, err, sizeof out);
    assert_int_equal(rc, 0);
    /* "... She" + " The dog" typed -> " was very smart ..." */
    assert_string_equal(out, ", there was a little girl named Lily. She\n"
                             " was very smart and loved to play with\n");
}

/* GGUF carries its tokenizer: chat needs no -z, and takes --ctx and
 * --threads; the Q8_0 GGUF replies as the Q8_0 llama2.c file does. */
static void chat_gguf_without_tokenizer(void **state)
{
    (void)state;
    int rc = run_capture("printf 'Once upon a time\\nThe dog\\n' | " TESSERA_BIN " chat -m " SH_MODEL("stories260K-q8_0.gguf") " -n 12 -t 0 --ctx 512 --threads 2",
                 out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, ", there was a little girl named Lily. She\n"
                             " was very smart and loved to play with\n");
    assert_non_null(strstr(err, "context 512 exceeds the file's llama.context_length 128"));
}

/* A full context starts a new conversation, said once: a reply the
 * context cut says so and the next line starts afresh without a second
 * notice; a line that does not fit after a whole reply says it; a line too
 * long for the context is skipped; the session goes on and exits 0 at end
 * of input.  The reply after the reset is what a fresh session replies. */
static void chat_full_context_starts_over(void **state)
{
    (void)state;
    int rc = run_capture("printf 'Once upon a time\\nThe dog\\nA cat\\n"
                 "Once upon a time there was a little girl named Lily who loved to play "
                 "outside in the park\\nHi\\n' | " TESSERA_BIN " chat -m " MODEL_SH " -z " TOK_SH
                 " -n 6 -t 0 --seq-len 16", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_int_equal(count_lines(out), 4);   /* four replies; the long line had none */
    /* both times the context filled, a reply filled it: one notice each */
    assert_null(strstr(err, "context is full"));
    assert_int_equal(lines_containing(err, "this line is 31 tokens (BOS included), more than the "
                                           "16-token context: skipped"), 1);
    /* the reply the context cut says so */
    assert_int_equal(lines_containing(err, "[the reply reached the end of the 16-token context"), 2);
    const char *l3 = strchr(strchr(out, '\n') + 1, '\n') + 1;   /* third reply */
    char third[256];
    size_t n = (size_t)(strchr(l3, '\n') - l3 + 1);
    assert_true(n < sizeof third);
    memcpy(third, l3, n);
    third[n] = '\0';
    rc = run_capture("printf 'A cat\\n' | " TESSERA_BIN " chat -m " MODEL_SH " -z " TOK_SH
                     " -n 6 -t 0 --ctx 16", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, third);
    assert_null(strstr(err, "full"));
    /* the third line does not fit after two whole replies: said once, as
     * it starts the new conversation */
    rc = run_capture("printf 'Once upon a time\\nThe dog\\nA cat and a dog\\n' | " TESSERA_BIN
                     " chat -m " MODEL_SH " -z " TOK_SH " -n 2 -t 0 --seq-len 16", out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_int_equal(count_lines(out), 3);
    assert_int_equal(lines_containing(err, "the 16-token context is full: starting a new "
                                           "conversation"), 1);
    assert_null(strstr(err, "[the reply reached the end"));
}


/* ------------------------------------------------------- prompt input --- */

/* -p - reads the prompt from stdin and -f FILE from a file (one trailing
 * newline dropped): the same tokens as -p TEXT. */
static void run_prompt_from_stdin_and_file(void **state)
{
    (void)state;
    static char want[1 << 12];
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 30 -p 'Once upon a time'", want, err, sizeof want), 0);
    assert_int_equal(run_capture("printf 'Once upon a time\\n' | " TESSERA_BIN " run -m " MODEL_SH
                                 " -z " TOK_SH " -t 0 -n 30 -p -", out, err, sizeof out), 0);
    assert_string_equal(out, want);
    char path[] = "/tmp/tsr_cli_prompt_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "Once upon a time\n", 17), 17);
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " -t 0 -n 30 -f %s",
             path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, want);
    snprintf(cmd, sizeof cmd, "cat %s | " TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
             " -t 0 -n 30 -f -", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, want);
    /* both, or a file that is not there: usage errors */
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " -p hi -f %s", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 2);
    assert_non_null(strstr(err, "not both"));
    unlink(path);
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -f /nonexistent/prompt.txt", out, err, sizeof out), 2);
    assert_string_equal(err, "tessera: run: cannot open the prompt file /nonexistent/prompt.txt: "
                             "No such file or directory\n");
    /* an endless prompt stops at the bound, not at the memory's end */
    assert_int_equal(run_capture("yes | " TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH " -f -", out,
                                 err, sizeof out), 2);
    assert_string_equal(err, "tessera: run: the prompt from stdin is over 64 MiB, the most "
                             "tessera reads\n");
}

/* A sampled run without -s prints its random seed, and -s with that
 * seed repeats the run; greedy runs and -s runs print none. */
static void run_prints_a_time_based_seed(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 1 -n 40 -p 'Once upon a time'", out, err, sizeof out), 0);
    const char *p = strstr(err, "tessera: seed ");
    assert_non_null(p);
    unsigned long long seed = strtoull(p + 14, NULL, 10);
    assert_true(seed > 0);
    char line[128];
    snprintf(line, sizeof line, "(random; -s %llu repeats this run)", seed);
    assert_non_null(strstr(err, line));
    static char first[sizeof out];
    memcpy(first, out, sizeof out);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
             " -t 1 -n 40 -p 'Once upon a time' -s %llu", seed);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, first);
    assert_null(strstr(err, "seed"));
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 10", out, err, sizeof out), 0);
    assert_null(strstr(err, "seed"));
    /* on a terminal (script(1)'s pseudo-terminal: stdout and stderr as a
     * user sees them, and no preload, so the sanitizer builds run it too)
     * the seed's line comes before the prompt's echo, not inside the text */
    assert_int_equal(run_capture("script -qfec \"" TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 1 -n 40 -p 'Once upon a time'\" /dev/null", out, err,
                                 sizeof out), 0);
    assert_int_equal(strncmp(out, "tessera: seed ", 14), 0);
    assert_non_null(strstr(out, "repeats this run)\r\nOnce upon a time"));
}

/* One token: "1 token generated", not "1 tokens". */
static void run_summary_plural(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 5 -p 'Once upon a time'", out, err, sizeof out), 0);
    assert_non_null(strstr(err, "tessera: 1 token generated, "));
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 6 -p 'Once upon a time'", out, err, sizeof out), 0);
    assert_non_null(strstr(err, "tessera: 2 tokens generated, "));
}

/* Ctrl-C in run stops the decode, prints the summary and exits 130.  The
 * model is a synthetic stories15M shape with a 1024-token context, so the
 * decode outlasts the wait for its first tokens. */
static void run_ctrl_c_prints_summary(void **state)
{
    (void)state;
    char path[] = "/tmp/tsr_cli_int_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, TESSERA_BIN " synth --shape 288x6:hidden=768,heads=6,seq=1024 --q8 -o %s",
             path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    /* start, wait until generated text appears, then SIGINT */
    snprintf(cmd, sizeof cmd,
             "(o=%s.out; : > $o; " TESSERA_BIN " run -m %s -z " SH_MODEL("tokenizer.bin")
             " -p Once -n 1024 --threads 1 > $o & pid=$!; "
             "while [ $(wc -c < $o) -lt 40 ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done; "
             "kill -INT $pid; wait $pid; echo \"exit $?\"; rm -f $o)", path, path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    if (!strstr(out, "exit 130\n") || !strstr(err, "stopped by Ctrl-C"))
        print_error("stdout: %s\nstderr: %s\n", out, err);
    assert_non_null(strstr(out, "exit 130\n"));
    assert_non_null(strstr(err, "generated (stopped by Ctrl-C), "));
    assert_non_null(strstr(err, "time to first token"));
    unlink(path);
}

/* llama.cpp's option names are aliases where they mean the same: the
 * same tokens as tessera's own names, sampled with a fixed seed. */
static void llama_cpp_aliases_give_the_same_tokens(void **state)
{
    (void)state;
    static char want[1 << 14];
    assert_int_equal(run_capture(TESSERA_BIN " run --model " MODEL_SH " --tokenizer " TOK_SH
                                 " --temperature 0.7 --top-p 0.8 --seed 7 --ctx 64 --steps 40"
                                 " --threads 2 --prompt 'Once upon a time'", want, err, sizeof want), 0);
    assert_true(strlen(want) > 30);
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " --temp 0.7 --top-p 0.8 -s 7 -c 64 -n 40 --threads 2"
                                 " -p 'Once upon a time'", out, err, sizeof out), 0);
    assert_string_equal(out, want);
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " --temp=0.7 --top-p=0.8 --seed=7 --ctx-size=64 --steps=40"
                                 " --prompt='Once upon a time'", out, err, sizeof out), 0);
    assert_string_equal(out, want);
    /* --n-predict counts generated tokens, as llama.cpp's -n: "Once upon a
     * time" is 4 tokens after BOS, so -n 40 leaves 36 to generate */
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " --temp 0.7 --top-p 0.8 -s 7 -c 64 --n-predict 36"
                                 " -p 'Once upon a time'", out, err, sizeof out), 0);
    assert_string_equal(out, want);
    assert_non_null(strstr(err, "tessera: 36 tokens generated"));
    /* ... clamped to what the context leaves, with the limit named */
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -c 16 --n-predict 100 -p 'Once upon a time'", out, err,
                                 sizeof out), 0);
    assert_non_null(strstr(err, "tessera: warning: --n-predict 100 clamped to 12: the context "
                                "length 16 less the prompt's 4 tokens (--ctx N sets it)\n"));
    assert_non_null(strstr(err, "tessera: 12 tokens generated"));
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -n 10 --n-predict 10", out, err, sizeof out), 2);
    assert_int_equal(count_lines(err), 1);
    /* chat: --n-predict is its -n (tokens per reply) */
    static char chat[1 << 14];
    assert_int_equal(run_capture("printf 'Once upon a time\\n' | " TESSERA_BIN " chat -m " MODEL_SH
                                 " -z " TOK_SH " -n 12 -t 0", chat, err, sizeof chat), 0);
    assert_int_equal(run_capture("printf 'Once upon a time\\n' | " TESSERA_BIN " chat -m " MODEL_SH
                                 " -z " TOK_SH " --n-predict 12 --temp 0", out, err, sizeof out), 0);
    assert_string_equal(out, chat);
}

/* An unknown option names the nearest one of the command, and exits 2;
 * one far from every name gets no guess. */
static void unknown_option_did_you_mean(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " --temprature 0", out, err,
                                 sizeof out), 2);
    assert_string_equal(err, "tessera: run: unknown option '--temprature'; did you mean "
                             "'--temperature'? (see tessera run --help)\n");
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " --ctx-szie 8", out, err,
                                 sizeof out), 2);
    assert_string_equal(err, "tessera: run: unknown option '--ctx-szie'; did you mean "
                             "'--ctx-size'? (see tessera run --help)\n");
    assert_int_equal(run_capture(TESSERA_BIN " serve -m " MODEL_SH " --slost 2", out, err,
                                 sizeof out), 2);
    assert_string_equal(err, "tessera: serve: unknown option '--slost'; did you mean "
                             "'--slots'? (see tessera serve --help)\n");
    /* bench takes no sampler: --temp is no option of it, and no name is near */
    assert_int_equal(run_capture(TESSERA_BIN " bench -m " MODEL_SH " --temp 0", out, err,
                                 sizeof out), 2);
    assert_string_equal(err, "tessera: bench: unknown option '--temp' (see tessera bench --help)\n");
}

/* An unknown command names the nearest command the way an unknown option
 * does, for `tessera X` and `tessera help X`, and exits 2; a word far from
 * every command gets the list alone. */
static void unknown_command_did_you_mean(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " runn", out, err, sizeof out), 2);
    assert_string_equal(err, "tessera: unknown command 'runn'; did you mean 'run'? (valid: run, "
                             "chat, serve, info, synth, bench, plan, help)\n");
    assert_int_equal(run_capture(TESSERA_BIN " help plna", out, err, sizeof out), 2);
    assert_string_equal(err, "tessera: help: unknown command 'plna'; did you mean 'plan'? (valid: "
                             "run, chat, serve, info, synth, bench, plan)\n");
    assert_int_equal(run_capture(TESSERA_BIN " generate", out, err, sizeof out), 2);
    assert_string_equal(err, "tessera: unknown command 'generate' (valid: run, chat, serve, info, "
                             "synth, bench, plan, help)\n");
    assert_int_equal(run_capture(TESSERA_BIN " help synth", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "usage: tessera synth"));
}

/* Every command's help is made from the one table: each names -h and the
 * options it takes, and lists the aliases. */
static void help_comes_from_the_table(void **state)
{
    (void)state;
    const char *cmds[] = { "run", "chat", "bench", "plan", "serve", "info", "synth" };
    for (int i = 0; i < 7; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, TESSERA_BIN " %s --help", cmds[i]);
        assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
        assert_non_null(strstr(out, "  -h, --help            this text\n"));
        assert_string_equal(err, "");
    }
    assert_int_equal(run_capture(TESSERA_BIN " run --help", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "  -t, --temperature T   0 = greedy (default 0.8, as llama.cpp)\n"
                                "                        (also --temp)\n"));
    assert_non_null(strstr(out, "  -c, --ctx N           context length"));
    assert_non_null(strstr(out, "(also --ctx-size, --seq-len, --seq)"));
    assert_int_equal(run_capture(TESSERA_BIN " info --help", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "  -z, --tokenizer FILE"));
    assert_null(strstr(out, "--temperature"));
}

/* --stats is a short table; --stats=all adds every counter. */
static void stats_is_a_short_table(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 20 --stats", out, err, sizeof out), 0);
    assert_non_null(strstr(err, "\n  tokens                           1             20\n"));
    assert_non_null(strstr(err, "  device cycles/token          16280 (the last, position 19: "));
    assert_non_null(strstr(err, "  on chip             weights Q8_0 group 32; KV cache f32, "
                                "655360 bytes\n"));
    assert_null(strstr(err, "kernel counters:"));
    assert_true(count_lines(err) <= 12);
    static char all[1 << 16];
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -t 0 -n 20 --stats=all", out, all, sizeof all), 0);
    assert_non_null(strstr(all, "kernel counters:\n"));
    assert_non_null(strstr(all, "\ncycles.total 16280\n"));
    assert_non_null(strstr(all, "\npe15.sram_bytes "));
    assert_true(count_lines(all) > 60);
}

/* A vocabulary that adds no BOS (Qwen2): run echoes the whole prompt, its
 * first token too (before, it was taken for a BOS and dropped); -n counts
 * positions as with a BOS (4 of the prompt's, then 5 generated for -n 8,
 * the last sampled at position 7); --n-predict counts the generated
 * ones. */
static void prompt_without_bos_is_echoed_whole(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/tsr_cli_qwen2_%d.gguf", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, TESSERA_BIN " synth --arch qwen2 --vocab \"$TSR_SHARED/vocab/"
             "ggml-vocab-qwen2.gguf\" --shape qwen2-tiny -o %s", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m %s -p \"Hello world, how\" -n 8 -t 0", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_true(!strncmp(out, "Hello world, how", 16));
    assert_non_null(strstr(err, "tessera: 5 tokens generated"));
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m %s -p \"Hello world, how\" --n-predict 3 -t 0",
             path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_true(!strncmp(out, "Hello world, how", 16));
    assert_non_null(strstr(err, "tessera: 3 tokens generated"));
    /* no prompt and no BOS: nothing to start from, said as such */
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m %s -n 5 -t 0", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 1);
    assert_non_null(strstr(err, "the prompt is empty and this model's vocabulary adds no BOS"));
    unlink(path);
}

/* One sampling rule: without -t and -s, run and chat sample at 0.8 with
 * a random seed they print; -t 0.8 -s SEED repeats the text. */
static void default_temperature_and_seed(void **state)
{
    (void)state;
    static char first[sizeof out];
    char cmd[1024];
    assert_int_equal(run_capture(TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
                                 " -n 60 -p 'Once upon a time'", first, err, sizeof first), 0);
    const char *p = strstr(err, "tessera: seed ");
    assert_non_null(p);
    unsigned long long seed = strtoull(p + 14, NULL, 10);
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
             " -n 60 -p 'Once upon a time' -t 0.8 -s %llu", seed);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, first);
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " MODEL_SH " -z " TOK_SH
             " -n 60 -p 'Once upon a time' -t 1 -s %llu", seed);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_not_equal(out, first);   /* 1.0, the old default, is another text */
    /* chat: the same rule, one seed a session */
    assert_int_equal(run_capture("printf 'Once upon a time\\n' | " TESSERA_BIN " chat -m " MODEL_SH
                                 " -z " TOK_SH " -n 40", first, err, sizeof first), 0);
    assert_non_null(p = strstr(err, "tessera: seed "));
    seed = strtoull(p + 14, NULL, 10);
    assert_non_null(strstr(err, "(random; -s "));
    snprintf(cmd, sizeof cmd, "printf 'Once upon a time\\n' | " TESSERA_BIN " chat -m " MODEL_SH
             " -z " TOK_SH " -n 40 -t 0.8 -s %llu", seed);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, first);
    assert_null(strstr(err, "seed"));
}

/* ---------------------------------------------------------------- help --- */

/* One option name and one list of parts in every command's help. */
static void help_is_consistent(void **state)
{
    (void)state;
    const char *cmds[] = { "run", "chat", "bench", "plan", "serve" };
    for (int i = 0; i < 5; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, TESSERA_BIN " %s --help", cmds[i]);
        assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
        assert_non_null(strstr(out, "--ctx N"));
        assert_non_null(strstr(out, "u55c, u280, u250, u200, vu9p, v80, vck5000"));
    }
    /* plan's old --seq stays an alias of --ctx, and --seq-len is one as
     * in the other commands */
    static char a[1 << 14];
    assert_int_equal(run_capture(TESSERA_BIN " plan -m " MODEL_SH " --part u55c --ctx 128", a, err,
                                 sizeof a), 0);
    assert_int_equal(run_capture(TESSERA_BIN " plan -m " MODEL_SH " --part u55c --seq 128", out,
                                 err, sizeof out), 0);
    assert_string_equal(out, a);
    assert_int_equal(run_capture(TESSERA_BIN " plan -m " MODEL_SH " --part u55c --seq-len 128", out,
                                 err, sizeof out), 0);
    assert_string_equal(out, a);
    /* --cols and --kv-split: powers of two, refused as options (before
     * any candidate mesh's message could name PEs nobody gave) */
    assert_int_equal(run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --cols 3", out,
                                 err, sizeof out), 2);
    assert_non_null(strstr(err, "option --cols: 3 is not a power of two"));
    assert_int_equal(run_capture(TESSERA_BIN " plan --shape stories15M --part u55c --kv-split 6",
                                 out, err, sizeof out), 2);
    assert_non_null(strstr(err, "option --kv-split: 6 is not a power of two"));
}

/* ---------------------------------------------------------------- chat --- */

/* /stats and /reset are commands: /reset empties the sequence, so the
 * reply after it is a fresh session's; an unknown /word is refused, not
 * sent to the model. */
static void chat_commands(void **state)
{
    (void)state;
    static char fresh[1 << 12];
    assert_int_equal(run_capture("printf 'The dog\\n' | " TESSERA_BIN " chat -m " MODEL_SH " -z "
                                 TOK_SH " -n 8 -t 0", fresh, err, sizeof fresh), 0);
    assert_int_equal(run_capture("printf 'Once upon a time\\n/stats\\n/bogus\\n/reset\\nThe dog\\n/quit\\nA\\n' | "
                                 TESSERA_BIN " chat -m " MODEL_SH " -z " TOK_SH " -n 8 -t 0",
                                 out, err, sizeof out), 0);
    const char *second = strchr(out, '\n') + 1;
    assert_string_equal(second, fresh);     /* and /quit ended it before "A" */
    assert_non_null(strstr(err, "tessera: 13 tokens of the 512-token context in use; 1 reply so "
                                "far: 5 prompt tokens, 8 generated"));
    assert_non_null(strstr(err, "tessera: a new conversation"));
    assert_non_null(strstr(err, "tessera: unknown command /bogus (/help lists them)\n"));
}

/* Run chat on a pseudo-terminal: keys go through libedit.  Returns what
 * the terminal showed (escapes included) in buf. */
static void chat_on_a_terminal(const char *keys[], int n_keys, char *buf, size_t cap, int *status)
{
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(TESSERA_BIN, "tessera", "chat", "-m", MODEL, "-z", TOK, "-n", "8", "-t", "0",
              (char *)NULL);
        _exit(127);
    }
    size_t len = 0;
    for (int k = 0; k <= n_keys; k++) {
        /* read until the terminal is quiet for 300 ms (the reply is done) */
        for (;;) {
            struct pollfd pf = { master, POLLIN, 0 };
            if (poll(&pf, 1, 300) <= 0) break;
            ssize_t r = read(master, buf + len, cap - 1 - len);
            if (r <= 0) break;
            len += (size_t)r;
        }
        if (k < n_keys) assert_int_equal(write(master, keys[k], strlen(keys[k])),
                                         (ssize_t)strlen(keys[k]));
    }
    buf[len] = '\0';
    assert_int_equal(waitpid(pid, status, 0), pid);
    close(master);
}

/* On a terminal, arrow keys edit the line (they used to reach the model as
 * ^[[D), the history recalls it, Ctrl-C drops a half-typed line, and Ctrl-D
 * ends with a newline and exit 0. */
static void chat_line_editing(void **state)
{
    (void)state;
    /* "Ht" left-arrow "e" -> "Het"... typed as H, e, y, left, left, " " gives "H ey" */
    const char *keys[] = { "Hey", "\x1b[D\x1b[D ", "\r", "junk\x03", "\x1b[A\x15/stats\r",
                           "\x04" };
    static char screen[1 << 16];
    int status = 0;
    chat_on_a_terminal(keys, 6, screen, sizeof screen, &status);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_null(strstr(screen, "^[[D"));
    /* the model saw "H ey": the same reply as a pipe gives for that line */
    assert_int_equal(run_capture("printf 'H ey\\n/stats\\n' | " TESSERA_BIN " chat -m " MODEL_SH
                                 " -z " TOK_SH " -n 8 -t 0", out, err, sizeof out), 0);
    out[strcspn(out, "\n")] = '\0';
    assert_true(strlen(out) > 0);
    assert_non_null(strstr(screen, out));
    const char *st = strstr(err, "tessera: ");
    assert_non_null(st);
    char want[128];
    snprintf(want, sizeof want, "%.*s", (int)strcspn(st, ";"), st);
    assert_non_null(strstr(screen, want));                  /* same token counts */
    size_t n = strlen(screen);
    assert_true(n >= 2 && screen[n - 2] == '\r' && screen[n - 1] == '\n');   /* Ctrl-D */
}

/* info -z: a llama2.c model's tokenizer checked against its vocab (one
 * line), a wrong one refused in one line naming both counts; a GGUF file's
 * -z is said to be unused. */
static void info_takes_a_tokenizer(void **state)
{
    (void)state;
    assert_int_equal(run_capture(TESSERA_BIN " info -m " MODEL_SH " -z " TOK_SH, out, err,
                                 sizeof out), 0);
    assert_non_null(strstr(out, "\ntokenizer:   "));
    assert_non_null(strstr(out, "tok512.bin, 512 tokens: the model's vocab\n"));
    assert_int_equal(run_capture(TESSERA_BIN " info -m " MODEL_SH " -z " SH_MODEL("tokenizer.bin"),
                                 out, err, sizeof out), 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "holds 32000 tokens, the model's vocab_size is 512"));
    assert_string_equal(out, "");
    assert_int_equal(run_capture(TESSERA_BIN " info -m " MODEL_SH " -z " MODEL_SH, out, err,
                                 sizeof out), 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "not a llama2.c tokenizer.bin"));
    assert_int_equal(run_capture(TESSERA_BIN " info -m " SH_MODEL("stories260K-q8_0.gguf") " -z "
                                 TOK_SH, out, err, sizeof out), 0);
    assert_non_null(strstr(out, "not used: a GGUF file carries its own"));
}

static void info_reports_header_and_params(void **state)
{
    (void)state;
    int rc = run_capture(TESSERA_BIN " info -m " MODEL_SH, out, err, sizeof out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "dim:         64\n"));
    assert_non_null(strstr(out, "n_kv_heads:  4 (GQA)\n"));
    assert_non_null(strstr(out, "parameters:  260032 "));
    assert_non_null(strstr(out, "ffn"));
}

static void synth_writes_a_model_info_reads(void **state)
{
    (void)state;
    char path[] = "/tmp/tsr_cli_synth_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, TESSERA_BIN " synth --shape 128x2:vocab=512 --q8 -o %s", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    snprintf(cmd, sizeof cmd, TESSERA_BIN " info -m %s", path);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_non_null(strstr(out, "llama2.c v2 (Q8_0), group size 32"));
    assert_non_null(strstr(out, "dim:         128\n"));
    /* to a pipe: the same bytes, exit 0 (a pipe is not read back) */
    static char piped[1 << 16];
    snprintf(cmd, sizeof cmd, "({ " TESSERA_BIN " synth --shape 128x2:vocab=512 --q8 -o /dev/stdout; "
             "echo rc=$? >&2; } | cmp - %s && echo same)", path);
    assert_int_equal(run_capture(cmd, piped, err, sizeof piped), 0);
    assert_string_equal(piped, "same\n");
    assert_non_null(strstr(err, "rc=0\n"));
    assert_non_null(strstr(err, "not a regular file: not read back"));
    /* to a symbolic link: through it, and it stays a link (a rename over
     * it replaced the link: as root, -o /dev/stdout > file replaced
     * /dev/stdout itself) */
    snprintf(cmd, sizeof cmd, "(ln -s %s.out %s.lnk && " TESSERA_BIN " synth --shape "
             "128x2:vocab=512 --q8 -o %s.lnk && test -L %s.lnk && cmp %s.out %s && echo same; "
             "rm -f %s.out %s.lnk)", path, path, path, path, path, path, path, path);
    assert_int_equal(run_capture(cmd, piped, err, sizeof piped), 0);
    assert_string_equal(piped, "same\n");
    unlink(path);
    /* a full disk stops the writer at once: a 7B-sized shape fails in
     * well under the 60 s the timeout allows (its weights took minutes) */
    assert_int_equal(run_capture("timeout 60 " TESSERA_BIN " synth --shape 4096x32 -o /dev/full",
                                 out, err, sizeof out), 1);
    assert_non_null(strstr(err, "/dev/full: write failed: No space left on device"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_prints_reference_text),
        cmocka_unit_test(run_missing_model_is_one_line_error),
        cmocka_unit_test(run_mismatched_tokenizer_is_refused),
        cmocka_unit_test(run_directory_tokenizer_is_refused),
        cmocka_unit_test(run_directory_model_is_refused_cleanly),
        cmocka_unit_test(fifo_model_or_tokenizer_is_refused),
        cmocka_unit_test(info_on_a_tokenizer_says_so),
        cmocka_unit_test(pes_limits_are_coherent),
        cmocka_unit_test(emu_refuses_an_xclbin),
        cmocka_unit_test(gguf_info_names_the_format),
        cmocka_unit_test(output_write_error_exits_nonzero),
        cmocka_unit_test(run_prompt_longer_than_context_is_refused),
        cmocka_unit_test(run_steps_beyond_context_are_clamped),
        cmocka_unit_test(run_bad_options_exit_2),
        cmocka_unit_test(long_options_take_name_equals_value),
        cmocka_unit_test(run_steps_inside_the_prompt_warn),
        cmocka_unit_test(chat_continues_one_sequence),
        cmocka_unit_test(chat_gguf_without_tokenizer),
        cmocka_unit_test(chat_full_context_starts_over),
        cmocka_unit_test(run_prompt_from_stdin_and_file),
        cmocka_unit_test(run_prints_a_time_based_seed),
        cmocka_unit_test(run_summary_plural),
        cmocka_unit_test(run_ctrl_c_prints_summary),
        cmocka_unit_test(help_is_consistent),
        cmocka_unit_test(llama_cpp_aliases_give_the_same_tokens),
        cmocka_unit_test(unknown_option_did_you_mean),
        cmocka_unit_test(unknown_command_did_you_mean),
        cmocka_unit_test(help_comes_from_the_table),
        cmocka_unit_test(stats_is_a_short_table),
        cmocka_unit_test(default_temperature_and_seed),
        cmocka_unit_test(prompt_without_bos_is_echoed_whole),
        cmocka_unit_test(chat_commands),
        cmocka_unit_test(chat_line_editing),
        cmocka_unit_test(info_reports_header_and_params),
        cmocka_unit_test(info_takes_a_tokenizer),
        cmocka_unit_test(synth_writes_a_model_info_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
