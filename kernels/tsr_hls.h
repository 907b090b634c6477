/*
 * tsr_hls.h - included first by every kernel source file (never by driver/).
 *
 * The HLS pragmas and loop labels are for Vitis HLS; the host compiler's
 * -Wall would flag both, so silence exactly those two warnings here.
 */
#ifndef TSR_HLS_H
#define TSR_HLS_H

#pragma GCC diagnostic ignored "-Wunknown-pragmas"
#pragma GCC diagnostic ignored "-Wunused-label"

#include "tsr_ops.h"

/* The emulator's runtime (worker pool, SIMD rows): emu/, never synthesized. */
#if defined(TSR_EMU) && !defined(__SYNTHESIS__)
#include "tsr_emu.h"
#endif

/* Publish a word the host is watching (DECODE's token count): in the
 * emulator a release store that also wakes the host thread waiting on the
 * word (emu/pool.c), a plain store to the m_axi buffer in hardware. */
#if defined(TSR_EMU) && !defined(__SYNTHESIS__)
#define TSR_PUBLISH(p, v) tsr_emu_publish((p), (v))
#else
#define TSR_PUBLISH(p, v) (*(p) = (v))
#endif

#endif
