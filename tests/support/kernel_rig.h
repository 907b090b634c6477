/*
 * kernel_rig.h - the kernel on the test's own thread, for tests that look
 * inside it (tests/test_kernel_ops.c): one tsr_kstate of the emulator's
 * profile, commands run straight through tsr_kernel_exec, and a checkpoint
 * placed through the real path (weight image builder -> CONFIGURE -> LOAD).
 *
 * No ring, no device thread, no worker pool: every PE task runs on the
 * calling thread, in PE order, through the same TSR_RUN_PES the emulator
 * uses (st->pe_cy[] then holds each PE's cycles of the last step).
 */
#ifndef TSR_TEST_KERNEL_RIG_H
#define TSR_TEST_KERNEL_RIG_H

#include <stdint.h>

#include "model.h"
#include "weight_image.h"
#include "tsr_kernel.h"

/* A fresh state, tsr_kernel_init'ed, not configured: address space only
 * (an mmap; untouched PE memories cost nothing), no pool, simd off (the
 * kernel's portable loops).  Fails the calling test when it cannot. */
tsr_kstate *rig_state_new(void);
void rig_state_free(tsr_kstate *st);

/* Run command op on st: a (6,) the A0..A5 words (NULL: zeros), in
 * (in_words,) the payload (NULL when 0), out (out_words,) room for the
 * answer (NULL when 0).  Returns the kernel status; *out_n (may be NULL)
 * the answer words written. */
int rig_cmd(tsr_kstate *st, uint32_t op, uint32_t slot, const uint32_t a[6], const void *in,
            uint32_t in_words, void *out, uint32_t out_words, uint32_t *out_n);

/* CONFIGURE with kc; fit (TSR_KFIT_WORDS,) gets the answer.  Returns the
 * kernel status. */
int rig_configure(tsr_kstate *st, const tsr_kconfig *kc, uint32_t fit[TSR_KFIT_WORDS]);

/* Place model m on st as the driver would: tsr_wimage_config (o, mo,
 * against the compiled profile), tsr_wimage_check_profile, the image, then
 * CONFIGURE and every chunk's LOAD.  kc (may be NULL) gets the config.
 * Any failure fails the calling test. */
void rig_place(tsr_kstate *st, const tsr_checkpoint *m, const tsr_load_opts *o,
               const tsr_mesh_opts *mo, tsr_kconfig *kc);

#endif
