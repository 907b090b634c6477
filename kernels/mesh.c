/*
 * mesh.c - GEMV and embedding gathers on the PE mesh (after WaferLLM's
 * MeshGEMV): weights never move, activation vectors do.
 *
 *   controller x (n,) --quantize (Q8) / pad (F32)--> slices by column block
 *        | broadcast slice c to the R PEs of mesh column c
 *        v
 *   PE (r, c): tile rows x tile groups -> psum (rows,)       [PE-local]
 *        | binary adder tree along mesh row r (log2 C levels)
 *        v
 *   PE (r, 0) psum -> controller y [row block r]   (gather)
 *
 * A PE step writes only its own psum, so the emulator runs blocks of PEs on
 * its worker threads (emu/) with the same result for any thread count.
 */
#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* One PE's tile                                                              */

/* a (n,) . b (n,) -> int32, int8 x int8 products summed exactly. */
static inline int32_t dot_i8(const int8_t *a, const int8_t *b, uint32_t n)
{
    int32_t sum = 0;
dot_i8_macs:
    for (uint32_t j = 0; j < n; j++) {
#pragma HLS LOOP_TRIPCOUNT min=TSR_MIN_GROUP max=TSR_MAX_GROUP
#pragma HLS PIPELINE II=1
        sum += (int32_t)a[j] * (int32_t)b[j];
    }
    return sum;
}

/* Q8: w8 (rows, ng*G) int8, ws (rows, ng) @ (xq (ng*G,), xs (ng,)) -> psum
 * (rows,): per group an int32 dot product times both scales, groups
 * ascending (the numerics contract's order within the tile). */
static void pe_tile_q8(const int8_t *w8, const float *ws, uint32_t rows, uint32_t ng, uint32_t G,
                       const int8_t *xq, const float *xs, float *psum)
{
tile_q8_rows:
    for (uint32_t i = 0; i < rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_OUT
        const int8_t *wr = w8 + (uint64_t)i * ng * G;   // (ng*G,)
        float acc = 0.0f;
tile_q8_groups:
        for (uint32_t g = 0; g < ng; g++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN_GROUPS
            const int8_t *wg = wr + g * G, *xg = xq + g * G;   // (G,) each
            /* The common group sizes get a constant trip count, which the
             * compiler unrolls and vectorizes; the sum is the same integer. */
            int32_t isum = G == 32   ? dot_i8(wg, xg, 32)
                           : G == 64 ? dot_i8(wg, xg, 64)
                                     : dot_i8(wg, xg, G);
            acc += (float)isum * ws[(uint64_t)i * ng + g] * xs[g];
        }
        psum[i] = acc;
    }
}

/* F32: w (rows, ng*G) @ x (ng*G,) -> psum (rows,), columns ascending. */
static void pe_tile_f32(const float *w, uint32_t rows, uint32_t cols, const float *x, float *psum)
{
tile_f32_rows:
    for (uint32_t i = 0; i < rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_OUT
        const float *wr = w + (uint64_t)i * cols;   // (cols,)
        float acc = 0.0f;
tile_f32_macs:
        for (uint32_t j = 0; j < cols; j++) {
#pragma HLS LOOP_TRIPCOUNT min=TSR_MIN_GROUP max=TSR_MAX_IN
#pragma HLS PIPELINE II=1
            acc += wr[j] * x[j];
        }
        psum[i] = acc;
    }
}

/* ------------------------------------------------------------------------ */
/* Mesh GEMV                                                                  */

/* Matrices that share one broadcast input: q, k, v; or w1, w3. */
#define TSR_GEMV_FUSED 3u

/* GEMVs on the mesh: W[mat[k]] (d[k], n) @ x (n,) -> y[k] (d[k],), input
 * prepared.  Emulator only with n_mats > 1 (the synthesis path runs one
 * matrix per job). */
typedef struct gemv_job {
    tsr_kstate *st;
    uint32_t    n_mats;
    uint32_t    mat[TSR_GEMV_FUSED], d[TSR_GEMV_FUSED], n;
    float      *y[TSR_GEMV_FUSED];   /* (d[k],) each */
    int         swiglu;       /* after the GEMVs: y[0] = silu(y[0]) * y[1] */
    int         task_reduces; /* emulator: workers run their rows' trees */
} gemv_job;

/* Step 2 for matrix k and PEs [p0, p1): every PE multiplies its tile by its
 * slice of the broadcast input into its own psum. */
static void gemv_tiles(const gemv_job *j, uint32_t k, uint32_t p0, uint32_t p1)
{
    tsr_kstate *st = j->st;
    const tsr_kconfig *c = &st->cfg;
    uint32_t G = c->group, mat = j->mat[k];
gemv_pes:
    for (uint32_t p = p0; p < p1; p++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_PES
        tsr_pe *pe = TSR_PE(st, p);
        tsr_tile t = tsr_lay_tile(c, j->d[k], j->n, p);
        if (c->dtype == TSR_KDT_Q8) {
            const int8_t *w8 = pe->w8 + st->i8_off[p][mat];   // (rows, ngroups*G)
            const float *ws = pe->f32 + st->f32_off[p][mat];  // (rows, ngroups)
            const int8_t *xq = st->xq + t.g0 * G;              // (ngroups*G,)
            const float *xs = st->xs + t.g0;                   // (ngroups,)
            uint32_t done = 0;
#ifdef TSR_EMU
            /* the emulator's SIMD rows (emu/), bit-identical to the loop */
            if (st->simd)
                done = tsr_emu_tile_q8(w8, ws, t.rows, t.ngroups, G, xq, xs, pe->psum);
#endif
            pe_tile_q8(w8 + (uint64_t)done * t.ngroups * G, ws + (uint64_t)done * t.ngroups,
                       t.rows - done, t.ngroups, G, xq, xs, pe->psum + done);
        } else {
            pe_tile_f32(pe->f32 + st->f32_off[p][mat], t.rows, t.ngroups * G,
                        st->xin + t.g0 * G, pe->psum);
        }
    }
}

/* Steps 3 and 4 for matrix k and mesh rows [r0, r1): the adder tree over
 * the row's C partial sums, level s adding PE (r, c + 2^s) into PE (r, c)
 * for c = 0, 2^(s+1), ...; then the root sends its row block to y[k]. */
static void gemv_reduce(const gemv_job *j, uint32_t k, uint32_t r0, uint32_t r1)
{
    tsr_kstate *st = j->st;
    const tsr_kconfig *c = &st->cfg;
    uint32_t C = c->mesh_cols;
    float *y = j->y[k];
gemv_reduce_rows:
    for (uint32_t r = r0; r < r1; r++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_ROWS
        tsr_tile t = tsr_lay_tile(c, j->d[k], j->n, r * C);
gemv_tree_levels:
        for (uint32_t lvl = 0; lvl < TSR_MAX_TREE_LEVELS; lvl++) {
            uint32_t stride = 1u << lvl;
            if (stride >= C) break;
gemv_tree_pairs:
            for (uint32_t cc = 0; cc + stride < C; cc += 2u * stride) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_COLS/2
                float *dst = TSR_PE(st, r * C + cc)->psum;                // (rows,)
                const float *src = TSR_PE(st, r * C + cc + stride)->psum; // (rows,)
gemv_tree_add:
                for (uint32_t i = 0; i < t.rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_OUT
#pragma HLS PIPELINE II=1
                    dst[i] += src[i];
                }
            }
        }
        const float *root = TSR_PE(st, r * C)->psum;   // (rows,)
gemv_gather:
        for (uint32_t i = 0; i < t.rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_OUT
#pragma HLS PIPELINE II=1
            y[t.row0 + i] = root[i];
        }
    }
}

/* Step 1: the controller quantizes (Q8) or zero-pads (F32) x (n,) into the
 * broadcast buffers. */
static void gemv_input(tsr_kstate *st, const float *x, uint32_t n)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t npad = tsr_cdiv(n, c->group) * c->group;
    if (c->dtype == TSR_KDT_Q8) {
        tsr_quantize(x, n, c->group, st->xq, st->xs);
        return;
    }
gemv_pad:
    for (uint32_t i = 0; i < npad; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN
#pragma HLS PIPELINE II=1
        st->xin[i] = i < n ? x[i] : 0.0f;
    }
}

/* Counters of one GEMV of matrix mat, summed over the PEs in closed form:
 * every mesh row gets the whole input (int8 + scales, or fp32), C - 1 tree
 * additions of each row block, every row gathered once. */
static void gemv_count(tsr_kstate *st, uint32_t mat)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t d, n;
    tsr_lay_mat_shape(c, mat, &d, &n);
    uint32_t ng = tsr_cdiv(n, c->group), npad = ng * c->group;
    uint32_t R = c->mesh_rows, C = c->mesh_cols;
    tsr_kwork_gemv(c, d, n, &st->cnt.work);   /* cycle model: busiest PE's work */
    st->cnt.fabric_bcast_bytes += (uint64_t)R * (c->dtype == TSR_KDT_Q8 ? npad + 4u * ng : 4u * npad);
    st->cnt.fabric_reduce_bytes += 4ull * d * (C - 1u);
    st->cnt.fabric_gather_bytes += 4ull * d;
    st->cnt.macs += (uint64_t)d * npad;
}

#ifdef TSR_EMU
/* Emulator: MACs below which a GEMV runs on the calling thread alone. */
#define TSR_EMU_MIN_PARALLEL_MACS (16u * 1024u)

/* Emulator worker w of nw, per matrix: the PEs of its block, then, when
 * every block is made of whole mesh rows (task_reduces), the adder trees of
 * its rows, and the SwiGLU of its row block (w1 and w3 tile alike). */
static void gemv_task(void *ctx, uint32_t w, uint32_t nw)
{
    const gemv_job *j = ctx;
    const tsr_kconfig *c = &j->st->cfg;
    uint32_t C = c->mesh_cols, P = tsr_lay_pes(c);
    uint32_t p0 = w * P / nw, p1 = (w + 1u) * P / nw;
    for (uint32_t k = 0; k < j->n_mats; k++) {
        gemv_tiles(j, k, p0, p1);
        if (j->task_reduces) gemv_reduce(j, k, p0 / C, p1 / C);
    }
    if (j->swiglu && j->task_reduces && p1 > p0) {
        uint32_t a = tsr_lay_tile(c, j->d[0], j->n, p0).row0;
        uint32_t b = p1 < P ? tsr_lay_tile(c, j->d[0], j->n, p1).row0 : j->d[0];
        tsr_swiglu(j->y[0] + a, j->y[1] + a, b - a);
    }
}

/* Run j on the worker pool when it is worth it; 0 when the caller must do
 * the work itself.  Several matrices share one step only when the workers
 * can finish each one (blocks of whole mesh rows): a PE has one psum. */
static int gemv_on_pool(gemv_job *j)
{
    tsr_kstate *st = j->st;
    const tsr_kconfig *c = &st->cfg;
    uint32_t P = tsr_lay_pes(c), C = c->mesh_cols, nw = tsr_emu_pool_size(st->pool);
    uint64_t macs = 0;
    for (uint32_t k = 0; k < j->n_mats; k++) macs += (uint64_t)j->d[k] * j->n;
    if (nw > P) nw = P;
    if (nw <= 1 || macs < TSR_EMU_MIN_PARALLEL_MACS) return 0;
    j->task_reduces = 1;
    for (uint32_t w = 0; w <= nw; w++) j->task_reduces &= (w * P / nw) % C == 0;
    if (!j->task_reduces && j->n_mats > 1) return 0;
    tsr_emu_pool_run(st->pool, nw, gemv_task, j);
    if (!j->task_reduces) gemv_reduce(j, 0, 0, c->mesh_rows);
    return 1;
}
#endif

void tsr_mesh_gemv(tsr_kstate *st, uint32_t mat, const float *x, float *y)
{
    const tsr_kconfig *c = &st->cfg;
    gemv_job j;
    j.st = st;
    j.n_mats = 1;
    j.mat[0] = mat;
    j.y[0] = y;
    j.swiglu = 0;
    j.task_reduces = 0;
    tsr_lay_mat_shape(c, mat, &j.d[0], &j.n);
    gemv_count(st, mat);

    /* 1. the controller prepares the input vector */
    gemv_input(st, x, j.n);

    /* 2-4. broadcast, PE-local tiles, adder trees, gather.  The emulator
     * runs the PEs on its worker pool, each worker a contiguous block of
     * PEs; a PE writes only its own psum, so the result does not depend on
     * the number of workers.  Small GEMVs stay on the calling thread. */
#ifdef TSR_EMU
    if (gemv_on_pool(&j)) return;
#endif
    gemv_tiles(&j, 0, 0, tsr_lay_pes(c));
    gemv_reduce(&j, 0, 0, c->mesh_rows);
}

#ifdef TSR_EMU
/* Emulator: the GEMVs of mats[0..n) with the one input x as one worker
 * step (input prepared once), then SwiGLU when asked; the same counters and
 * results as one tsr_mesh_gemv per matrix.  0 when it did nothing. */
static int gemv_fused(tsr_kstate *st, uint32_t n, const uint32_t *mats, const float *x,
                      float *y0, float *y1, float *y2, int swiglu)
{
    gemv_job j;
    j.st = st;
    j.n_mats = n;
    j.y[0] = y0;
    j.y[1] = y1;
    j.y[2] = y2;
    j.swiglu = swiglu;
    j.task_reduces = 0;
    for (uint32_t k = 0; k < n; k++) {
        j.mat[k] = mats[k];
        tsr_lay_mat_shape(&st->cfg, mats[k], &j.d[k], &j.n);
    }
    if (st->pool == 0) return 0;
    gemv_input(st, x, j.n);
    if (!gemv_on_pool(&j)) return 0;
    for (uint32_t k = 0; k < n; k++) gemv_count(st, mats[k]);
    return 1;
}
#endif

void tsr_mesh_gemv_qkv(tsr_kstate *st, uint32_t l, const float *x)
{
#ifdef TSR_EMU
    const uint32_t mats[3] = { TSR_MAT_LAYER(l, TSR_W_Q), TSR_MAT_LAYER(l, TSR_W_K),
                               TSR_MAT_LAYER(l, TSR_W_V) };
    if (gemv_fused(st, 3, mats, x, st->q, st->k, st->v, 0)) return;
#endif
    tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_Q), x, st->q);
    tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_K), x, st->k);
    tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_V), x, st->v);
}

void tsr_mesh_ffn_up(tsr_kstate *st, uint32_t l, const float *x)
{
#ifdef TSR_EMU
    const uint32_t mats[2] = { TSR_MAT_LAYER(l, TSR_W_1), TSR_MAT_LAYER(l, TSR_W_3) };
    if (gemv_fused(st, 2, mats, x, st->hb, st->hb2, 0, 1)) return;
#endif
    tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_1), x, st->hb);
    tsr_mesh_gemv(st, TSR_MAT_LAYER(l, TSR_W_3), x, st->hb2);
    tsr_swiglu(st->hb, st->hb2, st->cfg.hidden_dim);
}

/* ------------------------------------------------------------------------ */
/* Embedding gather                                                           */

void tsr_mesh_embed(tsr_kstate *st, uint32_t token, float *x)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t d = c->vocab_size, n = c->dim, G = c->group, C = c->mesh_cols;
    int q8 = c->dtype == TSR_KDT_Q8;
    st->cnt.work.embed += (uint64_t)tsr_cdiv(n, G) * G;   /* cycle model: row gathered */
    /* the row block holding `token` */
    uint32_t rb = 0;
embed_find_block:
    for (uint32_t r = 0; r < c->mesh_rows; r++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_ROWS
        tsr_tile t = tsr_lay_tile(c, d, n, r * C);
        if (token >= t.row0 && token < t.row0 + t.rows) rb = r;
    }
embed_cols:
    for (uint32_t cc = 0; cc < C; cc++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_COLS
        uint32_t p = rb * C + cc;
        const tsr_pe *pe = TSR_PE(st, p);
        tsr_tile t = tsr_lay_tile(c, d, n, p);
        uint32_t i = token - t.row0, cols = t.ngroups * G;
        const int8_t *w8 = pe->w8 + st->i8_off[p][TSR_MAT_EMB] + (uint64_t)i * cols;   // (cols,)
        const float *wf = pe->f32 + st->f32_off[p][TSR_MAT_EMB];
        const float *ws = wf + (uint64_t)i * t.ngroups;                                  // (ngroups,)
        const float *wr = wf + (uint64_t)i * cols;                                       // (cols,)
embed_row:
        for (uint32_t j = 0; j < cols; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM
#pragma HLS PIPELINE II=1
            uint32_t col = t.g0 * G + j;
            if (col < n) x[col] = q8 ? (float)w8[j] * ws[j / G] : wr[j];
        }
        st->cnt.fabric_gather_bytes += 4u * cols;
    }
}
