/*
 * tsr_hls.h - included first by every kernel source file (never by driver/).
 *
 * The HLS pragmas and loop labels are for Vitis HLS; the host compiler's
 * -Wall would flag both, so silence exactly those two warnings here.
 * Then the PE loop's structure; where a platform differs from the
 * hardware (the PE loop, words the other side watches, fast paths) is
 * tsr_platform.h's, read through tsr_kernel.h.
 */
#ifndef TSR_HLS_H
#define TSR_HLS_H

/* gcc's view only (the emulator, csim-gcc): the HLS pragmas and loop
 * labels mean nothing to it.  Synthesis does not see these, so they cannot
 * hide a Vitis warning about a pragma it dropped. */
#ifndef __SYNTHESIS__
#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Wunused-label"
#endif

#include "tsr_ops.h"

/* Every TSR_LIT_* pragma value equals the expression it stands for under
 * this profile (profiles/pragma_literals.h; `make pragma-literals`). */
#define TSR_PRAGMA_LIT_CHECK
#include "profiles/pragma_literals.h"

/* a * b for b < 2^BITS, BITS a literal: shift-and-add over b's bits, so a
 * PE's setup arithmetic takes adders, not a DSP multiplier (a 32-bit
 * multiply is about three DSP48E2s, and there would be one per PE). */
#define TSR_MUL_SMALL(a, b, BITS) tsr_mul_small((a), (b), (BITS))
static inline uint32_t tsr_mul_small(uint32_t a, uint32_t b, uint32_t bits)
{
#pragma HLS INLINE
    uint32_t r = 0;
mul_small_bits:
    for (uint32_t k = 0; k < 32u; k++) {
#pragma HLS UNROLL
        if (k < bits && ((b >> k) & 1u)) r += a << k;
    }
    return r;
}


/* Word i of a pass on a link port (tessera_top's AXI4-Stream ports).  In
 * hardware a port is a volatile pointer whose every access is the
 * stream's next word, so a pass is read and written in order, each word
 * once (UG1399 "AXI4-Stream Interfaces"; "Multi-Access Pointers on the
 * Interface": volatile keeps every access); in C (the emulator, C
 * simulation) the pass is a buffer and word i sits at i. */
#ifdef __SYNTHESIS__
#define TSR_LINK_GET(p, i)    (*(p))
#define TSR_LINK_PUT(p, i, v) (*(p) = (v))
#else
#define TSR_LINK_GET(p, i)    ((p)[i])
#define TSR_LINK_PUT(p, i, v) ((p)[i] = (v))
#endif

/* TSR_RUN_PES(worst, st, task, job): task(st, p, job, active, 0) for
 * every PE p of the profile, active = 1 for the configured ones; worst gets
 * the largest cycle count a task returned.
 *
 * Hardware: a loop over the profile's TSR_PES PEs, fully unrolled.  Each
 * task is an inlined wrapper that makes exactly one call, unconditionally,
 * to its per-PE step function with PE p's own memories at a constant
 * index; the step function is not inlined, holds all of the step's loops
 * and tests `active` first.  So each PE is one instance, the calls sit in
 * one basic block and the instances run concurrently (UG1399, "Loop
 * Parallelism": functions, not loops, are scheduled in parallel).  The
 * region's latency is the slowest instance: hence the maximum.
 * TSR_RUN_ATT_PES: the same over the PEs that have attention datapaths.
 *
 * TSR_RUN_PES_WHERE(worst, st, task, job, NPES, n, RECV, k): only the PEs
 * p for which RECV(p, k) holds get an instance: a condition on the unrolled,
 * constant p that folds at compile time (a tree level's receivers, whose
 * partner p + k is then a constant index too: k is passed to the task as
 * its last argument, a literal of the unrolled level loop, never read back
 * from the job).  The task still tests the run-time part itself.
 *
 * A platform may run the tasks its own way (TSR_RUN_PES_WHERE,
 * tsr_platform.h: the emulator's worker pool) and returns the same
 * maximum; tasks of PEs that are not receivers return 0 by their run-time
 * test.
 *
 * Built with TSR_SERIAL_PES (a check, never a profile): the loop is not
 * unrolled, one PE after another, and the region charges the sum of its
 * PEs' cycles: the code's accounting moves with its structure
 * (tests/test_plan.c). */
#define TSR_RECV_ALL(p, k) 1
#define TSR_RUN_PES(worst, st, task, job) \
    TSR_RUN_PES_WHERE(worst, st, task, job, TSR_PES, (st)->P, TSR_RECV_ALL, 0)
/* The PEs with attention datapaths: [0, TSR_ATT_PES), the configured
 * att_pes of them. */
#define TSR_RUN_ATT_PES(worst, st, task, job) \
    TSR_RUN_PES_WHERE(worst, st, task, job, TSR_ATT_PES, (st)->cfg.att_pes, TSR_RECV_ALL, 0)

#endif
