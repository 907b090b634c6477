/*
 * profile_generic.h - the emulator's profile: the sizes every llama2.c
 * "stories" shape needs up to stories110M (dim 768, hidden 2048, 12 layers,
 * 12 heads, vocab 32000) and the small GGUF models' (SmolLM2-135M,
 * Qwen2.5-0.5B, Llama-3.2-1B: dim up to 2048, vocabularies up to 152064
 * tokens; 262144 leaves room for Gemma's 256000), Q8_0 at group 32 or 64 (or Q4_0) on 16 PEs
 * with a 1024-token KV cache in fp32, IEEE half or int8, and F32
 * validation runs up to 64 PEs.
 *
 * Not a synthesis target: a PE's arrays here are far larger than any FPGA's
 * SRAM.  The emulator reserves them as address space and only the pages a
 * model touches cost memory.  Reductions keep llama2.c's order
 * (TSR_SUM_LANES 1), so the emulator's F32 tokens equal run.c's and its
 * Q8_0 logits on a 1x1 mesh equal runq.c's (built without fast-math).
 */
#ifndef TSR_PROFILE_GENERIC_H
#define TSR_PROFILE_GENERIC_H

#define TSR_PROFILE_NAME      "generic"

/* Mesh: P = R x C PEs, C a power of two (the column adder tree). */
#define TSR_MAX_PES           64
#define TSR_MAX_MESH_ROWS     64
#define TSR_MAX_MESH_COLS     16
#define TSR_DEFAULT_PES       16

/* Model shape limits. */
#define TSR_MAX_DIM           2048
#define TSR_MAX_HIDDEN        8192
#define TSR_MAX_LAYERS        32
#define TSR_MAX_HEADS         32
#define TSR_MAX_KV_HEADS      32
#define TSR_MAX_HEAD_SIZE     256
#define TSR_MAX_VOCAB         262144
#define TSR_MAX_SEQ           4096
#define TSR_MAX_SLOTS         8
#define TSR_MAX_BLOCK         64   /* items of one pass: a prompt block or a batch */

/* Q8_0 group sizes (powers of two). */
#define TSR_MIN_GROUP         4
#define TSR_MAX_GROUP         256

/* Numerics and placement. */
#define TSR_SUM_LANES         1    /* partial sums of a reduction: run.c's order  */
#define TSR_MAX_KV_SPLIT      16   /* PEs one KV head's positions may spread over */
#define TSR_ATT_PES           TSR_MAX_PES   /* PEs with attention datapaths (hold the KV) */
#define TSR_WITH_F32          1    /* the F32 validation datapath is built        */
#define TSR_WITH_Q4           1    /* the Q4_0 tile datapath is built             */

/* Per-PE SRAM. */
#define TSR_PE_W8_WORDS       (256u * 1024u)        /* int8 tiles, TSR_LANES-byte words (8 MiB) */
#define TSR_PE_F32_WORDS      (2u * 1024u * 1024u)  /* Q8 scales or F32 tiles (8 MiB)          */
#define TSR_PE_KV_WORDS       (2u * 1024u * 1024u)  /* KV cache, fp32 (8 MiB)                  */
#define TSR_PE_KVH_WORDS      (4u * 1024u * 1024u)  /* KV cache, IEEE half (8 MiB)             */
#define TSR_PE_KVQ_BYTES      (8u * 1024u * 1024u)  /* KV cache, int8 (8 MiB)                  */
#define TSR_PE_KVS_WORDS      (1u * 1024u * 1024u)  /* its scales: head size 8 and up (4 MiB)  */
#define TSR_PE_ROWS           32768u                /* a tile's rows (GEMV partial sums)       */

#endif
