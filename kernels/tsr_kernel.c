/*
 * tsr_kernel.c - the command dispatcher: the kernel's top level.
 *
 *   cmd (8 words) -> op
 *     LOAD       in (chunk) -----------------> PE int8 / fp32 array, controller
 *     CONFIGURE  in (tsr_kconfig) -> validate against the profile -> layout
 *                tables -> out (tsr_kfit)
 *     PREFILL    in (token ids) -> forward each -> KV caches (last one pending)
 *     DECODE     loop: forward(pending) -> logits -> sample -> out[1+i],
 *                out[0] = i+1 -> stop at n / BOS / EOS / seq_len / cancel
 *     READ_*     controller state -> out
 *
 * tessera_top (FPGA) keeps tsr_kstate static; the emulator owns one.
 */
#include <stddef.h>
#include <string.h>

#include "tsr_hls.h"

/* RNG state of a fresh slot; xorshift must never hold 0. */
#define TSR_RNG_DEFAULT 0x9E3779B97F4A7C15ull

/* ------------------------------------------------------------------------ */
/* State                                                                      */

void tsr_kernel_init(tsr_kstate *st, uint32_t pe_avail)
{
    memset(st, 0, offsetof(tsr_kstate, pe));
    st->pe_avail = pe_avail;
}

static void slot_reset(tsr_kstate *st, uint32_t s)
{
    st->pos[s] = 0;
    st->pending[s] = -1;
    st->rng[s] = TSR_RNG_DEFAULT + s;
}

static float f32_of(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/* ------------------------------------------------------------------------ */
/* CONFIGURE                                                                  */

/* Shapes and mesh within the profile?  TSR_K_OK or TSR_K_ESHAPE. */
static int check_shape(const tsr_kconfig *c, uint32_t pe_avail)
{
    if (c->magic != TSR_KCONFIG_MAGIC) return TSR_K_EARG;
    if (c->dim == 0 || c->hidden_dim == 0 || c->n_layers == 0 || c->n_heads == 0 ||
        c->n_kv_heads == 0 || c->vocab_size == 0 || c->seq_len == 0 || c->n_slots == 0 ||
        c->group == 0 || c->mesh_rows == 0 || c->mesh_cols == 0)
        return TSR_K_EARG;
    if (c->dim % c->n_heads || c->n_heads % c->n_kv_heads || (c->dim / c->n_heads) % 2u)
        return TSR_K_EARG;
    if (c->dtype != TSR_KDT_Q8 && c->dtype != TSR_KDT_F32) return TSR_K_EARG;
    if ((c->mesh_cols & (c->mesh_cols - 1u)) != 0) return TSR_K_EARG;
    if (c->dim > TSR_MAX_DIM || c->hidden_dim > TSR_MAX_HIDDEN || c->n_layers > TSR_MAX_LAYERS ||
        c->n_heads > TSR_MAX_HEADS || c->n_kv_heads > TSR_MAX_KV_HEADS ||
        c->dim / c->n_heads > TSR_MAX_HEAD_SIZE || c->vocab_size > TSR_MAX_VOCAB ||
        c->seq_len > TSR_MAX_SEQ || c->n_slots > TSR_MAX_SLOTS || c->group < TSR_MIN_GROUP ||
        c->group > TSR_MAX_GROUP || c->mesh_rows > TSR_MAX_MESH_ROWS ||
        c->mesh_cols > TSR_MAX_MESH_COLS || c->mesh_rows * c->mesh_cols > TSR_MAX_PES ||
        c->mesh_rows * c->mesh_cols > pe_avail)
        return TSR_K_ESHAPE;
    return TSR_K_OK;
}

static int op_configure(tsr_kstate *st, const uint32_t *in, uint32_t *out)
{
    tsr_kconfig c;
    tsr_kfit fit;
    memcpy(&c, in, sizeof c);
    memset(&fit, 0, sizeof fit);
    fit.i8_have = TSR_PE_I8_BYTES;
    fit.f32_have = TSR_PE_F32_WORDS;
#ifdef TSR_EMU
    uint32_t avail = st->pe_avail;
#else
    uint32_t avail = TSR_MAX_PES;
#endif
    st->configured = 0;
    int rc = check_shape(&c, avail);
    if (rc == TSR_K_OK) {
        /* footprint of the fullest PE, and the total */
        uint32_t P = c.mesh_rows * c.mesh_cols;
        uint64_t total = 4u * (uint64_t)tsr_lay_ctrl_words(&c);
        uint64_t max_b = 0, max_w = 0;
cfg_fit_pes:
        for (uint32_t p = 0; p < P; p++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_PES
            uint64_t b, w;
            tsr_lay_pe_weights(&c, p, &b, &w);
            w += tsr_lay_kv_words(&c, p);
            if (b > max_b) max_b = b;
            if (w > max_w) max_w = w;
            total += b + 4u * w;
        }
        fit.i8_bytes = max_b > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)max_b;
        fit.f32_words = max_w > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)max_w;
        fit.ctrl_words = tsr_lay_ctrl_words(&c);
        fit.total_lo = (uint32_t)total;
        fit.total_hi = (uint32_t)(total >> 32);
        if (max_b > TSR_PE_I8_BYTES || max_w > TSR_PE_F32_WORDS) rc = TSR_K_ECAPACITY;
    }
    if (rc == TSR_K_OK) {
        /* the layout tables: each matrix's tile offset on each PE */
        uint32_t P = c.mesh_rows * c.mesh_cols, nm = tsr_lay_n_mats(&c);
cfg_offsets_pes:
        for (uint32_t p = 0; p < P; p++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_PES
            uint32_t b = 0, w = 0;
cfg_offsets_mats:
            for (uint32_t m = 0; m < nm; m++) {
#pragma HLS LOOP_TRIPCOUNT min=8 max=TSR_MAX_MATS
                uint32_t d, n;
                tsr_lay_mat_shape(&c, m, &d, &n);
                tsr_tile t = tsr_lay_tile(&c, d, n, p);
                st->i8_off[p][m] = b;
                st->f32_off[p][m] = w;
                b += tsr_lay_tile_i8(&c, t);
                w += tsr_lay_tile_f32(&c, t);
            }
            st->i8_used[p] = b;
            st->kv_off[p] = w;
            st->kv_end[p] = w + (uint32_t)tsr_lay_kv_words(&c, p);
            st->cnt.pe_sram_bytes[p] = b + 4u * (uint64_t)st->kv_end[p];
        }
cfg_clear_pes:
        for (uint32_t p = P; p < TSR_MAX_PES; p++) st->cnt.pe_sram_bytes[p] = 0;
        st->cnt.n_pes = P;
        st->cfg = c;
        st->configured = 1;
        st->logits_valid = 0;
cfg_slots:
        for (uint32_t s = 0; s < TSR_MAX_SLOTS; s++) slot_reset(st, s);
    }
    fit.status = (uint32_t)rc;
    if (out) memcpy(out, &fit, sizeof fit);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* LOAD                                                                       */

static int op_load(tsr_kstate *st, const uint32_t cmd[TSR_CMD_WORDS], const uint32_t *in)
{
    uint32_t p = cmd[TSR_CMD_A0], region = cmd[TSR_CMD_A1];
    uint64_t off = cmd[TSR_CMD_A2], len = cmd[TSR_CMD_A3];
    if (!st->configured) return TSR_K_ESTATE;
    if (len == 0) return TSR_K_OK;
    if (!in) return TSR_K_EARG;
    switch (region) {
    case TSR_REG_I8:
        if (p >= tsr_lay_pes(&st->cfg) || off + len > st->i8_used[p]) return TSR_K_EARG;
        memcpy(TSR_PE(st, p)->w8 + off, in, (size_t)len);
        st->cnt.load_bytes += len;
        return TSR_K_OK;
    case TSR_REG_F32:
        if (p >= tsr_lay_pes(&st->cfg) || off + len > st->kv_off[p]) return TSR_K_EARG;
        memcpy(TSR_PE(st, p)->f32 + off, in, (size_t)len * 4u);
        st->cnt.load_bytes += 4u * len;
        return TSR_K_OK;
    case TSR_REG_CTRL:
        if (p != 0 || off + len > tsr_lay_ctrl_words(&st->cfg)) return TSR_K_EARG;
        memcpy(st->ctrl + off, in, (size_t)len * 4u);
        st->cnt.load_bytes += 4u * len;
        return TSR_K_OK;
    default:
        return TSR_K_EARG;
    }
}

/* ------------------------------------------------------------------------ */
/* Sequence ops                                                               */

static int op_prefill(tsr_kstate *st, uint32_t s, uint32_t n, const uint32_t *in)
{
    const tsr_kconfig *c = &st->cfg;
    if (n == 0 || !in) return TSR_K_EARG;
prefill_check:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
        if (in[i] >= c->vocab_size) return TSR_K_EARG;
    }
    /* positions this run fills: the pending token plus all but the last */
    uint32_t feed = n - 1u + (st->pending[s] >= 0 ? 1u : 0u);
    if ((uint64_t)st->pos[s] + feed > c->seq_len) return TSR_K_ERANGE;
    if (st->pending[s] >= 0) {
        tsr_forward(st, s, (uint32_t)st->pending[s], (uint32_t)st->pos[s], 0);
        st->pos[s]++;
    }
prefill_tokens:
    for (uint32_t i = 0; i + 1u < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_MAX_SEQ
        tsr_forward(st, s, in[i], (uint32_t)st->pos[s], 0);
        st->pos[s]++;
    }
    st->pending[s] = (int32_t)in[n - 1u];
    st->logits_valid = 0;
    return TSR_K_OK;
}

static int op_decode(tsr_kstate *st, const uint32_t cmd[TSR_CMD_WORDS], uint32_t *out,
                     volatile const uint32_t *cancel)
{
    const tsr_kconfig *c = &st->cfg;
    uint32_t s = cmd[TSR_CMD_SLOT], n = cmd[TSR_CMD_A0], flags = cmd[TSR_CMD_A5];
    float temperature = f32_of(cmd[TSR_CMD_A1]), top_p = f32_of(cmd[TSR_CMD_A2]);
    if (!out) return TSR_K_EARG;
    if (st->pending[s] < 0) return TSR_K_ESTATE;
    if (flags & TSR_DEC_RESEED) {
        uint64_t seed = (uint64_t)cmd[TSR_CMD_A3] | ((uint64_t)cmd[TSR_CMD_A4] << 32);
        st->rng[s] = seed ? seed : TSR_RNG_DEFAULT;
    }
    TSR_PUBLISH(&out[0], 0u);
decode_tokens:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_SEQ
        if (cancel && *cancel) break;
        if ((uint32_t)st->pos[s] >= c->seq_len) break;
        tsr_forward(st, s, (uint32_t)st->pending[s], (uint32_t)st->pos[s], 1);
        memcpy(st->probs, st->logits, c->vocab_size * sizeof(float));
        int32_t next = tsr_sample(st->probs, c->vocab_size, temperature, top_p, &st->rng[s],
                                  st->cand_p, st->cand_i);
        out[1u + i] = (uint32_t)next;
        TSR_PUBLISH(&out[0], i + 1u);
        st->pos[s]++;
        st->pending[s] = next;
        st->cnt.tokens_sampled++;
        if (!(flags & TSR_DEC_IGNORE_STOP) && (next == TSR_TOKEN_BOS || next == TSR_TOKEN_EOS))
            break;
    }
    return TSR_K_OK;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                   */

int tsr_kernel_run(tsr_kstate *st, const uint32_t cmd[TSR_CMD_WORDS], const uint32_t *in,
                   uint32_t *out, volatile const uint32_t *cancel)
{
    uint32_t op = cmd[TSR_CMD_OP], s = cmd[TSR_CMD_SLOT];
    if (op >= TSR_OP_COUNT) return TSR_K_EOP;
    st->cnt.runs[op]++;
    switch (op) {
    case TSR_OP_NOP:
        return TSR_K_OK;
    case TSR_OP_LOAD:
        return op_load(st, cmd, in);
    case TSR_OP_CONFIGURE:
        if (!in) return TSR_K_EARG;
        return op_configure(st, in, out);
    case TSR_OP_READ_COUNTERS: {
        uint32_t words = (uint32_t)(sizeof(tsr_kcounters) / 4u);
        if (!out) return TSR_K_EARG;
        memcpy(out, &st->cnt, 4u * (cmd[TSR_CMD_A0] < words ? cmd[TSR_CMD_A0] : words));
        return TSR_K_OK;
    }
    default:
        break;
    }
    /* the rest need a configured device and a valid slot */
    if (!st->configured) return TSR_K_ESTATE;
    if (op != TSR_OP_READ_LOGITS && s >= st->cfg.n_slots) return TSR_K_EARG;
    switch (op) {
    case TSR_OP_RESET:
        slot_reset(st, s);
        return TSR_K_OK;
    case TSR_OP_TRUNCATE: {
        int32_t pos = (int32_t)cmd[TSR_CMD_A0], pending = (int32_t)cmd[TSR_CMD_A1];
        if (pos < 0 || pos > st->pos[s]) return TSR_K_ERANGE;
        if (pending < -1 || pending >= (int32_t)st->cfg.vocab_size) return TSR_K_EARG;
        st->pos[s] = pos;
        st->pending[s] = pending;
        return TSR_K_OK;
    }
    case TSR_OP_PREFILL:
        return op_prefill(st, s, cmd[TSR_CMD_A0], in);
    case TSR_OP_DECODE:
        return op_decode(st, cmd, out, cancel);
    case TSR_OP_READ_LOGITS: {
        uint32_t n = cmd[TSR_CMD_A0] < st->cfg.vocab_size ? cmd[TSR_CMD_A0] : st->cfg.vocab_size;
        if (!out) return TSR_K_EARG;
        if (!st->logits_valid) return TSR_K_ESTATE;
        memcpy(out, st->logits, 4u * n);
        return TSR_K_OK;
    }
    default:
        return TSR_K_EOP;
    }
}

/* ------------------------------------------------------------------------ */
/* Synthesis top                                                              */

#ifndef TSR_EMU
int tessera_top(const uint32_t cmd[TSR_CMD_WORDS], const uint32_t *in, uint32_t *out,
                volatile const uint32_t *cancel)
{
#pragma HLS INTERFACE m_axi port=in offset=slave bundle=gmem0 max_read_burst_length=256
#pragma HLS INTERFACE m_axi port=out offset=slave bundle=gmem1
#pragma HLS INTERFACE m_axi port=cancel offset=slave bundle=gmem2 volatile
#pragma HLS INTERFACE s_axilite port=cmd
#pragma HLS INTERFACE s_axilite port=return
    /* On-chip state persists between invocations. */
    static tsr_kstate st;
    /* --- PE memories (hw/ flow; docs/hls-flow.md): each PE its own
     * memories; int8 tiles in URAM, 8 bytes per 72-bit word; scales/F32
     * tiles + KV cache in BRAM, or URAM (2 words per row) with
     * -DTSR_PE_F32_URAM, which hw/vitis.mk sets for stories15m to fit. */
#pragma HLS ARRAY_PARTITION variable=st.pe type=complete dim=1
#pragma HLS ARRAY_RESHAPE variable=st.pe.w8 type=cyclic factor=8 dim=1
#pragma HLS BIND_STORAGE variable=st.pe.w8 type=ram_2p impl=uram
#ifdef TSR_PE_F32_URAM
#pragma HLS ARRAY_RESHAPE variable=st.pe.f32 type=cyclic factor=2 dim=1
#pragma HLS BIND_STORAGE variable=st.pe.f32 type=ram_2p impl=uram
#else
#pragma HLS BIND_STORAGE variable=st.pe.f32 type=ram_2p impl=bram
#endif
#pragma HLS BIND_STORAGE variable=st.pe.psum type=ram_2p impl=bram
#pragma HLS BIND_STORAGE variable=st.pe.att type=ram_2p impl=bram
    /* --- end PE memories */
    return tsr_kernel_run(&st, cmd, in, out, cancel);
}
#endif
