/*
 * plan.h - `tessera plan`: will a model fit a part's on-chip memory, which
 * blocks and DSPs it takes, and how fast it would decode (projected).
 *
 * Three pieces, each in one place:
 *   1. bytes: per PE and per card, from the layout arithmetic the kernel and
 *      the weight image use (kernels/tsr_layout.h), so the plan's stationary
 *      bytes equal the emulator's per-PE SRAM by construction of the same
 *      functions, not by a second derivation;
 *   2. blocks and DSPs: the PE and controller arrays packed into BRAM36 /
 *      URAM blocks the way tessera_top partitions them (plan.c, "Packing"),
 *      and the floating-point operators the kernel's loops instantiate,
 *      against the part (hw/parts.def) minus its shell;
 *   3. cycles: what the kernel's own accounting charges for one decode step
 *      (kernels/tsr_cycles.h), region by region, computed here from the
 *      layout (tsr_plan_step) with the same helpers; tests/test_plan.c holds
 *      the two equal against the emulator's counters.
 * Every speed is a projection: nothing here was measured on hardware.
 */
#ifndef TSR_PLAN_H
#define TSR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"
#include "parts.h"
#include "plan_fit.h"
#include "tsr_kernel.h"

/* KV cache precision: TSR_KV_F32, TSR_KV_F16, TSR_KV_INT8 (the kernel's,
 * kernels/tsr_layout.h; int8: one fp32 scale per head vector per position). */

/* The cycles of a sampled token's id going back from the last stage to the
 * first (a ring's last hop): the hop's latency and one stream word
 * (TSR_LINK_HOP, kernels/tsr_arch.h). */
#define TSR_PLAN_RETURN_CYCLES ((uint64_t)TSR_LINK_HOP + 1u)

/* Stages plan reports one by one. */
#define TSR_PLAN_MAX_STAGES 16

/* A split's pipeline: a greedy decode token at one position. */
typedef struct tsr_plan_pipe {
    int cards;
    uint32_t seqs;                          /* sequences in flight          */
    uint64_t stage[TSR_PLAN_MAX_STAGES];    /* stage k's pass, cycles (its
                                               link-in and link-out included) */
    uint64_t link[TSR_PLAN_MAX_STAGES];     /* of which its link region       */
    uint64_t ret;                           /* the id back to stage 0        */
    uint64_t round;                         /* one sequence's token: every
                                               stage in turn plus ret        */
    uint64_t slowest;                       /* the slowest stage's pass      */
    double cycles_per_token;                /* seqs in flight: max(round /
                                               seqs, slowest), in steady
                                               state                         */
} tsr_plan_pipe;

/* What to plan.  Zero-initialise, then set part (required). */
typedef struct tsr_plan_req {
    const char *part;      /* hw/parts.def name, e.g. "u55c"                  */
    const char *profile;   /* a shipped profile (its datapath, limits and
                              arrays); NULL: the synthesis datapath of the
                              stories15m profile, arrays sized for the model */
    int weights_f32;       /* 1: F32 weights; 0: quantized                    */
    int weights;           /* quantized: TSR_WEIGHTS_FILE (the file's own,
                              Q8_0 for fp32), TSR_WEIGHTS_Q8, TSR_WEIGHTS_Q4 */
    int group;             /* group size; 0: the file's (32 for fp32)        */
    int kv;                /* TSR_KV_*                                        */
    int seq_len;           /* context; 0: the model's                         */
    int pes;               /* PEs per card; 0: choose (the fastest projected
                              that fits; 16 when nothing fits)                */
    int cols;              /* mesh columns; 0: 1                              */
    int kv_split;          /* PEs per KV head; 0: the profile's default       */
    int clock_mhz;         /* 0: the part's default clock                     */
    int pos;               /* position of the reported decode step; -1: the
                              last one (seq_len - 1)                          */
    int cards;             /* cards the layers are split over; 0: 1           */
    double max_util;       /* utilisation ceiling, percent of what the shell
                              leaves of each resource; 0: TSR_FIT_CEILING_PCT */
} tsr_plan_req;

/* Cycles of one decode step: the code's charges per region (TSR_RG_*). */
typedef struct tsr_plan_cycles {
    uint64_t rg[TSR_RG_COUNT];
    uint64_t links;        /* card-to-card hops of a split model             */
    uint64_t controller;   /* the controller's regions                       */
    uint64_t mesh;         /* the mesh's regions                             */
    uint64_t total;
} tsr_plan_cycles;

/* On-chip bytes of one card (the fullest card of a split). */
typedef struct tsr_plan_bytes {
    uint64_t weights;      /* int8 tiles (Q8) or fp32 tiles (F32)            */
    uint64_t scales;       /* Q8 fp32 scales                                 */
    uint64_t kv;           /* KV cache at the chosen precision               */
    uint64_t norms;        /* controller norm weights                        */
    uint64_t activations;  /* controller vectors x, xn, q|k|v, xb, hb, logits */
    uint64_t scratch;      /* PE partial sums, inputs, scores; sampler buffers */
    uint64_t stationary;   /* weights + scales + kv + norms                  */
    uint64_t total;        /* everything above                               */
    uint64_t pe_max;       /* bytes of the fullest PE (weights + KV)         */
} tsr_plan_bytes;

/* Blocks, DSPs, LUTs and flip-flops. */
typedef struct tsr_plan_res {
    long uram_pe, bram_pe;     /* fullest PE                                 */
    long uram, bram;           /* card total (PEs + controller)              */
    long dsp_pe, dsp;          /* DSPs per PE, per card                      */
    long lut_pe, lut;          /* LUTs of the busiest PE, of the card
                                  (plan_fit.c: instances x hw/ops.def)       */
    long ff_pe, ff;            /* flip-flops, likewise                       */
    tsr_fit_fabric fab;        /* the LUT / FF estimate by group             */
    int  kv_in_uram;           /* 1: the KV arrays went to URAM              */
} tsr_plan_res;

/* A plan. */
typedef struct tsr_plan {
    const tsr_part *part;
    char profile[32];      /* the datapath planned for                       */
    tsr_kprofile prof;
    int  slrs;             /* the SLRs the profile spans (TSR_SLRS; 1 without one) */
    tsr_cy_slr slr;        /* ... and what their crossings add (tsr_cy_slr_of) */
    int  with_profile;     /* 1: checked against a shipped profile's arrays */
    int  profile_ok;       /* the model fits that profile                   */
    char profile_why[TSR_ERRMSG_MAX];
    tsr_kconfig kc;        /* whole model on one card's mesh (seq, group, mesh) */
    int kv;                /* TSR_KV_*                                       */
    int cards, pes, pes_chosen; /* pes_chosen: 0 given (--pes); 1 plan picked
                              the fastest projected count that fits; 2 none
                              fits or the fit cannot be decided, so the
                              default (16) is reported                      */
    int layers_per_card;   /* most layers on one card                        */
    uint32_t bounds[TSR_PLAN_MAX_STAGES + 1]; /* the split (cards <= TSR_PLAN_MAX_STAGES):
                                  card k holds layers [bounds[k], bounds[k+1]) */
    tsr_plan_pipe pipe;    /* cards > 1 (up to TSR_PLAN_MAX_STAGES): the
                              pipeline at pos, `cards` sequences in flight  */
    double pipe_tok_s;     /* its aggregate tokens/s (no clock: 0)           */
    tsr_plan_bytes bytes;  /* fullest card                                   */
    uint64_t weight_bytes_all; /* weights + scales of the whole model, each
                                  matrix once (what streaming reads per token) */
    tsr_plan_res res;      /* what the model needs on the fullest card       */
    tsr_plan_res prof_res; /* with_profile: the profile's own arrays, every
                              PE at its profile size (what a bitstream built
                              from it takes: tsr_plan_profile_resources)    */
    long uram_have, bram_have, dsp_have; /* the part minus its shell (-1: unknown) */
    long lut_have, ff_have;
    double max_util;           /* the ceiling, percent of each *_have        */
    int  over;                 /* !fits by the ceiling: the first resource
                                  over it (TSR_FIT_R_*), else -1             */
    long over_by;              /* and by how much                            */
    int  decidable;            /* 0: the part table lacks a figure           */
    int  fits;
    char why[TSR_ERRMSG_MAX + 64]; /* why it does not fit / cannot be decided */
    /* projected speed */
    int clock_mhz;             /* -1: unknown (no clock given or in the table) */
    int clock_from;            /* 0: --clock, 1: the profile's TSR_CLOCK_MHZ,
                                  2: the part's default                       */
    int pos;                   /* the reported decode step's position        */
    tsr_plan_cycles cyc;       /* its cycles                                 */
    double cycles_mean;        /* mean cycles/token over positions 0..seq-1  */
    double tok_s, tok_s_mean;  /* at pos, and over a whole context           */
    double controller_share;   /* controller cycles / total at pos           */
    double stream_gbps;        /* weight bytes per token x tok_s_mean        */
    /* projected prefill: a prompt's positions 0..prefill_tokens-1 in passes
     * of `block` (the profile's TSR_MAX_BLOCK), each tile read once a pass */
    int prefill_tokens;        /* 128, or the context when shorter           */
    int block;                 /* positions a prefill pass                   */
    uint32_t prefill_passes;
    uint64_t prefill_cycles;   /* all its passes (+ card links per pass)     */
    uint64_t prefill_cycles_1; /* the same, one position a pass              */
    double prefill_tok_s;      /* prefill_tokens / (prefill_cycles at the clock) */
    /* projected batched decode: `batch` sequences (the profile's limit,
     * min(slots, block)) stepped by one pass, each at position pos */
    int batch;
    tsr_plan_cycles batch_cyc; /* that pass (+ card links)                   */
    double batch_tok_s;        /* aggregate: batch x clock / batch_cyc.total */
    int max_seq[TSR_KV_COUNT]; /* longest context that fits this mesh per KV
                                  precision (TSR_KV_*), the chip's limit
                                  up to 2^20; 0: none, or undecidable       */
    /* smallest changes that fit (when !fits; 0 = not found) */
    int fix_seq;               /* longest context that fits                  */
    int fix_kv_int8;           /* 1: an int8 KV cache fits; -1: the profile has none */
    int fix_cards, fix_cards_pes; /* fewest cards that fit, PEs per card     */
    double fix_cards_tok_s;    /* their projected tok/s (mean)               */
    uint64_t emb_bytes;        /* no split fits: the embedding's on-chip
                                  bytes (stage 0 holds it whole; a tied
                                  classifier, the last stage too)         */
    uint64_t chip_bytes;       /* a card's URAM + BRAM bytes                 */
    uint64_t cards_floor;      /* cards whose on-chip bytes the weight tiles
                                  need at least, however they are split    */
} tsr_plan;

/* Plan model cfg on req.  Errors: TSR_ERR_ARG (unknown part or profile:
 * the message lists the valid ones; bad group, seq_len, pes, cols,
 * kv_split, clock, pos, cards, kv), TSR_ERR_UNSUPPORTED (shape the layout
 * cannot place).  A model that does not fit is not an error: out->fits is 0
 * and out->fix_* say what would. */
int tsr_plan_config(const tsr_config *cfg, const tsr_plan_req *req, tsr_plan *out, tsr_err *e);

/* The layer split plan's --cards K projects for kc (the whole model's
 * config) and the emulator's cards=K loads: card k holds layers
 * [bounds[k], bounds[k + 1]), bounds (K + 1,), each card at least one
 * layer.  The split balances the stages' cycles (a greedy decode pass of
 * one item at the middle of the context: the first stage's embedding row
 * costs little, the last stage's classifier weighs several layers), and
 * among the splits whose slowest stage is as fast, it balances the cards'
 * bytes (the embedding on the first, the classifier, or a tied one's copy,
 * on the last).  sum_lanes and profile_pes as tsr_plan_pass.  1 <= K. */
void tsr_plan_card_split(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                         const tsr_cy_slr *slr, int K, uint32_t *bounds);

/* Stage k of K's config: kc (the whole model's) with the layers
 * [bounds[k], bounds[k + 1]) and its link ports (TSR_STAGE_*), as the
 * command layer configures that stage's device. */
void tsr_plan_stage_kconfig(const tsr_kconfig *kc, const uint32_t *bounds, int K, int k,
                            tsr_kconfig *out);

/* The pipeline of the split bounds (K + 1,) of kc over K stages (at most
 * TSR_PLAN_MAX_STAGES) at position pos with seqs sequences in flight (0:
 * 1): each stage a greedy pass of one item (tsr_plan_pass of its
 * tsr_plan_stage_kconfig), stage k working on one sequence while stage
 * k + 1 works on the one before.  What the emulator's cards=K device
 * clocks run (driver/kcmd.c "device clocks"). */
void tsr_plan_pipeline(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                       const tsr_cy_slr *slr, const uint32_t *bounds, int K, uint32_t pos, uint32_t seqs,
                       tsr_plan_pipe *out);

/* The cycles the kernel's accounting charges for one forward pass of nx
 * items on kc's mesh (kernels/forward.c tsr_forward), item b at position
 * pos[b] (pos: (nx,), nx >= 1): each item's embedding, RoPE angles,
 * norms, inputs, gathers and attention at its own position; one GEMV per
 * matrix for all nx (each PE's tile read once: its steps nx times, its
 * pipeline's depth once; the tree levels and root steps once an item).
 * classify 0: a prefill block (positions of one slot, no classifier);
 * TSR_PLAN_CLASSIFY: a greedy pass of nx sequences (the classifier, each
 * item's distributed argmax and its id to the host: a FORWARD that
 * samples); TSR_PLAN_DECODE: a greedy step of a DECODE(_BATCH) of nx
 * sequences, that and the cancel words the kernel reads from host memory
 * every step (1 + nx reads of TSR_D_HOSTRD, tsr_kernel.c
 * fwd_items_decode).  sum_lanes and profile_pes are the profile's
 * TSR_SUM_LANES and TSR_PES (the reduction order, and the PEs the argmax
 * tree spans); slr what its SLR crossings add (kernels/tsr_cycles.h
 * tsr_cy_slr_of of the profile: TSR_CY_SLR; NULL: one SLR, nothing). */
#define TSR_PLAN_CLASSIFY 1
#define TSR_PLAN_DECODE   3   /* TSR_PLAN_CLASSIFY | the cancel words */
void tsr_plan_pass(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                   const tsr_cy_slr *slr, const uint32_t *pos, uint32_t nx, int classify, tsr_plan_cycles *c);

/* One greedy decode step at pos: tsr_plan_pass of one item
 * (TSR_PLAN_DECODE). */
void tsr_plan_step(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                   const tsr_cy_slr *slr, uint32_t pos, tsr_plan_cycles *c);

/* Items a pass plan projects at most (the profiles' TSR_MAX_BLOCK). */
#define TSR_PLAN_MAX_ITEMS 64u

/* The cycles of prefilling positions 0..n-1 of one slot in passes of
 * block positions (the last pass takes what is left; block is clamped to
 * 1..TSR_PLAN_MAX_ITEMS), as PREFILL runs them; *passes (optional) gets
 * the number of passes. */
uint64_t tsr_plan_prefill(const tsr_kconfig *kc, uint32_t sum_lanes, uint32_t profile_pes,
                          const tsr_cy_slr *slr, uint32_t n, uint32_t block, uint32_t *passes);

/* The blocks and DSPs a profile's arrays and datapath take (what its
 * bitstream allocates, whatever model it runs). */
void tsr_plan_profile_resources(const tsr_kprofile *p, tsr_plan_res *r);

/* Region names, as counters and plan print them ("gemv", "attention", ...). */
const char *tsr_plan_region_name(int rg);

/* The plan as text (json 0) or as one JSON object (json 1) into buf
 * (NUL-terminated, truncated to len).  name labels the model.  In JSON a
 * number the plan cannot know (no clock: tok_s, stream_gbps; a part figure
 * hw/parts.def lacks; a fix that was not found) is null, never 0.  Returns
 * the length the whole output needs, like snprintf. */
size_t tsr_plan_format(const tsr_plan *p, const char *name, int json, char *buf, size_t len);

/* The cycles of a real run's last forward pass: the kernel's counters cyc
 * minus cyc_mark, per region, as "name value" lines (cycles.<region>,
 * cycles.controller, cycles.mesh, cycles.total, controller_share, and
 * tok_s at clock_mhz) into buf (NUL-terminated, truncated to len).
 * Returns the length needed, like snprintf. */
size_t tsr_plan_run_estimate(const uint64_t cyc[TSR_RG_COUNT], const uint64_t mark[TSR_RG_COUNT],
                             uint64_t pos, int clock_mhz, char *buf, size_t len);

/* Between plan.c (the fit) and plan_cycles.c (the projections): */

/* The projected speed of out, whose fit (kc, cards, pes, bounds, prof,
 * weight_bytes_all) plan.c has filled: the decode step at rq->pos (-1:
 * the last), its mean over the context, the split's pipeline and the
 * clock's tokens/s.  Errors: TSR_ERR_ARG (pos outside the context). */
int tsr_plan_project(const tsr_plan_req *rq, const tsr_part *part, tsr_plan *out, tsr_err *e);

/* For the plan chosen (after tsr_plan_project): the prompt's prefill in
 * blocks of the profile's TSR_MAX_BLOCK against one position a pass, and a
 * greedy decode step of the profile's batch limit of sequences. */
void tsr_plan_project_passes(tsr_plan *out);

/* LUTs and flip-flops of datapath d into r's fab, lut, ff, lut_pe, ff_pe
 * (plan_fit.c). */
void tsr_plan_fabric_to(const tsr_fit_dp *d, tsr_plan_res *r);

/* One line naming the hardware assumptions of the cycle model. */
const char *tsr_plan_assumptions(void);

#endif
