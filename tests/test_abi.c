/*
 * test_abi.c - libtessera.so exports exactly the calls tessera.h marks
 * TSR_API (nm -D --defined-only against the header), and the ABI
 * conventions the header states hold: the runtime version, growing structs
 * (reserved words, zero-initialised callers unchanged, non-zero refused).
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

/* The growing structs' sizes as 0.3.0 (x86-64 and every LP64 ABI) has
 * them, each ending in its reserved words.  A field inserted in front of
 * `reserved` (not carved out of it: a field carved out keeps the size and
 * moves `reserved` up), a reserved array shortened or a type widened fails
 * here: that is an ABI change, which needs a new TSR_VERSION and a note of
 * what breaks (a client built against the older header would be written
 * past its struct's end). */
static void layouts_pinned(void **state)
{
    (void)state;
    if (sizeof(void *) != 8) skip();
    static const struct { const char *name; size_t size, size_now, end_now; } t[] = {
#define PIN(T, SZ) { #T, SZ, sizeof(T), offsetof(T, reserved) + sizeof((T *)0)->reserved }
        PIN(tsr_traffic, 144),    PIN(tsr_pipeline, 488), PIN(tsr_model_opts, 120),
        PIN(tsr_model_info, 232), PIN(tsr_gen_opts, 96),  PIN(tsr_seq_stats, 144),
        PIN(tsr_chat_msg, 32),    PIN(tsr_file_info, 400), PIN(tsr_plan_opts, 144),
#undef PIN
    };
    assert_int_equal(TSR_VERSION_NUMBER, 300);   /* the layouts are 0.3.0's */
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (t[i].size_now != t[i].size)
            fail_msg("%s: %zu bytes; 0.3.0 has %zu", t[i].name, t[i].size_now, t[i].size);
        if (t[i].end_now != t[i].size_now)
            fail_msg("%s: its reserved words end at %zu, not at its end (%zu)", t[i].name,
                     t[i].end_now, t[i].size_now);
    }
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
    assert_int_equal(sizeof(tsr_traffic), 10 * 8 + 64);
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
    assert_int_equal(tsr_model_get_info(m, &info), TSR_OK);
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
        cmocka_unit_test(runtime_version),
        cmocka_unit_test(layouts_pinned),
        cmocka_unit_test(structs_can_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
