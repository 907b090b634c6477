/*
 * sampler.h - what a decode run asks of the device's sampler
 * (kernels/sampler.c), per sequence, and the callback that sees its
 * tokens arrive.  The command layer (kcmd.c) writes these into a DECODE
 * or DECODE_BATCH command; no logits travel.
 */
#ifndef TSR_SAMPLER_H
#define TSR_SAMPLER_H

#include <stdint.h>

/* Sampler settings for one decode run (on the device). */
typedef struct tsr_sampler {
    float    temperature;  /* 0: greedy                                 */
    float    top_p;        /* in (0,1]: nucleus sampling; >= 1: off     */
    uint64_t seed;         /* xorshift seed, used when reseed != 0      */
    int      reseed;       /* 1: restart the slot's RNG from seed       */
    int      ignore_stop;  /* 1: do not stop at BOS/EOS (benchmarks)    */
} tsr_sampler;

/* Called from a decode run, on the caller's thread, as sequence k's token
 * ids appear in the output buffer (k: its index in the run); return
 * non-zero to stop that sequence (the kernel may have produced a few more,
 * which the run still hands over). */
typedef int (*tsr_token_fn)(int k, int token, void *user);

#endif
