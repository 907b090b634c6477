/*
 * tsr_arch.h - the datapath every tessera profile shares: lanes, words,
 * interleave distances and the pipeline depths the cycle accounting
 * charges.  A profile (profiles/profile_*.h) sets sizes; this header sets
 * the machine.
 *
 * Every figure below is an assumption about what Vitis HLS schedules for
 * the loop it names, at the 300 MHz the Alveo platforms default to.  None
 * has been through csynth yet (docs/hls-flow.md, "What stays unverified"):
 * the first synthesis report replaces them, and the cycle accounting
 * (tsr_cycles.h) then moves with them, since every charge is computed from
 * these names.
 */
#ifndef TSR_ARCH_H
#define TSR_ARCH_H

/* ---- widths ------------------------------------------------------------ */

/* int8 MAC lanes per PE: one weight word (TSR_LANES bytes) times one input
 * word per cycle.  32 = one Q8_0 group of 32 per cycle. */
#define TSR_LANES       32

/* Rows a PE interleaves in its GEMV pipeline: each row's fp32 accumulator
 * is touched once every TSR_ROW_SLOTS cycles, so the add's latency never
 * stalls the II=1 pipeline (the DEPENDENCE distance of pe_tile_q8).  Also
 * the block the weight layout groups rows in (tsr_layout.h). */
#define TSR_ROW_SLOTS   8

/* The controller's word: fp32 lanes of its vector passes, of the
 * broadcast/gather bus, and the unit (rows) of the mesh-row split, so a
 * gather always moves whole words. */
#define TSR_VEC         16
#define TSR_VEC_PAIRS   8   /* TSR_VEC / 2: RoPE's pairs a word (a literal for pragmas) */

/* fp32 adders of a PE's column-tree step (its partner's partial sums into
 * its own): TSR_TREE_LANES rows a cycle. */
#define TSR_TREE_LANES  4
/* ... one TSR_VEC word of them every TSR_TREE_II cycles (a literal for the
 * pragma: TSR_VEC / TSR_TREE_LANES), so each lane is a constant bank. */
#define TSR_TREE_II     4
/* The embedding row into the controller's vectors: a TSR_LANES chunk is
 * two TSR_VEC words, and a bank has one write port (TSR_LANES / TSR_VEC). */
#define TSR_EMBED_II    2
/* The RMSNorm input pass: 32 lanes read x and write xn in the item's
 * TSR_VEC-bank vectors, two reads and two writes a bank a chunk. */
#define TSR_NORM_II     2
/* SwiGLU on a PE: a row's w1 and w3 partial sums and its result in one
 * TSR_VEC-bank memory at run-time offsets, three accesses a row. */
#define TSR_SWIGLU_II   2
/* fp32 lanes of a PE's attention datapath (positions of K^T per cycle in
 * the scores, head dimensions per cycle in the weighted sum of V). */
#define TSR_ATT_LANES   8

/* Cycles between two dependent fp32 additions, as the scheduler must keep
 * them: a recurrence on one accumulator runs at II = TSR_FADD_LAT, one on
 * TSR_FADD_LAT interleaved accumulators at II = 1.  Vitis HLS fadd
 * (full DSP) needs 4-5 cycles at 300 MHz on UltraScale+; 8 leaves room. */
#define TSR_FADD_LAT    8

/* ---- pipeline depths (cycles from the first input to the last output) -- */

#define TSR_D_GEMV      24  /* URAM read, 32-lane int8 tree, int->fp32, 2 fmul, fadd */
#define TSR_D_VEC        8  /* a controller vector pass (fmul/fadd lanes)           */
#define TSR_D_QUANT     32  /* |x| max tree, fp32 divide, round                    */
#define TSR_D_BUS        4  /* a word across the broadcast/gather bus               */
#define TSR_D_TREE      TSR_FADD_LAT /* one adder-tree level                      */
#define TSR_D_EXP       16  /* expf                                                */
#define TSR_D_DIV       16  /* fp32 divide                                         */
#define TSR_D_SQRT      16  /* fp32 square root                                    */
/* RMSNorm's scale, a chain of four (ops.c, tsr_rms_scale): ss / n, + eps,
 * sqrtf, 1 / that */
#define TSR_D_RSQRT     (TSR_D_DIV + TSR_FADD_LAT + TSR_D_SQRT + TSR_D_DIV)
#define TSR_D_TRIG      40  /* cosf / sinf                                         */
#define TSR_D_CMP        2  /* one compare-select level (max, argmax)              */
#define TSR_D_ATT       16  /* a PE's attention pass (BRAM read, fmul, fadd)       */
#define TSR_D_KVCVT      4  /* a KV element to fp32 as it is read: an IEEE half
                               decoded, an int8 converted                        */
#define TSR_D_F16        8  /* fp32 to IEEE half as it is stored: exponent compare
                               tree, scale, round (kernels/tsr_half.h)           */
#define TSR_D_MUL        4  /* one fp32 multiply (the int8 cache's scales)        */

/* A word crossing from one SLR to the next (a stacked-silicon part's dies,
 * joined by super long lines, UG949 "Super Long Line (SLL) Routes"): a
 * register on each side of the SLL, flop to flop with fan-out 1, as AMD's
 * own SLR-crossing register slices build it (PG373 "Multi SLR
 * Crossing"), so no path spends more than one SLL's delay in a cycle.
 * Written into the C as delay lines and per-SLR register stages (mesh.c,
 * attention.c; TSR_SLRS, tsr_profile.h), and charged per crossing: the
 * broadcast, the QKV latch, the gathers, the head outputs' collect and
 * the argmax tree each take TSR_D_SLR cycles more a crossing on their
 * path.  Whether Vivado places the two registers at the SLL (its Laguna
 * sites) is not shown until a first implementation (docs/hls-flow.md). */
#define TSR_D_SLR        2

/* ---- card-to-card links (pipeline stages) ------------------------------ */

/* A model split over cards in pipeline stages moves the residual vector
 * (dim fp32) from one stage's link-out port to the next stage's link-in
 * port, AXI4-Stream words of 32 bits, one a cycle (TSR_LINK_WORD_II), after
 * a fixed latency TSR_LINK_HOP.  The latency is an assumption, not a
 * measurement: no card link has been built.  1000 cycles is 3.3 us at 300
 * MHz, the order of a 100 Gb/s transceiver's port-to-port latency (Aurora
 * 64B/66B or a QSFP28 Ethernet MAC through a switch-less cable: about 1 us
 * each way through the cores, plus the stream FIFOs and the CDC into the
 * kernel clock), rounded up; tessera plan used the same figure for its
 * --cards projection before the ports existed. */
#define TSR_LINK_HOP     1000
#define TSR_LINK_WORD_II 1
/* Words of the header in front of a pass's vectors on a link: items,
 * slot, first position, dim (fp32 values of exact small integers, so the
 * stream carries one type). */
#define TSR_LINK_HDR     4

/* ---- the host link ----------------------------------------------------- */

/* One 32-bit read of host memory by the kernel (a volatile read of ctl,
 * whose buffer sits in host memory, HOST[0]: docs/hls-flow.md "The
 * command ring"), from the request to the data: a PCIe round trip
 * through the platform's host-memory bridge.  Neugebauer et al.,
 * "Understanding PCIe performance for end host networking" (SIGCOMM
 * 2018, pcie-bench), measure a small DMA read of host memory from an
 * FPGA endpoint at about 0.5 us on the Xeon servers they test, more with
 * the IOMMU on or across NUMA nodes; the XDMA shell's bridge and the
 * kernel's m_axi adapter add their own.  1 us, 300 cycles at 300 MHz:
 * an assumption until a card measures it (hls-flow.md). */
#define TSR_D_HOSTRD    300

/* Command ring entries at most (the ctl buffer's depth, tsr_kernel.h). */
#define TSR_RING_MAX    256

#endif
