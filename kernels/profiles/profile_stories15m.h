/*
 * profile_stories15m.h - synthesis profile for stories15M (dim 288, hidden
 * 768, 6 layers, 6 heads, vocab 32000, seq 256) in Q8_0 on an Alveo U55C:
 *   - 128 PEs in 4 mesh columns (each matrix picks 1, 2 or 4 columns,
 *     tsr_layout.h), each with 128 KiB of int8 tiles in UltraRAM and its
 *     scales in one more UltraRAM;
 *   - 48 of them with attention datapaths: each of the 6 KV heads spread
 *     over 8 PEs (32 positions each, 72 KiB of fp32 KV cache in BRAM);
 *   - reductions in 256 partial sums, so the controller's passes run at
 *     II=1 and RMSNorm's sum of squares rides on the residual gather
 *     (TSR_SUM_LANES; the order differs from run.c's: docs/hls-flow.md);
 *     attention scores in 8 partials (TSR_ATT_PARTS);
 *   - one sequence slot, no F32 or Q4_0 datapath, an fp32 KV cache only.
 * `tessera plan --shape stories15M --part u55c --profile stories15m`
 * projects 18,328 tokens/s at position 255 (controller 26%) from the
 * kernel's own cycle accounting; unverified until a first csynth.
 *
 * Resource estimate (tessera plan --profile stories15m, checked by
 * tests/test_plan.c): the TSR_EST_* lines below.
 */
#ifndef TSR_PROFILE_STORIES15M_H
#define TSR_PROFILE_STORIES15M_H

#define TSR_PROFILE_NAME      "stories15m"

#define TSR_MAX_PES           128
#define TSR_MAX_MESH_ROWS     128
#define TSR_MAX_MESH_COLS     4
#define TSR_DEFAULT_PES       128

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
#define TSR_MAX_KV_SPLIT      8
#define TSR_ATT_PES           48   /* PEs with attention datapaths: 6 KV heads x 8 */
#define TSR_WITH_F32          0
#define TSR_WITH_Q4           0    /* Q8_0 only: a Q4_0 tile per PE would add its scale
                                      path's DSPs to the estimate below */

#define TSR_PE_W8_WORDS       4096u     /* 128 KiB: 4 UltraRAM wide, 1 deep (the fullest PE: 4016) */
#define TSR_PE_F32_WORDS      4096u     /* the scales: 16 KiB, one UltraRAM (TSR_F32_URAM) */
#define TSR_PE_KV_WORDS       18432u    /* 6 layers x K^T, V of 48 x 32 positions: 72 KiB */
#define TSR_PE_ROWS           256u      /* the classifier's 16 units of 16 rows */
#define TSR_PE_ATT            256       /* one query head x 256 positions at most */
#define TSR_F32_URAM          1

/* Resource estimate: what tessera plan --profile stories15m computes for these
 * arrays and this datapath (tests/test_plan.c holds them equal). */
#define TSR_EST_URAM          640
#define TSR_EST_BRAM36        1376
#define TSR_EST_DSP           7791
#define TSR_EST_LUT           0
#define TSR_EST_FF            0

#endif
