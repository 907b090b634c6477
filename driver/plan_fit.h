/*
 * plan_fit.h - what decides a fit besides memory: the LUTs and flip-flops
 * of the datapath the kernel code instantiates, and the utilisation
 * ceiling every resource is judged against.
 *
 *   datapath (PEs, lanes, trees, attention PEs, ...)  --tsr_fit_fabric-->
 *       instances x operators (hw/ops.def: LUT, FF per operator, sourced)
 *   need (LUT, FF, DSP, BRAM36, URAM) vs ceiling x (part - shell)
 *       --tsr_fit_judge--> fits, or the first resource over and by how much
 *
 * Every count comes from a loop nest of kernels/ (each in a comment in
 * plan_fit.c); every cost from hw/ops.def.  Nothing here has been through
 * csynth (docs/hls-flow.md, "What stays unverified").
 */
#ifndef TSR_PLAN_FIT_H
#define TSR_PLAN_FIT_H

#include <stdint.h>

#include "tsr_kernel.h"

/* The datapath whose fabric is estimated: the counts the kernel's unrolled
 * loops take from the profile (tsr_profile.h), and the sizes of the small
 * arrays that go to LUTRAM. */
typedef struct tsr_fit_dp {
    uint32_t pes;          /* PE instances (TSR_PES)                           */
    uint32_t att_pes;      /* PEs with attention datapaths (TSR_ATT_PES)       */
    uint32_t cols;         /* column-tree span (TSR_MAX_MESH_COLS)             */
    uint32_t kv_split;     /* a KV head's PEs (TSR_MAX_KV_SPLIT)               */
    uint32_t sum_lanes;    /* TSR_SUM_LANES                                    */
    uint32_t block;        /* items a pass (TSR_MAX_BLOCK)                     */
    uint32_t with_f32, with_q4;
    uint32_t kv_paths;     /* bit TSR_KV_F16, TSR_KV_INT8: those caches built  */
    uint32_t group_min, group_max; /* Q8_0 groups (TSR_MIN_GROUP, TSR_MAX_GROUP) */
    uint32_t mats;         /* matrices (the per-PE tables' depth)              */
    uint32_t pe_rows;      /* a PE's partial sums per item (TSR_PE_ROWS)       */
    uint32_t in_words;     /* a PE's broadcast input per item, TSR_LANES-byte
                              words (TSR_PE_XQ_WORDS)                          */
    uint32_t xs_words;     /* its scales per item (TSR_PE_XS)                  */
    uint32_t att_words;    /* an attention PE's scores (TSR_PE_ATT)            */
    uint32_t acc_words;    /* pe_att's accumulator row (TSR_ATT_ACC)           */
    uint32_t ao_words;     /* its head outputs (TSR_MAX_QGROUP)                */
    uint32_t qkv_words;    /* its copy of q | k | v (TSR_MAX_QKV)              */
    uint32_t w13_cols;     /* SwiGLU roots every w13_cols PEs (TSR_W13_COLS;
                              0 reads 1)                                       */
    uint32_t cls_cols;     /* best-row roots every cls_cols PEs (TSR_CLS_COLS) */
} tsr_fit_dp;

/* The groups the estimate is reported in. */
enum {
    TSR_FIT_MAC,       /* every PE: pe_tile_q8 (and q4 / f32): MACs, scale path  */
    TSR_FIT_ROOT,      /* the roots' PEs: pe_root (SwiGLU), pe_root_best         */
    TSR_FIT_PEMEM,     /* every PE: its LUTRAM arrays and tables                 */
    TSR_FIT_TREE,      /* column-tree step instances                             */
    TSR_FIT_ATT,       /* attention PEs: pe_att and its LUTRAM                   */
    TSR_FIT_ATTTREE,   /* KV head groups' tree step instances                    */
    TSR_FIT_MUX,       /* the controller's PE muxes: gather, embed, collect, best */
    TSR_FIT_CTRL,      /* the controller's operators and the kernel's ports      */
    TSR_FIT_GROUPS
};

typedef struct tsr_fit_fabric {
    long g_lut[TSR_FIT_GROUPS], g_ff[TSR_FIT_GROUPS];   /* per group, the card */
    long lut_pe, ff_pe;        /* the busiest PE (PE 0: attention, every tree level) */
    long lut_att_pe;           /* one attention PE's own datapath (TSR_FIT_ATT / n)  */
    long lut, ff;              /* the card                                            */
} tsr_fit_fabric;

/* The fabric of datapath d. */
void tsr_fit_fabric_of(const tsr_fit_dp *d, tsr_fit_fabric *f);

/* A profile's datapath (its header's sizes). */
void tsr_fit_dp_of_profile(const tsr_kprofile *p, tsr_fit_dp *d);

/* Group names, as plan prints them ("mac", "root", ...). */
const char *tsr_fit_group_name(int g);

/* The resources the ceiling judges, in the order plan names them. */
enum { TSR_FIT_R_LUT, TSR_FIT_R_FF, TSR_FIT_R_DSP, TSR_FIT_R_BRAM, TSR_FIT_R_URAM, TSR_FIT_R_COUNT };

/* Default utilisation ceiling: percent of what the shell leaves. */
#define TSR_FIT_CEILING_PCT 75.0

/* "LUT", "FF", "DSP", "BRAM36", "URAM". */
const char *tsr_fit_resource_name(int r);

/* The ceiling of one resource: floor(have x pct / 100); -1 when have is. */
long tsr_fit_ceiling(long have, double pct);

/* Judge need[] against have[] (the part less the shell; -1 unknown) at pct
 * percent: 1 when every known resource is within its ceiling; else 0, with
 * *over the first resource over it (TSR_FIT_R_* order) and *by how many.
 * An unknown have[] is not judged (the caller decides what unknown means). */
int tsr_fit_judge(const long need[TSR_FIT_R_COUNT], const long have[TSR_FIT_R_COUNT], double pct,
                  int *over, long *by);

/* ------------------------------------------------------------------------ */
/* Blocks and DSPs                                                            */

/* Block sizes, data bytes: UltraRAM 4K x 72 bits, BRAM36 1K x 32 (UG573,
 * AM007). */
#define TSR_FIT_URAM_BYTES 32768u   /* 4096 x 64 data bits: a capacity, not a packing */
#define TSR_FIT_BRAM_BYTES 4096u

/* The blocks of one PE's memories: int8 tiles, fp32 array, KV cache,
 * partial sums, the input's scales, and on an attention PE its scores,
 * head outputs, copy of q | k | v and pe_att's accumulators and
 * coefficients (kernels/tsr_kernel.c tessera_top's partitions and
 * BIND_STORAGE, attention.c pe_att's locals). */
typedef struct tsr_fit_pe_arrays {
    uint64_t w8_bytes, f32_words, rows, att_words, in_bytes, xs_words;
    uint64_t kv_elems[3];  /* the KV caches' elements: fp32, IEEE half, int8
                              (each one memory of TSR_ATT_LANES-lane words) */
    uint64_t kvs_words;    /* the int8 cache's scales (one memory, unpartitioned) */
    uint64_t acc_words;   /* attention: pe_att's accumulators, one row of them,
                             and its coefficients */
    uint32_t acc_parts;   /* and its rows (TSR_ATT_PARTS) */
    uint64_t ao_words, qkv_words;   /* attention: head outputs, q | k | v copy */
    int f32_uram, kv_uram;
} tsr_fit_pe_arrays;

/* The URAM and BRAM36 blocks one PE's memories a take (plan_fit.c,
 * "Packing"). */
void tsr_fit_pe_blocks(const tsr_fit_pe_arrays *a, long *uram, long *bram);

/* The controller's BRAM36 blocks: norm rows of layers layers (and their
 * QKV biases when qkv_bias), each item's vectors (block of them a pass),
 * a batch's logits, the sampler's copy and candidates; nmax the longest
 * padded GEMV input, kvd the KV dimension. */
long tsr_fit_ctrl_blocks(uint64_t dim, uint64_t kvd, uint64_t vocab, uint64_t layers, uint64_t nmax,
                         uint32_t sum_lanes, uint32_t block, uint32_t batch, uint32_t qkv_bias);

/* The DSPs of P PEs (att_pes of them with attention, trees over C mesh
 * columns and Q PEs a KV head, SwiGLU at every w13_cols-th PE, the
 * datapaths with_f32, with_q4 and the KV paths kv_paths), the
 * controller's included; the busiest PE's in *per_pe. */
long tsr_fit_dsp_count(uint32_t P, uint32_t att_pes, uint32_t C, uint32_t Q, uint32_t w13_cols,
                       int with_f32, int with_q4, uint32_t kv_paths, uint32_t sum_lanes,
                       long *per_pe);

/* The PEs p < P with p % cols == 0 (cols 0 reads 1): where the unrolled
 * PE loop places a root's datapath (kernels/mesh.c TSR_SWIGLU_ROOT,
 * TSR_BEST_ROOT). */
uint32_t tsr_fit_root_pes(uint32_t P, uint32_t cols);

/* The f16 / int8 KV paths a profile builds (bit TSR_KV_F16, TSR_KV_INT8). */
uint32_t tsr_fit_kv_paths(const tsr_kprofile *p);

#endif
