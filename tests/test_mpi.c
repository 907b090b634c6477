/*
 * test_mpi.c - a model split over MPI ranks (driver/backend_mpi.c), with
 * the MPI=1 build beside this one (TSR_MPI_BIN, `make test` builds it):
 * stories260K over mpirun -np 2 and -np 4 prints the single-device text
 * bit for bit (greedy and seeded; F32, the llama2.c file as Q8_0 and the
 * Q8_0 GGUF); killing a stage's rank mid-generation ends the job with an
 * error in under 10 s, and so does stopping it (rank 0's own stall bound);
 * tessera serve under mpirun -np 2 answers curl with tessera run's text
 * and ends every rank on SIGTERM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_capture.h"
#include "serve_proc.h"
#include "test_util.h"

#ifndef TSR_MPI_BIN
#define TSR_MPI_BIN TSR_BUILD_DIR "-mpi/tessera"
#endif
#define MPIRUN "timeout 120 mpirun --allow-run-as-root --oversubscribe "
#define MODEL  SH_MODEL("stories260K.bin")
#define TOK    SH_MODEL("tok512.bin")
#define GGUF   SH_MODEL("stories260K-q8_0.gguf")

static char out[1 << 16], ref[1 << 16], err[1 << 16], cmd[8192];

/* the text of one device and of np ranks, for one model and sampler */
static void same_text(const char *model_args, const char *sampler)
{
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run %s -p 'Once upon a time' -n 120 %s", model_args,
             sampler);
    assert_int_equal(run_capture(cmd, ref, err, sizeof ref), 0);
    assert_true(strlen(ref) > 100);
    for (int np = 2; np <= 4; np += 2) {
        snprintf(cmd, sizeof cmd, MPIRUN "-np %d " TSR_MPI_BIN " run --cards %d %s "
                 "-p 'Once upon a time' -n 120 %s", np, np, model_args, sampler);
        int rc = run_capture(cmd, out, err, sizeof out);
        if (rc != 0 || strcmp(out, ref)) print_message("%s\n--- %s\n--- %s\n", cmd, out, err);
        assert_int_equal(rc, 0);
        assert_string_equal(out, ref);
    }
}

static void f32_greedy_and_seeded(void **state)
{
    (void)state;
    same_text("-m " MODEL " -z " TOK " --weights f32", "-t 0");
    same_text("-m " MODEL " -z " TOK " --weights f32", "-t 1.0 -s 42");
}

static void q8_greedy_and_seeded(void **state)
{
    (void)state;
    same_text("-m " MODEL " -z " TOK, "-t 0");   /* the fp32 file goes on chip as Q8_0 */
    same_text("-m " MODEL " -z " TOK, "-t 1.0 -s 42");
    same_text("-m " GGUF " --ctx 512", "-t 0");
    same_text("-m " GGUF " --ctx 512", "-t 1.0 -s 7");
}

/* a model that decodes for seconds under mpirun -np 2 (4095 tokens) */
static const char *long_model(void)
{
    static char path[256];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/tsr_mpi_long_%d.bin", (int)getpid());
        snprintf(cmd, sizeof cmd, TESSERA_BIN " synth --shape "
                 "'288x6:hidden=768,heads=6,vocab=512,seq=4096' --q8 -o %s", path);
        assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    }
    return path;
}

static int field(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? atoi(p + strlen(key)) : -1;
}

static void kill_rank(const char *sig, int rank, const char *want)
{
    snprintf(cmd, sizeof cmd, "sh " TSR_SOURCE_DIR "/tests/mpi_kill.sh " TSR_MPI_BIN " %s " TOK
             " %s %d", long_model(), sig, rank);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    int rc = field(out, "rc="), ms = field(out, "elapsed_ms=");
    print_message("SIG%s to rank %d: mpirun exit %d after %d ms\n", sig, rank, rc, ms);
    if (rc == 0 || ms >= 10000 || !strstr(err, want)) print_message("%s\n%s\n", out, err);
    assert_true(rc != 0 && rc != 124);   /* an error, not the timeout's */
    assert_true(ms >= 0 && ms < 10000);
    assert_true(field(out, "tokens_bytes=") > 0);   /* killed mid-generation */
    assert_non_null(strstr(err, want));
}

static void killed_rank_ends_the_job(void **state)
{
    (void)state;
    kill_rank("KILL", 1, "rank 1");   /* mpirun: "process rank 1 ... exited on signal 9" */
    kill_rank("KILL", 0, "rank 0");
}

static void stopped_rank_is_a_stalled_link(void **state)
{
    (void)state;
    kill_rank("STOP", 1, "rank 1 has not answered");
}

static void serve_on_two_ranks(void **state)
{
    (void)state;
    serve_proc p;
    assert_int_equal(serve_start(&p, "mpirun --allow-run-as-root --oversubscribe -np 2 " TSR_MPI_BIN,
                                 "--cards 2 -m " MODEL " -z " TOK), 0);
    snprintf(cmd, sizeof cmd, TESSERA_BIN " run -m " MODEL " -z " TOK " -t 0 -n 25 "
             "-p 'Once upon a time'");
    assert_int_equal(run_capture(cmd, ref, err, sizeof ref), 0);
    snprintf(cmd, sizeof cmd, "curl -s -m 60 %s/v1/completions -H 'Content-Type: application/json' "
             "-d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 20, \"temperature\": 0}'",
             p.url);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    const char *t = strstr(out, "\"text\":\"");
    assert_non_null(t);
    t += 8;
    size_t n = strcspn(t, "\"");
    assert_true(n > 20);
    assert_memory_equal(t, ref + strlen("Once upon a time"), n);
    /* SIGTERM to mpirun: every rank ends (mpirun exits 1 after a signal) */
    int st = serve_stop(&p);
    unlink(p.errpath);
    assert_true(st >= 0);   /* ended by itself within 30 s, not killed */
    snprintf(cmd, sizeof cmd, "pgrep -f '" TSR_MPI_BIN "[ ]serve'");
    assert_int_not_equal(run_capture(cmd, out, err, sizeof out), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_greedy_and_seeded),
        cmocka_unit_test(q8_greedy_and_seeded),
        cmocka_unit_test(killed_rank_ends_the_job),
        cmocka_unit_test(stopped_rank_is_a_stalled_link),
        cmocka_unit_test(serve_on_two_ranks),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char path[256];
    snprintf(path, sizeof path, "/tmp/tsr_mpi_long_%d.bin", (int)getpid());
    unlink(path);
    return rc;
}
