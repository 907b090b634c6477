/*
 * test_lint_hls.c - the two HLS lints on fixture kernels (never on kernels/,
 * which changes under us): hw/lint_hls.sh (compiler, symbols, call graph)
 * and hw/lint_hls.py (libclang: types, casts, loops, pragmas).  Each must
 * pass a good kernel and name every broken rule in bad ones.
 *
 * Sections: helpers (run the script, temp kernel dirs), fixtures, rules,
 * libclang lint.
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

/* The python that has Debian's python3-clang (Makefile PYTHON_CLANG). */
#ifndef TSR_PYTHON_CLANG
#define TSR_PYTHON_CLANG "/usr/bin/python3"
#endif
#define CLANG_LINT TSR_SOURCE_DIR "/hw/lint_hls.py"

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

static void test_emulator_named(void **state)
{
    (void)state;
    char *out;
    /* a build macro of the emulator, and an include of its header: each a
     * problem at its line (the kernels call tsr_platform.h's hooks) */
    int rc = lint_sources("emu.c",
                          "int f(int x)\n{\n#ifdef TSR_EMU\n    x++;\n#endif\n    return x;\n}\n",
                          "inc.h", "#ifndef INC_H\n#define INC_H\n #  include \"../emu/tsr_emu.h\"\n#endif\n",
                          &out);
    assert_int_equal(rc, 1);
    assert_int_equal(lines_containing(out, "the emulator named in a kernel file"), 2);
    assert_int_equal(lines_containing(out, "emu.c:3: the emulator named"), 1);
    assert_int_equal(lines_containing(out, "inc.h:3: the emulator named"), 1);
    free(out);

    /* the words alone, without the macro or an include, are fine */
    rc = lint_sources("ok.c", "/* the emulator's fast path: tsr_platform.h */\nint g(int x) { return x; }\n",
                      NULL, NULL, &out);
    assert_int_equal(rc, 0);
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

/* ----------------------------------------------------- libclang lint --- */

#define CAP (64 * 1024)
static char cout[CAP], cerr[CAP];

/* hw/lint_hls.py needs python3-clang: without it every test here fails
 * (a lint that silently does not run is a lint that passes). */
static void need_clang(void)
{
    static int ok = -1;
    if (ok < 0)
        ok = run_capture("'" TSR_PYTHON_CLANG "' -c 'import clang.cindex; clang.cindex.Index'",
                         cout, cerr, CAP) == 0;
    if (!ok)
        fail_msg("%s cannot import clang.cindex (Debian python3-clang): run `make deps`",
                 TSR_PYTHON_CLANG);
}

/* Run `python hw/lint_hls.py ARGS`; stdout in cout, stderr in cerr. */
static int run_clang_lint(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s", TSR_PYTHON_CLANG, CLANG_LINT, args);
    return run_capture(cmd, cout, cerr, CAP);
}

/* A line of a fixture the lint must name, and the rule it must give. */
typedef struct expect {
    int  line;
    char rule[40];
} expect;

/* The expectations written into a fixture: each line holding tag followed
 * by a rule name, in a comment (the tag is "expect: " after the comment
 * opener for the fixture as it is).  Returns how many, at most max. */
static int read_expects(const char *path, const char *tag, expect *e, int max)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[512];
    int n = 0, line = 0;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        const char *at = strstr(buf, tag);
        if (!at) continue;
        assert_true(n < max);
        at += strlen(tag);
        size_t len = strcspn(at, " */\n");
        assert_true(len > 0 && len < sizeof e[n].rule);
        memcpy(e[n].rule, at, len);
        e[n].rule[len] = 0;
        e[n].line = line;
        n++;
    }
    fclose(f);
    return n;
}

/* One planted-bad fixture per rule: the directory, its one .c file, the
 * rule, and how many lines it plants (so a fixture that lost its markers
 * fails instead of passing with nothing to check). */
typedef struct fixture {
    const char *dir, *file, *rule;
    int planted;
} fixture;

static const fixture FIXTURE_RULES[] = {
    { "lint_pointer_to_pointer", "p2p.c",       "pointer-to-pointer", 5 },
    { "lint_pointer_field",      "field.c",     "pointer-field",      1 },
    { "lint_pointer_cast",       "cast.c",      "pointer-cast",       3 },
    { "lint_memcpy_type",        "copy.c",      "memcpy-type",        3 },
    { "lint_loop_index_64",      "wide.c",      "loop-index-64",      2 },
    { "lint_loop_tripcount",     "tripcount.c", "loop-tripcount",     3 },
    { "lint_unroll_variable",    "unroll.c",    "unroll-variable",    3 },
    { "lint_pragma_name",        "names.c",     "pragma-name",        6 },
    { "lint_m_axi_depth",        "depth.c",     "m-axi-depth",        2 },
    { "lint_m_axi_null_test",    "null.c",      "m-axi-null-test",    3 },
    { "lint_m_axi_volatile",     "volatile.c",  "m-axi-volatile",     1 },
    { "lint_pipeline_divide",    "divide.c",    "pipeline-divide",    3 },
    { "lint_pragma_value",       "value.c",     "pragma-value",       5 },
    { "lint_dependence_register", "dep.c",      "dependence-register", 4 },
    { "lint_partition_call",     "call.c",      "partition-call",     3 },
    { "lint_partition_pick",     "pick.c",      "partition-pick",     4 },
};
#define N_FIXTURE_RULES (sizeof FIXTURE_RULES / sizeof FIXTURE_RULES[0])

/* Lint dir with extra args; every planted line of file (tag) is named with
 * its rule and file:line, and nothing else is reported. */
static void check_planted(const char *dir, const char *file, const char *args,
                          const char *tag, const char *rule, int planted)
{
    char path[512], cmd[1024], want[768];
    snprintf(path, sizeof path, "%s/%s/%s", FIXTURES, dir, file);
    expect e[16];
    int n = read_expects(path, tag, e, 16);
    assert_int_equal(n, planted);
    snprintf(cmd, sizeof cmd, "%s '%s/%s'", args, FIXTURES, dir);
    int rc = run_clang_lint(cmd);
    if (rc != 1) fprintf(stderr, "%s%s", cout, cerr);
    assert_int_equal(rc, 1);
    for (int i = 0; i < n; i++) {
        assert_string_equal(e[i].rule, rule);   // a fixture plants its own rule only
        snprintf(want, sizeof want, "lint-hls: %s/%s/%s:%d: %s: ", FIXTURES, dir, file, e[i].line,
                 rule);
        if (lines_containing(cout, want) != 1) fprintf(stderr, "missing: %s\n%s", want, cout);
        assert_int_equal(lines_containing(cout, want), 1);
    }
    // nothing else: no other rule, no other line (the summary says "lint-hls-clang:")
    if (lines_containing(cout, "lint-hls: ") != n) fprintf(stderr, "%s", cout);
    assert_int_equal(lines_containing(cout, "lint-hls: "), n);
    snprintf(want, sizeof want, "lint-hls-clang: %d problem(s) in ", n);
    assert_int_equal(lines_containing(cout, want), 1);
    assert_string_equal(cerr, "");
}

static void test_clang_rule_fixture(void **state)
{
    const fixture *fx = *state;
    need_clang();
    check_planted(fx->dir, fx->file, "", "/* expect: ", fx->rule, fx->planted);
}

/* `make lint-hls`, the target the build runs, fails on every planted
 * fixture and names its rule: the rule is not only in the script. */
static void test_make_lint_hls_fails_on_fixture(void **state)
{
    const fixture *fx = *state;
    need_clang();
    static char out[1 << 16], err[1 << 16];
    char cmd[1024], want[256];
    snprintf(cmd, sizeof cmd, "make -s --no-print-directory -C '%s' lint-hls LINT_DIR='%s/%s'",
             TSR_SOURCE_DIR, FIXTURES, fx->dir);
    int rc = run_capture(cmd, out, err, sizeof err);
    snprintf(want, sizeof want, "%s/%s/%s:", FIXTURES, fx->dir, fx->file);
    if (rc == 0 || !strstr(out, want)) fprintf(stderr, "%s\n%s%s", cmd, out, err);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, want));
    /* the libclang rule, or for misnamed pragmas the pragma lint, which
     * runs first and stops the target */
    snprintf(want, sizeof want, ": %s: ", fx->rule);
    assert_true(strstr(out, want) != NULL ||
                (!strcmp(fx->rule, "pragma-name") && strstr(out, "lint-pragmas: ") &&
                 strstr(out, "pragma names ")));
}

/* Every rule the checker knows has a planted fixture above, and no other. */
static void test_clang_every_rule_has_a_fixture(void **state)
{
    (void)state;
    need_clang();
    assert_int_equal(run_clang_lint("--list-rules"), 0);
    assert_int_equal(count_lines(cout), (int)N_FIXTURE_RULES);
    for (size_t i = 0; i < N_FIXTURE_RULES; i++) {
        char want[64];
        snprintf(want, sizeof want, "%s ", FIXTURE_RULES[i].rule);
        if (lines_containing(cout, want) != 1) fprintf(stderr, "no rule %s in:\n%s", want, cout);
        assert_int_equal(lines_containing(cout, want), 1);
    }
}

/* Legal look-alikes of every rule (two files, a header, a profile): clean. */
static void test_clang_clean_fixture(void **state)
{
    (void)state;
    need_clang();
    int rc = run_clang_lint("'" FIXTURES "/lint_clean'");
    if (rc) fprintf(stderr, "%s%s", cout, cerr);
    assert_int_equal(rc, 0);
    assert_string_equal(cout, "lint-hls-clang: 2 files OK\n");
    assert_string_equal(cerr, "");
}

/* -D reaches the parser and -IDIR/profiles finds the chosen profile: the
 * clean kernel with 64-bit lane indices fails where it says it would. */
static void test_clang_profile_define(void **state)
{
    (void)state;
    need_clang();
    check_planted("lint_clean", "clean_ops.c", "'-DTSR_PROFILE_HEADER=<lint_wide.h>'",
                  "/* expect with lint_wide.h: ", "loop-index-64", 1);
}

/* A parse error is a problem with its file and line, not a crash or a pass. */
static void test_clang_parse_error(void **state)
{
    (void)state;
    need_clang();
    char dir[64], arg[96];
    make_dir(dir);
    add_file(dir, "broken.c", "int f(void)\n{\n    return x;\n}\n");
    snprintf(arg, sizeof arg, "'%s'", dir);
    int rc = run_clang_lint(arg);
    char want[160];
    snprintf(want, sizeof want, "lint-hls: %s/broken.c:3: parse: use of undeclared identifier 'x'",
             dir);
    remove_dir(dir);
    assert_int_equal(rc, 1);
    assert_int_equal(lines_containing(cout, want), 1);
}

/* A struct whose member partitions reach their loops only through a
 * non-inlined call fails partition-call, and a comment does not excuse
 * it (the old `unverified` acknowledgement is gone).  The kernel's own
 * pattern passes: the struct's functions INLINE, so the PE dimension is
 * indexed where the struct is defined, and the non-inlined PE function
 * restating the lane partition on its parameter; without that restated
 * pragma the lane partition is reported at the PE function. */
static void test_clang_partition_call_struct(void **state)
{
    (void)state;
    need_clang();
    static const char head[] =
        "#include <stdint.h>\n"
        "typedef struct st_t { float bank[4][16]; float out; } st_t;\n"
        "static void pe_fill(float row[16], uint32_t r)\n"
        "{\n"
        "#pragma HLS INLINE off\n"
        "%s"
        "pe_fill_words:\n"
        "    for (uint32_t k = 0; k < 16; k += 2) {\n"
        "#pragma HLS PIPELINE II=1\n"
        "pe_fill_lanes:\n"
        "        for (uint32_t l = 0; l < 2; l++) {\n"
        "#pragma HLS UNROLL\n"
        "            row[k + l] = (float)(k + l + r);\n"
        "        }\n"
        "    }\n"
        "}\n"
        "static void fill(st_t *s)\n"
        "{\n"
        "%s"
        "fill_pes:\n"
        "    for (uint32_t r = 0; r < 4; r++) {\n"
        "#pragma HLS UNROLL\n"
        "        pe_fill(s->bank[r], r);\n"
        "    }\n"
        "    s->out = s->bank[3][15];\n"
        "}\n"
        "float top(void)\n"
        "{\n"
        "    st_t s;\n"
        "%s"
        "#pragma HLS ARRAY_PARTITION variable=s.bank type=complete dim=1\n"
        "#pragma HLS ARRAY_PARTITION variable=s.bank type=cyclic factor=2 dim=2\n"
        "    fill(&s);\n"
        "    return s.out;\n"
        "}\n";
    /* mode 0: fill not inlined; 1: the same with the old acknowledgement;
     * 2: fill INLINE, pe_fill without its own partition; 3: with it */
    static const char restate[] = "#pragma HLS ARRAY_PARTITION variable=row type=cyclic factor=2\n";
    static const char ack[] = "    /* lint-hls: partition-call unverified s (csynth will tell) */\n";
    char dir[64], arg[96], text[2048], want[320];
    for (int mode = 0; mode < 4; mode++) {
        make_dir(dir);
        snprintf(text, sizeof text, head, mode == 3 ? restate : "",
                 mode >= 2 ? "#pragma HLS INLINE\n" : "#pragma HLS INLINE off\n",
                 mode == 1 ? ack : "");
        add_file(dir, "st.c", text);
        snprintf(arg, sizeof arg, "'%s'", dir);
        int rc = run_clang_lint(arg);
        if (rc != (mode == 3 ? 0 : 1)) fprintf(stderr, "%s%s", cout, cerr);
        uint32_t l0 = mode == 1 ? 30u : 29u;   /* the dim=1 pragma's line */
        if (mode < 2) {
            assert_int_equal(rc, 1);
            snprintf(want, sizeof want, "lint-hls: %s/st.c:%u: partition-call: ARRAY_PARTITION of"
                     " 's.bank' in top reaches its accesses only through the non-inlined call to fill"
                     " (line %u): the struct 's' reaches it by pointer", dir, l0, l0 + 2u);
            assert_int_equal(lines_containing(cout, want), 1);
            assert_int_equal(lines_containing(cout, ": partition-call: "), 2);
            assert_null(strstr(cout, "note:"));
        } else if (mode == 2) {
            assert_int_equal(rc, 1);
            snprintf(want, sizeof want, "lint-hls: %s/st.c:%u: partition-call: ARRAY_PARTITION of"
                     " 's.bank' in top reaches its accesses only through the non-inlined call to"
                     " pe_fill (line 22): its parameter 'row' states no partition of its own",
                     dir, l0 + 1u);
            assert_int_equal(lines_containing(cout, want), 1);
            assert_int_equal(lines_containing(cout, ": partition-call: "), 1);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(lines_containing(cout, "lint-hls-clang: 1 files OK"), 1);
            assert_null(strstr(cout, "lint-hls: "));
        }
        remove_dir(dir);
    }
}

/* The pragma literals are checked twice: hw/pragma_literals.py --check
 * names a header that is not what it would write, and a kernel built
 * against a literal that differs from its expression does not compile
 * (tsr_hls.h's TSR_PRAGMA_LIT_CHECK).  Both on a copy of kernels/. */
static void test_pragma_literals_checked(void **state)
{
    (void)state;
    char dir[64], cmd[1024];
    make_dir(dir);
    snprintf(cmd, sizeof cmd, "cp -r '%s/kernels' '%s/' && /usr/bin/python3 '%s/hw/pragma_literals.py' '%s/kernels'",
             TSR_SOURCE_DIR, dir, TSR_SOURCE_DIR, dir);
    assert_int_equal(run_capture(cmd, cout, cerr, CAP), 0);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/hw/pragma_literals.py' --check '%s/kernels'",
             TSR_SOURCE_DIR, dir);
    assert_int_equal(run_capture(cmd, cout, cerr, CAP), 0);
    assert_non_null(strstr(cout, " profiles current"));
    // compiles as it is, under the stories260k profile
    snprintf(cmd, sizeof cmd, "cc -std=c99 -fsyntax-only -DTSR_CSIM "
             "'-DTSR_PROFILE_HEADER=\"profiles/profile_stories260k.h\"' -I'%s/kernels' '%s/kernels/ops.c'",
             dir, dir);
    assert_int_equal(run_capture(cmd, cout, cerr, CAP), 0);
    // one literal off by one: stale, and the kernel does not build
    snprintf(cmd, sizeof cmd, "sed -i '/TSR_PROFILE_STORIES260K_H/,/^#e/ s/^#define TSR_LIT_MAX_CHUNKS \\( *\\)\\([0-9]*\\)$/#define TSR_LIT_MAX_CHUNKS \\1\\29/' '%s/kernels/profiles/pragma_literals.h'",
             dir);
    assert_int_equal(run_capture(cmd, cout, cerr, CAP), 0);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/hw/pragma_literals.py' --check '%s/kernels'",
             TSR_SOURCE_DIR, dir);
    assert_int_equal(run_capture(cmd, cout, cerr, CAP), 1);
    assert_non_null(strstr(cout, "pragma_literals.h is stale: run `make pragma-literals`"));
    snprintf(cmd, sizeof cmd, "cc -std=c99 -fsyntax-only -DTSR_CSIM "
             "'-DTSR_PROFILE_HEADER=\"profiles/profile_stories260k.h\"' -I'%s/kernels' '%s/kernels/ops.c'",
             dir, dir);
    assert_int_not_equal(run_capture(cmd, cout, cerr, CAP), 0);
    assert_non_null(strstr(cerr, "tsr_check_tsr_lit_max_chunks"));
    remove_dir(dir);
}

static void test_clang_usage(void **state)
{
    (void)state;
    need_clang();
    assert_int_equal(run_clang_lint(""), 2);
    assert_non_null(strstr(cerr, "usage: "));
    assert_int_equal(run_clang_lint("--bogus '" FIXTURES "/lint_clean'"), 2);
    assert_int_equal(run_clang_lint("/nonexistent/kernels"), 2);
    assert_non_null(strstr(cerr, "no such directory: '/nonexistent/kernels'"));
    char dir[64], arg[96];
    make_dir(dir);                  // nothing checked is not a pass
    snprintf(arg, sizeof arg, "'%s'", dir);
    int rc = run_clang_lint(arg);
    remove_dir(dir);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(cout, "no .c files to check"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_kernel_passes),
        cmocka_unit_test(test_bad_kernel_fails),
        cmocka_unit_test(test_mutual_recursion_across_files),
        cmocka_unit_test(test_function_pointer),
        cmocka_unit_test(test_vla_and_compile_errors),
        cmocka_unit_test(test_emulator_named),
        cmocka_unit_test(test_alloca_and_io),
        cmocka_unit_test(test_allowlist_and_pragmas),
        cmocka_unit_test(test_duplicate_and_missing_symbols),
        cmocka_unit_test(test_bad_directories),
        cmocka_unit_test(test_clang_every_rule_has_a_fixture),
        cmocka_unit_test(test_clang_clean_fixture),
        cmocka_unit_test(test_clang_profile_define),
        cmocka_unit_test(test_clang_parse_error),
        cmocka_unit_test(test_clang_usage),
        cmocka_unit_test(test_clang_partition_call_struct),
        cmocka_unit_test(test_pragma_literals_checked),
    };
    /* one named test per planted fixture */
    enum { N_FIXED = sizeof tests / sizeof tests[0] };
    static char names[N_FIXTURE_RULES][80];
    struct CMUnitTest all[N_FIXED + 2 * N_FIXTURE_RULES];
    memcpy(all, tests, sizeof tests);
    for (size_t i = 0; i < N_FIXTURE_RULES; i++) {
        struct CMUnitTest t = { FIXTURE_RULES[i].dir, test_clang_rule_fixture, NULL, NULL,
                                (void *)&FIXTURE_RULES[i] };
        all[N_FIXED + i] = t;
        snprintf(names[i], sizeof names[i], "make lint-hls fails on %s", FIXTURE_RULES[i].dir);
        struct CMUnitTest m = { names[i], test_make_lint_hls_fails_on_fixture, NULL, NULL,
                                (void *)&FIXTURE_RULES[i] };
        all[N_FIXED + N_FIXTURE_RULES + i] = m;
    }
    return cmocka_run_group_tests(all, NULL, NULL);
}
