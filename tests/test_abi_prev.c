/*
 * test_abi_prev.c - a client built against "the previous header"
 * (tests/abi/tessera_prev.h: every growing struct as a shorter, earlier
 * version declares it) still works with today's library, as tessera.h's
 * size rule ("Growing structs") promises:
 *   - structs passed in are read for their size only: fields past it take
 *     their defaults, whatever bytes follow the caller's struct;
 *   - structs filled are written for their size only: a guard pattern
 *     placed right after the caller's struct stays intact;
 *   - a size below every version's, or no struct's size, is TSR_ERR_ARG
 *     and nothing is written.
 * It includes tessera_prev.h, never tessera.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "abi/tessera_prev.h"
#include "test_util.h"

#define GUARD 0xA5
#define GUARD_BYTES 512

/* n bytes at p all GUARD? */
static int guarded(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != GUARD) return 0;
    return 1;
}

/* ----------------------------------------------------------- a device --- */

typedef struct rig {
    tsr_device *dev;
    tsr_model  *m;
} rig;

/* stories260K on the emulator, loaded with opts (the caller's layout). */
static int rig_load(rig *r, const void *opts)
{
    memset(r, 0, sizeof *r);
    assert_int_equal(tsr_device_open("emu:pes=4,threads=1", &r->dev), TSR_OK);
    return tsr_model_load(r->dev, SHARED_MODEL("stories260K.bin"), opts, &r->m);
}

static void rig_close(rig *r)
{
    tsr_model_close(r->m);
    tsr_device_close(r->dev);
}

/* The previous options and, after them, today's fields (weights, kv) and
 * reserved words: what the library would read if it read past size. */
typedef struct opts_and_more {
    tsr_model_opts v;          /* 48 bytes */
    int            weights;    /* today's tsr_model_opts.weights at 48 */
    int            pad;
    const char    *kv;         /* .kv at 56 */
    uint64_t       reserved[8];
} opts_and_more;

static uint64_t image_bytes(const opts_and_more *o)
{
    rig r;
    assert_int_equal(rig_load(&r, o), TSR_OK);
    tsr_model_info mi = { .size = sizeof mi };
    assert_int_equal(tsr_model_get_info(r.m, &mi), TSR_OK);
    rig_close(&r);
    return mi.image_bytes;
}

/* An input struct is read for its size only: the bytes after a short
 * struct (Q4 weights and an int8 KV cache, were they read) change
 * nothing, and the same bytes read as today's fields do. */
static void input_read_to_size(void **state)
{
    (void)state;
    assert_int_equal(sizeof(tsr_model_opts), 48);
    opts_and_more o = { .v = { .size = sizeof o.v, .tokenizer = SHARED_MODEL("tok512.bin"),
                               .n_seqs = 1 },
                        .weights = 2 /* TSR_WEIGHTS_Q4 */, .kv = "int8" };
    uint64_t short_opts = image_bytes(&o);
    o.v.size = sizeof o;   /* today's size: now they are read */
    assert_int_equal(sizeof o, 128);
    uint64_t q4 = image_bytes(&o);
    o.weights = 0;
    o.kv = NULL;
    uint64_t defaults = image_bytes(&o);
    assert_true(defaults > 0);
    assert_int_equal(short_opts, defaults);
    assert_true(q4 < defaults);   /* Q4_0 weights are smaller than Q8_0 */

    /* a size below every version's, or no struct's, is refused */
    o.v.size = 40;
    rig r;
    assert_int_equal(rig_load(&r, &o), TSR_ERR_ARG);
    assert_null(r.m);
    assert_non_null(strstr(tsr_device_errmsg(r.dev), "tsr_model_opts"));
    rig_close(&r);
    o.v.size = 52;
    assert_int_equal(rig_load(&r, &o), TSR_ERR_ARG);
    rig_close(&r);
    /* today's size with a field this library lacks set: refused */
    o.v.size = sizeof o;
    o.reserved[7] = 1;
    assert_int_equal(rig_load(&r, &o), TSR_ERR_UNSUPPORTED);
    rig_close(&r);
}

/* An output struct of the previous layout with a guard after it. */
#define GUARDED(T) struct { T v; unsigned char guard[GUARD_BYTES]; }

/* Filled to its size, size kept, guard intact; too small or no struct's
 * size: TSR_ERR_ARG with nothing written; size 0: 0.3.0's whole struct
 * (today's), so the guard's first bytes are written and the rest not. */
#define CHECK_OUT(T, NOW, CALL, FIELD_OK)                                      \
    do {                                                                       \
        GUARDED(T) w;                                                          \
        memset(&w, GUARD, sizeof w);                                           \
        w.v.size = sizeof w.v;                                                 \
        assert_int_equal((CALL), TSR_OK);                                      \
        assert_int_equal(w.v.size, sizeof w.v);                                \
        assert_true(guarded(w.guard, sizeof w.guard));                         \
        assert_true(FIELD_OK);                                                 \
        size_t bad[] = { sizeof w.v - 8, sizeof w.v + 4 };                     \
        for (size_t b = 0; b < 2; b++) {                                       \
            memset(&w, GUARD, sizeof w);                                       \
            w.v.size = bad[b];                                                 \
            assert_int_equal((CALL), TSR_ERR_ARG);                             \
            assert_int_equal(w.v.size, bad[b]);                                \
            assert_true(guarded((char *)&w + sizeof w.v.size,                  \
                                sizeof w - sizeof w.v.size));                  \
        }                                                                      \
        memset(&w, GUARD, sizeof w);                                           \
        w.v.size = 0;                                                          \
        assert_int_equal((CALL), TSR_OK);                                      \
        assert_true(FIELD_OK);                                                 \
        assert_false(guarded(w.guard, (NOW) - sizeof w.v));                    \
        assert_true(guarded(w.guard + ((NOW) - sizeof w.v),                    \
                            sizeof w.guard - ((NOW) - sizeof w.v)));           \
    } while (0)

static void output_written_to_size(void **state)
{
    (void)state;
    tsr_model_opts o = { .size = sizeof o, .tokenizer = SHARED_MODEL("tok512.bin"), .n_seqs = 1 };
    rig r;
    assert_int_equal(rig_load(&r, &o), TSR_OK);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(r.m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, "Once upon a time"), TSR_OK);
    tsr_gen_opts g = { .size = sizeof g, .max_tokens = 4, .ignore_stop = 1 };
    int got = 0;
    assert_int_equal(tsr_seq_generate(s, &g, NULL, NULL, &got), TSR_OK);
    assert_int_equal(got, 4);

    /* today's sizes (tests/abi/pins.h) */
    CHECK_OUT(tsr_model_info, 240, tsr_model_get_info(r.m, &w.v),
              w.v.dim == 64 && w.v.n_layers == 5 && w.v.vocab_size == 512 &&
              w.v.n_seqs == 1 && w.v.image_bytes > 0);
    CHECK_OUT(tsr_traffic, 152, tsr_device_traffic(r.dev, &w.v),
              w.v.loads == 1 && w.v.load_h2d > 0 && w.v.decode_d2h > 0);
    CHECK_OUT(tsr_pipeline, 496, tsr_device_pipeline(r.dev, &w.v), w.v.cards == 0);
    CHECK_OUT(tsr_seq_stats, 152, tsr_seq_get_stats(s, &w.v),
              w.v.decode_tokens == 4 && w.v.prefill_tokens > 0);
    CHECK_OUT(tsr_file_info, 408,
              tsr_file_inspect(SHARED_MODEL("stories260K.bin"), &w.v, NULL, 0),
              w.v.dim == 64 && w.v.n_layers == 5 && w.v.onchip_q8_bytes > 0);
    tsr_seq_close(s);
    rig_close(&r);
}

/* An array of previous options: its elements are 40 bytes apart. */
static void input_arrays_of_short_structs(void **state)
{
    (void)state;
    assert_int_equal(sizeof(tsr_gen_opts), 40);
    tsr_model_opts o = { .size = sizeof o, .tokenizer = SHARED_MODEL("tok512.bin"), .n_seqs = 2 };
    rig r;
    assert_int_equal(rig_load(&r, &o), TSR_OK);
    tsr_seq *s[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tsr_seq_open(r.m, &s[k]), TSR_OK);
        assert_int_equal(tsr_seq_append_text(s[k], "Once"), TSR_OK);
    }
    tsr_gen_opts g[2] = { { .size = sizeof g[0], .max_tokens = 3, .ignore_stop = 1 },
                          { .size = sizeof g[0], .max_tokens = 5, .ignore_stop = 1 } };
    int ng[2] = { 0, 0 };
    assert_int_equal(tsr_seq_generate_batch(s, 2, g, NULL, NULL, ng), TSR_OK);
    assert_int_equal(ng[0], 3);
    assert_int_equal(ng[1], 5);
    g[1].size = 0;   /* one array, one size */
    assert_int_equal(tsr_seq_generate_batch(s, 2, g, NULL, NULL, ng), TSR_ERR_ARG);
    for (int k = 0; k < 2; k++) tsr_seq_close(s[k]);
    rig_close(&r);

    /* chat messages, 24 bytes apart */
    tsr_chat_msg msgs[2] = { { sizeof msgs[0], "system", "Be brief." },
                             { sizeof msgs[0], "user", "Hi" } };
    char buf[128];
    size_t len = 0;
    assert_int_equal(tsr_chat_format("plain", NULL, msgs, 2, 1, buf, sizeof buf, &len), TSR_OK);
    assert_string_equal(buf, "Be brief.\n\nUser: Hi\nAssistant:");
    assert_int_equal(len, strlen(buf));
    msgs[1].size = 16;
    assert_int_equal(tsr_chat_format("plain", NULL, msgs, 2, 1, buf, sizeof buf, &len),
                     TSR_ERR_ARG);
}

/* Plan options read for their size: today's weights and max_util, set to
 * values that would be refused, sit after them and are not read. */
static void plan_opts_short(void **state)
{
    (void)state;
    struct { tsr_plan_opts v; int weights, pad; double max_util; } o;
    memset(&o, 0, sizeof o);
    o.v.size = sizeof o.v;
    o.v.part = "u55c";
    o.v.shape = "stories15M";
    o.weights = 99;
    o.max_util = -5;
    char buf[8192], err[256] = "";
    int fits = -2;
    assert_int_equal(tsr_plan_report(NULL, &o.v, 0, buf, sizeof buf, &fits, err, sizeof err),
                     TSR_OK);
    assert_true(fits == 0 || fits == 1);
    o.v.size = sizeof o;   /* now they are read, and refused */
    assert_int_equal(tsr_plan_report(NULL, &o.v, 0, buf, sizeof buf, &fits, err, sizeof err),
                     TSR_ERR_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(input_read_to_size),
        cmocka_unit_test(output_written_to_size),
        cmocka_unit_test(input_arrays_of_short_structs),
        cmocka_unit_test(plan_opts_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
