/*
 * test_abi.c - libtessera.so exports exactly the calls tessera.h marks
 * TSR_API (nm -D --defined-only against the header), and the ABI
 * conventions the header states hold: the runtime version, growing structs
 * (every field's offset pinned, a planted field caught, the size rule,
 * reserved words: zero-initialised callers unchanged, non-zero refused).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"
#include "abi/pins.h"
#include "run_capture.h"
#include "test_util.h"

#define MAX_NAMES 256

typedef struct names { char *v[MAX_NAMES]; int n; } names;

static void add(names *s, const char *name, size_t len)
{
    assert_true(s->n < MAX_NAMES);
    s->v[s->n] = strndup(name, len);
    assert_non_null(s->v[s->n]);
    s->n++;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void release(names *s)
{
    for (int i = 0; i < s->n; i++) free(s->v[i]);
}

/* The function names declared TSR_API in the header: the identifier right
 * before the first '(' of each declaration that starts with TSR_API. */
static void header_names(names *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/driver/include/tessera.h", TSR_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "TSR_API ", 8) != 0) continue;
        char *paren = strchr(line, '(');
        assert_non_null(paren);
        char *end = paren;
        while (end > line && isspace((unsigned char)end[-1])) end--;
        char *start = end;
        while (start > line && (isalnum((unsigned char)start[-1]) || start[-1] == '_')) start--;
        add(s, start, (size_t)(end - start));
    }
    fclose(f);
    qsort(s->v, (size_t)s->n, sizeof s->v[0], cmp);
}

/* Defined global symbols listed by nm_cmd (the shared library's dynamic
 * ones, or the static archive's); sanitizer builds add the runtime's
 * hooks, which are not ours. */
static void exported_names(names *s, const char *nm_cmd)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, nm_cmd, TSR_BUILD_DIR);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        char addr[64], type[8], name[512];
        if (sscanf(line, "%63s %7s %511s", addr, type, name) != 3) continue;
        if (!strcmp(type, "U") || !strcmp(type, "w") || !strcmp(type, "v")) continue;
        if (!strncmp(name, "__asan", 6) || !strncmp(name, "__ubsan", 7) ||
            !strncmp(name, "__sanitizer", 11) || !strncmp(name, "__tsan", 6))
            continue;
        add(s, name, strlen(name));
    }
    assert_int_equal(pclose(p), 0);
    qsort(s->v, (size_t)s->n, sizeof s->v[0], cmp);
}

static void compare(const char *what, const char *nm_cmd)
{
    names h = { 0 }, x = { 0 };
    header_names(&h);
    exported_names(&x, nm_cmd);
    assert_true(h.n >= 30);
    for (int i = 0; i < h.n || i < x.n; i++) {
        const char *a = i < h.n ? h.v[i] : "(none)", *b = i < x.n ? x.v[i] : "(none)";
        if (strcmp(a, b)) print_error("header %s, library %s\n", a, b);
        assert_string_equal(a, b);
    }
    assert_int_equal(h.n, x.n);
    print_message("%s: %d calls, all declared TSR_API\n", what, x.n);
    release(&h);
    release(&x);
}

/* The shared library exports the TSR_API calls and nothing else (it had
 * 106 symbols for 32 calls). */
static void exports_equal_header(void **state)
{
    (void)state;
    compare("libtessera.so", "nm -D --defined-only '%s/libtessera.so'");
}

/* So does the static archive: its internal names are local, so an
 * application linking it statically cannot collide with them. */
static void archive_globals_equal_header(void **state)
{
    (void)state;
    compare("libtessera.a", "nm -g --defined-only '%s/libtessera.a'");
}

/* The shared library of every build (not only an installed one) names
 * its ABI: SONAME libtessera.so.0.MINOR while MAJOR is 0 (each minor
 * version may break it), with that link beside it in the build folder. */
static void soname_in_every_build(void **state)
{
    (void)state;
    char want[64], cmd[4096], out[4096], err[4096];
    if (TSR_VERSION_MAJOR == 0)
        snprintf(want, sizeof want, "libtessera.so.0.%d", TSR_VERSION_MINOR);
    else
        snprintf(want, sizeof want, "libtessera.so.%d", TSR_VERSION_MAJOR);
    snprintf(cmd, sizeof cmd, "readelf -d '%s/libtessera.so' | sed -n 's/.*(SONAME).*\\[\\(.*\\)\\]/\\1/p'",
             TSR_BUILD_DIR);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    out[strcspn(out, "\n")] = '\0';
    assert_string_equal(out, want);
    snprintf(cmd, sizeof cmd, "readlink '%s/%s'", TSR_BUILD_DIR, want);
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, "libtessera.so\n");
}

static void runtime_version(void **state)
{
    (void)state;
    assert_int_equal(tsr_version_number(), TSR_VERSION_NUMBER);
    assert_string_equal(tsr_version(), TSR_VERSION_STRING);
    char s[32];
    snprintf(s, sizeof s, "%d.%d.%d", tsr_version_number() / 10000, tsr_version_number() / 100 % 100,
             tsr_version_number() % 100);
    assert_string_equal(s, tsr_version());
}

/* Every field's offset and every struct's size, as 0.3.0 has them
 * (tests/abi/pins.h, LP64).  A field inserted in front of `reserved` (not
 * carved out of it: a field carved out keeps the size and moves
 * `reserved` up), a reserved array shortened or a type widened fails
 * here: that is an ABI change, which needs a new TSR_VERSION_MINOR and a
 * note of what breaks. */
static void layouts_pinned(void **state)
{
    (void)state;
    if (sizeof(void *) != 8) skip();
    assert_int_equal(TSR_VERSION_NUMBER, 300);   /* the layouts are 0.3.0's */
    int fields = 0, structs = 0;
#define X(T, F, OFF)                                                               \
    fields++;                                                                      \
    if (offsetof(T, F) != (OFF))                                                   \
        fail_msg("%s.%s at %zu, pinned at %d", #T, #F, offsetof(T, F), (int)(OFF));
#define S(T, SZ)                                                                   \
    structs++;                                                                     \
    if (sizeof(T) != (SZ)) fail_msg("%s: %zu bytes, pinned at %d", #T, sizeof(T), (int)(SZ)); \
    /* each starts with its size and ends in its reserved words */                 \
    assert_int_equal(offsetof(T, size), 0);                                        \
    assert_int_equal(offsetof(T, reserved) + sizeof((T *)0)->reserved, sizeof(T));
    TSR_ABI_PINS(X, S)
#undef X
#undef S
    assert_int_equal(structs, 9);
    assert_int_equal(fields, 128);
}

/* The pins catch a planted field: tests/abi/pin_check.c, built against
 * tessera.h as it is, passes; built against a copy with a uint64_t
 * inserted in front of tsr_model_info's reserved words, it fails naming
 * that struct.  (An int there would sit in the padding after `kv` and move
 * nothing: no layout change, so nothing to catch.) */
static void planted_field_fails(void **state)
{
    (void)state;
    if (sizeof(void *) != 8) skip();
    char dir[] = "/tmp/tsr_abi_plant.XXXXXX", cmd[8192];
    assert_non_null(mkdtemp(dir));
    const char *src = TSR_SOURCE_DIR;
    /* the planting: the first reserved line after tsr_model_info's opening */
    snprintf(cmd, sizeof cmd,
             "sed '/^typedef struct tsr_model_info {/,/reserved/ s/^\\( *\\)uint64_t reserved/"
             "\\1uint64_t planted; uint64_t reserved/' '%s/driver/include/tessera.h' > %s/tessera.h && "
             "grep -c 'uint64_t planted;' %s/tessera.h", src, dir, dir);
    char out[4096], err[4096];
    assert_int_equal(run_capture(cmd, out, err, sizeof out), 0);
    assert_string_equal(out, "1\n");
    for (int planted = 0; planted <= 1; planted++) {
        snprintf(cmd, sizeof cmd,
                 "cc -std=c11 -I%s -I'%s/driver/include' -I'%s/tests/abi' -o %s/pin_check "
                 "'%s/tests/abi/pin_check.c' && %s/pin_check",
                 planted ? dir : "/nonexistent", src, src, dir, src, dir);
        int rc = run_capture(cmd, out, err, sizeof out);
        print_message("%s header: exit %d: %s%s", planted ? "planted" : "real", rc, out, err);
        if (!planted) {
            assert_int_equal(rc, 0);
            assert_string_equal(out, "all pinned\n");
        } else {
            assert_int_equal(rc, 1);
            assert_non_null(strstr(out, "tsr_model_info.reserved at 184, pinned at 176"));
            assert_non_null(strstr(out, "tsr_model_info is 248 bytes, pinned at 240"));
            assert_int_equal(count_lines(out), 2);
            assert_null(strstr(out, "tsr_traffic"));   /* only the planted struct */
        }
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The size rule with this header: a size 0 is today's struct, a size
 * above it with bytes this library lacks set is refused, a garbage size
 * is refused before anything is read.  (A shorter, older struct:
 * tests/test_abi_prev.c.) */
static void size_rule(void **state)
{
    (void)state;
    struct { tsr_plan_opts v; uint64_t newer[2]; } o;
    memset(&o, 0, sizeof o);
    o.v.part = "u55c";
    o.v.shape = "stories15M";
    char buf[64], err[256] = "";
    o.v.size = sizeof o;   /* a newer header's struct, its new fields unused */
    assert_int_equal(tsr_plan_report(NULL, &o.v, 0, buf, sizeof buf, NULL, err, sizeof err),
                     TSR_OK);
    o.newer[1] = 3;        /* ...and used: this library cannot honour it */
    assert_int_equal(tsr_plan_report(NULL, &o.v, 0, buf, sizeof buf, NULL, err, sizeof err),
                     TSR_ERR_UNSUPPORTED);
    assert_non_null(strstr(err, "newer tessera.h"));
    o.v.size = 1u << 20;   /* garbage: never read that far */
    assert_int_equal(tsr_plan_report(NULL, &o.v, 0, buf, sizeof buf, NULL, err, sizeof err),
                     TSR_ERR_ARG);
    assert_non_null(strstr(err, "larger than any version"));
    o.v.size = 8;
    assert_int_equal(tsr_plan_report(NULL, &o.v, 0, buf, sizeof buf, NULL, err, sizeof err),
                     TSR_ERR_ARG);
    assert_non_null(strstr(err, "tsr_plan_opts: size 8 is below"));
    /* TSR_INIT sets today's size */
    tsr_gen_opts g = TSR_INIT(tsr_gen_opts);
    assert_int_equal(g.size, sizeof g);
    assert_int_equal(g.max_tokens, 0);
}

/* Every struct ends in reserved words; an option struct with a non-zero
 * one is refused, and zero-initialised ones work unchanged. */
static void structs_can_grow(void **state)
{
    (void)state;
    assert_int_equal(sizeof ((tsr_model_opts *)0)->reserved, 64);
    assert_int_equal(sizeof ((tsr_gen_opts *)0)->reserved, 64);
    /* tsr_plan_opts gave one to the utilisation ceiling (max_util) */
    assert_int_equal(sizeof ((tsr_plan_opts *)0)->reserved, 56);
    assert_int_equal(sizeof ((tsr_model_info *)0)->reserved, 64);
    assert_int_equal(sizeof ((tsr_seq_stats *)0)->reserved, 64);
    /* tsr_traffic gave three of its eight reserved words to the card links */
    assert_int_equal(sizeof ((tsr_traffic *)0)->reserved, 40);
    assert_int_equal(sizeof(tsr_traffic), 8 + 13 * 8 + 40);   /* size, 13 counters */
    assert_int_equal(sizeof ((tsr_file_info *)0)->reserved, 64);
    /* a message is an array element: two words, refused when not zero
     * (tests/test_chat_template.c) */
    assert_int_equal(sizeof ((tsr_chat_msg *)0)->reserved, 16);

    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=4,threads=1", &dev), TSR_OK);
    tsr_model_opts o = { .tokenizer = SHARED_MODEL("tok512.bin"), .n_seqs = 1 };
    o.reserved[7] = 1;
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, SHARED_MODEL("stories260K.bin"), &o, &m),
                     TSR_ERR_UNSUPPORTED);
    assert_null(m);
    assert_int_equal(tsr_errcode(dev), TSR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tsr_device_errmsg(dev), "reserved"));
    assert_int_equal(tsr_model_fit(dev, SHARED_MODEL("stories260K.bin"), &o, NULL, NULL),
                     TSR_ERR_UNSUPPORTED);
    o.reserved[7] = 0;
    assert_int_equal(tsr_model_load(dev, SHARED_MODEL("stories260K.bin"), &o, &m), TSR_OK);
    tsr_model_info info;
    memset(&info, 0xff, sizeof info);
    info.size = sizeof info;
    assert_int_equal(tsr_model_get_info(m, &info), TSR_OK);
    assert_int_equal(info.size, sizeof info);   /* the caller's, kept */
    for (int i = 0; i < 8; i++) assert_int_equal(info.reserved[i], 0);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once"), TSR_OK);
    tsr_gen_opts g = { .max_tokens = 2 };
    g.reserved[0] = 5;
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, NULL), TSR_ERR_UNSUPPORTED);
    g.reserved[0] = 0;
    int got = 0;
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 2);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);

    tsr_plan_opts po = { .part = "u55c", .shape = "stories15M" };
    po.reserved[3] = 1;
    char buf[64], err[256] = "";
    assert_int_equal(tsr_plan_report(NULL, &po, 0, buf, sizeof buf, NULL, err, sizeof err),
                     TSR_ERR_UNSUPPORTED);
    assert_non_null(strstr(err, "reserved"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exports_equal_header),
        cmocka_unit_test(archive_globals_equal_header),
        cmocka_unit_test(soname_in_every_build),
        cmocka_unit_test(runtime_version),
        cmocka_unit_test(layouts_pinned),
        cmocka_unit_test(planted_field_fails),
        cmocka_unit_test(size_rule),
        cmocka_unit_test(structs_can_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
