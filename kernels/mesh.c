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
 * A PE step writes only its own psum, so PEs could run in parallel threads.
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

#ifdef TSR_EMU
/* Emulator only: MACs below which a GEMV runs on the calling thread. */
#define TSR_EMU_MIN_PARALLEL_MACS (64u * 1024u)
#endif

void tsr_mesh_gemv(tsr_kstate *st, uint32_t mat, const float *x, float *y)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t d, n;
    tsr_lay_mat_shape(c, mat, &d, &n);
    uint32_t G = c->group, ng = tsr_cdiv(n, G), npad = ng * G;
    uint32_t R = c->mesh_rows, C = c->mesh_cols, P = R * C;
    int q8 = c->dtype == TSR_KDT_Q8;

    /* 1. the controller prepares the input vector */
    if (q8) {
        tsr_quantize(x, n, G, st->xq, st->xs);
    } else {
gemv_pad:
        for (uint32_t j = 0; j < npad; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN
#pragma HLS PIPELINE II=1
            st->xin[j] = j < n ? x[j] : 0.0f;
        }
    }

    /* 2. broadcast slices; every PE multiplies its tile (PE-local work).
     *    The emulator spreads the PEs over its worker threads (OpenMP keeps
     *    one pool); each PE writes only its own psum, so the result does not
     *    depend on the thread count.  Small matrices stay on one thread:
     *    waking the team costs more than their MACs. */
    uint64_t bcast = 0, macs = 0;
#ifdef TSR_EMU
    int team = st->threads > 1 && (uint64_t)d * npad >= TSR_EMU_MIN_PARALLEL_MACS;
#pragma omp parallel for schedule(static) num_threads(st->threads) if (team) \
    reduction(+ : bcast, macs)
#else
gemv_pes:
#endif
    for (uint32_t p = 0; p < P; p++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_PES
        tsr_pe *pe = TSR_PE(st, p);
        tsr_tile t = tsr_lay_tile(c, d, n, p);
        uint32_t cols = t.ngroups * G;
        bcast += q8 ? cols + 4u * t.ngroups : 4u * cols;
        macs += (uint64_t)t.rows * cols;
        if (q8)
            pe_tile_q8(pe->w8 + st->i8_off[p][mat], pe->f32 + st->f32_off[p][mat], t.rows,
                       t.ngroups, G, st->xq + t.g0 * G, st->xs + t.g0, pe->psum);
        else
            pe_tile_f32(pe->f32 + st->f32_off[p][mat], t.rows, cols, st->xin + t.g0 * G,
                        pe->psum);
    }
    st->cnt.fabric_bcast_bytes += bcast;
    st->cnt.macs += macs;

    /* 3. per mesh row, an adder tree over the C column partial sums:
     *    level s adds PE (r, c + 2^s) into PE (r, c) for c = 0, 2^(s+1), ... */
gemv_reduce_rows:
    for (uint32_t r = 0; r < R; r++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_ROWS
        uint32_t rows = tsr_lay_tile(c, d, n, r * C).rows;
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
                for (uint32_t i = 0; i < rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_OUT
#pragma HLS PIPELINE II=1
                    dst[i] += src[i];
                }
                st->cnt.fabric_reduce_bytes += 4u * rows;
            }
        }
        /* 4. the tree root sends its row block to the controller */
        const float *root = TSR_PE(st, r * C)->psum;
        uint32_t row0 = tsr_lay_tile(c, d, n, r * C).row0;
gemv_gather:
        for (uint32_t i = 0; i < rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_OUT
#pragma HLS PIPELINE II=1
            y[row0 + i] = root[i];
        }
        st->cnt.fabric_gather_bytes += 4u * rows;
    }
}

/* ------------------------------------------------------------------------ */
/* Embedding gather                                                           */

void tsr_mesh_embed(tsr_kstate *st, uint32_t token, float *x)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t d = c->vocab_size, n = c->dim, G = c->group, C = c->mesh_cols;
    int q8 = c->dtype == TSR_KDT_Q8;
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
