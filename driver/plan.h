/*
 * plan.h - `tessera plan`: will a model fit a part's on-chip memory, which
 * blocks and DSPs it takes, and how fast it would decode (projected).
 *
 * Three pieces, each in one place:
 *   1. bytes: per PE and per card, from the layout arithmetic the kernel and
 *      the weight image use (kernels/tsr_layout.h), so the plan's stationary
 *      bytes equal the emulator's tsr_kfit / pe_sram_bytes by construction
 *      of the same functions, not by a second derivation;
 *   2. blocks: those arrays packed into BRAM36 / URAM blocks by the rule in
 *      plan.c ("Packing"), against the part (hw/parts.def) minus its shell;
 *   3. cycles: the work of one decode step (tsr_kwork, the counts the kernel
 *      itself keeps, here computed from the config and position) converted
 *      by the documented costs in plan.c ("Cycle model").  The emulator's
 *      `run --stats` converts the kernel's own counters with the same
 *      function, so plan and run agree for the same model and position.
 * Every speed is a projection: nothing here was measured on hardware.
 */
#ifndef TSR_PLAN_H
#define TSR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"
#include "parts.h"
#include "tsr_kernel.h"

/* KV cache precision.  The kernel stores fp32 today; f16 and int8 are
 * projections of a variant (int8: one fp32 scale per cached vector). */
enum { TSR_KV_F32 = 0, TSR_KV_F16 = 1, TSR_KV_INT8 = 2 };

/* What to plan.  Zero-initialise, then set part (required). */
typedef struct tsr_plan_req {
    const char *part;      /* hw/parts.def name, e.g. "u55c"                  */
    int weights_f32;       /* 1: F32 weights; 0: Q8_0                         */
    int group;             /* Q8_0 group size; 0: 32                          */
    int kv;                /* TSR_KV_*                                        */
    int seq_len;           /* context; 0: the model's                         */
    int pes;               /* PEs per card; 0: choose (best projected tok/s
                              that fits; 16 when nothing fits)                */
    int clock_mhz;         /* 0: the part's default clock                     */
    int pos;               /* position of the reported decode step; -1: the
                              last one (seq_len - 1)                          */
    int cards;             /* cards the layers are split over; 0: 1           */
} tsr_plan_req;

/* Cycles of one decode step, by where they are spent. */
typedef struct tsr_plan_cycles {
    uint64_t gemv_macs;    /* busiest PE's MACs / lanes + pipeline fill      */
    uint64_t gemv_trees;   /* adder-tree levels along mesh rows              */
    uint64_t gemv_io;      /* controller: quantize input, gather outputs     */
    uint64_t embed;        /* embedding row gather                           */
    uint64_t attention;    /* busiest PE: KV store, scores, softmax, values  */
    uint64_t norms;        /* RMSNorm passes + their rsqrt                   */
    uint64_t vector;       /* RoPE, residuals, SwiGLU                        */
    uint64_t sample;       /* sampler's passes over the logits (greedy)      */
    uint64_t links;        /* card-to-card hops of a split model             */
    uint64_t total;
} tsr_plan_cycles;

/* On-chip bytes of one card (the fullest card of a split). */
typedef struct tsr_plan_bytes {
    uint64_t weights;      /* int8 tiles (Q8) or fp32 tiles (F32)            */
    uint64_t scales;       /* Q8 fp32 scales                                 */
    uint64_t kv;           /* KV cache at the chosen precision               */
    uint64_t norms;        /* controller norm weights                        */
    uint64_t activations;  /* controller vectors x, xb, q, k, v, hb, logits  */
    uint64_t scratch;      /* PE partial sums and scores; controller buffers */
    uint64_t stationary;   /* weights + scales + kv + norms                  */
    uint64_t total;        /* everything above                               */
    uint64_t pe_max;       /* bytes of the fullest PE (weights + KV)         */
} tsr_plan_bytes;

/* A plan. */
typedef struct tsr_plan {
    const tsr_part *part;
    tsr_kconfig kc;        /* whole model on one card's mesh (seq, group, mesh) */
    int kv;                /* TSR_KV_*                                       */
    int cards, pes, pes_chosen; /* pes_chosen: 0 given (--pes); 1 plan picked
                              the fastest projected count that fits; 2 none
                              fits or the fit cannot be decided, so the
                              default (16) is reported                      */
    int layers_per_card;   /* most layers on one card                        */
    tsr_plan_bytes bytes;  /* fullest card                                   */
    uint64_t weight_bytes_all; /* weights + scales of the whole model, each
                                  matrix once (what streaming reads per token) */
    /* blocks after packing, fullest card */
    long uram_pe, bram_pe;     /* fullest PE                                 */
    long uram, bram;           /* card total (PEs + controller)              */
    int  kv_in_uram;           /* 1: the KV arrays went to URAM              */
    long dsp_pe, dsp;          /* DSPs per PE, per card                      */
    long uram_have, bram_have, dsp_have; /* the part minus its shell (-1: unknown) */
    int  decidable;            /* 0: the part table lacks a figure           */
    int  fits;
    char why[200];             /* why it does not fit / cannot be decided    */
    /* projected speed */
    int clock_mhz;             /* -1: unknown (no clock given or in the table) */
    int pos;                   /* the reported decode step's position        */
    tsr_kwork work;            /* its work (tsr_plan_work)                   */
    tsr_plan_cycles cyc;       /* its cycles                                 */
    double cycles_mean;        /* mean cycles/token over positions 0..seq-1  */
    double tok_s, tok_s_mean;  /* at pos, and over a whole context           */
    double stream_gbps;        /* weight bytes per token x tok_s_mean        */
    /* smallest changes that fit (when !fits; 0 = not found) */
    int fix_seq;               /* longest context that fits                  */
    int fix_kv_int8;           /* 1: an int8 KV cache fits                   */
    int fix_cards, fix_cards_pes; /* fewest cards that fit, PEs per card     */
    double fix_cards_tok_s;    /* their projected tok/s (mean)               */
} tsr_plan;

/* Plan model cfg on req.  Errors: TSR_ERR_ARG (unknown part: the message
 * lists the valid ones; bad group, seq_len, pes, clock, pos, cards, kv),
 * TSR_ERR_UNSUPPORTED (shape the layout cannot place).  A model that does
 * not fit is not an error: out->fits is 0 and out->fix_* say what would. */
int tsr_plan_config(const tsr_config *cfg, const tsr_plan_req *req, tsr_plan *out, tsr_err *e);

/* The work of one decode step at pos (a forward pass with logits and a
 * greedy sample) on kc's mesh, counted as the kernel counts it (tsr_kwork):
 * embed, per layer 7 GEMVs + attention + 2 norms + RoPE/residual/SwiGLU
 * passes, final norm, classifier, logits. */
void tsr_plan_work(const tsr_kconfig *kc, uint32_t pos, tsr_kwork *w);

/* The cycle model: cycles of the work w on kc's mesh (cards: the number of
 * cards the layers are split over, 1 for one).  The costs are the constants
 * in plan.c, section "Cycle model". */
void tsr_plan_cycles_of(const tsr_kconfig *kc, const tsr_kwork *w, int cards,
                        tsr_plan_cycles *c);

/* The plan as text (json 0) or as one JSON object (json 1) into buf
 * (NUL-terminated, truncated to len).  name labels the model.  In JSON a
 * number the plan cannot know (no clock: tok_s, stream_gbps; a part figure
 * hw/parts.def lacks; a fix that was not found) is null, never 0.  Returns
 * the length the whole output needs, like snprintf. */
size_t tsr_plan_format(const tsr_plan *p, const char *name, int json, char *buf, size_t len);

/* The estimate from a real run: the kernel's counters `now` (tsr_kcounters
 * .work) minus `mark` (.work_mark) are the work of the last forward pass;
 * written as "name value" lines (its work counts, then
 * "projected.cycles_per_token", and "projected.tok_s" at clock_mhz) into buf
 * (NUL-terminated, truncated to len).  Returns the length needed, like
 * snprintf.  Nothing is written when no forward pass ran. */
size_t tsr_plan_run_estimate(const tsr_kconfig *kc, const tsr_kwork *now, const tsr_kwork *mark,
                             int clock_mhz, char *buf, size_t len);

/* One line naming the hardware assumptions of the cycle model. */
const char *tsr_plan_assumptions(void);

#endif
