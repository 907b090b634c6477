/*
 * test_weights_finite.c - a model with one NaN or one infinite weight is
 * refused at load in every format and mode, from a file and from memory,
 * with a one-line TSR_ERR_FORMAT message naming the tensor.  Before, a NaN
 * was undefined behaviour in the Q8_0 quantizer (float-to-int) and in F32
 * mode such a model generated token 0; SANITIZE=1 now includes
 * -fsanitize=float-cast-overflow, which catches the conversion.
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
#include <unistd.h>

#include "ckpt_write.h"
#include "gguf_write.h"
#include "tessera.h"
#include "test_util.h"

/* dim 16, 1 layer, hidden 16, 2 heads, 1 KV head, vocab 8, context 4 (a KV
 * head group's query slice is whole 16-float bus words: dim / kv heads) */
#define TINY "16x1:hidden=16,heads=2,kv=1,vocab=8,seq=4"
enum { D = 16, L = 1, V = 8, G = 8 };

/* A tiny llama2.c tokenizer.bin of V pieces, for these models. */
static void write_tokenizer(const char *path)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int32_t max_len = 2;
    fwrite(&max_len, 4, 1, f);
    for (int i = 0; i < V; i++) {
        float score = (float)-i;
        int32_t len = 1;
        char c = (char)('a' + i);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(&c, 1, 1, f);
    }
    assert_int_equal(fclose(f), 0);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    uint8_t *d = malloc((size_t)len);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return d;
}

static void spit(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Load data (n bytes, also written to path) from the file and from memory,
 * in Q8_0 and F32 mode: want_rc each time, and with a failure a one-line
 * message naming the tensor (and, from the file, the path). */
static void expect_load(const char *path, const uint8_t *data, size_t n, const char *tok,
                        int want_rc, const char *tensor, const char *what)
{
    spit(path, data, n);
    for (int f32 = 0; f32 <= 1; f32++)
        for (int mem = 0; mem <= 1; mem++) {
            tsr_device *dev = NULL;
            assert_int_equal(tsr_device_open("emu:pes=4,threads=1", &dev), TSR_OK);
            tsr_model_opts o = { .tokenizer = tok, .weights_f32 = f32, .n_seqs = 1 };
            tsr_model *m = NULL;
            int rc = mem ? tsr_model_load_memory(dev, data, n, &o, &m)
                         : tsr_model_load(dev, path, &o, &m);
            const char *msg = tsr_device_errmsg(dev);
            if (rc != want_rc) print_error("%s, %s mode, from %s: %s\n", path, f32 ? "F32" : "Q8",
                                           mem ? "memory" : "file", msg);
            assert_int_equal(rc, want_rc);
            if (want_rc != TSR_OK) {
                assert_null(m);
                assert_null(strchr(msg, '\n'));
                assert_non_null(strstr(msg, tensor));
                assert_non_null(strstr(msg, what));
                assert_non_null(strstr(msg, mem ? "(memory)" : path));
                if (f32 == 0 && mem == 0) print_message("%s\n", msg);
            } else {
                tsr_seq *s = NULL;   /* the clean model decodes */
                assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
                int bos = 1, got = 0;
                assert_int_equal(tsr_seq_append_tokens(s, &bos, 1), TSR_OK);
                tsr_gen_opts g = { .max_tokens = 2, .ignore_stop = 1 };
                assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
                assert_int_equal(got, 2);
                tsr_seq_close(s);
                tsr_model_close(m);
            }
            tsr_device_close(dev);
        }
}

static void poison_f32(uint8_t *d, size_t off, float v) { memcpy(d + off, &v, 4); }

/* llama2.c legacy, v1 (fp32 weights) and v2 (Q8_0 scales). */
static void llama2c_formats(void **state)
{
    (void)state;
    char tok[] = "/tmp/tsr_fin_tok_XXXXXX", v1[] = "/tmp/tsr_fin_v1_XXXXXX",
         v2[] = "/tmp/tsr_fin_v2_XXXXXX", leg[] = "/tmp/tsr_fin_leg_XXXXXX",
         bad[] = "/tmp/tsr_fin_bad_XXXXXX";
    char *paths[] = { tok, v1, v2, leg, bad };
    for (int i = 0; i < 5; i++) { int fd = mkstemp(paths[i]); assert_true(fd >= 0); close(fd); }
    write_tokenizer(tok);
    assert_int_equal(tsr_test_synth(TINY, 0, v1), 0);
    assert_int_equal(tsr_test_synth(TINY, G, v2), 0);
    assert_int_equal(tsr_test_write_legacy(v1, leg), 0);

    size_t n;
    const float bad_values[2] = { NAN, INFINITY };
    const char *names[2] = { "NaN", "Inf" };

    /* v1: header 256, norms (2 L D + D), tok_embeddings (V D), wq: element 5 */
    uint8_t *d = slurp(v1, &n);
    expect_load(bad, d, n, tok, TSR_OK, NULL, NULL);
    size_t wq5 = 256 + 4 * (2 * L * D + D + V * D) + 4 * 5;
    for (int k = 0; k < 2; k++) {
        uint8_t *p = malloc(n);
        memcpy(p, d, n);
        poison_f32(p, wq5, bad_values[k]);
        expect_load(bad, p, n, tok, TSR_ERR_FORMAT, "layers.0.attention.wq.weight", names[k]);
        free(p);
    }
    /* the final norm, a vector */
    uint8_t *p = malloc(n);
    memcpy(p, d, n);
    poison_f32(p, 256 + 4 * (2 * L * D + 3), NAN);
    expect_load(bad, p, n, tok, TSR_ERR_FORMAT, "norm.weight", "element 3");
    free(p);
    free(d);

    /* legacy: header 28, tok_embeddings (V D), rms_att (L D), wq: element 5 */
    d = slurp(leg, &n);
    expect_load(bad, d, n, tok, TSR_OK, NULL, NULL);
    for (int k = 0; k < 2; k++) {
        p = malloc(n);
        memcpy(p, d, n);
        poison_f32(p, 28 + 4 * (V * D + L * D) + 4 * 5, bad_values[k]);
        expect_load(bad, p, n, tok, TSR_ERR_FORMAT, "layers.0.attention.wq.weight", names[k]);
        free(p);
    }
    free(d);

    /* v2: header 256, fp32 norms, tok_embeddings int8 (V D) then its
     * scales (V D / G): scale 2; and one too large to dequantize */
    d = slurp(v2, &n);
    expect_load(bad, d, n, tok, TSR_OK, NULL, NULL);
    size_t s2 = 256 + 4 * (2 * L * D + D) + V * D + 4 * 2;
    const float bad_scales[3] = { NAN, INFINITY, 3e38f };
    const char *scale_names[3] = { "NaN", "Inf", "too large" };
    for (int k = 0; k < 3; k++) {
        p = malloc(n);
        memcpy(p, d, n);
        poison_f32(p, s2, bad_scales[k]);
        expect_load(bad, p, n, tok, TSR_ERR_FORMAT, "tok_embeddings.weight", scale_names[k]);
        free(p);
    }
    free(d);
    for (int i = 0; i < 5; i++) unlink(paths[i]);
}

/* GGUF: an F32 tensor, and the embedding stored as F16 (a value), Q8_0
 * and Q4_0 (a block scale). */
static void gguf_types(void **state)
{
    (void)state;
    char path[] = "/tmp/tsr_fin_gguf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const struct { uint32_t emb; const char *tensor; uint64_t at; } cases[] = {
        { 0, "blk.0.attn_q.weight", 17 },
        { 1, "token_embd.weight", 40 },
        { 8, "token_embd.weight", 2 },
        { 2, "token_embd.weight", 3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsr_gbuf b = { 0 };
        tsr_gguf_build(&b, &(tsr_gguf_spec){ .emb_type = cases[i].emb });
        expect_load(path, b.p, b.n, NULL, TSR_OK, NULL, NULL);
        free(b.p);
        for (int inf = 0; inf <= 1; inf++) {
            tsr_gbuf pb = { 0 };
            tsr_gguf_build(&pb, &(tsr_gguf_spec){ .emb_type = cases[i].emb,
                                                   .poison = cases[i].tensor,
                                                   .poison_at = cases[i].at, .poison_inf = inf });
            /* a Q8_0/Q4_0 block goes on chip as stored (issue 14), so its
             * NaN or Inf scale is refused as a scale of that type */
            expect_load(path, pb.p, pb.n, NULL, TSR_ERR_FORMAT, cases[i].tensor,
                        cases[i].emb == 8 ? "Q8_0 scale that is not finite"
                        : cases[i].emb == 2 ? "Q4_0 scale that is not finite"
                        : inf ? "Inf" : "NaN");
            free(pb.p);
        }
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama2c_formats),
        cmocka_unit_test(gguf_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
