/*
 * profile_stories15m.h - synthesis profile for stories15M (dim 288, hidden
 * 768, 6 layers, 6 heads, vocab 32000, seq 256) in Q8_0 on an Alveo U55C:
 *   - 32 PEs in 4 mesh columns (each matrix picks 1, 2 or 4 columns,
 *     tsr_layout.h), each with 512 KiB of int8 tiles in UltraRAM and its
 *     scales in 16 BRAM36;
 *   - 12 of them with attention datapaths: each of the 6 KV heads spread
 *     over 2 PEs (128 positions each, 288 KiB of fp32 KV cache in
 *     UltraRAM);
 *   - reductions in 256 partial sums, so the controller's passes run at
 *     II=1 and RMSNorm's sum of squares rides on the residual gather
 *     (TSR_SUM_LANES; the order differs from run.c's: docs/hls-flow.md);
 *     attention scores in 8 partials (TSR_ATT_PARTS);
 *   - one sequence slot, no F32 or Q4_0 datapath, an fp32 KV cache only.
 * Sized to fit `tessera plan`'s ceiling (75 % of what the U55C's shell
 * leaves of each resource): until 2026-12-05 it had 128 PEs, 48 of them
 * with attention, which the fabric estimate (driver/plan_fit.c) puts at
 * about 2.5 M LUTs against the 0.86 M the ceiling allows; LUTs, then
 * UltraRAM, bound it now.
 * `tessera plan --shape stories15M --part u55c --profile stories15m`
 * projects 7,469 tokens/s at position 255 (8,997 over a whole context) at
 * the 300 MHz it targets (TSR_CLOCK_MHZ) from the kernel's own cycle
 * accounting, the SLR crossings' register stages included (TSR_SLRS);
 * unverified until a first csynth, and closing timing at 300 MHz across
 * the U55C's SLRs is not shown (docs/hls-flow.md).
 *
 * Resource estimate (tessera plan --profile stories15m, checked by
 * tests/test_plan.c): the TSR_EST_* lines below.
 */
#ifndef TSR_PROFILE_STORIES15M_H
#define TSR_PROFILE_STORIES15M_H

#define TSR_PROFILE_NAME      "stories15m"

#define TSR_MAX_PES           32
#define TSR_MAX_MESH_ROWS     32
#define TSR_MAX_MESH_COLS     4
#define TSR_DEFAULT_PES       32

#define TSR_MAX_DIM           288
#define TSR_MAX_HIDDEN        768
#define TSR_MAX_LAYERS        6
#define TSR_MAX_HEADS         6
#define TSR_MAX_KV_HEADS      6
#define TSR_MAX_HEAD_SIZE     48
#define TSR_MAX_VOCAB         32000
#define TSR_MAX_SEQ           256
#define TSR_MAX_SLOTS         1
#define TSR_MAX_BLOCK         2    /* a prompt block a pass (the input copies stay LUTRAM) */

#define TSR_MIN_GROUP         32
#define TSR_MAX_GROUP         32   /* at 64 the fullest PE needs 144 KiB of int8 tiles */

#define TSR_SUM_LANES         256
#define TSR_MAX_KV_SPLIT      2
#define TSR_ATT_PES           12   /* PEs with attention datapaths: 6 KV heads x 2 */
#define TSR_WITH_F32          0
#define TSR_WITH_Q4           0    /* Q8_0 only: a Q4_0 tile per PE would add its scale
                                      path's DSPs to the estimate below */

#define TSR_PE_W8_WORDS       16384u    /* 512 KiB: 4 UltraRAM wide, 4 deep */
#define TSR_PE_F32_WORDS      16384u    /* the scales: 64 KiB, 16 BRAM36 */
#define TSR_PE_KV_WORDS       73728u    /* 6 layers x K^T, V of 48 x 128 positions: 288 KiB,
                                           UltraRAM (TSR_KV_URAM) */
#define TSR_PE_ROWS           1024u     /* the classifier's 1,000 rows a PE, and room */
#define TSR_PE_ATT            128       /* one query head x 128 positions at most */
#define TSR_KV_URAM           1
#define TSR_W13_COLS          2    /* W13 takes 2 of the 8 x 4 mesh's columns (the
                                      classifier 1): SwiGLU at the 16 even PEs only */

/* Resource estimate: what tessera plan --profile stories15m computes for these
 * arrays and this datapath (tests/test_plan.c holds them equal). */
#define TSR_EST_URAM          656
#define TSR_EST_BRAM36        1212
#define TSR_EST_DSP           2743
#define TSR_EST_LUT           649352
#define TSR_EST_FF            574165

/* The kernel clock it targets: the Alveo platforms' default (UG1120),
 * the clock tsr_arch.h's pipeline depths assume. */
#define TSR_CLOCK_MHZ         300

/* The U55C's three SLRs: 656 UltraRAM need all three (320 each, two hold
 * 640).  PEs [0, 8), [8, 20), [20, 32) (tsr_profile.h TSR_SLR_PE0: whole
 * mesh rows of 4, the first SLR one row fewer, since its PEs all hold KV
 * cache): 224, 240 and 192 UltraRAM.  A word crossing an SLR boundary
 * passes a register stage (TSR_D_SLR, tsr_arch.h); docs/hls-flow.md. */
#define TSR_SLRS              3

#endif
