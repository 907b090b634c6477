/*
 * profile_undef.h - forget the profile macros, so that another profile
 * header can be included in the same file (driver/profiles.c reads every
 * shipped profile this way).  Host code only.
 */
#undef TSR_PROFILE_NAME
#undef TSR_MAX_PES
#undef TSR_MAX_MESH_ROWS
#undef TSR_MAX_MESH_COLS
#undef TSR_DEFAULT_PES
#undef TSR_MAX_DIM
#undef TSR_MAX_HIDDEN
#undef TSR_MAX_LAYERS
#undef TSR_MAX_HEADS
#undef TSR_MAX_KV_HEADS
#undef TSR_MAX_HEAD_SIZE
#undef TSR_MAX_VOCAB
#undef TSR_MAX_SEQ
#undef TSR_MAX_SLOTS
#undef TSR_MAX_BLOCK
#undef TSR_MIN_GROUP
#undef TSR_MAX_GROUP
#undef TSR_SUM_LANES
#undef TSR_MAX_KV_SPLIT
#undef TSR_WITH_F32
#undef TSR_WITH_Q4
#undef TSR_PE_KVH_WORDS
#undef TSR_PE_KVQ_BYTES
#undef TSR_PE_KVS_WORDS
#undef TSR_ATT_PES
#undef TSR_PE_W8_WORDS
#undef TSR_PE_F32_WORDS
#undef TSR_PE_KV_WORDS
#undef TSR_PE_ROWS
#undef TSR_PE_ATT
#undef TSR_F32_URAM
#undef TSR_KV_URAM
#undef TSR_EST_URAM
#undef TSR_EST_BRAM36
#undef TSR_EST_DSP
#undef TSR_EST_LUT
#undef TSR_EST_FF
#undef TSR_CLOCK_MHZ
#undef TSR_SLRS
#undef TSR_W13_COLS
#undef TSR_CLS_COLS
#undef TSR_PROFILE_GENERIC_H
#undef TSR_PROFILE_STORIES260K_H
#undef TSR_PROFILE_STORIES15M_H
