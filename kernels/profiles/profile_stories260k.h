/*
 * profile_stories260k.h - synthesis profile sized for stories260K (dim 64,
 * hidden 172, 5 layers, 8 heads, 4 KV heads, vocab 512, seq 512) on a 2 x 2
 * mesh: Q8_0 at group 32 needs ~66 KB of int8 tiles and ~2 K scale words per
 * PE, plus 5 KV units x 8 K words per slot; F32 mode needs ~66 K weight
 * words per PE.
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

#define TSR_MIN_GROUP         16
#define TSR_MAX_GROUP         64

#define TSR_PE_I8_BYTES       (80u * 1024u)
#define TSR_PE_F32_WORDS      (160u * 1024u)

#endif
