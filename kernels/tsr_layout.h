/*
 * tsr_layout.h - where every weight and KV entry lives on the mesh: the one
 * source of truth shared by the kernel (CONFIGURE builds its tables from
 * it), the driver's weight image builder (driver/weight_image.c) and the
 * planner (driver/plan.c).
 *
 * Mesh: P = R x C PEs, PE p = (r, c) with r = p / C, c = p % C.
 *
 * Matrices, in matrix order: 0 tok_embedding (vocab, dim); per layer l the
 * four TSR_MAT_LAYER(l, TSR_W_*): QKV = [wq; wk; wv] stacked (dim + 2
 * kv_dim, dim), WO (dim, dim), W13 = w1 and w3 as a pair (hidden, dim
 * each), W2 (dim, hidden); then wcls (vocab, dim) unless the classifier is
 * shared (then it is matrix 0).
 *
 * A matrix (d rows, n cols) in units of TSR_VEC rows, U = ceil(d / VEC),
 * and groups of G columns, ng = ceil(n / G), is split over its own C_m
 * columns (tsr_lay_mat_cols: a power of two up to the mesh's C, the one
 * with the fewest cycles) and R_m = P / C_m rows; PE p is (r, c) = (p /
 * C_m, p % C_m) for that matrix:
 *   column c holds groups [c*ng/C_m, (c+1)*ng/C_m);
 *   row r holds q = U / R_m units, the first U mod R_m rows (counted from
 *   rot_m) one more: k = (r - rot_m) mod R_m takes units [k*q + min(k, e),
 *   ...), e = U mod R_m, rot_m = (rot / C_m) mod R_m, where rot, the
 *   matrix's rotation, counts the PEs' worth of units (units x C_m) of all
 *   matrices before it, mod P: the matrices fill the PEs round robin, so
 *   small ones (U < R_m) and the extra units of large ones land on
 *   different PEs instead of all on the same few.  A large matrix (the classifier) takes C_m = 1, a
 *   small one (W2 of a small model) spreads its columns to keep every PE
 *   busy.
 * A W13 tile holds the same rows of w1 and of w3 (its PE applies SwiGLU).
 * Tile rows come in blocks of TSR_ROW_SLOTS; the last block of a tile may
 * be short ("tail").  A tile's entries, in memory order: for each block b,
 * for each group g, for each row j of the block: one group of weights and
 * its fp32 scale (Q8_0, Q4_0); or for each column, for each row j: one
 * fp32 value (F32).  That is the order a PE's pipeline reads them in:
 * consecutive cycles work on different rows, so each row's fp32
 * accumulator is touched once every TSR_ROW_SLOTS cycles.  Groups past n
 * are zero padded.  Each tile starts on a TSR_LANES-byte word in the PE's
 * int8 array, matrices in matrix order.  (The emulator, on a CPU with
 * AVX-512 VNNI, keeps the full blocks of Q8_0 tiles at G = 32 in its own
 * arrangement inside the same bytes, emu/tsr_emu.h; LOAD and READ_MEM
 * still take and give this layout.)
 *
 * Weight formats, per kind of matrix (TSR_KIND_*: the embedding, QKV, WO,
 * W13, W2, an unshared classifier), in the quantized mode (dtype Q8):
 *   Q8_0  an entry is G int8 values (G bytes; G >= TSR_LANES: G /
 *         TSR_LANES whole words, smaller: several entries a word);
 *   Q4_0  (kinds in q4_kinds; G must be TSR_Q4_GROUP = 32 = TSR_LANES) an
 *         entry is 16 bytes, GGUF's block_q4_0 without its scale: byte i
 *         holds element i in its low nibble and element i + 16 in its high
 *         one, each as value + 8 (0..15, so 8 is zero; padding is 8).  A
 *         32-byte word holds two consecutive entries, the first in bytes
 *         0..15: entry e of the array is word e / 2, half e % 2.  The PE
 *         reads one word a cycle and uses one half of it: one group of 32
 *         int4 x int8 MACs a cycle, as Q8_0 at G = 32 (the same pipeline
 *         steps and cycles), in half the bytes.
 * The scale of an entry is the fp32 array's, one per entry in both
 * formats (GGUF's fp16 scales widened exactly).
 *
 * KV cache: the A = att_pes PEs that have attention datapaths form A / Q
 * groups of Q = kv_split PEs (A a multiple of Q); group g holds the KV
 * heads [g * H / (A/Q), (g + 1) * H / (A/Q)) of every layer (H =
 * n_kv_heads; with Q > 1 at most one head a group), position t on the
 * group's PE t % Q, at local index t / Q (seq_local = ceil(seq_len / Q)
 * per PE).  Per PE, for each slot s, layer l and head j of its heads:
 * K^T (head_size, S) in position tiles, then V (S, head_size), S =
 * seq_words (seq_local rounded up to whole words), in words of L =
 * TSR_ATT_LANES elements: K^T's word w * head_size + d holds row d's
 * positions [w L, w L + L), so the first t positions of every row are the
 * first ceil(t / L) tiles, one contiguous run; V starts head_size * S / L
 * words into the block, and its word t * head_size / L + i holds position
 * t's elements [i L, i L + L).  The array is that of the configured precision
 * (kv_dtype): fp32 (kv), IEEE half
 * (kvh) or int8 (kvq).  int8 adds one fp32 scale per head vector per
 * position (kvs): per block, the K scales (seq_local) then the V scales,
 * scale = max |v| / 127, q = round(v / scale) (half away from zero).
 *
 * Controller fp32 region: rms_att (n_layers, dim), rms_ffn (n_layers, dim),
 * rms_final (dim,); RoPE's frequencies (head_size / 2,), the host's
 * (theta^(-2j / head_size), Llama 3's scaled ones); with qkv_bias the q | k
 * | v biases (n_layers, dim + 2 kv_dim), in the on-chip row order (q and k
 * rows permuted per head for NEOX RoPE, as the QKV matrix's).
 */
#ifndef TSR_LAYOUT_H
#define TSR_LAYOUT_H

#include <stdint.h>

#include "tsr_arch.h"
#include "tsr_profile.h"

/* Weight element types on the device: quantized (Q8_0 tiles, and Q4_0
 * tiles for the kinds in q4_kinds), or F32 (validation). */
enum { TSR_KDT_Q8 = 0, TSR_KDT_F32 = 1 };

/* Kinds of weight matrix (each a bit of q4_kinds). */
enum { TSR_KIND_EMB = 0, TSR_KIND_QKV, TSR_KIND_WO, TSR_KIND_W13, TSR_KIND_W2, TSR_KIND_CLS,
       TSR_KIND_COUNT };
#define TSR_KINDS_ALL ((1u << TSR_KIND_COUNT) - 1u)

/* Q4_0 (GGUF block_q4_0): 32 values a group, 16 bytes of nibbles. */
#define TSR_Q4_GROUP       32u
#define TSR_Q4_ENTRY_BYTES 16u
#define TSR_Q4_ENTRY_LOG2  4u   /* log2 TSR_Q4_ENTRY_BYTES */

/* KV cache precisions (kv_dtype). */
enum { TSR_KV_F32 = 0, TSR_KV_F16 = 1, TSR_KV_INT8 = 2, TSR_KV_COUNT };

#define TSR_KCONFIG_MAGIC 0x74737235u /* "tsr5" */

/* The CONFIGURE block: TSR_KCONFIG_INTS uint32 words, then 2 fp32 words. */
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
    uint32_t kv_split;          /* Q: PEs one KV head's positions spread over */
    uint32_t att_pes;           /* PEs [0, att_pes) hold the KV cache (and
                                   have attention datapaths)              */
    uint32_t q4_kinds;          /* bit k: matrices of kind k (TSR_KIND_*)
                                   are Q4_0 tiles (dtype Q8, group 32)    */
    uint32_t kv_dtype;          /* TSR_KV_F32, TSR_KV_F16 or TSR_KV_INT8   */
    uint32_t bos, eos;          /* DECODE stops after either (the model's
                                   special tokens), unless told not to    */
    uint32_t qkv_bias;          /* 1: the QKV gather adds a bias per row
                                   (qwen2), from the controller region    */
    uint32_t stage;             /* pipeline stage (TSR_STAGE_* bits; 0: the
                                   whole model on this device): its
                                   n_layers are the model's layers
                                   [l0, l0 + n_layers) of another split  */
    float    rope_theta;
    float    norm_eps;
} tsr_kconfig;

#define TSR_KCONFIG_INTS  22
#define TSR_KCONFIG_WORDS 24

/* Pipeline stages (kconfig.stage): a model split over devices, contiguous
 * layers each.  A stage with LINK_IN is not the first: instead of the
 * embedding lookup, a pass takes each item's residual vector (dim fp32)
 * from its link-in port.  A stage with LINK_OUT is not the last: instead of
 * the final norm, the classifier and the sampler, a pass ends by sending
 * each item's residual vector to its link-out port.  A stage holds the
 * embedding matrix when it embeds, or when it is the last and the
 * classifier is shared; wcls (unshared) only on the last.  A matrix it
 * does not hold keeps its place in the matrix order with no rows. */
#define TSR_STAGE_LINK_IN  1u
#define TSR_STAGE_LINK_OUT 2u
#define TSR_STAGE_ALL      3u

/* The TSR_STAGE_* bits of a stage: first (no link-in) and last (no
 * link-out) of a split; first and last: the whole model, 0. */
static inline uint32_t tsr_lay_stage(int first, int last)
{
    return (first ? 0u : TSR_STAGE_LINK_IN) | (last ? 0u : TSR_STAGE_LINK_OUT);
}

/* 1: matrix 0's rows (the embedding, or the shared classifier) are held. */
static inline uint32_t tsr_lay_holds_emb(const tsr_kconfig *c)
{
    return !(c->stage & TSR_STAGE_LINK_IN) ||
           (!(c->stage & TSR_STAGE_LINK_OUT) && c->shared_classifier);
}
/* 1: the stage runs the final norm, classifier and sampler (the last). */
static inline uint32_t tsr_lay_holds_head(const tsr_kconfig *c)
{
    return !(c->stage & TSR_STAGE_LINK_OUT);
}

/* Per-layer matrices, in matrix order. */
enum { TSR_W_QKV = 0, TSR_W_O, TSR_W_13, TSR_W_2, TSR_W_COUNT };
#define TSR_MAT_EMB 0u
#define TSR_MAT_LAYER(l, k) (1u + (uint32_t)TSR_W_COUNT * (uint32_t)(l) + (uint32_t)(k))

/* One PE's tile of a matrix: rows [row0, row0 + rows) (of w1 and of w3 for
 * W13), groups [g0, g0 + ngroups), and where it starts in the PE's arrays. */
typedef struct tsr_tile {
    uint32_t row0, rows;
    uint32_t g0, ngroups;
    uint32_t w_off;    /* Q8: first byte in the int8 array (word aligned)   */
    uint32_t f_off;    /* Q8: first scale; F32: first value, fp32 array     */
    uint32_t pair;     /* 1: a W13 tile (w1 rows, then the same w3 rows)    */
    uint32_t cols;     /* C_m: the columns the matrix is split over         */
    uint32_t q4;       /* 1: Q4_0 entries (16 bytes), else Q8_0 (G bytes)   */
} tsr_tile;

/* ceil(a / b), b > 0. */
static inline uint32_t tsr_cdiv(uint32_t a, uint32_t b) { return (a + b - 1u) / b; }

/* The Q8_0 rounding step, (int32) roundf(v) (half away from zero), without
 * a libm call.  GCC 12 does not vectorize loops over it (the clamp's
 * selects: "control flow in loop"), so the emulator's input quantizer has
 * its own AVX-512 loop, emu/quant.c, bit for bit this.  The quantizer's values are
 * v = x / (max |x| / 127): |v| <= 127 up to rounding, or up to about 190
 * in a group whose max is subnormal (the scale rounds coarsely; the
 * callers' int8 cast then wraps, as runq.c's cast does with GCC on
 * x86-64).  So that no conversion is undefined (C11 6.3.1.4) when
 * activations overflowed (an inf scale makes v NaN or 0), |v| is clamped
 * to 2^31 - 128, the largest float below 2^31, and a NaN gives 0; every
 * finite v below that keeps its result.  Then truncate, and step away
 * from zero when the dropped fraction is >= 1/2; v - (float)t is exact in
 * fp32 (Sterbenz), so this equals roundf (test_kernel_ops
 * round_q8_is_roundf). */
static inline int32_t tsr_round_q8(float v)
{
    v = v > 2147483520.0f ? 2147483520.0f : v;
    v = v < -2147483520.0f ? -2147483520.0f : v;
    v = v == v ? v : 0.0f;   /* NaN */
    int32_t t = (int32_t)v;
    float f = v - (float)t;
    return t + (f >= 0.5f) - (f <= -0.5f);
}

static inline uint32_t tsr_lay_head_size(const tsr_kconfig *c) { return c->dim / c->n_heads; }
static inline uint32_t tsr_lay_kv_dim(const tsr_kconfig *c)
{
    return c->n_kv_heads * tsr_lay_head_size(c);
}
static inline uint32_t tsr_lay_kv_mul(const tsr_kconfig *c) { return c->n_heads / c->n_kv_heads; }
static inline uint32_t tsr_lay_pes(const tsr_kconfig *c) { return c->mesh_rows * c->mesh_cols; }

/* Number of weight matrices stored. */
static inline uint32_t tsr_lay_n_mats(const tsr_kconfig *c)
{
    return 1u + (uint32_t)TSR_W_COUNT * c->n_layers + (c->shared_classifier ? 0u : 1u);
}

/* Matrix id of the classifier. */
static inline uint32_t tsr_lay_mat_wcls(const tsr_kconfig *c)
{
    return c->shared_classifier ? TSR_MAT_EMB : 1u + (uint32_t)TSR_W_COUNT * c->n_layers;
}

/* Shape of matrix m: d rows (outputs; per half for W13), n cols (inputs);
 * *pair = 1 for W13. */
static inline void tsr_lay_mat_shape(const tsr_kconfig *c, uint32_t m, uint32_t *d, uint32_t *n,
                                     uint32_t *pair)
{
    *pair = 0;
    if (m == TSR_MAT_EMB || m == 1u + (uint32_t)TSR_W_COUNT * c->n_layers) {
        /* a stage that does not hold it: no rows (tsr_lay_holds_emb) */
        *d = (m == TSR_MAT_EMB ? tsr_lay_holds_emb(c) : tsr_lay_holds_head(c)) ? c->vocab_size : 0u;
        *n = c->dim;
        return;
    }
    switch ((m - 1u) % (uint32_t)TSR_W_COUNT) {
    case TSR_W_QKV: *d = c->dim + 2u * tsr_lay_kv_dim(c); *n = c->dim;        break;
    case TSR_W_O:   *d = c->dim;                           *n = c->dim;        break;
    case TSR_W_13:  *d = c->hidden_dim;                    *n = c->dim; *pair = 1; break;
    default:        *d = c->dim;                           *n = c->hidden_dim; break; /* W2 */
    }
}

/* The kind (TSR_KIND_*) of matrix m: a shared classifier is the
 * embedding. */
static inline uint32_t tsr_lay_mat_kind(const tsr_kconfig *c, uint32_t m)
{
    if (m == TSR_MAT_EMB) return TSR_KIND_EMB;
    if (m == 1u + (uint32_t)TSR_W_COUNT * c->n_layers) return TSR_KIND_CLS;
    return 1u + (m - 1u) % (uint32_t)TSR_W_COUNT;
}

/* 1 when matrix m is held as Q4_0 tiles. */
static inline uint32_t tsr_lay_mat_q4(const tsr_kconfig *c, uint32_t m)
{
    return c->dtype == TSR_KDT_Q8 && ((c->q4_kinds >> tsr_lay_mat_kind(c, m)) & 1u) ? 1u : 0u;
}

/* Units (TSR_VEC rows) of matrix m. */
static inline uint32_t tsr_lay_units(const tsr_kconfig *c, uint32_t m)
{
    uint32_t d, n, pair;
    tsr_lay_mat_shape(c, m, &d, &n, &pair);
    return tsr_cdiv(d, TSR_VEC);
}

/* Pipeline steps of one (sub-)tile of rows x ngroups in the PE GEMV: every
 * block pays TSR_ROW_SLOTS slots (a short tail block idles the rest), Q8
 * takes one TSR_LANES-chunk of a group per step (G / TSR_LANES steps a
 * group when G > TSR_LANES, one when smaller; Q4_0, G = 32, one), F32 one
 * column per step. */
static inline uint32_t tsr_lay_tile_steps(const tsr_kconfig *c, uint32_t rows, uint32_t ngroups)
{
    uint32_t nb = tsr_cdiv(rows, TSR_ROW_SLOTS);
    uint32_t per = c->dtype == TSR_KDT_Q8 ? (c->group > TSR_LANES ? c->group / TSR_LANES : 1u)
                                          : c->group;
    return nb * ngroups * TSR_ROW_SLOTS * per;
}

/* The columns C_m matrix m is split over: of the powers of two up to the
 * mesh's C (and up to its groups), the one whose fullest PE finishes
 * first -- its tile (tsr_cycles.h tsr_cy_tile) plus the log2(C_m) levels
 * of the column tree (tsr_cy_tree_level) -- the smaller on ties.  A
 * function of the config alone: the kernel, the image builder and the
 * planner agree. */
static inline uint32_t tsr_lay_mat_cols(const tsr_kconfig *c, uint32_t m)
{
    uint32_t d, n, pair;
    tsr_lay_mat_shape(c, m, &d, &n, &pair);
    uint32_t P = c->mesh_rows * c->mesh_cols, U = tsr_cdiv(d, TSR_VEC), ng = tsr_cdiv(n, c->group);
    uint32_t halves = pair ? 2u : 1u, best = 1, best_cy = 0xFFFFFFFFu, levels = 0;
    for (uint32_t C = 1; C <= c->mesh_cols && C <= ng; C *= 2u) {
#ifdef __SYNTHESIS__
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_TREE_LEVELS
#endif
        uint32_t rows = tsr_cdiv(U, P / C) * TSR_VEC;
        if (rows > d) rows = d;
        uint32_t cy = halves * (tsr_lay_tile_steps(c, rows, tsr_cdiv(ng, C)) + TSR_D_GEMV) +
                      levels * (tsr_cdiv(halves * rows, TSR_TREE_LANES) + TSR_D_TREE);
        if (cy < best_cy) {
            best = C;
            best_cy = cy;
        }
        levels++;
    }
    return best;
}

/* The rotation (in PEs) after matrix m, given the one before it. */
static inline uint32_t tsr_lay_rot_next(const tsr_kconfig *c, uint32_t m, uint32_t rot)
{
    return (rot + tsr_lay_units(c, m) * tsr_lay_mat_cols(c, m)) % (c->mesh_rows * c->mesh_cols);
}

/* The rotation of matrix m. */
static inline uint32_t tsr_lay_rot(const tsr_kconfig *c, uint32_t m)
{
    uint32_t s = 0;
    for (uint32_t k = 0; k < m; k++) {
#ifdef __SYNTHESIS__ /* driver/ includes this header too: keep its -Wall quiet */
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_LIT_MAX_MATS
#endif
        s = tsr_lay_rot_next(c, k, s);
    }
    return s;
}

/* Rows [*row0, *row0 + *rows) of matrix m (rotation rot) on its mesh row r
 * (0 <= r < P / C_m). */
static inline void tsr_lay_row_block(const tsr_kconfig *c, uint32_t m, uint32_t rot, uint32_t r,
                                     uint32_t *row0, uint32_t *rows)
{
    uint32_t d, n, pair;
    tsr_lay_mat_shape(c, m, &d, &n, &pair);
    uint32_t Cm = tsr_lay_mat_cols(c, m), R = c->mesh_rows * c->mesh_cols / Cm;
    uint32_t U = tsr_cdiv(d, TSR_VEC), k = (r + R - (rot / Cm) % R) % R;
    uint32_t q = U / R, e = U % R;   /* rows k < e take q + 1 units, the rest q */
    uint32_t u0 = k * q + (k < e ? k : e), u1 = u0 + q + (k < e ? 1u : 0u);
    uint32_t a = u0 * TSR_VEC < d ? u0 * TSR_VEC : d, b = u1 * TSR_VEC < d ? u1 * TSR_VEC : d;
    *row0 = a;   /* an empty block (past the last unit) sits at d */
    *rows = b - a;
}

/* PE pe's tile of matrix m (offsets not filled: tsr_lay_pe_tiles does). */
static inline tsr_tile tsr_lay_tile(const tsr_kconfig *c, uint32_t m, uint32_t rot, uint32_t pe)
{
    uint32_t d, n, pair, C = tsr_lay_mat_cols(c, m);
    tsr_lay_mat_shape(c, m, &d, &n, &pair);
    uint32_t r = pe / C, cc = pe % C, ng = tsr_cdiv(n, c->group);
    tsr_tile t;
    tsr_lay_row_block(c, m, rot, r, &t.row0, &t.rows);
    t.g0 = cc * ng / C;
    t.ngroups = (cc + 1u) * ng / C - t.g0;
    t.w_off = 0;
    t.f_off = 0;
    t.pair = pair;
    t.cols = C;
    t.q4 = tsr_lay_mat_q4(c, m);
    return t;
}

/* Entries of a tile: (rows, groups), twice for W13. */
static inline uint32_t tsr_lay_tile_entries(tsr_tile t)
{
    return (t.pair ? 2u : 1u) * t.rows * t.ngroups;
}

/* Bytes of one entry in the PE's int8 array: G (Q8_0) or 16 (Q4_0). */
static inline uint32_t tsr_lay_entry_bytes(const tsr_kconfig *c, tsr_tile t)
{
    return t.q4 ? TSR_Q4_ENTRY_BYTES : c->group;
}

/* Bytes a tile takes in the PE's int8 array, whole words (0 in F32). */
static inline uint32_t tsr_lay_tile_w8(const tsr_kconfig *c, tsr_tile t)
{
    if (c->dtype != TSR_KDT_Q8) return 0u;
    return tsr_cdiv(tsr_lay_tile_entries(t) * tsr_lay_entry_bytes(c, t), TSR_LANES) * TSR_LANES;
}

/* Words a tile takes in the PE's fp32 array: scales (Q8) or values (F32). */
static inline uint32_t tsr_lay_tile_f32(const tsr_kconfig *c, tsr_tile t)
{
    return c->dtype == TSR_KDT_Q8 ? tsr_lay_tile_entries(t)
                                  : tsr_lay_tile_entries(t) * c->group;
}

/* Partial sums a tile produces (its psum rows). */
static inline uint32_t tsr_lay_tile_psum(tsr_tile t) { return (t.pair ? 2u : 1u) * t.rows; }

/* ---- SLRs -------------------------------------------------------------- */

/* The first PE of SLR s (0 <= s <= S; s = S gives P) of a compute unit of
 * P PEs in mesh rows of C spanning S SLRs: whole mesh rows, R = P / C of
 * them, R / S an SLR and one more on each of the last R % S (the first
 * SLRs hold the attention PEs, heavier in UltraRAM).  The kernel's
 * TSR_SLR_PE0 (tsr_profile.h) for its own profile; the planner's for
 * any. */
static inline uint32_t tsr_lay_slr_pe0(uint32_t P, uint32_t C, uint32_t S, uint32_t s)
{
    uint32_t R = P / C, q = R / S, e = R % S;
    return (s * q + (s > S - e ? s - (S - e) : 0u)) * C;
}

/* PE p's SLR under tsr_lay_slr_pe0: the crossings between it and the
 * controller (by SLR 0). */
static inline uint32_t tsr_lay_slr_of(uint32_t P, uint32_t C, uint32_t S, uint32_t p)
{
    uint32_t s = 0;
    for (uint32_t k = 1; k < S; k++) {
#ifdef __SYNTHESIS__
#pragma HLS LOOP_TRIPCOUNT min=0 max=3
#endif
        if (p >= tsr_lay_slr_pe0(P, C, S, k)) s = k;
    }
    return s;
}

/* ---- KV placement ------------------------------------------------------ */

/* KV head groups: A / Q. */
static inline uint32_t tsr_lay_kv_groups(const tsr_kconfig *c) { return c->att_pes / c->kv_split; }

/* Positions one PE of a group holds: ceil(seq_len / Q). */
static inline uint32_t tsr_lay_seq_local(const tsr_kconfig *c)
{
    return tsr_cdiv(c->seq_len, c->kv_split);
}

/* The KV heads on PE pe: [*h0, *h0 + n), returns n (0: no KV on pe); *q
 * its place in its group. */
static inline uint32_t tsr_lay_kv_heads(const tsr_kconfig *c, uint32_t pe, uint32_t *h0,
                                        uint32_t *q)
{
    *h0 = 0;
    *q = 0;
    if (pe >= c->att_pes) return 0;
    uint32_t gn = tsr_lay_kv_groups(c), g = pe / c->kv_split;
    uint32_t a = g * c->n_kv_heads / gn, b = (g + 1u) * c->n_kv_heads / gn;
    *h0 = a;
    *q = pe % c->kv_split;
    return b - a;
}

/* KV head h's group: its first PE, and h's index among that PE's heads. */
static inline void tsr_lay_kv_home(const tsr_kconfig *c, uint32_t h, uint32_t *pe0, uint32_t *j)
{
    uint32_t gn = tsr_lay_kv_groups(c), g = 0;
    for (uint32_t k = 0; k < gn; k++) {
#ifdef __SYNTHESIS__
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_ATT_PES
#endif
        if (k * c->n_kv_heads / gn <= h) g = k;
    }
    *pe0 = g * c->kv_split;
    *j = h - g * c->n_kv_heads / gn;
}

/* Positions of one K^T or V block as the kernel stores them: whole
 * attention words (tsr_kernel.c CONFIGURE). */
static inline uint32_t tsr_lay_seq_words(const tsr_kconfig *c)
{
    return tsr_cdiv(tsr_lay_seq_local(c), TSR_ATT_LANES) * TSR_ATT_LANES;
}

/* Words of one (slot, layer, head) KV block on a PE: K^T then V. */
static inline uint32_t tsr_lay_kv_block(const tsr_kconfig *c)
{
    return 2u * tsr_lay_head_size(c) * tsr_lay_seq_words(c);
}

/* KV elements on PE pe, all slots, layers and its heads, in the array of
 * the configured precision (fp32 words, halves or bytes; 64-bit: checked
 * against the profile before anything is stored in 32-bit offsets). */
static inline uint64_t tsr_lay_kv_words(const tsr_kconfig *c, uint32_t pe)
{
    uint32_t h0, q, n = tsr_lay_kv_heads(c, pe, &h0, &q);
    return (uint64_t)n * c->n_slots * c->n_layers * tsr_lay_kv_block(c);
}

/* The int8 cache's scales on PE pe: a K and a V scale per position of
 * every (slot, layer, head) block; 0 for the other precisions. */
static inline uint64_t tsr_lay_kv_scales(const tsr_kconfig *c, uint32_t pe)
{
    uint32_t h0, q, n = tsr_lay_kv_heads(c, pe, &h0, &q);
    if (c->kv_dtype != TSR_KV_INT8) return 0u;
    return (uint64_t)n * c->n_slots * c->n_layers * 2u * tsr_lay_seq_words(c);
}

/* Bytes of one KV element: 4 (fp32), 2 (half), 1 (int8). */
static inline uint32_t tsr_lay_kv_elem_bytes(const tsr_kconfig *c)
{
    return c->kv_dtype == TSR_KV_F16 ? 2u : c->kv_dtype == TSR_KV_INT8 ? 1u : 4u;
}

/* Bytes of PE pe's KV cache: its elements and (int8) their scales. */
static inline uint64_t tsr_lay_kv_bytes(const tsr_kconfig *c, uint32_t pe)
{
    return tsr_lay_kv_words(c, pe) * tsr_lay_kv_elem_bytes(c) + 4u * tsr_lay_kv_scales(c, pe);
}

/* Attention scores on PE pe: its query heads x its positions. */
static inline uint32_t tsr_lay_att_words(const tsr_kconfig *c, uint32_t pe)
{
    uint32_t h0, q, n = tsr_lay_kv_heads(c, pe, &h0, &q);
    return n * tsr_lay_kv_mul(c) * tsr_lay_seq_words(c);
}

/* Controller fp32 words: the norm weights, RoPE's frequencies, the QKV
 * biases (qkv_bias); the first two parts' ends. */
static inline uint32_t tsr_lay_ctrl_norms(const tsr_kconfig *c)
{
    return (2u * c->n_layers + 1u) * c->dim;
}
static inline uint32_t tsr_lay_ctrl_rope_end(const tsr_kconfig *c)
{
    return tsr_lay_ctrl_norms(c) + tsr_lay_head_size(c) / 2u;
}
static inline uint32_t tsr_lay_ctrl_words(const tsr_kconfig *c)
{
    return tsr_lay_ctrl_rope_end(c) +
           (c->qkv_bias ? c->n_layers * (c->dim + 2u * tsr_lay_kv_dim(c)) : 0u);
}

/* Weight footprint of PE pe over all matrices: int8 bytes, fp32 words,
 * and its largest tile's partial sums (64-bit, as tsr_lay_kv_words). */
static inline void tsr_lay_pe_weights(const tsr_kconfig *c, uint32_t pe, uint64_t *w8_bytes,
                                      uint64_t *f32_words, uint32_t *psum_rows)
{
    uint32_t nm = tsr_lay_n_mats(c), rot = 0, prow = 0;
    uint64_t b = 0, w = 0;
    for (uint32_t m = 0; m < nm; m++) {
#ifdef __SYNTHESIS__
#pragma HLS LOOP_TRIPCOUNT min=5 max=TSR_LIT_MAX_MATS
#endif
        tsr_tile t = tsr_lay_tile(c, m, rot, pe);
        b += tsr_lay_tile_w8(c, t);
        w += tsr_lay_tile_f32(c, t);
        if (tsr_lay_tile_psum(t) > prow) prow = tsr_lay_tile_psum(t);
        rot = tsr_lay_rot_next(c, m, rot);
    }
    *w8_bytes = b;
    *f32_words = w;
    if (psum_rows) *psum_rows = prow;
}

#endif
