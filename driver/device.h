/*
 * device.h - the structs behind the public handles (tsr_device, tsr_model,
 * tsr_seq), private to the driver.
 */
#ifndef TSR_DEVICE_H
#define TSR_DEVICE_H

#include <stdint.h>

#include "backend.h"
#include "kcmd.h"
#include "model.h"
#include "tokenizer.h"

#define TSR_MAX_SEQ_SLOTS  8           /* sequence slots a device tracks  */
#define TSR_DEFAULT_GROUP  32          /* Q8_0 group size, elements       */
#define TSR_DEFAULT_SEED   0x9e3779b97f4a7c15ull

struct tsr_model {
    tsr_device     *dev;       /* NULL once the device is closed         */
    tsr_checkpoint *ck;        /* the file, mmap()ed                     */
    tsr_tokenizer  *tok;
    tsr_load_opts   lo;        /* how it was placed                      */
    int             seq_len;   /* context per sequence, tokens           */
    int             n_slots;   /* sequence slots on the device           */
    tsr_model      *next;      /* device's list of model handles         */
};

typedef struct seq_counters {
    uint64_t prefill_tokens, decode_tokens;
    uint64_t prefill_h2d, prefill_d2h, decode_h2d, decode_d2h, invocations;
    double   ttft_ms, decode_tok_s, prefill_seconds;
} seq_counters;

struct tsr_seq {
    tsr_model   *model;
    int          slot;         /* KV slot on the device; -1 when lost    */
    int         *hist;         /* (cap,) token history, BOS first        */
    int          n_hist;       /* tokens in hist                         */
    int          cap;          /* seq_len + 1: the newest is never fed   */
    int          n_kv;         /* tokens whose K/V are on the device     */
    volatile int cancel;       /* set by tsr_seq_cancel(), any thread    */
    int          cancelled;    /* the last generate was cancelled        */
    int          seeded;       /* the device RNG has been seeded         */
    uint64_t     seed;
    seq_counters st;
};

struct tsr_device {
    tsr_err                  err;      /* last failure's detail          */
    tsr_devspec              spec;
    const tsr_backend_iface *be;
    tsr_kcmd                 k;        /* the kernel protocol over be;
                                          k.b is NULL when open failed   */
    tsr_log_fn               log;
    void                    *log_user;
    tsr_model               *models;   /* handles loaded on this device  */
    tsr_model               *resident; /* whose weights are on the device */
    tsr_seq                 *slots[TSR_MAX_SEQ_SLOTS];
    uint64_t                 loads;    /* weight images streamed         */
};

/* Log one line through dev's hook (nothing when none is set). */
void tsr_log(tsr_device *dev, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
