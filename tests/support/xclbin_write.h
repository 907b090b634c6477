/*
 * xclbin_write.h - write a metadata-only xclbin for the XRT backend tests:
 * the sections XRT and the backend read (MEM_TOPOLOGY, IP_LAYOUT,
 * CONNECTIVITY, EMBEDDED_METADATA with the kernel XML, BUILD_METADATA,
 * KEYVALUE_METADATA), laid out with the structs of xrt/xclbin.h and no
 * bitstream.  XRT's noop shim accepts such a file as if it were loaded on a
 * card.  Without XRT headers (TSR_HAVE_XRT unset) writing fails.
 *
 * The kernel is the persistent tessera_top (kernels/tsr_kernel.h): five
 * m_axi arguments, in this order, each connected to one memory bank.
 */
#ifndef TSR_XCLBIN_WRITE_H
#define TSR_XCLBIN_WRITE_H

/* tessera_top's arguments, in argument order. */
enum { TSR_XW_CTL = 0, TSR_XW_IN_W, TSR_XW_IN_F, TSR_XW_OUT_W, TSR_XW_OUT_F, TSR_XW_NARGS };

/* What to put in the file.  Zeroed fields take the defaults noted. */
typedef struct tsr_xclbin_desc {
    const char *kernel;      /* kernel name; NULL: "tessera_top"                */
    const char *platform;    /* VBNV; NULL: "xilinx_u55c_gen3x16_xdma_3_202210_1" */
    const char *profile;     /* value of the USER key tessera_profile (the line
                                hw/profile_kv prints); NULL: no
                                KEYVALUE_METADATA section                      */
    const char *bank[TSR_XW_NARGS]; /* memory tag per argument; NULL: the
                                U55C link config's (hw/link): in_w, in_f
                                "HBM[0]"; ctl, out_w, out_f "HBM[1]"          */
    int         omit_arg;    /* 1 + TSR_XW_*: leave that argument out of the
                                XML and CONNECTIVITY; 0: keep all              */
    int         scalar_arg;  /* 1 + TSR_XW_*: that argument is an s_axilite
                                scalar (addressQualifier 0, no bank); 0: none  */
    int         unbanked_arg; /* 1 + TSR_XW_*: that argument has no
                                CONNECTIVITY entry; 0: none                    */
    int         swap_in_ids; /* 1: in_w and in_f swap their argument ids       */
} tsr_xclbin_desc;

/* Write the xclbin described by d to path.  Returns 0, or -1 (with errno)
 * when the file cannot be written or XRT headers were not available. */
int tsr_xclbin_write(const char *path, const tsr_xclbin_desc *d);

#endif
