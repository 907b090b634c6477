/* test_install.c - `make install` into a temp prefix, then build
 * host/examples/minimal.c the way a user would, through pkg-config, and
 * check its greedy text against the stories260K reference.
 *
 * The recursive make installs from the build tree in use (BUILD=) and marks
 * the archive old (-o), so that it never recompiles under a concurrent
 * `make test`; it links the versioned shared library from that archive into
 * the temp dir (LIB_SOVER=), so that the library is always fresh and the
 * build tree is not written. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera.h"
#include "test_util.h"

#ifndef TSR_SOURCE_DIR
#define TSR_SOURCE_DIR "."
#endif

/* Sanitizer builds: the installed library is instrumented, so is the example. */
#if defined(__SANITIZE_ADDRESS__)
#define SAN_MAKE " SANITIZE=1"
#define SAN_CC   " -fsanitize=address,undefined"
#else
#define SAN_MAKE ""
#define SAN_CC   ""
#endif

#define PROMPT   "Once upon a time"
#define SENTENCE "Once upon a time, there was a little girl named Lily."
#define N_TOKENS 20
/* 0.x: every minor version is an ABI of its own */
#define STR_(x) #x
#define STR(x)  STR_(x)
#define SONAME  "libtessera.so." STR(TSR_VERSION_MAJOR) "." STR(TSR_VERSION_MINOR)

/* Run a shell command; its exit status (-1 if it did not run). */
static int run(const char *fmt, ...)
{
    char cmd[4 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && n < (int)sizeof cmd);
    int rc = system(cmd);
    return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

/* Read a whole file into a NUL-terminated malloc'd buffer. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len + 4096 + 1 > cap) {
            cap = 2 * cap + 4096 + 1;
            char *p = realloc(buf, cap);
            if (!p) { free(buf); fclose(f); return NULL; }
            buf = p;
        }
        got = fread(buf + len, 1, 4096, f);
        len += got;
    } while (got > 0);
    fclose(f);
    if (buf) buf[len] = '\0';
    return buf;
}

static void test_install_and_build_minimal(void **state)
{
    (void)state;
    char dir[] = "/tmp/tsr_install_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[PATH_MAX];

    /* 1. Install.  MAKEFLAGS/MAKELEVEL of the enclosing `make test` (jobserver
     *    descriptors) must not leak into the recursive make. */
    int rc = run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C '%s' BUILD='%s'%s "
                 "-o '%s/libtessera.a' -o '%s/tessera' LIB_SOVER='%s/libtessera.so.%s' "
                 "PREFIX='%s' install > '%s/make.log' 2>&1",
                 TSR_SOURCE_DIR, TSR_BUILD_DIR, SAN_MAKE, TSR_BUILD_DIR, TSR_BUILD_DIR, dir,
                 TSR_VERSION_STRING, dir, dir);
    if (rc != 0) {
        snprintf(path, sizeof path, "%s/make.log", dir);
        char *log = slurp(path);
        print_error("make install failed (%d):\n%s\n", rc, log ? log : "");
        free(log);
    }
    assert_int_equal(rc, 0);

    /* The files, and the soname chain lib.so -> lib.so.0.3 -> lib.so.0.3.0
     * (a 0.x soname carries the minor version: Makefile, "install"). */
    const char *files[] = { "bin/tessera", "include/tessera.h", "lib/libtessera.a",
                            "lib/libtessera.so", "lib/" SONAME, "lib/pkgconfig/tessera.pc" };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size > 0);
    }
    char link[64] = { 0 };
    snprintf(path, sizeof path, "%s/lib/libtessera.so", dir);
    assert_int_equal(readlink(path, link, sizeof link - 1), (ssize_t)strlen(SONAME));
    assert_string_equal(link, SONAME);
    memset(link, 0, sizeof link);
    snprintf(path, sizeof path, "%s/lib/" SONAME, dir);
    assert_int_equal(readlink(path, link, sizeof link - 1),
                     (ssize_t)strlen("libtessera.so." TSR_VERSION_STRING));
    assert_string_equal(link, "libtessera.so." TSR_VERSION_STRING);
    /* the library names itself so (readelf -d: its SONAME entry) */
    assert_int_equal(run("readelf -d '%s/lib/libtessera.so." TSR_VERSION_STRING "' | grep -F "
                         "'(SONAME)' | grep -qF '[" SONAME "]'", dir), 0);

    /* 2. pkg-config sees the temp prefix. */
    assert_int_equal(run("PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --variable=prefix tessera "
                         "> '%s/prefix.txt'", dir, dir), 0);
    snprintf(path, sizeof path, "%s/prefix.txt", dir);
    char *prefix = slurp(path);
    assert_non_null(prefix);
    prefix[strcspn(prefix, "\n")] = '\0';
    assert_string_equal(prefix, dir);
    free(prefix);

    /* 3. Build the example against the installed header and library only. */
    rc = run("cc -std=c11 -Wall -Wextra -Werror%s -o '%s/minimal' '%s/host/examples/minimal.c' "
             "$(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs tessera) "
             "-Wl,-rpath,'%s/lib' > '%s/cc.log' 2>&1",
             SAN_CC, dir, TSR_SOURCE_DIR, dir, dir, dir);
    if (rc != 0) {
        snprintf(path, sizeof path, "%s/cc.log", dir);
        char *log = slurp(path);
        print_error("cc failed (%d):\n%s\n", rc, log ? log : "");
        free(log);
    }
    assert_int_equal(rc, 0);

    /* 4. Run it: the prompt, then greedy text that follows the reference. */
    assert_int_equal(run("'%s/minimal' '%s' '%s' '" PROMPT "' %d > '%s/out.txt' 2> '%s/err.txt'",
                         dir, SHARED_MODEL("stories260K.bin"), SHARED_MODEL("tok512.bin"),
                         N_TOKENS, dir, dir), 0);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *out = slurp(path);
    char *ref = slurp(SHARED_REF("stories260K_once_upon_a_time.txt"));
    assert_non_null(out);
    assert_non_null(ref);
    size_t n = strlen(out);
    assert_true(n > 0 && out[n - 1] == '\n');
    out[--n] = '\0';
    assert_true(n >= strlen(SENTENCE));
    assert_memory_equal(out, SENTENCE, strlen(SENTENCE));
    assert_true(n <= strlen(ref));
    assert_memory_equal(out, ref, n); /* every byte of the 20 tokens matches */
    free(out);
    free(ref);

    /* 5. The installed program runs. */
    assert_int_equal(run("'%s/bin/tessera' --version > '%s/version.txt'", dir, dir), 0);
    snprintf(path, sizeof path, "%s/version.txt", dir);
    char *version = slurp(path);
    assert_non_null(version);
    assert_string_equal(version, "tessera " TSR_VERSION_STRING "\n");
    free(version);

    /* 6. make uninstall removes every installed file, and only those: what
     *    the test wrote in the prefix itself stays. */
    rc = run("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C '%s' BUILD='%s'%s PREFIX='%s' "
             "uninstall >> '%s/make.log' 2>&1", TSR_SOURCE_DIR, TSR_BUILD_DIR, SAN_MAKE, dir, dir);
    assert_int_equal(rc, 0);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        assert_int_not_equal(lstat(path, &st), 0);
    }
    snprintf(path, sizeof path, "%s/lib/libtessera.so.%s", dir, TSR_VERSION_STRING);
    struct stat st;
    assert_int_not_equal(lstat(path, &st), 0);
    assert_int_equal(run("test -f '%s/out.txt' && test -f '%s/minimal'", dir, dir), 0);

    /* 7. Clean up (dir is our own mkdtemp directory). */
    assert_int_equal(run("rm -rf '%s'", dir), 0);
}

/* A missing model file: minimal exits non-zero and says why on stderr. */
static void test_minimal_reports_errors(void **state)
{
    (void)state;
    char dir[] = "/tmp/tsr_minimal_XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(run("cc -std=c11 -Wall -Wextra -Werror%s -I'%s/driver/include' -o '%s/minimal' "
                         "'%s/host/examples/minimal.c' '%s/libtessera.a' -lxxhash -lpcre2-8 -lnuma -lpthread -lm",
                         SAN_CC, TSR_SOURCE_DIR, dir, TSR_SOURCE_DIR, TSR_BUILD_DIR), 0);
    assert_int_equal(run("'%s/minimal' /nonexistent/model.bin '%s' hi 2 > /dev/null 2> '%s/err.txt'",
                         dir, SHARED_MODEL("tok512.bin"), dir), 1);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/err.txt", dir);
    char *err = slurp(path);
    assert_non_null(err);
    assert_non_null(strstr(err, "minimal: cannot open or read file"));
    assert_non_null(strstr(err, "/nonexistent/model.bin"));
    free(err);
    assert_int_equal(run("rm -rf '%s'", dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install_and_build_minimal),
        cmocka_unit_test(test_minimal_reports_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
