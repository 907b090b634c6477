/*
 * kstatus.h - what the kernel answers, for every backend (kstatus.c): its
 * status words (kernels/tsr_kernel.h TSR_K_*) as driver errors, and its
 * counters block (READ_COUNTERS) as a struct and as text.  Only the
 * command layer (kcmd.c) reads them: a backend moves the words.
 * Thread-safety: pure functions.
 */
#ifndef TSR_KSTATUS_H
#define TSR_KSTATUS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tsr_kernel.h"

/* Map kernel status k (TSR_K_*, not TSR_K_OK) of command `what` to a driver
 * error: RANGE, CAPACITY, UNSUPPORTED (shape), STATE, ARG, else DEVICE, with
 * "<backend>: <what>: kernel status k (name)" in e.  Returns the code. */
int tsr_kstatus_err(int k, const char *backend, const char *what, tsr_err *e);

/* The kernel's counters block kc (READ_COUNTERS) as "name value" lines into
 * buf (NUL-terminated, truncated to len): runs per op, MACs, fabric bytes,
 * the per-PE SRAM bytes of the first min(n_pes, max_pes) PEs (the card's
 * profile may hold fewer than the library's), and, when cfg is not NULL,
 * the cycles the code charged for the last forward pass, region by region,
 * with the controller's share and tokens/s at clock_mhz.  Returns the
 * length needed, like snprintf. */
size_t tsr_kcounters_text(const tsr_kcounters *kc, uint32_t max_pes, const char *profile,
                          const tsr_kconfig *cfg, int clock_mhz, char *buf, size_t len);

/* The counters block from the words READ_COUNTERS answers (w: n words,
 * (low, high) pairs in field order) into *kc; fields past n stay 0. */
void tsr_kcounters_from_words(const uint32_t *w, uint32_t n, tsr_kcounters *kc);

#endif
