/*
 * parts.h - the FPGA parts tessera targets: on-chip memory, DSPs, LUTs, the
 * platform shell's share, default clock and off-chip bandwidth.  The table
 * itself is hw/parts.def (one X-macro list, also the source of
 * docs/parts.md); a figure the table does not know is -1.
 *
 * Capacity = BRAM36 blocks x 4096 bytes + URAM blocks x 32768 bytes: the
 * data bits of a 36 Kb BRAM and a 288 Kb URAM (AMD UG573 / AM007; the rest
 * is parity / ECC, which holds no weights), the figure the emulator's
 * part= cap uses.  `tessera plan` uses the same block sizes and packs
 * arrays into blocks more carefully (driver/plan.c).
 */
#ifndef TSR_PARTS_H
#define TSR_PARTS_H

#include <stdint.h>

typedef struct tsr_part {
    const char *name;          /* "u55c", "u280", ...                          */
    const char *family;        /* card and device, for people                  */
    int         bram36;        /* 36 Kb block RAMs                  (-1: unknown) */
    int         uram;          /* 288 Kb UltraRAMs                  (-1: unknown) */
    int         dsp;           /* DSP48E2 / DSP58 slices            (-1: unknown) */
    int         lut;           /* LUTs                              (-1: unknown) */
    int         ff;            /* flip-flops                        (-1: unknown) */
    int         shell_bram36;  /* reserved by the platform shell    (-1: unknown) */
    int         shell_uram;
    int         shell_dsp;
    int         shell_lut;
    int         shell_ff;
    int         clock_mhz;     /* default kernel clock, MHz         (-1: unknown) */
    int         offchip_gbps;  /* off-chip DRAM peak, GB/s          (-1: unknown) */
    const char *offchip_kind;  /* "HBM2 16 GB", ...                            */
    const char *source;        /* data sheet / user guide of the figures       */
} tsr_part;

/* The part named name (case-sensitive), or NULL when unknown. */
const tsr_part *tsr_part_find(const char *name);

/* On-chip SRAM bytes of part p (BRAM36 x 4096 + URAM x 32768); 0 when the
 * table does not know its block counts. */
uint64_t tsr_part_bytes(const tsr_part *p);

/* Comma-separated names of the known parts, for error messages. */
const char *tsr_part_names(void);

/* Number of parts, and part i (0 <= i < tsr_part_count()), in table order. */
int tsr_part_count(void);
const tsr_part *tsr_part_at(int i);

#endif
