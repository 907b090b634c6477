/*
 * profile_stories260k.h - bring-up profile for stories260K (dim 64, hidden
 * 172, 5 layers, 8 heads, 4 KV heads, vocab 512, seq 512) on a mesh of up to
 * 4 PEs: quick to synthesize, and its C simulation is checked token for
 * token against llama2.c run.c (reductions in run.c's order,
 * TSR_SUM_LANES 1).  Q8_0 at group 32 or 64, Q4_0, or F32; an fp32 KV
 * cache.
 *
 * Resource estimate (tessera plan --profile stories260k, checked by
 * tests/test_plan.c): the TSR_EST_* lines below.
 */
#ifndef TSR_PROFILE_STORIES260K_H
#define TSR_PROFILE_STORIES260K_H

#define TSR_PROFILE_NAME      "stories260k"

#define TSR_MAX_PES           4
#define TSR_MAX_MESH_ROWS     4
#define TSR_MAX_MESH_COLS     4
#define TSR_DEFAULT_PES       4

#define TSR_MAX_DIM           64
#define TSR_MAX_HIDDEN        172
#define TSR_MAX_LAYERS        5
#define TSR_MAX_HEADS         8
#define TSR_MAX_KV_HEADS      4
#define TSR_MAX_HEAD_SIZE     8
#define TSR_MAX_VOCAB         512
#define TSR_MAX_SEQ           512
#define TSR_MAX_SLOTS         2
#define TSR_MAX_BLOCK         4    /* a prompt block through one pass over the weights */

#define TSR_MIN_GROUP         32
#define TSR_MAX_GROUP         64

#define TSR_SUM_LANES         1
#define TSR_MAX_KV_SPLIT      1
#define TSR_ATT_PES           TSR_MAX_PES   /* PEs with attention datapaths (hold the KV) */
#define TSR_WITH_F32          1
#define TSR_WITH_Q4           1    /* the Q4_0 tile beside the Q8_0 one */

#define TSR_PE_W8_WORDS       2560u     /* 80 KiB */
#define TSR_PE_F32_WORDS      (96u * 1024u)
#define TSR_PE_KV_WORDS       (80u * 1024u)
#define TSR_PE_ROWS           512u

/* Resource estimate: what tessera plan --profile stories260k computes for these
 * arrays and this datapath (tests/test_plan.c holds them equal). */
#define TSR_EST_URAM          16
#define TSR_EST_BRAM36        823
#define TSR_EST_DSP           1077
#define TSR_EST_LUT           181208
#define TSR_EST_FF            203079

#endif
