/*
 * tsr_profile.h - selects the synthesis profile: the header named by
 * -DTSR_PROFILE_HEADER="profiles/profile_x.h", else profiles/profile_generic.h
 * (the emulator's).  Derived sizes used by every kernel file follow.
 */
#ifndef TSR_PROFILE_H
#define TSR_PROFILE_H

#ifdef TSR_PROFILE_HEADER
#include TSR_PROFILE_HEADER
#else
#include "profiles/profile_generic.h"
#endif

/* Weight matrices: tok_embedding, 7 per layer, an unshared classifier. */
#define TSR_MAX_MATS        (2 + 7 * TSR_MAX_LAYERS)
/* Longest GEMV input (dim or hidden), padded up to whole groups. */
#define TSR_MAX_IN          ((TSR_MAX_HIDDEN > TSR_MAX_DIM ? TSR_MAX_HIDDEN : TSR_MAX_DIM) + TSR_MAX_GROUP)
/* Groups of that input at the smallest group size. */
#define TSR_MAX_IN_GROUPS   (TSR_MAX_IN / TSR_MIN_GROUP + 1)
/* Longest GEMV output (rows of one PE's tile when R == 1). */
#define TSR_MAX_OUT         (TSR_MAX_VOCAB > TSR_MAX_HIDDEN ? TSR_MAX_VOCAB : TSR_MAX_HIDDEN)
/* Controller fp32 words: rms_att, rms_ffn per layer + rms_final. */
#define TSR_CTRL_WORDS      ((2 * TSR_MAX_LAYERS + 1) * TSR_MAX_DIM)
/* Sift-down depth bound for the top-p heap: > log2(TSR_MAX_VOCAB). */
#define TSR_HEAP_DEPTH      32
/* Levels of the per-row adder tree: >= log2(TSR_MAX_MESH_COLS). */
#define TSR_MAX_TREE_LEVELS 8

#endif
