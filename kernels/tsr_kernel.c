/*
 * tsr_kernel.c - the persistent kernel: its top, the command ring, and the
 * commands.
 *
 *   tessera_top (started once) -> tsr_kernel_serve: for each ring entry k
 *     wait for its seq word -> tsr_kernel_exec:
 *       CONFIGURE  config -> validate against the profile -> tile tables
 *                  -> out: tsr_kfit
 *       LOAD       chunk -> a PE's int8 / fp32 array, the controller
 *       PREFILL    ids -> forward each -> KV caches (the last one pending)
 *       DECODE     loop: forward(pending) -> greedy on the mesh / sample
 *                  -> out[1 + i], out[0] = i + 1 -> stop at n, the
 *                  configured BOS/EOS, seq_len or the cancel word
 *       READ_*     logits / counters -> out;  EXIT -> return
 *     -> response k: status, words written, then its seq word
 *
 * tessera_top owns the state as a local variable for as long as it runs;
 * the emulator's device thread owns one and runs tsr_kernel_serve.
 */
#include <math.h>
#include <stddef.h>

#include "tsr_hls.h"

/* RNG state of a fresh slot; xorshift must never hold 0. */
#define TSR_RNG_DEFAULT 0x9E3779B97F4A7C15ull

/* ------------------------------------------------------------------------ */
/* State                                                                      */

static void slot_reset(tsr_kstate *st, uint32_t s)
{
#pragma HLS INLINE
    st->pos[s] = 0;
    st->pending[s] = -1;
    st->rng[s] = TSR_RNG_DEFAULT + s;
}

void tsr_kernel_init(tsr_kstate *st)
{
#pragma HLS INLINE
    st->configured = 0;
    st->logits_valid = 0;
    st->logits_on_pes = 0;
init_runs:
    for (uint32_t i = 0; i < TSR_OP_COUNT; i++) st->cnt.runs[i] = 0;
    st->cnt.tokens_fed = 0;
    st->cnt.tokens_sampled = 0;
    st->cnt.macs = 0;
    st->cnt.fabric_bcast_bytes = 0;
    st->cnt.fabric_reduce_bytes = 0;
    st->cnt.fabric_gather_bytes = 0;
    st->cnt.attended = 0;
    st->cnt.load_bytes = 0;
    st->cnt.n_pes = 0;
    st->cnt.last_pos = 0;
init_cycles:
    for (uint32_t r = 0; r < TSR_RG_COUNT; r++) {
        st->cnt.cyc[r] = 0;
        st->cnt.cyc_mark[r] = 0;
    }
init_pes:
    for (uint32_t p = 0; p < TSR_PES; p++) st->cnt.pe_sram_bytes[p] = 0;
}

/* ------------------------------------------------------------------------ */
/* CONFIGURE                                                                  */

static int is_pow2(uint32_t v) { return v != 0 && (v & (v - 1u)) == 0; }

static uint32_t log2u(uint32_t v)
{
    uint32_t l = 0;
log2_bits:
    for (uint32_t b = 1; b < 32u; b++) {
        if ((v >> b) != 0) l = b;
    }
    return l;
}

/* A size of c that is zero. */
static int shape_has_zero(const tsr_kconfig *c)
{
    return c->dim == 0 || c->hidden_dim == 0 || c->n_layers == 0 || c->n_heads == 0 ||
           c->n_kv_heads == 0 || c->vocab_size == 0 || c->seq_len == 0 || c->n_slots == 0 ||
           c->group == 0 || c->mesh_rows == 0 || c->mesh_cols == 0 || c->kv_split == 0 ||
           c->att_pes == 0;
}

/* Not a valid config at all: 1 (TSR_K_EARG). */
static int shape_invalid(const tsr_kconfig *c)
{
    if (c->magic != TSR_KCONFIG_MAGIC || shape_has_zero(c)) return 1;
    if (c->dim % c->n_heads || c->n_heads % c->n_kv_heads || (c->dim / c->n_heads) % 2u) return 1;
    if (c->dtype != TSR_KDT_Q8 && c->dtype != TSR_KDT_F32) return 1;
    if (c->bos >= c->vocab_size || c->eos >= c->vocab_size || c->kv_dtype >= TSR_KV_COUNT ||
        (c->q4_kinds & ~TSR_KINDS_ALL) != 0 || (c->stage & ~TSR_STAGE_ALL) != 0)
        return 1;
    /* Q4_0 tiles: in the quantized mode, at GGUF's block of 32 */
    if (c->q4_kinds != 0 && (c->dtype != TSR_KDT_Q8 || c->group != TSR_Q4_GROUP)) return 1;
    return !is_pow2(c->mesh_cols) || !is_pow2(c->group) || !is_pow2(c->kv_split);
}

/* A size of a valid c over the profile's limits: 1. */
static int shape_over_limits(const tsr_kconfig *c)
{
    uint32_t P = c->mesh_rows * c->mesh_cols;
    return c->dim > TSR_MAX_DIM || c->hidden_dim > TSR_MAX_HIDDEN || c->n_layers > TSR_MAX_LAYERS ||
           c->n_heads > TSR_MAX_HEADS || c->n_kv_heads > TSR_MAX_KV_HEADS ||
           c->dim / c->n_heads > TSR_MAX_HEAD_SIZE || c->vocab_size > TSR_MAX_VOCAB ||
           c->seq_len > TSR_MAX_SEQ || c->n_slots > TSR_MAX_SLOTS || c->group < TSR_MIN_GROUP ||
           c->group > TSR_MAX_GROUP || c->mesh_rows > TSR_MAX_MESH_ROWS ||
           c->mesh_cols > TSR_MAX_MESH_COLS || P > TSR_PES || c->kv_split > TSR_MAX_KV_SPLIT ||
           c->att_pes > TSR_ATT_PES || c->att_pes > P;
}

/* A valid c within the limits that the profile's datapaths cannot run: 1. */
static int shape_unbuilt(const tsr_kconfig *c)
{
    /* Q > 1: one KV head a group of Q; a group's query slice in whole bus
     * words; a head in whole attention words (V rows, head outputs) */
    if (c->att_pes % c->kv_split != 0 ||
        (c->kv_split > 1u && c->n_kv_heads > c->att_pes / c->kv_split) ||
        (c->dim / c->n_kv_heads) % TSR_VEC != 0 || (c->dim / c->n_heads) % TSR_ATT_LANES != 0)
        return 1;
    if (c->dtype == TSR_KDT_F32 && !TSR_WITH_F32) return 1;
    /* over SLRs: every boundary between mesh rows and between KV head
     * groups (tsr_profile.h TSR_SLR_PE0; implied by its compile-time
     * checks for any mesh that passed shape_over_limits, and checked here
     * against the configured mesh) */
cfg_slr_bounds:
    for (uint32_t s = 1; s < TSR_SLRS; s++) {
        if (TSR_SLR_PE0(s) % c->mesh_cols != 0 || TSR_SLR_PE0(s) % c->kv_split != 0) return 1;
    }
    /* datapaths the profile did not build */
    if ((c->q4_kinds != 0 && !TSR_WITH_Q4) || (c->kv_dtype == TSR_KV_F16 && !TSR_WITH_KV_F16) ||
        (c->kv_dtype == TSR_KV_INT8 && !TSR_WITH_KV_INT8))
        return 1;
    /* mesh-row roots at PEs without a root datapath: W13's columns, and
     * the classifier's where this stage holds it, a multiple of the
     * profile's (mesh.c TSR_SWIGLU_ROOT, TSR_BEST_ROOT) */
    uint32_t cls = tsr_lay_mat_wcls(c), dc, nc, pc;
    tsr_lay_mat_shape(c, cls, &dc, &nc, &pc);
    return (tsr_lay_mat_cols(c, TSR_MAT_LAYER(0u, TSR_W_13)) & (TSR_W13_COLS - 1u)) != 0 ||
           (dc != 0 && (tsr_lay_mat_cols(c, cls) & (TSR_CLS_COLS - 1u)) != 0);
}

/* Shapes and mesh within the profile?  TSR_K_OK, TSR_K_EARG (not a valid
 * config at all) or TSR_K_ESHAPE (valid, but over a profile limit). */
static int check_shape(const tsr_kconfig *c)
{
    if (shape_invalid(c)) return TSR_K_EARG;
    if (shape_over_limits(c) || shape_unbuilt(c)) return TSR_K_ESHAPE;
    return TSR_K_OK;
}

static void put_fit(volatile uint32_t *out, uint32_t room, uint32_t k, uint32_t v)
{
    if (k < room) out[k] = v;
}

/* CONFIGURE's payload (TSR_KCONFIG_WORDS words) as a tsr_kconfig. */
static void cfg_read(tsr_kconfig *c, const uint32_t *in_w, const float *in_f)
{
    c->magic = in_w[0];
    c->dim = in_w[1];
    c->hidden_dim = in_w[2];
    c->n_layers = in_w[3];
    c->n_heads = in_w[4];
    c->n_kv_heads = in_w[5];
    c->vocab_size = in_w[6];
    c->seq_len = in_w[7];
    c->n_slots = in_w[8];
    c->dtype = in_w[9];
    c->group = in_w[10];
    c->mesh_rows = in_w[11];
    c->mesh_cols = in_w[12];
    c->shared_classifier = in_w[13];
    c->kv_split = in_w[14];
    c->att_pes = in_w[15];
    c->q4_kinds = in_w[16];
    c->kv_dtype = in_w[17];
    c->bos = in_w[18];
    c->eos = in_w[19];
    c->qkv_bias = in_w[20];
    c->stage = in_w[21];
    c->rope_theta = in_f[TSR_KCONFIG_INTS];
    c->norm_eps = in_f[TSR_KCONFIG_INTS + 1];
}

/* The gather's sources: each of the nm matrices' mesh rows from its first
 * unit on (tsr_layout.h), the roots that hold rows, over P PEs. */
static void cfg_roots(tsr_kstate *st, uint32_t P, uint32_t nm)
{
#pragma HLS INLINE
cfg_roots:
    for (uint32_t m = 0; m < nm; m++) {
#pragma HLS LOOP_TRIPCOUNT min=5 max=TSR_LIT_MAX_MATS
        uint32_t Cm = st->mat_cols[m], R = P / Cm, r0 = (st->mat_rot[m] / Cm) % R, n = 0;
cfg_roots_rows:
        for (uint32_t k = 0; k < R; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PES
            uint32_t p = ((r0 + k) % R) * Cm;
            tsr_ktab t = tsr_ktab_of(st, p, m);
            if (t.rows == 0) continue;
            st->root_pe[m][n] = p;
            st->root_w0[m][n] = t.row0 / TSR_VEC;
            st->root_w1[m][n] = t.row0 / TSR_VEC + tsr_cdiv(t.rows, TSR_VEC);
            n++;
        }
        st->mat_nroots[m] = n;
    }
}

/* A CONFIGURE that fits: c (P PEs, sl attention words of positions a PE)
 * becomes the state's configuration, its derived figures and tables, and
 * every slot is reset. */
static void cfg_commit(tsr_kstate *st, const tsr_kconfig *c, uint32_t P, uint32_t sl)
{
#pragma HLS INLINE
    uint32_t hs = c->dim / c->n_heads;
    st->cfg = *c;
    st->P = P;
    st->R = c->mesh_rows;
    st->C = c->mesh_cols;
    st->hs = hs;
    st->kv_dim = c->n_kv_heads * hs;
    st->kv_mul = c->n_heads / c->n_kv_heads;
    st->seq_local = sl;
    st->sqrt_hs = sqrtf((float)hs);
    st->g_log2 = log2u(c->group);
    st->cpg_log2 = c->group > TSR_LANES ? log2u(c->group / TSR_LANES) : 0u;
    st->q_log2 = log2u(c->kv_split);
cfg_kv_home:
    for (uint32_t k = 0; k < c->n_kv_heads; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_KV_HEADS
        tsr_lay_kv_home(c, k, &st->kv_pe[k], &st->kv_j[k]);
        st->kv_ow[k] = st->kv_j[k] * (c->dim / c->n_kv_heads) / TSR_ATT_LANES;
    }
    /* RoPE, as run.c: theta^(-head_dim / head_size), head_dim even */
cfg_rope_freq:
    for (uint32_t j = 0; j < hs / 2u; j++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_HALF_HS
        st->rope_freq[j] = 1.0f / powf(c->rope_theta, (float)(2u * j) / (float)hs);
    }
cfg_rope_pairs:
    for (uint32_t i = 0; i < c->dim + st->kv_dim; i += 2u) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_QKV
        st->rope_pj[i / 2u] = (i % hs) / 2u;
    }
cfg_clear_pes:
    for (uint32_t p = P; p < TSR_PES; p++) st->cnt.pe_sram_bytes[p] = 0;
    st->cnt.n_pes = P;
    TSR_PLATFORM_CONFIGURED(st);
    st->configured = 1;
    st->logits_valid = 0;
    st->logits_on_pes = 0;
cfg_slots:
    for (uint32_t s = 0; s < TSR_MAX_SLOTS; s++) slot_reset(st, s);
}

static int op_configure(tsr_kstate *st, const uint32_t *in_w, const float *in_f, uint32_t in_n,
                        volatile uint32_t *out, uint32_t room, uint32_t *out_n)
{
#pragma HLS INLINE
    tsr_kconfig c;
    if (in_n < TSR_KCONFIG_WORDS) return TSR_K_EARG;
    cfg_read(&c, in_w, in_f);
    st->configured = 0;
    TSR_PLATFORM_UNCONFIGURE(st);   /* a failed CONFIGURE leaves its defaults */
    uint32_t fit[TSR_KFIT_WORDS];
cfg_fit_clear:
    for (uint32_t k = 0; k < TSR_KFIT_WORDS; k++) fit[k] = 0;
    int rc = check_shape(&c);
    uint32_t P = c.mesh_rows * c.mesh_cols;
    if (rc == TSR_K_OK) {
        /* the layout: each matrix's tile on each PE, packed in matrix order */
        uint32_t nm = tsr_lay_n_mats(&c), rot = 0, max_w = 0, max_f = 0, max_kv = 0, max_rows = 0;
        uint32_t max_att = 0, max_kvs = 0;
        uint64_t total = 4ull * tsr_lay_ctrl_words(&c);
        uint32_t sl = tsr_lay_seq_words(&c);   /* whole attention words of positions */
cfg_mats:
        for (uint32_t m = 0; m < nm; m++) {
#pragma HLS LOOP_TRIPCOUNT min=5 max=TSR_LIT_MAX_MATS
            st->mat_rot[m] = rot;
            st->mat_cols[m] = tsr_lay_mat_cols(&c, m);
            tsr_lay_mat_shape(&c, m, &st->mat_d[m], &st->mat_n[m], &st->mat_pair[m]);
            st->mat_q4[m] = tsr_lay_mat_q4(&c, m);
            rot = tsr_lay_rot_next(&c, m, rot);
        }
cfg_pes:
        for (uint32_t p = 0; p < P; p++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_PES
            uint32_t wb = 0, fw = 0, rows = 0;
cfg_pe_mats:
            for (uint32_t m = 0; m < nm; m++) {
#pragma HLS LOOP_TRIPCOUNT min=5 max=TSR_LIT_MAX_MATS
                tsr_tile t = tsr_lay_tile(&c, m, st->mat_rot[m], p);
                st->tab_row0[p][m] = t.row0;
                st->tab_rows[p][m] = t.rows;
                st->tab_g0[p][m] = t.g0;
                st->tab_ng[p][m] = t.ngroups;
                st->tab_woff[p][m] = wb;
                st->tab_foff[p][m] = fw;
                st->tab_cols[p][m] = t.cols;
                st->tab_ent[p][m] = t.rows * t.ngroups;
                st->tab_steps[p][m] = tsr_lay_tile_steps(&c, t.rows, t.ngroups);
                wb += tsr_lay_tile_w8(&c, t);
                fw += tsr_lay_tile_f32(&c, t);
                if (tsr_lay_tile_psum(t) > rows) rows = tsr_lay_tile_psum(t);
            }
            uint32_t h0 = 0, q = 0, nh = tsr_lay_kv_heads(&c, p, &h0, &q);
            if (tsr_lay_att_words(&c, p) > max_att) max_att = tsr_lay_att_words(&c, p);
            uint64_t kvw64 = tsr_lay_kv_words(&c, p), kvs64 = tsr_lay_kv_scales(&c, p);
            uint64_t kvb = tsr_lay_kv_bytes(&c, p);
            uint32_t kvw = kvw64 > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)kvw64;
            uint32_t kvs = kvs64 > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)kvs64;
            if (p < TSR_ATT_PES) {   /* nh is 0 past att_pes <= TSR_ATT_PES */
                uint32_t hs = c.dim / c.n_heads;
                st->kv_h0[p] = h0;
                st->kv_nh[p] = nh;
                st->kv_q[p] = q;
                st->kv_q0[p] = h0 * (c.n_heads / c.n_kv_heads) * hs;
                st->kv_k0[p] = c.dim + h0 * hs;
                st->kv_blkw[p] = nh * 2u * hs * (sl / TSR_ATT_LANES);
                st->kv_blks[p] = nh * 2u * sl;
            }
            st->w8_used[p] = wb;
            st->f32_used[p] = fw;
            st->cnt.pe_sram_bytes[p] = wb + 4ull * fw + kvb;
            total += wb + 4ull * fw + kvb;
            if (wb > max_w) max_w = wb;
            if (fw > max_f) max_f = fw;
            if (kvw > max_kv) max_kv = kvw;
            if (kvs > max_kvs) max_kvs = kvs;
            if (rows > max_rows) max_rows = rows;
        }
        cfg_roots(st, P, nm);
        fit[TSR_KFIT_W8_WORDS] = tsr_cdiv(max_w, TSR_LANES);
        fit[TSR_KFIT_F32_WORDS] = max_f;
        fit[TSR_KFIT_KV_WORDS] = max_kv;
        fit[TSR_KFIT_ROWS] = max_rows;
        fit[TSR_KFIT_CTRL_WORDS] = tsr_lay_ctrl_words(&c);
        fit[TSR_KFIT_TOTAL_LO] = (uint32_t)total;
        fit[TSR_KFIT_TOTAL_HI] = (uint32_t)(total >> 32);
        /* the KV elements go to the array of their precision */
        uint32_t kv_room = c.kv_dtype == TSR_KV_F16 ? TSR_PE_KVH_WORDS
                         : c.kv_dtype == TSR_KV_INT8 ? TSR_PE_KVQ_BYTES : TSR_PE_KV_WORDS;
        if (tsr_cdiv(max_w, TSR_LANES) > TSR_PE_W8_WORDS || max_f > TSR_PE_F32_WORDS ||
            max_kv > kv_room || max_kvs > TSR_PE_KVS_WORDS || max_rows > TSR_PE_ROWS ||
            max_att > TSR_PE_ATT)
            rc = TSR_K_ECAPACITY;
        if (rc == TSR_K_OK) cfg_commit(st, &c, P, sl);
    }
    fit[TSR_KFIT_STATUS] = (uint32_t)rc;
cfg_fit_out:
    for (uint32_t k = 0; k < TSR_KFIT_WORDS; k++) put_fit(out, room, k, fit[k]);
    *out_n = room < TSR_KFIT_WORDS ? room : TSR_KFIT_WORDS;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* LOAD                                                                       */

/* A position in the controller region (tsr_layout.h): word a, its norm
 * row and column, its bias row and column, and where the parts end. */
typedef struct ctrl_cur {
    uint32_t a, row, col, brow, bcol;
    uint32_t norms, rope_end, qkvd;
} ctrl_cur;

static ctrl_cur ctrl_at(const tsr_kstate *st, uint32_t off)
{
#pragma HLS INLINE
    ctrl_cur c;
    uint32_t dim = st->cfg.dim;
    c.a = off;
    c.norms = tsr_lay_ctrl_norms(&st->cfg);
    c.rope_end = tsr_lay_ctrl_rope_end(&st->cfg);
    c.qkvd = dim + 2u * st->kv_dim;
    c.row = off < c.norms ? off / dim : 0u;
    c.col = off < c.norms ? off % dim : 0u;
    c.brow = off > c.rope_end ? (off - c.rope_end) / c.qkvd : 0u;
    c.bcol = off > c.rope_end ? (off - c.rope_end) % c.qkvd : 0u;
    return c;
}

/* The next word: counters, no division. */
static void ctrl_next(ctrl_cur *c, uint32_t dim)
{
    if (c->a < c->norms) {
        if (++c->col == dim) {
            c->col = 0;
            c->row++;
        }
    } else if (c->a >= c->rope_end) {
        if (++c->bcol == c->qkvd) {
            c->bcol = 0;
            c->brow++;
        }
    }
    c->a++;
}

/* len bytes of int8 tiles from payload words in_w (four bytes a word,
 * little-endian) into a PE's TSR_LANES-byte words from byte off (a
 * multiple of 4), a payload word a cycle.  The memory word is built in
 * registers and written whole once its last byte is in, so the loop never
 * reads the (single-port, reshaped) memory it writes: a write of four
 * bytes into a 256-bit word would be a read-modify-write through the
 * URAM's read latency, 8 times on the same word in a row (II 2-4, the
 * fifth HLS review).  Only the first and last words, when the range starts
 * or ends inside them, keep bytes of their own: both are read once before
 * the loop. */
static void load_w8_words(int8_t w8[TSR_PE_W8_WORDS][TSR_LANES], uint32_t off, uint32_t len,
                          const uint32_t *in_w)
{
#pragma HLS INLINE
    uint32_t end = off + len, w_first = off / TSR_LANES, w_last = (end - 1u) / TSR_LANES;
    int8_t first[TSR_LANES], last[TSR_LANES], word[TSR_LANES];
#pragma HLS ARRAY_PARTITION variable=first type=complete
#pragma HLS ARRAY_PARTITION variable=last type=complete
#pragma HLS ARRAY_PARTITION variable=word type=complete
load_w8_keep:
    for (uint32_t k = 0; k < TSR_LANES; k++) {
#pragma HLS UNROLL
        first[k] = w8[w_first][k];
        last[k] = w8[w_last][k];
    }
load_w8:
    for (uint32_t i = 0; i < (len + 3u) / 4u; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_LOAD_WORDS
#pragma HLS PIPELINE II=1
        uint32_t v = in_w[i], a = off + 4u * i, w = a / TSR_LANES, b = a % TSR_LANES;
load_w8_bytes:
        for (uint32_t k = 0; k < TSR_LANES; k++) {
#pragma HLS UNROLL
            uint32_t at = w * TSR_LANES + k;   /* this byte's address */
            int8_t keep = w == w_first ? first[k] : last[k];
            if (k >= b && k < b + 4u && at < end)
                word[k] = (int8_t)(uint8_t)(v >> (8u * (k - b)));
            else if (b == 0u || i == 0u)   /* a word begins: its own bytes, or any */
                word[k] = keep;
        }
        if (b + 4u == TSR_LANES || a + 4u >= end) {   /* its last byte is in: the whole word */
load_w8_store:
            for (uint32_t k = 0; k < TSR_LANES; k++) {
#pragma HLS UNROLL
                w8[w][k] = word[k];
            }
        }
    }
}

static int op_load(tsr_kstate *st, const uint32_t c[TSR_CMD_WORDS], const uint32_t *in_w,
                   const float *in_f, uint32_t in_n)
{
#pragma HLS INLINE
    uint32_t p = c[TSR_CMD_A0], region = c[TSR_CMD_A1], off = c[TSR_CMD_A2], len = c[TSR_CMD_A3];
    if (!st->configured) return TSR_K_ESTATE;
    if (len == 0) return TSR_K_OK;
    if (region == TSR_REG_W8) {
        if (p >= st->P || off > st->w8_used[p] || len > st->w8_used[p] - off || off % 4u != 0 ||
            (len + 3u) / 4u > in_n)
            return TSR_K_EARG;
        /* a platform may keep the bytes its own way: then nothing left
         * for the loop */
        if (!TSR_FAST_LOAD_W8(st, p, off, len, in_w)) load_w8_words(st->w8[p], off, len, in_w);
        TSR_LOADED_W8(st, p, off, len);
        st->cnt.load_bytes += len;
        return TSR_K_OK;
    }
    if (region == TSR_REG_F32) {
        if (p >= st->P || off > st->f32_used[p] || len > st->f32_used[p] - off || len > in_n)
            return TSR_K_EARG;
load_f32:
        for (uint32_t i = 0; i < len; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_LOAD_WORDS
#pragma HLS PIPELINE II=1
            st->f32[p][off + i] = in_f[i];
        }
        st->cnt.load_bytes += 4ull * len;
        return TSR_K_OK;
    }
    if (region == TSR_REG_CTRL) {
        /* the norm weights, (2L + 1) rows of dim, then RoPE's frequencies,
         * then the QKV bias rows, in the payload's order, into their rows:
         * divisions once a command, then counters */
        uint32_t cw = tsr_lay_ctrl_words(&st->cfg), dim = st->cfg.dim;
        if (p != 0 || off > cw || len > cw - off || len > in_n) return TSR_K_EARG;
        ctrl_cur c = ctrl_at(st, off);
load_ctrl:
        for (uint32_t i = 0; i < len; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_CTRL_WORDS
#pragma HLS PIPELINE II=1
            if (c.a < c.norms) st->rms[c.row][c.col] = in_f[i];
            else if (c.a < c.rope_end) st->rope_freq[c.a - c.norms] = in_f[i];
            else st->qkvb[c.brow][c.bcol] = in_f[i];
            ctrl_next(&c, dim);
        }
        st->cnt.load_bytes += 4ull * len;
        return TSR_K_OK;
    }
    return TSR_K_EARG;
}

/* ------------------------------------------------------------------------ */
/* Sequence ops                                                               */

/* The sequences of a DECODE or DECODE_BATCH. */
typedef struct dec_seqs {
    uint32_t m, stride;                     /* sequences; answer words each */
    uint32_t slot[TSR_MAX_BATCH], n[TSR_MAX_BATCH], flags[TSR_MAX_BATCH];
    uint32_t done[TSR_MAX_BATCH], live[TSR_MAX_BATCH];
    float    temp[TSR_MAX_BATCH], top_p[TSR_MAX_BATCH];
} dec_seqs;

/* A decode sequence's setup: its checks, its RNG. */
static int dec_seq(tsr_kstate *st, dec_seqs *d, uint32_t k, uint32_t slot, uint32_t n,
                   uint32_t flags, uint32_t seed_lo, uint32_t seed_hi, float temp, float top_p)
{
#pragma HLS INLINE
    if (slot >= st->cfg.n_slots) return TSR_K_EARG;
dec_seq_distinct:
    for (uint32_t j = 0; j < k; j++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_LIT_MAX_BATCH
        if (d->slot[j] == slot) return TSR_K_EARG;
    }
    if (st->pending[slot] < 0) return TSR_K_ESTATE;
    if (flags & TSR_DEC_RESEED) {
        uint64_t seed = (uint64_t)seed_lo | ((uint64_t)seed_hi << 32);
        st->rng[slot] = seed ? seed : TSR_RNG_DEFAULT;
    }
    d->slot[k] = slot;
    d->n[k] = n;
    d->flags[k] = flags;
    d->temp[k] = temp;
    d->top_p[k] = top_p;
    d->done[k] = 0;
    d->live[k] = 1;
    return TSR_K_OK;
}

/* A command that runs the model (op_forward): which, and where it is. */
typedef struct fwd_run {
    uint32_t op, slot, n;          /* the command's op, SLOT, A0           */
    int      prefill, decode, pass, gather;
    uint32_t flags;                /* FORWARD: TSR_FWDC_*                  */
    uint32_t batch;                /* FORWARD with TSR_FWDC_BATCH          */
    uint32_t first;                /* the stage embeds (no link-in)        */
    uint32_t feed, fed;            /* PREFILL, FORWARD: positions to fill, filled */
    uint32_t hp;                   /* PREFILL: the pending token goes first */
    uint32_t gathered;             /* READ_LOGITS: the gather ran          */
    dec_seqs d;                    /* DECODE(_BATCH): its sequences        */
    float    hdr[TSR_LINK_HDR];    /* FORWARD on a later stage: the pass's
                                      link-in header, read once first      */
    uint32_t rec[TSR_MAX_BATCH][TSR_FWDB_WORDS]; /* a batch's records, read
                                      once from `in`                       */
    float    temp[TSR_MAX_BATCH], top_p[TSR_MAX_BATCH]; /* FORWARD: its items'
                                      samplers (a single slot's: [0])      */
} fwd_run;

/* A later stage's FORWARD: the pass's header off link-in, its first words,
 * read here and only here (a stream is read in order, each word once). */
static void link_header_read(fwd_run *r, volatile const float *link_in)
{
link_header_words:
    for (uint32_t i = 0; i < TSR_LINK_HDR; i++) {
#pragma HLS PIPELINE II=1
        r->hdr[i] = TSR_LINK_GET(link_in, i);
    }
}

/* The header says: a pass of n items whose first is slot's at its next
 * position, of the model's dim (else another pass's vectors are on the
 * link). */
static int link_header_ok(const tsr_kstate *st, const fwd_run *r, uint32_t n, uint32_t slot)
{
#pragma HLS INLINE
    return r->hdr[0] == (float)n && r->hdr[1] == (float)slot &&
           r->hdr[2] == (float)st->pos[slot] && r->hdr[3] == (float)st->cfg.dim;
}

/* A refused pass's vectors off link-in, as many as its header says (at
 * most a pass's), so that the next pass's header is the next word. */
static void link_drain(const fwd_run *r, volatile const float *link_in)
{
    uint32_t n = r->hdr[0] >= 1.0f && r->hdr[0] <= (float)TSR_MAX_BLOCK ? (uint32_t)r->hdr[0] : 0u;
    uint32_t d = r->hdr[3] >= 1.0f && r->hdr[3] <= (float)TSR_MAX_DIM ? (uint32_t)r->hdr[3] : 0u;
link_drain_words:
    for (uint32_t i = 0; i < n * d; i++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_LIT_LINK_WORDS
#pragma HLS PIPELINE II=1
        (void)TSR_LINK_GET(link_in, TSR_LINK_HDR + i);
    }
}

/* FORWARD's batch records (TSR_FWDC_BATCH), read once into r (one
 * pipelined pass over the words, then the samplers' fp32 words): m items
 * of distinct slots (a mask: TSR_MAX_SLOTS <= 8), a position each that
 * seq_len still has, their ids (a first stage) in the vocabulary, the
 * reserved word zero; item 0's header on a later stage's link-in. */
static int fwd_batch_check(const tsr_kstate *st, fwd_run *r, const uint32_t *in_w,
                           const float *in_f, uint32_t in_n, uint32_t room)
{
#pragma HLS INLINE
    const tsr_kconfig *cf = &st->cfg;
    uint32_t m = r->n, seen = 0;
    if (m == 0 || m > TSR_MAX_BATCH || in_n < m * TSR_FWDB_WORDS) return TSR_K_EARG;
    if ((r->flags & TSR_FWDC_SAMPLE) && (!tsr_lay_holds_head(cf) || room < m)) return TSR_K_EARG;
fwd_batch_read:
    for (uint32_t i = 0; i < m * TSR_FWDB_WORDS; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_FWDB_READ_WORDS
#pragma HLS PIPELINE II=1
        r->rec[i / TSR_FWDB_WORDS][i % TSR_FWDB_WORDS] = in_w[i];
    }
fwd_batch_samplers:
    for (uint32_t b = 0; b < m; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_BATCH
        r->temp[b] = in_f[b * TSR_FWDB_WORDS + TSR_FWDB_TEMP];
        r->top_p[b] = in_f[b * TSR_FWDB_WORDS + TSR_FWDB_TOP_P];
    }
fwd_batch_recs:
    for (uint32_t b = 0; b < m; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_BATCH
        uint32_t sl = r->rec[b][TSR_FWDB_SLOT];
        if (sl >= cf->n_slots || ((seen >> sl) & 1u) || r->rec[b][TSR_FWDB_RESERVED] != 0u ||
            (r->first && r->rec[b][TSR_FWDB_TOKEN] >= cf->vocab_size))
            return TSR_K_EARG;
        if ((uint64_t)st->pos[sl] + 1u > cf->seq_len) return TSR_K_ERANGE;
        seen |= 1u << sl;
    }
    if (!r->first && !link_header_ok(st, r, m, r->rec[0][TSR_FWDB_SLOT])) return TSR_K_EARG;
    return TSR_K_OK;
}

/* Item b's token after a pass: the greedy one the mesh found, or its
 * logits sampled with (temp, top_p) and its slot's RNG; the id's trip to
 * the host charged. */
static int32_t item_token(tsr_kstate *st, const tsr_item *items, uint32_t b, float temp,
                          float top_p)
{
#pragma HLS INLINE
    int32_t next = items[b].next;
    if (items[b].mode == TSR_FWD_LOGITS) {
        uint32_t cy = 0;
item_copy:
        for (uint32_t v = 0; v < st->cfg.vocab_size; v++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=1
            st->probs[v] = st->logits[b][v];
        }
        TSR_CHARGE(st, TSR_RG_SAMPLE, tsr_cy_loop(st->cfg.vocab_size, 1u, TSR_D_BUS));
        next = tsr_sample(st->probs, st->cfg.vocab_size, temp, top_p, &st->rng[items[b].slot],
                          st->cand_p, st->cand_i, &cy);
        TSR_CHARGE(st, TSR_RG_SAMPLE, cy);
    }
    TSR_CHARGE(st, TSR_RG_SAMPLE, TSR_D_BUS);   /* the id to the host */
    st->cnt.tokens_sampled++;
    return next;
}

/* FORWARD's checks: n items of one slot (SLOT a slot; their ids on a
 * first stage, the link header on a later one; sampling: one item, on the
 * last stage, its sampler read once), or a batch's records
 * (fwd_batch_check); then its RNG reseeded. */
static int fwd_setup_pass(tsr_kstate *st, fwd_run *r, const uint32_t c[TSR_CMD_WORDS],
                          const uint32_t *in_w, const float *in_f, uint32_t in_n, uint32_t room)
{
#pragma HLS INLINE
    const tsr_kconfig *cf = &st->cfg;
    uint32_t n = r->n, s = r->slot;
    r->feed = n;
    if (r->batch) return fwd_batch_check(st, r, in_w, in_f, in_n, room);
    if (s >= cf->n_slots || n == 0 || n > TSR_MAX_BLOCK || in_n < 2u + (r->first ? n : 0u))
        return TSR_K_EARG;
    if ((r->flags & TSR_FWDC_SAMPLE) && (n != 1u || !tsr_lay_holds_head(cf) || room < 1u))
        return TSR_K_EARG;
    if ((uint64_t)st->pos[s] + n > cf->seq_len) return TSR_K_ERANGE;
    if (!r->first && !link_header_ok(st, r, n, s)) return TSR_K_EARG;
pass_check:
    for (uint32_t i = 0; r->first && i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_MAX_BLOCK
        if (in_w[2u + i] >= cf->vocab_size) return TSR_K_EARG;
    }
    if (r->flags & TSR_FWDC_SAMPLE) {
        r->temp[0] = in_f[0];
        r->top_p[0] = in_f[1];
    }
    if (r->flags & TSR_FWDC_RESEED) {
        uint64_t seed = (uint64_t)c[TSR_CMD_A2] | ((uint64_t)c[TSR_CMD_A3] << 32);
        st->rng[s] = seed ? seed : TSR_RNG_DEFAULT;
    }
    return TSR_K_OK;
}

/* PREFILL's checks: the ids in the vocabulary, the positions it fills
 * (the pending token plus all but the last) within seq_len. */
static int fwd_setup_prefill(tsr_kstate *st, fwd_run *r, const uint32_t *in_w, uint32_t in_n)
{
#pragma HLS INLINE
    const tsr_kconfig *cf = &st->cfg;
    uint32_t n = r->n;
    if (n == 0 || n > in_n) return TSR_K_EARG;
prefill_check:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
        if (in_w[i] >= cf->vocab_size) return TSR_K_EARG;
    }
    r->hp = st->pending[r->slot] >= 0 ? 1u : 0u;
    r->feed = n - 1u + r->hp;
    if ((uint64_t)st->pos[r->slot] + r->feed > cf->seq_len) return TSR_K_ERANGE;
    return TSR_K_OK;
}

/* DECODE's one sequence or DECODE_BATCH's records (dec_seq each), their
 * answer regions' counts published as 0. */
static int fwd_setup_decode(tsr_kstate *st, fwd_run *r, const uint32_t c[TSR_CMD_WORDS],
                            const uint32_t *in_w, const float *in_f, uint32_t in_n, uint32_t room,
                            volatile uint32_t *out_w)
{
#pragma HLS INLINE
    dec_seqs *d = &r->d;
    int rc = TSR_K_OK;
    if (r->op == TSR_OP_DECODE) {
        if (in_n < 2u || room < 1u) return TSR_K_EARG;
        d->m = 1;
        d->stride = room;
        rc = dec_seq(st, d, 0, r->slot, r->n > room - 1u ? room - 1u : r->n, c[TSR_CMD_A3],
                     c[TSR_CMD_A1], c[TSR_CMD_A2], in_f[0], in_f[1]);
    } else {
        d->m = in_n ? in_w[0] : 0u;
        d->stride = r->n;
        if (d->m == 0 || d->m > TSR_MAX_BATCH || in_n < 1u + d->m * TSR_BATCH_WORDS ||
            d->stride < 1u || (uint64_t)d->m * d->stride > room)
            return TSR_K_EARG;
dec_batch_seqs:
        for (uint32_t k = 0; k < d->m && rc == TSR_K_OK; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_BATCH
            const uint32_t *w = in_w + 1u + k * TSR_BATCH_WORDS;
            const float *wf = in_f + 1u + k * TSR_BATCH_WORDS;
            uint32_t nk = w[TSR_BATCH_N] > d->stride - 1u ? d->stride - 1u : w[TSR_BATCH_N];
            rc = dec_seq(st, d, k, w[TSR_BATCH_SLOT], nk, w[TSR_BATCH_FLAGS], w[TSR_BATCH_SEED_LO],
                         w[TSR_BATCH_SEED_HI], wf[TSR_BATCH_TEMP], wf[TSR_BATCH_TOP_P]);
        }
    }
    if (rc != TSR_K_OK) return rc;
dec_publish0:
    for (uint32_t k = 0; k < d->m; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_BATCH
        TSR_PUBLISH(&out_w[k * d->stride], 0u);
    }
    return TSR_K_OK;
}

/* FORWARD's items: n of its slot at consecutive positions, or a batch's,
 * one a record (each record's RNG reseeded when it asks); a sampled
 * item's sampler is r->temp / r->top_p at q (a batch's b, a single
 * slot's 0). */
static uint32_t fwd_items_pass(tsr_kstate *st, const fwd_run *r, const uint32_t *in_w,
                               tsr_item *items)
{
#pragma HLS INLINE
    uint32_t nx = r->feed - r->fed;
fwd_pass_items:
    for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
        uint32_t q = r->batch ? b : 0u, sl = r->batch ? r->rec[q][TSR_FWDB_SLOT] : r->slot;
        if (r->batch && (r->rec[q][TSR_FWDB_FLAGS] & TSR_FWDC_RESEED)) {
            uint64_t seed = (uint64_t)r->rec[q][TSR_FWDB_SEED_LO] |
                            ((uint64_t)r->rec[q][TSR_FWDB_SEED_HI] << 32);
            st->rng[sl] = seed ? seed : TSR_RNG_DEFAULT;
        }
        items[b].slot = sl;
        items[b].token = !r->first ? 0u : r->batch ? r->rec[q][TSR_FWDB_TOKEN] : in_w[2u + b];
        items[b].pos = (uint32_t)st->pos[sl] + (r->batch ? 0u : b);
        items[b].mode = !(r->flags & TSR_FWDC_SAMPLE) ? TSR_FWD_NONE
                      : r->temp[q] <= 0.0f || r->top_p[q] <= 0.0f ? TSR_FWD_GREEDY
                                                                  : TSR_FWD_LOGITS;
    }
    return nx;
}

/* PREFILL's next block: the pending token first, then the prompt's, at
 * the slot's next positions. */
static uint32_t fwd_items_prefill(const tsr_kstate *st, const fwd_run *r, const uint32_t *in_w,
                                  tsr_item *items)
{
#pragma HLS INLINE
    uint32_t left = r->feed - r->fed, nx = left < TSR_MAX_BLOCK ? left : TSR_MAX_BLOCK;
fwd_prefill_items:
    for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_BLOCK
        uint32_t k = r->fed + b;
        items[b].slot = r->slot;
        items[b].token = k < r->hp ? (uint32_t)st->pending[r->slot] : in_w[k - r->hp];
        items[b].pos = (uint32_t)st->pos[r->slot] + b;
        items[b].mode = TSR_FWD_NONE;
    }
    return nx;
}

/* A decode step's items: each sequence still going (not cancelled, short
 * of its n and of seq_len) feeds its pending token; seq_of its sequence,
 * *temp / *top_p its sampler.  The cancel words are read every step (the
 * host's cancel stops a sequence within a token, tsr_seq_cancel), each a
 * volatile read of ctl in host memory, one after another: 1 + the live
 * sequences' reads of TSR_D_HOSTRD each, charged to the sampling region.
 * (After a step the next step's reads come first, so a pass's cycles,
 * cyc - cyc_mark, hold the reads that follow it: 1 + nx in a run of
 * sequences that go on, what plan projects.) */
static uint32_t fwd_items_decode(tsr_kstate *st, fwd_run *r, volatile const uint32_t *hdr,
                                 tsr_item *items, float *temp, float *top_p, uint32_t *seq_of)
{
#pragma HLS INLINE
    dec_seqs *d = &r->d;
    uint32_t nx = 0, reads = 1;
    int stop_all = TSR_OBSERVE(&hdr[TSR_CTL_CANCEL]) != 0;
fwd_decode_items:
    for (uint32_t k = 0; k < d->m; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_BATCH
        uint32_t sl = d->slot[k];
        if (!d->live[k]) continue;
        reads += stop_all ? 0u : 1u;   /* the slot's word, unless the step stops */
        if (stop_all || TSR_OBSERVE(&hdr[TSR_CTL_CANCEL_SLOT(sl)]) || d->done[k] >= d->n[k] ||
            (uint32_t)st->pos[sl] >= st->cfg.seq_len) {
            d->live[k] = 0;
            continue;
        }
        items[nx].slot = sl;
        items[nx].token = (uint32_t)st->pending[sl];
        items[nx].pos = (uint32_t)st->pos[sl];
        items[nx].mode = d->temp[k] <= 0.0f || d->top_p[k] <= 0.0f ? TSR_FWD_GREEDY
                                                                   : TSR_FWD_LOGITS;
        temp[nx] = d->temp[k];
        top_p[nx] = d->top_p[k];
        seq_of[nx] = k;
        nx++;
    }
    TSR_CHARGE(st, TSR_RG_SAMPLE, tsr_cy_host_reads(reads));
    return nx;
}

/* After a pass of nx items: a prompt block or one slot's FORWARD moves
 * its slot on by nx; one item a slot (a decode step, a batched FORWARD,
 * a sampled FORWARD's one item) gets its token at the one sampling site
 * of every op (nx <= TSR_MAX_BATCH here), its slot moving on by one: a
 * FORWARD answers the ids, a decode writes each to its sequence's region
 * and publishes its count (it stops at BOS/EOS unless told not to). */
static void fwd_items_done(tsr_kstate *st, fwd_run *r, const tsr_item *items, uint32_t nx,
                           const float *temp, const float *top_p, const uint32_t *seq_of,
                           volatile uint32_t *out_w, uint32_t *out_n)
{
#pragma HLS INLINE
    const tsr_kconfig *cf = &st->cfg;
    dec_seqs *d = &r->d;
    int slots = r->decode || r->batch, sampled = items[0].mode != TSR_FWD_NONE;
    r->fed += nx;
    if (!slots) st->pos[r->slot] += (int32_t)nx;
    if (!slots && !sampled) return;
fwd_items_out:
    for (uint32_t b = 0; b < nx; b++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_MAX_BATCH
        uint32_t sl = items[b].slot;
        float t = r->pass ? r->temp[b] : temp[b], p = r->pass ? r->top_p[b] : top_p[b];
        int32_t next = sampled ? item_token(st, items, b, t, p) : -1;
        if (slots) st->pos[sl]++;
        if (r->pass) {
            if (r->batch) st->pending[sl] = -1;   /* the next token is the host's */
            if (sampled) out_w[b] = (uint32_t)next;
            continue;
        }
        uint32_t k = seq_of[b];
        out_w[k * d->stride + 1u + d->done[k]] = (uint32_t)next;
        d->done[k]++;
        TSR_PUBLISH(&out_w[k * d->stride], d->done[k]);
        st->pending[sl] = next;
        if (!(d->flags[k] & TSR_DEC_IGNORE_STOP) &&
            ((uint32_t)next == cf->bos || (uint32_t)next == cf->eos))
            d->live[k] = 0;
    }
    if (r->pass && sampled) *out_n = nx;
}

/* READ_LOGITS' answer: the last pass's first item's logits, at most room
 * of them; returns the words. */
static uint32_t fwd_read_logits(const tsr_kstate *st, uint32_t room, volatile float *out_f)
{
#pragma HLS INLINE
    uint32_t nv = room < st->cfg.vocab_size ? room : st->cfg.vocab_size;
read_logits:
    for (uint32_t i = 0; i < nv; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=1
        out_f[i] = st->logits[0][i];
    }
    return nv;
}

/* PREFILL, DECODE, DECODE_BATCH, FORWARD and READ_LOGITS: the commands
 * that run the model, in one function around one call of tsr_forward and
 * one of the sampler (item_token, in fwd_items_done), so the forward pass
 * and the sampler are one instance each in hardware (UG1399, "pragma HLS
 * allocation").  Each pass runs up to TSR_MAX_BLOCK items:
 *   PREFILL:      the pending token (if any) and all prompt tokens but the
 *                 last (which becomes pending), a block of consecutive
 *                 positions a pass.
 *   DECODE(_BATCH): a step a pass, one item per sequence still going:
 *                 feed its pending token -> the greedy token on the mesh,
 *                 or its logits sampled here -> its answer region, its
 *                 count published -> pending; it stops at its n, BOS/EOS,
 *                 seq_len or a cancel word.
 *   READ_LOGITS:  the last full pass's logits -> out, if its first item
 *                 was the slot's last position (else bad state); a greedy
 *                 pass left them on the mesh (the classifier's partial
 *                 sums at the roots), so gather them first (a debug read,
 *                 not charged to the token).
 *   FORWARD:      one pass of n items at the slot's next positions, or
 *                 (TSR_FWDC_BATCH) of one item each of m slots, a
 *                 pipeline stage's work (tsr_forward: link-in or ids,
 *                 link-out or the classifier); the last stage samples
 *                 when asked (one item a slot), answer: the ids.  The
 *                 others need the whole model on the device (stage 0),
 *                 but READ_LOGITS the last stage's. */
/* The command c's run (its op, slot, count and flags) on a device whose
 * configuration is cf. */
static void fwd_run_of(fwd_run *r, const uint32_t c[TSR_CMD_WORDS], const tsr_kconfig *cf)
{
    r->op = c[TSR_CMD_OP];
    r->slot = c[TSR_CMD_SLOT];
    r->n = c[TSR_CMD_A0];
    r->prefill = r->op == TSR_OP_PREFILL;
    r->gather = r->op == TSR_OP_READ_LOGITS;
    r->pass = r->op == TSR_OP_FORWARD;
    r->decode = !r->prefill && !r->gather && !r->pass;
    r->flags = r->pass ? c[TSR_CMD_A1] : 0u;
    r->batch = (r->flags & TSR_FWDC_BATCH) != 0u;
    r->first = (cf->stage & TSR_STAGE_LINK_IN) == 0u;
}

/* The run's checks and setup by its kind (FORWARD, PREFILL, the decodes;
 * READ_LOGITS: logits of this slot at its position); TSR_K_*. */
static int fwd_setup(tsr_kstate *st, fwd_run *r, const uint32_t c[TSR_CMD_WORDS],
                     const uint32_t *in_w, const float *in_f, uint32_t in_n, uint32_t room,
                     volatile uint32_t *out_w)
{
#pragma HLS INLINE
    if (r->pass) return fwd_setup_pass(st, r, c, in_w, in_f, in_n, room);
    if (r->prefill) return fwd_setup_prefill(st, r, in_w, in_n);
    if (r->decode) return fwd_setup_decode(st, r, c, in_w, in_f, in_n, room, out_w);
    if (!st->logits_valid || st->logits_slot != r->slot ||
        (uint32_t)st->pos[r->slot] != st->logits_pos + 1u)
        return TSR_K_ESTATE;   /* none, or not this slot's at its position */
    return TSR_K_OK;
}

static int op_forward(tsr_kstate *st, const uint32_t c[TSR_CMD_WORDS], const uint32_t *in_w,
                      const float *in_f, uint32_t in_n, volatile uint32_t *out_w,
                      volatile float *out_f, uint32_t room, volatile const uint32_t *hdr,
                      volatile const float *link_in, volatile float *link_out, uint32_t *out_n)
{
#pragma HLS INLINE
    const tsr_kconfig *cf = &st->cfg;
    fwd_run r = { 0 };
    fwd_run_of(&r, c, cf);
    int rc = TSR_K_OK;
    /* a stage runs FORWARD, and the last one READ_LOGITS */
    if (!r.pass && cf->stage != 0u && !(r.gather && tsr_lay_holds_head(cf))) return TSR_K_ESTATE;
    /* a later stage's pass: its header first, whatever comes of it */
    if (r.pass && !r.first) link_header_read(&r, link_in);
    rc = fwd_setup(st, &r, c, in_w, in_f, in_n, room, out_w);
    if (rc != TSR_K_OK) {
        /* a refused pass leaves the stream at the next pass's header */
        if (r.pass && !r.first) link_drain(&r, link_in);
        return rc;
    }

    uint64_t g_cy = st->cnt.cyc[TSR_RG_GATHER], g_bytes = st->cnt.fabric_gather_bytes;
    tsr_item items[TSR_MAX_BLOCK];
    float temp[TSR_MAX_BATCH], top_p[TSR_MAX_BATCH];   /* decode: its items' samplers */
    uint32_t seq_of[TSR_MAX_BATCH];                     /* decode: each item's sequence */
fwd_passes:
    for (;;) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
        uint32_t nx = 0;
        if (r.pass) {
            nx = fwd_items_pass(st, &r, in_w, items);
        } else if (r.prefill) {
            nx = fwd_items_prefill(st, &r, in_w, items);
        } else if (r.decode) {
            nx = fwd_items_decode(st, &r, hdr, items, temp, top_p, seq_of);
        } else {
            nx = st->logits_on_pes && !r.gathered ? 1u : 0u;
            items[0].slot = 0;
            items[0].token = 0;
            items[0].pos = 0;
            items[0].mode = TSR_FWD_GATHER;
            r.gathered = 1;
        }
        if (nx == 0) break;
        tsr_forward(st, items, nx, link_in, link_out);
        if (!r.gather) fwd_items_done(st, &r, items, nx, temp, top_p, seq_of, out_w, out_n);
    }
    if (r.pass) {
        if (!r.batch) st->pending[r.slot] = -1;   /* the next token is the host's */
        if (!(r.flags & TSR_FWDC_SAMPLE)) st->logits_valid = 0;
        return TSR_K_OK;
    }
    if (r.prefill) {
        st->pending[r.slot] = (int32_t)in_w[r.n - 1u];
        st->logits_valid = 0;
        return TSR_K_OK;
    }
    if (r.decode) {
        *out_n = r.op == TSR_OP_DECODE ? 1u + r.d.done[0] : r.d.m * r.d.stride;
        return TSR_K_OK;
    }
    /* READ_LOGITS: the gather is not the token's */
    st->cnt.cyc[TSR_RG_GATHER] = g_cy;
    st->cnt.fabric_gather_bytes = g_bytes;
    *out_n = fwd_read_logits(st, room, out_f);
    return TSR_K_OK;
}

/* READ_MEM: words of a PE's int8 array (bytes, four a word, little-endian:
 * LOAD's payload), of its fp32 array, or of the controller's norms, inside
 * what CONFIGURE laid out.  A debug read: nothing is charged. */
static int op_read_mem(tsr_kstate *st, const uint32_t c[TSR_CMD_WORDS], volatile uint32_t *out_w,
                       volatile float *out_f, uint32_t room, uint32_t *out_n)
{
#pragma HLS INLINE
    uint32_t p = c[TSR_CMD_A0], region = c[TSR_CMD_A1], off = c[TSR_CMD_A2], len = c[TSR_CMD_A3];
    if (region == TSR_REG_W8) {
        if (p >= st->P || off > st->w8_used[p] || len > st->w8_used[p] - off ||
            tsr_cdiv(len, 4u) > room)
            return TSR_K_EARG;
        /* a platform that keeps the bytes its own way reads them back */
        uint32_t nw = TSR_FAST_READ_W8(st, p, off, len, out_w) ? 0u : tsr_cdiv(len, 4u);
read_w8:
        for (uint32_t k = 0; k < nw; k++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_LOAD_WORDS
#pragma HLS PIPELINE II=1
            uint32_t w = 0;
read_w8_bytes:
            for (uint32_t i = 0; i < 4u; i++) {
#pragma HLS UNROLL
                uint32_t a = off + 4u * k + i;
                if (4u * k + i < len)
                    w |= (uint32_t)(uint8_t)st->w8[p][a / TSR_LANES][a % TSR_LANES] << (8u * i);
            }
            out_w[k] = w;
        }
        *out_n = tsr_cdiv(len, 4u);
        return TSR_K_OK;
    }
    if (region == TSR_REG_F32) {
        if (p >= st->P || off > st->f32_used[p] || len > st->f32_used[p] - off || len > room)
            return TSR_K_EARG;
read_f32:
        for (uint32_t i = 0; i < len; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_LOAD_WORDS
#pragma HLS PIPELINE II=1
            out_f[i] = st->f32[p][off + i];
        }
        *out_n = len;
        return TSR_K_OK;
    }
    if (region == TSR_REG_CTRL) {
        /* the norm rows, RoPE's frequencies, the bias rows, in LOAD's order */
        uint32_t cw = tsr_lay_ctrl_words(&st->cfg), dim = st->cfg.dim;
        if (p != 0 || off > cw || len > cw - off || len > room) return TSR_K_EARG;
        ctrl_cur c = ctrl_at(st, off);
read_ctrl:
        for (uint32_t i = 0; i < len; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_LIT_CTRL_WORDS
#pragma HLS PIPELINE II=1
            out_f[i] = c.a < c.norms ? st->rms[c.row][c.col]
                     : c.a < c.rope_end ? st->rope_freq[c.a - c.norms] : st->qkvb[c.brow][c.bcol];
            ctrl_next(&c, dim);
        }
        *out_n = len;
        return TSR_K_OK;
    }
    return TSR_K_EARG;
}

/* READ_COUNTERS: every field as (low, high) words, in field order. */
static void put64(volatile uint32_t *out, uint32_t room, uint32_t *k, uint64_t v)
{
    if (*k + 1u < room) {
        out[*k] = (uint32_t)v;
        out[*k + 1u] = (uint32_t)(v >> 32);
    }
    *k += 2u;
}

static int op_read_counters(tsr_kstate *st, volatile uint32_t *out, uint32_t room, uint32_t *out_n)
{
#pragma HLS INLINE
    const tsr_kcounters *n = &st->cnt;
    uint32_t k = 0;
cnt_runs:
    for (uint32_t i = 0; i < TSR_OP_COUNT; i++) put64(out, room, &k, n->runs[i]);
    put64(out, room, &k, n->tokens_fed);
    put64(out, room, &k, n->tokens_sampled);
    put64(out, room, &k, n->macs);
    put64(out, room, &k, n->fabric_bcast_bytes);
    put64(out, room, &k, n->fabric_reduce_bytes);
    put64(out, room, &k, n->fabric_gather_bytes);
    put64(out, room, &k, n->attended);
    put64(out, room, &k, n->load_bytes);
    put64(out, room, &k, n->n_pes);
    put64(out, room, &k, n->last_pos);
cnt_cycles:
    for (uint32_t r = 0; r < TSR_RG_COUNT; r++) put64(out, room, &k, n->cyc[r]);
cnt_marks:
    for (uint32_t r = 0; r < TSR_RG_COUNT; r++) put64(out, room, &k, n->cyc_mark[r]);
cnt_pes:
    for (uint32_t p = 0; p < TSR_PES; p++) put64(out, room, &k, n->pe_sram_bytes[p]);
    *out_n = k < room ? k : room & ~1u;
    return TSR_K_OK;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                   */

int tsr_kernel_exec(tsr_kstate *st, const uint32_t c[TSR_CMD_WORDS], const uint32_t *in_w,
                    const float *in_f, volatile uint32_t *out_w, volatile float *out_f,
                    volatile const uint32_t *hdr, volatile const float *link_in,
                    volatile float *link_out, uint32_t *out_n)
{
#pragma HLS INLINE
    uint32_t op = c[TSR_CMD_OP], s = c[TSR_CMD_SLOT];
    uint32_t in_n = c[TSR_CMD_IN_WORDS], room = c[TSR_CMD_OUT_WORDS];
    *out_n = 0;
    if (op >= TSR_OP_COUNT) return TSR_K_EOP;
    st->cnt.runs[op]++;
    switch (op) {
    case TSR_OP_NOP:
    case TSR_OP_EXIT:
        return TSR_K_OK;
    case TSR_OP_LOAD:
        return op_load(st, c, in_w, in_f, in_n);
    case TSR_OP_CONFIGURE:
        return op_configure(st, in_w, in_f, in_n, out_w, room, out_n);
    case TSR_OP_READ_COUNTERS:
        return op_read_counters(st, out_w, room, out_n);
    default:
        break;
    }
    /* the rest need a configured device and a valid slot */
    if (!st->configured) return TSR_K_ESTATE;
    /* (FORWARD checks its SLOT itself, after its link-in header) */
    if (op != TSR_OP_DECODE_BATCH && op != TSR_OP_READ_MEM && op != TSR_OP_FORWARD &&
        s >= st->cfg.n_slots)
        return TSR_K_EARG;
    switch (op) {
    case TSR_OP_RESET:
        slot_reset(st, s);
        return TSR_K_OK;
    case TSR_OP_TRUNCATE: {
        int32_t pos = (int32_t)c[TSR_CMD_A0], pending = (int32_t)c[TSR_CMD_A1];
        if (pos < 0 || pos > st->pos[s]) return TSR_K_ERANGE;
        if (pending < -1 || pending >= (int32_t)st->cfg.vocab_size) return TSR_K_EARG;
        st->pos[s] = pos;
        st->pending[s] = pending;
        return TSR_K_OK;
    }
    case TSR_OP_PREFILL:
    case TSR_OP_DECODE:
    case TSR_OP_DECODE_BATCH:
    case TSR_OP_READ_LOGITS:
    case TSR_OP_FORWARD:
#ifndef __SYNTHESIS__
        /* the emulator and tests: a stage whose link port is not there (an
         * AXI4-Stream port of the top always is) */
        if (op == TSR_OP_FORWARD &&
            (((st->cfg.stage & TSR_STAGE_LINK_IN) && !link_in) ||
             ((st->cfg.stage & TSR_STAGE_LINK_OUT) && !link_out)))
            return TSR_K_ESTATE;
#endif
        return op_forward(st, c, in_w, in_f, in_n, out_w, out_f, room, hdr, link_in, link_out,
                          out_n);
    case TSR_OP_READ_MEM:
        return op_read_mem(st, c, out_w, out_f, room, out_n);
    default:
        return TSR_K_EOP;
    }
}

/* ------------------------------------------------------------------------ */
/* The ring                                                                   */

/* The cycles the model has charged, every region (nothing in hardware,
 * where TSR_CHARGE is nothing: tsr_cycles.h). */
static uint64_t cycles_charged(const tsr_kstate *st)
{
#pragma HLS INLINE
    uint64_t t = 0;
#ifndef __SYNTHESIS__
cycles_sum:
    for (uint32_t r = 0; r < TSR_RG_COUNT; r++) t += st->cnt.cyc[r];
#endif
    (void)st;
    return t;
}

void tsr_kernel_serve(tsr_kstate *st, volatile uint32_t *ctl, const uint32_t *in_w,
                      const float *in_f, volatile uint32_t *out_w, volatile float *out_f,
                      volatile const float *link_in, volatile float *link_out)
{
#pragma HLS INLINE
    uint32_t n = ctl[TSR_CTL_RING_N], k = 0, seq = 1;
    if (n == 0 || n > TSR_RING_MAX) return;
    uint32_t resp0 = TSR_CTL_RESP(n);
    TSR_PUBLISH(&ctl[TSR_CTL_SERVING], 1u);
serve_commands:
    for (;;) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_RING_MAX
        uint32_t e = TSR_CTL_CMD0 + k * TSR_CMD_WORDS, v;
        /* wait for entry k's sequence number (the host writes it last) */
serve_wait:
        while ((v = TSR_OBSERVE(&ctl[e])) != seq) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=1000
            TSR_WAIT_WORD(&ctl[e], v);
        }
        uint32_t c[TSR_CMD_WORDS];
serve_read:
        for (uint32_t i = 0; i < TSR_CMD_WORDS; i++) {
#pragma HLS PIPELINE II=1
            c[i] = ctl[e + i];   /* back to back: one round trip, not 16 */
        }
        uint32_t out_n = 0;
        uint64_t cy0 = cycles_charged(st);
        int status = tsr_kernel_exec(st, c, in_w + c[TSR_CMD_IN_OFF], in_f + c[TSR_CMD_IN_OFF],
                                     out_w + c[TSR_CMD_OUT_OFF], out_f + c[TSR_CMD_OUT_OFF],
                                     ctl, link_in, link_out, &out_n);
        uint32_t r = resp0 + k * TSR_RESP_WORDS;
        ctl[r + TSR_RESP_STATUS] = (uint32_t)status;
        ctl[r + TSR_RESP_OUT_WORDS] = out_n;
        ctl[r + TSR_RESP_CYCLES] = (uint32_t)(cycles_charged(st) - cy0);
        TSR_PUBLISH(&ctl[r + TSR_RESP_SEQ], seq);
        if (c[TSR_CMD_OP] == TSR_OP_EXIT) break;
        k = k + 1u == n ? 0u : k + 1u;
        seq++;
    }
}

/* ------------------------------------------------------------------------ */
/* Synthesis top                                                              */

#if TSR_PLATFORM_TOP
void tessera_top(volatile uint32_t *ctl, const uint32_t *in_w, const float *in_f,
                 volatile uint32_t *out_w, volatile float *out_f, volatile const float *link_in,
                 volatile float *link_out)
{
#pragma HLS INTERFACE m_axi port=ctl offset=slave bundle=gmem0 depth=TSR_LIT_CTL_DEPTH
#pragma HLS INTERFACE m_axi port=in_w offset=slave bundle=gmem1 depth=TSR_LIT_IN_DEPTH max_read_burst_length=256
#pragma HLS INTERFACE m_axi port=in_f offset=slave bundle=gmem1 depth=TSR_LIT_IN_DEPTH max_read_burst_length=256
    /* the answers share the ring's bundle: a command's answer words and
     * then its response's sequence word leave on one AXI master, in
     * program order (docs/hls-flow.md, "The command ring") */
#pragma HLS INTERFACE m_axi port=out_w offset=slave bundle=gmem0 depth=TSR_LIT_OUT_DEPTH
#pragma HLS INTERFACE m_axi port=out_f offset=slave bundle=gmem0 depth=TSR_LIT_OUT_DEPTH
#pragma HLS INTERFACE axis port=link_in depth=TSR_LIT_LINK_WORDS
#pragma HLS INTERFACE axis port=link_out depth=TSR_LIT_LINK_WORDS
#pragma HLS INTERFACE s_axilite port=return
    /* The state lives as long as this call: the whole time the model is
     * loaded (docs/hls-flow.md, "A persistent kernel").  C simulation keeps
     * it off the stack. */
#ifdef __SYNTHESIS__
    tsr_kstate st;
#else
    static tsr_kstate st;
#endif
#pragma HLS DISAGGREGATE variable=st
    /* Where these partitions take effect: every function that takes st
     * (tsr_kernel_serve, tsr_kernel_exec, the op_* steps, tsr_forward,
     * the tsr_mesh_* and attention steps, the sampler) is INLINE, each
     * with one call site in this view, so the PE index of st.w8[p],
     * st.kv[p], ... is resolved here, in the function that defines st
     * (UG1399 "pragma HLS array_partition": the pragma goes where the
     * array is defined).  The PE functions below them (pe_gemv, pe_att,
     * pe_tree_add, ...) take one PE's plain arrays and restate the lane
     * partition or reshape on their parameters.  hw/lint_hls.py's
     * partition-call rule checks both, with no exception for st. */
    /* every PE its own memories (dim 1: the PE), wide enough for its lanes */
#pragma HLS ARRAY_PARTITION variable=st.w8 type=complete dim=1
#pragma HLS ARRAY_RESHAPE variable=st.w8 type=complete dim=3
#pragma HLS BIND_STORAGE variable=st.w8 type=ram_1p impl=uram
#pragma HLS ARRAY_PARTITION variable=st.f32 type=complete dim=1
#if TSR_F32_URAM
#pragma HLS BIND_STORAGE variable=st.f32 type=ram_2p impl=uram
#else
#pragma HLS BIND_STORAGE variable=st.f32 type=ram_2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.psum type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.psum type=cyclic factor=TSR_VEC dim=3
#if TSR_PSUM_LUT
#pragma HLS BIND_STORAGE variable=st.psum type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=st.psum type=ram_2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.xq type=complete dim=1
#pragma HLS ARRAY_RESHAPE variable=st.xq type=complete dim=4
#if TSR_XQ_LUT
#pragma HLS BIND_STORAGE variable=st.xq type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=st.xq type=ram_2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.xs type=complete dim=1
#if TSR_XS_LUT
#pragma HLS BIND_STORAGE variable=st.xs type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=st.xs type=ram_2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.xf type=complete dim=1
#if TSR_WITH_F32
#pragma HLS ARRAY_PARTITION variable=st.xf type=cyclic factor=TSR_VEC dim=3
#endif
    /* the attention PEs': word-major, a lane a bank (dim 3, or dim 2 for
     * the per-head scalars), except the KV caches, whose lanes are one
     * memory word (dim 3 reshaped: 8 x 32, 16 or 8 bits): an UltraRAM is
     * 4K x 72 whatever the width used, so a lane a memory would take 3
     * URAMs a lane for stories15m's 9,216 words where the word takes 4 x 3
     * for all 8 (UG949 "Mapping Memories to UltraRAM Blocks") */
#pragma HLS ARRAY_PARTITION variable=st.kv type=complete dim=1
#pragma HLS ARRAY_RESHAPE variable=st.kv type=complete dim=3
#if TSR_KV_URAM
#pragma HLS BIND_STORAGE variable=st.kv type=ram_t2p impl=uram
#else
#pragma HLS BIND_STORAGE variable=st.kv type=ram_t2p impl=bram
#endif
#if TSR_WITH_KV_F16
#pragma HLS ARRAY_PARTITION variable=st.kvh type=complete dim=1
#pragma HLS ARRAY_RESHAPE variable=st.kvh type=complete dim=3
#if TSR_KV_URAM
#pragma HLS BIND_STORAGE variable=st.kvh type=ram_t2p impl=uram
#else
#pragma HLS BIND_STORAGE variable=st.kvh type=ram_t2p impl=bram
#endif
#endif
#if TSR_WITH_KV_INT8
#pragma HLS ARRAY_PARTITION variable=st.kvq type=complete dim=1
#pragma HLS ARRAY_RESHAPE variable=st.kvq type=complete dim=3
#if TSR_KV_URAM
#pragma HLS BIND_STORAGE variable=st.kvq type=ram_t2p impl=uram
#else
#pragma HLS BIND_STORAGE variable=st.kvq type=ram_t2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.kvs type=complete dim=1
#endif
#pragma HLS ARRAY_PARTITION variable=st.qkvw type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.qkvw type=complete dim=3
#if TSR_QKVW_LUT
#pragma HLS BIND_STORAGE variable=st.qkvw type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=st.qkvw type=ram_2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.att type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.att type=complete dim=3
#if TSR_ATT_LUT
#pragma HLS BIND_STORAGE variable=st.att type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=st.att type=ram_2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.ao type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.ao type=complete dim=3
#if TSR_AO_LUT
#pragma HLS BIND_STORAGE variable=st.ao type=ram_2p impl=lutram
#else
#pragma HLS BIND_STORAGE variable=st.ao type=ram_2p impl=bram
#endif
#pragma HLS ARRAY_PARTITION variable=st.am type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.asum type=complete dim=1
#pragma HLS BIND_STORAGE variable=st.am type=ram_2p impl=lutram
#pragma HLS BIND_STORAGE variable=st.asum type=ram_2p impl=lutram
    /* per-PE scalars and tables, read by every PE task at once: one each */
#pragma HLS ARRAY_PARTITION variable=st.tab_row0 type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_rows type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_g0 type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_ng type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_woff type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_foff type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_cols type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_ent type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.tab_steps type=complete dim=1
    /* ... each PE's TSR_MAX_MATS words in LUTRAM, not BRAM (plan counts none) */
#pragma HLS BIND_STORAGE variable=st.tab_row0 type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_rows type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_g0 type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_ng type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_woff type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_foff type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_cols type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_ent type=ram_1p impl=lutram
#pragma HLS BIND_STORAGE variable=st.tab_steps type=ram_1p impl=lutram
    /* the gather's source tables: read combinationally as a root ends */
#pragma HLS BIND_STORAGE variable=st.root_pe type=ram_2p impl=lutram
#pragma HLS BIND_STORAGE variable=st.root_w0 type=ram_2p impl=lutram
#pragma HLS BIND_STORAGE variable=st.root_w1 type=ram_2p impl=lutram
#pragma HLS ARRAY_PARTITION variable=st.best_v type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.best_i type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=st.kv_h0 type=complete
#pragma HLS ARRAY_PARTITION variable=st.kv_nh type=complete
#pragma HLS ARRAY_PARTITION variable=st.kv_q type=complete
#pragma HLS ARRAY_PARTITION variable=st.kv_q0 type=complete
#pragma HLS ARRAY_PARTITION variable=st.kv_k0 type=complete
#pragma HLS ARRAY_PARTITION variable=st.kv_blkw type=complete
#pragma HLS ARRAY_PARTITION variable=st.kv_blks type=complete
    /* the controller's memories: its vectors and the norm weights in
     * TSR_VEC banks (a word's lane l in bank l), the sampler's copy in
     * TSR_SUM_E banks (its reduction reads that many a cycle) */
#pragma HLS ARRAY_PARTITION variable=st.cv type=cyclic factor=TSR_VEC dim=2
    /* dual-port banks: in_q8_quant and the sum passes read two values a
     * bank a cycle (the fifth HLS review); the implementation is HLS's */
#pragma HLS BIND_STORAGE variable=st.cv type=ram_2p
#pragma HLS ARRAY_PARTITION variable=st.logits type=cyclic factor=TSR_VEC dim=2
#pragma HLS ARRAY_PARTITION variable=st.rms type=cyclic factor=TSR_VEC dim=2
#pragma HLS ARRAY_PARTITION variable=st.qkvb type=cyclic factor=TSR_VEC dim=2
#if TSR_SUM_E > 1
#pragma HLS ARRAY_PARTITION variable=st.probs type=cyclic factor=TSR_LIT_SUM_E
#endif
#pragma HLS ARRAY_PARTITION variable=st.wmax type=cyclic factor=TSR_LIT_WMAX_PORTS dim=2
#pragma HLS ARRAY_PARTITION variable=st.ssq type=complete dim=2
#pragma HLS ARRAY_PARTITION variable=st.rope_pj type=cyclic factor=TSR_VEC_PAIRS
#pragma HLS ARRAY_PARTITION variable=st.rope_cos type=complete dim=2
#pragma HLS ARRAY_PARTITION variable=st.rope_sin type=complete dim=2
    tsr_kernel_init(&st);
    tsr_kernel_serve(&st, ctl, in_w, in_f, out_w, out_f, link_in, link_out);
}
#endif
