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
#include "gguf_write.h"

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

/* ---------------------------------------------- special tokens, BOS, EOG */

static void encode_all(tsr_tokenizer *t, const char *text, int flags, int *ids, int *n)
{
    tsr_err e = { 0 };
    int rc = tsr_tokenizer_encode_ex(t, text, strlen(text), flags, ids, 256, n, &e);
    if (rc) fail_msg("%s", e.msg);
}

/* A prompt with Llama 3's, ChatML's and Phi-3's special tokens written in
 * it: with special tokens parsed, each of the vocab's own is one token (and
 * Phi-3's drop the spaces after them); the ids are llama-tokenize's
 * (llama.cpp c392e509, BOS as the vocab adds it). */
static const char special_prompt[] =
    "<|start_header_id|>user<|end_header_id|>\n\nHi <|eot_id|><|im_start|>x<|im_end|> <|end|>"
    "  <|user|>\n ok";

static void test_special_llama3(void **state)
{
    (void)state;
    tsr_tokenizer *t = open_vocab("ggml-vocab-llama-bpe.gguf");
    static const int want[] = { 128000, 128006, 882, 128007, 271, 13347, 220, 128009, 27, 91,
                                318, 5011, 91, 29, 87, 27, 91, 318, 6345, 91, 29, 83739, 408, 91,
                                29, 220, 83739, 882, 91, 397, 5509 };
    int ids[256], n;
    assert_int_equal(tsr_tokenizer_add_bos(t), 1);   // Llama 3 starts with <|begin_of_text|>
    encode_all(t, special_prompt, TSR_ENC_BOS | TSR_ENC_SPECIAL, ids, &n);
    assert_int_equal(n, (int)(sizeof want / sizeof want[0]));
    assert_memory_equal(ids, want, sizeof want);
    // not parsed: <|eot_id|> is text
    encode_all(t, "Hi <|eot_id|>", 0, ids, &n);
    for (int i = 0; i < n; i++) assert_int_not_equal(ids[i], 128009);
    assert_true(n > 3);
    // end of generation: EOS and <|eot_id|>; control tokens print nothing
    assert_true(tsr_tokenizer_is_eog(t, 128001));
    assert_true(tsr_tokenizer_is_eog(t, 128009));
    assert_false(tsr_tokenizer_is_eog(t, 128006));
    assert_false(tsr_tokenizer_is_eog(t, 13347));
    size_t len;
    tsr_tokenizer_piece(t, 13347, 128009, &len);
    assert_int_equal(len, 0);
    tsr_tokenizer_free(t);
}

static void test_special_qwen2(void **state)
{
    (void)state;
    tsr_tokenizer *t = open_vocab("ggml-vocab-qwen2.gguf");
    static const int want[] = { 151644, 872, 198, 13048, 1052, 151645, 198 };
    int ids[256], n;
    assert_int_equal(tsr_tokenizer_add_bos(t), 0);   // no add_bos_token: no BOS
    encode_all(t, "<|im_start|>user\nHi there<|im_end|>\n", TSR_ENC_SPECIAL, ids, &n);
    assert_int_equal(n, 7);
    assert_memory_equal(ids, want, sizeof want);
    int eog[8];
    assert_int_equal(tsr_tokenizer_eog_ids(t, eog, 8), 2);   // <|endoftext|>, <|im_end|>
    assert_int_equal(eog[0], 151643);
    assert_int_equal(eog[1], 151645);
    tsr_tokenizer_free(t);
}

static void test_special_phi3(void **state)
{
    (void)state;
    tsr_tokenizer *t = open_vocab("ggml-vocab-phi-3.gguf");
    int ids[256], n;
    encode_all(t, special_prompt, TSR_ENC_BOS | TSR_ENC_SPECIAL, ids, &n);
    // ... <|im_end|> (text), then " " 29871, <|end|> 32007, the spaces
    // after it dropped, <|user|> 32010, its "\n " dropped, "ok" 3431
    static const int tail[] = { 29958, 29871, 32007, 32010, 3431 };
    assert_int_equal(n, 49);
    assert_int_equal(ids[0], 1);
    assert_memory_equal(ids + n - 5, tail, sizeof tail);
    tsr_tokenizer_free(t);
}

/* ------------------------------------------------ vocabularies refused --- */

/* The small byte-level BPE vocab of gguf_write.h with the given model,
 * pre-tokenizer and merges. */
static int bpe_vocab(const char *model, const char *pre, const char *const *merges, int n_merges,
                     tsr_tokenizer **t, tsr_err *e)
{
    tsr_gbuf b = { 0 };
    tsr_gguf_bpe_vocab(&b, model, pre, merges, n_merges);
    int rc = tsr_gguf_read_tokenizer(b.p, b.n, "v.gguf", t, e);
    free(b.p);
    return rc;
}

static void test_bpe_small(void **state)
{
    (void)state;
    // "a b" first, then "Ġ a", then "Ġa b": rank order decides
    static const char *const m[] = { "a b", "\xC4\xA0 a", "\xC4\xA0" "a b" };
    tsr_tokenizer *t;
    tsr_err e = { 0 };
    assert_int_equal(bpe_vocab("gpt2", "gpt-2", m, 3, &t, &e), TSR_OK);
    int ids[256], n;
    encode_all(t, "ab ab", 0, ids, &n);
    // "ab" | " ab": a+b first (rank 0) leaves Ġ ab, which no rule joins
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 256);
    assert_int_equal(ids[2], 256);
    assert_int_equal(ids[1], ' ');   // Ġ: token i is byte i's character here
    // "<|user|>" (user-defined) is cut out of any text; "<|im_end|>"
    // (control) only of a prompt's
    encode_all(t, "a<|user|><|im_end|>", 0, ids, &n);
    assert_int_equal(ids[0], 'a');
    assert_int_equal(ids[1], 260);
    assert_true(n > 3);
    encode_all(t, "a<|user|><|im_end|>", TSR_ENC_SPECIAL, ids, &n);
    assert_int_equal(n, 3);
    assert_int_equal(ids[2], 259);
    assert_true(tsr_tokenizer_is_eog(t, 259));
    tsr_tokenizer_free(t);

    // with "Ġ a" ranked before "a b", " ab" becomes Ġa then Ġab
    static const char *const m2[] = { "\xC4\xA0 a", "\xC4\xA0" "a b", "a b" };
    assert_int_equal(bpe_vocab("gpt2", "gpt-2", m2, 3, &t, &e), TSR_OK);
    encode_all(t, "ab ab", 0, ids, &n);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 256);
    assert_int_equal(ids[1], 258);
    size_t len;
    const char *p = tsr_tokenizer_piece(t, 256, 258, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(p, " ab", 3);   // decoded: Ġ is the space byte
    tsr_tokenizer_free(t);
}

static void test_bpe_refused(void **state)
{
    (void)state;
    tsr_tokenizer *t = NULL;
    tsr_err e = { 0 };
    static const char *const ok[] = { "a b" };
    assert_int_equal(bpe_vocab("gpt2", "klingon-7b", ok, 1, &t, &e), TSR_ERR_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "pre-tokenizer 'klingon-7b' is not supported"));
    assert_null(t);
    assert_int_equal(bpe_vocab("bert", "gpt-2", ok, 1, &t, &e), TSR_ERR_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "tokenizer model 'bert' is not supported"));
    assert_int_equal(bpe_vocab("gpt2", "gpt-2", NULL, 0, &t, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "tokenizer.ggml.merges"));
    static const char *const nospace[] = { "a b", "ab" };
    assert_int_equal(bpe_vocab("gpt2", "gpt-2", nospace, 2, &t, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "merges[1] 'ab' does not parse (no space"));
    static const char *const notok[] = { "a q7" };
    assert_int_equal(bpe_vocab("gpt2", "gpt-2", notok, 1, &t, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "right side is not a token"));
    static const char *const nojoin[] = { "b a" };   // "ba" is no token
    assert_int_equal(bpe_vocab("gpt2", "gpt-2", nojoin, 1, &t, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "the two joined are not a token"));
    assert_null(t);
    // no tokenizer.ggml.pre: llama.cpp's default pre-tokenizer
    assert_int_equal(bpe_vocab("gpt2", NULL, ok, 1, &t, &e), TSR_OK);
    tsr_tokenizer_free(t);
}

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
        cmocka_unit_test(test_special_llama3),
        cmocka_unit_test(test_special_qwen2),
        cmocka_unit_test(test_special_phi3),
        cmocka_unit_test(test_bpe_small),
        cmocka_unit_test(test_bpe_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
