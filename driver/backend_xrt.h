/*
 * backend_xrt.h - internals of the XRT backend that tests look at: what it
 * found in the xclbin, and a hook that sees the kernel start and every
 * buffer sync (so a test can play the card on XRT's noop shim, which moves
 * no data and runs nothing).  Not part of the public API.
 */
#ifndef TSR_BACKEND_XRT_H
#define TSR_BACKEND_XRT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "tsr_kernel.h"
#include "xclbin_meta.h"

/* The kernel's m_axi arguments, in argument order (tessera_top). */
enum { TSR_XRT_ARG_CTL = 0, TSR_XRT_ARG_IN_W, TSR_XRT_ARG_IN_F, TSR_XRT_ARG_OUT_W,
       TSR_XRT_ARG_OUT_F, TSR_XRT_NARGS };

/* Sync directions as the trace reports them. */
enum { TSR_XRT_H2D = 0, TSR_XRT_D2H = 1 };

/* What an open xrt backend is using. */
typedef struct tsr_xrt_info {
    char         xclbin[512];             /* path loaded                      */
    char         platform[65];            /* the xclbin's platform (VBNV)     */
    tsr_xprofile profile;                 /* the profile it was built for     */
    int          group[TSR_XRT_NARGS];    /* xrtKernelArgGroupId              */
    char         bank[TSR_XRT_NARGS][17]; /* the bank tag the xclbin names    */
    size_t       bo_bytes[TSR_BUF_COUNT]; /* buffer sizes: ctl, in, out       */
    int          host_mem[TSR_BUF_COUNT]; /* 1: the buffer is in host memory
                                             (its bank HOST[n]: a host-only
                                             buffer the kernel reaches over
                                             PCIe; no DMA sync)            */
    uint64_t     dma_syncs[TSR_BUF_COUNT]; /* xrtBOSync calls made on each   */
} tsr_xrt_info;

/* Fill *info for an open xrt backend b.  Returns TSR_OK, or TSR_ERR_ARG
 * when b is not an xrt backend (or XRT was not built in). */
int tsr_xrt_info_get(tsr_backend *b, tsr_xrt_info *info);

/* Test hook, process-wide; NULL clears it.  Not thread-safe: set it before
 * opening a device and leave it while the device runs.  Each hook is
 * optional. */
typedef struct tsr_xrt_trace {
    /* The kernel was started: the host maps of ctl, in and out (words[]
     * words each).  On the noop shim they are the "device memory": a test
     * may run tsr_kernel_serve on them to play the card. */
    void (*on_start)(uint32_t *ctl, uint32_t *in, uint32_t *out,
                     const uint32_t words[TSR_BUF_COUNT], void *user);
    /* A buffer sync: buf TSR_BUF_*, dir TSR_XRT_H2D/D2H, bytes at offset. */
    void (*on_sync)(int buf, int dir, size_t bytes, size_t offset, void *user);
    void *user;
} tsr_xrt_trace;

void tsr_xrt_set_trace(const tsr_xrt_trace *t);

#endif
