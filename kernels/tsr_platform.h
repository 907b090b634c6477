/*
 * tsr_platform.h - the hooks where a platform that runs the kernel sources
 * (the FPGA, or the emulator on a CPU) may differ, and their defaults: the
 * hardware's.  Included by tsr_kernel.h, so by every kernel source and by
 * every host object that sees the kernel's state.
 *
 * The defaults are what Vitis HLS compiles (and C simulation runs): the
 * unrolled PE loop, plain stores to the words the host watches, no state
 * beyond the hardware's, and no fast paths.  A platform overrides a hook
 * by defining its macro before this header is read: the emulator's
 * definitions are emu/tsr_platform_emu.h, which the Makefile puts in front
 * of every host object it compiles (`-include emu/tsr_platform_emu.h`, in
 * INC), so no file of kernels/ names emu/ and the kernel sources read as
 * HLS C.  Each default below sits under #ifndef its name; an override
 * keeps the contract its comment states.
 *
 * A host build that names no platform (no TSR_PLATFORM_NAME) gets the
 * defaults: the state layout of C simulation (TSR_CSIM) and synthesis.
 * Every object that shares a tsr_kstate must see the same platform: all
 * of libtessera and what links it are compiled with INC.
 *
 * Two kinds of hook:
 *  - "fast path" hooks (TSR_FAST_*) are expressions that return nonzero
 *    when the platform did the step itself, and the kernel then skips its
 *    loop; the default is the literal 0, so the hardware keeps only its
 *    loop.  A fast path must leave the same bits in every memory the
 *    kernel's loop would have written (docs/emulator.md).
 *  - the others name a structure (the PE loop, a field list, an attribute)
 *    or a side effect (a no-op by default).
 */
#ifndef TSR_PLATFORM_H
#define TSR_PLATFORM_H

/* ------------------------------------------------------------------------ */
/* The state                                                                  */

/* Fields a platform adds at the end of tsr_kstate (the emulator: its worker
 * pool, SIMD switches and their tables).  Default: none. */
#ifndef TSR_PLATFORM_STATE
#define TSR_PLATFORM_STATE
#endif

/* Fields a platform adds at the end of tsr_pe_job (tsr_ops.h), plain
 * values a PE task may read.  Default: none. */
#ifndef TSR_PLATFORM_JOB
#define TSR_PLATFORM_JOB
#endif

/* An attribute on each PE memory of tsr_kstate (the emulator starts each
 * on a page).  Default: none; synthesis lays the memories out itself
 * (tessera_top partitions them). */
#ifndef TSR_MEM_ALIGN
#define TSR_MEM_ALIGN
#endif

/* 1: the kernel sources define tessera_top, the synthesis top (hardware
 * and C simulation).  A platform that drives tsr_kernel_exec itself sets
 * 0. */
#ifndef TSR_PLATFORM_TOP
#define TSR_PLATFORM_TOP 1
#endif

/* Add v to the 64-bit counter at p (TSR_CHARGE, TSR_COUNT, tsr_cycles.h).
 * Default: a plain add; a platform whose PE tasks run on several threads
 * makes it atomic (any order gives the same sum). */
#ifndef TSR_COUNTER_ADD
#define TSR_COUNTER_ADD(p, v) (*(p) += (v))
#endif

/* ------------------------------------------------------------------------ */
/* Words the other side watches                                               */

/* TSR_PUBLISH(p, v): store v to a word the host or the other side of a link
 * watches (DECODE's token count, a response's sequence number);
 * TSR_OBSERVE(p): load one it writes (the cancel word, the ring's
 * sequence words); TSR_WAIT_WORD(p, old): let the serve loop wait until
 * *p may differ from old (it re-checks).  Default: a volatile m_axi store
 * and load, and polling (no wait). */
#ifndef TSR_PUBLISH
#define TSR_PUBLISH(p, v) (*(p) = (v))
#endif
#ifndef TSR_OBSERVE
#define TSR_OBSERVE(p) (*(p))
#endif
#ifndef TSR_WAIT_WORD
#define TSR_WAIT_WORD(p, old) ((void)0)
#endif

/* ------------------------------------------------------------------------ */
/* The PE loop                                                                */

/* TSR_RUN_PES_WHERE(worst, st, task, job, NPES, n, RECV, k): task(st, p,
 * job, p < n, k) for the PEs p < NPES with RECV(p, k), worst the largest
 * cycle count a task returned (TSR_SERIAL_PES: their sum); tsr_hls.h
 * describes the hardware's structure.  Default: the loop, fully unrolled.
 * A platform may run the configured PEs' tasks in any order or
 * concurrently (tasks touch only their own PE's memories and read a
 * partner's) and must return the same worst. */
#if defined(TSR_SERIAL_PES)
#define TSR_PES_COMBINE(worst, c) ((worst) += (c))
#define TSR_PES_UNROLL
#else
#define TSR_PES_COMBINE(worst, c) ((worst) = (c) > (worst) ? (c) : (worst))
#define TSR_PES_UNROLL _Pragma("HLS UNROLL")
#endif
#ifndef TSR_RUN_PES_WHERE
/* (A braced block, not a do-while(0): it is a loop to the lint.) */
#define TSR_RUN_PES_WHERE(worst, st, task, job, NPES, n, RECV, k)              \
    {                                                                          \
        (worst) = 0;                                                           \
        for (uint32_t p_ = 0; p_ < (NPES); p_++) {                             \
            TSR_PES_UNROLL                                                     \
            if (RECV(p_, k)) {                                                 \
                uint32_t c_ = task((st), p_, (job), p_ < (n), (k));            \
                TSR_PES_COMBINE(worst, c_);                                    \
            }                                                                  \
        }                                                                      \
    }
#endif

/* Before a GEMV's PE tasks: set the platform's job fields
 * (TSR_PLATFORM_JOB) of job (a tsr_pe_job *) for nx items.  Default:
 * nothing. */
#ifndef TSR_PLATFORM_GEMV_JOB
#define TSR_PLATFORM_GEMV_JOB(job, nx) ((void)0)
#endif

/* ------------------------------------------------------------------------ */
/* Broadcasts                                                                 */

/* A broadcast (the GEMV input: xq, xs, xf) writes the copies of PEs [0,
 * TSR_BCAST_PES), and PE p's GEMV reads copy TSR_BCAST_SRC(p).  Default:
 * every PE latches each word off the bus and reads its own copy.  (The
 * emulator writes PE 0's only, which every PE reads: the copies are equal
 * by construction.) */
#ifndef TSR_BCAST_PES
#define TSR_BCAST_PES TSR_PES
#endif
#ifndef TSR_BCAST_SRC
#define TSR_BCAST_SRC(p) (p)
#endif

/* ------------------------------------------------------------------------ */
/* Fast paths of the mesh (mesh.c)                                            */

/* PE p's GEMV tile of job (a const tsr_pe_job *) for run != 0: the row
 * blocks of each half (done, uint32_t[2]) the platform did already; the
 * kernel's tile loops start after them (TSR_TILE_DONE).  Default: none. */
#ifndef TSR_FAST_GEMV_TILE
#define TSR_FAST_GEMV_TILE(st, p, job, run, done) ((void)0)
#endif

/* Inside the tile loops: d, the row blocks a fast path did, or the literal
 * 0 (the default), so in hardware no b0 product is left to a multiplier or
 * to constant propagation across the non-inlined tile steps. */
#ifndef TSR_TILE_DONE
#define TSR_TILE_DONE(d) 0u
#endif

/* SwiGLU of a W13 tile's rows, psum (float *, 2 rows), as pe_swiglu. */
#ifndef TSR_FAST_SWIGLU
#define TSR_FAST_SWIGLU(psum, rows) 0
#endif

/* The Q8 input's pass A of item it (tsr_mesh_input: xn, the word maxima). */
#ifndef TSR_FAST_NORM
#define TSR_FAST_NORM(st, it, n, npad, row, ss) 0
#endif

/* The Q8 input's pass B of item it (quantize_broadcast: xq, xs). */
#ifndef TSR_FAST_QUANTIZE
#define TSR_FAST_QUANTIZE(st, it, npad) 0
#endif

/* Item it's gather of matrix mat (tsr_mesh_gather: its vectors, the
 * sum-of-squares partials, the word maxima and, for QKV, the attention
 * PEs' copies of q | k | v as they read them at position pos). */
#ifndef TSR_FAST_GATHER
#define TSR_FAST_GATHER(st, mat, it, yw, flags, pos) 0
#endif

/* Byte a of PE p's int8 array, a byte of matrix m's tile, where the
 * kernel's layout holds `layout` (the byte as tsr_layout.h places it).
 * Default: that byte; a platform that keeps its tiles in another
 * arrangement reads its own. */
#ifndef TSR_W8_READ
#define TSR_W8_READ(st, p, m, a, layout) (layout)
#endif

/* ------------------------------------------------------------------------ */
/* Fast paths of attention (attention.c)                                      */

/* pe_att_mac's sums in precision kvt (the cache's first row at word basew
 * of kv, kvh or kvq, whichever kvt names). */
#ifndef TSR_FAST_ATT_MAC
#define TSR_FAST_ATT_MAC(kv, kvh, kvq, kvt, basew, stridew, stepw, coef, no, nj, parts, acc) 0
#endif

/* pe_att_scale_max: att (from its first score) and *am, ks the int8
 * cache's K scales or NULL. */
#ifndef TSR_FAST_ATT_SCALE_MAX
#define TSR_FAST_ATT_SCALE_MAX(acc, ks, sqrt_hs, att, nl, am) 0
#endif

/* pe_att_exp's exponentials: a[t] = expf(a[t] - m), t < nl. */
#ifndef TSR_FAST_ATT_EXP
#define TSR_FAST_ATT_EXP(a, nl, m) 0
#endif

/* pe_att_norm: coef, vs the int8 cache's V scales or NULL. */
#ifndef TSR_FAST_ATT_NORM
#define TSR_FAST_ATT_NORM(att, vs, sum, coef, nl) 0
#endif

/* pe_att_store into the f16 cache kvh: the n values at k into column tl
 * of words ka.., those at v into words va.. (all lanes), as halves. */
#ifndef TSR_FAST_F16_STORE
#define TSR_FAST_F16_STORE(kvh, k, v, ka, tl, va, n) 0
#endif

/* ------------------------------------------------------------------------ */
/* The forward pass (forward.c)                                               */

/* A stage's inputs for nx items (norm: RMSNorm with norm weights row, n
 * values), all of them, as fwd_inputs makes them. */
#ifndef TSR_FAST_STAGE_INPUTS
#define TSR_FAST_STAGE_INPUTS(st, nx, n, row, norm) 0
#endif

/* Stage k's outputs (fwd_outputs) for nx items: gathers (matrix mat into
 * word yw, gather flags gf) and, after QKV, attention; the platform may
 * also make stage k + 1's inputs (TSR_FAST_STAGE_INPUTS then finds them
 * made).  nst: the pass's stages. */
#ifndef TSR_FAST_STAGE_OUTPUTS
#define TSR_FAST_STAGE_OUTPUTS(st, items, nx, k, nst, mat, yw, gf) 0
#endif

/* ------------------------------------------------------------------------ */
/* Commands (tsr_kernel.c)                                                    */

/* CONFIGURE: TSR_PLATFORM_UNCONFIGURE(st) as it starts (a failed one
 * leaves the platform's defaults), TSR_PLATFORM_CONFIGURED(st) once the
 * layout is set.  Default: nothing. */
#ifndef TSR_PLATFORM_UNCONFIGURE
#define TSR_PLATFORM_UNCONFIGURE(st) ((void)0)
#endif
#ifndef TSR_PLATFORM_CONFIGURED
#define TSR_PLATFORM_CONFIGURED(st) ((void)0)
#endif

/* LOAD of len bytes at off into PE p's int8 array from the payload in_w:
 * TSR_FAST_LOAD_W8 stores them in the platform's arrangement (nonzero) or
 * leaves the kernel's loop to (0); then TSR_LOADED_W8 lets the platform
 * update what it keeps of them.  Defaults: 0, nothing. */
#ifndef TSR_FAST_LOAD_W8
#define TSR_FAST_LOAD_W8(st, p, off, len, in_w) 0
#endif
#ifndef TSR_LOADED_W8
#define TSR_LOADED_W8(st, p, off, len) ((void)0)
#endif

/* READ_MEM of len bytes at off of PE p's int8 array into out_w (the
 * layout's bytes, four a word). */
#ifndef TSR_FAST_READ_W8
#define TSR_FAST_READ_W8(st, p, off, len, out_w) 0
#endif

#endif
