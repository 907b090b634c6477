/*
 * profile_defaults.h - the defaults of the macros a profile header may
 * leave out, included right after the profile (by tsr_profile.h, and by
 * driver/profiles.c after each shipped profile).  No include guard: read
 * once a profile.
 */
/* Whether a PE's fp32 array (scales / F32 tiles) and its KV cache go to
 * UltraRAM (1) or block RAM (0, the default): which BIND_STORAGE line
 * tessera_top takes. */
#ifndef TSR_F32_URAM
#define TSR_F32_URAM        0
#endif
#ifndef TSR_KV_URAM
#define TSR_KV_URAM         0
#endif
/* The Q4_0 tile datapath (mesh.c pe_tile_q4): built unless the profile
 * says 0. */
#ifndef TSR_WITH_Q4
#define TSR_WITH_Q4         1
#endif
/* The KV cache's arrays beside the fp32 one (TSR_PE_KV_WORDS): IEEE halves
 * (TSR_PE_KVH_WORDS), int8 values and their fp32 scales (TSR_PE_KVQ_BYTES,
 * TSR_PE_KVS_WORDS).  A profile that leaves a size out (0) does not build
 * that precision; its array is then one placeholder word. */
#ifndef TSR_PE_KVH_WORDS
#define TSR_PE_KVH_WORDS    0u
#endif
#ifndef TSR_PE_KVQ_BYTES
#define TSR_PE_KVQ_BYTES    0u
#endif
#ifndef TSR_PE_KVS_WORDS
#define TSR_PE_KVS_WORDS    0u
#endif
/* A PE's attention scores: its query heads x its share of the positions
 * (a profile that splits every head over PEs may set less). */
#ifndef TSR_PE_ATT
#define TSR_PE_ATT          (TSR_MAX_HEADS * TSR_MAX_SEQ)
#endif
/* The kernel clock the profile targets, MHz (what `tessera plan
 * --profile` projects tokens/s at); 0: none, the part's default. */
#ifndef TSR_CLOCK_MHZ
#define TSR_CLOCK_MHZ       0
#endif
/* The SLRs (super logic regions, the dies of a stacked-silicon part) the
 * compute unit spans: 1, or up to 4 when its PE memories need more than
 * one SLR's.  The PEs are assigned to SLRs by contiguous index ranges of
 * whole mesh rows (TSR_SLR_PE0, tsr_profile.h), and every word that
 * crosses between SLRs passes TSR_D_SLR registers a crossing (tsr_arch.h;
 * mesh.c, attention.c). */
#ifndef TSR_SLRS
#define TSR_SLRS            1
#endif
/* The mesh columns C_m the profile builds mesh-row roots for: W13's (the
 * SwiGLU pair) and the classifier's (its best row, greedy).  Mesh row r's
 * root is PE r x C_m, so with C_m a multiple of TSR_W13_COLS every W13
 * root is a PE p with p % TSR_W13_COLS == 0, and only those PEs get a
 * SwiGLU datapath (mesh.c TSR_SWIGLU_ROOT); likewise TSR_CLS_COLS and the
 * best-row datapath.  CONFIGURE refuses a layout whose W13 or classifier
 * takes fewer columns (tsr_layout.h tsr_lay_mat_cols): its roots would be
 * PEs without one.  1: every PE (the emulator's, any mesh). */
#ifndef TSR_W13_COLS
#define TSR_W13_COLS        1
#endif
#ifndef TSR_CLS_COLS
#define TSR_CLS_COLS        1
#endif
