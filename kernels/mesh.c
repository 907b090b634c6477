/*
 * mesh.c - GEMV and embedding gathers on the PE mesh (after WaferLLM's
 * MeshGEMV): weights never move, activation vectors do.
 *
 *   controller x (n,) --normalise, quantize (Q8) / pad (F32)--> bus
 *        | broadcast: every PE latches each word into its own copy
 *        v
 *   PE (r, c): its tile, 32 int8 (Q8_0) or int4 x int8 (Q4_0) MACs a cycle,
 *        8 rows interleaved -> psum
 *        | column adder tree along mesh row r (log2 C_m levels, C_m > 1:
 *        | each matrix has its own column count, tsr_layout.h)
 *        | W13: SwiGLU on the PE (the root, after the tree)
 *        v
 *   root PE (r, 0) psum --bus--> controller y [row block r]   (gather)
 *                       or its best row --tree--> the greedy token
 *
 * Each PE task (gemv_pe, tree_pe, root_pe, best_pe) touches only its own PE's
 * memories, except a tree step reading its partner's partial sums, so the
 * PE instances run concurrently in hardware (TSR_RUN_PES) and on the
 * emulator's worker threads with the same result for any thread count.
 */
#include <math.h>

#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* One PE's tile                                                              */

/* Q8: rows x ng entries of the layout (tsr_layout.h), from byte wb of w8
 * and scale fs of ws, times the input groups [g0, g0 + ng) of nx items'
 * inputs (item x's in xq[x], xs[x]) -> psum[x][po + row].  Block b0
 * onwards (the emulator's SIMD rows did the first ones).  One
 * TSR_LANES-chunk of one entry for one item a cycle: the weight word is
 * read once and held while the nx items pass it (a prompt block's tokens,
 * or a batch's sequences), so the lanes stay full and a block reads its
 * tile once.  The chunk's int8 products are summed exactly in int32 (over
 * the entry's chunks when G > TSR_LANES), then times both scales and added
 * into that row's and item's fp32 accumulator, groups ascending: runq.c's
 * matmul order per row, for every item alike (an item's result does not
 * depend on the others).  Rows interleave, so an accumulator is added to
 * once every TSR_ROW_SLOTS x nx steps: the DEPENDENCE distance (at least
 * TSR_ROW_SLOTS) that lets the loop run at II=1.  The accumulators are one
 * LUTRAM memory (BIND_STORAGE, not partitioned: a read and a write a
 * cycle on its two ports), so the DEPENDENCE is a claim about a memory, as
 * UG1399 "pragma HLS dependence" defines it (distance: between accesses of
 * an array); partitioned into registers, the row picked at run time would
 * make the fadd a recurrence on registers, which no DEPENDENCE pragma
 * shortens.  TSR_ROW_SLOTS >= TSR_FADD_LAT (checked below) covers the
 * read, the fadd and the write. */
TSR_STATIC_CHECK(row_slots_cover_fadd, TSR_ROW_SLOTS >= TSR_FADD_LAT);
static void pe_tile_q8(const int8_t w8[TSR_PE_W8_WORDS][TSR_LANES], const float ws[TSR_PE_F32_WORDS],
                       const int8_t xq[TSR_MAX_BLOCK][TSR_PE_XQ_WORDS][TSR_LANES],
                       const float xs[TSR_MAX_BLOCK][TSR_PE_XS],
                       float psum[TSR_MAX_BLOCK][TSR_PE_ROWS], uint32_t wb, uint32_t fs,
                       uint32_t rows, uint32_t ng, uint32_t g0, uint32_t G, uint32_t x0,
                       uint32_t po, uint32_t b0, uint32_t steps1, uint32_t nx)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_RESHAPE variable=w8 type=complete dim=2
#pragma HLS ARRAY_RESHAPE variable=xq type=complete dim=3
#pragma HLS ARRAY_PARTITION variable=psum type=cyclic factor=TSR_VEC dim=2
    float acc[TSR_ROW_SLOTS][TSR_MAX_BLOCK];
    int32_t isum[TSR_MAX_BLOCK];
#pragma HLS BIND_STORAGE variable=acc type=ram_2p impl=lutram
    uint32_t nb = (rows + TSR_ROW_SLOTS - 1u) / TSR_ROW_SLOTS, tail = rows - (nb - 1u) * TSR_ROW_SLOTS;
    uint32_t chunk = G < TSR_LANES ? G : TSR_LANES;        /* lanes in use   */
    uint32_t cpg = G < TSR_LANES ? 1u : G / TSR_LANES;     /* chunks a group */
    /* steps1: one item's steps from block b0 (CONFIGURE's table, less the
     * emulator's blocks; b0 is 0 in hardware) */
    uint32_t steps = TSR_MUL_SMALL(steps1, nx, TSR_BLOCK_BITS);
    b0 = TSR_TILE_DONE(b0);
    uint32_t b = b0, g = 0, j = 0, c = 0, x = 0;
    uint32_t kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;     /* rows of block b */
    uint32_t wa = wb + b0 * TSR_ROW_SLOTS * ng * G;         /* weight byte     */
    uint32_t sa = fs + b0 * TSR_ROW_SLOTS * ng;             /* weight scale    */
    uint32_t xg = x0;                                       /* group's first input byte */
    (void)g0;
q8_steps:
    for (uint32_t s = 0; s < steps; s++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_TILE_STEPS
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
                /* an 8 x 8-bit product: LUTs, not a DSP (plan.c counts none).  A
                 * group smaller than the word sits at wo..wo+G-1 of it: lanes past
                 * G wrap around the word (a rotate, never past its end) and are
                 * masked below */
                uint32_t wl = (wo + l) & (TSR_LANES - 1u), xl = (xo + l) & (TSR_LANES - 1u);
                int32_t prod = (int32_t)w8[wa / TSR_LANES][wl] * (int32_t)xq[x][xa / TSR_LANES][xl];
#pragma HLS BIND_OP variable=prod op=mul impl=fabric
                if (l < chunk) d += prod;
            }
            int32_t is = c == 0 ? d : isum[x] + d;
            isum[x] = is;
            if (c + 1u == cpg) {
                float prev = g == 0 ? 0.0f : acc[j][x];
                float v = prev + (float)is * ws[sa] * xs[x][g0 + g];
                acc[j][x] = v;
                if (g + 1u == ng) psum[x][po + b * TSR_ROW_SLOTS + j] = v;
            }
        }
        /* next (item, chunk, row slot, group, block): the weight word moves
         * on once every item has passed it */
        if (++x == nx) {
            x = 0;
            if (j < kb) {
                if (c + 1u == cpg) sa++;
                wa += chunk;
            }
            if (++c == cpg) {
                c = 0;
                if (++j == TSR_ROW_SLOTS) {
                    j = 0;
                    if (++g == ng) {
                        g = 0;
                        b++;
                        kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;
                    }
                    xg = g == 0 ? x0 : xg + G;
                }
            }
        }
    }
}

#if TSR_WITH_Q4 || TSR_WITH_F32
/* Q4_0 / F32 tile loops' next (item, row slot, group or column, block):
 * the weight moves on (*k, its entry or value, on a row the block has: j
 * < kb) once every one of the nx items has passed it; ng groups or
 * columns a row, nb blocks, the last of tail rows. */
static void tile_next(uint32_t nx, uint32_t ng, uint32_t nb, uint32_t tail, uint32_t *x,
                      uint32_t *j, uint32_t *g, uint32_t *b, uint32_t *kb, uint32_t *k)
{
#pragma HLS INLINE
    if (++*x != nx) return;
    *x = 0;
    if (*j < *kb) ++*k;
    if (++*j != TSR_ROW_SLOTS) return;
    *j = 0;
    if (++*g != ng) return;
    *g = 0;
    ++*b;
    *kb = *b == nb - 1u ? tail : TSR_ROW_SLOTS;
}
#endif

#if TSR_WITH_Q4
/* Q4_0 (G = 32): rows x ng entries of the layout (tsr_layout.h, 16 bytes
 * each, two a word), from entry ea of w8 (word ea / 2, half ea % 2) and
 * scale fs of ws, times the input groups [g0, g0 + ng) of nx items'
 * inputs (item x's in xq[x], xs[x]; group g0 + g is word g0 + g of xq) ->
 * psum[x][po + row]; block b0 onwards, steps1 one item's steps from there
 * (CONFIGURE's table; b0 is 0 in hardware).  One entry for one item a
 * cycle, the weight word held while the nx items pass it (pe_tile_q8's
 * schedule at G = 32): lane l takes nibble l of the entry (the low
 * nibbles of its 16 bytes, then the high ones: GGUF's block order), value
 * nibble - 8, times input byte l; the 32 products summed exactly in int32,
 * then times both scales and added into the row's and item's fp32
 * accumulator, groups ascending: pe_tile_q8's order, so a Q4_0 tile and
 * the same values widened to Q8_0 give the same bits, for every item. */
static void pe_tile_q4(const int8_t w8[TSR_PE_W8_WORDS][TSR_LANES], const float ws[TSR_PE_F32_WORDS],
                       const int8_t xq[TSR_MAX_BLOCK][TSR_PE_XQ_WORDS][TSR_LANES],
                       const float xs[TSR_MAX_BLOCK][TSR_PE_XS],
                       float psum[TSR_MAX_BLOCK][TSR_PE_ROWS], uint32_t ea, uint32_t fs,
                       uint32_t rows, uint32_t ng, uint32_t g0, uint32_t po, uint32_t b0,
                       uint32_t steps1, uint32_t nx)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_RESHAPE variable=w8 type=complete dim=2
#pragma HLS ARRAY_RESHAPE variable=xq type=complete dim=3
#pragma HLS ARRAY_PARTITION variable=psum type=cyclic factor=TSR_VEC dim=2
    float acc[TSR_ROW_SLOTS][TSR_MAX_BLOCK];
#pragma HLS BIND_STORAGE variable=acc type=ram_2p impl=lutram
    uint32_t nb = (rows + TSR_ROW_SLOTS - 1u) / TSR_ROW_SLOTS, tail = rows - (nb - 1u) * TSR_ROW_SLOTS;
    uint32_t steps = TSR_MUL_SMALL(steps1, nx, TSR_BLOCK_BITS);
    b0 = TSR_TILE_DONE(b0);
    uint32_t b = b0, g = 0, j = 0, x = 0;
    uint32_t kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;     /* rows of block b */
    uint32_t k = b0 * TSR_ROW_SLOTS * ng;   /* the tile's entry: weights at ea + k, scale fs + k */
q4_steps:
    for (uint32_t s = 0; s < steps; s++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_TILE_STEPS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter dependent=true distance=TSR_ROW_SLOTS
        if (j < kb) {
            uint32_t e = ea + k, wa = e >> 1, half = (e & 1u) * TSR_Q4_ENTRY_BYTES;
            int32_t d = 0;
q4_lanes:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                uint32_t byte = (uint32_t)(uint8_t)w8[wa][half + (l & (TSR_Q4_ENTRY_BYTES - 1u))];
                int32_t q = (int32_t)((l < TSR_Q4_ENTRY_BYTES ? byte : byte >> 4) & 15u) - 8;
                /* a 4 x 8-bit product: LUTs, not a DSP */
                int32_t prod = q * (int32_t)xq[x][g0 + g][l];
#pragma HLS BIND_OP variable=prod op=mul impl=fabric
                d += prod;
            }
            float prev = g == 0 ? 0.0f : acc[j][x];
            float v = prev + (float)d * ws[fs + k] * xs[x][g0 + g];
            acc[j][x] = v;
            if (g + 1u == ng) psum[x][po + b * TSR_ROW_SLOTS + j] = v;
        }
        tile_next(nx, ng, nb, tail, &x, &j, &g, &b, &kb, &k);
    }
}
#endif

#if TSR_WITH_F32
/* F32: rows x (ng * G) values of the layout from word fo of wf, times nx
 * items' inputs (item x's columns [x0, ...) of xf[x]) -> psum[x][po +
 * row], one column of one row for one item a cycle (the weight read once
 * for the nx items), columns ascending: run.c's matmul order per row. */
static void pe_tile_f32(const float wf[TSR_PE_F32_WORDS], const float xf[TSR_MAX_BLOCK][TSR_PE_XF],
                        float psum[TSR_MAX_BLOCK][TSR_PE_ROWS], uint32_t fo, uint32_t rows,
                        uint32_t cols, uint32_t x0, uint32_t po, uint32_t b0, uint32_t steps1,
                        uint32_t nx)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_PARTITION variable=xf type=cyclic factor=TSR_VEC dim=2
#pragma HLS ARRAY_PARTITION variable=psum type=cyclic factor=TSR_VEC dim=2
    float acc[TSR_ROW_SLOTS][TSR_MAX_BLOCK];
#pragma HLS BIND_STORAGE variable=acc type=ram_2p impl=lutram
    uint32_t nb = (rows + TSR_ROW_SLOTS - 1u) / TSR_ROW_SLOTS, tail = rows - (nb - 1u) * TSR_ROW_SLOTS;
    uint32_t steps = TSR_MUL_SMALL(steps1, nx, TSR_BLOCK_BITS);
    b0 = TSR_TILE_DONE(b0);
    uint32_t b = b0, col = 0, j = 0, x = 0, kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;
    uint32_t fa = fo + b0 * TSR_ROW_SLOTS * cols;
f32_steps:
    for (uint32_t s = 0; s < steps; s++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_F32_WORDS
#pragma HLS PIPELINE II=1
#pragma HLS DEPENDENCE variable=acc type=inter dependent=true distance=TSR_ROW_SLOTS
        if (j < kb) {
            float prev = col == 0 ? 0.0f : acc[j][x];
            float v = prev + wf[fa] * xf[x][x0 + col];
            acc[j][x] = v;
            if (col + 1u == cols) psum[x][po + b * TSR_ROW_SLOTS + j] = v;
        }
        tile_next(nx, cols, nb, tail, &x, &j, &col, &b, &kb, &fa);
    }
}
#endif

/* SwiGLU on a W13 tile's partial sums: psum[i] = silu(w1 row) * w3 row,
 * rows (i < rows) and their w3 halves at rows + i; a row every
 * TSR_SWIGLU_II cycles (three accesses to 2-port banks).  The
 * halves are disjoint, so the loop carries no dependence through psum. */
static void pe_swiglu(float psum[TSR_PE_ROWS], uint32_t rows)
{
#pragma HLS INLINE
    if (TSR_FAST_SWIGLU(psum, rows)) return;
pe_swiglu_rows:
    for (uint32_t i = 0; i < rows; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_ROWS
#pragma HLS PIPELINE II=TSR_SWIGLU_II
#pragma HLS DEPENDENCE variable=psum type=inter dependent=false
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
#pragma HLS INLINE
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
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_ROWS
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
/* PE steps: one non-inlined function per kind of mesh step                   */
/*
 * Each holds every loop of its step and tests `active` first; the PE
 * tasks below make exactly one unconditional call to one of them, so the
 * unrolled PE loop (TSR_RUN_PES) places one instance per PE, all starting
 * together (tsr_hls.h).
 */

/* A GEMV step: PE p's tile of the matrix for nx items (halves 2: W13's
 * two halves, one after the other; half h's entries start h * ent in,
 * ent = rows x ng from CONFIGURE, steps its pipeline steps for one item),
 * or zeros when the tile has rows but no groups (a mesh column past the
 * matrix's groups: the column tree still adds it).  Offsets by shifts
 * (G = 2^g_log2).  done0, done1: row blocks of each half a platform's
 * fast path did already (TSR_FAST_GEMV_TILE; the literal 0 in hardware,
 * TSR_TILE_DONE). */
static void pe_gemv(const int8_t w8[TSR_PE_W8_WORDS][TSR_LANES], const float f32[TSR_PE_F32_WORDS],
                    const int8_t xq[TSR_MAX_BLOCK][TSR_PE_XQ_WORDS][TSR_LANES],
                    const float xs[TSR_MAX_BLOCK][TSR_PE_XS], const float xf[TSR_MAX_BLOCK][TSR_PE_XF],
                    float psum[TSR_MAX_BLOCK][TSR_PE_ROWS], uint32_t w_off, uint32_t f_off,
                    uint32_t rows, uint32_t ng, uint32_t g0, uint32_t G, uint32_t g_log2,
                    uint32_t ent, uint32_t steps, uint32_t halves, uint32_t nx, uint32_t q8,
                    uint32_t q4, uint32_t done0, uint32_t done1, uint32_t active)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_RESHAPE variable=w8 type=complete dim=2
#pragma HLS ARRAY_RESHAPE variable=xq type=complete dim=3
#if TSR_WITH_F32
#pragma HLS ARRAY_PARTITION variable=xf type=cyclic factor=TSR_VEC dim=2
#endif
#pragma HLS ARRAY_PARTITION variable=psum type=cyclic factor=TSR_VEC dim=2
    if (!active) return;
    if (ng == 0) {
        uint32_t n = rows << (halves - 1u);
pe_zero_items:
        for (uint32_t x = 0; x < nx; x++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
pe_zero:
            for (uint32_t i = 0; i < n; i += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_ROWS
#pragma HLS PIPELINE II=1
pe_zero_lanes:
                for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                    if (i + l < n) psum[x][i + l] = 0.0f;
                }
            }
        }
        return;
    }
    (void)xf;
    (void)q8;
    (void)q4;
    (void)done0;
    (void)done1;
gemv_halves:
    for (uint32_t h = 0; h < halves; h++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=2
        uint32_t po = h ? rows : 0u, e0 = h ? ent : 0u, b0 = TSR_TILE_DONE(h ? done1 : done0);
        /* one item's steps from block b0 (the emulator's: fewer; b0 is 0
         * in hardware) */
        uint32_t s1 = b0 ? steps - b0 * (steps / ((rows + TSR_ROW_SLOTS - 1u) / TSR_ROW_SLOTS))
                         : steps;
#if TSR_WITH_Q4
        if (q4) {   /* Q4_0 entries: 16 bytes, two a word (w_off is a whole word) */
            pe_tile_q4(w8, f32, xq, xs, psum, (w_off >> TSR_Q4_ENTRY_LOG2) + e0, f_off + e0, rows,
                       ng, g0, po, b0, s1, nx);
            continue;
        }
#endif
#if TSR_WITH_F32
        if (q8)
            pe_tile_q8(w8, f32, xq, xs, psum, w_off + (e0 << g_log2), f_off + e0, rows, ng, g0, G,
                       g0 << g_log2, po, b0, s1, nx);
        else
            pe_tile_f32(f32, xf, psum, f_off + (e0 << g_log2), rows, ng << g_log2, g0 << g_log2,
                        po, b0, s1, nx);
#else
        pe_tile_q8(w8, f32, xq, xs, psum, w_off + (e0 << g_log2), f_off + e0, rows, ng, g0, G,
                   g0 << g_log2, po, b0, s1, nx);
#endif
    }
}

/* A column-tree step: psum += from (the partner's partial sums), rows of
 * them for each of nx items, a TSR_VEC word every TSR_TREE_II cycles on
 * TSR_TREE_LANES adders, so every lane is a constant bank of both. */
static void pe_tree_add(float psum[TSR_MAX_BLOCK][TSR_PE_ROWS],
                        const float from[TSR_MAX_BLOCK][TSR_PE_ROWS], uint32_t rows, uint32_t nx,
                        uint32_t active)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_PARTITION variable=psum type=cyclic factor=TSR_VEC dim=2
#pragma HLS ARRAY_PARTITION variable=from type=cyclic factor=TSR_VEC dim=2
#pragma HLS ALLOCATION operation instances=fadd limit=TSR_TREE_LANES
    if (!active) return;
tree_items:
    for (uint32_t x = 0; x < nx; x++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
tree_words:
        for (uint32_t i = 0; i < rows; i += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_PE_ROWS
#pragma HLS PIPELINE II=TSR_TREE_II
tree_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                if (i + l < rows) psum[x][i + l] += from[x][i + l];
            }
        }
    }
}

/* A W13 mesh row's root after the tree, for each of nx items: SwiGLU of
 * its rows.  (Its own function, apart from pe_root_best: a PE that can
 * be a classifier's root but not W13's gets no expf or divide.) */
static void pe_root(float psum[TSR_MAX_BLOCK][TSR_PE_ROWS], uint32_t rows, uint32_t nx,
                    uint32_t active)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_PARTITION variable=psum type=cyclic factor=TSR_VEC dim=2
    if (!active) return;
root_items:
    for (uint32_t x = 0; x < nx; x++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
        pe_swiglu(psum[x], rows);
    }
}

/* A classifier mesh row's root after the tree, for each of nx items: its
 * best row (greedy) into bv[x], bi[x]. */
static void pe_root_best(float psum[TSR_MAX_BLOCK][TSR_PE_ROWS], uint32_t rows, uint32_t row0,
                         uint32_t nx, float bv[TSR_MAX_BLOCK], uint32_t bi[TSR_MAX_BLOCK],
                         uint32_t active)
{
#pragma HLS INLINE off
#pragma HLS ARRAY_PARTITION variable=psum type=cyclic factor=TSR_VEC dim=2
    if (!active) return;
root_best_items:
    for (uint32_t x = 0; x < nx; x++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
        pe_best(psum[x], rows, row0, &bv[x], &bi[x]);
    }
}

/* ------------------------------------------------------------------------ */
/* PE tasks (TSR_RUN_PES): PE p's share of a mesh step                        */

/* GEMV of job->mat (TSR_JOB_PAIR: W13's two halves). */
static uint32_t gemv_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t active,
                        uint32_t k)
{
#pragma HLS INLINE
    tsr_ktab t = tsr_ktab_of(st, p, job->mat);
    (void)k;
    uint32_t halves = job->flags & TSR_JOB_PAIR ? 2u : 1u, run = active && t.rows != 0;
    uint32_t G = st->cfg.group, q8 = st->cfg.dtype == TSR_KDT_Q8, q4 = st->mat_q4[job->mat];
    uint32_t done[2] = { 0, 0 };
    /* a platform's fast path may do the tile's first row blocks */
    TSR_FAST_GEMV_TILE(st, p, job, run, done);
    /* the broadcast input's copy it reads: its own, latched off the bus */
    uint32_t xb = TSR_BCAST_SRC(p);
    pe_gemv(st->w8[p], st->f32[p], st->xq[xb], st->xs[xb], st->xf[xb], st->psum[p], t.w_off,
            t.f_off, t.rows, t.ngroups, t.g0, G, st->g_log2, st->tab_ent[p][job->mat],
            st->tab_steps[p][job->mat], halves, job->nx, q8, q4, done[0], done[1], run);
    if (!run) return 0;
    return t.ngroups == 0
               ? TSR_CY(job->nx * tsr_cy_zero(halves * t.rows))
               : TSR_CY(halves * tsr_cy_tile(job->nx * tsr_lay_tile_steps(&st->cfg, t.rows, t.ngroups)));
}

/* The PEs that may receive at column-tree level s: a compile-time test
 * of the unrolled p.  At run time PE (r, c) with c % 2s == 0 and c + s <
 * C_m adds PE (r, c + s)'s partial sums into its own; since p = r C_m + c,
 * p % 2s equals c % 2s whenever C_m >= 2s, and no PE receives when C_m <
 * 2s, so every run-time receiver is among these. */
#define TSR_TREE_RECV(p, s) (((p) & (2u * (s) - 1u)) == 0 && (p) + (s) < TSR_PES)

/* Column-tree level of stride s (the level loop's literal 2^level). */
static uint32_t tree_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t active,
                        uint32_t s)
{
#pragma HLS INLINE
    tsr_ktab t = tsr_ktab_of(st, p, job->mat);
    uint32_t c = p & (t.cols - 1u);
    uint32_t rows = (job->flags & TSR_JOB_PAIR ? 2u : 1u) * t.rows;
    uint32_t run = active && (c & (2u * s - 1u)) == 0 && c + s < t.cols && rows != 0;
    /* the partner: a constant index wherever TSR_TREE_RECV placed the call
     * (p and s both literals there) */
    pe_tree_add(st->psum[p], st->psum[p + s < TSR_PES ? p + s : p], rows, job->nx, run);
    return run ? TSR_CY(job->nx * tsr_cy_tree_level(rows)) : 0u;
}

/* The PEs that may be a mesh row's root of W13 (SwiGLU) or of the
 * classifier (its best row): a compile-time test of the unrolled p, as
 * TSR_TREE_RECV.  At run time row r's root is PE r C_m; CONFIGURE refuses
 * a C_m that is not a multiple of the profile's TSR_W13_COLS /
 * TSR_CLS_COLS (tsr_kernel.c shape_unbuilt), so every run-time root is
 * among these. */
#define TSR_SWIGLU_ROOT(p, k) (((p) & (TSR_W13_COLS - 1u)) == 0)
#define TSR_BEST_ROOT(p, k)   (((p) & (TSR_CLS_COLS - 1u)) == 0)

/* Each W13 mesh row's root: SwiGLU. */
static uint32_t root_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t active,
                        uint32_t k)
{
#pragma HLS INLINE
    tsr_ktab t = tsr_ktab_of(st, p, job->mat);
    (void)k;
    uint32_t run = active && (p & (t.cols - 1u)) == 0 && t.rows != 0;
    pe_root(st->psum[p], t.rows, job->nx, run);
    return run ? TSR_CY(job->nx * tsr_cy_swiglu(t.rows)) : 0u;
}

/* Each classifier mesh row's root: its best row (greedy). */
static uint32_t best_pe(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t active,
                        uint32_t k)
{
#pragma HLS INLINE
    tsr_ktab t = tsr_ktab_of(st, p, job->mat);
    (void)k;
    uint32_t run = active && (p & (t.cols - 1u)) == 0 && t.rows != 0;
    pe_root_best(st->psum[p], t.rows, t.row0, job->nx, st->best_v[p], st->best_i[p], run);
    return run ? TSR_CY(job->nx * tsr_cy_best(t.rows)) : 0u;
}

/* ------------------------------------------------------------------------ */
/* Mesh operations                                                            */

void tsr_mesh_gemv(tsr_kstate *st, uint32_t mat, uint32_t nx, uint32_t flags)
{
#pragma HLS INLINE
    uint32_t d = st->mat_d[mat], n = st->mat_n[mat], pair = st->mat_pair[mat], worst;
    uint32_t C = st->mat_cols[mat];
    uint32_t npad = ((n + st->cfg.group - 1u) >> st->g_log2) << st->g_log2, halves = pair ? 2u : 1u;
    tsr_pe_job job = { .mat = mat, .flags = pair ? TSR_JOB_PAIR : 0u, .nx = nx,
                       .work = halves * d * npad * nx };
    TSR_PLATFORM_GEMV_JOB(&job, nx);

    TSR_RUN_PES(worst, st, gemv_pe, &job);
    TSR_CHARGE(st, TSR_RG_GEMV, worst);
gemv_tree_levels:
    for (uint32_t lvl = 0; lvl < TSR_MAX_TREE_LEVELS; lvl++) {
#pragma HLS UNROLL
        const uint32_t s = 1u << lvl;
        if (s < C) {
            job.work = halves * d * C * nx;
            TSR_RUN_PES_WHERE(worst, st, tree_pe, &job, TSR_PES, st->P, TSR_TREE_RECV, s);
            TSR_CHARGE(st, TSR_RG_TREE, worst);
        }
    }
    if (C > 1u) TSR_COUNT(st, fabric_reduce_bytes, 4ull * halves * d * (C - 1u) * nx);
    if (pair || (flags & TSR_JOB_ARGMAX)) {
        job.flags = pair ? TSR_JOB_PAIR | TSR_JOB_SWIGLU : TSR_JOB_ARGMAX;
        /* (the emulator's share-out measure, in multiply-adds: a SwiGLU
         * row's expf and divide weigh about 32) */
        job.work = (pair ? 32u : 1u) * d * nx;
        if (pair) {
            TSR_RUN_PES_WHERE(worst, st, root_pe, &job, TSR_PES, st->P, TSR_SWIGLU_ROOT, 0u);
        } else {
            TSR_RUN_PES_WHERE(worst, st, best_pe, &job, TSR_PES, st->P, TSR_BEST_ROOT, 0u);
        }
        TSR_CHARGE(st, pair ? TSR_RG_GEMV : TSR_RG_ARGMAX, worst);
    }
    TSR_COUNT(st, macs, (uint64_t)halves * d * npad * nx);
}

static void quantize_broadcast(tsr_kstate *st, uint32_t it, uint32_t npad);

void tsr_mesh_input(tsr_kstate *st, uint32_t it, uint32_t n, uint32_t row, float ss,
                    uint32_t ready)
{
#pragma HLS INLINE
    uint32_t G = st->cfg.group, npad = ((n + G - 1u) >> st->g_log2) << st->g_log2;
    uint32_t q8 = st->cfg.dtype == TSR_KDT_Q8;
    TSR_CHARGE(st, TSR_RG_INPUT, (ready ? tsr_cy_input_ready(n, G, q8) : tsr_cy_input(n, G, q8)) +
                                     (q8 ? TSR_CY_SLR.bcast : 0u));
#if TSR_WITH_F32
    if (!q8) {
        uint32_t P = st->P;
        /* normalise (unless a gather or attention wrote xn) and zero-pad,
         * TSR_VEC values a cycle onto the bus; every PE latches each word */
in_f32_words:
        for (uint32_t i0 = 0; i0 < npad; i0 += TSR_VEC) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_IN_WORDS
#pragma HLS PIPELINE II=1
in_f32_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                uint32_t i = i0 + l;
                if (i < npad) {
                    float v = ready ? st->cv[it][TSR_CV_XN + i]
                            : i >= n ? 0.0f : st->rms[row][i] * (ss * st->cv[it][TSR_CV_X + i]);
                    if (!ready) st->cv[it][TSR_CV_XN + i] = v;
in_f32_pes:
                    for (uint32_t p = 0; p < TSR_BCAST_PES; p++) {
#pragma HLS UNROLL
                        if (p < P) st->xf[p][it][i] = v;
                    }
                }
            }
        }
        TSR_COUNT(st, fabric_bcast_bytes, 4ull * P * npad);
        return;
    }
#endif
    if (!ready && !TSR_FAST_NORM(st, it, n, npad, row, ss)) {
        /* Q8, pass A: normalise, TSR_LANES values a cycle; each TSR_VEC
         * word's max |v| */
        uint32_t nch = npad / TSR_LANES + (npad % TSR_LANES != 0u);
in_q8_norm:
        for (uint32_t ch = 0; ch < nch; ch++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_CHUNKS
#pragma HLS PIPELINE II=TSR_NORM_II
in_q8_norm_words:
            for (uint32_t h = 0; h < TSR_LANES / TSR_VEC; h++) {
#pragma HLS UNROLL
                float m = 0.0f;
in_q8_norm_lanes:
                for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                    uint32_t i = ch * TSR_LANES + h * TSR_VEC + l;
                    float v = i >= n ? 0.0f : st->rms[row][i] * (ss * st->cv[it][TSR_CV_X + i]);
                    st->cv[it][TSR_CV_XN + i] = v;
                    float a = fabsf(v);
                    m = a > m ? a : m;
                }
                st->wmax[it][ch * (TSR_LANES / TSR_VEC) + h] = m;
            }
        }
    }
    /* Q8, pass B: quantize and broadcast (one call site: one quantizer) */
    quantize_broadcast(st, it, npad);
}

/* Q8 pass B over xn (npad,) and its word maxima: the group's scale, the
 * int8 values; every PE latches the chunk's word and the group's
 * scale(s). */
/* The quantized chunk ch (qw, its lanes' scales sc, cpg chunks a group)
 * into the P PEs' broadcast copies (quantize_broadcast). */
#if TSR_SLRS > 1
/* The broadcast's delay line, emptied. */
static void bcast_slr_clear(int8_t dq[TSR_SLR_DELAY][TSR_LANES], float ds[TSR_SLR_DELAY],
                            uint32_t dch[TSR_SLR_DELAY], uint32_t dok[TSR_SLR_DELAY])
{
#pragma HLS INLINE
in_q8_slr_clear:
    for (uint32_t r = 0; r < TSR_SLR_DELAY; r++) {
#pragma HLS UNROLL
        dok[r] = 0;
        dch[r] = 0;
        ds[r] = 0.0f;
in_q8_slr_clear_lanes:
        for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
            dq[r][l] = 0;
        }
    }
}

/* Over SLRs: SLR 0's PEs take this chunk (live: a chunk at all), SLR s's
 * the one s crossings down the line, which then moves one stage on. */
static void bcast_slr_pes(tsr_kstate *st, uint32_t it, uint32_t P, uint32_t cpg, uint32_t ch,
                          uint32_t live, const int8_t qw[TSR_LANES], const float sc[TSR_LANES],
                          int8_t dq[TSR_SLR_DELAY][TSR_LANES], float ds[TSR_SLR_DELAY],
                          uint32_t dch[TSR_SLR_DELAY], uint32_t dok[TSR_SLR_DELAY])
{
#pragma HLS INLINE
    /* (groups of whole words: one scale a chunk, tsr_profile.h) */
in_q8_slr_pes:
    for (uint32_t p = 0; p < TSR_BCAST_PES; p++) {
#pragma HLS UNROLL
        /* SLR s's PEs: this chunk's word (SLR 0), or the one s
         * crossings down the line */
        const uint32_t s = TSR_SLR_OF(p), k = s ? s * TSR_D_SLR - 1u : 0u;
        uint32_t ok = s ? dok[k] : live, c = s ? dch[k] : ch;
        if (p < P && ok) {
in_q8_slr_pe_lanes:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                st->xq[p][it][c][l] = s ? dq[k][l] : qw[l];
            }
            if ((c & (cpg - 1u)) == 0) st->xs[p][it][c >> st->cpg_log2] = s ? ds[k] : sc[0];
        }
    }
    /* every register of the line one stage on */
in_q8_slr_shift:
    for (uint32_t r = TSR_SLR_DELAY - 1u; r > 0u; r--) {
#pragma HLS UNROLL
in_q8_slr_shift_lanes:
        for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
            dq[r][l] = dq[r - 1u][l];
        }
        ds[r] = ds[r - 1u];
        dch[r] = dch[r - 1u];
        dok[r] = dok[r - 1u];
    }
in_q8_slr_head:
    for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
        dq[0][l] = qw[l];
    }
    ds[0] = sc[0];
    dch[0] = ch;
    dok[0] = live;
}
#else
static void bcast_pes(tsr_kstate *st, uint32_t it, uint32_t P, uint32_t G, uint32_t cpg,
                      uint32_t ch, const int8_t qw[TSR_LANES], const float sc[TSR_LANES])
{
#pragma HLS INLINE
in_q8_pes:
    for (uint32_t p = 0; p < TSR_BCAST_PES; p++) {
#pragma HLS UNROLL
        if (p < P) {
in_q8_pe_lanes:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                st->xq[p][it][ch][l] = qw[l];
            }
            if (G >= TSR_LANES) {
                if ((ch & (cpg - 1u)) == 0) st->xs[p][it][ch >> st->cpg_log2] = sc[0];
            }
#if TSR_MIN_GROUP < TSR_LANES
            else {
in_q8_pe_scales:
                for (uint32_t l = 0; l < TSR_LANES; l += TSR_MIN_GROUP) {
#pragma HLS UNROLL
                    if ((l & (G - 1u)) == 0) st->xs[p][it][(ch * TSR_LANES + l) >> st->g_log2] = sc[l];
                }
            }
#endif
        }
    }
}
#endif

static void quantize_broadcast(tsr_kstate *st, uint32_t it, uint32_t npad)
{
#pragma HLS INLINE
    uint32_t G = st->cfg.group, P = st->P;
    if (TSR_FAST_QUANTIZE(st, it, npad)) return;
    uint32_t nch = npad / TSR_LANES + (npad % TSR_LANES != 0u);
    uint32_t cpg = G < TSR_LANES ? 1u : G / TSR_LANES;
#if TSR_SLRS > 1
    /* Over SLRs: the chunk's word and scale pass TSR_D_SLR registers a
     * crossing (tsr_arch.h), a delay line shifted once an iteration, so SLR
     * s's PEs latch chunk ch at iteration ch + s TSR_D_SLR and the loop runs
     * TSR_SLR_DELAY iterations more (tsr_cy_slr_of: bcast) */
    int8_t dq[TSR_SLR_DELAY][TSR_LANES];
    float ds[TSR_SLR_DELAY];
    uint32_t dch[TSR_SLR_DELAY], dok[TSR_SLR_DELAY];
#pragma HLS ARRAY_PARTITION variable=dq type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=ds type=complete
#pragma HLS ARRAY_PARTITION variable=dch type=complete
#pragma HLS ARRAY_PARTITION variable=dok type=complete
    bcast_slr_clear(dq, ds, dch, dok);
    uint32_t trip = nch + TSR_SLR_DELAY;
#else
    uint32_t trip = nch;
#endif
in_q8_quant:
    for (uint32_t ci = 0; ci < trip; ci++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_CHUNKS
#pragma HLS PIPELINE II=1
        /* the chunk quantized this iteration (past nch: the delay line's
         * drain, nothing new) */
        uint32_t live = ci < nch, ch = live ? ci : 0u;
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
                    gm = st->wmax[it][first + k] > gm ? st->wmax[it][first + k] : gm;
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
                sm[l] = fabsf(st->cv[it][TSR_CV_XN + ch * TSR_LANES + l]);
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
            float v = st->cv[it][TSR_CV_XN + ch * TSR_LANES + l];
            qw[l] = sc[l] != 0.0f ? (int8_t)tsr_round_q8(v / sc[l]) : (int8_t)0;
        }
        /* the group(s) starting in this chunk: their scales */
#if TSR_SLRS > 1
        bcast_slr_pes(st, it, P, cpg, ch, live, qw, sc, dq, ds, dch, dok);
#else
        (void)live;
        bcast_pes(st, it, P, G, cpg, ch, qw, sc);
#endif
    }
    TSR_COUNT(st, fabric_bcast_bytes, (uint64_t)P * (npad + 4u * (npad >> st->g_log2)));
}

/* Word w of item it's gather, d rows, v its TSR_VEC values off the roots:
 * the QKV biases of layer lay (bias) and RoPE below element rope_n (qkv)
 * applied. */
static void gather_word_post(const tsr_kstate *st, uint32_t it, uint32_t w, uint32_t d,
                             uint32_t bias, uint32_t lay, uint32_t qkv, uint32_t rope_n,
                             float v[TSR_VEC])
{
#pragma HLS INLINE
    if (bias) {
        /* the row's bias, before RoPE (a bank a lane, as cv) */
gather_bias:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            uint32_t i = w * TSR_VEC + l;
            if (i < d) v[l] = v[l] + st->qkvb[lay][i];
        }
    }
    if (qkv) {
        /* RoPE as run.c: q[i], and k[i] for i < kv_dim, pairwise */
gather_rope_pairs:
        for (uint32_t k = 0; k < TSR_VEC / 2u; k++) {
#pragma HLS UNROLL
            uint32_t i = w * TSR_VEC + 2u * k;
            if (i < rope_n) {
                uint32_t j = st->rope_pj[i / 2u];
                float fcr = st->rope_cos[it][j], fci = st->rope_sin[it][j];
                float v0 = v[2u * k], v1 = v[2u * k + 1u];
                v[2u * k] = v0 * fcr - v1 * fci;
                v[2u * k + 1u] = v0 * fci + v1 * fcr;
            }
        }
    }
}

#if TSR_SLRS == 1
/* Word w of item it's gather, d rows: its TSR_VEC values from root src's
 * partial sums (its rows from word start), with the QKV biases of layer
 * lay (bias) and RoPE below element rope_n (qkv) applied, into v (over
 * SLRs the gather's own per-SLR muxes read them, tsr_mesh_gather). */
static void gather_word_in(const tsr_kstate *st, uint32_t it, uint32_t w, uint32_t d,
                           uint32_t src, uint32_t start, uint32_t bias, uint32_t lay, uint32_t qkv,
                           uint32_t rope_n, float v[TSR_VEC])
{
#pragma HLS INLINE
gather_lanes:
    for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
        uint32_t i = w * TSR_VEC + l;
        v[l] = i < d ? st->psum[src][it][(w - start) * TSR_VEC + l] : 0.0f;
    }
    gather_word_post(st, it, w, d, bias, lay, qkv, rope_n, v);
}
#endif

#if TSR_SLRS == 1
/* Word w of q | k | v (v) into every attention PE's copy: constant lanes,
 * one write a bank (attention.c reads its slices); over SLRs, the gather's
 * own latch line (tsr_mesh_gather). */
static void gather_latch(tsr_kstate *st, uint32_t w, const float v[TSR_VEC])
{
#pragma HLS INLINE
latch_pes:
    for (uint32_t p = 0; p < TSR_ATT_PES; p++) {
#pragma HLS UNROLL
latch_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            st->qkvw[p][w][l] = v[l];
        }
    }
}
#endif

/* The gather's rows of RMSNorm partials it keeps (TSR_SSQ_FUSED: the
 * rotating chain; else one row, unused). */
#if TSR_SSQ_FUSED
#define TSR_GATHER_SSQ_ROWS TSR_SSQ_DIST
#else
#define TSR_GATHER_SSQ_ROWS 1
#endif

/* Word w of a gather's output v: lane l into word yw + w of the item's
 * vectors (bank l), or of its logits (lg), added to what is there (add);
 * the word's max |.| for the quantizer (input); and (TSR_SSQ_FUSED) its
 * squares into the chain's head row, the chain rotated one on (see
 * tsr_mesh_gather).  The one output path of both word loops. */
static void gather_word_out(tsr_kstate *st, uint32_t it, uint32_t w, uint32_t yw, uint32_t nout,
                            uint32_t add, uint32_t lg, uint32_t input, const float v[TSR_VEC],
                            float ssq[TSR_GATHER_SSQ_ROWS][TSR_VEC])
{
#pragma HLS INLINE
    float m = 0.0f;
#if TSR_SSQ_FUSED
    float sq[TSR_VEC];   /* the head row, plus this word's squares */
#pragma HLS ARRAY_PARTITION variable=sq type=complete
gather_ssq_head:
    for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
        sq[l] = ssq[0][l];
    }
#else
    (void)ssq;
#endif
gather_out:
    for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
        uint32_t i = w * TSR_VEC + l;
        if (i < nout) {
            float o = add ? st->cv[it][(yw + w) * TSR_VEC + l] + v[l] : v[l];
            if (lg) st->logits[it][w * TSR_VEC + l] = o;
            else st->cv[it][(yw + w) * TSR_VEC + l] = o;
#if TSR_SSQ_FUSED
            if (add) sq[l] = sq[l] + o * o;
#endif
            float a = fabsf(o);
            m = a > m ? a : m;
        }
    }
    if (input) st->wmax[it][w] = m;
#if TSR_SSQ_FUSED
gather_ssq_rotate:
    for (uint32_t r = 0; r < TSR_SSQ_DIST - 1u; r++) {
#pragma HLS UNROLL
gather_ssq_rotate_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            ssq[r][l] = ssq[r + 1u][l];
        }
    }
gather_ssq_tail:
    for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
        ssq[TSR_SSQ_DIST - 1u][l] = sq[l];
    }
#endif
}

/* A gather's fields, for its word loop (tsr_mesh_gather). */
typedef struct gather_job {
    uint32_t mat, it, yw;        /* the matrix, the item, the output word   */
    uint32_t d, nout, dw;        /* its rows; the words out, and in words   */
    uint32_t bias, lay, qkv;     /* QKV: biases, their layer; QKV at all    */
    uint32_t rope_n;             /* QKV: the values RoPE turns              */
    uint32_t add, lg, input;     /* the residual add; logits; a GEMV input  */
} gather_job;

#if TSR_SLRS > 1
#define TSR_GATHER_SLR_LAT (2 * TSR_SLR_DELAY)
/* The gather's request and return lines, emptied (gather_words_slr). */
static void gather_slr_clear(uint32_t rw[TSR_SLR_DELAY], uint32_t rsrc[TSR_SLR_DELAY],
                             uint32_t rstart[TSR_SLR_DELAY], uint32_t rlive[TSR_SLR_DELAY],
                             float gq[TSR_GATHER_SLR_LAT][TSR_SLRS][TSR_VEC],
                             uint32_t gs[TSR_GATHER_SLR_LAT], uint32_t gok[TSR_GATHER_SLR_LAT])
{
#pragma HLS INLINE
gather_slr_req_clear:
    for (uint32_t r = 0; r < TSR_SLR_DELAY; r++) {
#pragma HLS UNROLL
        rw[r] = 0;
        rsrc[r] = 0;
        rstart[r] = 0;
        rlive[r] = 0;
    }
gather_slr_clear:
    for (uint32_t r = 0; r < TSR_GATHER_SLR_LAT; r++) {
#pragma HLS UNROLL
        gok[r] = 0;
        gs[r] = 0;
gather_slr_clear_slrs:
        for (uint32_t t = 0; t < TSR_SLRS; t++) {
#pragma HLS UNROLL
gather_slr_clear_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                gq[r][t][l] = 0.0f;
            }
        }
    }
}

/* Each SLR's mux over its PEs' partial sums for the request that has
 * reached it (SLR 0: this iteration's, w from src at start; SLR s: the
 * request line's stage s TSR_D_SLR - 1): the root's SLR reads the word,
 * the others zeros, into raw (gather_words_slr). */
static void gather_slr_read(const tsr_kstate *st, uint32_t it, uint32_t d, uint32_t w,
                            uint32_t src, uint32_t start, uint32_t live,
                            const uint32_t rw[TSR_SLR_DELAY], const uint32_t rsrc[TSR_SLR_DELAY],
                            const uint32_t rstart[TSR_SLR_DELAY],
                            const uint32_t rlive[TSR_SLR_DELAY], float raw[TSR_SLRS][TSR_VEC])
{
#pragma HLS INLINE
    /* each SLR's mux over its PEs' partial sums, for the request that
     * has reached it (SLR 0: this one; SLR s: the request line's stage
     * s TSR_D_SLR - 1); the root's SLR reads the word, the others
     * zeros */
gather_slr_zero:
    for (uint32_t r = 0; r < TSR_SLRS; r++) {
#pragma HLS UNROLL
gather_slr_zero_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            raw[r][l] = 0.0f;
        }
    }
gather_slr_mux:
    for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
        const uint32_t sp = TSR_SLR_OF(p), rk = sp ? sp * TSR_D_SLR - 1u : 0u;
        uint32_t qw = sp ? rw[rk] : w, qsrc = sp ? rsrc[rk] : src;
        uint32_t qstart = sp ? rstart[rk] : start, qlive = sp ? rlive[rk] : live;
        if (qlive && p == qsrc) {
gather_slr_mux_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                uint32_t i = qw * TSR_VEC + l;
                raw[sp][l] = i < d ? st->psum[p][it][(qw - qstart) * TSR_VEC + l] : 0.0f;
            }
        }
    }
}

/* The gather's lines one stage on: the return line (SLR s's read enters
 * at stage s TSR_D_SLR, SLR 0's at the first, with the word's SLR and
 * whether it is live), then the request line (this iteration's request
 * at its first stage) (gather_words_slr). */
static void gather_slr_shift(uint32_t rw[TSR_SLR_DELAY], uint32_t rsrc[TSR_SLR_DELAY],
                             uint32_t rstart[TSR_SLR_DELAY], uint32_t rlive[TSR_SLR_DELAY],
                             float gq[TSR_GATHER_SLR_LAT][TSR_SLRS][TSR_VEC],
                             uint32_t gs[TSR_GATHER_SLR_LAT], uint32_t gok[TSR_GATHER_SLR_LAT],
                             const float raw[TSR_SLRS][TSR_VEC], uint32_t w, uint32_t src,
                             uint32_t start, uint32_t live)
{
#pragma HLS INLINE
    /* every stage one on; SLR s's read enters its line at stage s
     * TSR_D_SLR (its way back), SLR 0's at the first */
gather_slr_shift:
    for (uint32_t r = TSR_GATHER_SLR_LAT - 1u; r > 0u; r--) {
#pragma HLS UNROLL
gather_slr_shift_slrs:
        for (uint32_t t = 0; t < TSR_SLRS; t++) {
#pragma HLS UNROLL
gather_slr_shift_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                gq[r][t][l] = t > 0u && r == t * TSR_D_SLR ? raw[t][l] : gq[r - 1u][t][l];
            }
        }
        gs[r] = gs[r - 1u];
        gok[r] = gok[r - 1u];
    }
gather_slr_head_lanes:
    for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
        gq[0][0][l] = raw[0][l];
    }
    gs[0] = TSR_SLR_OF(src);
    gok[0] = live;
    /* the request one stage further out */
gather_slr_req_shift:
    for (uint32_t r = TSR_SLR_DELAY - 1u; r > 0u; r--) {
#pragma HLS UNROLL
        rw[r] = rw[r - 1u];
        rsrc[r] = rsrc[r - 1u];
        rstart[r] = rstart[r - 1u];
        rlive[r] = rlive[r - 1u];
    }
    rw[0] = w;
    rsrc[0] = src;
    rstart[0] = start;
    rlive[0] = live;
}

/* The gather's word loop over SLRs. */
static void gather_words_slr(tsr_kstate *st, const gather_job *g,
                             float ssq[TSR_GATHER_SSQ_ROWS][TSR_VEC])
{
#pragma HLS INLINE
    uint32_t mat = g->mat, it = g->it, yw = g->yw, d = g->d, nout = g->nout, dw = g->dw;
    uint32_t bias = g->bias, lay = g->lay, qkv = g->qkv, rope_n = g->rope_n;
    uint32_t add = g->add, lg = g->lg, input = g->input;
    uint32_t src = 0, start = 0, end = 0;   /* the root holding the current words */
    uint32_t k = 0;                         /* the next root, in row order */
    /* Over SLRs, both ways registered (TSR_D_SLR a crossing): the word's
     * request (w, its root, the root's first word) goes out to SLR s down
     * a line of registers, s TSR_D_SLR of them; SLR s's mux over its own
     * roots reads the word then and its result comes back down a line
     * entered at stage s TSR_D_SLR, so every SLR's word leaves the line
     * TSR_GATHER_SLR_LAT = 2 TSR_SLR_DELAY iterations after its request
     * (the nearer SLRs wait as long, so the words stay in order); then the
     * S:1 mux by SLR 0 and the word's outputs as below; a QKV word then
     * passes TSR_D_SLR registers a crossing on to the attention PEs beyond
     * SLR 0.  The loop runs TSR_GATHER_SLR_LAT (QKV: plus
     * TSR_ATT_SLR_DELAY) iterations more (tsr_cy_slr_of: gather). */
    uint32_t rw[TSR_SLR_DELAY], rsrc[TSR_SLR_DELAY], rstart[TSR_SLR_DELAY], rlive[TSR_SLR_DELAY];
#pragma HLS ARRAY_PARTITION variable=rw type=complete
#pragma HLS ARRAY_PARTITION variable=rsrc type=complete
#pragma HLS ARRAY_PARTITION variable=rstart type=complete
#pragma HLS ARRAY_PARTITION variable=rlive type=complete
    float gq[TSR_GATHER_SLR_LAT][TSR_SLRS][TSR_VEC];
    uint32_t gs[TSR_GATHER_SLR_LAT], gok[TSR_GATHER_SLR_LAT];
#pragma HLS ARRAY_PARTITION variable=gq type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=gs type=complete
#pragma HLS ARRAY_PARTITION variable=gok type=complete
#if TSR_ATT_SLR_HOPS > 0
    float lq[TSR_ATT_SLR_DELAY][TSR_VEC];
    uint32_t lw[TSR_ATT_SLR_DELAY], lok[TSR_ATT_SLR_DELAY];
#pragma HLS ARRAY_PARTITION variable=lq type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=lw type=complete
#pragma HLS ARRAY_PARTITION variable=lok type=complete
gather_slr_latch_clear:
    for (uint32_t r = 0; r < TSR_ATT_SLR_DELAY; r++) {
#pragma HLS UNROLL
        lok[r] = 0;
        lw[r] = 0;
gather_slr_latch_clear_lanes:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            lq[r][l] = 0.0f;
        }
    }
#endif
    gather_slr_clear(rw, rsrc, rstart, rlive, gq, gs, gok);
    uint32_t trip = dw + TSR_GATHER_SLR_LAT + (qkv ? (uint32_t)TSR_ATT_SLR_DELAY : 0u);
gather_slr_words:
    for (uint32_t w = 0; w < trip; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_OUT_WORDS
#pragma HLS PIPELINE II=1
        uint32_t live = w < dw;
        if (live && w >= end && w * TSR_VEC < d) {
            /* the next row block: the next root (a CONFIGURE table) */
            src = st->root_pe[mat][k];
            start = st->root_w0[mat][k];
            end = st->root_w1[mat][k];
            k++;
        }
        float raw[TSR_SLRS][TSR_VEC];
#pragma HLS ARRAY_PARTITION variable=raw type=complete dim=0
        gather_slr_read(st, it, d, w, src, start, live, rw, rsrc, rstart, rlive, raw);
        /* the word out of the last stage: S:1 by its root's SLR.  The word
         * it is: w's of TSR_GATHER_SLR_LAT iterations ago, as an affine
         * index (not a register of a line), so HLS sees the cv
         * read-modify-write one word an iteration apart, with no carried
         * dependence (the seventh HLS review, F1) */
        const uint32_t gl = TSR_GATHER_SLR_LAT - 1u;
        uint32_t ok = gok[gl], wo = w - TSR_GATHER_SLR_LAT, so = gs[gl];
        float v[TSR_VEC];
#pragma HLS ARRAY_PARTITION variable=v type=complete
gather_slr_final:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            v[l] = gq[gl][so][l];
        }
        gather_slr_shift(rw, rsrc, rstart, rlive, gq, gs, gok, raw, w, src, start, live);
        if (ok) {
            gather_word_post(st, it, wo, d, bias, lay, qkv, rope_n, v);
            gather_word_out(st, it, wo, yw, nout, add, lg, input, v, ssq);
        }
        /* q | k | v word by word into every attention PE's copy: SLR 0's
         * now, SLR s's s crossings down the latch's line */
        uint32_t lat = ok && qkv;
gather_slr_latch_pes:
        for (uint32_t p = 0; p < TSR_ATT_PES; p++) {
#pragma HLS UNROLL
            const uint32_t s = TSR_SLR_OF(p);
#if TSR_ATT_SLR_HOPS > 0
            const uint32_t kk = s ? s * TSR_D_SLR - 1u : 0u;
            uint32_t pok = s ? lok[kk] : lat, pw = s ? lw[kk] : wo;
#else
            const uint32_t kk = 0;
            uint32_t pok = lat, pw = wo;
#endif
            if (pok) {
gather_slr_latch_lanes:
                for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
#if TSR_ATT_SLR_HOPS > 0
                    st->qkvw[p][pw][l] = s ? lq[kk][l] : v[l];
#else
                    st->qkvw[p][pw][l] = v[l];
#endif
                }
            }
            (void)s;
            (void)kk;
        }
#if TSR_ATT_SLR_HOPS > 0
gather_slr_latch_shift:
        for (uint32_t r = TSR_ATT_SLR_DELAY - 1u; r > 0u; r--) {
#pragma HLS UNROLL
gather_slr_latch_shift_lanes:
            for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
                lq[r][l] = lq[r - 1u][l];
            }
            lw[r] = lw[r - 1u];
            lok[r] = lok[r - 1u];
        }
gather_slr_latch_head:
        for (uint32_t l = 0; l < TSR_VEC; l++) {
#pragma HLS UNROLL
            lq[0][l] = v[l];
        }
        lw[0] = wo;
        lok[0] = lat;
#endif
    }
}
#undef TSR_GATHER_SLR_LAT
#else
/* The gather's word loop, one SLR: a word a cycle off its root. */
static void gather_words_one(tsr_kstate *st, const gather_job *g,
                             float ssq[TSR_GATHER_SSQ_ROWS][TSR_VEC])
{
#pragma HLS INLINE
    uint32_t mat = g->mat, it = g->it, yw = g->yw, d = g->d, nout = g->nout, dw = g->dw;
    uint32_t bias = g->bias, lay = g->lay, qkv = g->qkv, rope_n = g->rope_n;
    uint32_t add = g->add, lg = g->lg, input = g->input;
    uint32_t src = 0, start = 0, end = 0;   /* the root holding the current words */
    uint32_t k = 0;                         /* the next root, in row order */
gather_words:
    for (uint32_t w = 0; w < dw; w++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_OUT_WORDS
#pragma HLS PIPELINE II=1
        if (w >= end && w * TSR_VEC < d) {
            /* the next row block: the next root (a CONFIGURE table) */
            src = st->root_pe[mat][k];
            start = st->root_w0[mat][k];
            end = st->root_w1[mat][k];
            k++;
        }
        float v[TSR_VEC];
#pragma HLS ARRAY_PARTITION variable=v type=complete
        gather_word_in(st, it, w, d, src, start, bias, lay, qkv, rope_n, v);
        gather_word_out(st, it, w, yw, nout, add, lg, input, v, ssq);
        /* q | k | v word by word into every attention PE's copy */
        if (qkv) gather_latch(st, w, v);
    }
}
#endif

void tsr_mesh_gather(tsr_kstate *st, uint32_t mat, uint32_t it, uint32_t yw, uint32_t flags,
                     uint32_t pos)
{
#pragma HLS INLINE
    uint32_t d = st->mat_d[mat];
    uint32_t add = flags & TSR_GATHER_ADD, input = flags & TSR_GATHER_INPUT;
    uint32_t qkv = flags & TSR_GATHER_QKV, lg = flags & TSR_GATHER_LOGITS;
    uint32_t nout = tsr_gather_words(st, d, flags);
    uint32_t dw = (nout + TSR_VEC - 1u) / TSR_VEC, rope_n = qkv ? st->cfg.dim + st->kv_dim : 0u;
    /* QKV with biases: its layer's row of them (mat >= 1 for QKV) */
    uint32_t bias = qkv ? st->cfg.qkv_bias : 0u, lay = qkv ? (mat - 1u) / TSR_W_COUNT : 0u;
#if TSR_SSQ_FUSED
    /* RMSNorm's partials of the new x: element i into partial i % S, as
     * tsr_reduce_sumsq; word w's into row w % (S / TSR_VEC).  The rows are
     * a rotating chain of registers (ops.c reduce): word w adds into the
     * head row and every row moves up one, the head's sums to the tail, so
     * a row is added to once every TSR_SSQ_DIST words (>= TSR_FADD_LAT
     * cycles at II 1, tsr_profile.h), by the chain's length, not by a
     * DEPENDENCE claim on registers.  The partials leave rotated by the
     * word count; tsr_rms_scale's pairwise levels give the same sum for
     * any rotation (ops.c reduce), so they are stored as they stand. */
    float ssq[TSR_GATHER_SSQ_ROWS][TSR_VEC];   /* the chain; the next word adds into row 0 */
#pragma HLS ARRAY_PARTITION variable=ssq type=complete dim=0
gather_ssq_zero:
    for (uint32_t k = 0; k < TSR_SUM_LANES; k++) {
#pragma HLS UNROLL
        ssq[k / TSR_VEC][k % TSR_VEC] = 0.0f;
    }
#else
    float ssq[TSR_GATHER_SSQ_ROWS][TSR_VEC];   /* none kept (one row, unused) */
#endif
    TSR_CHARGE(st, TSR_RG_GATHER, tsr_gather_cycles(flags, d, nout, bias));
    (void)pos;
    TSR_COUNT(st, fabric_gather_bytes, 4ull * d);
    /* a platform's fast path writes what the word loop would, latches
     * included */
    if (TSR_FAST_GATHER(st, mat, it, yw, flags, pos)) return;
    gather_job g = { .mat = mat, .it = it, .yw = yw, .d = d, .nout = nout, .dw = dw, .bias = bias,
                     .lay = lay, .qkv = qkv, .rope_n = rope_n, .add = add, .lg = lg,
                     .input = input };
#if TSR_SLRS > 1
    gather_words_slr(st, &g, ssq);
#else
    gather_words_one(st, &g, ssq);
#endif
#if TSR_SSQ_FUSED
    if (add) {
gather_ssq_out:
        for (uint32_t k = 0; k < TSR_SUM_LANES; k++) {
#pragma HLS UNROLL
            st->ssq[it][k] = ssq[k / TSR_VEC][k % TSR_VEC];
        }
        st->ssq_fresh[it] = 1;
    }
#endif
}

/* One compare-select of the argmax tree: b's (vb, ib, okb) replaces a's
 * (*va, *ia, *oka) when b is a root's best and a is not, or b's value is
 * larger, or the same at a lower row. */
static void best_take(float *va, uint32_t *ia, uint32_t *oka, float vb, uint32_t ib, uint32_t okb)
{
#pragma HLS INLINE
    if (okb && (!*oka || vb > *va || (vb == *va && ib < *ia))) {
        *va = vb;
        *ia = ib;
        *oka = 1;
    }
}

/* The argmax tree over the roots' bests bv, bi (ok: a root's), the
 * larger value or the same value at a lower row winning a pair: the
 * token (tsr_mesh_best). */
#if TSR_SLRS > 1
static int32_t best_tree(float bv[TSR_PES], uint32_t bi[TSR_PES], uint32_t ok[TSR_PES])
{
#pragma HLS INLINE
    /* Over SLRs: each SLR's subtree over its own PEs (pairs by the index
     * within the SLR), its result at its first PE ... */
best_slr_levels:
    for (uint32_t h = 1; h < TSR_PES; h *= 2u) {
#pragma HLS UNROLL
best_slr_pairs:
        for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
            const uint32_t s = TSR_SLR_OF(p), q = p - TSR_SLR_PE0(s);
            if ((q & (2u * h - 1u)) == 0 && p + h < TSR_SLR_PE0(s + 1u))
                best_take(&bv[p], &bi[p], &ok[p], bv[p + h], bi[p + h], ok[p + h]);
        }
    }
    /* ... through the crossings' registers (TSR_D_SLR a crossing: a shift
     * line a register a cycle, TSR_SLR_DELAY stages, so the nearer SLRs'
     * results wait for the farthest's) ... */
    float hv[TSR_SLR_DELAY][TSR_SLRS];
    uint32_t hi[TSR_SLR_DELAY][TSR_SLRS], hok[TSR_SLR_DELAY][TSR_SLRS];
#pragma HLS ARRAY_PARTITION variable=hv type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=hi type=complete dim=0
#pragma HLS ARRAY_PARTITION variable=hok type=complete dim=0
    /* (cleared, and the results enter once, at t 0: a line whose input
     * never changed would fold to a wire, the seventh HLS review's F2) */
best_slr_hops_clear:
    for (uint32_t r = 0; r < TSR_SLR_DELAY; r++) {
#pragma HLS UNROLL
best_slr_hops_clear_slrs:
        for (uint32_t s = 0; s < TSR_SLRS; s++) {
#pragma HLS UNROLL
            hv[r][s] = 0.0f;
            hi[r][s] = 0;
            hok[r][s] = 0;
        }
    }
best_slr_hops:
    for (uint32_t t = 0; t < TSR_SLR_DELAY; t++) {
#pragma HLS PIPELINE II=1
best_slr_hop_slrs:
        for (uint32_t s = 0; s < TSR_SLRS; s++) {
#pragma HLS UNROLL
best_slr_hop_stages:
            for (uint32_t r = TSR_SLR_DELAY - 1u; r > 0u; r--) {
#pragma HLS UNROLL
                hv[r][s] = hv[r - 1u][s];
                hi[r][s] = hi[r - 1u][s];
                hok[r][s] = hok[r - 1u][s];
            }
            hv[0][s] = t == 0 ? bv[TSR_SLR_PE0(s)] : 0.0f;
            hi[0][s] = t == 0 ? bi[TSR_SLR_PE0(s)] : 0u;
            hok[0][s] = t == 0 ? ok[TSR_SLR_PE0(s)] : 0u;
        }
    }
    /* ... then the last levels over the S results, by SLR 0 */
    float sv[TSR_SLRS];
    uint32_t si[TSR_SLRS], sok[TSR_SLRS];
#pragma HLS ARRAY_PARTITION variable=sv type=complete
#pragma HLS ARRAY_PARTITION variable=si type=complete
#pragma HLS ARRAY_PARTITION variable=sok type=complete
best_slr_last:
    for (uint32_t s = 0; s < TSR_SLRS; s++) {
#pragma HLS UNROLL
        sv[s] = hv[TSR_SLR_DELAY - 1u][s];
        si[s] = hi[TSR_SLR_DELAY - 1u][s];
        sok[s] = hok[TSR_SLR_DELAY - 1u][s];
    }
best_slr_last_levels:
    for (uint32_t h = 1; h < TSR_SLRS; h *= 2u) {
#pragma HLS UNROLL
best_slr_last_pairs:
        for (uint32_t s = 0; s < TSR_SLRS; s++) {
#pragma HLS UNROLL
            if ((s & (2u * h - 1u)) == 0 && s + h < TSR_SLRS)
                best_take(&sv[s], &si[s], &sok[s], sv[s + h], si[s + h], sok[s + h]);
        }
    }
    return (int32_t)si[0];
}
#else
static int32_t best_tree(float bv[TSR_PES], uint32_t bi[TSR_PES], uint32_t ok[TSR_PES])
{
#pragma HLS INLINE
best_levels:
    for (uint32_t h = 1; h < TSR_PES; h *= 2u) {
#pragma HLS UNROLL
best_pairs:
        for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
            if ((p & (2u * h - 1u)) == 0 && p + h < TSR_PES)
                best_take(&bv[p], &bi[p], &ok[p], bv[p + h], bi[p + h], ok[p + h]);
        }
    }
    return (int32_t)bi[0];
}
#endif

int32_t tsr_mesh_best(tsr_kstate *st, uint32_t mat, uint32_t it)
{
#pragma HLS INLINE
    /* the roots' bests, pairwise over the profile's PEs (log2 TSR_PES
     * levels): the larger value, or the same value at a lower row */
    float bv[TSR_PES];
    uint32_t bi[TSR_PES], ok[TSR_PES];
#pragma HLS ARRAY_PARTITION variable=bv type=complete
#pragma HLS ARRAY_PARTITION variable=bi type=complete
#pragma HLS ARRAY_PARTITION variable=ok type=complete
    TSR_CHARGE(st, TSR_RG_ARGMAX, TSR_CY_BEST_TREE);
best_leaves:
    for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
        tsr_ktab t = tsr_ktab_of(st, p, mat);
        ok[p] = p < st->P && (p & (t.cols - 1u)) == 0 && t.rows != 0;
        bv[p] = st->best_v[p][it];
        bi[p] = st->best_i[p][it];
    }
    return best_tree(bv, bi, ok);
}

void tsr_mesh_embed(tsr_kstate *st, uint32_t it, uint32_t token)
{
#pragma HLS INLINE
    const tsr_kconfig *c = &st->cfg;
    uint32_t G = c->group, dim = c->dim, C = st->mat_cols[TSR_MAT_EMB], r0 = 0;
    int q8 = c->dtype == TSR_KDT_Q8;
    uint32_t q4 = st->mat_q4[TSR_MAT_EMB], eb = q4 ? TSR_Q4_ENTRY_BYTES : G;   /* entry bytes */
    /* the mesh row whose row block holds `token` */
embed_find:
    for (uint32_t p = 0; p < TSR_PES; p++) {
#pragma HLS UNROLL
        tsr_ktab t = tsr_ktab_of(st, p, TSR_MAT_EMB);
        if (p < st->P && (p & (C - 1u)) == 0 && token >= t.row0 && token < t.row0 + t.rows) r0 = p;
    }
    /* each column's PE streams its groups of the row onto the bus */
    uint32_t cpg = G < TSR_LANES ? 1u : G / TSR_LANES, chunk = G < TSR_LANES ? G : TSR_LANES;
embed_cols:
    for (uint32_t cc = 0; cc < C; cc++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_MESH_COLS
        uint32_t p = r0 + cc;
        tsr_ktab t = tsr_ktab_of(st, p, TSR_MAT_EMB);
        uint32_t i = token - t.row0, nb = (t.rows + TSR_ROW_SLOTS - 1u) / TSR_ROW_SLOTS;
        uint32_t b = i / TSR_ROW_SLOTS, j = i % TSR_ROW_SLOTS;
        uint32_t kb = b == nb - 1u ? t.rows - b * TSR_ROW_SLOTS : TSR_ROW_SLOTS;
        uint32_t e0 = b * TSR_ROW_SLOTS * t.ngroups + j;   /* entry of group 0 */
        uint32_t c0 = t.g0 * G, c1 = c0 + t.ngroups * G;  /* the column's columns */
        c1 = c1 < dim ? c1 : dim;
        TSR_CHARGE(st, TSR_RG_EMBED, tsr_cy_embed(t.ngroups, G, c1 > c0 ? c1 - c0 : 0u, q8));
#if TSR_WITH_F32
        if (!q8) {
            /* F32: values (block, column, row), one a cycle */
            uint32_t f0 = t.f_off + b * TSR_ROW_SLOTS * t.ngroups * G + j;
embed_f32_cols:
            for (uint32_t col = c0; col < c1; col++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_DIM
#pragma HLS PIPELINE II=1
                st->cv[it][TSR_CV_X + col] = st->f32[p][f0 + (col - c0) * kb];
            }
            continue;
        }
#endif
        /* Q8: one TSR_LANES-chunk a cycle, dequantized (q * scale), written
         * as TSR_VEC words (two a cycle into the vectors' TSR_VEC banks: one
         * write port a bank, hence TSR_EMBED_II) */
embed_chunks:
        for (uint32_t k = 0; k < t.ngroups * cpg; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_CHUNKS
#pragma HLS PIPELINE II=TSR_EMBED_II
            uint32_t g = k >> st->cpg_log2, part = k & (cpg - 1u);
            uint32_t e = e0 + g * kb;
            uint32_t col0 = (t.g0 + g) * G + part * TSR_LANES;
            uint32_t a0 = t.w_off + e * eb + part * TSR_LANES;   /* the chunk's first byte */
            float sc = st->f32[p][t.f_off + e];
#if TSR_MIN_GROUP >= TSR_LANES && !TSR_WITH_Q4
            uint32_t off = 0, cw = col0 / TSR_VEC;   /* col0 is a whole word */
#elif TSR_MIN_GROUP >= TSR_LANES
            uint32_t off = a0 % TSR_LANES, cw = col0 / TSR_VEC;   /* Q4_0: the entry's half */
#else
            uint32_t off = a0 % TSR_LANES;
#endif
embed_lanes:
            for (uint32_t l = 0; l < TSR_LANES; l++) {
#pragma HLS UNROLL
                uint32_t col = col0 + l;
                if (l < chunk && col < dim) {
                    /* Q8_0: byte l of the chunk; Q4_0: nibble l of the entry
                     * (tsr_layout.h), value - 8 */
                    /* (a platform may keep the tile's bytes its own way) */
                    uint32_t byte = TSR_W8_READ(st, p, TSR_MAT_EMB, a0 + l,
                                                (uint32_t)(uint8_t)st->w8[p][a0 / TSR_LANES]
                                                    [(off + (q4 ? l & (TSR_Q4_ENTRY_BYTES - 1u) : l)) & (TSR_LANES - 1u)]);
                    int32_t q = q4 ? (int32_t)((l < TSR_Q4_ENTRY_BYTES ? byte : byte >> 4) & 15u) - 8
                                   : (int32_t)(int8_t)(uint8_t)byte;
                    float v = (float)q * sc;
#if TSR_MIN_GROUP >= TSR_LANES
                    st->cv[it][TSR_CV_X + (cw + l / TSR_VEC) * TSR_VEC + l % TSR_VEC] = v;
#else
                    st->cv[it][TSR_CV_X + col] = v;
#endif
                }
            }
        }
    }
    TSR_COUNT(st, fabric_gather_bytes, 4ull * dim);
}
