/*
 * test_synth.c - synthetic checkpoints: shape specs, the v1/v2 writer, and
 * round trips through tsr_checkpoint_open (including Q8_0 groups that cross row
 * ends, checked against the exporter's quantization rule).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "model.h"
#include "tessera.h"
#include "ref/golden.h"
#include "test_util.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */

static void tmp_path(char *buf)
{
    strcpy(buf, "/tmp/tsr_synth_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

static void shape(const char *spec, tsr_config *c)
{
    tsr_err e = { 0 };
    int rc = tsr_synth_shape(spec, c, &e);
    if (rc != TSR_OK) print_error("%s: %s\n", spec, e.msg);
    assert_int_equal(rc, TSR_OK);
}

static void expect_cfg(const tsr_config *c, int dim, int hidden, int layers, int heads,
                       int kv, int vocab, int seq)
{
    assert_int_equal(c->dim, dim);
    assert_int_equal(c->hidden_dim, hidden);
    assert_int_equal(c->n_layers, layers);
    assert_int_equal(c->n_heads, heads);
    assert_int_equal(c->n_kv_heads, kv);
    assert_int_equal(c->vocab_size, vocab);
    assert_int_equal(c->seq_len, seq);
}

/* Write spec (group 0: v1) to a temp file and open it. */
static tsr_checkpoint *synth_open(char *path, const char *spec, int group, uint64_t seed)
{
    tsr_config c;
    tsr_err e = { 0 };
    shape(spec, &c);
    tmp_path(path);
    assert_int_equal(tsr_synth_write(path, &c, group, seed, &e), TSR_OK);
    tsr_checkpoint *m = NULL;
    int rc = tsr_checkpoint_open(path, &m, &e);
    if (rc != TSR_OK) print_error("%s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    return m;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Closed-form weight count of a llama2.c shape. */
static uint64_t params(const tsr_config *c)
{
    uint64_t d = c->dim, h = c->hidden_dim, kv = (uint64_t)c->n_kv_heads * (d / c->n_heads);
    uint64_t n = c->vocab_size * d + c->n_layers * (2 * d + 2 * d * d + 2 * kv * d + 3 * h * d) + d;
    return c->shared_classifier ? n : n + c->vocab_size * d;
}

/* ------------------------------------------------------------------------ */
/* Shapes                                                                     */

static void test_presets(void **state)
{
    (void)state;
    tsr_config c;
    shape("stories260K", &c);
    expect_cfg(&c, 64, 172, 5, 8, 4, 512, 512);
    shape("stories15M", &c);
    expect_cfg(&c, 288, 768, 6, 6, 6, 32000, 256);
    assert_int_equal(c.shared_classifier, 1);
    assert_int_equal(c.format, TSR_FMT_LLAMA2C_V1);
    assert_true(c.rope_theta == 10000.0f && c.norm_eps == 1e-5f);
    shape("stories42M", &c);
    expect_cfg(&c, 512, 1376, 8, 8, 8, 32000, 1024);
    shape("stories110M", &c);
    expect_cfg(&c, 768, 2048, 12, 12, 12, 32000, 1024);
    shape("stories15M:seq=64", &c);      // presets take options too
    expect_cfg(&c, 288, 768, 6, 6, 6, 32000, 64);
}

static void test_dim_x_layers(void **state)
{
    (void)state;
    tsr_config c;
    // llama2.c's rule: 4*64 = 256, 2/3 -> 170, up to a multiple of 32 -> 192
    shape("64x2", &c);
    expect_cfg(&c, 64, 192, 2, 1, 1, 32000, 1024);
    // the rule reproduces the stories widths
    shape("288x6", &c);
    expect_cfg(&c, 288, 768, 6, 4, 4, 32000, 1024);
    shape("512x8", &c);
    assert_int_equal(c.hidden_dim, 1376);
    shape("768x12", &c);
    assert_int_equal(c.hidden_dim, 2048);
    shape("32x1", &c);                     // heads at least 1
    assert_int_equal(c.n_heads, 1);
    shape("128x3:hidden=96,heads=4,kv=2,vocab=100,seq=16,shared=0", &c);
    expect_cfg(&c, 128, 96, 3, 4, 2, 100, 16);
    assert_int_equal(c.shared_classifier, 0);
    shape("128x3:heads=4", &c);            // kv follows heads
    assert_int_equal(c.n_kv_heads, 4);
}

static void test_bad_specs(void **state)
{
    (void)state;
    const char *bad[] = { "", "stories", "abc", "64x", "x2", "64x2junk", "64y2",
                          "64x2:foo=1", "64x2:hidden=", "64x2:hidden=9x", "64x0",
                          "-64x2", "64x2:heads=3", "64x2:heads=2,kv=3",
                          "64x2:shared=2", "1073741824x2", "99999999999x2" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsr_config c;
        tsr_err e = { 0 };
        int rc = tsr_synth_shape(bad[i], &c, &e);
        if (rc != TSR_ERR_ARG) print_error("spec \"%s\" gave %d\n", bad[i], rc);
        assert_int_equal(rc, TSR_ERR_ARG);
        assert_true(e.msg[0] != '\0');
        if (bad[i][0]) assert_non_null(strstr(e.msg, bad[i]));
    }
}

/* ------------------------------------------------------------------------ */
/* Writer: errors and determinism                                             */

static void test_write_errors(void **state)
{
    (void)state;
    tsr_config c;
    tsr_err e = { 0 };
    char path[32];
    tmp_path(path);
    shape("64x2:hidden=96,vocab=256,seq=32", &c);
    assert_int_equal(tsr_synth_write(path, &c, 48, 1, &e), TSR_ERR_ARG);
    assert_non_null(strstr(e.msg, path));
    assert_non_null(strstr(e.msg, "group_size 48 does not divide"));
    assert_int_equal(tsr_synth_write(path, &c, -2, 1, &e), TSR_ERR_ARG);
    assert_non_null(strstr(e.msg, path));
    const char *nodir = "/tmp/tsr_no_such_dir/x.bin";
    assert_int_equal(tsr_synth_write(nodir, &c, 0, 1, &e), TSR_ERR_IO);
    assert_non_null(strstr(e.msg, nodir));
    unlink(path);
}

/* A write that fails on a device (ENOSPC from a /dev/full-like node) says
 * so and leaves the node in place: only a regular file it half wrote is
 * removed.  As root the test makes its own node (mknod c 1 7), so a
 * regression cannot delete the machine's /dev/full. */
static void test_write_error_keeps_device(void **state)
{
    (void)state;
    char dir[] = "/tmp/tsr_synth_dev_XXXXXX", node[64];
    assert_non_null(mkdtemp(dir));
    const char *path = "/dev/full";
    if (geteuid() == 0) {
        snprintf(node, sizeof node, "%s/full", dir);
        assert_int_equal(mknod(node, S_IFCHR | 0666, makedev(1, 7)), 0);
        path = node;
    }
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISCHR(sb.st_mode)) { rmdir(dir); skip(); return; }
    tsr_config c;
    tsr_err e = { 0 };
    shape("stories260K", &c);
    assert_int_equal(tsr_synth_write(path, &c, 0, 1, &e), TSR_ERR_IO);
    assert_non_null(strstr(e.msg, "write failed"));
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    if (path == node) unlink(node);
    rmdir(dir);
}

static int files_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    assert_non_null(fa);
    assert_non_null(fb);
    int ca, cb, same = 1;
    do { ca = fgetc(fa); cb = fgetc(fb); if (ca != cb) same = 0; } while (same && ca != EOF);
    fclose(fa);
    fclose(fb);
    return same;
}

static void test_deterministic(void **state)
{
    (void)state;
    tsr_config c;
    tsr_err e = { 0 };
    char a[32], b[32];
    tmp_path(a);
    tmp_path(b);
    shape("64x2:vocab=256,seq=32", &c);
    assert_int_equal(tsr_synth_write(a, &c, 32, 42, &e), TSR_OK);
    assert_int_equal(tsr_synth_write(b, &c, 32, 42, &e), TSR_OK);
    assert_true(files_equal(a, b));
    assert_int_equal(tsr_synth_write(b, &c, 32, 43, &e), TSR_OK);
    assert_false(files_equal(a, b));
    unlink(a);
    unlink(b);
}

/* ------------------------------------------------------------------------ */
/* Round trips                                                                */

/* v1 fp32 of a small shape: header, sizes, norm weights, value statistics. */
/* The legacy (version 0) layout: what run.c and llama.cpp's converter
 * read.  Same weights as version 1 for the same seed, in the legacy order
 * with RoPE's table (seq_len x head_size / 2, cos then sin) before the
 * classifier; a separate classifier is announced by a negative vocab. */
static void test_roundtrip_legacy(void **state)
{
    (void)state;
    char p0[32], p1[32];
    tsr_checkpoint *m0 = synth_open(p0, "64x2:vocab=256,seq=32,shared=0", TSR_SYNTH_LEGACY, 5);
    tsr_checkpoint *m1 = synth_open(p1, "64x2:vocab=256,seq=32,shared=0", 0, 5);
    const tsr_config *c = &m0->cfg;
    assert_int_equal(c->format, TSR_FMT_LLAMA2C_LEGACY);
    assert_int_equal(c->shared_classifier, 0);
    expect_cfg(c, 64, 192, 2, 1, 1, 256, 32);
    uint64_t sz;
    assert_int_equal(tsr_llama2c_size(c, &sz), TSR_OK);
    assert_int_equal(file_size(p0), (long)sz);
    /* 7 int32, the parameters, and RoPE's two tables of 32 x 32 */
    assert_int_equal(sz, 28 + 4 * params(c) + 4 * 2 * 32 * 32);
    const tsr_tensor *a[] = { &m0->tok_embedding, &m0->wq[1], &m0->w2[0], &m0->w3[1], &m0->wcls };
    const tsr_tensor *b[] = { &m1->tok_embedding, &m1->wq[1], &m1->w2[0], &m1->w3[1], &m1->wcls };
    for (int k = 0; k < 5; k++) {
        size_t n = (size_t)a[k]->rows * a[k]->cols;
        assert_int_equal(n, (size_t)b[k]->rows * b[k]->cols);
        assert_memory_equal(a[k]->f, b[k]->f, n * sizeof(float));
    }
    assert_true(m0->rms_final.f[63] == 1.0f);
    /* RoPE's table: position 1, pair 0 is cos(1) then, 32 x 32 floats on,
     * sin(1); it sits right after rms_final */
    FILE *f = fopen(p0, "rb");
    assert_non_null(f);
    float cs[2];
    long table = 28 + 4L * (256 * 64 + 2 * (64 + 4 * 64 * 64 + 64 + 3 * 64 * 192) + 64);
    assert_int_equal(fseek(f, table + 4L * 32, SEEK_SET), 0);   /* t = 1, j = 0 */
    assert_int_equal(fread(&cs[0], 4, 1, f), 1);
    assert_int_equal(fseek(f, table + 4L * (32 * 32 + 32), SEEK_SET), 0);
    assert_int_equal(fread(&cs[1], 4, 1, f), 1);
    fclose(f);
    assert_true(fabsf(cs[0] - cosf(1.0f)) < 1e-6f);
    assert_true(fabsf(cs[1] - sinf(1.0f)) < 1e-6f);
    tsr_checkpoint_close(m0);
    tsr_checkpoint_close(m1);
    unlink(p0);
    unlink(p1);
}

static void test_roundtrip_v1(void **state)
{
    (void)state;
    char path[32];
    tsr_checkpoint *m = synth_open(path, "64x2:vocab=256,seq=32,shared=0", 0, 5);
    const tsr_config *c = &m->cfg;
    expect_cfg(c, 64, 192, 2, 1, 1, 256, 32);
    assert_int_equal(c->format, TSR_FMT_LLAMA2C_V1);
    assert_int_equal(c->shared_classifier, 0);
    assert_int_equal(c->group_size, 0);
    assert_int_equal(tsr_checkpoint_param_count(m), params(c));
    uint64_t sz;
    assert_int_equal(tsr_llama2c_size(c, &sz), TSR_OK);
    assert_int_equal(sz, 256 + 4 * params(c));
    assert_int_equal(file_size(path), (long)sz);

    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 64; i++) {
            assert_true(m->rms_att[l].f[i] == 1.0f);
            assert_true(m->rms_ffn[l].f[i] == 1.0f);
        }
    assert_true(m->rms_final.f[63] == 1.0f);
    assert_true(m->wcls.f != m->tok_embedding.f);
    assert_int_equal(m->w2[1].rows, 64);
    assert_int_equal(m->w2[1].cols, 192);

    // normal(0, 0.02): sample mean and std of w1[0] (12288 values)
    const tsr_tensor *t = &m->w1[0];
    size_t n = (size_t)t->rows * t->cols;
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) { double x = tsr_tensor_get(t, i); sum += x; sq += x * x; }
    double mean = sum / n, sd = sqrt(sq / n - mean * mean);
    assert_true(fabs(mean) < 0.001);
    assert_true(fabs(sd - 0.02) < 0.001);
    // different tensors get different streams
    assert_true(m->wq[0].f[0] != m->wq[1].f[0]);
    assert_true(m->wcls.f[0] != m->tok_embedding.f[0]);
    tsr_checkpoint_close(m);
    unlink(path);
}

/* v2 must hold exactly the exporter's quantization of the v1 weights of the
 * same seed: scale = max|w|/127 per flat group, q = round(w/scale). */
static void check_quantized(const tsr_tensor *tq, const tsr_tensor *tf, int group)
{
    assert_int_equal(tq->type, TSR_DT_Q8_0);
    assert_int_equal(tq->group, group);
    assert_int_equal(tq->rows, tf->rows);
    assert_int_equal(tq->cols, tf->cols);
    size_t n = (size_t)tf->rows * tf->cols;
    for (size_t g = 0; g < n / group; g++) {
        const float *w = tf->f + g * group;   // (group,)
        float amax = 0.0f;
        for (int j = 0; j < group; j++) amax = fmaxf(amax, fabsf(w[j]));
        float scale = amax / 127.0f;
        assert_true(tq->s[g] == scale);
        for (int j = 0; j < group; j++) {
            size_t i = g * group + j;
            assert_int_equal(tq->q[i], (int8_t)roundf(w[j] / scale));
            assert_true(tsr_tensor_get(tq, i) == (float)tq->q[i] * tq->s[g]);
            assert_true(fabsf(tsr_tensor_get(tq, i) - w[j]) <= 0.5f * scale * 1.0001f);
        }
    }
}

static void test_roundtrip_v2(void **state)
{
    (void)state;
    const char *spec = "64x2:hidden=96,heads=4,kv=2,vocab=256,seq=32,shared=0";
    char p1[32], p2[32];
    tsr_checkpoint *m1 = synth_open(p1, spec, 0, 9);
    tsr_checkpoint *m2 = synth_open(p2, spec, 32, 9);
    const tsr_config *c = &m2->cfg;
    expect_cfg(c, 64, 96, 2, 4, 2, 256, 32);
    assert_int_equal(c->format, TSR_FMT_LLAMA2C_V2);
    assert_int_equal(c->group_size, 32);
    assert_int_equal(tsr_checkpoint_param_count(m2), tsr_checkpoint_param_count(m1));
    // header + fp32 norms + int8 matrices + one fp32 scale per 32
    uint64_t norms = 2 * 2 * 64 + 64, mats = params(c) - norms;
    assert_int_equal(file_size(p2), (long)(256 + 4 * norms + mats + 4 * mats / 32));
    assert_true(m2->rms_final.type == TSR_DT_F32 && m2->rms_final.f[0] == 1.0f);

    check_quantized(&m2->tok_embedding, &m1->tok_embedding, 32);
    check_quantized(&m2->wcls, &m1->wcls, 32);
    for (int l = 0; l < 2; l++) {
        check_quantized(&m2->wq[l], &m1->wq[l], 32);
        check_quantized(&m2->wk[l], &m1->wk[l], 32);
        check_quantized(&m2->wv[l], &m1->wv[l], 32);
        check_quantized(&m2->wo[l], &m1->wo[l], 32);
        check_quantized(&m2->w1[l], &m1->w1[l], 32);
        check_quantized(&m2->w2[l], &m1->w2[l], 32);
        check_quantized(&m2->w3[l], &m1->w3[l], 32);
    }
    assert_int_equal(m2->wk[1].rows, 32);   // kv_dim = 2 * 16
    tsr_checkpoint_close(m1);
    tsr_checkpoint_close(m2);
    unlink(p1);
    unlink(p2);
}

/* hidden 96, group 64: w2 is (64, 96), so its groups cross row ends
 * (group 1 covers row 0 cols 64..95 and row 1 cols 0..31).  Element i must
 * use scale s[i / 64] of the flat tensor, through get and row alike. */
static void test_v2_groups_cross_rows(void **state)
{
    (void)state;
    const char *spec = "64x2:hidden=96,vocab=256,seq=32";
    char p1[32], p2[32];
    tsr_checkpoint *m1 = synth_open(p1, spec, 0, 11);
    tsr_checkpoint *m2 = synth_open(p2, spec, 64, 11);
    assert_int_equal(m2->cfg.hidden_dim, 96);
    assert_int_equal(m2->cfg.group_size, 64);
    assert_true(m2->wcls.q == m2->tok_embedding.q);   // shared: same view
    for (int l = 0; l < 2; l++) {
        const tsr_tensor *t = &m2->w2[l];
        assert_int_equal(t->rows, 64);
        assert_int_equal(t->cols, 96);
        int differs = 0;   // a per-row scale index would give other values
        float row[96];
        for (int r = 0; r < t->rows; r++) {
            tsr_tensor_row(t, r, row);
            for (int j = 0; j < t->cols; j++) {
                size_t i = (size_t)r * 96 + j;
                float want = (float)t->q[i] * t->s[i / 64];
                assert_true(tsr_tensor_get(t, i) == want);
                assert_true(row[j] == want);
                size_t per_row = (size_t)r * 2 + j / 64;   // ceil(96/64) groups a row
                if (t->q[i] != 0 && t->s[per_row] != t->s[i / 64]) differs = 1;
            }
        }
        assert_true(differs);
        check_quantized(t, &m1->w2[l], 64);
        check_quantized(&m2->w1[l], &m1->w1[l], 64);
    }
    tsr_checkpoint_close(m1);
    tsr_checkpoint_close(m2);
    unlink(p1);
    unlink(p2);
}

/* The real stories15M shape, v1 fp32 (~60 MB): written, opened, deleted. */
static void test_stories15m_v1(void **state)
{
    (void)state;
    char path[32];
    tsr_checkpoint *m = synth_open(path, "stories15M", 0, 15);
    expect_cfg(&m->cfg, 288, 768, 6, 6, 6, 32000, 256);
    // 32000*288 + 6*(2*288 + 2*288^2 + 2*288^2 + 3*768*288) + 288
    assert_int_equal(tsr_checkpoint_param_count(m), 15191712);
    assert_int_equal(file_size(path), 256 + 4L * 15191712);
    const tsr_tensor *t = &m->wcls;   // shared: the embedding
    assert_true(t->f == m->tok_embedding.f);
    float last = tsr_tensor_get(&m->w3[5], (size_t)768 * 288 - 1);
    assert_true(isfinite(last) && last != 0.0f && fabsf(last) < 0.2f);
    tsr_checkpoint_close(m);
    unlink(path);
}

/* std 0.02 keeps a synth model's activations finite over a full 1024-token
 * context: run the golden fp32 forward pass over every position. */
static void test_activations_finite(void **state)
{
    (void)state;
    char path[32];
    tsr_checkpoint *m = synth_open(path, "64x2:vocab=256,seq=1024", 0, 3);
    golden g;
    assert_int_equal(golden_build(&g, m, GOLDEN_F32, 0, 0), TSR_OK);
    double lo = INFINITY, hi = -INFINITY;
    for (int pos = 0; pos < 1024; pos++) {
        const float *logits = golden_forward(&g, (pos * 7 + 1) % 256, pos);
        for (int i = 0; i < 256; i++) {
            assert_true(isfinite(logits[i]));
            if (logits[i] < lo) lo = logits[i];
            if (logits[i] > hi) hi = logits[i];
        }
    }
    assert_true(hi - lo > 0.1);    // not degenerate
    assert_true(hi - lo < 100.0);  // and not blowing up
    golden_free(&g);
    tsr_checkpoint_close(m);
    unlink(path);
}

/* tsr_synth_file with a negative group size other than TSR_SYNTH_LEGACY
 * says why (the message was left unwritten). */
static void test_negative_group_has_a_message(void **state)
{
    (void)state;
    char path[64], err[256] = "";
    tmp_path(path);
    assert_int_equal(tsr_synth_file("stories260K", path, -2, 1, err, sizeof err), TSR_ERR_ARG);
    assert_non_null(strstr(err, "group size -2"));
    assert_non_null(strstr(err, path));
    err[0] = '\0';
    assert_int_equal(tsr_synth_file("stories9000", path, 0, 1, err, sizeof err), TSR_ERR_ARG);
    assert_true(err[0] != '\0');
    err[0] = '\0';
    assert_int_equal(tsr_synth_file(NULL, path, 0, 1, err, sizeof err), TSR_ERR_ARG);
    assert_true(err[0] != '\0');
    unlink(path);
}

/* The checkpoint is written beside its name and renamed when complete:
 * nothing is left under a temporary name, and an interrupted synth leaves
 * no partial file under the final name. */
static void test_writes_through_a_temporary(void **state)
{
    (void)state;
    char dir[] = "/tmp/tsr_synth_dir_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/m.bin", dir);
    char err[256];
    assert_int_equal(tsr_synth_file("stories260K", path, 32, 1, err, sizeof err), TSR_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c .", dir);
    FILE *p = popen(cmd, "r");
    int entries = -1;
    assert_int_equal(fscanf(p, "%d", &entries), 1);
    pclose(p);
    assert_int_equal(entries, 1);   /* m.bin only */
    /* interrupted: a 110M-parameter fp32 file takes seconds to write */
    snprintf(path, sizeof path, "%s/big.bin", dir);
    snprintf(cmd, sizeof cmd, "timeout -s INT 0.3 %s synth --shape stories110M -o '%s'; "
             "test ! -e '%s'", TESSERA_BIN, path, path);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_negative_group_has_a_message),
        cmocka_unit_test(test_writes_through_a_temporary),
        cmocka_unit_test(test_dim_x_layers),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_write_error_keeps_device),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_roundtrip_legacy),
        cmocka_unit_test(test_roundtrip_v1),
        cmocka_unit_test(test_roundtrip_v2),
        cmocka_unit_test(test_v2_groups_cross_rows),
        cmocka_unit_test(test_stories15m_v1),
        cmocka_unit_test(test_activations_finite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
