/*
 * tsr_kernel.h - the tessera kernel's interface: the only kernels/ header
 * the driver includes.
 *
 * One persistent kernel, tessera_top, is started once when the device opens
 * and serves commands until EXIT:
 *
 *   host                                  device (tessera_top -> tsr_kernel_serve)
 *   ctl: command ring, seq word last --->  wait for ring[k].seq == k + 1
 *   in:  payload (weights, ids, config) >  run the op on the on-chip state
 *   out: answer (token ids as sampled) <-  out[0] = count, published per token
 *   ctl: response k, seq word last   <---  status, words written
 *
 * The on-chip state (weights and KV cache in the PEs' memories, per-slot
 * positions, RNGs, counters) is a tsr_kstate: a local variable of
 * tessera_top on the FPGA (it never returns while the model is loaded, so
 * nothing relies on initialised static memory, which UltraScale+ URAM
 * lacks), owned by the device thread in the emulator (emu/, driver/
 * backend_emu.c), which runs the same tsr_kernel_serve.
 *
 * `in` and `out` are each bound to two m_axi ports, one read as uint32 and
 * one as fp32 (the host binds one buffer to both), so the kernel never
 * reinterprets bits.  The layout arithmetic lives in tsr_layout.h, shared
 * with the driver's weight image builder and planner.
 */
#ifndef TSR_KERNEL_H
#define TSR_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "tsr_platform.h"
#include "tsr_cycles.h"
#include "tsr_layout.h"
#include "tsr_profile.h"
#include "tsr_profile.def"

/* ------------------------------------------------------------------------ */
/* Commands                                                                   */

/* The op of a command. */
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
    TSR_OP_EXIT,          /* leave tsr_kernel_serve (tessera_top returns)  */
    TSR_OP_DECODE_BATCH,  /* generate for several slots, one pass a step  */
    TSR_OP_READ_MEM,      /* a PE's int8 / fp32 array or the controller's
                             norms -> out (a debug read, the mirror of LOAD) */
    TSR_OP_FORWARD,       /* one pass of a pipeline stage: ids or link-in
                             -> its layers -> link-out, or the sampled id */
    TSR_OP_COUNT
};

/* A command: TSR_CMD_WORDS words.  In the ring, word 0 is the sequence
 * number the host writes last; the kernel ignores it in tsr_kernel_exec. */
enum {
    TSR_CMD_SEQ = 0,
    TSR_CMD_OP,
    TSR_CMD_SLOT,
    TSR_CMD_IN_OFF,      /* first word of the payload in `in`              */
    TSR_CMD_IN_WORDS,    /* payload words                                  */
    TSR_CMD_OUT_OFF,     /* first word of the answer in `out`              */
    TSR_CMD_OUT_WORDS,   /* room for the answer, words                     */
    TSR_CMD_A0, TSR_CMD_A1, TSR_CMD_A2, TSR_CMD_A3, TSR_CMD_A4, TSR_CMD_A5,
    TSR_CMD_WORDS = 16
};

/* Arguments per op (A0..A5; payload in `in`, answer in `out`):
 *   LOAD:          A0 pe, A1 region (TSR_REG_*), A2 offset, A3 length, in
 *                  region units (bytes for W8, fp32 words otherwise);
 *                  payload: W8 bytes packed little-endian 4 to a word,
 *                  fp32 values otherwise.
 *   CONFIGURE:     payload: tsr_kconfig, TSR_KCONFIG_INTS words then its 2
 *                  fp32 words; answer: tsr_kfit (TSR_KFIT_WORDS).  Resets
 *                  every slot.
 *   RESET:         SLOT.
 *   TRUNCATE:      SLOT, A0 pos (0..current pos), A1 pending token (int32,
 *                  -1: none).
 *   PREFILL:       SLOT, A0 n (>= 1); payload: n token ids.  Fed in
 *                  blocks of up to TSR_MAX_BLOCK positions a pass.
 *   DECODE:        SLOT, A0 n, A1/A2 seed low/high words, A3 TSR_DEC_*
 *                  flags; payload: fp32 temperature, fp32 top_p; answer:
 *                  word 0 the tokens written so far (published as each is
 *                  sampled), word 1 + i token i.
 *   DECODE_BATCH:  A0 stride; payload: word 0 the sequences m (1 ..
 *                  TSR_MAX_BATCH, distinct slots), then m records of
 *                  TSR_BATCH_WORDS (TSR_BATCH_*); every step one pass for
 *                  the sequences still going; answer: sequence k's region
 *                  at word k * stride, as DECODE's (its count, published
 *                  per token, then its tokens, at most stride - 1).  A
 *                  sequence stops at its n, BOS/EOS, seq_len, the cancel
 *                  word or its slot's cancel word; the others go on.
 *   READ_LOGITS:   SLOT; answer: the logits (vocab fp32, at most OUT_WORDS)
 *                  of the last full pass (its first item's), if that item
 *                  was SLOT's at the slot's last position (pos - 1); bad
 *                  state otherwise (none yet, a prefill since, another
 *                  slot's, or the slot reset or truncated back since).
 *   READ_COUNTERS: answer: tsr_kcounters as (low, high) word pairs, in
 *                  field order, at most OUT_WORDS words.
 *   EXIT:          none.
 *   READ_MEM:      A0 pe, A1 region, A2 offset, A3 length as LOAD's, inside
 *                  what CONFIGURE laid out; answer: the words as LOAD's
 *                  payload (W8 bytes 4 to a word, little-endian).
 *   FORWARD:       SLOT, A0 n items (1..TSR_MAX_BLOCK) at the slot's next
 *                  positions pos .. pos + n - 1 (pos += n; pending is not
 *                  used), A1 TSR_FWDC_* flags, A2/A3 seed low/high words;
 *                  payload: fp32 temperature, fp32 top_p, then (a stage
 *                  without TSR_STAGE_LINK_IN) the n token ids.  A stage
 *                  with LINK_IN reads the header and the n residual
 *                  vectors from link-in (TSR_LINK_HDR words: n, slot, pos,
 *                  dim, as fp32 integers; they must match: EARG); one with
 *                  LINK_OUT writes the same to link-out after its layers.
 *                  The last stage (no LINK_OUT) with TSR_FWDC_SAMPLE
 *                  samples the token after the last item (greedy when the
 *                  temperature or top_p is 0, else the slot's RNG, reseeded
 *                  with TSR_FWDC_RESEED); answer: that id (1 word).  A
 *                  model on one device (stage 0) takes it too.  A stage
 *                  takes no PREFILL, DECODE or DECODE_BATCH (ESTATE);
 *                  the last one READ_LOGITS after a sampled FORWARD.
 *                  With TSR_FWDC_BATCH in A1: A0 m items (1 ..
 *                  TSR_MAX_BATCH), each one position of its own slot
 *                  (distinct slots; SLOT is not used); payload: m records
 *                  of TSR_FWDB_WORDS (TSR_FWDB_*: slot, token id (a stage
 *                  without LINK_IN), RESEED flag, seed, temperature,
 *                  top_p, a reserved word 0); the link header's slot and
 *                  pos are item 0's; with TSR_FWDC_SAMPLE the last stage
 *                  samples every item with its record's sampler, answer:
 *                  the m ids in item order.  A stage takes a decode batch
 *                  of sequences this way: one pass over its weights for
 *                  all of them.  A stage with LINK_IN reads the pass's
 *                  header before any check; refusing the pass, it reads
 *                  the rest of it too (the next pass starts clean). */

/* LOAD regions. */
enum { TSR_REG_W8 = 0,   /* a PE's int8 array (bytes)                      */
       TSR_REG_F32,      /* a PE's fp32 array (words)                      */
       TSR_REG_CTRL,     /* the controller's norm weights, RoPE frequencies
                            and QKV biases (words; pe = 0; tsr_layout.h) */
       TSR_REG_COUNT };

/* FORWARD flags (A1). */
#define TSR_FWDC_SAMPLE     1u  /* the last stage samples after the last item */
#define TSR_FWDC_RESEED     2u  /* restart the slot's RNG from the seed     */
#define TSR_FWDC_BATCH      4u  /* items of several slots, from records     */

/* A FORWARD batch record (words; temperature and top_p read as fp32). */
enum { TSR_FWDB_SLOT = 0, TSR_FWDB_TOKEN, TSR_FWDB_FLAGS, TSR_FWDB_SEED_LO, TSR_FWDB_SEED_HI,
       TSR_FWDB_TEMP, TSR_FWDB_TOP_P, TSR_FWDB_RESERVED, TSR_FWDB_WORDS };

/* DECODE flags. */
#define TSR_DEC_RESEED      1u  /* restart the slot's RNG from the seed     */
#define TSR_DEC_IGNORE_STOP 2u  /* do not stop at the configured BOS / EOS  */

/* A DECODE_BATCH record (words; temperature and top_p read as fp32). */
enum { TSR_BATCH_SLOT = 0, TSR_BATCH_N, TSR_BATCH_FLAGS, TSR_BATCH_SEED_LO, TSR_BATCH_SEED_HI,
       TSR_BATCH_TEMP, TSR_BATCH_TOP_P, TSR_BATCH_RESERVED, TSR_BATCH_WORDS };

/* ---- the ring (ctl, uint32 words) -------------------------------------- */

#define TSR_CTL_RING_N   0u    /* entries in the ring, 1..TSR_RING_MAX (host, before start) */
#define TSR_CTL_CANCEL   1u    /* non-zero: the running DECODE stops          */
#define TSR_CTL_SERVING  2u    /* the kernel writes 1 when it starts serving  */
/* Slot s's cancel word (s < 8): non-zero stops that slot's sequence of a
 * running DECODE or DECODE_BATCH. */
#define TSR_CTL_CANCEL_SLOT(s) (8u + (uint32_t)(s))
#define TSR_CTL_CMD0     16u   /* entry k at TSR_CTL_CMD0 + k * TSR_CMD_WORDS */
/* Response k at TSR_CTL_RESP(n) + k * TSR_RESP_WORDS: the command's
 * sequence number (published last), its status, its answer words, and
 * the cycles the cycle model charged it (every region; its low 32 bits;
 * in the emulator and C simulation, 0 on a card: tsr_cycles.h). */
#define TSR_CTL_RESP(n)  (TSR_CTL_CMD0 + (uint32_t)(n) * TSR_CMD_WORDS)
enum { TSR_RESP_SEQ = 0, TSR_RESP_STATUS, TSR_RESP_OUT_WORDS, TSR_RESP_CYCLES,
       TSR_RESP_WORDS };
/* The ctl buffer's words for a ring of n entries. */
#define TSR_CTL_WORDS(n) (TSR_CTL_RESP(n) + (uint32_t)(n) * TSR_RESP_WORDS)

/* Kernel status (a response's status word). */
enum {
    TSR_K_OK = 0,
    TSR_K_EOP,        /* unknown op                                        */
    TSR_K_EARG,       /* bad argument: slot, token, LOAD bounds, ...       */
    TSR_K_ESTATE,     /* not configured, or no pending token to decode     */
    TSR_K_ESHAPE,     /* config exceeds the profile's shapes or mesh       */
    TSR_K_ECAPACITY,  /* config exceeds a PE's memories                    */
    TSR_K_ERANGE,     /* positions would pass seq_len                      */
};

/* CONFIGURE's answer (TSR_KFIT_WORDS words). */
enum {
    TSR_KFIT_STATUS = 0,   /* TSR_K_*                                      */
    TSR_KFIT_W8_WORDS,     /* int8 words needed by the fullest PE          */
    TSR_KFIT_F32_WORDS,    /* fp32 words (scales / F32 tiles), fullest PE  */
    TSR_KFIT_KV_WORDS,     /* KV words, fullest PE                         */
    TSR_KFIT_ROWS,         /* partial sums of the largest tile             */
    TSR_KFIT_CTRL_WORDS,   /* controller fp32 words                        */
    TSR_KFIT_TOTAL_LO,     /* bytes needed on chip, all PEs + controller   */
    TSR_KFIT_TOTAL_HI,
    TSR_KFIT_WORDS
};

/* ------------------------------------------------------------------------ */
/* Counters (READ_COUNTERS)                                                   */

/* Cycle-accounting regions.  Every loop on the per-token path charges its
 * trip count x II + depth to one of them (tsr_cycles.h); a parallel region
 * charges the maximum over its PE instances.  Controller regions come
 * first: the controller's share of the critical path is their sum over
 * the total (the regions run one after another). */
enum {
    TSR_RG_EMBED = 0,   /* controller: the embedding row into the residual stream */
    TSR_RG_NORM,        /* controller: RMSNorm sum of squares and its scale       */
    TSR_RG_INPUT,       /* controller: quantize (Q8) / pad (F32), broadcast       */
    TSR_RG_GATHER,      /* controller: GEMV outputs over the bus (+ residual)     */
    TSR_RG_ROPE,        /* controller: RoPE                                       */
    TSR_RG_ATT_IO,      /* controller: q, k, v to the KV PEs, head outputs back   */
    TSR_RG_SAMPLE,      /* controller: sampling, the id out, the cancel words     */
    TSR_RG_LINK,        /* controller: a stage's residual vectors over its card
                           links (link-in: the hop and the words; link-out)      */
    TSR_RG_GEMV,        /* mesh: PE tiles and SwiGLU (busiest PE)                 */
    TSR_RG_TREE,        /* mesh: the column adder trees                           */
    TSR_RG_ATTN,        /* mesh: attention on the KV PEs (busiest PE)             */
    TSR_RG_ATT_TREE,    /* mesh: combining a KV head's PEs (kv_split > 1)         */
    TSR_RG_ARGMAX,      /* mesh: greedy sampling, best per PE then a tree         */
    TSR_RG_COUNT
};
#define TSR_RG_FIRST_MESH TSR_RG_GEMV

/* Every field is a uint64_t count, sent as (low, high) word pairs in field
 * order; pe_sram_bytes is last, because its length is the profile's: a
 * host built with another profile than the card's still reads every field
 * before it. */
typedef struct tsr_kcounters {
    uint64_t runs[TSR_OP_COUNT];      /* commands run, per op                */
    uint64_t tokens_fed;              /* forward passes                      */
    uint64_t tokens_sampled;
    uint64_t macs;                    /* multiply-accumulates (GEMV + attn)  */
    uint64_t fabric_bcast_bytes;      /* GEMV inputs broadcast to the PEs    */
    uint64_t fabric_reduce_bytes;     /* partial sums moved by column trees  */
    uint64_t fabric_gather_bytes;     /* results back to the controller, KV
                                         writes, embedding rows            */
    uint64_t attended;                /* (query head, position) pairs        */
    uint64_t load_bytes;              /* weight image bytes accepted         */
    uint64_t n_pes;                   /* PEs in the configured mesh          */
    uint64_t last_pos;                /* position of the last forward pass   */
    uint64_t cyc[TSR_RG_COUNT];       /* cycles charged per region           */
    uint64_t cyc_mark[TSR_RG_COUNT];  /* cyc when the last forward began:
                                         cyc - cyc_mark is that pass (and
                                         its sampling)                      */
    uint64_t pe_sram_bytes[TSR_MAX_PES]; /* bytes in use per PE              */
} tsr_kcounters;

/* uint64 fields before pe_sram_bytes: runs[], the 10 scalars, cyc[] and
 * cyc_mark[]. */
#define TSR_KCOUNTERS_FIXED ((uint32_t)TSR_OP_COUNT + 10u + 2u * (uint32_t)TSR_RG_COUNT)
TSR_STATIC_CHECK(kcounters_fixed,
                 offsetof(tsr_kcounters, pe_sram_bytes) == 8u * TSR_KCOUNTERS_FIXED);

/* The link buffers' sizes in words, and so the m_axi depths of tessera_top:
 * `in` holds two LOAD payloads (the host fills one while the kernel copies
 * the other) or a prompt; `out` the largest answer (decoded ids, logits,
 * counters). */
#define TSR_LOAD_WORDS   (1u << 18)      /* one LOAD's payload, at most (1 MiB) */
#define TSR_LOAD_MAX     (4u * TSR_LOAD_WORDS) /* its bytes (W8) */
#define TSR_IN_WORDS     (2u * TSR_LOAD_WORDS)
#define TSR_OUT_WORDS_   (TSR_MAX_VOCAB > TSR_MAX_SEQ + 1 ? TSR_MAX_VOCAB : TSR_MAX_SEQ + 1)
#define TSR_CNT_WORDS    (2u * (TSR_KCOUNTERS_FIXED + TSR_PES))
#define TSR_OUT_WORDS    (TSR_OUT_WORDS_ > TSR_CNT_WORDS ? TSR_OUT_WORDS_ : TSR_CNT_WORDS)
/* A link port's words: a pass's header and its items' residual vectors
 * (the AXI4-Stream ports' depths for C simulation). */
#define TSR_LINK_WORDS   (TSR_LINK_HDR + TSR_MAX_BLOCK * TSR_MAX_DIM)
#define TSR_CTL_DEPTH    TSR_CTL_WORDS(TSR_RING_MAX)
#define TSR_IN_DEPTH     TSR_IN_WORDS
#define TSR_OUT_DEPTH    TSR_OUT_WORDS


/* ------------------------------------------------------------------------ */
/* Device state                                                               */

/* One PE's tile of one matrix, as CONFIGURE lays it out (tsr_layout.h):
 * rows [row0, row0 + rows) of the matrix (of each half of W13), groups
 * [g0, g0 + ngroups), its first int8 byte and first fp32 word. */
typedef struct tsr_ktab {
    uint32_t row0, rows;
    uint32_t g0, ngroups;
    uint32_t w_off, f_off;
    uint32_t cols;         /* C_m, the matrix's columns (tsr_lay_mat_cols) */
} tsr_ktab;

/* The device: controller state, then the PEs' memories, each an array over
 * the profile's TSR_PES PEs (partitioned per PE in tessera_top, so every
 * PE owns its memories; in the emulator one reservation, each PE's slice
 * placed on its worker's NUMA node). */
typedef struct tsr_kstate {
    /* --- configuration (CONFIGURE) --- */
    tsr_kconfig cfg;                      /* valid when configured          */
    uint32_t configured;
    uint32_t P, R, C;                     /* PEs, mesh rows and columns     */
    uint32_t hs, kv_dim, kv_mul, seq_local;
    float    sqrt_hs;                     /* sqrtf(head_size)               */
    uint32_t mat_rot[TSR_MAX_MATS];       /* each matrix's rotation (PEs)   */
    uint32_t mat_cols[TSR_MAX_MATS];      /* each matrix's columns C_m      */
    uint32_t mat_d[TSR_MAX_MATS];         /* its rows d, inputs n, 1 for W13's */
    uint32_t mat_n[TSR_MAX_MATS];         /* pair (tsr_lay_mat_shape, once)  */
    uint32_t mat_pair[TSR_MAX_MATS];
    uint32_t mat_q4[TSR_MAX_MATS];        /* 1: its tiles are Q4_0          */
    /* each matrix's mesh-row roots in row order (the gather's sources):
     * PE, first and end bus word of its rows; mat_nroots of them */
    uint32_t mat_nroots[TSR_MAX_MATS];
    uint32_t root_pe[TSR_MAX_MATS][TSR_PES];
    uint32_t root_w0[TSR_MAX_MATS][TSR_PES];
    uint32_t root_w1[TSR_MAX_MATS][TSR_PES];
    uint32_t w8_used[TSR_PES];            /* int8 bytes per PE              */
    uint32_t f32_used[TSR_PES];           /* fp32 words per PE              */
    uint32_t kv_h0[TSR_ATT_PES];          /* an attention PE's first KV head  */
    uint32_t kv_nh[TSR_ATT_PES];          /* its KV heads (0: none)          */
    uint32_t kv_q[TSR_ATT_PES];           /* its place in its head group    */
    uint32_t kv_q0[TSR_ATT_PES];          /* its first q element in q | k | v */
    uint32_t kv_k0[TSR_ATT_PES];          /* its first k element            */
    uint32_t kv_blkw[TSR_ATT_PES];        /* KV words of one (slot, layer)  */
    uint32_t kv_blks[TSR_ATT_PES];        /* its int8 scales (2 x its heads
                                             x seq_local; any precision)  */
    uint32_t kv_pe[TSR_MAX_KV_HEADS];     /* each KV head's first PE        */
    uint32_t kv_j[TSR_MAX_KV_HEADS];      /* its index among that PE's heads */
    uint32_t kv_ow[TSR_MAX_KV_HEADS];     /* its outputs' first attention word there */
    uint32_t g_log2;                      /* log2(group)                    */
    uint32_t cpg_log2;                    /* log2(chunks a group), 0 for G <= TSR_LANES */
    uint32_t q_log2;                      /* log2(kv_split)                 */
    float    rope_freq[TSR_MAX_HEAD_SIZE / 2]; /* theta^(-2j / head_size) at
                                             CONFIGURE; the image's (LOAD) */
    uint32_t rope_pj[TSR_MAX_QKV / 2];    /* pair i/2 of q|k -> (i % head_size) / 2 */
    /* --- per slot --- */
    int32_t  pos[TSR_MAX_SLOTS];          /* tokens in the KV cache         */
    int32_t  pending[TSR_MAX_SLOTS];      /* next token to feed, -1 none    */
    uint64_t rng[TSR_MAX_SLOTS];          /* xorshift64* state              */
    uint32_t logits_valid;
    uint32_t logits_on_pes;               /* the last pass left them on the PEs */
    uint32_t logits_slot, logits_pos;     /* whose they are: its first item's
                                             slot and position              */
    /* --- controller memories --- */
    /* norm weights: rms_att of layer l at row l, rms_ffn at L + l,
     * rms_final at 2L */
    float    rms[TSR_RMS_ROWS][TSR_PAD32(TSR_MAX_DIM)];
    /* q | k | v biases (qkv_bias): layer l's at row l, in the gather's
     * order (bank l % TSR_VEC for element l, as cv's) */
    float    qkvb[TSR_MAX_LAYERS][TSR_PAD32(TSR_MAX_QKV)];
    /* each item's vectors: x at TSR_CV_X, xn at TSR_CV_XN, q | k | v at
     * TSR_CV_QKV (tsr_profile.h); a batch item's logits */
    float    cv[TSR_MAX_BLOCK][TSR_CV_WORDS];
    float    logits[TSR_MAX_BATCH][TSR_LOGIT_WORDS];
    float    rope_cos[TSR_MAX_BLOCK][TSR_MAX_HEAD_SIZE / 2]; /* (head_size / 2,) an item's position */
    float    rope_sin[TSR_MAX_BLOCK][TSR_MAX_HEAD_SIZE / 2];
    float    wmax[TSR_MAX_BLOCK][TSR_MAX_IN_VWORDS]; /* quantizer: max |xn| per TSR_VEC word */
    float    ssq[TSR_MAX_BLOCK][TSR_SUM_LANES];      /* RMSNorm: sum-of-squares partials */
    uint32_t ssq_fresh[TSR_MAX_BLOCK];    /* 1: the residual gather left them (x unchanged since) */
    float    probs[TSR_MAX_VOCAB];        /* (vocab,) the sampler's copy    */
    float    cand_p[TSR_MAX_VOCAB];       /* top-p candidates: probabilities */
    int32_t  cand_i[TSR_MAX_VOCAB];       /* top-p candidates: token ids    */
    tsr_kcounters cnt;
    /* --- per PE (small) --- */
    /* each PE's tile of each matrix (tsr_ktab's fields, a plain array
     * each, so every PE reads its own; tsr_ktab_of in tsr_ops.h) */
    uint32_t tab_row0[TSR_PES][TSR_MAX_MATS], tab_rows[TSR_PES][TSR_MAX_MATS];
    uint32_t tab_g0[TSR_PES][TSR_MAX_MATS], tab_ng[TSR_PES][TSR_MAX_MATS];
    uint32_t tab_woff[TSR_PES][TSR_MAX_MATS], tab_foff[TSR_PES][TSR_MAX_MATS];
    uint32_t tab_cols[TSR_PES][TSR_MAX_MATS];
    uint32_t tab_ent[TSR_PES][TSR_MAX_MATS];   /* entries of a half: rows x ngroups */
    uint32_t tab_steps[TSR_PES][TSR_MAX_MATS]; /* a half's pipeline steps, one item */
    uint32_t pe_cy[TSR_PES];              /* cycles of the last PE task     */
    float    best_v[TSR_PES][TSR_MAX_BLOCK]; /* greedy: a root's best logit, its row, per item */
    uint32_t best_i[TSR_PES][TSR_MAX_BLOCK];
    float    am[TSR_ATT_PES][TSR_MAX_HEADS];  /* attention: max score, per query head */
    float    asum[TSR_ATT_PES][TSR_MAX_HEADS]; /* sum of exp(score - max)    */
    /* --- PE memories --- */
    TSR_MEM_ALIGN int8_t   w8[TSR_PES][TSR_PE_W8_WORDS][TSR_LANES]; /* int8 tiles          */
    TSR_MEM_ALIGN float    f32[TSR_PES][TSR_PE_F32_WORDS];          /* scales / F32 tiles  */
    /* the attention PEs' memories, in words of TSR_ATT_LANES (a lane is a
     * bank) or TSR_VEC (their copy of q | k | v, latched off the bus) */
    TSR_MEM_ALIGN float    kv[TSR_ATT_PES][TSR_PE_KV_AW][TSR_ATT_LANES];  /* KV cache, fp32 */
    TSR_MEM_ALIGN uint16_t kvh[TSR_ATT_PES][TSR_PE_KVH_AW][TSR_ATT_LANES]; /* ..., IEEE half */
    TSR_MEM_ALIGN int8_t   kvq[TSR_ATT_PES][TSR_PE_KVQ_AW][TSR_ATT_LANES]; /* ..., int8      */
    TSR_MEM_ALIGN float    kvs[TSR_ATT_PES][TSR_KVS_DIM];                 /* its scales     */
    TSR_MEM_ALIGN float    qkvw[TSR_ATT_PES][TSR_PE_QKV_VW][TSR_VEC];     /* q | k | v      */
    TSR_MEM_ALIGN float    att[TSR_ATT_PES][TSR_PE_ATT_AW][TSR_ATT_LANES]; /* scores         */
    TSR_MEM_ALIGN float    ao[TSR_ATT_PES][TSR_PE_AO_AW][TSR_ATT_LANES];  /* head outputs   */
    /* per item of the pass: a tile's outputs, the broadcast input (Q8:
     * int8 words and group scales; F32: values) */
    TSR_MEM_ALIGN float    psum[TSR_PES][TSR_MAX_BLOCK][TSR_PE_ROWS];
    TSR_MEM_ALIGN int8_t   xq[TSR_PES][TSR_MAX_BLOCK][TSR_PE_XQ_WORDS][TSR_LANES];
    TSR_MEM_ALIGN float    xs[TSR_PES][TSR_MAX_BLOCK][TSR_PE_XS];
    TSR_MEM_ALIGN float    xf[TSR_PES][TSR_MAX_BLOCK][TSR_PE_XF];
    /* the platform's own (tsr_platform.h; the emulator's worker pool,
     * SIMD switches and tables): none in hardware */
    TSR_PLATFORM_STATE
} tsr_kstate;


/* Clear st's configuration, slots and counters (not the PE memories). */
void tsr_kernel_init(tsr_kstate *st);

/* Run one command c (TSR_CMD_WORDS words; TSR_CMD_SEQ ignored) on st.
 * in_w/in_f: the payload (the same words, read as uint32 / fp32; the
 * command's IN_OFF already applied), out_w/out_f: the answer (OUT_OFF
 * applied).  hdr: the ring's header, TSR_CTL_CMD0 words, whose cancel
 * words (TSR_CTL_CANCEL, TSR_CTL_CANCEL_SLOT) are polled once per decode
 * step.  link_in / link_out: the stage's link ports (a pass of at most
 * TSR_LINK_WORDS fp32, read and written in order from word 0, each word
 * once: a FORWARD on a stage with TSR_STAGE_LINK_IN reads its pass's
 * header first and, refusing the pass, the rest of it too; only FORWARD
 * on a stage with TSR_STAGE_LINK_IN / LINK_OUT touches them; may be NULL
 * otherwise).
 * Returns TSR_K_*; *out_n gets the answer words written. */
int tsr_kernel_exec(tsr_kstate *st, const uint32_t c[TSR_CMD_WORDS], const uint32_t *in_w,
                    const float *in_f, volatile uint32_t *out_w, volatile float *out_f,
                    volatile const uint32_t *hdr, volatile const float *link_in,
                    volatile float *link_out, uint32_t *out_n);

/* Serve the ring in ctl until EXIT: the body of tessera_top.  ctl holds
 * TSR_CTL_WORDS(ctl[TSR_CTL_RING_N]) words; link_in / link_out as for
 * tsr_kernel_exec. */
void tsr_kernel_serve(tsr_kstate *st, volatile uint32_t *ctl, const uint32_t *in_w,
                      const float *in_f, volatile uint32_t *out_w, volatile float *out_f,
                      volatile const float *link_in, volatile float *link_out);

#if TSR_PLATFORM_TOP
/* The synthesis top: five m_axi ports (ctl volatile, in read as uint32 and
 * as fp32, out written as uint32 and as fp32; the host binds one buffer to
 * each pair), two AXI4-Stream ports of fp32 words (link_in, link_out: a
 * pipeline stage's card-to-card links, TSR_LINK_WORDS a pass at most;
 * volatile pointers, each access the stream's next word: TSR_LINK_GET in
 * tsr_hls.h), ap_ctrl_hs control.  Started once; returns after EXIT. */
void tessera_top(volatile uint32_t *ctl, const uint32_t *in_w, const float *in_f,
                 volatile uint32_t *out_w, volatile float *out_f, volatile const float *link_in,
                 volatile float *link_out);
#endif

/* ------------------------------------------------------------------------ */
/* A profile's figures, as the host needs them                                */

/* What the driver checks a model against: the emulator's compiled profile,
 * a card's (its xclbin's tessera_profile key, hw/profile_kv.c), or a
 * shipped one for `tessera plan` (driver/profiles.c). */
typedef struct tsr_kprofile {
#define TSR_PF_MEMBER_(member, key, macro, need) uint32_t member;
    TSR_PROFILE_FIELDS(TSR_PF_MEMBER_)   /* tsr_profile.def: each figure's meaning */
#undef TSR_PF_MEMBER_
} tsr_kprofile;

/* The figures of the profile this file is compiled with (or of the profile
 * header included last, as driver/profiles.c reads each in turn). */
#define TSR_PF_INIT_(member, key, macro, need) macro,
#define TSR_KPROFILE_INIT   { TSR_PROFILE_FIELDS(TSR_PF_INIT_) }

#endif
