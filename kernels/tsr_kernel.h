/*
 * tsr_kernel.h - the command interface of the tessera kernel: the only
 * kernels/ header the driver includes.
 *
 * One top-level kernel is driven by 8-word commands:
 *
 *   host                          device (tessera_top / tsr_kernel_run)
 *   cmd[8] + in[] ---- h2d ---->  decode op -> run it on the mesh state
 *   out[]         <--- d2h -----  token ids, status figures, debug data
 *
 * The device state (weights and KV cache in the PEs' SRAM, per-slot
 * positions, RNGs, counters) persists between commands: `static` inside
 * tessera_top on the FPGA, a tsr_kstate owned by the emulator backend.
 * The layout arithmetic lives in tsr_layout.h (included here) so the
 * driver's weight image builder and the kernel agree by construction.
 */
#ifndef TSR_KERNEL_H
#define TSR_KERNEL_H

#include <stdint.h>

#include "tsr_layout.h"
#include "tsr_profile.h"

/* ------------------------------------------------------------------------ */
/* Commands                                                                   */

/* cmd[0]: the op. */
enum {
    TSR_OP_NOP = 0,
    TSR_OP_LOAD,          /* write a chunk of the weight image             */
    TSR_OP_CONFIGURE,     /* set shapes and mesh; answer the fit           */
    TSR_OP_RESET,         /* slot -> empty                                 */
    TSR_OP_TRUNCATE,      /* slot -> (pos, pending)                        */
    TSR_OP_PREFILL,       /* feed n tokens into the slot's KV cache        */
    TSR_OP_DECODE,        /* generate up to n tokens on the device          */
    TSR_OP_READ_LOGITS,   /* logits of the last full forward pass -> out   */
    TSR_OP_READ_COUNTERS, /* tsr_kcounters -> out                          */
    TSR_OP_COUNT
};

/* Command words.  Per op:
 *   LOAD:          A0 pe, A1 region (TSR_REG_*), A2 offset, A3 length, both
 *                  in region units (bytes for I8, fp32 words otherwise);
 *                  in = the data (I8 bytes packed little-endian in words).
 *   CONFIGURE:     in = tsr_kconfig (TSR_KCONFIG_WORDS); out = tsr_kfit.
 *                  Resets every slot.
 *   RESET:         SLOT.
 *   TRUNCATE:      SLOT, A0 pos (0..current pos), A1 pending token (int32,
 *                  -1: none).
 *   PREFILL:       SLOT, A0 n (>= 1); in = n token ids.
 *   DECODE:        SLOT, A0 n, A1 temperature (fp32 bits), A2 top_p (fp32
 *                  bits), A3/A4 seed low/high words, A5 TSR_DEC_* flags;
 *                  out[0] = tokens written so far (updated as each token is
 *                  sampled), out[1 + i] = token i.
 *   READ_LOGITS:   A0 n (words of out); out = logits (vocab fp32).
 *   READ_COUNTERS: A0 n (words of out); out = tsr_kcounters.            */
enum { TSR_CMD_OP = 0, TSR_CMD_SLOT, TSR_CMD_A0, TSR_CMD_A1, TSR_CMD_A2, TSR_CMD_A3,
       TSR_CMD_A4, TSR_CMD_A5, TSR_CMD_WORDS };

/* LOAD regions. */
enum { TSR_REG_I8 = 0,   /* a PE's int8 array (bytes)                      */
       TSR_REG_F32,      /* a PE's fp32 array (words)                      */
       TSR_REG_CTRL,     /* the controller's norm weights (words; pe = 0)  */
       TSR_REG_COUNT };

/* DECODE flags. */
#define TSR_DEC_RESEED      1u  /* restart the slot's RNG from the seed     */
#define TSR_DEC_IGNORE_STOP 2u  /* do not stop at BOS (1) / EOS (2)         */

#define TSR_TOKEN_BOS 1
#define TSR_TOKEN_EOS 2

/* Kernel status (the return value of a run). */
enum {
    TSR_K_OK = 0,
    TSR_K_EOP,        /* unknown op                                        */
    TSR_K_EARG,       /* bad argument: slot, token, LOAD bounds, ...       */
    TSR_K_ESTATE,     /* not configured, or no pending token to decode     */
    TSR_K_ESHAPE,     /* config exceeds the profile's shapes or mesh       */
    TSR_K_ECAPACITY,  /* config exceeds a PE's SRAM arrays                 */
    TSR_K_ERANGE,     /* positions would pass seq_len                      */
};

/* CONFIGURE's answer (out, TSR_KFIT_WORDS words). */
typedef struct tsr_kfit {
    uint32_t status;        /* TSR_K_*                                     */
    uint32_t i8_bytes;      /* int8 bytes needed by the fullest PE         */
    uint32_t f32_words;     /* fp32 words needed by the fullest PE (weights
                               or scales + KV cache)                       */
    uint32_t ctrl_words;    /* controller fp32 words                       */
    uint32_t i8_have;       /* TSR_PE_I8_BYTES                             */
    uint32_t f32_have;      /* TSR_PE_F32_WORDS                            */
    uint32_t total_lo;      /* bytes needed on chip, all PEs + controller  */
    uint32_t total_hi;
} tsr_kfit;
#define TSR_KFIT_WORDS 8

/* ------------------------------------------------------------------------ */
/* Counters (READ_COUNTERS)                                                   */

/* ---- work counts for the cycle model (driver/plan.c converts them) ----
 * What the critical path of a forward pass executes: for mesh work, the
 * busiest PE (PEs run in parallel); for controller work, the controller.
 * Counted from the tile shapes the kernel runs, once per call (never in an
 * inner loop).  Cumulative; `work_mark` is a copy taken when each forward
 * pass starts, so work - work_mark is the last pass (with its sampling). */
typedef struct tsr_kwork {
    uint64_t forwards;      /* forward passes                                */
    uint64_t pos_sum;       /* sum of their positions                        */
    uint64_t gemvs;         /* mesh GEMVs                                    */
    uint64_t gemv_in;       /* controller: GEMV input elements, padded (ng*G) */
    uint64_t gemv_pe_macs;  /* busiest PE's MACs (rows x ngroups x G), summed */
    uint64_t tree_levels;   /* adder-tree levels, log2(C) per GEMV           */
    uint64_t tree_rows;     /* per level, rows added on the busiest mesh row */
    uint64_t gemv_out;      /* controller: GEMV outputs gathered (d)         */
    uint64_t embed;         /* controller: embedding elements gathered (padded) */
    uint64_t attn_units;    /* busiest PE: KV units (layer, kv head) run     */
    uint64_t attn_heads;    /* busiest PE: query heads run (one softmax each) */
    uint64_t attn_len;      /* busiest PE: positions attended, summed over heads */
    uint64_t norms;         /* controller: RMSNorms                          */
    uint64_t norm_elems;    /* their elements (two passes each)              */
    uint64_t vec_elems;     /* controller: RoPE pairs, residual, SwiGLU elements */
    uint64_t logits;        /* controller: logits the sampler scans          */
} tsr_kwork;

/* Count one mesh GEMV of a (d, n) matrix into w: the busiest PE's MACs and
 * its mesh row's adder-tree work (tsr_layout.h tiles). */
static inline void tsr_kwork_gemv(const tsr_kconfig *c, uint32_t d, uint32_t n, tsr_kwork *w)
{
    uint32_t P = tsr_lay_pes(c), levels = 0, rmax = 0;
    uint64_t mmax = 0;
    for (uint32_t p = 0; p < P; p++) {
#ifdef __SYNTHESIS__ /* driver/ includes this header too: keep its -Wall quiet */
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_PES
#endif
        tsr_tile t = tsr_lay_tile(c, d, n, p);
        uint64_t m = (uint64_t)t.rows * t.ngroups * c->group;
        if (m > mmax) mmax = m;
        if (t.rows > rmax) rmax = t.rows;
    }
    for (uint32_t s = 1; s < c->mesh_cols && levels < 32u; s *= 2u) levels++;
    w->gemvs++;
    w->gemv_in += (uint64_t)tsr_cdiv(n, c->group) * c->group;
    w->gemv_pe_macs += mmax;
    w->tree_levels += levels;
    w->tree_rows += (uint64_t)levels * rmax;
    w->gemv_out += d;
}

/* Count one layer's attention at position pos into w: the units of a layer
 * (consecutive unit ids, placed u % P) put at most ceil(n_kv_heads / P) on
 * one PE; each runs kv_mul query heads over pos + 1 positions. */
static inline void tsr_kwork_attention(const tsr_kconfig *c, uint32_t pos, tsr_kwork *w)
{
    uint64_t units = tsr_cdiv(c->n_kv_heads, tsr_lay_pes(c));
    uint64_t heads = units * (c->n_heads / c->n_kv_heads);
    w->attn_units += units;
    w->attn_heads += heads;
    w->attn_len += heads * (pos + 1u);
}

typedef struct tsr_kcounters {
    uint64_t runs[TSR_OP_COUNT];      /* kernel runs per op                  */
    uint64_t tokens_fed;              /* forward passes                      */
    uint64_t tokens_sampled;
    uint64_t macs;                    /* multiply-accumulates (GEMV + attn)  */
    uint64_t fabric_bcast_bytes;      /* activation slices broadcast to PEs  */
    uint64_t fabric_reduce_bytes;     /* partial sums moved by adder trees   */
    uint64_t fabric_gather_bytes;     /* results back to the controller, KV
                                         writes, embedding row gathers       */
    uint64_t attended;                /* (query head, position) pairs        */
    uint64_t load_bytes;              /* weight image bytes accepted         */
    uint32_t n_pes;                   /* PEs in the configured mesh          */
    uint32_t pad_;
    /* cycle-model work counts (see tsr_kwork) */
    tsr_kwork work;                   /* since tsr_kernel_init               */
    tsr_kwork work_mark;              /* `work` when the last forward began  */
    /* Last, because its length is the profile's: a host built with another
     * profile than the card's still reads every field above correctly. */
    uint64_t pe_sram_bytes[TSR_MAX_PES]; /* SRAM bytes in use per PE         */
} tsr_kcounters;

/* ------------------------------------------------------------------------ */
/* Device state                                                               */

/* One PE's private SRAM. */
typedef struct tsr_pe {
    int8_t w8[TSR_PE_I8_BYTES];    /* int8 weight tiles, matrix order        */
    float  f32[TSR_PE_F32_WORDS];  /* scales (Q8) or weights (F32), then KV  */
    float  psum[TSR_MAX_OUT];      /* (tile rows,) partial sums of a GEMV    */
    float  att[TSR_MAX_SEQ];       /* (pos + 1,) scores of one head          */
} tsr_pe;

/* Host builds are emulator builds unless they say otherwise: lint and
 * synthesis define __SYNTHESIS__, a C-simulation testbench of tessera_top
 * defines TSR_CSIM.  The state layout differs, so every host object that
 * includes this header must agree (the Makefile passes -DTSR_EMU). */
#if !defined(TSR_EMU) && !defined(__SYNTHESIS__) && !defined(TSR_CSIM)
#define TSR_EMU
#endif

/* The PE array: its own allocation per PE in the emulator (placed on a NUMA
 * node by the backend), a static array on the FPGA.  TSR_PE(st, p) hides
 * the difference. */
#ifdef TSR_EMU
#define TSR_PE_ARRAY_DECL tsr_pe *pe[TSR_MAX_PES]
#define TSR_PE(st, p) ((st)->pe[p])
#else
#define TSR_PE_ARRAY_DECL tsr_pe pe[TSR_MAX_PES]
#define TSR_PE(st, p) (&(st)->pe[p])
#endif

typedef struct tsr_kstate {
    tsr_kconfig cfg;                   /* valid when configured             */
    uint32_t configured;
    uint32_t pe_avail;                 /* PEs that exist (emulator: allocated) */
    uint32_t i8_off[TSR_MAX_PES][TSR_MAX_MATS];  /* tile offset per PE, bytes */
    uint32_t f32_off[TSR_MAX_PES][TSR_MAX_MATS]; /* tile offset per PE, words */
    uint32_t i8_used[TSR_MAX_PES];     /* weight bytes per PE               */
    uint32_t kv_off[TSR_MAX_PES];      /* first KV word per PE              */
    uint32_t kv_end[TSR_MAX_PES];      /* fp32 words in use per PE          */
    /* per slot */
    int32_t  pos[TSR_MAX_SLOTS];       /* tokens in the KV cache            */
    int32_t  pending[TSR_MAX_SLOTS];   /* next token to feed, -1 none       */
    uint64_t rng[TSR_MAX_SLOTS];       /* xorshift64* state                 */
    uint32_t logits_valid;
    /* controller */
    float    ctrl[TSR_CTRL_WORDS];     /* rms_att (L,dim), rms_ffn (L,dim), rms_final (dim,) */
    float    x[TSR_MAX_DIM];           /* (dim,) residual stream            */
    float    xb[TSR_MAX_DIM];          /* (dim,) normed input / attention out */
    float    xb2[TSR_MAX_DIM];         /* (dim,) wo / w2 output             */
    float    q[TSR_MAX_DIM];           /* (dim,) query                      */
    float    k[TSR_MAX_DIM];           /* (kv_dim,) key                     */
    float    v[TSR_MAX_DIM];           /* (kv_dim,) value                   */
    float    hb[TSR_MAX_HIDDEN];       /* (hidden,) w1 out, then silu * w3  */
    float    hb2[TSR_MAX_HIDDEN];      /* (hidden,) w3 out                  */
    float    logits[TSR_MAX_VOCAB];    /* (vocab,)                          */
    float    xin[TSR_MAX_IN];          /* (ng*G,) F32 GEMV input, zero padded */
    int8_t   xq[TSR_MAX_IN];           /* (ng*G,) Q8 GEMV input, zero padded  */
    float    xs[TSR_MAX_IN_GROUPS];    /* (ng,) its scales                  */
    float    probs[TSR_MAX_VOCAB];     /* (vocab,) sampler's copy of logits  */
    float    cand_p[TSR_MAX_VOCAB];    /* top-p candidates: probabilities   */
    int32_t  cand_i[TSR_MAX_VOCAB];    /* top-p candidates: token ids       */
    tsr_kcounters cnt;
    TSR_PE_ARRAY_DECL;
#ifdef TSR_EMU
    struct tsr_emu_pool *pool;         /* emulator: worker threads over the PEs
                                          (emu/tsr_emu.h); NULL: one thread   */
    uint32_t simd;                     /* emulator: 1 = SIMD rows (emu/)      */
#endif
} tsr_kstate;

/* Clear st (unconfigured, counters zero) and record how many PEs exist
 * (emulator: how many st->pe[] the owner allocated; they are kept). */
void tsr_kernel_init(tsr_kstate *st, uint32_t pe_avail);

/* Run one command on st: the core of tessera_top, called directly by the
 * emulator.  in/out may be NULL for ops that do not use them; out must hold
 * what the op writes (DECODE: 1 + n words).  cancel (may be NULL) is polled
 * once per decoded token.  Returns TSR_K_*. */
int tsr_kernel_run(tsr_kstate *st, const uint32_t cmd[TSR_CMD_WORDS], const uint32_t *in,
                   uint32_t *out, volatile const uint32_t *cancel);

#ifndef TSR_EMU
/* The synthesis top: m_axi in/out/cancel, s_axilite cmd and return.  The
 * status travels in the s_axilite return register. */
int tessera_top(const uint32_t cmd[TSR_CMD_WORDS], const uint32_t *in, uint32_t *out,
                volatile const uint32_t *cancel);
#endif

#endif
