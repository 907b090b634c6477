/*
 * tsr_profile.h - selects the synthesis profile: the header named by
 * -DTSR_PROFILE_HEADER="profiles/profile_x.h", else profiles/profile_generic.h
 * (the emulator's).  The datapath constants (tsr_arch.h) and the sizes
 * every kernel file derives from the profile follow.
 */
#ifndef TSR_PROFILE_H
#define TSR_PROFILE_H

#ifdef TSR_PROFILE_HEADER
#include TSR_PROFILE_HEADER
#else
#include "profiles/profile_generic.h"
#endif
#include "profiles/profile_defaults.h"

#include "tsr_arch.h"

/* Compile-time checks of a profile (C99: a negative array size fails). */
#define TSR_STATIC_CHECK(name, cond) typedef char tsr_check_##name[(cond) ? 1 : -1]
TSR_STATIC_CHECK(vec_pairs, TSR_VEC_PAIRS * 2 == TSR_VEC);
TSR_STATIC_CHECK(sum_lanes_pow2, (TSR_SUM_LANES & (TSR_SUM_LANES - 1)) == 0);
TSR_STATIC_CHECK(mesh_cols_pow2, (TSR_MAX_MESH_COLS & (TSR_MAX_MESH_COLS - 1)) == 0);
TSR_STATIC_CHECK(min_group_pow2, (TSR_MIN_GROUP & (TSR_MIN_GROUP - 1)) == 0);
TSR_STATIC_CHECK(tree_ii, TSR_TREE_II * TSR_TREE_LANES == TSR_VEC);
TSR_STATIC_CHECK(embed_ii, TSR_EMBED_II * TSR_VEC == TSR_LANES);

/* The mesh-row roots the profile builds (profile_defaults.h): a power of
 * two of columns within the mesh. */
TSR_STATIC_CHECK(w13_cols_pow2, (TSR_W13_COLS & (TSR_W13_COLS - 1)) == 0 &&
                                TSR_W13_COLS <= TSR_MAX_MESH_COLS);
TSR_STATIC_CHECK(cls_cols_pow2, (TSR_CLS_COLS & (TSR_CLS_COLS - 1)) == 0 &&
                                TSR_CLS_COLS <= TSR_MAX_MESH_COLS);

TSR_STATIC_CHECK(q4_group_is_lanes, !TSR_WITH_Q4 || (TSR_LANES == 32 && TSR_MAX_GROUP >= 32 &&
                                                     TSR_MIN_GROUP <= 32));

#define TSR_WITH_KV_F16     (TSR_PE_KVH_WORDS > 0)
#define TSR_WITH_KV_INT8    (TSR_PE_KVQ_BYTES > 0 && TSR_PE_KVS_WORDS > 0)

/* The quantizer reads a group's word maxima (TSR_VEC words) in one cycle. */
#define TSR_WMAX_PORTS      (TSR_MAX_GROUP / TSR_VEC > 1 ? TSR_MAX_GROUP / TSR_VEC : 1)

/* A forward pass runs up to TSR_MAX_BLOCK items (tokens of one prompt
 * block, or one token each of a batch of sequences): every PE reads each
 * weight word once for all of them.  A batch has at most one item a slot;
 * only a batch's items need their logits. */
#ifndef TSR_MAX_BLOCK
#define TSR_MAX_BLOCK       1
#endif
#define TSR_MAX_BATCH       (TSR_MAX_SLOTS < TSR_MAX_BLOCK ? TSR_MAX_SLOTS : TSR_MAX_BLOCK)
TSR_STATIC_CHECK(block_pow2, (TSR_MAX_BLOCK & (TSR_MAX_BLOCK - 1)) == 0);
/* Per-slot cancel words live in the ring's header (tsr_kernel.h). */
TSR_STATIC_CHECK(slots_cancel_words, TSR_MAX_SLOTS <= 8);

/* Bits that hold the value n (n < 2^16), for shift-and-add multiplies by a
 * bounded operand (tsr_mul_small, tsr_ops.h). */
#define TSR_BITS(n) ((n) < 2 ? 1 : (n) < 4 ? 2 : (n) < 8 ? 3 : (n) < 16 ? 4 : (n) < 32 ? 5 :    \
                     (n) < 64 ? 6 : (n) < 128 ? 7 : (n) < 256 ? 8 : (n) < 512 ? 9 :             \
                     (n) < 1024 ? 10 : (n) < 2048 ? 11 : (n) < 4096 ? 12 : (n) < 8192 ? 13 :    \
                     (n) < 16384 ? 14 : (n) < 32768 ? 15 : 16)
#define TSR_BLOCK_BITS      TSR_BITS(TSR_MAX_BLOCK)

/* PEs of the profile: the unrolled PE loops run over this many instances. */
#define TSR_PES             TSR_MAX_PES

/* SLRs (TSR_SLRS, profile_defaults.h): SLR s holds the PEs [TSR_SLR_PE0(s),
 * TSR_SLR_PE0(s + 1)), whole mesh rows of the profile's TSR_MAX_MESH_COLS
 * (R = TSR_PES / TSR_MAX_MESH_COLS of them), R / S rows each and one more
 * on each of the last R % S SLRs: the first SLRs hold the attention PEs,
 * whose KV cache makes them the heavier in UltraRAM.  A configured mesh's
 * columns (a power of two up to TSR_MAX_MESH_COLS) and a matrix's C_m
 * divide TSR_MAX_MESH_COLS, so every mesh row, and with it every column
 * tree, stays inside one SLR; a KV head group (TSR_MAX_KV_SPLIT PEs at
 * most, from a multiple of its size) likewise (checked below, and again
 * at CONFIGURE, tsr_kernel.c).  The controller sits by SLR 0: the bus
 * reaches SLR s over s crossings (TSR_SLR_OF).  Shared with the driver
 * as tsr_lay_slr_pe0 (tsr_layout.h), for plan's profiles. */
#define TSR_SLR_ROWS_       ((1u * TSR_PES) / (1u * TSR_MAX_MESH_COLS))
#define TSR_SLR_E_          ((1u * TSR_SLRS) - TSR_SLR_ROWS_ % (1u * TSR_SLRS))
#define TSR_SLR_PE0(s)                                                                          \
    (((1u * (s)) * (TSR_SLR_ROWS_ / (1u * TSR_SLRS)) +                                          \
      ((1u * (s)) > TSR_SLR_E_ ? (1u * (s)) - TSR_SLR_E_ : 0u)) * (1u * TSR_MAX_MESH_COLS))
/* PE p's SLR (p a literal of an unrolled loop, or a run-time index). */
#define TSR_SLR_OF(p)       ((TSR_SLRS > 1 && (1u * (p)) >= TSR_SLR_PE0(1) ? 1u : 0u) +          \
                             (TSR_SLRS > 2 && (1u * (p)) >= TSR_SLR_PE0(2) ? 1u : 0u) +          \
                             (TSR_SLRS > 3 && (1u * (p)) >= TSR_SLR_PE0(3) ? 1u : 0u))
/* Crossings from the controller to the farthest SLR, and to the farthest
 * attention PE's; the register stages a word passes on its way (TSR_D_SLR
 * each crossing). */
#define TSR_SLR_HOPS        (TSR_SLRS - 1)
#define TSR_ATT_SLR_HOPS    TSR_SLR_OF(TSR_ATT_PES - 1)
#define TSR_SLR_DELAY       (TSR_SLR_HOPS * TSR_D_SLR)
#define TSR_ATT_SLR_DELAY   (TSR_ATT_SLR_HOPS * TSR_D_SLR)
TSR_STATIC_CHECK(slrs_range, TSR_SLRS >= 1 && TSR_SLRS <= 4);
TSR_STATIC_CHECK(slrs_whole_rows, TSR_PES % TSR_MAX_MESH_COLS == 0 && TSR_SLR_ROWS_ >= TSR_SLRS);
TSR_STATIC_CHECK(slrs_kv_groups, TSR_SLRS == 1 || TSR_MAX_MESH_COLS % TSR_MAX_KV_SPLIT == 0);
/* The delay lines are written for the datapath the multi-SLR profile
 * builds: Q8 groups of whole TSR_LANES words (one scale a chunk), no F32
 * broadcast. */
TSR_STATIC_CHECK(slrs_datapath, TSR_SLRS == 1 || (!TSR_WITH_F32 && TSR_MIN_GROUP >= TSR_LANES));

/* Weight matrices: tok_embedding, 4 per layer (QKV, WO, W13, W2), an
 * unshared classifier. */
#define TSR_MAX_MATS        (2 + 4 * TSR_MAX_LAYERS)
/* A forward pass's stages: one a matrix after the embedding. */
#define TSR_MAX_STAGES      (4 * TSR_MAX_LAYERS + 1)
/* Longest GEMV input (dim or hidden) padded to whole groups, and to whole
 * TSR_LANES words. */
#define TSR_MAX_N           (TSR_MAX_HIDDEN > TSR_MAX_DIM ? TSR_MAX_HIDDEN : TSR_MAX_DIM)
#define TSR_MAX_IN          (TSR_MAX_N + TSR_MAX_GROUP + TSR_LANES)
/* A PE's copy of the broadcast input: int8 words, one scale per group,
 * fp32 values (F32 mode). */
#define TSR_PE_XQ_WORDS     (TSR_MAX_IN / TSR_LANES)
#define TSR_PE_XS           (TSR_MAX_IN / TSR_MIN_GROUP)
#if TSR_WITH_F32
#define TSR_PE_XF           TSR_MAX_IN
#else
#define TSR_PE_XF           1
#endif
/* The fused q|k|v output (dim + 2 kv_dim <= 3 dim). */
#define TSR_MAX_QKV         (3 * TSR_MAX_DIM)
/* Query heads per KV head, and one KV head's query slice (kv_mul x head
 * size <= dim). */
#define TSR_MAX_KV_MUL      TSR_MAX_HEADS
#define TSR_MAX_QGROUP      TSR_MAX_DIM
/* The attention multiply-add's accumulators: a row of positions or of head
 * dimensions. */
#define TSR_ATT_ACC         (TSR_MAX_SEQ > TSR_MAX_HEAD_SIZE ? TSR_MAX_SEQ : TSR_MAX_HEAD_SIZE)
/* Controller fp32 words: rms_att, rms_ffn per layer + rms_final, RoPE's
 * frequencies, the QKV biases per layer. */
#define TSR_CTRL_WORDS      ((2 * TSR_MAX_LAYERS + 1) * TSR_MAX_DIM + TSR_MAX_HEAD_SIZE / 2 + \
                             TSR_MAX_LAYERS * TSR_MAX_QKV)
/* ... held as rows (one row a norm), so a pass reads a row at a constant
 * bank per lane. */
#define TSR_RMS_ROWS        (2 * TSR_MAX_LAYERS + 1)
/* Whole TSR_LANES words of n floats. */
#define TSR_PAD32(n)        (((n) + 31) / 32 * 32)
/* An item's controller vectors, one memory of TSR_VEC banks, each at a
 * whole word: the residual stream x (dim), the next GEMV input xn (padded
 * to its groups), q | k | v (dim + 2 kv_dim).  (The logits, for a batch's
 * items only, have a memory of their own.) */
#define TSR_CV_X            0
#define TSR_CV_XN           (TSR_CV_X + TSR_PAD32(TSR_MAX_DIM))
#define TSR_CV_QKV          (TSR_CV_XN + TSR_PAD32(TSR_MAX_IN))
#define TSR_CV_WORDS        (TSR_CV_QKV + TSR_PAD32(TSR_MAX_QKV))
#define TSR_LOGIT_WORDS     TSR_PAD32(TSR_MAX_VOCAB)
/* An attention PE's memories in words of TSR_ATT_LANES (KV cache, scores,
 * outputs) or TSR_VEC (its copy of q | k | v), so that a lane is a bank. */
#define TSR_PE_KV_AW        (TSR_PE_KV_WORDS / TSR_ATT_LANES)
/* ... and the f16 / int8 caches' (one placeholder word when not built);
 * the int8 scales are one a position, read one a cycle: a plain array. */
#define TSR_PE_KVH_AW       (TSR_WITH_KV_F16 ? TSR_PE_KVH_WORDS / TSR_ATT_LANES : 1u)
#define TSR_PE_KVQ_AW       (TSR_WITH_KV_INT8 ? TSR_PE_KVQ_BYTES / TSR_ATT_LANES : 1u)
#define TSR_KVS_DIM         (TSR_WITH_KV_INT8 ? TSR_PE_KVS_WORDS : 1u)
TSR_STATIC_CHECK(kvh_words_whole, TSR_PE_KVH_WORDS % TSR_ATT_LANES == 0);
TSR_STATIC_CHECK(kvq_bytes_whole, TSR_PE_KVQ_BYTES % TSR_ATT_LANES == 0);
#define TSR_PE_ATT_AW       ((TSR_PE_ATT + TSR_ATT_LANES - 1) / TSR_ATT_LANES)
#define TSR_PE_AO_AW        (TSR_MAX_QGROUP / TSR_ATT_LANES)
#define TSR_PE_QKV_VW       ((TSR_MAX_QKV + TSR_VEC - 1) / TSR_VEC)
TSR_STATIC_CHECK(kv_words_whole, TSR_PE_KV_WORDS % TSR_ATT_LANES == 0);
TSR_STATIC_CHECK(qgroup_whole, TSR_MAX_QGROUP % TSR_ATT_LANES == 0);
/* Small memories go to LUTs, larger ones to block RAM: a bank of at most
 * TSR_LUTRAM_WORDS words.  Each TSR_*_LUT says which for one array
 * (tessera_top picks its literal BIND_STORAGE line by it; driver/plan.c
 * packs by the same rule). */
#define TSR_LUTRAM_WORDS    64
#define TSR_PSUM_LUT        (TSR_MAX_BLOCK * TSR_PE_ROWS / TSR_VEC <= TSR_LUTRAM_WORDS)
#define TSR_XQ_LUT          (TSR_MAX_BLOCK * TSR_PE_XQ_WORDS <= TSR_LUTRAM_WORDS)
#define TSR_XS_LUT          (TSR_MAX_BLOCK * TSR_PE_XS <= TSR_LUTRAM_WORDS)
#define TSR_QKVW_LUT        (TSR_PE_QKV_VW <= TSR_LUTRAM_WORDS)
#define TSR_ATT_LUT         (TSR_PE_ATT_AW <= TSR_LUTRAM_WORDS)
#define TSR_AO_LUT          (TSR_PE_AO_AW <= TSR_LUTRAM_WORDS)
#define TSR_ACC_LUT         (TSR_ATT_ACC / TSR_ATT_LANES <= TSR_LUTRAM_WORDS)
#define TSR_COEF_LUT        (TSR_ATT_ACC <= TSR_LUTRAM_WORDS)
/* Quantizer: TSR_LANES chunks of the input; one max per TSR_VEC word. */
#define TSR_MAX_CHUNKS      (TSR_MAX_IN / TSR_LANES)
#define TSR_MAX_IN_VWORDS   (TSR_MAX_IN / TSR_VEC + 1)
/* Trip-count bounds for LOOP_TRIPCOUNT (words of TSR_VEC or TSR_LANES). */
#define TSR_MAX_DIM_WORDS   (TSR_MAX_DIM / TSR_VEC + 1)
#define TSR_MAX_QKV_WORDS   (TSR_MAX_QKV / TSR_VEC + 1)
#define TSR_MAX_VOCAB_WORDS (TSR_MAX_VOCAB / TSR_VEC + 1)
#define TSR_MAX_OUT_WORDS   (TSR_MAX_VOCAB_WORDS > TSR_MAX_QKV_WORDS ? TSR_MAX_VOCAB_WORDS : TSR_MAX_QKV_WORDS)
#define TSR_MAX_IN_WORDS    (TSR_MAX_IN / TSR_VEC)
#define TSR_MAX_HALF_HS     (TSR_MAX_HEAD_SIZE / 2)
#define TSR_MAX_TILE_STEPS  (TSR_PE_W8_WORDS * TSR_LANES / TSR_MIN_GROUP)
#define TSR_MAX_ATT_STEPS   (TSR_MAX_HEAD_SIZE * TSR_MAX_SEQ)
/* Sift-down depth bound for the top-p heap: > log2(TSR_MAX_VOCAB). */
#define TSR_HEAP_DEPTH      32
/* Levels of the column adder tree: log2(TSR_MAX_MESH_COLS), a literal (a
 * tree level is code of its own: its receivers are known at compile
 * time, mesh.c). */
#if TSR_MAX_MESH_COLS >= 64
#define TSR_MAX_TREE_LEVELS 6
#elif TSR_MAX_MESH_COLS >= 32
#define TSR_MAX_TREE_LEVELS 5
#elif TSR_MAX_MESH_COLS >= 16
#define TSR_MAX_TREE_LEVELS 4
#elif TSR_MAX_MESH_COLS >= 8
#define TSR_MAX_TREE_LEVELS 3
#elif TSR_MAX_MESH_COLS >= 4
#define TSR_MAX_TREE_LEVELS 2
#elif TSR_MAX_MESH_COLS >= 2
#define TSR_MAX_TREE_LEVELS 1
#else
#define TSR_MAX_TREE_LEVELS 0
#endif
TSR_STATIC_CHECK(tree_levels, (1 << TSR_MAX_TREE_LEVELS) == TSR_MAX_MESH_COLS);
/* Levels of a KV head group's trees: log2(TSR_MAX_KV_SPLIT), likewise. */
#if TSR_MAX_KV_SPLIT >= 64
#define TSR_MAX_SPLIT_LEVELS 6
#elif TSR_MAX_KV_SPLIT >= 32
#define TSR_MAX_SPLIT_LEVELS 5
#elif TSR_MAX_KV_SPLIT >= 16
#define TSR_MAX_SPLIT_LEVELS 4
#elif TSR_MAX_KV_SPLIT >= 8
#define TSR_MAX_SPLIT_LEVELS 3
#elif TSR_MAX_KV_SPLIT >= 4
#define TSR_MAX_SPLIT_LEVELS 2
#elif TSR_MAX_KV_SPLIT >= 2
#define TSR_MAX_SPLIT_LEVELS 1
#else
#define TSR_MAX_SPLIT_LEVELS 0
#endif
TSR_STATIC_CHECK(split_levels, (1 << TSR_MAX_SPLIT_LEVELS) == TSR_MAX_KV_SPLIT);
/* Levels of a reduction tree over the PEs or the partial sums. */
#define TSR_MAX_LEVELS      16

/* Reductions: TSR_SUM_LANES partial sums; element i goes to partial
 * i % TSR_SUM_LANES.  E elements per cycle at II, so that each partial is
 * added to once every TSR_FADD_LAT cycles (tsr_reduce_sum, ops.c). */
#if TSR_SUM_LANES >= TSR_FADD_LAT
#define TSR_SUM_E    (TSR_SUM_LANES / TSR_FADD_LAT)
#define TSR_SUM_II   1
#define TSR_SUM_DIST TSR_FADD_LAT   /* iterations between two adds to a partial */
#else
#define TSR_SUM_E    1
#define TSR_SUM_II   (TSR_FADD_LAT / TSR_SUM_LANES)
#define TSR_SUM_DIST TSR_SUM_LANES
#endif
/* ... the partials as rows of TSR_SUM_E, a pass's row after another. */
#define TSR_SUM_ROWS (TSR_SUM_LANES / TSR_SUM_E)

/* A PE's own reductions (attention's sum of exponentials): at most
 * TSR_FADD_LAT partials, one element a cycle, so a PE needs one adder. */
#if TSR_SUM_LANES >= TSR_FADD_LAT
#define TSR_PE_SUM_LANES TSR_FADD_LAT
#else
#define TSR_PE_SUM_LANES TSR_SUM_LANES
#endif
#define TSR_PE_SUM_II    (TSR_FADD_LAT / TSR_PE_SUM_LANES)

/* RMSNorm's sum of squares: in its own pass over x, or, when the partials
 * are many enough for the residual gather's TSR_VEC values a cycle (each
 * partial then added to once every TSR_SUM_LANES / TSR_VEC >=
 * TSR_FADD_LAT cycles), accumulated by the gather that writes x (mesh.c),
 * the same partials in the same order. */
#if TSR_SUM_LANES >= TSR_VEC * TSR_FADD_LAT
#define TSR_SSQ_FUSED    1
#define TSR_SSQ_DIST     (TSR_SUM_LANES / TSR_VEC)   /* words between two adds to a partial */
#else
#define TSR_SSQ_FUSED    0
#endif

/* Attention scores: a position's sum over the head dimensions in one
 * accumulator, i ascending (run.c's order; a pass over the positions is
 * then padded to TSR_FADD_LAT words), or, in a profile whose sums are
 * reordered anyway, in TSR_FADD_LAT partials (dimension i into partial
 * i % TSR_FADD_LAT) added by a tree: no padding (attention.c). */
#if TSR_SUM_LANES >= TSR_FADD_LAT
#define TSR_ATT_PARTS    TSR_FADD_LAT
#else
#define TSR_ATT_PARTS    1
#endif

/* The literal each pragma value TSR_LIT_* stands for, per shipped profile
 * (generated by hw/pragma_literals.py; a pragma takes no expression). */
#include "profiles/pragma_literals.h"

#endif
