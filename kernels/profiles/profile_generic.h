/*
 * profile_generic.h - the emulator's default synthesis profile.
 *
 * Large enough for every llama2.c "stories" shape up to stories110M (dim 768,
 * hidden 2048, 12 layers, 12 heads, vocab 32000) in Q8_0 at group 32 with a
 * 1024-token fp32 KV cache on 16 PEs (per PE: ~6.9 MB int8 tiles, ~1.4 M fp32
 * words of scales + KV), and up to 64 PEs for F32 validation runs.  Not meant
 * for a real part: the per-PE arrays are far larger than any FPGA's SRAM; the
 * emulator allocates them lazily (untouched pages cost nothing).
 */
#ifndef TSR_PROFILE_GENERIC_H
#define TSR_PROFILE_GENERIC_H

#define TSR_PROFILE_NAME      "generic"

/* Mesh: P = R x C PEs, C a power of two (the reduction adder tree). */
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
#define TSR_MAX_VOCAB         32768
#define TSR_MAX_SEQ           4096
#define TSR_MAX_SLOTS         8

/* Q8_0 group size range (elements per scale). */
#define TSR_MIN_GROUP         4
#define TSR_MAX_GROUP         256

/* Per-PE SRAM. */
#define TSR_PE_I8_BYTES       (8u * 1024u * 1024u)  /* int8 weight tiles          */
#define TSR_PE_F32_WORDS      (2u * 1024u * 1024u)  /* scales / F32 weights + KV  */

#endif
