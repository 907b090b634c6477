/*
 * device.h - the structs behind the public handles (tsr_device, tsr_model,
 * tsr_seq), private to the driver.
 *
 * Lifetimes (tessera.h, "Lifetimes"): a handle's memory lives until its
 * caller closes it.  References count who still points at a struct: a
 * sequence holds one on its model, a model one on its device, and the
 * caller one on each handle until it closes it.  The struct is freed when
 * its last reference goes; closing only releases what the handle owns
 * (the backend, a model's host side) and marks it closed, so that later
 * calls through the handles below it return TSR_ERR_STATE.
 *
 * Threads: every field of a device, its models and its sequences is read
 * and written with dev->mu held, except the ones marked "atomic", which
 * tsr_seq_cancel() (any thread, signal handlers) touches without the lock,
 * and the ones marked "immutable", set before the handle is returned.
 */
#ifndef TSR_DEVICE_H
#define TSR_DEVICE_H

#include <pthread.h>
#include <stdint.h>

#include "backend.h"
#include "kcmd.h"
#include "model.h"
#include "tokenizer.h"

#define TSR_MAX_SEQ_SLOTS  8           /* sequence slots a device tracks  */
#define TSR_DEFAULT_GROUP  32          /* Q8_0 group size, elements       */
#define TSR_DEFAULT_SEED   0x9e3779b97f4a7c15ull

struct tsr_model {
    tsr_device     *dev;       /* immutable; a counted reference          */
    int             refs;      /* the caller's (until tsr_model_close) +
                                  one per sequence handle still alive     */
    int             released;  /* host side freed: model or device closed */
    tsr_checkpoint *ck;        /* the file's header and shapes; its weights
                                  are dropped once on the device; NULL once
                                  released                                */
    tsr_tokenizer  *tok;       /* NULL once released                      */
    tsr_load_opts   lo;        /* how it was placed (progress: NULL)      */
    int             seq_len;   /* context per sequence, tokens            */
    int             n_slots;   /* sequence slots on the device            */
    uint64_t        image_bytes; /* weight image streamed, bytes          */
    tsr_model      *next;      /* device's list of models not released    */
};

typedef struct seq_counters {
    uint64_t prefill_tokens, decode_tokens;
    uint64_t prefill_h2d, prefill_d2h, decode_h2d, decode_d2h, invocations;
    double   ttft_ms, decode_tok_s, prefill_seconds;
} seq_counters;

struct tsr_seq {
    tsr_model   *model;        /* immutable; a counted reference          */
    int          slot;         /* KV slot on the device; -1 when lost     */
    int         *hist;         /* (cap,) token history, BOS first         */
    int          n_hist;       /* tokens in hist                          */
    int          cap;          /* seq_len + 1: the newest is never fed    */
    int          n_kv;         /* tokens whose K/V are on the device      */
    int          cancel;       /* atomic: set by tsr_seq_cancel(), taken
                                  by the generate it stops                */
    int          cancelled;    /* atomic: the last generate was cancelled */
    int          seeded;       /* the device RNG has been seeded          */
    uint64_t     seed;
    seq_counters st;
};

struct tsr_device {
    pthread_mutex_t          mu;       /* held for the length of each call:
                                          one kernel state per device     */
    uint64_t                 id;       /* immutable; unique per open, keys
                                          the threads' error records      */
    int                      refs;     /* the caller's (until
                                          tsr_device_close) + one per
                                          model handle still alive        */
    int                      closed;   /* tsr_device_close() was called   */
    tsr_err                  err;      /* the running call's failure      */
    tsr_devspec              spec;
    const tsr_backend_iface *be;       /* immutable; NULL: no such backend */
    tsr_kcmd                 k;        /* the kernel protocol over be;
                                          k.b is NULL when open failed or closed */
    tsr_backend             *live;     /* atomic: k.b while open, for the
                                          interrupt hook of tsr_seq_cancel */
    int                      cancels;  /* atomic: cancels inside the hook */
    tsr_log_fn               log;
    void                    *log_user;
    tsr_model               *models;   /* models whose host side is held  */
    tsr_model               *resident; /* whose weights are on the device */
    tsr_seq                 *slots[TSR_MAX_SEQ_SLOTS];
    uint64_t                 loads;    /* weight images streamed          */
    uint64_t                 image_bytes; /* bytes of the resident image  */
};

/* Log one line through dev's hook (nothing when none is set).  Called with
 * dev->mu held, as every backend hook is. */
void tsr_log(tsr_device *dev, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
