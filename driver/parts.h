/*
 * parts.h - on-chip memory of the FPGA cards tessera targets, for capacity
 * checks ("needs N bytes on-chip, u55c has M") before any weight is sent.
 *
 * Capacity = BRAM36 blocks x 4608 bytes + URAM blocks x 36864 bytes (AMD
 * UG573/UG1272 block sizes: 36 Kb BRAM, 288 Kb URAM; parity bits not
 * counted).  Block counts from the Alveo data sheets (DS963, DS962).
 */
#ifndef TSR_PARTS_H
#define TSR_PARTS_H

#include <stdint.h>

typedef struct tsr_part {
    const char *name;    /* "u55c", "u280", "u250", "u200" */
    int         bram36;  /* 36 Kb block RAMs               */
    int         uram;    /* 288 Kb UltraRAMs               */
} tsr_part;

/* The part named name (case-sensitive), or NULL when unknown. */
const tsr_part *tsr_part_find(const char *name);

/* On-chip SRAM bytes of part p. */
uint64_t tsr_part_bytes(const tsr_part *p);

/* Comma-separated names of the known parts, for error messages. */
const char *tsr_part_names(void);

#endif
