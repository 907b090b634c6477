/*
 * tsr_platform_emu.h - the emulator's definitions of the kernel's platform
 * hooks (kernels/tsr_platform.h).  The Makefile compiles every host object
 * with `-include emu/tsr_platform_emu.h` (INC), so this header is read
 * before any kernel header and its macros replace the hardware's
 * defaults; the kernel sources never include it.
 *
 * Only macros and declarations: the types it names (tsr_kstate,
 * tsr_pe_job, tsr_item) are complete where a macro is expanded, in the
 * kernel sources.  The functions behind the hooks are in emu/platform.c
 * (mesh, attention and command fast paths) and emu/passes.c (a forward
 * pass's items on the worker pool), on top of the runtime of tsr_emu.h.
 */
#ifndef TSR_PLATFORM_EMU_H
#define TSR_PLATFORM_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "tsr_emu.h"

#define TSR_PLATFORM_NAME "emu"

struct tsr_kstate;
struct tsr_pe_job;
struct tsr_item;

/* ---- the state ---------------------------------------------------------- */

/* The emulator's fields of tsr_kstate (after the PE memories). */
#define TSR_PLATFORM_STATE                                                                  \
    struct tsr_emu_pool *pool; /* worker threads over the PEs (tsr_emu.h);                 \
                                  NULL: one thread */                                      \
    uint32_t simd;             /* 1 = SIMD rows */                                         \
    uint32_t emu_tr;           /* Q8_0 tiles' full blocks kept as transposed               \
                                  units (tsr_emu.h), set by CONFIGURE */                   \
    uint32_t emu_inputs_made;  /* a pass's gathers made the next stage's                   \
                                  inputs (passes.c) */                                     \
    /* 128 x the sum of each Q8 entry's int8 weights, in the order of its                  \
     * scales (f32), kept by LOAD: the GEMM rows' correction for their                     \
     * unsigned inputs (tile_simd.c); not kept for tiles in transposed                     \
     * units, whose correction comes from the inputs */                                    \
    int32_t emu_wcorr[TSR_PES][TSR_PE_F32_WORDS];                                          \
    /* a pass's attention, each KV head group's cycles per item and step                   \
     * (its phases and tree levels; passes.c) */                                           \
    uint32_t emu_att_cy[TSR_ATT_PES][TSR_MAX_BLOCK][3u + 5u * TSR_MAX_SPLIT_LEVELS];

/* A GEMV's name for its inputs (tsr_emu_tile_q8t), or 0. */
#define TSR_PLATFORM_JOB uint64_t xkey;

/* Each PE memory on a page (the state is one mmap'd, page-aligned
 * reservation): whole cache lines for the SIMD rows' loads (a 64-byte
 * load across two lines costs two), and page ranges for madvise and NUMA
 * placement (driver/backend_emu.c). */
#define TSR_MEM_ALIGN __attribute__((aligned(4096)))

/* The driver runs tsr_kernel_exec itself (driver/backend_emu.c). */
#define TSR_PLATFORM_TOP 0

/* The worker threads charge too (a pass's items): an atomic add. */
#define TSR_COUNTER_ADD(p, v) ((void)__atomic_fetch_add((p), (v), __ATOMIC_RELAXED))

/* ---- words the other side watches (pool.c) ------------------------------ */

/* A release store that wakes the thread waiting on the word, an acquire
 * load; the serve loop sleeps on a futex, woken by the host's store. */
#define TSR_PUBLISH(p, v)     tsr_emu_publish((uint32_t *)(p), (v))
#define TSR_OBSERVE(p)        tsr_emu_observe((const uint32_t *)(p))
#define TSR_WAIT_WORD(p, old) tsr_emu_wait_change((uint32_t *)(p), (old), 100000u)

/* ---- the PE loop (pes.c) ------------------------------------------------ */

/* The worker pool runs the configured PEs' tasks and returns the same
 * maximum (or sum); tasks of PEs that are not receivers return 0 by their
 * run-time test. */
#define TSR_RUN_PES_WHERE(worst, st, task, job, NPES, n, RECV, k) \
    ((worst) = tsr_emu_run_pes((st), (n), (task), (job), (k)))

/* A GEMV's PE tiles transpose 9 or more items' inputs once a worker, not
 * once a tile. */
#define TSR_PLATFORM_GEMV_JOB(job, nx) ((job)->xkey = (nx) > 8u ? tsr_emu_next_key() : 0u)

/* ---- broadcasts --------------------------------------------------------- */

/* One copy of a broadcast, PE 0's, which every PE's GEMV reads. */
#define TSR_BCAST_PES    1u
#define TSR_BCAST_SRC(p) ((void)(p), 0u)

/* ---- mesh fast paths (platform.c) --------------------------------------- */

#define TSR_FAST_GEMV_TILE(st, p, job, run, done) tsr_emu_gemv_tile((st), (p), (job), (run), (done))
#define TSR_TILE_DONE(d)                          (d)
#define TSR_FAST_SWIGLU(psum, rows)               (tsr_emu_swiglu((psum), (rows)), 1)
#define TSR_FAST_NORM(st, it, n, npad, row, ss)   (tsr_emu_norm((st), (it), (n), (npad), (row), (ss)), 1)
#define TSR_FAST_QUANTIZE(st, it, npad)           tsr_emu_quantize((st), (it), (npad))
#define TSR_FAST_GATHER(st, mat, it, yw, flags, pos) \
    (tsr_emu_gather_latch((st), (mat), (it), (yw), (flags), (pos)), 1)
#define TSR_W8_READ(st, p, m, a, layout) tsr_emu_w8_read((st), (p), (m), (a), (layout))

/* PE p's GEMV of job through the SIMD rows (transposed units, Q4_0, Q8_0,
 * F32 tiles), bit-identical to the tile loops: done[h], the row blocks of
 * half h it did (0 where it has no rows for the tile). */
void tsr_emu_gemv_tile(struct tsr_kstate *st, uint32_t p, const struct tsr_pe_job *job,
                       uint32_t run, uint32_t done[2]);

/* The Q8 input's pass A: xn = rms[row] * (ss * x) for i < n, zeros to the
 * chunk padding, each TSR_VEC word's max |v|, in plain loops the compiler
 * vectorizes: the same fp32 operations. */
void tsr_emu_norm(struct tsr_kstate *st, uint32_t it, uint32_t n, uint32_t npad, uint32_t row,
                  float ss);

/* The Q8 input's pass B for G >= TSR_LANES into PE 0's copy: 1; 0 for a
 * smaller group (the kernel's loop then runs). */
int tsr_emu_quantize(struct tsr_kstate *st, uint32_t it, uint32_t npad);

/* Item it's gather of mat (tsr_emu_gather), then, for QKV, the attention
 * PEs' latches (tsr_emu_latch_qkv at pos). */
void tsr_emu_gather_latch(struct tsr_kstate *st, uint32_t mat, uint32_t it, uint32_t yw,
                          uint32_t flags, uint32_t pos);

/* The gather's values, element by element, in plain loops over each
 * root's run of words: the same fp32 operations on the same operands as
 * the kernel's word loop (RoPE's pairs, the residual add, the
 * sum-of-squares partials in order, each word's max |v|), without the QKV
 * latch. */
void tsr_emu_gather(struct tsr_kstate *st, uint32_t mat, uint32_t it, uint32_t yw, uint32_t flags);

/* Of q | k | v (TSR_CV_QKV) of item it, what each attention PE reads of its
 * copy: its heads' q slices, the k, v of position pos on the PE storing
 * it.  The stand-in for the QKV gather's per-word latches; also for tests
 * that write q | k | v themselves. */
void tsr_emu_latch_qkv(struct tsr_kstate *st, uint32_t it, uint32_t pos);

/* The same for attention PE p alone (a pass's KV head group, passes.c). */
void tsr_emu_latch_pe(struct tsr_kstate *st, uint32_t p, uint32_t it, uint32_t pos);

/* The layout byte a of PE p's int8 array in matrix m's tile: `layout`
 * itself, or where m's tiles are transposed units, the byte kept for it. */
uint32_t tsr_emu_w8_read(const struct tsr_kstate *st, uint32_t p, uint32_t m, uint32_t a,
                         uint32_t layout);

/* ---- attention fast paths (att_rows.c, vexpf.c) ------------------------- */

#define TSR_FAST_ATT_MAC(kv, kvh, kvq, kvt, basew, stridew, stepw, coef, no, nj, parts, acc)     \
    (tsr_emu_att_mac_kvt((kvt), &(kv)[0][0], &(kvh)[0][0], &(kvq)[0][0],                        \
                         (basew) * TSR_ATT_LANES, (stridew) * TSR_ATT_LANES,                      \
                         (stepw) * TSR_ATT_LANES, (coef), (no), (nj), (parts), &(acc)[0][0],      \
                         TSR_ATT_ACC),                                                            \
     1)
/* (one partial only: the vector loop has no partials' tree) */
#define TSR_FAST_ATT_SCALE_MAX(acc, ks, sqrt_hs, att, nl, am) \
    (TSR_ATT_PARTS == 1 && (*(am) = tsr_emu_att_scale_max((acc), (ks), (sqrt_hs), (att), (nl)), 1))
#define TSR_FAST_ATT_EXP(a, nl, m)                (tsr_emu_exp_shifted((a), (nl), (m)), 1)
#define TSR_FAST_ATT_NORM(att, vs, sum, coef, nl) (tsr_emu_att_norm((att), (vs), (sum), (coef), (nl)), 1)
#define TSR_FAST_F16_STORE(kvh, k, v, ka, tl, va, n) \
    (tsr_emu_f16_store(&(kvh)[0][0], (k), (v), (ka), (tl), (va), (n)), 1)

/* tsr_emu_att_mac, _f16 or _i8 by the cache's precision kvt (TSR_KV_*),
 * on the matching one of kv, kvh, kvq from element base on. */
void tsr_emu_att_mac_kvt(uint32_t kvt, const float *kv, const uint16_t *kvh, const int8_t *kvq,
                         uint32_t base, uint32_t stride, uint32_t step, const float *s, uint32_t no,
                         uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride);

/* pe_att_store's f16 stores (kvh: the cache's first element, words of
 * TSR_ATT_LANES): k's n values, encoded 16 at a time
 * (tsr_emu_f16_encode), into lane tl of words ka, ka + 1, ..; v's into
 * words va.. whole; the same bits. */
void tsr_emu_f16_store(uint16_t *kvh, const float *k, const float *v, uint32_t ka, uint32_t tl,
                       uint32_t va, uint32_t n);

/* ---- the forward pass (passes.c) ---------------------------------------- */

/* A pass of 2 or more items shares its per-item work among the worker
 * pool: the inputs and the gathers an item at a time, attention a KV head
 * group at a time.  A TSR_SERIAL_PES build keeps the kernel's loops, whose
 * charges are sums over the PEs. */
#ifndef TSR_SERIAL_PES
#define TSR_FAST_STAGE_INPUTS(st, nx, n, row, norm) \
    tsr_emu_stage_inputs((st), (nx), (n), (row), (norm))
#define TSR_FAST_STAGE_OUTPUTS(st, items, nx, k, nst, mat, yw, gf) \
    tsr_emu_stage_outputs((st), (items), (nx), (k), (nst), (mat), (yw), (gf))
#endif

/* For nx > 1: each item's input (tsr_rms_scale, tsr_mesh_input) on the
 * pool, unless the previous stage's gathers made them; 1.  0 for one item. */
int tsr_emu_stage_inputs(struct tsr_kstate *st, uint32_t nx, uint32_t n, uint32_t row,
                         uint32_t norm);

/* For nx > 1 and a stage before the classifier: the items' gathers on the
 * pool (each making its next input too, after WO, W13 and W2), then,
 * after QKV, tsr_emu_attention_pass; 1.  0 otherwise. */
int tsr_emu_stage_outputs(struct tsr_kstate *st, const struct tsr_item *items, uint32_t nx,
                          uint32_t k, uint32_t nst, uint32_t mat, uint32_t yw, uint32_t gf);

/* tsr_attention(st, b, items[b].slot, l, items[b].pos) for b = 0..nx-1,
 * in that order as far as any memory can tell (items of one slot see each
 * other's k, v as they would): the worker pool takes a KV head group at a
 * time through every item.  The same results and the same charges, bit
 * for bit; one pool step instead of nx times the phases and tree levels.
 * Needs the items' q | k | v in cv (the QKV gathers); leaves each item's
 * xn and word maxima as tsr_attention does. */
void tsr_emu_attention_pass(struct tsr_kstate *st, const struct tsr_item *items, uint32_t nx,
                            uint32_t l);

/* tsr_mesh_gather(st, mat, b, yw, flags, pos) for b = 0..nx-1, the items
 * shared out among the worker pool (each writes only its own vectors),
 * without the QKV latch (tsr_emu_attention_pass latches each item itself):
 * the same values and charges.  then (optional) runs then(then_ctx, b)
 * right after item b's gather, in the same pool step (then_work: its
 * multiply-adds for all nx, the pool's share-out measure); it must touch
 * only item b's vectors. */
void tsr_emu_gather_pass(struct tsr_kstate *st, uint32_t mat, uint32_t nx, uint32_t yw,
                         uint32_t flags, tsr_emu_item then, void *then_ctx, uint64_t then_work);

/* ---- commands (platform.c) ---------------------------------------------- */

#define TSR_PLATFORM_UNCONFIGURE(st)            ((st)->emu_tr = 0)
#define TSR_PLATFORM_CONFIGURED(st)             tsr_emu_configured(st)
#define TSR_FAST_LOAD_W8(st, p, off, len, in_w) tsr_emu_load_w8((st), (p), (off), (len), (in_w))
#define TSR_LOADED_W8(st, p, off, len)          tsr_emu_wcorr_update((st), (p), (off), (len))
#define TSR_FAST_READ_W8(st, p, off, len, out_w) tsr_emu_read_w8((st), (p), (off), (len), (out_w))

/* After a CONFIGURE that succeeded: the transposed units on (Q8_0, G = 32,
 * SIMD rows on a CPU that runs them) or off. */
void tsr_emu_configured(struct tsr_kstate *st);

/* LOAD's int8 payload into the transposed units when they are on: 1, else
 * 0 (the kernel's loop stores the layout). */
int tsr_emu_load_w8(struct tsr_kstate *st, uint32_t p, uint32_t off, uint32_t len,
                    const uint32_t *in_w);

/* The per-entry weight sums (tsr_emu_wcorr) of PE p's entries that bytes
 * [off, off + len) of its int8 array touched, outside transposed units. */
void tsr_emu_wcorr_update(struct tsr_kstate *st, uint32_t p, uint32_t off, uint32_t len);

/* READ_MEM's int8 words back out of the transposed units when they are
 * on: 1, else 0. */
int tsr_emu_read_w8(const struct tsr_kstate *st, uint32_t p, uint32_t off, uint32_t len,
                    volatile uint32_t *out_w);

#endif
