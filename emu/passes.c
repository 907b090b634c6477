/*
 * passes.c - a forward pass of 2 or more items on the emulator's worker
 * pool (the platform hooks TSR_FAST_STAGE_INPUTS and
 * TSR_FAST_STAGE_OUTPUTS, kernels/tsr_platform.h): the inputs and the
 * gathers an item at a time, attention a KV head group at a time.  The
 * same PE tasks and per-item steps as kernels/forward.c's loops, so the
 * same bits and the same charges.
 */
#include <math.h>

#include "tsr_ops.h"
#include "tsr_emu.h"

/* ------------------------------------------------------------------------ */
/* Inputs and gathers                                                         */

/* The emulator: one item's input of a stage (fwd_inputs), a worker pool
 * item; an item touches only its own vectors and PE 0's copy of its
 * input. */
typedef struct input_pass {
    tsr_kstate *st;
    uint32_t    n, row, norm;
} input_pass;

static void input_item(void *ctx, uint32_t b)
{
    const input_pass *in = ctx;
    float ss = in->norm ? tsr_rms_scale(in->st, b, in->st->cfg.dim) : 0.0f;
    tsr_mesh_input(in->st, b, in->n, in->row, ss, !in->norm);
}

int tsr_emu_stage_inputs(tsr_kstate *st, uint32_t nx, uint32_t n, uint32_t row, uint32_t norm)
{
    if (nx <= 1u) return 0;
    input_pass in = { st, n, row, norm };
    if (!st->emu_inputs_made)
        tsr_emu_pool_share(st->pool, nx, (uint64_t)nx * n * TSR_EMU_ELEM_WORK, input_item, &in);
    st->emu_inputs_made = 0;
    return 1;
}

typedef struct gather_pass {
    tsr_kstate  *st;
    uint32_t     mat, yw, flags;
    tsr_emu_item then;   /* optional, after each item's gather */
    void        *then_ctx;
} gather_pass;

static void gather_item(void *ctx, uint32_t it)
{
    const gather_pass *g = ctx;
    tsr_emu_gather(g->st, g->mat, it, g->yw, g->flags);
    if (g->then) g->then(g->then_ctx, it);
}

void tsr_emu_gather_pass(tsr_kstate *st, uint32_t mat, uint32_t nx, uint32_t yw, uint32_t flags,
                         tsr_emu_item then, void *then_ctx, uint64_t then_work)
{
    uint32_t d = st->mat_d[mat], nout = tsr_gather_words(st, d, flags);
    gather_pass g = { st, mat, yw, flags, then, then_ctx };
    uint32_t bias = flags & TSR_GATHER_QKV ? st->cfg.qkv_bias : 0u;
    for (uint32_t it = 0; it < nx; it++) {
        TSR_CHARGE(st, TSR_RG_GATHER, tsr_gather_cycles(flags, d, nout, bias));
        TSR_COUNT(st, fabric_gather_bytes, 4ull * d);
    }
    uint64_t work = (uint64_t)nx * nout * TSR_EMU_ELEM_WORK + (then ? then_work : 0u);
    tsr_emu_pool_share(st->pool, nx, work, gather_item, &g);
}

/* ------------------------------------------------------------------------ */
/* The emulator's attention of a whole pass                                   */
/*
 * tsr_attention item after item runs, per item, each phase and tree level
 * as one step over every attention PE.  A KV head group's PEs [u Q, u Q +
 * Q) touch only their own memories and each other's (the trees), so here
 * the worker pool takes a group at a time and runs, for every item in
 * order, that group's share of the same steps: the latch of the item's q
 * | k | v, each phase on its PEs, the tree levels, the collect of its
 * heads' outputs.  The same PE tasks in the same order on the same
 * memories: bit-identical.  Each step's cycles are the slowest of the
 * group's PEs, kept per (group, item, step); the caller charges each
 * item's steps the slowest over the groups, as tsr_attention does (the
 * maximum of maxima).  TSR_SERIAL_PES builds, whose steps charge sums,
 * keep tsr_attention (tsr_platform_emu.h).
 */

typedef struct att_pass {
    tsr_kstate     *st;
    const tsr_item *items;
    uint32_t        nx, layer;
} att_pass;

/* Group u's outputs for item it into xn: its KV heads' words (as
 * att_collect) and their maxima. */
static void unit_collect(tsr_kstate *st, uint32_t u, uint32_t it)
{
    uint32_t gw = st->kv_mul * st->hs / TSR_VEC, p0 = u * st->cfg.kv_split;
    for (uint32_t h = 0; h < st->cfg.n_kv_heads; h++) {
        if (st->kv_pe[h] != p0) continue;
        for (uint32_t k = 0; k < gw; k++) {
            uint32_t w = h * gw + k, ow = st->kv_ow[h] + k * (TSR_VEC / TSR_ATT_LANES);
            float m = 0.0f;
            for (uint32_t l = 0; l < TSR_VEC; l++) {
                float v = st->ao[p0][ow + l / TSR_ATT_LANES][l % TSR_ATT_LANES];
                st->cv[it][TSR_CV_XN + w * TSR_VEC + l] = v;
                float a = fabsf(v);
                m = a > m ? a : m;
            }
            st->wmax[it][w] = m;
        }
    }
}

/* Ask for what group u's PEs read of item it's KV cache in layer l: per
 * head the position tiles of its first nl positions and its first nl V
 * rows, two contiguous runs (int8: and their scales), at most
 * TSR_EMU_PREFETCH_MAX bytes a PE (the first positions; the L2 also holds
 * the item being summed).  Each is a few KB to a few tens of KB (at
 * position 80, head_size 64, fp32: 20 KB), too short for the hardware
 * prefetchers to run far ahead.  No value changes. */
static void unit_prefetch(const tsr_kstate *st, uint32_t u, const tsr_item *it, uint32_t l)
{
    uint32_t Q = st->cfg.kv_split, hs = st->hs, slw = st->seq_local / TSR_ATT_LANES;
    uint32_t blk = it->slot * st->cfg.n_layers + l, kvt = st->cfg.kv_dtype;
    /* bytes of an element, and of a word (TSR_ATT_LANES of them) */
    size_t eb = kvt == TSR_KV_F16 ? 2u : kvt == TSR_KV_INT8 ? 1u : 4u, wb = eb * TSR_ATT_LANES;
    for (uint32_t p = u * Q; p < u * Q + Q; p++) {
        const char *base = kvt == TSR_KV_F16    ? (const char *)st->kvh[p]
                           : kvt == TSR_KV_INT8 ? (const char *)st->kvq[p]
                                                : (const char *)st->kv[p];
        uint32_t nh = st->kv_nh[p], nl = tsr_att_local_positions(st, p, it->pos);
        if (nh == 0) continue;
        size_t per_pos = 2u * hs * eb * nh;   /* a position's K and V, all its heads */
        if ((size_t)nl * per_pos > TSR_EMU_PREFETCH_MAX)
            nl = (uint32_t)(TSR_EMU_PREFETCH_MAX / per_pos);
        uint32_t nlw = (nl + TSR_ATT_LANES - 1u) / TSR_ATT_LANES;
        size_t kw = (size_t)st->kv_blkw[p] * blk, sb = (size_t)st->kv_blks[p] * blk;
        for (uint32_t j = 0; j < nh; j++) {
            tsr_emu_prefetch_runs(base + kw * wb, 1u, 0u, (size_t)nlw * hs * wb);   /* K^T tiles */
            tsr_emu_prefetch_runs(base + (kw + (size_t)slw * hs) * wb, 1u, 0u,
                                  (size_t)nl * hs / TSR_ATT_LANES * wb);       /* V rows */
            if (kvt == TSR_KV_INT8) {
                tsr_emu_prefetch_runs(st->kvs[p] + sb, 2u, (size_t)slw * TSR_ATT_LANES * 4u,
                                      nl * 4u);   /* the K and the V scales */
            }
            kw += 2u * (size_t)slw * hs;
            sb += 2u * (size_t)slw * TSR_ATT_LANES;
        }
    }
}

/* Group u's steps for every item of the pass (a worker pool item). */
static void unit_pass(void *ctx, uint32_t u)
{
    const att_pass *a = ctx;
    tsr_kstate *st = a->st;
    uint32_t Q = st->cfg.kv_split, p0 = u * Q, split = Q > 1u;
    /* item 0's cache at once (nothing runs ahead of it), then, while
     * each item is summed, the next one's: in 6 interleaved rounds of
     * `tessera bench --batch 4` on stories110M (with the fused inputs of
     * forward.c), attention took about a quarter less time, and 4
     * sequences went from 2.86x to 3.03x the single sequence's tokens/s */
    unit_prefetch(st, u, &a->items[0], a->layer);
    for (uint32_t b = 0; b < a->nx; b++) {
        const tsr_item *it = &a->items[b];
        /* the next item's cache, unless it is this one's (a prompt block) */
        if (b + 1u < a->nx && a->items[b + 1u].slot != it->slot)
            unit_prefetch(st, u, &a->items[b + 1u], a->layer);
        tsr_pe_job job = { .slot = it->slot, .layer = a->layer, .pos = it->pos,
                           .blk = it->slot * st->cfg.n_layers + a->layer };
        uint32_t *cy = st->emu_att_cy[u][b], k = 0;
        for (uint32_t p = p0; p < p0 + Q; p++) tsr_emu_latch_pe(st, p, b, it->pos);
        for (uint32_t ph = 0; ph < (split ? 3u : 1u); ph++) {
            job.flags = split ? TSR_JOB_SCORES << ph : TSR_JOB_SCORES | TSR_JOB_EXP | TSR_JOB_VALUES;
            uint32_t worst = 0;
            for (uint32_t p = p0; p < p0 + Q; p++) {
                uint32_t c = tsr_att_step(st, p, &job, TSR_ATT_STEP_PHASE, 0u);
                worst = c > worst ? c : worst;
            }
            cy[k++] = worst;
#if TSR_MAX_SPLIT_LEVELS > 0
            for (uint32_t s = 1; s < Q; s *= 2u) {   /* up */
                worst = 0;
                for (uint32_t p = p0; p < p0 + Q; p++) {
                    uint32_t c = tsr_att_step(st, p, &job, TSR_ATT_STEP_UP, s);
                    worst = c > worst ? c : worst;
                }
                cy[k++] = worst;
            }
            for (uint32_t s = Q / 2u; split && ph < 2u && s >= 1u; s /= 2u) {   /* down */
                worst = 0;
                for (uint32_t p = p0; p < p0 + Q; p++) {
                    uint32_t c = tsr_att_step(st, p, &job, TSR_ATT_STEP_DOWN, s);
                    worst = c > worst ? c : worst;
                }
                cy[k++] = worst;
            }
#endif
        }
        unit_collect(st, u, b);
    }
}

void tsr_emu_attention_pass(tsr_kstate *st, const tsr_item *items, uint32_t nx, uint32_t l)
{
    uint32_t Q = st->cfg.kv_split, units = st->cfg.att_pes / Q, split = Q > 1u, work = 0;
    uint32_t dim = st->cfg.dim, npad = ((dim + st->cfg.group - 1u) >> st->g_log2) << st->g_log2;
    for (uint32_t b = 0; b < nx; b++) work += 2u * st->cfg.n_heads * (items[b].pos + 1u) * st->hs;
    att_pass a = { st, items, nx, l };
    tsr_emu_pool_share(st->pool, units, work, unit_pass, &a);
    for (uint32_t b = 0; b < nx; b++) {
        /* each step the slowest group's, in tsr_attention's regions */
        uint32_t k = 0;
        for (uint32_t ph = 0; ph < (split ? 3u : 1u); ph++) {
            /* the phase, its up levels, and (max and sum) its down levels */
            uint32_t nsteps = 1u + st->q_log2 + (ph < 2u ? st->q_log2 : 0u);
            for (uint32_t j = 0; j < nsteps; j++, k++) {
                uint32_t worst = 0;
                for (uint32_t u = 0; u < units; u++)
                    worst = st->emu_att_cy[u][b][k] > worst ? st->emu_att_cy[u][b][k] : worst;
                TSR_CHARGE(st, j == 0 ? TSR_RG_ATTN : TSR_RG_ATT_TREE, worst);
            }
        }
        /* att_collect's charge, and the padding words past dim */
        TSR_CHARGE(st, TSR_RG_ATT_IO, tsr_cy_att_collect(npad));
        for (uint32_t w = (dim + TSR_VEC - 1u) / TSR_VEC; w < npad / TSR_VEC; w++) {
            for (uint32_t i = 0; i < TSR_VEC; i++) st->cv[b][TSR_CV_XN + w * TSR_VEC + i] = 0.0f;
            st->wmax[b][w] = 0.0f;
        }
        tsr_att_counts(st, items[b].pos);
    }
}

/* ------------------------------------------------------------------------ */
/* A stage's outputs                                                          */

int tsr_emu_stage_outputs(tsr_kstate *st, const tsr_item *items, uint32_t nx, uint32_t k,
                          uint32_t nst, uint32_t mat, uint32_t yw, uint32_t gf)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t L = c->n_layers, l = k / 4u, w = k % 4u;
    uint32_t to_link = (c->stage & TSR_STAGE_LINK_OUT) != 0u;
    if (k == 4u * L || nx <= 1u) return 0;   /* the classifier, or one item: the kernel's loop */
    /* a block's gathers, then its attention, on the pool; after WO, W13
     * and W2 each item's gather makes its next input in the same pool step
     * (the input reads that item's x or hb, which its gather has just
     * written, and the norm weights; it writes only that item's input
     * words) */
    input_pass next = { st, 0, 0, 0 };
    uint32_t fuse = w != TSR_LAYER_QKV && k + 1u < nst && !(to_link && k + 1u == 4u * L);
    if (fuse) tsr_stage_input(k + 1u, L, c->dim, c->hidden_dim, &next.norm, &next.row, &next.n);
    tsr_emu_gather_pass(st, mat, nx, yw, gf, fuse ? input_item : NULL, &next,
                        (uint64_t)nx * next.n * TSR_EMU_ELEM_WORK);
    st->emu_inputs_made = fuse;
    if (w == TSR_LAYER_QKV) tsr_emu_attention_pass(st, items, nx, l);
    return 1;
}
