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
 * (device.c).  One backend is one file: backend_emu.c, backend_xrt.c,
 * backend_mpi.c.  What a backend does not need lives beside it: the
 * device spec (devspec.h), the kernel's status words and counters
 * (kstatus.h), the sampler (sampler.h), the host-link counters (kcmd.h),
 * the placement options (weight_image.h).
 */
#ifndef TSR_BACKEND_H
#define TSR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "devspec.h"
#include "error.h"
#include "tsr_kernel.h"

/* The kernel clock a device's cycles are of when nothing says otherwise:
 * the Alveo platforms' default kernel clock (UG1120), the one the HLS
 * config targets (hw/hls/tessera_top/hls_config.cfg, 3.33 ns) and the
 * link configs' [clock] sets.  A part's own (hw/parts.def) wins. */
#define TSR_CLOCK_MHZ_DEFAULT 300

/* Entries in the command ring a backend opens (TSR_CTL_RING_N; at most
 * TSR_RING_MAX): enough for a LOAD in flight while the next one is
 * written, and a decode's cancel beside it. */
#define TSR_RING_ENTRIES 8u

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
