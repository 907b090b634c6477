/*
 * test_lint_hls.c - hw/lint_hls.sh on fixture kernels (never on kernels/,
 * which changes under us): it must pass a good kernel and name every broken
 * rule in bad ones.
 *
 * Sections: helpers (run the script, temp kernel dirs), fixtures, rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_capture.h"
#include "test_util.h"

#ifndef TSR_SOURCE_DIR
#define TSR_SOURCE_DIR "."
#endif

#define LINT      TSR_SOURCE_DIR "/hw/lint_hls.sh"
#define FIXTURES  TSR_SOURCE_DIR "/tests/fixtures"

/* ----------------------------------------------------------- helpers ---- */

/* Run `sh hw/lint_hls.sh dir`; returns its exit status and its output
 * (stdout + stderr, malloc'd, NUL-terminated) in *out. */
static int run_lint(const char *dir, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sh '%s' '%s' 2>&1", LINT, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    buf[n] = 0;
    int st = pclose(p);
    assert_true(WIFEXITED(st));
    *out = buf;
    return WEXITSTATUS(st);
}

/* A temp directory of kernel files: make_dir() then add_file() per file. */
static void make_dir(char *dir)
{
    strcpy(dir, "/tmp/tsr_lint_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void add_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void remove_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Lint a one-or-two-file temp kernel set; returns the status, output in *out. */
static int lint_sources(const char *n1, const char *t1, const char *n2, const char *t2,
                        char **out)
{
    char dir[64];
    make_dir(dir);
    add_file(dir, n1, t1);
    if (n2) add_file(dir, n2, t2);
    int rc = run_lint(dir, out);
    remove_dir(dir);
    return rc;
}

/* ----------------------------------------------------------- fixtures --- */

static void test_good_kernel_passes(void **state)
{
    (void)state;
    char *out;
    int rc = run_lint(FIXTURES "/good_kernel", &out);
    if (rc) fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "lint-hls: 2 files OK\n");
    free(out);
}

static void test_bad_kernel_fails(void **state)
{
    (void)state;
    char *out;
    int rc = run_lint(FIXTURES "/bad_kernel", &out);
    assert_int_not_equal(rc, 0);
    assert_int_equal(lines_containing(out, "bad_kernel.c: undefined symbol malloc"), 1);
    assert_int_equal(lines_containing(out, "bad_kernel.c: undefined symbol free"), 1);
    assert_int_equal(lines_containing(out, "lint-hls: recursion: "), 1);
    assert_int_equal(lines_containing(out, "bad_kernel.c:sum_tree -> "), 1);
    assert_null(strstr(out, "files OK"));
    // nothing else: the fixture is otherwise clean C
    assert_int_equal(lines_containing(out, "lint-hls: "), 4);
    assert_int_equal(lines_containing(out, "lint-hls: 3 problem(s) in 1 files"), 1);
    free(out);
}

/* ------------------------------------------------------------- rules ---- */

static void test_mutual_recursion_across_files(void **state)
{
    (void)state;
    char *out;
    int rc = lint_sources("ping.c", "int pong(int x);\nint ping(int x) { return x ? pong(x - 1) : 0; }\n",
                          "pong.c", "int ping(int x);\nint pong(int x) { return x ? ping(x - 1) : 1; }\n",
                          &out);
    assert_int_equal(rc, 1);
    // the cycle is named, starting wherever the search met it
    assert_true(strstr(out, "lint-hls: recursion: ping -> pong -> ping\n") ||
                strstr(out, "lint-hls: recursion: pong -> ping -> pong\n"));
    // each defines what the other needs: no undefined symbol
    assert_null(strstr(out, "undefined symbol"));
    free(out);
}

static void test_function_pointer(void **state)
{
    (void)state;
    char *out;
    int rc = lint_sources("fp.c",
                          "typedef float (*op)(float);\n"
                          "float apply(op f, float x) { return f(x); }\n",
                          NULL, NULL, &out);
    assert_int_equal(rc, 1);
    assert_int_equal(lines_containing(out, "fp.c:2:37: indirect call (function pointer) in apply"), 1);
    free(out);
}

static void test_vla_and_compile_errors(void **state)
{
    (void)state;
    char *out;
    int rc = lint_sources("vla.c", "void g(int n, float *y) { float v[n]; v[0] = 1; y[0] = v[0]; }\n",
                          NULL, NULL, &out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "-Werror=vla"));
    assert_int_equal(lines_containing(out, "vla.c: does not compile as freestanding C99"), 1);
    free(out);

    // an unused variable is a warning, so an error
    rc = lint_sources("warn.c", "int h(int n) { int unused; return n; }\n", NULL, NULL, &out);
    assert_int_equal(rc, 1);
    assert_int_equal(lines_containing(out, "warn.c: does not compile"), 1);
    free(out);
}

static void test_alloca_and_io(void **state)
{
    (void)state;
    char *out;
    int rc = lint_sources("stack.c",
                          "#include <alloca.h>\n"
                          "void h(int n, char *y) { char *p = alloca(n); p[0] = 0; y[0] = p[0]; }\n",
                          "io.c",
                          "#include <stdio.h>\n"
                          "void say(float x) { printf(\"%f\\n\", x); }\n",
                          &out);
    assert_int_equal(rc, 1);
    assert_int_equal(lines_containing(out, "stack.c: unbounded stack frame (alloca) in h"), 1);
    assert_int_equal(lines_containing(out, "io.c: undefined symbol printf"), 1);
    free(out);
}

static void test_allowlist_and_pragmas(void **state)
{
    (void)state;
    char *out;
    // every allowed call, HLS pragmas, labels, __SYNTHESIS__-only debug code
    int rc = lint_sources("ok.c",
                          "#include <math.h>\n"
                          "#include <string.h>\n"
                          "#ifndef __SYNTHESIS__\n#include <stdio.h>\n#endif\n"
                          "void k(float *x, double *d, int n) {\n"
                          "    float t[8];\n"
                          "    memset(t, 0, sizeof t);\n"
                          "    memcpy(t, x, sizeof t);\n"
                          "loop:\n"
                          "    for (int i = 0; i < n; i++) {\n"
                          "#pragma HLS LOOP_TRIPCOUNT min=1 max=8\n"
                          "#pragma HLS UNROLL factor=2\n"
                          "        x[i] = expf(t[i & 7]) + sqrtf(t[0]) + powf(t[1], 2.0f) + cosf(t[2])\n"
                          "             + sinf(t[3]) + logf(t[4]) + fabsf(t[5]) + floorf(t[6])\n"
                          "             + roundf(t[7]) + fmaxf(t[0], t[1]) + fminf(t[1], t[2]) + tanhf(t[3]);\n"
                          "        d[i] = exp(d[i]) + sqrt(d[i]) + pow(d[i], 2.0) + cos(d[i]) + sin(d[i])\n"
                          "             + log(d[i]) + fabs(d[i]) + floor(d[i]) + round(d[i]);\n"
                          "    }\n"
                          "#ifndef __SYNTHESIS__\n    printf(\"debug\\n\");\n#endif\n"
                          "}\n",
                          NULL, NULL, &out);
    if (rc) fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "lint-hls: 1 files OK\n");
    free(out);

    // a math function off the list (double-precision exp2 is not on it)
    rc = lint_sources("m.c", "#include <math.h>\ndouble e(double x) { return exp2(x); }\n",
                      NULL, NULL, &out);
    assert_int_equal(rc, 1);
    assert_int_equal(lines_containing(out, "m.c: undefined symbol exp2"), 1);
    free(out);
}

static void test_duplicate_and_missing_symbols(void **state)
{
    (void)state;
    char *out;
    int rc = lint_sources("a.c", "int f(int x) { return x; }\n",
                          "b.c", "int f(int x) { return x + 1; }\nint g(int x);\nint h(int x) { return g(x); }\n",
                          &out);
    assert_int_equal(rc, 1);
    assert_int_equal(lines_containing(out, ": symbol f also defined in "), 1);
    assert_int_equal(lines_containing(out, "b.c: undefined symbol g"), 1);
    free(out);
}

static void test_bad_directories(void **state)
{
    (void)state;
    char *out;
    char dir[64];
    make_dir(dir);
    int rc = run_lint(dir, &out);   // empty: nothing checked is not a pass
    remove_dir(dir);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "no .c files to check"));
    free(out);
    rc = run_lint("/nonexistent/kernels", &out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "no such directory"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_kernel_passes),
        cmocka_unit_test(test_bad_kernel_fails),
        cmocka_unit_test(test_mutual_recursion_across_files),
        cmocka_unit_test(test_function_pointer),
        cmocka_unit_test(test_vla_and_compile_errors),
        cmocka_unit_test(test_alloca_and_io),
        cmocka_unit_test(test_allowlist_and_pragmas),
        cmocka_unit_test(test_duplicate_and_missing_symbols),
        cmocka_unit_test(test_bad_directories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
