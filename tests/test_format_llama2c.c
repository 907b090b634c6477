/*
 * test_format_llama2c.c - tsr_checkpoint_open on llama2.c checkpoints: the real
 * stories260K.bin (legacy), hand-built legacy files, synthetic v1/v2 files,
 * and every way a header can be wrong (each case asserts the exact status
 * and that the message names the file).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "test_util.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */

/* A fresh empty temp file; its path goes into buf (>= 32 bytes). */
static void tmp_path(char *buf)
{
    strcpy(buf, "/tmp/tsr_fmt_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

/* Write synth shape spec (group 0: v1, else v2) to a new temp file. */
static void synth_file(char *path, const char *spec, int group, uint64_t seed)
{
    tsr_config cfg;
    tsr_err e = { 0 };
    tmp_path(path);
    assert_int_equal(tsr_synth_shape(spec, &cfg, &e), TSR_OK);
    assert_int_equal(tsr_synth_write(path, &cfg, group, seed, &e), TSR_OK);
}

static void patch(const char *path, long off, const void *bytes, size_t n)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
    close(fd);
}

static void patch_i32(const char *path, long off, int32_t v) { patch(path, off, &v, 4); }

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Open must fail with code; the message names the file and contains what. */
static void expect_fail(const char *path, int code, const char *what)
{
    tsr_checkpoint *m = (tsr_checkpoint *)0x1;
    tsr_err e = { 0 };
    int rc = tsr_checkpoint_open(path, &m, &e);
    if (rc != code || !strstr(e.msg, path) || !strstr(e.msg, what))
        print_error("open %s: rc %d (want %d), msg \"%s\" (want \"%s\")\n",
                    path, rc, code, e.msg, what);
    assert_int_equal(rc, code);
    assert_int_equal(e.code, code);
    assert_null(m);
    assert_non_null(strstr(e.msg, path));
    assert_non_null(strstr(e.msg, what));
    assert_null(strchr(e.msg, '\n'));   // one line
}

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* ------------------------------------------------------------------------ */
/* The real stories260K.bin                                                   */

static void test_stories260k(void **state)
{
    (void)state;
    const char *path = SHARED_MODEL("stories260K.bin");
    tsr_checkpoint *m = NULL;
    tsr_err e = { 0 };
    assert_int_equal(tsr_checkpoint_open(path, &m, &e), TSR_OK);
    const tsr_config *c = &m->cfg;
    assert_int_equal(c->dim, 64);
    assert_int_equal(c->hidden_dim, 172);
    assert_int_equal(c->n_layers, 5);
    assert_int_equal(c->n_heads, 8);
    assert_int_equal(c->n_kv_heads, 4);
    assert_int_equal(c->vocab_size, 512);
    assert_int_equal(c->seq_len, 512);
    assert_int_equal(c->shared_classifier, 1);
    assert_int_equal(c->format, TSR_FMT_LLAMA2C_LEGACY);
    assert_int_equal(c->group_size, 0);
    assert_true(c->rope_theta == 10000.0f);
    assert_true(c->norm_eps == 1e-5f);
    assert_int_equal(m->map_len, 1056540);

    // values as `od -t x4` shows them at their file offsets
    assert_int_equal(bits(tsr_tensor_get(&m->tok_embedding, 0)), 0xbe96e950); // off 28
    assert_int_equal(bits(m->rms_att[0].f[0]), 0x3f78e4ea);                   // off 131100
    assert_int_equal(bits(m->w2[0].f[0]), 0x3e0a394c);                        // off 599580
    assert_int_equal(bits(m->rms_final.f[0]), 0x401d54ef);                    // off 1039900
    assert_true(m->tok_embedding.f == (const float *)((const char *)m->map + 28));

    // shapes; the shared classifier is the embedding's view
    assert_int_equal(m->wk[4].rows, 32);
    assert_int_equal(m->wk[4].cols, 64);
    assert_int_equal(m->w2[4].rows, 64);
    assert_int_equal(m->w2[4].cols, 172);
    assert_int_equal(m->w1[0].rows, 172);
    assert_true(m->wcls.f == m->tok_embedding.f);
    assert_int_equal(m->wcls.rows, 512);

    // 512*64 + 5*(2*64 + 2*64*64 + 2*32*64 + 3*172*64) + 64
    assert_int_equal(tsr_checkpoint_param_count(m), 260032);

    float row[64];
    tsr_tensor_row(&m->tok_embedding, 0, row);
    assert_int_equal(bits(row[0]), 0xbe96e950);
    tsr_checkpoint_close(m);
    tsr_checkpoint_close(NULL);   // harmless
}

/* ------------------------------------------------------------------------ */
/* Hand-built legacy file with a separate classifier                          */

/* dim 8, hidden 16, 2 layers, 2 heads, 1 kv head, vocab -10 (unshared),
 * seq 4; every float holds its own index so views can be checked. */
static void test_legacy_unshared(void **state)
{
    (void)state;
    enum { D = 8, H = 16, L = 2, NH = 2, KV = 1, V = 10, S = 4 };
    const int hs = D / NH, kv_dim = KV * hs;
    const int n_floats = V * D + L * D + L * D * D + 2 * L * kv_dim * D + L * D * D
                       + L * D + 3 * L * H * D + D + 2 * S * hs / 2 + V * D;
    char path[32];
    tmp_path(path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int32_t hdr[7] = { D, H, L, NH, KV, -V, S };
    fwrite(hdr, 4, 7, f);
    for (int i = 0; i < n_floats; i++) { float x = (float)i; fwrite(&x, 4, 1, f); }
    fclose(f);

    tsr_checkpoint *m = NULL;
    tsr_err e = { 0 };
    assert_int_equal(tsr_checkpoint_open(path, &m, &e), TSR_OK);
    assert_int_equal(m->cfg.vocab_size, V);
    assert_int_equal(m->cfg.shared_classifier, 0);
    int i = 0;
    assert_true(m->tok_embedding.f[0] == (float)i);  i += V * D;
    assert_true(m->rms_att[0].f[0] == (float)i);     i += L * D;
    assert_true(m->wq[0].f[0] == (float)i);          i += L * D * D;
    assert_true(m->wk[1].f[0] == (float)(i + kv_dim * D)); i += L * kv_dim * D;
    assert_true(m->wv[0].f[0] == (float)i);          i += L * kv_dim * D;
    assert_true(m->wo[0].f[0] == (float)i);          i += L * D * D;
    assert_true(m->rms_ffn[1].f[0] == (float)(i + D)); i += L * D;
    assert_true(m->w1[0].f[0] == (float)i);          i += L * H * D;
    assert_true(m->w2[0].f[0] == (float)i);          i += L * D * H;
    assert_true(m->w3[1].f[0] == (float)(i + H * D)); i += L * H * D;
    assert_true(m->rms_final.f[0] == (float)i);      i += D;
    i += 2 * S * hs / 2;                             // freq_cis skipped
    assert_true(m->wcls.f[0] == (float)i);
    assert_true(m->wcls.f[V * D - 1] == (float)(n_floats - 1));
    assert_true(m->wcls.f != m->tok_embedding.f);
    // unshared classifier counted, freq_cis not
    assert_int_equal(tsr_checkpoint_param_count(m),
                     (uint64_t)n_floats - 2 * S * hs / 2);
    tsr_checkpoint_close(m);

    // one byte short of the wcls it promises
    assert_int_equal(truncate(path, 28 + 4L * n_floats - 1), 0);
    char want[64];
    snprintf(want, sizeof want, "header implies %d bytes, file has %d",
             28 + 4 * n_floats, 28 + 4 * n_floats - 1);
    expect_fail(path, TSR_ERR_FORMAT, want);
    // a legacy header cut short
    assert_int_equal(truncate(path, 12), 0);
    expect_fail(path, TSR_ERR_FORMAT, "truncated");
    assert_int_equal(truncate(path, 3), 0);
    expect_fail(path, TSR_ERR_FORMAT, "truncated");
    assert_int_equal(truncate(path, 0), 0);
    expect_fail(path, TSR_ERR_FORMAT, "truncated");
    unlink(path);
}

/* ------------------------------------------------------------------------ */
/* Bad files: each built by patching a small synth model                      */

#define SMALL "64x2:vocab=256,seq=32"

static void test_missing_file(void **state)
{
    (void)state;
    expect_fail("/tmp/tsr_no_such_dir/model.bin", TSR_ERR_IO, "cannot open");
    expect_fail("/tmp", TSR_ERR_IO, "regular file");
}

static void test_truncated(void **state)
{
    (void)state;
    char path[32], want[96];
    synth_file(path, SMALL, 0, 1);
    long n = file_size(path);
    assert_int_equal(truncate(path, n - 1), 0);
    snprintf(want, sizeof want, "truncated: header implies %ld bytes, file has %ld", n, n - 1);
    expect_fail(path, TSR_ERR_FORMAT, want);
    assert_int_equal(truncate(path, 256), 0);   // header only
    snprintf(want, sizeof want, "truncated: header implies %ld bytes, file has 256", n);
    expect_fail(path, TSR_ERR_FORMAT, want);
    assert_int_equal(truncate(path, 100), 0);   // inside the header
    expect_fail(path, TSR_ERR_FORMAT, "truncated: 100 bytes");
    unlink(path);
}

static void test_size_one_byte_extra(void **state)
{
    (void)state;
    char path[32], want[96];
    synth_file(path, SMALL, 0, 1);
    long n = file_size(path);
    FILE *f = fopen(path, "ab");
    fputc(0, f);
    fclose(f);
    snprintf(want, sizeof want, "size mismatch: header implies %ld bytes, file has %ld", n, n + 1);
    expect_fail(path, TSR_ERR_FORMAT, want);
    unlink(path);
}

static void test_bad_magic(void **state)
{
    (void)state;
    char path[32];
    synth_file(path, SMALL, 0, 1);
    patch(path, 0, "ak42", 4);   // the magic's name spelled in the wrong byte order
    expect_fail(path, TSR_ERR_FORMAT, "bad magic 0x32346b61");
    unlink(path);
}

static void test_bad_version(void **state)
{
    (void)state;
    char path[32];
    synth_file(path, SMALL, 0, 1);
    patch_i32(path, 4, 3);
    expect_fail(path, TSR_ERR_UNSUPPORTED, "version 3");
    patch_i32(path, 4, 0);
    expect_fail(path, TSR_ERR_UNSUPPORTED, "version 0");
    unlink(path);
}

/* Patch the int32 field at off to v and expect a FORMAT error naming what;
 * then restore orig. */
static void bad_field(const char *path, long off, int32_t v, int32_t orig, const char *what)
{
    patch_i32(path, off, v);
    expect_fail(path, TSR_ERR_FORMAT, what);
    patch_i32(path, off, orig);
}

static void test_bad_dims(void **state)
{
    (void)state;
    char path[32];
    synth_file(path, SMALL, 0, 1);   // dim 64, hidden 192, 2 layers, 1 head
    // v1 header: dim at 8, hidden 12, layers 16, heads 20, kv 24, vocab 28, seq 32
    bad_field(path, 8, 0, 64, "dim 0 out of range");
    bad_field(path, 8, -64, 64, "dim -64 out of range");
    bad_field(path, 8, 1 << 30, 64, "dim 1073741824 out of range");
    bad_field(path, 12, 1 << 30, 192, "hidden_dim 1073741824 out of range");
    bad_field(path, 16, 0, 2, "n_layers 0 out of range");
    bad_field(path, 16, INT32_MAX, 2, "n_layers 2147483647 out of range");
    bad_field(path, 20, 3, 1, "n_heads 3 does not divide dim 64");
    bad_field(path, 20, 0, 1, "n_heads 0 out of range");
    bad_field(path, 28, -256, 256, "vocab_size -256 out of range");
    bad_field(path, 32, 0, 32, "seq_len 0 out of range");
    // kv heads must divide heads; head size must be even
    patch_i32(path, 20, 4);                        // 4 heads of 16
    bad_field(path, 24, 3, 1, "n_kv_heads 3 does not divide n_heads 4");
    patch_i32(path, 20, 1);
    bad_field(path, 8, 63, 64, "head_size 63 (dim 63 / n_heads 1) is odd");
    bad_field(path, 8, 62, 64, "size mismatch: header implies");   // valid shape, wrong size
    uint8_t two = 2;
    patch(path, 36, &two, 1);
    expect_fail(path, TSR_ERR_FORMAT, "shared_classifier byte is 2");
    uint8_t one = 1;
    patch(path, 36, &one, 1);
    tsr_checkpoint *m = NULL;
    tsr_err e = { 0 };
    assert_int_equal(tsr_checkpoint_open(path, &m, &e), TSR_OK);   // restored intact
    tsr_checkpoint_close(m);
    unlink(path);
}

/* Largest legal dims: the size is computed without overflow and refused. */
static void test_huge_but_legal_dims(void **state)
{
    (void)state;
    char path[32], want[96];
    synth_file(path, SMALL, 0, 1);
    long n = file_size(path);
    patch_i32(path, 8, TSR_CKPT_MAX_DIM);
    patch_i32(path, 12, TSR_CKPT_MAX_DIM);
    patch_i32(path, 16, TSR_CKPT_MAX_LAYERS);
    patch_i32(path, 28, TSR_CKPT_MAX_VOCAB);
    patch_i32(path, 32, TSR_CKPT_MAX_SEQ);
    snprintf(want, sizeof want, "file has %ld", n);
    expect_fail(path, TSR_ERR_FORMAT, want);
    unlink(path);
}

static void test_v2_bad_group(void **state)
{
    (void)state;
    char path[32];
    synth_file(path, "64x2:hidden=96,vocab=256,seq=32", 64, 1);
    patch_i32(path, 37, 48);   // 256*64 = 16384 is not a multiple of 48
    expect_fail(path, TSR_ERR_FORMAT, "group_size 48 does not divide the 16384 elements of tok_embedding");
    patch_i32(path, 37, 0);
    expect_fail(path, TSR_ERR_FORMAT, "group_size 0 must be > 0");
    patch_i32(path, 37, 32);   // legal, but then the scales take more bytes
    expect_fail(path, TSR_ERR_FORMAT, "truncated: header implies");
    unlink(path);
}

/* ------------------------------------------------------------------------ */
/* Q8_0 scales that start at an odd offset                                    */

/* dim 6, 1 head of 6, hidden 7, vocab 5, group 2: tok_embedding has 30
 * int8 values, so the scales after it start 2 bytes off a float boundary;
 * the loader must hand out aligned copies.  UBSan checks the alignment. */
static void test_v2_misaligned_scales(void **state)
{
    (void)state;
    const char *spec = "6x1:heads=1,hidden=7,vocab=5,seq=8,shared=0";
    char p1[32], p2[32];
    synth_file(p1, spec, 0, 7);
    synth_file(p2, spec, 2, 7);
    tsr_checkpoint *m1 = NULL, *m2 = NULL;
    tsr_err e = { 0 };
    assert_int_equal(tsr_checkpoint_open(p1, &m1, &e), TSR_OK);
    assert_int_equal(tsr_checkpoint_open(p2, &m2, &e), TSR_OK);
    assert_int_equal(m2->cfg.group_size, 2);
    // tok_embedding's scales sit at 256 + 4*18 + 30: they must be a copy
    const char *map = m2->map, *s0 = (const char *)m2->tok_embedding.s;
    assert_true(s0 < map || s0 >= map + m2->map_len);
    assert_true((const char *)m2->tok_embedding.q == map + 256 + 4 * 18);
    const tsr_tensor *t1[] = { &m1->tok_embedding, &m1->wq[0], &m1->w1[0], &m1->w2[0], &m1->wcls };
    const tsr_tensor *t2[] = { &m2->tok_embedding, &m2->wq[0], &m2->w1[0], &m2->w2[0], &m2->wcls };
    for (int k = 0; k < 5; k++) {
        assert_int_equal(t2[k]->type, TSR_DT_Q8_0);
        assert_int_equal((uintptr_t)t2[k]->s % sizeof(float), 0);
        size_t n = (size_t)t2[k]->rows * t2[k]->cols;
        for (size_t i = 0; i < n; i++) {
            float s = t2[k]->s[i / 2];
            assert_true(fabsf(tsr_tensor_get(t2[k], i) - tsr_tensor_get(t1[k], i)) <= 0.5f * s + 1e-7f);
        }
    }
    tsr_checkpoint_close(m1);
    tsr_checkpoint_close(m2);
    unlink(p1);
    unlink(p2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories260k),
        cmocka_unit_test(test_legacy_unshared),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_size_one_byte_extra),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_bad_version),
        cmocka_unit_test(test_bad_dims),
        cmocka_unit_test(test_huge_but_legal_dims),
        cmocka_unit_test(test_v2_bad_group),
        cmocka_unit_test(test_v2_misaligned_scales),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
