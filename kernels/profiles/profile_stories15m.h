/*
 * profile_stories15m.h - synthesis profile for stories15M (dim 288, hidden
 * 768, 6 layers, 6 heads, vocab 32000, seq 256) in Q8_0 on a 16 x 1 mesh,
 * one slot: ~0.95 MB of int8 tiles and ~30 K scale words per PE, plus at
 * most 3 KV units x 24.6 K words.  About 17 MB in all: fits a U55C/U280.
 */
#ifndef TSR_PROFILE_STORIES15M_H
#define TSR_PROFILE_STORIES15M_H

#define TSR_PROFILE_NAME      "stories15m"

#define TSR_MAX_PES           16
#define TSR_MAX_MESH_ROWS     16
#define TSR_MAX_MESH_COLS     4
#define TSR_DEFAULT_PES       16

#define TSR_MAX_DIM           288
#define TSR_MAX_HIDDEN        768
#define TSR_MAX_LAYERS        6
#define TSR_MAX_HEADS         6
#define TSR_MAX_KV_HEADS      6
#define TSR_MAX_HEAD_SIZE     48
#define TSR_MAX_VOCAB         32000
#define TSR_MAX_SEQ           256
#define TSR_MAX_SLOTS         1

#define TSR_MIN_GROUP         16
#define TSR_MAX_GROUP         64

#define TSR_PE_I8_BYTES       (1280u * 1024u)
#define TSR_PE_F32_WORDS      (128u * 1024u)

#endif
