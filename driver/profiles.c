/* profiles.c - the shipped profiles' figures (see profiles.h), each read
 * from its header in turn: include, record (TSR_KPROFILE_INIT, the list of
 * kernels/tsr_profile.def), forget (profile_undef.h). */
#include <stddef.h>
#include <string.h>

#include "profiles.h"

typedef struct shipped {
    const char  *name;
    tsr_kprofile k;
    long         uram, bram, dsp;   /* stated estimate, -1 none */
    long         lut, ff;           /* ... of the fabric, -1 none */
    int          clock_mhz;         /* the clock it targets (TSR_CLOCK_MHZ), 0 none */
    int          slrs;              /* the SLRs it spans (TSR_SLRS)              */
} shipped;

#include "profiles/profile_undef.h"
#include "profiles/profile_generic.h"
#include "profiles/profile_defaults.h"
static const shipped p_generic = { TSR_PROFILE_NAME, TSR_KPROFILE_INIT, -1, -1, -1, -1, -1, TSR_CLOCK_MHZ,
                                   TSR_SLRS };

#include "profiles/profile_undef.h"
#include "profiles/profile_stories260k.h"
#include "profiles/profile_defaults.h"
static const shipped p_260k = { TSR_PROFILE_NAME, TSR_KPROFILE_INIT, TSR_EST_URAM, TSR_EST_BRAM36,
                                TSR_EST_DSP, TSR_EST_LUT, TSR_EST_FF, TSR_CLOCK_MHZ, TSR_SLRS };

#include "profiles/profile_undef.h"
#include "profiles/profile_stories15m.h"
#include "profiles/profile_defaults.h"
static const shipped p_15m = { TSR_PROFILE_NAME, TSR_KPROFILE_INIT, TSR_EST_URAM, TSR_EST_BRAM36,
                               TSR_EST_DSP, TSR_EST_LUT, TSR_EST_FF, TSR_CLOCK_MHZ, TSR_SLRS };

static const shipped *const all[] = { &p_generic, &p_260k, &p_15m };

static const shipped *find(const char *name)
{
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

const tsr_kprofile *tsr_profile_find(const char *name)
{
    const shipped *s = find(name);
    return s ? &s->k : NULL;
}

const char *tsr_profile_names(void) { return "generic, stories260k, stories15m"; }

void tsr_profile_stated(const char *name, long *uram, long *bram36, long *dsp)
{
    const shipped *s = find(name);
    *uram = s ? s->uram : -1;
    *bram36 = s ? s->bram : -1;
    *dsp = s ? s->dsp : -1;
}

void tsr_profile_stated_fabric(const char *name, long *lut, long *ff)
{
    const shipped *s = find(name);
    *lut = s ? s->lut : -1;
    *ff = s ? s->ff : -1;
}

int tsr_profile_clock_mhz(const char *name)
{
    const shipped *s = find(name);
    return s ? s->clock_mhz : 0;
}

int tsr_profile_slrs(const char *name)
{
    const shipped *s = find(name);
    return s ? s->slrs : 1;
}
