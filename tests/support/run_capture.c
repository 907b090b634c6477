/* run_capture.c - run a shell command from a test and capture its output. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_capture.h"

int run_capture(const char *cmd, char *out, char *err, size_t cap)
{
    char outp[] = "/tmp/tsr_test_out_XXXXXX", errp[] = "/tmp/tsr_test_err_XXXXXX";
    int fo = mkstemp(outp), fe = mkstemp(errp);
    assert_true(fo >= 0 && fe >= 0);
    close(fo);
    close(fe);
    char full[4096];
    snprintf(full, sizeof full, "%s >%s 2>%s", cmd, outp, errp);
    int st = system(full);
    const char *paths[2] = { outp, errp };
    char *bufs[2] = { out, err };
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "rb");
        assert_non_null(f);
        size_t n = fread(bufs[i], 1, cap - 1, f);
        bufs[i][n] = '\0';
        fclose(f);
        unlink(paths[i]);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int lines_containing(const char *s, const char *needle)
{
    int k = 0;
    size_t nl = strlen(needle);
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        for (size_t i = 0; i + nl <= len; i++)
            if (!memcmp(s + i, needle, nl)) { k++; break; }
        s += len + (e ? 1 : 0);
    }
    return k;
}
