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
 *
 * A model split over several devices in pipeline stages (spec cards= or
 * stages=) is one tsr_kcmd over `cards` stage tsr_kcmds, each its own
 * device (backend instance, kernel, PE slabs, threads).  The protocol is
 * here too: every call above goes to each stage as the stage needs it;
 * per token a FORWARD pass runs on each stage in turn, the residual
 * vector moved from one stage's link-out to the next one's link-in (the
 * backend only moves the bytes), the sampled id back to stage 0 as the
 * next token.  The host keeps each slot's pending token, as one device's
 * kernel does.
 */
#ifndef TSR_KCMD_H
#define TSR_KCMD_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "sampler.h"
#include "weight_image.h"

/* Phases of host-link traffic. */
enum { TSR_PHASE_LOAD = 0, TSR_PHASE_PREFILL, TSR_PHASE_DECODE, TSR_PHASE_DEBUG,
       TSR_PHASE_COUNT };

/* Bytes that crossed the host link, per phase, and kernel commands. */
typedef struct tsr_link_counters {
    uint64_t h2d[TSR_PHASE_COUNT];     /* host -> device, bytes */
    uint64_t d2h[TSR_PHASE_COUNT];     /* device -> host, bytes */
    uint64_t invocations[TSR_PHASE_COUNT]; /* commands           */
    uint64_t hop[TSR_PHASE_COUNT];     /* bytes between pipeline stages,
                                          over their card links (a model
                                          split over devices), all hops */
    uint64_t hops[TSR_PHASE_COUNT];    /* passes moved over a link       */
} tsr_link_counters;

typedef struct tsr_kcmd {
    const tsr_backend_iface *be;
    tsr_backend             *b;
    tsr_devinfo              info;      /* what the backend said of the device */
    tsr_mesh_opts            mesh;      /* the spec's PEs, columns, KV split  */
    int                      batch;     /* the spec's batch= (0: none)        */
    int                      started;   /* the kernel serves the ring         */
    uint32_t                 seq;       /* the last command submitted          */
    uint32_t                 done;      /* the last command answered           */
    uint32_t                 resp_cycles; /* its response's cycles (TSR_RESP_CYCLES) */
    uint32_t                 half_seq[2]; /* the LOAD that last used each half of `in` */
    tsr_link_counters        link;
    int                      loaded;    /* an image is resident               */
    uint64_t                 image_hash;
    tsr_kconfig              cfg;       /* its configuration                  */
    uint32_t                 slot_cancel; /* bit s: slot s's cancel word was set
                                             and not cleared yet            */
    /* a model split over devices (cards > 1): the stages, each a tsr_kcmd
     * of one device; b is stage 0's, link the stages' sums plus the hops */
    int                      cards;     /* 0 or 1: one device               */
    struct tsr_kcmd         *stage;     /* (cards,), owned                  */
    int                      stage_end[TSR_DEV_MAX_CARDS]; /* the spec's split, 0: plan's */
    uint32_t                 bounds[TSR_DEV_MAX_CARDS + 1]; /* the split loaded: stage
                                             k holds layers [bounds[k], bounds[k+1]) */
    int32_t                  pending[TSR_MAX_SLOTS]; /* per slot: the next token
                                             to feed, -1 none               */
    uint32_t                 pos[TSR_MAX_SLOTS]; /* per slot: its next position
                                             (the stages' link headers)     */
    float                   *hop_buf;   /* (TSR_LINK_WORDS,) a pass on a link */
    float                   *seq_hop;   /* (TSR_KDEC_MAX, dim) a decoding
                                             sequence's vector between stages */
    /* the device clocks of a split: each card's own time in its cycles,
     * the kernel's accounting of each pass it ran (its link-in hop
     * included), a pass starting once its input has arrived and the card
     * is free; a call of the host starts every clock at the latest */
    uint64_t                 clk_free[TSR_DEV_MAX_CARDS];  /* card k free at  */
    uint64_t                 clk_busy[TSR_DEV_MAX_CARDS];  /* cycles it ran   */
    uint64_t                 clk_passes[TSR_DEV_MAX_CARDS];
    uint64_t                 clk_ready[TSR_MAX_SLOTS]; /* a slot's next token
                                             back at card 0 at             */
    uint64_t                 dev_cycles[TSR_PHASE_COUNT]; /* the calls' device
                                             time, per phase                */
    uint64_t                 dev_tokens[TSR_PHASE_COUNT]; /* tokens fed (prefill)
                                             and generated (decode)         */
} tsr_kcmd;

/* c as CONFIGURE's payload (kernels/tsr_kernel.h): TSR_KCONFIG_INTS
 * integer words in the kernel's order, then rope_theta and norm_eps as fp32
 * bits, TSR_KCONFIG_WORDS in all.  The one encoding: the command layer, the
 * csim image writer and the tests take it from here. */
void tsr_kcmd_config_words(const tsr_kconfig *c, uint32_t w[TSR_KCONFIG_WORDS]);

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

/* Fit, CONFIGURE and stream the weight image once, built PE by PE as it
 * goes (tsr_wstream: one PE's arrays on the host at a time); nothing
 * crosses the link when the same image (content hash) is resident, which
 * takes a pass that only hashes when some image is.  o->progress sees 0 as
 * streaming starts and every chunk after, ending at the total.  m must
 * keep its weights until the call returns. */
int tsr_kcmd_load(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e);

/* Slot state: empty, or rewound to pos with `pending` next (-1: none). */
int tsr_kcmd_reset(tsr_kcmd *k, int slot, tsr_err *e);
int tsr_kcmd_truncate(tsr_kcmd *k, int slot, int pos, int pending, tsr_err *e);

/* Feed tokens (n >= 1) into the slot's KV cache, its pending token first;
 * the last token becomes pending. */
int tsr_kcmd_prefill(tsr_kcmd *k, int slot, const int *tokens, int n, tsr_err *e);

/* One sequence of a decode run (tsr_kcmd_decode). */
typedef struct tsr_kdec {
    int          slot;     /* its KV slot (distinct within a run)           */
    int          n;        /* tokens to generate, >= 1, at most what seq_len
                              leaves                                        */
    tsr_sampler  smp;      /* its sampler; reseed applies to its first step */
    int         *out;      /* (n,) the ids, as they appear                  */
    int         *cancel;   /* optional, read atomically: non-zero stops it
                              within a token                                */
    int          got;      /* set: ids in out                               */
} tsr_kdec;

/* Sequences one decode run takes: the ring's slot cancel words. */
#define TSR_KDEC_MAX 8

/* Tokens a sequence takes in one command while others wait their turn
 * (more sequences going than the device's batch limit): one a pass. */
#define TSR_KDEC_TURN 1u

/* The sequences one command steps together: the device's batch limit,
 * min(its profile's slots, block), at least 1, or the spec's batch= when
 * that is lower. */
int tsr_kcmd_batch_max(const tsr_kcmd *k);

/* Decode the m sequences q (1..TSR_KDEC_MAX) from their pending tokens,
 * each up to its n, stopping at the configured BOS/EOS (unless smp.ignore_stop), when
 * on_token returns non-zero for it, or on its cancel flag; the others go
 * on.  Up to tsr_kcmd_batch_max() sequences step together, one pass over
 * the weights a step (DECODE_BATCH; a run of one is a DECODE).  When more
 * are going than that, they take turns: each command steps the next
 * batch of them in cyclic order (from the one after the last stepped),
 * TSR_KDEC_TURN tokens each, so every sequence has its first token after
 * ceil(going / batch) passes; a sequence whose n exceeds the output
 * buffer's share waits for a later command.  on_token (optional) sees each id as it
 * appears, with the sequence's index in q.  A stop is written to the
 * device's cancel word (one sequence) or its slot's (several), cleared
 * again when the command has answered and before any command that uses
 * the slot.  Errors: the backend's, the kernel's status. */
int tsr_kcmd_decode(tsr_kcmd *k, tsr_kdec *q, int m, tsr_token_fn on_token, void *user,
                    tsr_err *e);

/* Logits of the last forward pass: n floats (the vocab), if that pass's
 * first item was slot's at its last position; TSR_ERR_STATE otherwise. */
int tsr_kcmd_read_logits(tsr_kcmd *k, int slot, float *logits, int n, tsr_err *e);

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
