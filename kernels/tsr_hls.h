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

/* Publish a word the host may be polling (DECODE's token count): a release
 * store in the emulator (the host thread reads it with an acquire load), a
 * plain store to the m_axi buffer in hardware. */
#if defined(TSR_EMU) && !defined(__SYNTHESIS__)
#define TSR_PUBLISH(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#else
#define TSR_PUBLISH(p, v) (*(p) = (v))
#endif

#endif
