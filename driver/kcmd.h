/*
 * kcmd.h - the command layer: the kernel protocol (kernels/tsr_kernel.h),
 * in one place, over any backend (backend.h).
 *
 *   device.c (public API checks) -> kcmd.c (this: ring entries, payloads,
 *   answers, fit, the weight stream, the resident-image check, progress,
 *   streaming decode and cancel, link accounting) -> backend (transport:
 *   write, read, publish, wait, interrupt)
 *
 * One tsr_kcmd per device.  Not thread-safe: the caller serialises calls
 * (tsr_kcmd_interrupt excepted, which any thread or a signal handler may
 * call).
 */
#ifndef TSR_KCMD_H
#define TSR_KCMD_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "weight_image.h"

typedef struct tsr_kcmd {
    const tsr_backend_iface *be;
    tsr_backend             *b;
    tsr_devinfo              info;      /* what the backend said of the device */
    tsr_mesh_opts            mesh;      /* the spec's PEs, columns, KV split  */
    int                      started;   /* the kernel serves the ring         */
    uint32_t                 seq;       /* the last command submitted          */
    uint32_t                 done;      /* the last command answered           */
    uint32_t                 half_seq[2]; /* the LOAD that last used each half of `in` */
    tsr_link_counters        link;
    int                      loaded;    /* an image is resident               */
    uint64_t                 image_hash;
    tsr_kconfig              cfg;       /* its configuration                  */
} tsr_kcmd;

/* Open the device of spec through be and start its kernel.  On failure k
 * holds nothing to close (tsr_kcmd_close is still harmless).  Errors: the
 * backend's open, TSR_ERR_DEVICE (the kernel did not start). */
int tsr_kcmd_open(tsr_kcmd *k, const tsr_backend_iface *be, const tsr_devspec *spec, tsr_err *e);

/* Send EXIT (the kernel leaves its loop) and close the backend.  A zeroed
 * or failed k is a no-op. */
void tsr_kcmd_close(tsr_kcmd *k);

/* The CONFIGURE block for m placed by o on this device (tsr_wimage_config
 * with the spec's mesh and the device's profile). */
int tsr_kcmd_config(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o,
                    tsr_kconfig *kc, tsr_err *e);

/* On-chip bytes the placement needs and the device has, from the layout
 * alone: TSR_OK, or TSR_ERR_CAPACITY / TSR_ERR_UNSUPPORTED with the figures
 * in e (prefixed with the model's path). */
int tsr_kcmd_fit(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o,
                 uint64_t *need_bytes, uint64_t *have_bytes, tsr_err *e);

/* Fit, CONFIGURE and stream the weight image once; nothing crosses the link
 * when the same image (content hash) is resident.  o->progress sees 0 as
 * streaming starts and every chunk after, ending at the total. */
int tsr_kcmd_load(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e);

/* Slot state: empty, or rewound to pos with `pending` next (-1: none). */
int tsr_kcmd_reset(tsr_kcmd *k, int slot, tsr_err *e);
int tsr_kcmd_truncate(tsr_kcmd *k, int slot, int pos, int pending, tsr_err *e);

/* Feed tokens (n >= 1) into the slot's KV cache, its pending token first;
 * the last token becomes pending. */
int tsr_kcmd_prefill(tsr_kcmd *k, int slot, const int *tokens, int n, tsr_err *e);

/* Decode up to n tokens from the pending token; out (n,) gets the ids,
 * *n_out the count.  on_token (optional) sees each id as it appears and
 * may return non-zero to stop; cancel (optional, read atomically) non-zero
 * stops the device within one token. */
int tsr_kcmd_decode(tsr_kcmd *k, int slot, int n, const tsr_sampler *s, int *out, int *n_out,
                    tsr_token_fn on_token, void *user, int *cancel, tsr_err *e);

/* Logits of the last forward pass: n floats (the vocab). */
int tsr_kcmd_read_logits(tsr_kcmd *k, float *logits, int n, tsr_err *e);

/* A debug read of the device's memories (READ_MEM): len units (bytes of
 * a PE's int8 array, words of its fp32 array or of the controller's
 * norms: region TSR_REG_*) from off into out (W8: ceil(len / 4) words,
 * four bytes a word, little-endian; else len words). */
int tsr_kcmd_read_mem(tsr_kcmd *k, uint32_t pe, uint32_t region, uint32_t off, uint32_t len,
                      uint32_t *out, tsr_err *e);

/* The kernel's counters, and as text (tsr_kcounters_text). */
int tsr_kcmd_counters(tsr_kcmd *k, tsr_kcounters *kc, tsr_err *e);
int tsr_kcmd_counters_text(tsr_kcmd *k, char *buf, size_t len, tsr_err *e);

/* Wake a decode waiting for the device (async-signal-safe). */
void tsr_kcmd_interrupt(tsr_kcmd *k);

#endif
