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

/* One GEMV on the mesh: W[mat] (d,n) @ x (n,) -> y (d,), input prepared. */
typedef struct gemv_job {
    tsr_kstate *st;
    uint32_t    mat, d, n;
    float      *y;          /* (d,) */
    int         task_reduces; /* emulator: workers run their rows' trees */
} gemv_job;

/* Step 2 for PEs [p0, p1): every PE multiplies its tile by its slice of the
 * broadcast input into its own psum. */
static void gemv_tiles(const gemv_job *j, uint32_t p0, uint32_t p1)
{
    tsr_kstate *st = j->st;
    const tsr_kconfig *c = &st->cfg;
    uint32_t G = c->group;
gemv_pes:
    for (uint32_t p = p0; p < p1; p++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_PES
        tsr_pe *pe = TSR_PE(st, p);
        tsr_tile t = tsr_lay_tile(c, j->d, j->n, p);
        if (c->dtype == TSR_KDT_Q8) {
            const int8_t *w8 = pe->w8 + st->i8_off[p][j->mat];   // (rows, ngroups*G)
            const float *ws = pe->f32 + st->f32_off[p][j->mat];  // (rows, ngroups)
            const int8_t *xq = st->xq + t.g0 * G;                 // (ngroups*G,)
            const float *xs = st->xs + t.g0;                      // (ngroups,)
            uint32_t done = 0;
#ifdef TSR_EMU
            /* the emulator's SIMD rows (emu/), bit-identical to the loop */
            if (st->simd)
                done = tsr_emu_tile_q8(w8, ws, t.rows, t.ngroups, G, xq, xs, pe->psum);
#endif
            pe_tile_q8(w8 + (uint64_t)done * t.ngroups * G, ws + (uint64_t)done * t.ngroups,
                       t.rows - done, t.ngroups, G, xq, xs, pe->psum + done);
        } else {
            pe_tile_f32(pe->f32 + st->f32_off[p][j->mat], t.rows, t.ngroups * G,
                        st->xin + t.g0 * G, pe->psum);
        }
    }
}

/* Steps 3 and 4 for mesh rows [r0, r1): the adder tree over the row's C
 * partial sums, level s adding PE (r, c + 2^s) into PE (r, c) for
 * c = 0, 2^(s+1), ...; then the root sends its row block to y. */
static void gemv_reduce(const gemv_job *j, uint32_t r0, uint32_t r1)
{
    tsr_kstate *st = j->st;
    const tsr_kconfig *c = &st->cfg;
    uint32_t C = c->mesh_cols;
gemv_reduce_rows:
    for (uint32_t r = r0; r < r1; r++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_ROWS
        tsr_tile t = tsr_lay_tile(c, j->d, j->n, r * C);
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
            j->y[t.row0 + i] = root[i];
        }
    }
}

#ifdef TSR_EMU
/* Emulator worker w of nw: the PEs of its block, then, when every block is
 * made of whole mesh rows (task_reduces), the adder trees of its rows. */
static void gemv_task(void *ctx, uint32_t w, uint32_t nw)
{
    const gemv_job *j = ctx;
    uint32_t C = j->st->cfg.mesh_cols, P = tsr_lay_pes(&j->st->cfg);
    uint32_t p0 = w * P / nw, p1 = (w + 1u) * P / nw;
    gemv_tiles(j, p0, p1);
    if (j->task_reduces) gemv_reduce(j, p0 / C, p1 / C);
}

/* Emulator: MACs below which a GEMV runs on the calling thread alone. */
#define TSR_EMU_MIN_PARALLEL_MACS (16u * 1024u)
#endif

void tsr_mesh_gemv(tsr_kstate *st, uint32_t mat, const float *x, float *y)
{
    const tsr_kconfig *c = &st->cfg;
    gemv_job j;
    j.st = st;
    j.mat = mat;
    j.y = y;
    j.task_reduces = 0;
    tsr_lay_mat_shape(c, mat, &j.d, &j.n);
    uint32_t G = c->group, ng = tsr_cdiv(j.n, G), npad = ng * G;
    uint32_t R = c->mesh_rows, C = c->mesh_cols, P = R * C;
    int q8 = c->dtype == TSR_KDT_Q8;
    tsr_kwork_gemv(c, j.d, j.n, &st->cnt.work);   /* cycle model: busiest PE's work */

    /* 1. the controller prepares the input vector */
    if (q8) {
        tsr_quantize(x, j.n, G, st->xq, st->xs);
    } else {
gemv_pad:
        for (uint32_t i = 0; i < npad; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN
#pragma HLS PIPELINE II=1
            st->xin[i] = i < j.n ? x[i] : 0.0f;
        }
    }

    /* 2-4. broadcast, PE-local tiles, adder trees, gather.  The emulator
     * runs the PEs on its worker pool, each worker a contiguous block of
     * PEs; a PE writes only its own psum, so the result does not depend on
     * the number of workers.  Small GEMVs stay on the calling thread. */
#ifdef TSR_EMU
    uint32_t nw = tsr_emu_pool_size(st->pool);
    if (nw > P) nw = P;
    if (nw > 1 && (uint64_t)j.d * npad >= TSR_EMU_MIN_PARALLEL_MACS) {
        j.task_reduces = 1;
        for (uint32_t w = 0; w <= nw; w++) j.task_reduces &= (w * P / nw) % C == 0;
        tsr_emu_pool_run(st->pool, nw, gemv_task, &j);
        if (!j.task_reduces) gemv_reduce(&j, 0, R);
    } else
#endif
    {
        gemv_tiles(&j, 0, P);
        gemv_reduce(&j, 0, R);
    }

    /* fabric traffic, summed over the PEs in closed form: every mesh row
     * gets the whole input (int8 + scales, or fp32), C - 1 tree additions
     * of each row block, every row gathered once */
    st->cnt.fabric_bcast_bytes += (uint64_t)R * (q8 ? npad + 4u * ng : 4u * npad);
    st->cnt.fabric_reduce_bytes += 4ull * j.d * (C - 1u);
    st->cnt.fabric_gather_bytes += 4ull * j.d;
    st->cnt.macs += (uint64_t)j.d * npad;
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
