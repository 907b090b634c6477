/*
 * tsr_hls.h - included first by every kernel source file (never by driver/).
 *
 * The HLS pragmas and loop labels are for Vitis HLS; the host compiler's
 * -Wall would flag both, so silence exactly those two warnings here.
 * Then the few places where the emulator's runtime (emu/) stands in for
 * hardware: words the other side watches, and the PE loops.
 */
#ifndef TSR_HLS_H
#define TSR_HLS_H

#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Wunused-label"

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


/* The emulator's runtime (worker pool, SIMD rows): emu/, never synthesized. */
#if defined(TSR_EMU) && !defined(__SYNTHESIS__)
#include "tsr_emu.h"
#endif

/* A word the other side of the link watches: DECODE's token count, a
 * response's sequence number, the cancel word.  In the emulator a release
 * store that wakes the thread waiting on it (emu/pool.c) and an acquire
 * load; in hardware a volatile m_axi store / load. */
#if defined(TSR_EMU) && !defined(__SYNTHESIS__)
#define TSR_PUBLISH(p, v) tsr_emu_publish((uint32_t *)(p), (v))
#define TSR_OBSERVE(p)    tsr_emu_observe((const uint32_t *)(p))
#else
#define TSR_PUBLISH(p, v) (*(p) = (v))
#define TSR_OBSERVE(p)    (*(p))
#endif

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

/* The serve loop waits for the ring entry's sequence word: the emulator
 * sleeps on it (a futex, woken by the host's store), hardware polls. */
#if defined(TSR_EMU) && !defined(__SYNTHESIS__)
#define TSR_WAIT_WORD(p, old) tsr_emu_wait_change((uint32_t *)(p), (old), 100000u)
#else
#define TSR_WAIT_WORD(p, old) ((void)0)
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
 * Emulator: the worker pool runs the PE blocks on its threads (emu/pool.c)
 * and returns the same maximum; tasks of PEs that are not receivers return
 * 0 by their run-time test.
 *
 * Built with TSR_SERIAL_PES (a check, never a profile): the loop is not
 * unrolled, one PE after another, and the region charges the sum of its
 * PEs' cycles: the code's accounting moves with its structure
 * (tests/test_plan.c). */
#if defined(TSR_SERIAL_PES)
#define TSR_PES_COMBINE(worst, c) ((worst) += (c))
#define TSR_PES_UNROLL
#else
#define TSR_PES_COMBINE(worst, c) ((worst) = (c) > (worst) ? (c) : (worst))
#define TSR_PES_UNROLL _Pragma("HLS UNROLL")
#endif
#define TSR_RECV_ALL(p, k) 1
#if defined(TSR_EMU) && !defined(__SYNTHESIS__)
#define TSR_RUN_PES_WHERE(worst, st, task, job, NPES, n, RECV, k) \
    ((worst) = tsr_emu_run_pes((st), (n), (task), (job), (k)))
#else
/* (A braced block, not a do-while(0): it is a loop to the lint.) */
#define TSR_RUN_PES_WHERE(worst, st, task, job, NPES, n, RECV, k)              \
    {                                                                          \
        (worst) = 0;                                                           \
        for (uint32_t p_ = 0; p_ < (NPES); p_++) {                             \
            TSR_PES_UNROLL                                                     \
            if (RECV(p_, k)) {                                                 \
                uint32_t c_ = task((st), p_, (job), p_ < (n), (k));            \
                TSR_PES_COMBINE(worst, c_);                                    \
            }                                                                  \
        }                                                                      \
    }
#endif
#define TSR_RUN_PES(worst, st, task, job) \
    TSR_RUN_PES_WHERE(worst, st, task, job, TSR_PES, (st)->P, TSR_RECV_ALL, 0)
/* The PEs with attention datapaths: [0, TSR_ATT_PES), the configured
 * att_pes of them. */
#define TSR_RUN_ATT_PES(worst, st, task, job) \
    TSR_RUN_PES_WHERE(worst, st, task, job, TSR_ATT_PES, (st)->cfg.att_pes, TSR_RECV_ALL, 0)

#endif
