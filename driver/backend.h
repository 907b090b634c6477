/*
 * backend.h - the private vtable every device backend implements (after
 * ggml-backend-impl.h), and what the layers above it share.
 *
 * A backend is only a transport.  It opens a device whose kernel serves the
 * command ring (kernels/tsr_kernel.h), moves words between the host and the
 * device's three buffers (ctl: the ring; in: payloads; out: answers), and
 * waits for a word to change.  What a command means, its words, its answer,
 * the resident-image check, progress and cancel live in one place above it,
 * the command layer (kcmd.c); the public API's checks in the dispatch layer
 * (device.c).  One backend is one file: backend_emu.c, backend_xrt.c.
 */
#ifndef TSR_BACKEND_H
#define TSR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"
#include "tsr_kernel.h"

/* Devices a model may be split over (spec cards=). */
#define TSR_DEV_MAX_CARDS TSR_MAX_CARDS   /* tessera.h */

/* The kernel clock a device's cycles are of when nothing says otherwise:
 * the Alveo platforms' default kernel clock (UG1120), the one the HLS
 * config targets (hw/hls/tessera_top/hls_config.cfg, 3.33 ns) and the
 * link configs' [clock] sets.  A part's own (hw/parts.def) wins. */
#define TSR_CLOCK_MHZ_DEFAULT 300

/* Entries in the command ring a backend opens (TSR_CTL_RING_N; at most
 * TSR_RING_MAX): enough for a LOAD in flight while the next one is
 * written, and a decode's cancel beside it. */
#define TSR_RING_ENTRIES 8u

/* What the user asked for in a device spec ("emu:part=u55c,pes=16,threads=2"). */
typedef struct tsr_devspec {
    char backend[16];   /* "emu", "xrt"                                 */
    int  index;         /* device index for xrt, 0 by default           */
    char part[32];      /* "" (backend default), "u55c", "u280", ...    */
    int  pes;           /* 0: backend default                           */
    int  cols;          /* mesh columns; 0: 1                           */
    int  kv_split;      /* PEs per KV head; 0: the profile's default    */
    int  batch;         /* sequences a decode step takes, 1..8; 0: the
                           device's limit (a lower one: to compare); a
                           split: a stage pass's, 0: 1                 */
    int  threads;       /* 0: cores available                           */
    int  no_simd;       /* emu: 1 = portable loops only ("simd=0")      */
    int  simd_avx2;     /* emu: 1 = an AVX2-only CPU's paths ("simd=avx2") */
    char xclbin[256];   /* xrt only; "" for the default in bitstreams/  */
    int  cards;         /* devices the model is split over in pipeline
                           stages, each its own kernel instance ("cards=N",
                           or the count of stages=); 0 or 1: one         */
    int  stage_end[TSR_DEV_MAX_CARDS]; /* "stages=0-3/4-7": stage k's
                           layers end before stage_end[k] (the first
                           starts at 0); all 0: the split plan proposes */
} tsr_devspec;

/* Parse "emu", "emu:pes=16,part=u55c", "xrt:0", "xrt:0,xclbin=F".
 * Errors: TSR_ERR_ARG naming the bad key or value. */
int tsr_devspec_parse(const char *spec, tsr_devspec *out, tsr_err *e);

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

/* The counters block from the words READ_COUNTERS answers (n words, (low,
 * high) pairs in field order); fields past n stay 0. */
void tsr_kcounters_from_words(const uint32_t *w, uint32_t n, tsr_kcounters *kc);

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

/* How to place a model on the device. */
typedef struct tsr_load_opts {
    int weights_f32;    /* 1: F32 validation mode; 0: quantized       */
    int weights;        /* quantized mode: TSR_WEIGHTS_FILE (the file's
                           own Q8_0 / Q4_0, Q8_0 for the rest),
                           TSR_WEIGHTS_Q8, TSR_WEIGHTS_Q4             */
    int group_size;     /* group size; 0: the file's (32 for fp32)    */
    int kv;             /* KV cache precision, TSR_KV_*               */
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

/* Called from a decode run as sequence k's token ids appear in the output
 * buffer (k: its index in the run); return non-zero to stop that sequence. */
typedef int (*tsr_token_fn)(int k, int token, void *user);

/* The device buffers: the three every backend has (ctl, in, out: the
 * kernel's m_axi ports), then a pipeline stage's link ports (link_in,
 * link_out: the kernel's AXI4-Stream ports, TSR_LINK_WORDS fp32 each; the
 * emulator's are host buffers the command layer fills and drains; a
 * backend without them says 0 words). */
enum { TSR_BUF_CTL = 0, TSR_BUF_IN, TSR_BUF_OUT, TSR_BUF_COUNT,
       TSR_BUF_LINK_IN = TSR_BUF_COUNT, TSR_BUF_LINK_OUT, TSR_BUF_ALL };

/* What a backend says of its device when it opens it. */
typedef struct tsr_devinfo {
    char         profile[32];  /* the kernel profile's name                */
    tsr_kprofile prof;         /* its figures                              */
    int          pes;          /* PEs the mesh uses (spec pes=, or the profile's) */
    uint64_t     cap_bytes;    /* on-chip capacity cap (emu part=), 0: none */
    const char  *cap_name;     /* the part the cap comes from              */
    int          clock_mhz;    /* for projections                          */
    uint32_t     ring_n;       /* command ring entries, 1..TSR_RING_MAX    */
    uint32_t     words[TSR_BUF_ALL]; /* buffer sizes, 32-bit words (0: none) */
} tsr_devinfo;

typedef struct tsr_backend tsr_backend; /* a backend instance (one device) */

typedef struct tsr_backend_iface {
    const char *name;
    /* Open the device described by spec, allocate its buffers and fill
     * info; the kernel does not run yet.  Errors: TSR_ERR_NODEV,
     * TSR_ERR_ARG, TSR_ERR_UNSUPPORTED, TSR_ERR_NOMEM, TSR_ERR_DEVICE. */
    int  (*open)(const tsr_devspec *spec, tsr_backend **out, tsr_devinfo *info, tsr_err *e);
    /* Start the kernel (it reads ctl's header, which is written by then). */
    int  (*start)(tsr_backend *b, tsr_err *e);
    /* Release everything (the kernel has left its loop, or never started);
     * NULL is handled by the caller. */
    void (*close)(tsr_backend *b);
    /* Copy `words` 32-bit words between host memory and buffer buf at word
     * offset off. */
    int  (*write)(tsr_backend *b, int buf, uint32_t off, const void *src, uint32_t words,
                  tsr_err *e);
    int  (*read)(tsr_backend *b, int buf, uint32_t off, void *dst, uint32_t words, tsr_err *e);
    /* Write one word after every earlier write has landed (a ring entry's
     * sequence number, the cancel word), and wake the device if it sleeps. */
    int  (*publish)(tsr_backend *b, int buf, uint32_t off, uint32_t v, tsr_err *e);
    /* Wait until the word at (buf, off) differs from old, or timeout_us
     * microseconds, or interrupt(); *now gets its value.  May return early. */
    int  (*wait)(tsr_backend *b, int buf, uint32_t off, uint32_t old, uint32_t timeout_us,
                 uint32_t *now, tsr_err *e);
    /* Called by tsr_seq_cancel() right after it sets its flag, from any
     * thread or a signal handler, so only async-signal-safe work: make a
     * wait() return now.  optional */
    void (*interrupt)(tsr_backend *b);
    /* After CONFIGURE of kc: make the memory the weights will occupy ready
     * (emu: fault its pages in, on a thread beside the stream).  optional */
    void (*prepare)(tsr_backend *b, const tsr_kconfig *kc);
} tsr_backend_iface;

extern const tsr_backend_iface tsr_backend_emu;
/* A device on another MPI rank (backend_mpi.c; a build with MPI=1): a
 * spec's index is the rank, which serves it with tsr_mpi_rank_serve. */
extern const tsr_backend_iface tsr_backend_mpi;

/* The MPI world's size when MPI runs (a build with MPI=1 under mpirun),
 * else 1. */
int tsr_mpi_ranks(void);

/* XRT backend (backend_xrt.c): always compiled; without XRT headers its
 * open() says tessera was built without XRT, and without the XRT libraries
 * linked into the program it says so too. */
#define TSR_WITH_XRT 1
extern const tsr_backend_iface tsr_backend_xrt;

#endif
