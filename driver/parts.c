/* parts.c - the on-chip memory table of the supported Alveo cards. */
#include <string.h>

#include "parts.h"

#define TSR_BRAM36_BYTES 4608u   /* 36 Kb */
#define TSR_URAM_BYTES   36864u  /* 288 Kb */

static const tsr_part parts[] = {
    { "u55c", 2016, 960 },
    { "u280", 2016, 960 },
    { "u250", 2688, 1280 },
    { "u200", 2160, 960 },
};

const tsr_part *tsr_part_find(const char *name)
{
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strcmp(parts[i].name, name) == 0) return &parts[i];
    return NULL;
}

uint64_t tsr_part_bytes(const tsr_part *p)
{
    return (uint64_t)p->bram36 * TSR_BRAM36_BYTES + (uint64_t)p->uram * TSR_URAM_BYTES;
}

const char *tsr_part_names(void) { return "u55c, u280, u250, u200"; }
