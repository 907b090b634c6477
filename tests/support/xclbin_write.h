/*
 * xclbin_write.h - write a metadata-only xclbin for the XRT backend tests:
 * the sections XRT and the backend read (MEM_TOPOLOGY, IP_LAYOUT,
 * CONNECTIVITY, EMBEDDED_METADATA with the kernel XML, BUILD_METADATA,
 * KEYVALUE_METADATA), laid out with the structs of xrt/xclbin.h and no
 * bitstream.  XRT's noop shim accepts such a file as if it were loaded on a
 * card.  Without XRT headers (TSR_HAVE_XRT unset) writing fails.
 */
#ifndef TSR_XCLBIN_WRITE_H
#define TSR_XCLBIN_WRITE_H

/* What to put in the file.  Zeroed fields take the defaults noted. */
typedef struct tsr_xclbin_desc {
    const char *kernel;      /* kernel name; NULL: "tessera_top"                */
    const char *platform;    /* VBNV; NULL: "xilinx_u55c_gen3x16_xdma_3_202210_1" */
    const char *profile;     /* value of the USER key tessera_profile; NULL: no
                                KEYVALUE_METADATA section                      */
    const char *bank[3];     /* memory tags of in, out, cancel; NULL:
                                "HBM[0]", "HBM[1]", "HBM[2]"                   */
    int         omit_arg;    /* 1..4: leave argument omit_arg - 1 (cmd, in,
                                out, cancel) out of the XML; 0: keep all        */
    const char *cmd_type;    /* XML type of cmd; NULL: "uint*"                 */
} tsr_xclbin_desc;

/* Write the xclbin described by d to path.  Returns 0, or -1 (with errno)
 * when the file cannot be written or XRT headers were not available. */
int tsr_xclbin_write(const char *path, const tsr_xclbin_desc *d);

#endif
