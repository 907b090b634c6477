/*
 * mesh.c - GEMV and embedding gathers on the PE mesh (after WaferLLM's
 * MeshGEMV): weights never move, activation vectors do.
 *
 *   controller x (n,) --normalise, quantize (Q8) / pad (F32)--> bus
 *        | broadcast: every PE latches each word into its own copy
 *        v
 *   PE (r, c): its tile, 32 int8 MACs a cycle, 8 rows interleaved -> psum
 *        | column adder tree along mesh row r (log2 C_m levels, C_m > 1:
 *        | each matrix has its own column count, tsr_layout.h)
 *        | W13: SwiGLU on the PE (the root, after the tree)
 *        v
 *   root PE (r, 0) psum --bus--> controller y [row block r]   (gather)
 *                       or its best row --tree--> the greedy token
 *
 * Each PE task (gemv_pe, tree_pe, root_pe) touches only its own PE's
 * memories, except a tree step reading its partner's partial sums, so the
 * PE instances run concurrently in hardware (TSR_RUN_PES) and on the
 * emulator's worker threads with the same result for any thread count.
 */
#include <math.h>

#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* One PE's tile                                                              */

/* Q8: rows x ng entries of the layout (tsr_layout.h), from byte wb of w8
 * and scale fs of ws, times the input groups [g0, g0 + ng) of xq/xs ->
 * psum[po + row].  Block b0 onwards (the emulator's SIMD rows did the
 * first ones).  One TSR_LANES-chunk of one entry a cycle: its int8
 * products summed exactly in int32 (over the entry's chunks when G >
 * TSR_LANES), then times both scales and added into its row's fp32
 * accumulator, groups ascending: the order of runq.c's matmul per row.
 * Rows interleave, so an accumulator is added to once every TSR_ROW_SLOTS
 * steps: the DEPENDENCE distance that lets the loop run at II=1. */
static void pe_tile_q8(const int8_t w8[TSR_PE_W8_WORDS][TSR_LANES], const float ws[TSR_PE_F32_WORDS],
                       const int8_t xq[TSR_PE_XQ_WORDS][TSR_LANES], const float xs[TSR_PE_XS],
                       float psum[TSR_PE_ROWS], uint32_t wb, uint32_t fs, uint32_t rows,
                       uint32_t ng, uint32_t g0, uint32_t G, uint32_t po, uint32_t b0)
{
#pragma HLS INLINE off
    float acc[TSR_ROW_SLOTS];
#pragma HLS ARRAY_PARTITION variable=acc type=complete
    uint32_t nb = tsr_cdiv(rows, TSR_ROW_SLOTS), tail = rows - (nb - 1u) * TSR_ROW_SLOTS;
    uint32_t chunk = G < TSR_LANES ? G : TSR_LANES;        /* lanes in use   */
    uint32_t cpg = G < TSR_LANES ? 1u : G / TSR_LANES;     /* chunks a group */
    uint32_t steps = (nb - b0) * ng * TSR_ROW_SLOTS * cpg;
    uint32_t b = b0, g = 0, j = 0, c = 0;
    uint32_t kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;     /* rows of block b */
    uint32_t wa = wb + b0 * TSR_ROW_SLOTS * ng * G;         /* weight byte     */
    uint32_t sa = fs + b0 * TSR_ROW_SLOTS * ng;             /* weight scale    */
    uint32_t xg = g0 * G;                                   /* group's first input byte */
    int32_t isum = 0;
q8_steps:
    for (uint32_t s = 0; s < steps; s++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_TILE_STEPS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter dependent=true distance=TSR_ROW_SLOTS
        if (j < kb) {
            uint32_t xa = xg + c * TSR_LANES;
#if TSR_MIN_GROUP >= TSR_LANES
            uint32_t wo = 0, xo = 0;          /* every chunk is a whole word */
#else
            uint32_t wo = wa % TSR_LANES, xo = xa % TSR_LANES;
#endif
            int32_t d = 0;
q8_lanes:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                /* an 8 x 8-bit product: LUTs, not a DSP (plan.c counts none) */
                int32_t prod = (int32_t)w8[wa / TSR_LANES][wo + l] * (int32_t)xq[xa / TSR_LANES][xo + l];
#pragma HLS BIND_OP variable=prod op=mul impl=fabric
                if (l < chunk) d += prod;
            }
            isum = c == 0 ? d : isum + d;
            if (c + 1u == cpg) {
                float prev = g == 0 ? 0.0f : acc[j];
                float v = prev + (float)isum * ws[sa] * xs[g0 + g];
                acc[j] = v;
                if (g + 1u == ng) psum[po + b * TSR_ROW_SLOTS + j] = v;
                sa++;
            }
            wa += chunk;
        }
        /* next (chunk, row slot, group, block) */
        if (++c == cpg) {
            c = 0;
            if (++j == TSR_ROW_SLOTS) {
                j = 0;
                if (++g == ng) {
                    g = 0;
                    b++;
                    kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;
                }
                xg = (g0 + g) * G;
            }
        }
    }
}

#if TSR_WITH_F32
/* F32: rows x (ng * G) values of the layout from word fo of wf, times xf
 * columns [g0 * G, ...) -> psum[po + row], one column of one row a cycle,
 * columns ascending: run.c's matmul order per row. */
static void pe_tile_f32(const float wf[TSR_PE_F32_WORDS], const float xf[TSR_PE_XF],
                        float psum[TSR_PE_ROWS], uint32_t fo, uint32_t rows, uint32_t cols,
                        uint32_t x0, uint32_t po, uint32_t b0)
{
#pragma HLS INLINE off
    float acc[TSR_ROW_SLOTS];
#pragma HLS ARRAY_PARTITION variable=acc type=complete
    uint32_t nb = tsr_cdiv(rows, TSR_ROW_SLOTS), tail = rows - (nb - 1u) * TSR_ROW_SLOTS;
    uint32_t steps = (nb - b0) * cols * TSR_ROW_SLOTS;
    uint32_t b = b0, col = 0, j = 0, kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;
    uint32_t fa = fo + b0 * TSR_ROW_SLOTS * cols;
f32_steps:
    for (uint32_t s = 0; s < steps; s++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PE_F32_WORDS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter dependent=true distance=TSR_ROW_SLOTS
        if (j < kb) {
            float prev = col == 0 ? 0.0f : acc[j];
            float v = prev + wf[fa] * xf[x0 + col];
            acc[j] = v;
            if (col + 1u == cols) psum[po + b * TSR_ROW_SLOTS + j] = v;
            fa++;
        }
        if (++j == TSR_ROW_SLOTS) {
            j = 0;
            if (++col == cols) {
                col = 0;
                b++;
                kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;
            }
        }
    }
}
#endif

/* SwiGLU on a W13 tile's partial sums: psum[i] = silu(w1 row) * w3 row,
 * rows (i < rows) and their w3 halves at rows + i; one row a cycle. */
static void pe_swiglu(float psum[TSR_PE_ROWS], uint32_t rows)
{
#pragma HLS INLINE off
pe_swiglu_rows:
    for (uint32_t i = 0; i < rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PE_ROWS
#pragma HLS PIPELINE II=1
        float val = psum[i];
        float e = expf(-val);   /* in LUTs: a DSP-free expf per PE */
#pragma HLS BIND_OP variable=e op=fexp impl=fabric
        val *= (1.0f / (1.0f + e));
        val *= psum[rows + i];
        psum[i] = val;
    }
}

/* The best of a root's rows (greedy): the largest logit, the first row on
 * ties, as tsr_argmax; TSR_VEC lanes a cycle, each lane's best updated once
 * a word (a compare-select recurrence at II = TSR_D_CMP), then the lanes'
 * tree. */
static void pe_best(const float psum[TSR_PE_ROWS], uint32_t rows, uint32_t row0, float *bv,
                    uint32_t *bi)
{
#pragma HLS INLINE off
    float lv[TSR_VEC];
    uint32_t li[TSR_VEC];
#pragma HLS ARRAY_PARTITION variable=lv type=complete
#pragma HLS ARRAY_PARTITION variable=li type=complete
best_init:
    for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
        lv[l] = psum[0];
        li[l] = 0;
    }
best_words:
    for (uint32_t w = 0; w < rows; w += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PE_ROWS
#pragma HLS PIPELINE II=TSR_D_CMP
best_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            uint32_t i = w + l;
            if (i < rows && psum[i] > lv[l]) {
                lv[l] = psum[i];
                li[l] = i;
            }
        }
    }
    /* lanes: larger value, or the same value at a lower row */
best_tree:
    for (uint32_t h = TSR_VEC / 2u; h >= 1u; h /= 2u) {
#pragma HLS UNROLL
best_tree_pairs:
        for (uint32_t l = 0; l < TSR_VEC / 2u; l++) {
#pragma HLS UNROLL
            if (l < h && (lv[l + h] > lv[l] || (lv[l + h] == lv[l] && li[l + h] < li[l]))) {
                lv[l] = lv[l + h];
                li[l] = li[l + h];
            }
        }
    }
    *bv = lv[0];
    *bi = row0 + li[0];
}

/* ------------------------------------------------------------------------ */
/* PE tasks (TSR_RUN_PES): PE p's share of a mesh step                        */

/* GEMV of job->mat: the tile (both halves of W13), and, when nothing has
 * to be added across columns first (C_m == 1), SwiGLU of W13. */
static uint32_t gemv_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job)
{
#pragma HLS INLINE
    tsr_ktab t = st->tab[p][job->mat];
    uint32_t G = st->cfg.group, pair = job->mat != TSR_MAT_EMB &&
                                       job->mat != tsr_lay_mat_wcls(&st->cfg) &&
                                       (job->mat - 1u) % TSR_W_COUNT == TSR_W_13;
    uint32_t halves = pair ? 2u : 1u, cy = 0;
    if (t.rows == 0) return 0;
    if (t.ngroups == 0) {
        /* a mesh column with no groups of this matrix (ng < C): its partial
         * sums are zeros, for the column tree */
pe_zero:
        for (uint32_t i = 0; i < halves * t.rows; i += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PE_ROWS
#pragma HLS PIPELINE II=1
pe_zero_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                if (i + l < halves * t.rows) st->psum[p][i + l] = 0.0f;
            }
        }
        return tsr_cy_zero(halves * t.rows);
    }
gemv_halves:
    for (uint32_t h = 0; h < halves; h++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=2
        uint32_t po = h * t.rows, ent = h * t.rows * t.ngroups;
        if (st->cfg.dtype == TSR_KDT_Q8) {
            uint32_t b0 = 0;
#ifdef TSR_EMU
            /* the emulator's SIMD rows (emu/), bit-identical to the loop */
            if (st->simd)
                b0 = tsr_emu_tile_q8(&st->w8[p][0][0] + t.w_off + ent * G, st->f32[p] + t.f_off + ent,
                                     t.rows, t.ngroups, G, &st->xq[p][0][0] + t.g0 * G,
                                     st->xs[p] + t.g0, st->psum[p] + po);
#endif
            pe_tile_q8(st->w8[p], st->f32[p], st->xq[p], st->xs[p], st->psum[p], t.w_off + ent * G,
                       t.f_off + ent, t.rows, t.ngroups, t.g0, G, po, b0);
        }
#if TSR_WITH_F32
        else {
            uint32_t b0 = 0;
#ifdef TSR_EMU
            if (st->simd)
                b0 = tsr_emu_tile_f32(st->f32[p] + t.f_off + ent * G, t.rows, t.ngroups * G,
                                      st->xf[p] + t.g0 * G, st->psum[p] + po);
#endif
            pe_tile_f32(st->f32[p], st->xf[p], st->psum[p], t.f_off + ent * G, t.rows,
                        t.ngroups * G, t.g0 * G, po, b0);
        }
#endif
        cy += tsr_cy_tile(tsr_lay_tile_steps(&st->cfg, t.rows, t.ngroups));
    }
    if (pair && t.cols == 1u) {
        pe_swiglu(st->psum[p], t.rows);
        cy += tsr_cy_swiglu(t.rows);
    }
    return cy;
}

/* One level of the column adder tree: PE (r, c) with c % 2s == 0 adds PE
 * (r, c + s)'s partial sums into its own (s = 2^level), TSR_TREE_LANES a
 * cycle. */
static uint32_t tree_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job)
{
#pragma HLS INLINE
    tsr_ktab t = st->tab[p][job->mat];
    uint32_t s = 1u << job->level, c = p & (t.cols - 1u);
    if ((c & (2u * s - 1u)) != 0 || c + s >= t.cols) return 0;
    uint32_t d, n, pair;
    tsr_lay_mat_shape(&st->cfg, job->mat, &d, &n, &pair);
    uint32_t rows = (pair ? 2u : 1u) * t.rows;
tree_words:
    for (uint32_t i = 0; i < rows; i += TSR_TREE_LANES) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PE_ROWS
#pragma HLS PIPELINE II=1
tree_lanes:
        for (uint32_t l = 0; l < TSR_TREE_LANES; l++) {
#pragma HLS UNROLL
            if (i + l < rows) st->psum[p][i + l] += st->psum[p + s][i + l];
        }
    }
    return tsr_cy_tree_level(rows);
}

/* After the tree, on each mesh row's root: SwiGLU of W13 (C_m > 1). */
static uint32_t swiglu_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job)
{
#pragma HLS INLINE
    tsr_ktab t = st->tab[p][job->mat];
    if ((p & (t.cols - 1u)) != 0 || t.rows == 0) return 0;
    pe_swiglu(st->psum[p], t.rows);
    return tsr_cy_swiglu(t.rows);
}

/* Greedy: each mesh row's root finds its best row. */
static uint32_t best_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job)
{
#pragma HLS INLINE
    tsr_ktab t = st->tab[p][job->mat];
    if ((p & (t.cols - 1u)) != 0 || t.rows == 0) return 0;
    pe_best(st->psum[p], t.rows, t.row0, &st->best_v[p], &st->best_i[p]);
    return tsr_cy_best(t.rows);
}

/* ------------------------------------------------------------------------ */
/* Mesh operations                                                            */

void tsr_mesh_gemv(tsr_kstate *st, uint32_t mat, uint32_t flags)
{
    uint32_t d, n, pair, worst, C = st->mat_cols[mat];
    tsr_lay_mat_shape(&st->cfg, mat, &d, &n, &pair);
    uint32_t npad = tsr_cdiv(n, st->cfg.group) * st->cfg.group, halves = pair ? 2u : 1u;
    tsr_pe_job job = { .mat = mat, .flags = flags, .work = halves * d * npad };

    TSR_RUN_PES(worst, st, gemv_pe, &job);
    TSR_CHARGE(st, TSR_RG_GEMV, worst);
    if (C > 1u) {
gemv_tree_levels:
        for (uint32_t lvl = 0; lvl < TSR_MAX_TREE_LEVELS; lvl++) {
#pragma HLS UNROLL
            if ((1u << lvl) < C) {
                job.level = lvl;
                job.work = halves * d * C;
                TSR_RUN_PES(worst, st, tree_pe, &job);
                TSR_CHARGE(st, TSR_RG_TREE, worst);
            }
        }
        if (pair) {
            TSR_RUN_PES(worst, st, swiglu_pe, &job);
            TSR_CHARGE(st, TSR_RG_GEMV, worst);
        }
        st->cnt.fabric_reduce_bytes += 4ull * halves * d * (C - 1u);
    }
    if (flags & TSR_JOB_ARGMAX) {
        job.work = d;
        TSR_RUN_PES(worst, st, best_pe, &job);
        TSR_CHARGE(st, TSR_RG_ARGMAX, worst);
    }
    st->cnt.macs += (uint64_t)halves * d * npad;
}

static void quantize_broadcast(tsr_kstate *st, uint32_t npad);

void tsr_mesh_input(tsr_kstate *st, const float *x, uint32_t n, const float *w, float ss)
{
    uint32_t G = st->cfg.group, npad = ((n + G - 1u) >> st->g_log2) << st->g_log2;
    st->wmax_fresh = 0;
#if TSR_WITH_F32
    if (st->cfg.dtype == TSR_KDT_F32) {
        uint32_t P = st->P;
        /* normalise and zero-pad, TSR_VEC values a cycle onto the bus; every
         * PE latches each word */
        TSR_CHARGE(st, TSR_RG_INPUT, tsr_cy_input(n, G, 0));
in_f32_words:
        for (uint32_t i0 = 0; i0 < npad; i0 += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN_WORDS
#pragma HLS PIPELINE II=1
in_f32_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                uint32_t i = i0 + l;
                if (i < npad) {
                    float v = i >= n ? 0.0f : w ? w[i] * (ss * x[i]) : x[i];
                    st->xn[i] = v;
in_f32_pes:
                    for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
                        if (p < P) st->xf[p][i] = v;
                    }
                }
            }
        }
        st->cnt.fabric_bcast_bytes += 4ull * P * npad;
        return;
    }
#endif
    /* Q8, pass A: normalise, TSR_LANES values a cycle; each TSR_VEC word's
     * max |v| */
    uint32_t nch = npad / TSR_LANES + (npad % TSR_LANES != 0u);
    TSR_CHARGE(st, TSR_RG_INPUT, tsr_cy_input(n, G, 1));
in_q8_norm:
    for (uint32_t ch = 0; ch < nch; ch++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_CHUNKS
#pragma HLS PIPELINE II=1
in_q8_norm_words:
        for (uint32_t h = 0; h < TSR_LANES / TSR_VEC; h++) {
#pragma HLS UNROLL
            float m = 0.0f;
in_q8_norm_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                uint32_t i = ch * TSR_LANES + h * TSR_VEC + l;
                float v = i >= n ? 0.0f : w ? w[i] * (ss * x[i]) : x[i];
                st->xn[i] = v;
                float a = fabsf(v);
                m = a > m ? a : m;
            }
            st->wmax[ch * (TSR_LANES / TSR_VEC) + h] = m;
        }
    }
    quantize_broadcast(st, npad);
}

void tsr_mesh_input_ready(tsr_kstate *st, uint32_t n)
{
    uint32_t G = st->cfg.group, npad = ((n + G - 1u) >> st->g_log2) << st->g_log2;
    TSR_CHARGE(st, TSR_RG_INPUT, tsr_cy_input_ready(n, G, st->cfg.dtype == TSR_KDT_Q8));
    st->wmax_fresh = 0;
#if TSR_WITH_F32
    if (st->cfg.dtype == TSR_KDT_F32) {
        uint32_t P = st->P;
in_ready_f32_words:
        for (uint32_t i0 = 0; i0 < npad; i0 += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_IN_WORDS
#pragma HLS PIPELINE II=1
in_ready_f32_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                uint32_t i = i0 + l;
                if (i < npad) {
                    float v = st->xn[i];
in_ready_f32_pes:
                    for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
                        if (p < P) st->xf[p][i] = v;
                    }
                }
            }
        }
        st->cnt.fabric_bcast_bytes += 4ull * P * npad;
        return;
    }
#endif
    quantize_broadcast(st, npad);
}

/* Q8 pass B over xn (npad,) and its word maxima: the group's scale, the
 * int8 values; every PE latches the chunk's word and the group's
 * scale(s). */
static void quantize_broadcast(tsr_kstate *st, uint32_t npad)
{
    uint32_t G = st->cfg.group, P = st->P;
    uint32_t nch = npad / TSR_LANES + (npad % TSR_LANES != 0u);
    uint32_t cpg = G < TSR_LANES ? 1u : G / TSR_LANES;
in_q8_quant:
    for (uint32_t ch = 0; ch < nch; ch++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_CHUNKS
#pragma HLS PIPELINE II=1
        int8_t qw[TSR_LANES];
        float sc[TSR_LANES];   /* each lane's group scale */
#pragma HLS ARRAY_PARTITION variable=qw type=complete
#pragma HLS ARRAY_PARTITION variable=sc type=complete
        if (G >= TSR_LANES) {
            /* max over the group's words (G / TSR_VEC <= TSR_WMAX_PORTS) */
            uint32_t first = (ch & ~(cpg - 1u)) * (TSR_LANES / TSR_VEC);
            float gm = 0.0f;
in_q8_group_max:
            for (uint32_t k = 0; k < TSR_WMAX_PORTS; k++) {
#pragma HLS UNROLL
                if (k < cpg * (TSR_LANES / TSR_VEC))
                    gm = st->wmax[first + k] > gm ? st->wmax[first + k] : gm;
            }
in_q8_scale_lanes:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                sc[l] = gm / 127.0f;
            }
        }
#if TSR_MIN_GROUP < TSR_LANES
        else {
            /* several groups a chunk: each lane's group max by a segmented tree */
            float sm[TSR_LANES];
#pragma HLS ARRAY_PARTITION variable=sm type=complete
in_q8_seg_abs:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                sm[l] = fabsf(st->xn[ch * TSR_LANES + l]);
            }
in_q8_seg_levels:
            for (uint32_t h = 1; h < TSR_LANES; h *= 2u) {
#pragma HLS UNROLL
in_q8_seg_pairs:
                for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                    /* lanes l and l ^ h share a group when h < G */
                    if (h < G && (l & h) == 0) {
                        float m2 = sm[l] > sm[l | h] ? sm[l] : sm[l | h];
                        sm[l] = m2;
                        sm[l | h] = m2;
                    }
                }
            }
in_q8_seg_scales:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                sc[l] = sm[l] / 127.0f;
            }
        }
#endif
in_q8_values:
        for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
            float v = st->xn[ch * TSR_LANES + l];
            qw[l] = sc[l] != 0.0f ? (int8_t)tsr_round_q8(v / sc[l]) : (int8_t)0;
        }
        /* the group(s) starting in this chunk: their scales */
in_q8_pes:
        for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
            if (p < P) {
in_q8_pe_lanes:
                for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                    st->xq[p][ch][l] = qw[l];
                }
                if (G >= TSR_LANES) {
                    if ((ch & (cpg - 1u)) == 0) st->xs[p][ch >> st->cpg_log2] = sc[0];
                }
#if TSR_MIN_GROUP < TSR_LANES
                else {
in_q8_pe_scales:
                    for (uint32_t l = 0; l < TSR_LANES; l += TSR_MIN_GROUP) {
#pragma HLS UNROLL
                        if ((l & (G - 1u)) == 0) st->xs[p][(ch * TSR_LANES + l) >> st->g_log2] = sc[l];
                    }
                }
#endif
            }
        }
    }
    st->cnt.fabric_bcast_bytes += (uint64_t)P * (npad + 4u * (npad >> st->g_log2));
}

#ifndef TSR_EMU
/* The QKV gather's word w (values v, RoPE applied) into the attention PEs'
 * latches: each PE its heads' query slices, and, on the PE that stores this
 * position, their k and v.  (The emulator copies the same values after the
 * gather, tsr_mesh_gather.) */
static void latch_qkv_word(tsr_kstate *st, uint32_t slot, uint32_t w, const float v[TSR_VEC])
{
#pragma HLS INLINE
    uint32_t dim = st->cfg.dim, kvd = st->kv_dim, hs = st->hs, qg = st->kv_mul * hs;
latch_pes:
    for (uint32_t p = 0; p < TSR_ATT_PES; p++) {
#pragma HLS UNROLL
        uint32_t nh = st->kv_nh[p];
        if (p < st->cfg.att_pes && nh != 0) {
            uint32_t h0 = st->kv_h0[p];
            int store = st->kv_q[p] == st->pos_q[slot];
            uint32_t q0 = h0 * qg, k0 = dim + h0 * hs, v0 = dim + kvd + h0 * hs;
latch_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                uint32_t i = w * TSR_VEC + l;
                if (i >= q0 && i < q0 + nh * qg) st->qh[p][i - q0] = v[l];
                if (store && i >= k0 && i < k0 + nh * hs) st->kin[p][i - k0] = v[l];
                if (store && i >= v0 && i < v0 + nh * hs) st->vin[p][i - v0] = v[l];
            }
        }
    }
}
#endif

void tsr_mesh_gather(tsr_kstate *st, uint32_t mat, float *y, uint32_t flags, uint32_t slot)
{
    uint32_t d, n, pair;
    tsr_lay_mat_shape(&st->cfg, mat, &d, &n, &pair);
    uint32_t add = flags & TSR_GATHER_ADD, input = flags & TSR_GATHER_INPUT;
    uint32_t qkv = flags & TSR_GATHER_QKV;
    /* the words: d's, or (into xn) up to the next GEMV's group padding */
    uint32_t nout = input ? ((d + st->cfg.group - 1u) >> st->g_log2) << st->g_log2 : d;
    uint32_t dw = (nout + TSR_VEC - 1u) / TSR_VEC, rope_n = qkv ? st->cfg.dim + st->kv_dim : 0u;
    uint32_t src = 0, start = 0, end = 0;   /* the root holding the current words */
    uint32_t k = 0;                         /* the next root, in row order */
#if TSR_SSQ_FUSED
    /* RMSNorm's partials of the new x: element i into partial i % S, as
     * tsr_reduce_sumsq; sb is the partial of the word's lane 0 */
    float ssq[TSR_SUM_LANES];
#pragma HLS ARRAY_PARTITION variable=ssq type=complete
    uint32_t sb = 0;
    TSR_CHARGE(st, TSR_RG_GATHER, qkv || add ? tsr_cy_gather_vec(d)
                                  : input ? tsr_cy_gather_input(nout) : tsr_cy_gather(d));
gather_ssq_zero:
    for (uint32_t k = 0; k < TSR_SUM_LANES; k++) {
#pragma HLS UNROLL
        ssq[k] = 0.0f;
    }
#else
    TSR_CHARGE(st, TSR_RG_GATHER, qkv ? tsr_cy_gather_vec(d)
                                  : input ? tsr_cy_gather_input(nout) : tsr_cy_gather(d));
#endif
gather_words:
    for (uint32_t w = 0; w < dw; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_OUT_WORDS
#pragma HLS PIPELINE II=1
#if TSR_SSQ_FUSED
#pragma HLS DEPENDENCE variable=ssq type=inter dependent=true distance=TSR_SSQ_DIST
#endif
        if (w >= end && w * TSR_VEC < d) {
            /* the next row block: the next root (a CONFIGURE table) */
            src = st->root_pe[mat][k];
            start = st->root_w0[mat][k];
            end = st->root_w1[mat][k];
            k++;
        }
        float v[TSR_VEC];
#pragma HLS ARRAY_PARTITION variable=v type=complete
gather_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            uint32_t i = w * TSR_VEC + l;
            v[l] = i < d ? st->psum[src][(w - start) * TSR_VEC + l] : 0.0f;
        }
        if (qkv) {
            /* RoPE as run.c: q[i], and k[i] for i < kv_dim, pairwise */
gather_rope_pairs:
            for (uint32_t k = 0; k < TSR_VEC / 2u; k++) {
#pragma HLS UNROLL
                uint32_t i = w * TSR_VEC + 2u * k;
                if (i < rope_n) {
                    uint32_t j = st->rope_pj[i / 2u];
                    float fcr = st->rope_cos[j], fci = st->rope_sin[j];
                    float v0 = v[2u * k], v1 = v[2u * k + 1u];
                    v[2u * k] = v0 * fcr - v1 * fci;
                    v[2u * k + 1u] = v0 * fci + v1 * fcr;
                }
            }
        }
        float m = 0.0f;
gather_out:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            uint32_t i = w * TSR_VEC + l;
            if (i < nout) {
                float o = add ? y[i] + v[l] : v[l];
                y[i] = o;
#if TSR_SSQ_FUSED
                if (add) ssq[sb + l] += o * o;
#endif
                float a = fabsf(o);
                m = a > m ? a : m;
            }
        }
        if (input) st->wmax[w] = m;
#if TSR_SSQ_FUSED
        sb = sb + TSR_VEC == TSR_SUM_LANES ? 0u : sb + TSR_VEC;
#endif
#ifndef TSR_EMU
        if (qkv) latch_qkv_word(st, slot, w, v);
#endif
    }
#if TSR_SSQ_FUSED
    if (add) {
gather_ssq_out:
        for (uint32_t k = 0; k < TSR_SUM_LANES; k++) {
#pragma HLS UNROLL
            st->ssq[k] = ssq[k];
        }
        st->ssq_fresh = 1;
    }
#endif
    st->wmax_fresh = input ? 1u : 0u;
#ifdef TSR_EMU
    if (qkv) tsr_att_latch_qkv(st, slot);
#else
    (void)slot;
#endif
    st->cnt.fabric_gather_bytes += 4ull * d;
}

int32_t tsr_mesh_best(tsr_kstate *st, uint32_t mat)
{
    /* the roots' bests, pairwise over the profile's PEs (log2 TSR_PES
     * levels): the larger value, or the same value at a lower row */
    float bv[TSR_PES];
    uint32_t bi[TSR_PES], ok[TSR_PES];
#pragma HLS ARRAY_PARTITION variable=bv type=complete
#pragma HLS ARRAY_PARTITION variable=bi type=complete
#pragma HLS ARRAY_PARTITION variable=ok type=complete
    TSR_CHARGE(st, TSR_RG_ARGMAX, tsr_cy_log2(TSR_PES) * TSR_D_CMP);
best_leaves:
    for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
        tsr_ktab t = st->tab[p][mat];
        ok[p] = p < st->P && (p & (t.cols - 1u)) == 0 && t.rows != 0;
        bv[p] = st->best_v[p];
        bi[p] = st->best_i[p];
    }
best_levels:
    for (uint32_t h = 1; h < TSR_PES; h *= 2u) {
#pragma HLS UNROLL
best_pairs:
        for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
            if ((p & (2u * h - 1u)) == 0 && p + h < TSR_PES && ok[p + h] &&
                (!ok[p] || bv[p + h] > bv[p] || (bv[p + h] == bv[p] && bi[p + h] < bi[p]))) {
                bv[p] = bv[p + h];
                bi[p] = bi[p + h];
                ok[p] = 1;
            }
        }
    }
    return (int32_t)bi[0];
}

void tsr_mesh_embed(tsr_kstate *st, uint32_t token, float *x)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t G = c->group, dim = c->dim, C = st->mat_cols[TSR_MAT_EMB], r0 = 0;
    int q8 = c->dtype == TSR_KDT_Q8;
    /* the mesh row whose row block holds `token` */
embed_find:
    for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
        tsr_ktab t = st->tab[p][TSR_MAT_EMB];
        if (p < st->P && (p & (C - 1u)) == 0 && token >= t.row0 && token < t.row0 + t.rows) r0 = p;
    }
    /* each column's PE streams its groups of the row, dequantized, onto
     * the bus: one TSR_LANES-chunk a cycle */
    uint32_t cpg = G < TSR_LANES ? 1u : G / TSR_LANES, chunk = G < TSR_LANES ? G : TSR_LANES;
embed_cols:
    for (uint32_t cc = 0; cc < C; cc++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_COLS
        uint32_t p = r0 + cc;
        tsr_ktab t = st->tab[p][TSR_MAT_EMB];
        uint32_t i = token - t.row0, nb = tsr_cdiv(t.rows, TSR_ROW_SLOTS);
        uint32_t b = i / TSR_ROW_SLOTS, j = i % TSR_ROW_SLOTS;
        uint32_t kb = b == nb - 1u ? t.rows - b * TSR_ROW_SLOTS : TSR_ROW_SLOTS;
        uint32_t e0 = b * TSR_ROW_SLOTS * t.ngroups + j;   /* entry of group 0 */
        TSR_CHARGE(st, TSR_RG_EMBED, tsr_cy_loop(t.ngroups * cpg, 1u, TSR_D_BUS));
embed_chunks:
        for (uint32_t k = 0; k < t.ngroups * cpg; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_CHUNKS
#pragma HLS PIPELINE II=1
            uint32_t g = k >> st->cpg_log2, part = k & (cpg - 1u);
            uint32_t e = e0 + g * kb;
            uint32_t col0 = (t.g0 + g) * G + part * TSR_LANES;
            uint32_t a0 = t.w_off + e * G + part * TSR_LANES;   /* the chunk's first byte */
#if TSR_MIN_GROUP >= TSR_LANES
            uint32_t off = 0;
#else
            uint32_t off = a0 % TSR_LANES;
#endif
embed_lanes:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                uint32_t col = col0 + l;
                if (l < chunk && col < dim) {
                    if (q8)
                        x[col] = (float)st->w8[p][a0 / TSR_LANES][off + l] * st->f32[p][t.f_off + e];
                    else   /* F32: values (block, column, row) */
                        x[col] = st->f32[p][t.f_off + b * TSR_ROW_SLOTS * t.ngroups * G +
                                            (col - t.g0 * G) * kb + j];
                }
            }
        }
    }
    st->cnt.fabric_gather_bytes += 4ull * dim;
}
