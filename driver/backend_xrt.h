/*
 * backend_xrt.h - internals of the XRT backend that tests look at: what it
 * found in the xclbin, and a trace hook that sees every kernel run and
 * every buffer sync.  Not part of the public API.
 */
#ifndef TSR_BACKEND_XRT_H
#define TSR_BACKEND_XRT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "tsr_kernel.h"
#include "xclbin_meta.h"

/* The kernel's m_axi arguments, in argument order after cmd (0). */
enum { TSR_XRT_ARG_CMD = 0, TSR_XRT_ARG_IN, TSR_XRT_ARG_OUT, TSR_XRT_ARG_CANCEL,
       TSR_XRT_NARGS };

/* Sync directions as the trace reports them. */
enum { TSR_XRT_H2D = 0, TSR_XRT_D2H = 1 };

/* What an open xrt backend is using. */
typedef struct tsr_xrt_info {
    char         xclbin[512];             /* path loaded                      */
    char         platform[65];            /* the xclbin's platform (VBNV)     */
    tsr_xprofile profile;                 /* the profile it was built for     */
    int          group[TSR_XRT_NARGS];    /* xrtKernelArgGroupId; cmd: -1     */
    char         bank[TSR_XRT_NARGS][17]; /* the bank tag the xclbin names    */
    size_t       bo_bytes[TSR_XRT_NARGS]; /* buffer sizes; cmd: 0             */
} tsr_xrt_info;

/* Fill *info for an open xrt backend b.  Returns TSR_OK, or TSR_ERR_ARG
 * when b is not an xrt backend (or XRT was not built in). */
int tsr_xrt_info_get(tsr_backend *b, tsr_xrt_info *info);

/* Test hook, process-wide; NULL clears it.  Not thread-safe: set it before
 * opening a device and leave it while the device runs.  Each hook is
 * optional. */
typedef struct tsr_xrt_trace {
    /* A kernel run was started with these command words.  out (out_words
     * words, the host map of the out buffer) may be written to play the
     * device: the backend then syncs and reads it as if the kernel had. */
    void (*on_run)(const uint32_t cmd[TSR_CMD_WORDS], uint32_t *out, size_t out_words,
                   void *user);
    /* Returns the kernel status of the run that just finished (TSR_K_*), in
     * place of reading the ap_return register (the noop shim has none). */
    int  (*status)(const uint32_t cmd[TSR_CMD_WORDS], void *user);
    /* A buffer sync: arg TSR_XRT_ARG_*, dir TSR_XRT_H2D/D2H, bytes at
     * offset. */
    void (*on_sync)(int arg, int dir, size_t bytes, size_t offset, void *user);
    void *user;
} tsr_xrt_trace;

void tsr_xrt_set_trace(const tsr_xrt_trace *t);

#endif
