/*
 * test_plan_golden.c - `tessera plan` prints the same bytes as before, for
 * the shapes, parts and profiles the docs and tests use: each command's
 * stdout, stderr and exit status hashed (XXH64) against
 * tests/fixtures/plan_golden.txt, one line a command ("hash  arguments").
 *
 *   matrix     shapes (stories15M, 42M, 110M, llama3.2-1b, the 260K shape)
 *              x parts (u55c, u280, u250, vu9p, v80: one the table cannot
 *              decide) x profiles (none, generic, stories260k, stories15m)
 *              x text / JSON over two cards
 *
 * A change meant to alter plan's output rewrites the fixture:
 *   TSR_PLAN_GOLDEN_WRITE=1 build/tests/test_plan_golden
 * (TSR_PLAN_GOLDEN_BIN=path runs another tessera, e.g. main's, to write
 * the fixture a refactoring must keep.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "run_capture.h"
#include "test_util.h"

#define FIXTURE TSR_SOURCE_DIR "/tests/fixtures/plan_golden.txt"

static const char *const SHAPES[] = { "stories15M", "stories42M", "stories110M", "llama3.2-1b",
                                      "64x5:hidden=172,heads=8,kv=4,vocab=512,seq=512" };
static const char *const PARTS[] = { "u55c", "u280", "u250", "vu9p", "v80" };
static const char *const PROFILES[] = { "", " --profile generic", " --profile stories260k",
                                        " --profile stories15m" };
static const char *const OPTS[] = { "", " --cards 2 --json" };

#define N_OF(a) (sizeof a / sizeof a[0])

/* The hash of a command's stdout, stderr and exit status. */
static uint64_t plan_hash(const char *bin, const char *args)
{
    static char out[1 << 16], err[1 << 16];
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s plan %s", bin, args);
    int rc = run_capture(cmd, out, err, sizeof out);
    XXH64_state_t *h = XXH64_createState();
    assert_non_null(h);
    XXH64_reset(h, 0);
    XXH64_update(h, out, strlen(out));
    XXH64_update(h, "\0", 1);
    XXH64_update(h, err, strlen(err));
    XXH64_update(h, &rc, sizeof rc);
    uint64_t v = XXH64_digest(h);
    XXH64_freeState(h);
    return v;
}

static void plan_output_unchanged(void **state)
{
    (void)state;
    const char *bin = getenv("TSR_PLAN_GOLDEN_BIN") ? getenv("TSR_PLAN_GOLDEN_BIN") : TESSERA_BIN;
    int write = getenv("TSR_PLAN_GOLDEN_WRITE") != NULL;
    FILE *f = fopen(FIXTURE, write ? "w" : "r");
    assert_non_null(f);
    int n = 0, bad = 0;
    for (size_t s = 0; s < N_OF(SHAPES); s++)
        for (size_t p = 0; p < N_OF(PARTS); p++)
            for (size_t q = 0; q < N_OF(PROFILES); q++)
                for (size_t o = 0; o < N_OF(OPTS); o++) {
                    char args[256], line[512], want[300];
                    snprintf(args, sizeof args, "--shape %s --part %s%s%s", SHAPES[s], PARTS[p],
                             PROFILES[q], OPTS[o]);
                    uint64_t h = plan_hash(bin, args);
                    snprintf(line, sizeof line, "%016llx  %s\n", (unsigned long long)h, args);
                    n++;
                    if (write) {
                        fputs(line, f);
                        continue;
                    }
                    if (!fgets(want, sizeof want, f)) fail_msg("%s: ends before '%s'", FIXTURE, args);
                    if (strcmp(want, line)) {
                        print_error("plan output differs: tessera plan %s\n  want %s  got  %s",
                                    args, want, line);
                        bad++;
                    }
                }
    if (!write) {
        char extra[300];
        assert_null(fgets(extra, sizeof extra, f));   /* no command left over */
    }
    fclose(f);
    print_message("%d plan commands%s\n", n, write ? ", fixture written" : "");
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_output_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
