/*
 * tessera.h - the public C API of libtessera.
 *
 * tessera decodes LLM tokens on a device (an FPGA, or the emulator that runs
 * the same kernel sources on a CPU) that holds the whole model in on-chip
 * SRAM, tiled across a mesh of processing elements (PEs).
 *
 * Conventions (after SQLite's C API):
 *   - Handles are opaque.  Destroying NULL is a no-op.
 *   - Every call that can fail returns an int status (TSR_OK == 0);
 *     tsr_strerror() names a status, and tsr_*_errmsg() on a handle gives the
 *     detail of the last failure on that handle.
 *   - The library never prints and never exits; it logs only through the
 *     optional callback set with tsr_set_log().
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */

#define TSR_VERSION_MAJOR 0
#define TSR_VERSION_MINOR 1
#define TSR_VERSION_PATCH 0
#define TSR_VERSION_STRING "0.1.0"
/* One integer, e.g. 0.1.0 -> 100, for compile-time comparisons. */
#define TSR_VERSION_NUMBER (TSR_VERSION_MAJOR * 10000 + TSR_VERSION_MINOR * 100 + TSR_VERSION_PATCH)

/* The library's version string, e.g. "0.1.0"; compare with TSR_VERSION_STRING
 * to check that the header matches the library.  Thread-safe. */
const char *tsr_version(void);

/* ------------------------------------------------------------------------ */
/* Status codes: one X-macro list makes both the enum and tsr_strerror().   */

#define TSR_STATUS_LIST(X)                                                   \
    X(TSR_OK,              0, "ok")                                          \
    X(TSR_ERR_ARG,         1, "invalid argument")                            \
    X(TSR_ERR_NOMEM,       2, "out of memory")                               \
    X(TSR_ERR_IO,          3, "cannot open or read file")                    \
    X(TSR_ERR_FORMAT,      4, "malformed file")                              \
    X(TSR_ERR_UNSUPPORTED, 5, "unsupported format or feature")               \
    X(TSR_ERR_CAPACITY,    6, "does not fit in on-chip memory")              \
    X(TSR_ERR_RANGE,       7, "position or length out of range")             \
    X(TSR_ERR_NODEV,       8, "no device found")                             \
    X(TSR_ERR_DEVICE,      9, "device error")                                \
    X(TSR_ERR_STATE,      10, "call not valid in this state")                \
    X(TSR_ERR_MISMATCH,   11, "handles belong to different devices or models") \
    X(TSR_ERR_NOSLOT,     12, "no free sequence slot")                       \
    X(TSR_ERR_CANCELLED,  13, "cancelled")

#define TSR_STATUS_ENUM_(name, value, text) name = value,
typedef enum { TSR_STATUS_LIST(TSR_STATUS_ENUM_) } tsr_status;
#undef TSR_STATUS_ENUM_

/* A static English string for a status code ("unknown status" for others).
 * Thread-safe. */
const char *tsr_strerror(int status);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_H */
