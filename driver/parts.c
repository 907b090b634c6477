/* parts.c - the table of FPGA parts (hw/parts.def) and its lookups. */
#include <string.h>

#include "parts.h"
#include "tessera.h"

#define TSR_BRAM36_BYTES 4096u   /* 36 Kb block: 32 Kb of data + 4 Kb parity */
#define TSR_URAM_BYTES   32768u  /* 288 Kb block: 256 Kb of data + ECC       */

static const tsr_part parts[] = {
#define TSR_PART(name, family, bram36, uram, dsp, lut, ff, sb, su, sd, sl, sf, clk, gbps, kind, src) \
    { #name, family, bram36, uram, dsp, lut, ff, sb, su, sd, sl, sf, clk, gbps, kind, src },
#include "../hw/parts.def"
#undef TSR_PART
};

#define N_PARTS ((int)(sizeof parts / sizeof parts[0]))

const tsr_part *tsr_part_find(const char *name)
{
    for (int i = 0; i < N_PARTS; i++)
        if (strcmp(parts[i].name, name) == 0) return &parts[i];
    return NULL;
}

uint64_t tsr_part_bytes(const tsr_part *p)
{
    if (p->bram36 < 0 || p->uram < 0) return 0;
    return (uint64_t)p->bram36 * TSR_BRAM36_BYTES + (uint64_t)p->uram * TSR_URAM_BYTES;
}

const char *tsr_part_names(void)
{
    /* the names in table order, built from the same list */
    static const char names[] =
#define TSR_PART(name, ...) ", " #name
#include "../hw/parts.def"
#undef TSR_PART
        ;
    return names + 2;   /* skip the first ", " */
}

const char *tsr_part_list(void) { return tsr_part_names(); }

int tsr_part_count(void) { return N_PARTS; }

const tsr_part *tsr_part_at(int i) { return i >= 0 && i < N_PARTS ? &parts[i] : NULL; }
