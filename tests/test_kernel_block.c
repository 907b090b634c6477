/*
 * test_kernel_block.c - passes of several items (kernels/forward.c): a
 * prompt prefilled in blocks of up to TSR_MAX_BLOCK positions, and
 * DECODE_BATCH stepping several sequences through one pass each step.
 *
 *   blocked prefill   PREFILL of the whole prompt (blocks) against one
 *                     PREFILL a token (one position a pass): the same KV
 *                     cache, bit for bit, then the same greedy token and
 *                     logits
 *   batched decode    four sequences of different prompt lengths and
 *                     samplers in one DECODE_BATCH against each run alone
 *                     (DECODE): the same tokens
 *   cancel one        a sequence whose slot cancel word is set stops; the
 *                     others' tokens are unchanged
 *
 * On the rig (tests/support/kernel_rig.c): the kernel on this thread, the
 * tiny model (tests/support/tiny_model.h) placed through the real path.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "kernel_rig.h"
#include "tiny_model.h"
#include "tsr_ops.h"

enum { SLOTS = 4 };

/* A case's weights and KV cache (issue 14's formats within the blocked
 * and batched passes): Q8_0, Q4_0 or F32 tiles; an fp32, IEEE-half or
 * int8 cache. */
enum { W_Q8, W_Q4, W_F32 };
typedef struct fmt { int w, kv; } fmt;

/* fx placed on mesh m (Q8 at G, Q4_0 or F32; the KV cache in kv), SLOTS
 * sequence slots; NULL when the profile does not build that format. */
static tsr_kstate *place_fmt(const tm_model *fx, tm_mesh m, fmt f, int G, int kv_split)
{
    if ((f.w == W_F32 && !TSR_WITH_F32) || (f.w == W_Q4 && !TSR_WITH_Q4) ||
        (f.kv == TSR_KV_F16 && !TSR_WITH_KV_F16) || (f.kv == TSR_KV_INT8 && !TSR_WITH_KV_INT8))
        return NULL;
    tsr_kstate *st = rig_state_new();
    tsr_load_opts o = { .weights_f32 = f.w == W_F32, .weights = f.w == W_Q4 ? TSR_WEIGHTS_Q4 : 0,
                        .group_size = f.w == W_Q4 ? 32 : G, .kv = f.kv, .n_slots = SLOTS };
    tsr_mesh_opts mo = { .pes = m.pes, .cols = m.cols, .kv_split = kv_split };
    rig_place(st, &fx->ck, &o, &mo, NULL);
    assert_int_equal(st->cfg.q4_kinds != 0, f.w == W_Q4);
    assert_int_equal(st->cfg.kv_dtype, f.kv);
    return st;
}

static int profile_allows(tm_mesh m)
{
    return m.pes <= TSR_MAX_PES && m.cols <= TSR_MAX_MESH_COLS &&
           m.pes / m.cols <= TSR_MAX_MESH_ROWS;
}

/* The KV cache of every attention PE, all slots and layers, equal: the
 * elements in the array of its precision, and the int8 scales. */
static void assert_kv_equal(const tsr_kstate *a, const tsr_kstate *b)
{
    assert_int_equal(a->cfg.att_pes, b->cfg.att_pes);
    assert_int_equal(a->cfg.kv_dtype, b->cfg.kv_dtype);
    for (uint32_t p = 0; p < a->cfg.att_pes; p++) {
        size_t bytes = (size_t)tsr_lay_kv_words(&a->cfg, p) * tsr_lay_kv_elem_bytes(&a->cfg);
        const void *ka = a->cfg.kv_dtype == TSR_KV_F16    ? (const void *)&a->kvh[p][0][0]
                         : a->cfg.kv_dtype == TSR_KV_INT8 ? (const void *)&a->kvq[p][0][0]
                                                          : (const void *)&a->kv[p][0][0];
        const void *kb = a->cfg.kv_dtype == TSR_KV_F16    ? (const void *)&b->kvh[p][0][0]
                         : a->cfg.kv_dtype == TSR_KV_INT8 ? (const void *)&b->kvq[p][0][0]
                                                          : (const void *)&b->kv[p][0][0];
        if (memcmp(ka, kb, bytes)) fail_msg("PE %u: KV cache differs", p);
        if (memcmp(a->kvs[p], b->kvs[p], (size_t)tsr_lay_kv_scales(&a->cfg, p) * sizeof(float)))
            fail_msg("PE %u: KV scales differ", p);
    }
}

/* One greedy DECODE of one token on slot s: the token. */
static int32_t greedy_one(tsr_kstate *st, uint32_t s)
{
    float pay[2] = { 0.0f, 0.0f };
    uint32_t out[2], n = 0, a[6] = { 1, 0, 0, TSR_DEC_IGNORE_STOP };
    assert_int_equal(rig_cmd(st, TSR_OP_DECODE, s, a, pay, 2, out, 2, &n), TSR_K_OK);
    assert_int_equal(out[0], 1);
    return (int32_t)out[1];
}

/* A prompt prefilled in one PREFILL (blocks of up to TSR_MAX_BLOCK
 * positions a pass) leaves the KV cache, the position and the pending
 * token of one PREFILL a token, bit for bit, and the next pass gives the
 * same greedy token and logits; on one and several mesh columns, with and
 * without split KV heads, Q8_0, Q4_0 and F32 tiles, fp32, half and int8
 * caches, prompt lengths across block boundaries. */
static void blocked_prefill_equals_token_by_token(void **state)
{
    (void)state;
    static const struct { tm_mesh m; fmt f; int G, kv_split; } cases[] = {
        { { 1, 1 }, { W_Q8, TSR_KV_F32 }, 32, 1 },  { { 16, 2 }, { W_Q8, TSR_KV_F32 }, 32, 2 },
        { { 4, 1 }, { W_F32, TSR_KV_F32 }, 32, 1 }, { { 32, 4 }, { W_Q8, TSR_KV_F32 }, 16, 4 },
        { { 4, 1 }, { W_Q4, TSR_KV_F16 }, 32, 1 },  { { 16, 2 }, { W_Q4, TSR_KV_INT8 }, 32, 2 },
        { { 1, 1 }, { W_Q8, TSR_KV_INT8 }, 32, 1 }, { { 16, 2 }, { W_Q8, TSR_KV_F16 }, 32, 2 },
    };
    static const int lengths[] = { 2, 5, 17, SEQ - 1 };
    assert_true(TSR_MAX_BLOCK > 1);
    tm_model *fx = tm_new(0);
    int ran = 0;   /* cases this profile builds */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!profile_allows(cases[c].m) || cases[c].kv_split > TSR_MAX_KV_SPLIT) continue;
        for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
            int n = lengths[k];
            uint32_t ids[SEQ];
            for (int i = 0; i < n; i++) ids[i] = (uint32_t)((i * 29 + 3 + (int)k) % VOCAB);
            tsr_kstate *blk = place_fmt(fx, cases[c].m, cases[c].f, cases[c].G, cases[c].kv_split);
            tsr_kstate *one = place_fmt(fx, cases[c].m, cases[c].f, cases[c].G, cases[c].kv_split);
            if (!blk) break;   /* a format the profile does not build */
            ran++;
            uint64_t passes0 = blk->cnt.tokens_fed;
            assert_int_equal(rig_cmd(blk, TSR_OP_PREFILL, 1, (uint32_t[6]){ (uint32_t)n }, ids,
                                     (uint32_t)n, NULL, 0, NULL), TSR_K_OK);
            assert_int_equal(blk->cnt.tokens_fed - passes0, (uint64_t)(n - 1));
            for (int i = 0; i < n; i++)
                assert_int_equal(rig_cmd(one, TSR_OP_PREFILL, 1, (uint32_t[6]){ 1 }, &ids[i], 1,
                                         NULL, 0, NULL), TSR_K_OK);
            assert_int_equal(blk->pos[1], n - 1);
            assert_int_equal(one->pos[1], n - 1);
            assert_int_equal(blk->pending[1], one->pending[1]);
            assert_kv_equal(blk, one);
            /* attention is the same work an item whatever the pass (the
             * emulator runs a block's a KV head group at a time): the same
             * charges */
            static const int att_regions[] = { TSR_RG_ATTN, TSR_RG_ATT_TREE, TSR_RG_ATT_IO };
            for (size_t r = 0; r < 3; r++)
                assert_int_equal(blk->cnt.cyc[att_regions[r]], one->cnt.cyc[att_regions[r]]);
            assert_int_equal(greedy_one(blk, 1), greedy_one(one, 1));
            float lb[VOCAB], lo[VOCAB];
            uint32_t got = 0;
            assert_int_equal(rig_cmd(blk, TSR_OP_READ_LOGITS, 1, NULL, NULL, 0, lb, VOCAB, &got), TSR_K_OK);
            assert_int_equal(got, VOCAB);
            assert_int_equal(rig_cmd(one, TSR_OP_READ_LOGITS, 1, NULL, NULL, 0, lo, VOCAB, &got), TSR_K_OK);
            assert_memory_equal(lb, lo, sizeof lb);
            /* they are slot 1's: slot 0 (empty) has none; no slot past n_slots */
            assert_int_equal(rig_cmd(one, TSR_OP_READ_LOGITS, 0, NULL, NULL, 0, lo, VOCAB, &got),
                             TSR_K_ESTATE);
            assert_int_equal(rig_cmd(one, TSR_OP_READ_LOGITS, SLOTS, NULL, NULL, 0, lo, VOCAB,
                                     &got), TSR_K_EARG);
            assert_kv_equal(blk, one);
            rig_state_free(blk);
            rig_state_free(one);
        }
    }
    tm_free(fx);
    /* the generic profile builds every case; another says it ran none */
    if (TSR_MAX_PES >= 32 && TSR_WITH_F32 && TSR_WITH_Q4) assert_int_equal(ran, 8 * 4);
    if (!ran) skip();
}

/* Four sequences: slot, prompt length, temperature, top-p, seed. */
typedef struct seq { uint32_t slot; int prompt; float temp, top_p; uint64_t seed; uint32_t n; } seq;
static const seq SEQS[SLOTS] = {
    { 0, 3, 0.0f, 0.0f, 0, 9 },      /* greedy                       */
    { 1, 7, 0.8f, 0.9f, 77, 12 },    /* top-p                        */
    { 2, 1, 1.0f, 1.0f, 5, 6 },      /* multinomial                  */
    { 3, 11, 0.5f, 0.5f, 1234, 10 }, /* top-p, a different seed      */
};

static void prompt_of(const seq *q, uint32_t *ids)
{
    for (int i = 0; i < q->prompt; i++) ids[i] = (uint32_t)((i * 13 + 7 * (int)q->slot + 1) % VOCAB);
}

static void prefill(tsr_kstate *st, const seq *q)
{
    uint32_t ids[SEQ];
    prompt_of(q, ids);
    assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, q->slot, (uint32_t[6]){ (uint32_t)q->prompt }, ids,
                             (uint32_t)q->prompt, NULL, 0, NULL), TSR_K_OK);
}

/* q alone: DECODE of q->n tokens (BOS/EOS ignored); tokens into out. */
static uint32_t solo(tsr_kstate *st, const seq *q, uint32_t *out)
{
    float pay[2] = { q->temp, q->top_p };
    uint32_t ans[SEQ + 1], n = 0;
    uint32_t a[6] = { q->n, (uint32_t)q->seed, (uint32_t)(q->seed >> 32),
                      TSR_DEC_RESEED | TSR_DEC_IGNORE_STOP };
    prefill(st, q);
    assert_int_equal(rig_cmd(st, TSR_OP_DECODE, q->slot, a, pay, 2, ans, SEQ + 1, &n), TSR_K_OK);
    assert_int_equal(n, 1u + ans[0]);
    memcpy(out, ans + 1, ans[0] * sizeof *out);
    return ans[0];
}

/* DECODE_BATCH of the m sequences q on st (already prefilled) through
 * tsr_kernel_exec with the ring header hdr; answer regions of STRIDE. */
enum { STRIDE = SEQ + 1 };
static int batch(tsr_kstate *st, const seq *q, uint32_t m, const uint32_t *hdr, uint32_t *ans)
{
    uint32_t pay[1 + SLOTS * TSR_BATCH_WORDS] = { m };
    for (uint32_t k = 0; k < m; k++) {
        uint32_t *r = pay + 1 + k * TSR_BATCH_WORDS;
        r[TSR_BATCH_SLOT] = q[k].slot;
        r[TSR_BATCH_N] = q[k].n;
        r[TSR_BATCH_FLAGS] = TSR_DEC_RESEED | TSR_DEC_IGNORE_STOP;
        r[TSR_BATCH_SEED_LO] = (uint32_t)q[k].seed;
        r[TSR_BATCH_SEED_HI] = (uint32_t)(q[k].seed >> 32);
        memcpy(&r[TSR_BATCH_TEMP], &q[k].temp, 4);
        memcpy(&r[TSR_BATCH_TOP_P], &q[k].top_p, 4);
    }
    uint32_t c[TSR_CMD_WORDS] = { 0 }, n = 0;
    c[TSR_CMD_OP] = TSR_OP_DECODE_BATCH;
    c[TSR_CMD_IN_WORDS] = 1u + m * TSR_BATCH_WORDS;
    c[TSR_CMD_OUT_WORDS] = m * STRIDE;
    c[TSR_CMD_A0] = STRIDE;
    int rc = tsr_kernel_exec(st, c, pay, (const float *)(const void *)pay, ans, (float *)(void *)ans,
                             hdr, NULL, NULL, &n);
    if (rc == TSR_K_OK) assert_int_equal(n, m * STRIDE);
    return rc;
}

/* Every sequence of a batch gets the tokens it gets alone: greedy, top-p
 * and multinomial sequences of different prompt lengths, stepping
 * together until each has its count, through passes of up to four items
 * (fewer as the shorter ones finish); Q8_0, Q4_0 and F32 tiles, fp32,
 * half and int8 caches. */
static void batched_decode_equals_solo(void **state)
{
    (void)state;
    static const struct { tm_mesh m; fmt f; int kv_split; } cases[] = {
        { { 1, 1 }, { W_Q8, TSR_KV_F32 }, 1 }, { { 16, 2 }, { W_Q8, TSR_KV_F32 }, 2 },
        { { 4, 1 }, { W_F32, TSR_KV_F32 }, 1 }, { { 16, 2 }, { W_Q4, TSR_KV_F16 }, 2 },
        { { 4, 1 }, { W_Q4, TSR_KV_INT8 }, 1 },
    };
    if (TSR_MAX_BATCH < SLOTS) {
        skip();
        return;
    }
    tm_model *fx = tm_new(1);
    int ran = 0;   /* cases this profile builds */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!profile_allows(cases[c].m)) continue;
        uint32_t want[SLOTS][SEQ], nwant[SLOTS];
        tsr_kstate *st = place_fmt(fx, cases[c].m, cases[c].f, 32, cases[c].kv_split);
        if (!st) continue;   /* a format the profile does not build */
        ran++;
        rig_state_free(st);
        for (int k = 0; k < SLOTS; k++) {
            st = place_fmt(fx, cases[c].m, cases[c].f, 32, cases[c].kv_split);
            nwant[k] = solo(st, &SEQS[k], want[k]);
            assert_int_equal(nwant[k], SEQS[k].n);
            rig_state_free(st);
        }
        st = place_fmt(fx, cases[c].m, cases[c].f, 32, cases[c].kv_split);
        for (int k = 0; k < SLOTS; k++) prefill(st, &SEQS[k]);
        uint32_t hdr[TSR_CTL_CMD0] = { 0 }, ans[SLOTS * STRIDE];
        uint64_t fed = st->cnt.tokens_fed;
        assert_int_equal(batch(st, SEQS, SLOTS, hdr, ans), TSR_K_OK);
        uint32_t total = 0;
        for (int k = 0; k < SLOTS; k++) {
            const uint32_t *r = ans + k * STRIDE;
            assert_int_equal(r[0], nwant[k]);
            assert_memory_equal(r + 1, want[k], nwant[k] * sizeof(uint32_t));
            assert_int_equal(st->pos[SEQS[k].slot], SEQS[k].prompt - 1 + (int)nwant[k]);
            total += nwant[k];
        }
        assert_int_equal(st->cnt.tokens_fed - fed, total);   /* one item a token */
        rig_state_free(st);
    }
    tm_free(fx);
    if (TSR_MAX_PES >= 16 && TSR_WITH_F32 && TSR_WITH_Q4) assert_int_equal(ran, 5);
    if (!ran) skip();
}

/* A sequence whose slot's cancel word is set stops before its first
 * token; the others' tokens are their solo ones.  The command's own cancel
 * word stops them all.  A repeated slot, a pending-less slot and a
 * sequence count past TSR_MAX_BATCH are refused. */
static void cancel_one_sequence(void **state)
{
    (void)state;
    if (TSR_MAX_BATCH < SLOTS) {
        skip();
        return;
    }
    tm_model *fx = tm_new(1);
    tm_mesh m = { 4, 1 };
    uint32_t want[SLOTS][SEQ];
    for (int k = 0; k < SLOTS; k++) {
        tsr_kstate *st = place_fmt(fx, m, (fmt){ W_Q8, TSR_KV_F32 }, 32, 1);
        assert_int_equal(solo(st, &SEQS[k], want[k]), SEQS[k].n);
        rig_state_free(st);
    }
    tsr_kstate *st = place_fmt(fx, m, (fmt){ W_Q8, TSR_KV_F32 }, 32, 1);
    for (int k = 0; k < SLOTS; k++) prefill(st, &SEQS[k]);
    uint32_t hdr[TSR_CTL_CMD0] = { 0 }, ans[SLOTS * STRIDE];
    hdr[TSR_CTL_CANCEL_SLOT(SEQS[1].slot)] = 1;
    assert_int_equal(batch(st, SEQS, SLOTS, hdr, ans), TSR_K_OK);
    for (int k = 0; k < SLOTS; k++) {
        const uint32_t *r = ans + k * STRIDE;
        if (k == 1) {
            assert_int_equal(r[0], 0);
            assert_int_equal(st->pos[SEQS[k].slot], SEQS[k].prompt - 1);   /* untouched */
            continue;
        }
        assert_int_equal(r[0], SEQS[k].n);
        assert_memory_equal(r + 1, want[k], SEQS[k].n * sizeof(uint32_t));
    }
    /* the command's cancel word: nothing more for anyone */
    hdr[TSR_CTL_CANCEL_SLOT(SEQS[1].slot)] = 0;
    hdr[TSR_CTL_CANCEL] = 1;
    assert_int_equal(batch(st, SEQS, SLOTS, hdr, ans), TSR_K_OK);
    for (int k = 0; k < SLOTS; k++) assert_int_equal(ans[k * STRIDE], 0);
    hdr[TSR_CTL_CANCEL] = 0;
    /* refusals */
    seq twice[2] = { SEQS[0], SEQS[0] };
    assert_int_equal(batch(st, twice, 2, hdr, ans), TSR_K_EARG);
    assert_int_equal(rig_cmd(st, TSR_OP_RESET, 2, NULL, NULL, 0, NULL, 0, NULL), TSR_K_OK);
    assert_int_equal(batch(st, SEQS, SLOTS, hdr, ans), TSR_K_ESTATE);   /* slot 2: no pending */
    uint32_t none[1] = { 0 }, c[TSR_CMD_WORDS] = { 0 }, n = 0;
    c[TSR_CMD_OP] = TSR_OP_DECODE_BATCH;
    c[TSR_CMD_IN_WORDS] = 1;
    c[TSR_CMD_OUT_WORDS] = STRIDE;
    c[TSR_CMD_A0] = STRIDE;
    none[0] = TSR_MAX_BATCH + 1u;
    assert_int_equal(tsr_kernel_exec(st, c, none, (const float *)(const void *)none, ans,
                                     (float *)(void *)ans, hdr, NULL, NULL, &n), TSR_K_EARG);
    rig_state_free(st);
    tm_free(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(blocked_prefill_equals_token_by_token, tm_reseed),
        cmocka_unit_test_setup(batched_decode_equals_solo, tm_reseed),
        cmocka_unit_test_setup(cancel_one_sequence, tm_reseed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
