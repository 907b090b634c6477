/*
 * test_vocab.c - GGUF tokenizers against llama.cpp's own tokenizer test
 * vectors (../shared/vocab/: NAME.gguf.inp strings, NAME.gguf.out ids, as
 * llama.cpp's tests/test-tokenizer-0 reads them: no BOS, special tokens not
 * parsed), every string of every vocabulary; decoding the ids gives the
 * string back.  Then special tokens, BOS rules, end-of-generation ids and
 * the errors a bad vocabulary gets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tokenizer.h"
#include "test_util.h"

/* shared/vocab/NAME (a path that lives until exit) */
static const char *VOCAB(const char *name)
{
    char rel[512];
    snprintf(rel, sizeof rel, "vocab/%s", name);
    return tsr_test_path(rel);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s (the shared directory's vocab/)", path);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *d = malloc((size_t)sz + 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    d[sz] = 0;
    *n = (size_t)sz;
    return d;
}

static tsr_tokenizer *open_vocab(const char *file)
{
    size_t n;
    char *d = slurp(VOCAB(file), &n);
    tsr_tokenizer *t = NULL;
    tsr_err e = { 0 };
    int rc = tsr_gguf_read_tokenizer(d, n, file, &t, &e);
    free(d);
    if (rc) fail_msg("%s: %s", file, e.msg);
    return t;
}

/* Every test string of NAME.gguf.inp gives the ids on its line of
 * NAME.gguf.out; the ids decode back to the string. */
static void check_vectors(const char *name)
{
    char f[256];
    snprintf(f, sizeof f, "%s.gguf", name);
    tsr_tokenizer *t = open_vocab(f);
    size_t ni, no;
    snprintf(f, sizeof f, "%s.gguf.inp", name);
    char *inp = slurp(VOCAB(f), &ni);
    snprintf(f, sizeof f, "%s.gguf.out", name);
    char *out = slurp(VOCAB(f), &no);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *s = inp, *line = out;
    int n_tests = 0, n_bad = 0;
    int *ids = malloc(4096 * sizeof *ids);
    char *text = malloc(65536);
    assert_non_null(ids);
    assert_non_null(text);
    while (*s) {
        char *end = strstr(s, sep);
        assert_non_null(end);
        *end = '\0';
        char *eol = strchr(line, '\n');
        assert_non_null(eol);
        *eol = '\0';
        int want[1024], nw = 0;
        for (char *p = line; *p;) {
            while (*p == ' ') p++;
            if (!*p) break;
            want[nw++] = (int)strtol(p, &p, 10);
        }
        int n = 0;
        tsr_err e = { 0 };
        int rc = tsr_tokenizer_encode_ex(t, s, strlen(s), 0, ids, 4096, &n, &e);
        int same = rc == TSR_OK && n == nw && (n == 0 || !memcmp(ids, want, (size_t)n * sizeof *ids));
        size_t tl = 0;
        for (int i = 0; i < n && rc == TSR_OK; i++) {
            size_t len;
            const char *p = tsr_tokenizer_piece(t, i ? ids[i - 1] : -1, ids[i], &len);
            assert_true(tl + len < 65536);
            memcpy(text + tl, p, len);
            tl += len;
        }
        int back = tl == strlen(s) && !memcmp(text, s, tl);
        if (!same || !back) {
            n_bad++;
            fprintf(stderr, "%s: test %d '%s': %s%s\n  want", name, n_tests, s,
                    same ? "" : "ids differ", back ? "" : " decodes to other text");
            for (int i = 0; i < nw; i++) fprintf(stderr, " %d", want[i]);
            fprintf(stderr, "\n  got ");
            for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
            fprintf(stderr, " (rc %d %s)\n  text '%.*s'\n", rc, e.msg, (int)tl, text);
        }
        n_tests++;
        s = end + sizeof sep - 1;
        line = eol + 1;
    }
    assert_int_equal(*line, '\0');   // as many lines of ids as strings
    assert_int_equal(n_tests, 46);
    assert_int_equal(n_bad, 0);
    free(ids);
    free(text);
    free(inp);
    free(out);
    tsr_tokenizer_free(t);
}

static void test_llama_spm(void **state) { (void)state; check_vectors("ggml-vocab-llama-spm"); }
static void test_phi_3(void **state) { (void)state; check_vectors("ggml-vocab-phi-3"); }
static void test_gpt_2(void **state) { (void)state; check_vectors("ggml-vocab-gpt-2"); }
static void test_llama_bpe(void **state) { (void)state; check_vectors("ggml-vocab-llama-bpe"); }
static void test_qwen2(void **state) { (void)state; check_vectors("ggml-vocab-qwen2"); }
static void test_deepseek_coder(void **state) { (void)state; check_vectors("ggml-vocab-deepseek-coder"); }
static void test_starcoder(void **state) { (void)state; check_vectors("ggml-vocab-starcoder"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_spm),
        cmocka_unit_test(test_phi_3),
        cmocka_unit_test(test_gpt_2),
        cmocka_unit_test(test_llama_bpe),
        cmocka_unit_test(test_qwen2),
        cmocka_unit_test(test_deepseek_coder),
        cmocka_unit_test(test_starcoder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
