/*
 * xclbin_meta.h - what the XRT backend reads from an xclbin before XRT
 * touches it: the platform, the kernel's arguments (EMBEDDED_METADATA
 * XML), the memory bank of each argument (CONNECTIVITY -> MEM_TOPOLOGY) and
 * the kernel profile it was built for (KEYVALUE_METADATA, USER key
 * tessera_profile, the line hw/profile_kv.c prints).
 *
 * Format: xrt/xclbin.h (XRT 2.13): struct axlf, magic "xclbin2", section
 * headers pointing at section bytes; the KEYVALUE_METADATA section is the
 * JSON xclbinutil writes: {"key_values":[{"key":K,"value":V},...]}.  Every
 * offset and size is checked against the file length before it is used, so
 * an empty, truncated or foreign file is refused with a message (XRT's own
 * reader crashes on an empty file).  Plain C with its own offsets: no XRT
 * headers needed.
 */
#ifndef TSR_XCLBIN_META_H
#define TSR_XCLBIN_META_H

#include <stdint.h>

#include "error.h"
#include "tsr_kernel.h"

#define TSR_XMETA_MAX_ARGS 16

/* One kernel argument from the XML. */
typedef struct tsr_xarg {
    char     name[32];
    int      id;                /* argument index                              */
    int      address_qualifier; /* 0 scalar (s_axilite), 1 global (m_axi), 4 stream */
    uint32_t size;              /* bytes in the register map                   */
    uint32_t offset;            /* register map offset                         */
    char     type[32];          /* host type string, e.g. "uint*", "void*"     */
    int      mem_index;         /* MEM_TOPOLOGY index from CONNECTIVITY, -1 none */
    char     bank[17];          /* that bank's tag ("HBM[0]", "DDR[1]"), "" none */
} tsr_xarg;

/* A kernel profile (kernels/profiles/profile_X.h), as parsed. */
typedef struct tsr_xprofile {
    char         name[32];
    tsr_kprofile k;             /* its figures (kernels/tsr_kernel.h)          */
} tsr_xprofile;

typedef struct tsr_xmeta {
    char         platform[65];  /* header VBNV                                 */
    uint8_t      uuid[16];
    char         kernels[256];  /* names of every kernel in the XML, ", "-joined */
    int          has_kernel;    /* the kernel asked for is present             */
    tsr_xarg     args[TSR_XMETA_MAX_ARGS];
    int          n_args;
    int          has_profile;   /* KEYVALUE_METADATA had tessera_profile       */
    char         profile_text[512];
    tsr_xprofile profile;
} tsr_xmeta;

/* Read the xclbin at path and fill m for kernel `kernel`.  A missing kernel
 * or profile key is not an error here (has_kernel / has_profile say so).
 * Errors: TSR_ERR_IO (cannot read), TSR_ERR_FORMAT (empty, not an xclbin,
 * truncated, a section out of bounds, no EMBEDDED_METADATA, malformed
 * tessera_profile value), each naming path. */
int tsr_xmeta_read(const char *path, const char *kernel, tsr_xmeta *m, tsr_err *e);

/* Parse a tessera_profile value ("name=...,pes=16,...") into p.  Every key
 * hw/profile_kv.c prints is required (all but with_f32 non-zero).  Errors:
 * TSR_ERR_FORMAT naming the missing or bad key. */
int tsr_xprofile_parse(const char *text, tsr_xprofile *p, tsr_err *e);

/* The argument named name, or NULL. */
const tsr_xarg *tsr_xmeta_arg(const tsr_xmeta *m, const char *name);

#endif
