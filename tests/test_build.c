/*
 * test_build.c - what the Makefile promises (README.md), checked with
 * `make -n` (nothing is built or removed): header dependencies rebuild the
 * objects that include a header, clean honours BUILD, bench writes to the
 * build folder unless DOCS=1, the default objects are portable and
 * NATIVE=1 is not; and the models are found at run time, with one line
 * when they are missing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_capture.h"
#include "test_util.h"

static char out[1 << 16], err[1 << 16];

/* The build folder as the build named it (the dependency files name their
 * targets that way): relative to the source tree when inside it. */
static const char *build_dir(void)
{
    size_t n = strlen(TSR_SOURCE_DIR);
    const char *b = TSR_BUILD_DIR;
    return !strncmp(b, TSR_SOURCE_DIR, n) && b[n] == '/' ? b + n + 1 : b;
}

/* `make -n ARGS` in the source tree, outside the enclosing make's
 * jobserver; "@" in args stands for the build folder. */
static int make_n(const char *args)
{
    char cmd[4096], expanded[2048];
    size_t k = 0;
    for (const char *p = args; *p && k + 256 < sizeof expanded; p++) {
        if (*p == '@') k += (size_t)snprintf(expanded + k, sizeof expanded - k, "%s", build_dir());
        else expanded[k++] = *p;
    }
    expanded[k] = '\0';
    snprintf(cmd, sizeof cmd, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory "
             "-n -C '%s' BUILD='%s' %s", TSR_SOURCE_DIR, build_dir(), expanded);
    return run_capture(cmd, out, err, sizeof out);
}

/* -MMD -MP: touching a header the emulator backend includes (emu/) rebuilds
 * backend_emu.o; one it does not include leaves it alone. */
static void headers_are_dependencies(void **state)
{
    (void)state;
    assert_int_equal(make_n("-W emu/tsr_emu.h " "@/driver/backend_emu.o"), 0);
    assert_non_null(strstr(out, "-c driver/backend_emu.c"));
    assert_int_equal(make_n("-W driver/plan.h " "@/driver/tokenizer.o"), 0);
    assert_null(strstr(out, "-c driver/tokenizer.c"));
}

static void clean_honours_build(void **state)
{
    (void)state;
    assert_int_equal(run_capture("env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -n -C '"
                                 TSR_SOURCE_DIR "' clean BUILD=/tmp/tsr_elsewhere", out, err,
                                 sizeof out), 0);
    assert_string_equal(out, "rm -rf /tmp/tsr_elsewhere /tmp/tsr_elsewhere-san "
                             "/tmp/tsr_elsewhere-tsan /tmp/tsr_elsewhere-fuzz "
                             "/tmp/tsr_elsewhere-stories15m /tmp/tsr_elsewhere-serial "
                             "/tmp/tsr_elsewhere-san-stories15m /tmp/tsr_elsewhere-san-serial "
                             "/tmp/tsr_elsewhere-mpi /tmp/tsr_elsewhere-san-mpi\n");
}

/* make cleanall: clean's folders, then every profile's build, the venv and
 * the Vitis outputs; make check is make test; make help says all of it. */
static void cleanall_check_help(void **state)
{
    (void)state;
    assert_int_equal(run_capture("env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -n -C '"
                                 TSR_SOURCE_DIR "' cleanall BUILD=/tmp/tsr_elsewhere", out, err,
                                 sizeof out), 0);
    assert_int_equal(count_lines(out), 4);   /* clean's rm, then cleanall's (3 lines) */
    assert_int_equal(strncmp(out, "rm -rf /tmp/tsr_elsewhere /tmp/tsr_elsewhere-san ", 49), 0);
    const char *all = strchr(out, '\n') + 1;
    static const char *const gone[] = {
        "/tmp/tsr_elsewhere-stories260k ", "/tmp/tsr_elsewhere-san-stories15m ",
        "/tmp/tsr_elsewhere-generic ", " build/venv ", " build_dir.* ", " bitstreams/*.xclbin ",
        " _x ", " .Xil ", " v++_*.log ",
    };
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        if (!strstr(all, gone[i])) fail_msg("cleanall leaves %s:\n%s", gone[i], out);
    assert_null(strstr(all, "MANIFEST"));
    assert_null(strstr(all, "README"));

    /* (make's database: check's only prerequisite is test, and no recipe) */
    assert_int_equal(run_capture("env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -n -p -C '"
                                 TSR_SOURCE_DIR "' help | grep -A1 '^check:'", out, err,
                                 sizeof out), 0);
    assert_int_equal(strncmp(out, "check: test\n", 12), 0);

    assert_int_equal(run_capture("make --no-print-directory -s -C '" TSR_SOURCE_DIR "' help", out,
                                 err, sizeof out), 0);
    static const char *const said[] = { "make all TARGET=hw|hw_emu PLATFORM=", "TARGET=sw_emu",
                                        "make check: the same", "make cleanall", "make help-hw" };
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++)
        if (!strstr(out, said[i])) fail_msg("make help does not say %s", said[i]);
}

static void bench_writes_to_the_build_folder(void **state)
{
    (void)state;
    assert_int_equal(make_n("-o @/tessera bench"), 0);
    assert_non_null(strstr(out, "/bench/benchmarks.md"));
    assert_null(strstr(out, "docs/benchmarks.md"));
    assert_int_equal(make_n("-o @/tessera bench DOCS=1"), 0);
    assert_non_null(strstr(out, " docs/benchmarks.md"));
}

/* The installed objects run anywhere; NATIVE=1 builds for this CPU. */
static void native_only_when_asked(void **state)
{
    (void)state;
    assert_int_equal(make_n("-W kernels/forward.c " "@/kernels/forward.o"), 0);
    assert_non_null(strstr(out, "-c kernels/forward.c"));
    assert_null(strstr(out, "-march=native"));
    assert_int_equal(make_n("NATIVE=1 -W kernels/forward.c " "@/kernels/forward.o"), 0);
    assert_non_null(strstr(out, "-march=native"));
    assert_int_equal(make_n("help"), 0);
    assert_non_null(strstr(out, "make uninstall"));
}

/* The test programs read TSR_SHARED when they run: pointed at a folder
 * without the models, the runner says so in one line and fails; make test
 * says so before building. */
static void shared_is_read_at_run_time(void **state)
{
    (void)state;
    assert_string_equal(tsr_test_shared(), getenv("TSR_SHARED"));
    int rc = run_capture("TSR_SHARED=/nonexistent/shared sh '" TSR_SOURCE_DIR "/tests/run_tests.sh' '"
                         TSR_BUILD_DIR "/tests/test_api'", out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "model files missing in /nonexistent/shared"));
    assert_non_null(strstr(err, "make test SHARED="));
    assert_string_equal(out, "");
    /* make test says it before it builds anything: nothing to run */
    assert_int_equal(make_n("test SHARED=/nonexistent/shared"), 2);
    assert_non_null(strstr(err, "model files missing in /nonexistent/shared"));
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(headers_are_dependencies),
        cmocka_unit_test(clean_honours_build),
        cmocka_unit_test(cleanall_check_help),
        cmocka_unit_test(bench_writes_to_the_build_folder),
        cmocka_unit_test(native_only_when_asked),
        cmocka_unit_test(shared_is_read_at_run_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
