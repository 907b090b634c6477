/*
 * test_fuzz_regress.c - every fixture in tests/fixtures/fuzz_crashes/NAME/ through
 * its libFuzzer harness (tests/fuzz/fuzz_NAME.c, compiled here with the
 * test compiler and its entry point renamed fuzz_NAME_one).  A harness
 * asserts its properties itself, so a fixture that crashes, trips a
 * sanitizer or fails an assertion fails this test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

int fuzz_llama2c_one(const uint8_t *data, size_t size);
int fuzz_gguf_one(const uint8_t *data, size_t size);
int fuzz_tokenizer_one(const uint8_t *data, size_t size);
int fuzz_vocab_one(const uint8_t *data, size_t size);
int fuzz_xclbin_one(const uint8_t *data, size_t size);
int fuzz_devspec_one(const uint8_t *data, size_t size);

typedef int (*harness_fn)(const uint8_t *data, size_t size);

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    uint8_t *d = malloc((size_t)len + 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return d;
}

/* Replay every file of tests/fixtures/fuzz_crashes/name/; returns how many. */
static int replay(const char *name, harness_fn fn)
{
    char dir[PATH_MAX], path[PATH_MAX + 512];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/fuzz_crashes/%s", TSR_SOURCE_DIR, name);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;   /* ., .., .gitkeep */
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        uint8_t *data = slurp(path, &len);
        print_message("%s: %s (%zu bytes)\n", name, de->d_name, len);
        assert_int_equal(fn(data, len), 0);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

/* The fixtures kept so far (tests/fixtures/fuzz_crashes/README.md): every one must
 * still be there and pass. */
static void crash_fixtures_pass(void **state)
{
    (void)state;
    assert_true(replay("llama2c", fuzz_llama2c_one) >= 3);
    assert_true(replay("devspec", fuzz_devspec_one) >= 1);
    assert_true(replay("xclbin", fuzz_xclbin_one) >= 1);
    replay("gguf", fuzz_gguf_one);
    replay("tokenizer", fuzz_tokenizer_one);
    replay("vocab", fuzz_vocab_one);
}

/* The harnesses themselves on a few plain inputs, so that a harness that
 * stops compiling or asserting is noticed here and not only in make fuzz. */
static void harnesses_take_plain_inputs(void **state)
{
    (void)state;
    const char *spec = "emu:part=u55c,pes=16";
    assert_int_equal(fuzz_devspec_one((const uint8_t *)spec, strlen(spec)), 0);
    assert_int_equal(fuzz_devspec_one((const uint8_t *)"x\ny", 3), 0);
    assert_int_equal(fuzz_xclbin_one((const uint8_t *)"xclbin2", 7), 0);
    assert_int_equal(fuzz_gguf_one((const uint8_t *)"GGUF\3\0\0\0", 8), 0);
    assert_int_equal(fuzz_llama2c_one((const uint8_t *)"ak42", 4), 0);
    size_t n;
    uint8_t *tok = slurp(SHARED_MODEL("tok512.bin"), &n);
    uint8_t *in = malloc(n + 3 + 16);
    assert_non_null(in);
    in[0] = 512 & 0xff;
    in[1] = 512 >> 8;
    in[2] = 16;
    memcpy(in + 3, "Once upon a time", 16);
    memcpy(in + 19, tok, n);
    assert_int_equal(fuzz_tokenizer_one(in, n + 19), 0);
    free(in);
    free(tok);
    uint8_t *model = slurp(SHARED_MODEL("stories260K.bin"), &n);
    assert_int_equal(fuzz_llama2c_one(model, n), 0);
    free(model);
    uint8_t *gguf = slurp(SHARED_MODEL("stories260K-q4_0.gguf"), &n);
    assert_int_equal(fuzz_gguf_one(gguf, n), 0);
    assert_int_equal(fuzz_vocab_one(gguf, n), 0);
    free(gguf);
    uint8_t *vocab = slurp(tsr_test_path("vocab/ggml-vocab-qwen2.gguf"), &n);
    assert_int_equal(fuzz_vocab_one(vocab, n), 0);
    free(vocab);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crash_fixtures_pass),
        cmocka_unit_test(harnesses_take_plain_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
