/*
 * profiles.h - the synthesis profiles this tessera ships
 * (kernels/profiles/profile_*.h), by name, for `tessera plan --profile` and
 * the profile tests: each one's figures (tsr_kprofile) read from its own
 * header, so the table cannot drift from what the kernel compiles with.
 */
#ifndef TSR_PROFILES_H
#define TSR_PROFILES_H

#include "tsr_kernel.h"

/* The profile named name (case-sensitive: "generic", "stories260k",
 * "stories15m"), or NULL. */
const tsr_kprofile *tsr_profile_find(const char *name);

/* "generic, stories260k, stories15m": the names, for messages. */
const char *tsr_profile_names(void);

/* The synthesis profiles' resource estimates their headers state
 * (TSR_EST_URAM, TSR_EST_BRAM36, TSR_EST_DSP; -1 for the emulator's
 * generic profile, which states none). */
void tsr_profile_stated(const char *name, long *uram, long *bram36, long *dsp);

/* ... and of its fabric (TSR_EST_LUT, TSR_EST_FF; -1 none). */
void tsr_profile_stated_fabric(const char *name, long *lut, long *ff);

/* The kernel clock a profile targets, MHz (TSR_CLOCK_MHZ; 0: it states
 * none, and plan takes the part's). */
int tsr_profile_clock_mhz(const char *name);

/* The SLRs a profile's compute unit spans (TSR_SLRS: 1, or the dies its
 * memories need); 1 for a name it does not know. */
int tsr_profile_slrs(const char *name);

#endif
