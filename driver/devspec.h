/*
 * devspec.h - a device spec string ("emu", "emu:part=u55c,pes=16",
 * "emu:batch=2", "emu:cards=2", "emu:stages=0-2/3-4", "xrt:0",
 * "xrt:1,xclbin=path") and its parser (devspec.c): what the user asked of
 * a device, before any backend opens it.
 */
#ifndef TSR_DEVSPEC_H
#define TSR_DEVSPEC_H

#include "error.h"
#include "tessera.h"

/* Devices a model may be split over (spec cards=). */
#define TSR_DEV_MAX_CARDS TSR_MAX_CARDS   /* tessera.h */

/* What the user asked for in a device spec ("emu:part=u55c,pes=16,threads=2"). */
typedef struct tsr_devspec {
    char backend[16];   /* "emu", "xrt"                                 */
    int  index;         /* device index for xrt, 0 by default           */
    char part[32];      /* "" (backend default), "u55c", "u280", ...    */
    int  pes;           /* 0: backend default                           */
    int  cols;          /* mesh columns; 0: 1                           */
    int  kv_split;      /* PEs per KV head; 0: the profile's default    */
    int  batch;         /* sequences a decode step takes, 1..8; 0: the
                           device's limit (a lower one: to compare); a
                           split: a stage pass's, 0: 1                 */
    int  threads;       /* 0: cores available                           */
    int  no_simd;       /* emu: 1 = portable loops only ("simd=0")      */
    int  simd_avx2;     /* emu: 1 = an AVX2-only CPU's paths ("simd=avx2") */
    char xclbin[256];   /* xrt only; "" for the default in bitstreams/  */
    int  cards;         /* devices the model is split over in pipeline
                           stages, each its own kernel instance ("cards=N",
                           or the count of stages=); 0 or 1: one         */
    int  stage_end[TSR_DEV_MAX_CARDS]; /* "stages=0-3/4-7": stage k's
                           layers end before stage_end[k] (the first
                           starts at 0); all 0: the split plan proposes */
} tsr_devspec;

/* Parse spec ("emu", "emu:pes=16,part=u55c", "xrt:0", "xrt:0,xclbin=F";
 * NULL or "": "emu") into *out (zeroed first; keys may not repeat; part
 * is lower-cased).  Pure: no device is touched, and it is thread-safe
 * (no shared parser state).  Errors: TSR_ERR_ARG naming the bad key or
 * value (unknown backend or key, a value out of range, cards= and
 * stages= disagreeing, xclbin= given to the emulator). */
int tsr_devspec_parse(const char *spec, tsr_devspec *out, tsr_err *e);

#endif
