/*
 * backend.h - the private vtable every device backend implements (after
 * ggml-backend-impl.h).  The dispatch layer in device.c checks handles,
 * bounds and state before calling a hook, so backends never repeat those
 * checks.  One backend is one file: backend_emu.c, backend_xrt.c.
 *
 * A backend speaks the kernel command interface (kernels/tsr_kernel.h): it
 * moves the command words, the weight image and token ids across the host
 * link and counts every byte it moves in tsr_link_counters.
 */
#ifndef TSR_BACKEND_H
#define TSR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"

/* What the user asked for in a device spec ("emu:part=u55c,pes=16,threads=2"). */
typedef struct tsr_devspec {
    char backend[16];   /* "emu", "xrt"                                 */
    int  index;         /* device index for xrt, 0 by default           */
    char part[32];      /* "" (backend default), "u55c", "u280", ...    */
    int  pes;           /* 0: backend default                           */
    int  threads;       /* 0: cores available                           */
    int  no_simd;       /* emu: 1 = portable loops only ("simd=0")      */
    char xclbin[256];   /* xrt only; "" for the default in bitstreams/  */
} tsr_devspec;

/* Map kernel status k (TSR_K_*, not TSR_K_OK) of command `what` to a driver
 * error: RANGE, CAPACITY, UNSUPPORTED (shape), STATE, ARG, else DEVICE, with
 * "<backend>: <what>: kernel status k (name)" in e.  Returns the code. */
int tsr_kstatus_err(int k, const char *backend, const char *what, tsr_err *e);

struct tsr_kcounters;
struct tsr_kconfig;
/* The kernel's counters block kc (READ_COUNTERS) as "name value" lines into
 * buf (NUL-terminated, truncated to len): runs per op, MACs, fabric bytes,
 * the per-PE SRAM bytes of the first min(n_pes, max_pes) PEs (the card's
 * profile may hold fewer than the library's), and, when cfg is not NULL,
 * the cycle model's estimate for the last forward pass at clock_mhz
 * (driver/plan.h).  Returns the length needed, like snprintf. */
size_t tsr_kcounters_text(const struct tsr_kcounters *kc, uint32_t max_pes, const char *profile,
                          const struct tsr_kconfig *cfg, int clock_mhz, char *buf, size_t len);

/* Parse "emu", "emu:pes=16,part=u55c", "xrt:0", "xrt:0,xclbin=F".
 * Errors: TSR_ERR_ARG naming the bad key or value. */
int tsr_devspec_parse(const char *spec, tsr_devspec *out, tsr_err *e);

/* Phases of host-link traffic. */
enum { TSR_PHASE_LOAD = 0, TSR_PHASE_PREFILL, TSR_PHASE_DECODE, TSR_PHASE_DEBUG,
       TSR_PHASE_COUNT };

/* Bytes that crossed the host link, per phase, and kernel runs. */
typedef struct tsr_link_counters {
    uint64_t h2d[TSR_PHASE_COUNT];     /* host -> device, bytes */
    uint64_t d2h[TSR_PHASE_COUNT];     /* device -> host, bytes */
    uint64_t invocations[TSR_PHASE_COUNT]; /* kernel runs        */
} tsr_link_counters;

/* How to place a model on the device. */
typedef struct tsr_load_opts {
    int weights_f32;    /* 1: F32 validation mode; 0: Q8_0            */
    int group_size;     /* Q8_0 group size; 0: default (32)           */
    int seq_len;        /* context per sequence; 0: model's seq_len   */
    int n_slots;        /* sequence slots (KV regions); 0: 1          */
    void (*progress)(uint64_t sent, uint64_t total, void *user); /* optional */
    void *progress_user;
} tsr_load_opts;

/* Sampler settings for one decode run (on the device). */
typedef struct tsr_sampler {
    float    temperature;  /* 0: greedy                                 */
    float    top_p;        /* in (0,1]: nucleus sampling; >= 1: off     */
    uint64_t seed;         /* xorshift seed, used when reseed != 0      */
    int      reseed;       /* 1: restart the slot's RNG from seed       */
    int      ignore_stop;  /* 1: do not stop at BOS/EOS (benchmarks)    */
} tsr_sampler;

/* Called from the decode run as token ids appear in the output buffer;
 * return non-zero to ask for cancellation. */
typedef int (*tsr_token_fn)(int token, void *user);

typedef struct tsr_backend tsr_backend; /* a backend instance (one device) */

typedef struct tsr_backend_iface {
    const char *name;
    /* Open the device described by spec.  Errors: TSR_ERR_NODEV, TSR_ERR_ARG. */
    int  (*open)(const tsr_devspec *spec, tsr_backend **out, tsr_err *e);
    /* Release everything; NULL is handled by the dispatch layer. */
    void (*close)(tsr_backend *b);
    /* On-chip bytes this placement needs and the device has, without
     * touching the device.  Returns TSR_OK or TSR_ERR_CAPACITY /
     * TSR_ERR_UNSUPPORTED with the figures in e->msg. */
    int  (*fit)(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o,
                uint64_t *need_bytes, uint64_t *have_bytes, tsr_err *e);
    /* Configure and stream the weight image (once).  Refuses what does not
     * fit before streaming any weight. */
    int  (*load)(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o,
                 tsr_err *e);
    /* Slot state: reset to empty, or rewind to pos with `pending` as the
     * next token to feed (pending < 0: none). */
    int  (*reset)(tsr_backend *b, int slot, tsr_err *e);
    int  (*truncate)(tsr_backend *b, int slot, int pos, int pending, tsr_err *e);
    /* Feed tokens into the slot's KV cache (the slot's pending token first);
     * the last token becomes pending. */
    int  (*prefill)(tsr_backend *b, int slot, const int *tokens, int n,
                    tsr_err *e);
    /* Decode up to n tokens from the pending token; out[] gets the ids,
     * *n_out the count.  on_token (optional) sees each id as it appears;
     * cancel (optional) is polled with an atomic load (tsr_seq_cancel()
     * stores it from any thread): non-zero stops within one token. */
    int  (*decode)(tsr_backend *b, int slot, int n, const tsr_sampler *s,
                   int *out, int *n_out, tsr_token_fn on_token, void *user,
                   volatile int *cancel, tsr_err *e);
    /* Logits of the last forward pass (vocab floats).  optional */
    int  (*read_logits)(tsr_backend *b, float *logits, int n, tsr_err *e);
    /* Host-link counters (always) and kernel counters text (optional). */
    void (*link_counters)(tsr_backend *b, tsr_link_counters *c);
    int  (*kernel_counters)(tsr_backend *b, void *buf, size_t len, tsr_err *e); /* optional */
    /* Called by tsr_seq_cancel() right after it sets the cancel flag, from
     * any thread or a signal handler, so only async-signal-safe work: wake a
     * decode that is waiting for the device, so that it forwards the cancel
     * at once instead of at its next poll.  optional */
    void (*interrupt)(tsr_backend *b);
} tsr_backend_iface;

extern const tsr_backend_iface tsr_backend_emu;

/* XRT backend (backend_xrt.c): always compiled; without XRT headers its
 * open() says tessera was built without XRT, and without the XRT libraries
 * linked into the program it says so too. */
#define TSR_WITH_XRT 1
extern const tsr_backend_iface tsr_backend_xrt;

#endif
