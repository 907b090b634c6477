/*
 * platform.c - the emulator's fast paths behind the kernel's platform
 * hooks (kernels/tsr_platform.h, emu/tsr_platform_emu.h): the GEMV tiles
 * through the SIMD rows, the input's norm and quantizer, the gather and
 * the QKV latches, the embedding's and LOAD's and READ_MEM's view of the
 * transposed units, and attention's vector loops.  Each writes the bits
 * the kernel's loop it stands for would (make csim-gcc compares the two
 * views' logits; tests/test_kernel_ops.c the steps).
 */
#include <math.h>
#include <string.h>

#include "tsr_ops.h"
#include "tsr_emu.h"

/* ------------------------------------------------------------------------ */
/* The transposed units                                                       */

/* The emulator's transposed units (emu/tsr_emu.h): 1 when matrix m's
 * tiles have them (a Q8_0 tile at G = 32, on a CPU that runs them). */
static inline uint32_t emu_tr_mat(const tsr_kstate *st, uint32_t m)
{
    return st->emu_tr && !st->mat_q4[m];
}

/* Where the emulator keeps layout byte a of PE p's int8 array, a byte of
 * matrix m's tile (tab_woff <= a), and in *flip what its value is XORed
 * with (0x80 in a transposed unit, else 0): a itself outside the tile's
 * full blocks (its tail blocks, the padding after it) or when m has no
 * transposed units. */
static uint32_t emu_w8_place(const tsr_kstate *st, uint32_t p, uint32_t m, uint32_t a,
                                        uint32_t *flip)
{
    uint32_t rel = a - st->tab_woff[p][m], half = st->tab_ent[p][m] * 32u;
    uint32_t full = st->tab_rows[p][m] / 8u * 8u * st->tab_ng[p][m] * 32u;
    *flip = 0;
    if (!emu_tr_mat(st, m)) return a;
    if (st->mat_pair[m] && rel >= half) rel -= half;   /* W13's second half */
    if (rel >= full) return a;                         /* a tail block, or past the tile */
    *flip = 0x80u;
    return a - (rel & 255u) + tsr_emu_tr_byte(rel & 255u);
}

uint32_t tsr_emu_w8_read(const tsr_kstate *st, uint32_t p, uint32_t m, uint32_t a, uint32_t layout)
{
    if (!emu_tr_mat(st, m)) return layout;
    uint32_t flip, at = emu_w8_place(st, p, m, a, &flip);   /* G = 32: byte a */
    return (uint32_t)(uint8_t)(&st->w8[p][0][0])[at] ^ flip;
}

void tsr_emu_configured(tsr_kstate *st)
{
    st->emu_tr = st->simd && st->cfg.dtype == TSR_KDT_Q8 && st->cfg.group == 32u &&
                 tsr_emu_tr_available();
}

/* The emulator's per-entry weight sums (tsr_emu_wcorr, kept in the
 * scales' order) of PE p's entries that bytes [off, off + len) of its int8
 * array touched, tile by tile: an entry is G bytes (Q8_0) or 16 (Q4_0),
 * its sum at the tile's first scale plus its index.  An entry split over
 * two chunks is summed again by the second.  Nothing in hardware. */
void tsr_emu_wcorr_update(tsr_kstate *st, uint32_t p, uint32_t off, uint32_t len)
{
    if (st->cfg.dtype != TSR_KDT_Q8) return;
    uint32_t nm = tsr_lay_n_mats(&st->cfg), end = off + len, G = st->cfg.group;
    for (uint32_t m = 0; m < nm; m++) {
        uint32_t q4 = st->mat_q4[m], eb = q4 ? TSR_Q4_ENTRY_BYTES : G;
        uint32_t w0 = st->tab_woff[p][m], n = (st->mat_pair[m] ? 2u : 1u) * st->tab_ent[p][m];
        uint32_t w1 = w0 + n * eb;
        if (n == 0 || end <= w0 || off >= w1 || emu_tr_mat(st, m)) continue;   /* no sums */
        uint32_t e0 = off > w0 ? (off - w0) / eb : 0u, e1 = ((end < w1 ? end : w1) - 1u - w0) / eb;
        for (uint32_t e = e0; e <= e1; e++) {
            const int8_t *w = &st->w8[p][0][0] + w0 + (size_t)e * eb;
            st->emu_wcorr[p][st->tab_foff[p][m] + e] = q4 ? tsr_emu_wcorr_q4(w) : tsr_emu_wcorr(w, G);
        }
    }
}

/* A cursor over PE p's tiles in matrix order, for ascending bytes: the
 * current matrix and the end of its tile's entries. */
typedef struct emu_w8_cursor {
    uint32_t m, nm, end;
} emu_w8_cursor;

static void emu_cursor_at(const tsr_kstate *st, uint32_t p, emu_w8_cursor *cu, uint32_t m)
{
    cu->m = m;
    if (m >= cu->nm) return;
    uint32_t eb = st->mat_q4[m] ? TSR_Q4_ENTRY_BYTES : st->cfg.group;
    cu->end = st->tab_woff[p][m] + (st->mat_pair[m] ? 2u : 1u) * st->tab_ent[p][m] * eb;
}

static void emu_cursor_init(const tsr_kstate *st, uint32_t p, emu_w8_cursor *cu)
{
    cu->nm = tsr_lay_n_mats(&st->cfg);
    emu_cursor_at(st, p, cu, 0);
}

/* Where byte a of PE p's int8 array is kept, and *flip its XOR: the
 * place emu_w8_place gives in the tile that holds a, a itself
 * between tiles. */
static uint32_t emu_w8_at(const tsr_kstate *st, uint32_t p, emu_w8_cursor *cu, uint32_t a,
                          uint32_t *flip)
{
    while (cu->m < cu->nm && a >= cu->end) emu_cursor_at(st, p, cu, cu->m + 1u);
    *flip = 0;
    if (cu->m >= cu->nm || a < st->tab_woff[p][cu->m]) return a;
    return emu_w8_place(st, p, cu->m, a, flip);
}

/* 8 payload bytes from word w on, each XORed with 0x80 (little-endian) */
static inline uint64_t emu_flip8(const uint32_t *w)
{
    return ((uint64_t)w[0] | (uint64_t)w[1] << 32) ^ 0x8080808080808080ull;
}

/* LOAD's int8 payload into the transposed units: a whole unit at a time
 * where the chunk holds one from its first byte (the unit's byte u goes to
 * tsr_emu_tr_byte(u): row r's 8-byte run k to 64 k + 8 r), else whole
 * 8-byte runs (a row's 8 bytes of a unit stay together) where the chunk
 * holds them, else a word at a time (a word stays whole). */
int tsr_emu_load_w8(tsr_kstate *st, uint32_t p, uint32_t off, uint32_t len, const uint32_t *in_w)
{
    if (!st->emu_tr) return 0;
    uint8_t *w8 = (uint8_t *)&st->w8[p][0][0];
    emu_w8_cursor cu;
    emu_cursor_init(st, p, &cu);
    for (uint32_t i = 0; i < (len + 3u) / 4u;) {
        uint32_t a = off + 4u * i, flip, at = emu_w8_at(st, p, &cu, a, &flip);
        /* a unit's first byte is the one multiple of 8 that stays put */
        if (flip && at == a && a % 8u == 0 && 4u * i + 256u <= len) {
            for (uint32_t r = 0; r < 8u; r++)
                for (uint32_t k = 0; k < 4u; k++) {
                    uint64_t v = emu_flip8(in_w + i + 8u * r + 2u * k);   /* bytes 32 r + 8 k .. */
                    __builtin_memcpy(w8 + a + 64u * k + 8u * r, &v, sizeof v);
                }
            i += 64u;
            continue;
        }
        if (flip && a % 8u == 0 && 4u * i + 8u <= len) {
            uint64_t v = emu_flip8(in_w + i);
            __builtin_memcpy(w8 + at, &v, sizeof v);
            i += 2u;
            continue;
        }
        for (uint32_t k = 0; k < 4u && 4u * i + k < len; k++)
            w8[at + k] = (uint8_t)((in_w[i] >> (8u * k)) ^ flip);
        i++;
    }
    return 1;
}

int tsr_emu_read_w8(const tsr_kstate *st, uint32_t p, uint32_t off, uint32_t len,
                    volatile uint32_t *out_w)
{
    if (!st->emu_tr || !st->configured) return 0;   /* else back out of the transposed units */
    emu_w8_cursor cu;
    emu_cursor_init(st, p, &cu);
    for (uint32_t k = 0; k < tsr_cdiv(len, 4u); k++) {
        uint32_t w = 0;
        for (uint32_t i = 0; i < 4u && 4u * k + i < len; i++) {
            uint32_t flip, at = emu_w8_at(st, p, &cu, off + 4u * k + i, &flip);
            w |= ((uint32_t)(uint8_t)(&st->w8[p][0][0])[at] ^ flip) << (8u * i);
        }
        out_w[k] = w;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The mesh                                                                   */

void tsr_emu_gemv_tile(tsr_kstate *st, uint32_t p, const tsr_pe_job *job, uint32_t run,
                       uint32_t done[2])
{
    tsr_ktab t = tsr_ktab_of(st, p, job->mat);
    uint32_t halves = job->flags & TSR_JOB_PAIR ? 2u : 1u;
    uint32_t G = st->cfg.group, q8 = st->cfg.dtype == TSR_KDT_Q8, q4 = st->mat_q4[job->mat];
    /* the broadcast copy it reads (TSR_BCAST_SRC: PE 0's) */
    uint32_t xb = TSR_BCAST_SRC(p);
    /* the emulator's SIMD rows (emu/), bit-identical to the loop: the full
     * row blocks of each half, for all items at once */
    /* (transposed units, once configured, only ever go through the SIMD
     * rows: the portable loop reads the layout) */
    if (run && st->emu_tr && q8 && !q4 && p + 1u < st->P) {
        /* the next PE's tile head: a worker takes its block's PEs in order
         * (emu/pool.c), and their tiles lie in different slabs */
        tsr_ktab next = tsr_ktab_of(st, p + 1u, job->mat);
        tsr_emu_tile_q8t_head((const uint8_t *)&st->w8[p + 1u][0][0] + next.w_off,
                              st->f32[p + 1u] + next.f_off, next.rows, next.ngroups);
    }
    for (uint32_t h = 0; run && (st->simd || st->emu_tr) && t.ngroups && h < halves; h++) {
        uint32_t po = h * t.rows, ent = h * t.rows * t.ngroups;
        if (q4)
            done[h] = tsr_emu_tile_q4(&st->w8[p][0][0] + t.w_off + ent * TSR_Q4_ENTRY_BYTES,
                                      st->f32[p] + t.f_off + ent, st->emu_wcorr[p] + t.f_off + ent,
                                      t.rows, t.ngroups, &st->xq[xb][0][0][0] + t.g0 * TSR_Q4_GROUP,
                                      TSR_PE_XQ_WORDS * TSR_LANES, &st->xs[xb][0][0] + t.g0,
                                      TSR_PE_XS, job->nx, &st->psum[p][0][0] + po, TSR_PE_ROWS);
        else if (q8 && st->emu_tr)
            done[h] = tsr_emu_tile_q8t((const uint8_t *)&st->w8[p][0][0] + t.w_off + ent * G,
                                       st->f32[p] + t.f_off + ent, t.rows, t.ngroups,
                                       &st->xq[xb][0][0][0] + t.g0 * G, TSR_PE_XQ_WORDS * TSR_LANES,
                                       &st->xs[xb][0][0] + t.g0, TSR_PE_XS, job->nx,
                                       &st->psum[p][0][0] + po, TSR_PE_ROWS, job->xkey);
        else if (q8)
            done[h] = tsr_emu_tile_q8(&st->w8[p][0][0] + t.w_off + ent * G, st->f32[p] + t.f_off + ent,
                                      st->emu_wcorr[p] + t.f_off + ent, t.rows, t.ngroups, G,
                                      &st->xq[xb][0][0][0] + t.g0 * G, TSR_PE_XQ_WORDS * TSR_LANES,
                                      &st->xs[xb][0][0] + t.g0, TSR_PE_XS, job->nx,
                                      &st->psum[p][0][0] + po, TSR_PE_ROWS);
        else
            done[h] = tsr_emu_tile_f32(st->f32[p] + t.f_off + ent * G, t.rows, t.ngroups * G,
                                       &st->xf[xb][0][0] + t.g0 * G, TSR_PE_XF, job->nx,
                                       &st->psum[p][0][0] + po, TSR_PE_ROWS);
    }
}

/* The emulator's Q8 pass A (in_q8_norm): xn = rms[row] * (ss * x) for i <
 * n, zeros to the chunk padding, each TSR_VEC word's max |v| (m = a > m ?
 * a : m from 0), in plain loops the compiler vectorizes: the same fp32
 * operations, bit-identical. */
void tsr_emu_norm(tsr_kstate *st, uint32_t it, uint32_t n, uint32_t npad, uint32_t row, float ss)
{
    uint32_t nv = (npad / TSR_LANES + (npad % TSR_LANES != 0u)) * TSR_LANES, i = 0;
    float *xn = &st->cv[it][TSR_CV_XN];
    const float *x = &st->cv[it][TSR_CV_X], *r = st->rms[row];
    for (; i < n && i < nv; i++) xn[i] = r[i] * (ss * x[i]);
    for (; i < nv; i++) xn[i] = 0.0f;
    for (uint32_t w = 0; w < nv / TSR_VEC; w++) {
        float m = 0.0f;
        for (uint32_t l = 0; l < TSR_VEC; l++) {
            float a = fabsf(xn[w * TSR_VEC + l]);
            m = a > m ? a : m;
        }
        st->wmax[it][w] = m;
    }
}

/* The emulator's Q8 pass B for G >= TSR_LANES (in_q8_quant): group g's
 * scale the max of its words' maxima (from 0, words ascending) / 127, its
 * values round(v / scale) (0 for a zero scale; emu/quant.c, vectorized),
 * into PE 0's copy (TSR_BCAST_SRC): bit-identical, a group at a time. */
int tsr_emu_quantize(tsr_kstate *st, uint32_t it, uint32_t npad)
{
    if (TSR_MIN_GROUP < TSR_LANES && st->cfg.group < TSR_LANES) return 0;   /* the kernel's loop */
    uint32_t G = st->cfg.group, ng = npad >> st->g_log2, wpg = G / TSR_VEC;
    const float *xn = &st->cv[it][TSR_CV_XN];
    int8_t *q = &st->xq[0][it][0][0];
    for (uint32_t g = 0; g < ng; g++) {
        float gm = 0.0f;
        for (uint32_t k = 0; k < wpg; k++) {
            float wm = st->wmax[it][g * wpg + k];
            gm = wm > gm ? wm : gm;
        }
        float sc = gm / 127.0f;
        st->xs[0][it][g] = sc;
        const float *v = xn + (size_t)g * G;
        int8_t *qg = q + (size_t)g * G;
        if (sc != 0.0f)
            tsr_emu_quantize_q8(v, sc, qg, G);
        else
            for (uint32_t j = 0; j < G; j++) qg[j] = 0;
    }
    return 1;
}

/* The emulator's gather: gather_words's values, element by element, in
 * plain loops over each root's run of words (the compiler vectorizes
 * them) instead of a word a step.  The same fp32 operations on the same
 * operands: RoPE's pairs, the residual add (x + y), the sum-of-squares
 * partials (element i into partial i % TSR_SUM_LANES, ascending) and each
 * word's max |v| (m = a > m ? a : m from 0), so the results are
 * bit-identical; make csim-gcc(-15m) compares the two views' logits. */
/* The gather's RoPE over elements [i0, r1) of a root's run (element i at
 * ps[i - o]) into out, each row's bias bb[i] added first: pair (i, i + 1)
 * turns by angle (i % head_size) / 2, a head at a time. */
static void emu_rope_bias(const tsr_kstate *st, uint32_t it, const float *ps, uint32_t o,
                          const float *bb, float *out, uint32_t i0, uint32_t r1)
{
    for (uint32_t i = i0; i < r1;) {
        uint32_t h0 = i - i % st->hs, n = (h0 + st->hs < r1 ? h0 + st->hs : r1) - i;
        const float *fc = &st->rope_cos[it][(i - h0) / 2u];
        const float *fs = &st->rope_sin[it][(i - h0) / 2u];
        const float *v = ps + (i - o), *b = bb + i;
        float *y = out + i;
        for (uint32_t q = 0; q < n / 2u; q++) {
            float v0 = v[2u * q] + b[2u * q], v1 = v[2u * q + 1u] + b[2u * q + 1u];
            y[2u * q] = v0 * fc[q] - v1 * fs[q];
            y[2u * q + 1u] = v0 * fs[q] + v1 * fc[q];
        }
        i += n;
    }
}

/* The same without biases (RoPE a head at a time: pair (i, i + 1) turns by
 * angle (i % head_size) / 2, i even: words are whole). */
static void emu_rope(const tsr_kstate *st, uint32_t it, const float *ps, uint32_t o, float *out,
                     uint32_t i0, uint32_t r1)
{
    for (uint32_t i = i0; i < r1;) {
        uint32_t h0 = i - i % st->hs, n = (h0 + st->hs < r1 ? h0 + st->hs : r1) - i;
        const float *fc = &st->rope_cos[it][(i - h0) / 2u];
        const float *fs = &st->rope_sin[it][(i - h0) / 2u];
        const float *v = ps + (i - o);
        float *y = out + i;
        for (uint32_t q = 0; q < n / 2u; q++) {
            float v0 = v[2u * q], v1 = v[2u * q + 1u];
            y[2u * q] = v0 * fc[q] - v1 * fs[q];
            y[2u * q + 1u] = v0 * fs[q] + v1 * fc[q];
        }
        i += n;
    }
}

/* After the gather's values (out, nout words): the sum-of-squares partials
 * of a residual add (element i into partial i % TSR_SUM_LANES, ascending),
 * each word's max |v| for the next GEMV's input. */
static void emu_gather_tail(tsr_kstate *st, uint32_t it, const float *out, uint32_t nout,
                            uint32_t add, uint32_t input)
{
#if TSR_SSQ_FUSED
    if (add) {
        float ssq[TSR_SUM_LANES] = { 0.0f };
        for (uint32_t b = 0; b < nout; b += TSR_SUM_LANES) {
            uint32_t n = nout - b < TSR_SUM_LANES ? nout - b : TSR_SUM_LANES;
            for (uint32_t j = 0; j < n; j++) ssq[j] += out[b + j] * out[b + j];
        }
        memcpy(st->ssq[it], ssq, sizeof ssq);
        st->ssq_fresh[it] = 1;
    }
#endif
    if (input) {
        for (uint32_t w = 0; w * TSR_VEC < nout; w++) {
            float m = 0.0f;
            for (uint32_t l = 0; l < TSR_VEC && w * TSR_VEC + l < nout; l++) {
                float a = fabsf(out[w * TSR_VEC + l]);
                m = a > m ? a : m;
            }
            st->wmax[it][w] = m;
        }
    }
#if !TSR_SSQ_FUSED
    (void)add;
#endif
}

void tsr_emu_gather(tsr_kstate *st, uint32_t mat, uint32_t it, uint32_t yw, uint32_t flags)
{
    uint32_t d = st->mat_d[mat], nout = tsr_gather_words(st, d, flags);
    uint32_t rope_n = flags & TSR_GATHER_QKV ? st->cfg.dim + st->kv_dim : 0u;
    uint32_t add = flags & TSR_GATHER_ADD, input = flags & TSR_GATHER_INPUT;
    uint32_t qkv = flags & TSR_GATHER_QKV, lg = flags & TSR_GATHER_LOGITS;
    float *out = lg ? st->logits[it] : &st->cv[it][yw * TSR_VEC];
    uint32_t dwd = (d + TSR_VEC - 1u) / TSR_VEC;   /* the words that hold rows */
    for (uint32_t w = 0, k = 0; w < dwd; k++) {
        /* root k's words [w, we): its psum from word start */
        uint32_t src = st->root_pe[mat][k], start = st->root_w0[mat][k], end = st->root_w1[mat][k];
        uint32_t we = end > w ? (end < dwd ? end : dwd) : w + 1u;
        uint32_t i0 = w * TSR_VEC, i1 = we * TSR_VEC < d ? we * TSR_VEC : d;
        /* element i at ps[i - o] (i >= o): the root's psum from word
         * start; the loops below index from their own first element, so
         * that the host compiler vectorizes them (an unsigned i - o in the
         * index it does not) */
        const float *ps = &st->psum[src][it][0];
        uint32_t o = start * TSR_VEC;
        if (qkv && st->cfg.qkv_bias) {
            /* the same with each row's bias added first (before RoPE) */
            const float *bb = st->qkvb[(mat - 1u) / TSR_W_COUNT];
            uint32_t r1 = rope_n < i1 ? (rope_n > i0 ? rope_n : i0) : i1;
            emu_rope_bias(st, it, ps, o, bb, out, i0, r1);
            const float *v = ps + (r1 - o), *b = bb + r1;
            float *y = out + r1;
            for (uint32_t e = 0; e < i1 - r1; e++) y[e] = v[e] + b[e];
        } else if (qkv) {
            uint32_t r1 = rope_n < i1 ? (rope_n > i0 ? rope_n : i0) : i1;   /* pairs below rope_n */
            emu_rope(st, it, ps, o, out, i0, r1);
            const float *v = ps + (r1 - o);
            float *y = out + r1;
            for (uint32_t e = 0; e < i1 - r1; e++) y[e] = v[e];
        } else {
            const float *v = ps + (i0 - o);
            float *y = out + i0;
            if (add)
                for (uint32_t e = 0; e < i1 - i0; e++) y[e] = y[e] + v[e];
            else
                for (uint32_t e = 0; e < i1 - i0; e++) y[e] = v[e];
        }
        w = we;
    }
    for (uint32_t i = d; i < nout; i++) out[i] = 0.0f;   /* the next GEMV's group padding */
    emu_gather_tail(st, it, out, nout, add, input);
}

/* What the QKV gather latches word by word into attention PE p's copy
 * (mesh.c), as far as it reads it: its heads' q slices, and this
 * position's k, v if p stores it. */
void tsr_emu_latch_pe(tsr_kstate *st, uint32_t p, uint32_t it, uint32_t pos)
{
    uint32_t dim = st->cfg.dim, kvd = st->kv_dim, hs = st->hs, qg = st->kv_mul * hs;
    const float *qkv = st->cv[it] + TSR_CV_QKV;
    uint32_t h0 = st->kv_h0[p], nh = st->kv_nh[p];
    float *w = &st->qkvw[p][0][0];
    if (nh == 0) return;
    for (uint32_t i = h0 * qg; i < (h0 + nh) * qg; i++) w[i] = qkv[i];
    if (st->kv_q[p] != (pos & (st->cfg.kv_split - 1u))) return;
    for (uint32_t i = dim + h0 * hs; i < dim + (h0 + nh) * hs; i++) {
        w[i] = qkv[i];
        w[kvd + i] = qkv[kvd + i];
    }
}

void tsr_emu_latch_qkv(tsr_kstate *st, uint32_t it, uint32_t pos)
{
    for (uint32_t p = 0; p < st->cfg.att_pes; p++) tsr_emu_latch_pe(st, p, it, pos);
}

void tsr_emu_gather_latch(tsr_kstate *st, uint32_t mat, uint32_t it, uint32_t yw, uint32_t flags,
                          uint32_t pos)
{
    tsr_emu_gather(st, mat, it, yw, flags);
    if (flags & TSR_GATHER_QKV) tsr_emu_latch_qkv(st, it, pos);
}

/* ------------------------------------------------------------------------ */
/* Attention                                                                  */

void tsr_emu_att_mac_kvt(uint32_t kvt, const float *kv, const uint16_t *kvh, const int8_t *kvq,
                         uint32_t base, uint32_t stride, uint32_t step, const float *s, uint32_t no,
                         uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
    if (kvt == TSR_KV_F16)
        tsr_emu_att_mac_f16(kvh + base, stride, step, s, no, nj, parts, acc, acc_stride);
    else if (kvt == TSR_KV_INT8)
        tsr_emu_att_mac_i8(kvq + base, stride, step, s, no, nj, parts, acc, acc_stride);
    else
        tsr_emu_att_mac(kv + base, stride, step, s, no, nj, parts, acc, acc_stride);
}

void tsr_emu_f16_store(uint16_t *kvh, const float *k, const float *v, uint32_t ka, uint32_t tl,
                       uint32_t va, uint32_t n)
{
    uint16_t kh[TSR_MAX_HEAD_SIZE], vh[TSR_MAX_HEAD_SIZE];
    tsr_emu_f16_encode(k, kh, n);
    tsr_emu_f16_encode(v, vh, n);
    for (uint32_t i = 0; i < n; i++) {
        kvh[(size_t)(ka + i) * TSR_ATT_LANES + tl] = kh[i];
        kvh[(size_t)va * TSR_ATT_LANES + i] = vh[i];
    }
}
