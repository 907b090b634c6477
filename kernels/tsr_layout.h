/*
 * tsr_layout.h - where every weight and KV entry lives on the mesh: the one
 * source of truth shared by the kernel (addressing) and the driver's weight
 * image builder (driver/weight_image.c).
 *
 * Mesh: P = R x C PEs, PE p = (r, c) with r = p / C, c = p % C.
 *
 * Matrix m (d rows, n cols), groups of G columns, ng = ceil(n / G):
 *   PE (r, c) holds rows [r*d/R, (r+1)*d/R) x groups [c*ng/C, (c+1)*ng/C),
 *   each tile row padded with zeros to whole groups (hidden 172, G 32: the
 *   sixth group of a w2 row holds 12 values and 20 zeros).  F32 mode tiles
 *   alike (the same G-column chunks), so both modes share this arithmetic.
 *   Q8_0: int8 values (rows, ngroups*G) in the PE's int8 array, scales
 *   (rows, ngroups) in its fp32 array.  F32: values (rows, ngroups*G) in the
 *   fp32 array.  Matrices follow each other in matrix order in each array.
 *
 * Matrix order: 0 tok_embedding (vocab, dim); then per layer l the seven
 * TSR_MAT_LAYER(l, TSR_W_*) (wq wk wv wo w1 w2 w3); then wcls (vocab, dim)
 * unless the classifier is shared (then wcls is matrix 0).
 *
 * KV cache: unit u = l * n_kv_heads + h (layer l, kv head h) lives on PE
 * u % P as that PE's local unit u / P.  A PE's fp32 array holds, after its
 * weights, for each slot s and local unit j: K (seq_len, head_size) then
 * V (seq_len, head_size).
 *
 * Controller fp32 region: rms_att (n_layers, dim), rms_ffn (n_layers, dim),
 * rms_final (dim,).
 */
#ifndef TSR_LAYOUT_H
#define TSR_LAYOUT_H

#include <stdint.h>

#include "tsr_profile.h"

/* Weight element types on the device. */
enum { TSR_KDT_Q8 = 0, TSR_KDT_F32 = 1 };

#define TSR_KCONFIG_MAGIC 0x74737231u /* "tsr1" */

/* The CONFIGURE block (16 words, sent as the command's `in`). */
typedef struct tsr_kconfig {
    uint32_t magic;             /* TSR_KCONFIG_MAGIC                        */
    uint32_t dim;
    uint32_t hidden_dim;
    uint32_t n_layers;
    uint32_t n_heads;
    uint32_t n_kv_heads;
    uint32_t vocab_size;
    uint32_t seq_len;           /* KV positions per slot                    */
    uint32_t n_slots;
    uint32_t dtype;             /* TSR_KDT_Q8 or TSR_KDT_F32                */
    uint32_t group;             /* G, columns per group (both modes)        */
    uint32_t mesh_rows;         /* R                                        */
    uint32_t mesh_cols;         /* C, a power of two                        */
    uint32_t shared_classifier; /* 1: wcls is tok_embedding                 */
    float    rope_theta;
    float    norm_eps;
} tsr_kconfig;

#define TSR_KCONFIG_WORDS 16

/* Per-layer matrices, in matrix order. */
enum { TSR_W_Q = 0, TSR_W_K, TSR_W_V, TSR_W_O, TSR_W_1, TSR_W_2, TSR_W_3, TSR_W_COUNT };
#define TSR_MAT_EMB 0u
#define TSR_MAT_LAYER(l, k) (1u + 7u * (uint32_t)(l) + (uint32_t)(k))

/* One PE's tile of a matrix: rows [row0, row0+rows), groups [g0, g0+ngroups). */
typedef struct tsr_tile {
    uint32_t row0, rows;
    uint32_t g0, ngroups;
} tsr_tile;

/* ceil(a / b), b > 0. */
static inline uint32_t tsr_cdiv(uint32_t a, uint32_t b) { return (a + b - 1u) / b; }

/* The Q8_0 rounding step, (int32) roundf(v) (half away from zero), for
 * |v| <= 2^22, without a libm call so the quantizer loops vectorize.
 * Truncate, then step away from zero when the dropped fraction is >= 1/2;
 * v - (float)t is exact in fp32 (Sterbenz), so this equals roundf: checked
 * for every float with |v| <= 200 (the quantizer's range is |v| <= 127). */
static inline int32_t tsr_round_q8(float v)
{
    int32_t t = (int32_t)v;
    float f = v - (float)t;
    return t + (f >= 0.5f) - (f <= -0.5f);
}

static inline uint32_t tsr_lay_head_size(const tsr_kconfig *c) { return c->dim / c->n_heads; }
static inline uint32_t tsr_lay_kv_dim(const tsr_kconfig *c)
{
    return c->n_kv_heads * tsr_lay_head_size(c);
}
static inline uint32_t tsr_lay_pes(const tsr_kconfig *c) { return c->mesh_rows * c->mesh_cols; }

/* Number of weight matrices stored. */
static inline uint32_t tsr_lay_n_mats(const tsr_kconfig *c)
{
    return 1u + 7u * c->n_layers + (c->shared_classifier ? 0u : 1u);
}

/* Matrix id of the classifier. */
static inline uint32_t tsr_lay_mat_wcls(const tsr_kconfig *c)
{
    return c->shared_classifier ? TSR_MAT_EMB : 1u + 7u * c->n_layers;
}

/* Shape of matrix m: d rows (outputs), n cols (inputs). */
static inline void tsr_lay_mat_shape(const tsr_kconfig *c, uint32_t m, uint32_t *d, uint32_t *n)
{
    uint32_t kv_dim = tsr_lay_kv_dim(c);
    if (m == TSR_MAT_EMB || m == 1u + 7u * c->n_layers) { *d = c->vocab_size; *n = c->dim; return; }
    switch ((m - 1u) % 7u) {
    case TSR_W_Q: case TSR_W_O: *d = c->dim;        *n = c->dim;        break;
    case TSR_W_K: case TSR_W_V: *d = kv_dim;        *n = c->dim;        break;
    case TSR_W_2:               *d = c->dim;        *n = c->hidden_dim; break;
    default:                    *d = c->hidden_dim; *n = c->dim;        break; /* w1, w3 */
    }
}

/* PE pe's tile of a (d, n) matrix. */
static inline tsr_tile tsr_lay_tile(const tsr_kconfig *c, uint32_t d, uint32_t n, uint32_t pe)
{
    uint32_t R = c->mesh_rows, C = c->mesh_cols;
    uint32_t r = pe / C, cc = pe % C;
    uint32_t ng = tsr_cdiv(n, c->group);
    tsr_tile t;
    t.row0 = r * d / R;
    t.rows = (r + 1u) * d / R - t.row0;
    t.g0 = cc * ng / C;
    t.ngroups = (cc + 1u) * ng / C - t.g0;
    return t;
}

/* Bytes a tile takes in the PE's int8 array (0 in F32 mode). */
static inline uint32_t tsr_lay_tile_i8(const tsr_kconfig *c, tsr_tile t)
{
    return c->dtype == TSR_KDT_Q8 ? t.rows * t.ngroups * c->group : 0u;
}

/* Words a tile takes in the PE's fp32 array: scales (Q8) or values (F32). */
static inline uint32_t tsr_lay_tile_f32(const tsr_kconfig *c, tsr_tile t)
{
    return c->dtype == TSR_KDT_Q8 ? t.rows * t.ngroups : t.rows * t.ngroups * c->group;
}

/* KV unit of (layer l, kv head h): u = l * n_kv_heads + h.  It lives on PE
 * tsr_lay_kv_pe(u % P), as that PE's (u / P)-th unit, so a layer's kv heads
 * sit on distinct PEs (when n_kv_heads <= P) and run in parallel. */
static inline uint32_t tsr_lay_kv_unit(const tsr_kconfig *c, uint32_t l, uint32_t h)
{
    return l * c->n_kv_heads + h;
}

/* The PE of KV slot q = u % P: q bit-reversed when P is a power of two (q
 * itself otherwise).  A layer's units have consecutive q; bit reversal
 * spreads them evenly over the mesh instead of packing them into one
 * corner, so every half, quarter, ... of the PEs (every worker's block in
 * the emulator) gets its share.  An involution: it also maps PE -> q. */
static inline uint32_t tsr_lay_kv_pe(const tsr_kconfig *c, uint32_t q)
{
    uint32_t P = tsr_lay_pes(c), r = 0;
    if (P & (P - 1u)) return q;
    for (uint32_t b = 1; b < P; b <<= 1) {
#ifdef __SYNTHESIS__ /* driver/ includes this header too: keep its -Wall quiet */
#pragma HLS LOOP_TRIPCOUNT min=0 max=8
#endif
        r = (r << 1) | (q & 1u);
        q >>= 1;
    }
    return r;
}

/* KV units stored on PE pe: those with u % P == tsr_lay_kv_pe(pe). */
static inline uint32_t tsr_lay_kv_units(const tsr_kconfig *c, uint32_t pe)
{
    uint32_t U = c->n_layers * c->n_kv_heads, P = tsr_lay_pes(c), q = tsr_lay_kv_pe(c, pe);
    return q < U ? (U - q + P - 1u) / P : 0u;
}

/* Words of one K or V block (one unit, one slot). */
static inline uint32_t tsr_lay_kv_block(const tsr_kconfig *c)
{
    return c->seq_len * tsr_lay_head_size(c);
}

/* KV words on PE pe, all slots (64-bit: callers check it against the
 * profile before anything is stored in 32-bit offsets). */
static inline uint64_t tsr_lay_kv_words(const tsr_kconfig *c, uint32_t pe)
{
    return (uint64_t)tsr_lay_kv_units(c, pe) * c->n_slots * 2u * tsr_lay_kv_block(c);
}

/* Controller fp32 words (norm weights). */
static inline uint32_t tsr_lay_ctrl_words(const tsr_kconfig *c)
{
    return (2u * c->n_layers + 1u) * c->dim;
}

/* Weight footprint of PE pe: int8 bytes and fp32 words over all matrices
 * (64-bit, as tsr_lay_kv_words). */
static inline void tsr_lay_pe_weights(const tsr_kconfig *c, uint32_t pe, uint64_t *i8_bytes,
                                      uint64_t *f32_words)
{
    uint32_t nm = tsr_lay_n_mats(c);
    uint64_t b = 0, w = 0;
    for (uint32_t m = 0; m < nm; m++) {
#ifdef __SYNTHESIS__ /* driver/ includes this header too: keep its -Wall quiet */
#pragma HLS LOOP_TRIPCOUNT min=8 max=TSR_MAX_MATS
#endif
        uint32_t d, n;
        tsr_lay_mat_shape(c, m, &d, &n);
        tsr_tile t = tsr_lay_tile(c, d, n, pe);
        b += tsr_lay_tile_i8(c, t);
        w += tsr_lay_tile_f32(c, t);
    }
    *i8_bytes = b;
    *f32_words = w;
}

#endif
