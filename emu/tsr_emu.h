/*
 * tsr_emu.h - the emulator's runtime under the kernel sources: what the
 * CPU needs to run kernels/ fast and that an FPGA build never sees.
 *
 *   pool.c       worker threads over the PEs of each mesh step; worker w
 *                places and first takes the contiguous PE block
 *                [w*P/n, (w+1)*P/n) (the wafer's locality), and helps
 *                with the others' when it is done
 *   tile_simd.c  AVX2 rows and AVX-512 VNNI GEMMs of the Q8_0 and Q4_0 tile
 *                products, and the rows over the emulator's transposed
 *                units (below), bit-identical to the portable loops in
 *                kernels/mesh.c
 *   att_rows.c   attention's multiply-add pass as vectorized loops, the
 *                f16 cache's encoder, and the prefetch of KV rows
 *   quant.c      the Q8 input quantizer's values as one vectorized loop
 *   pes.c        a mesh step's PE tasks on the pool
 *   platform.c   the fast paths behind the kernel's platform hooks
 *   passes.c     a forward pass's items on the pool
 *   cpu.c        the CPU's features, asked once
 *
 * No kernel source includes emu/: the Makefile puts tsr_platform_emu.h (the
 * emulator's definitions of kernels/tsr_platform.h's hooks, which includes
 * this header) in front of every host object.  The kernel
 * builds and runs without emu/: `make EMU_SIMD=0` leaves the SIMD rows out
 * (tsr_emu_tile_q8 then handles no row), and a NULL pool runs every step
 * on the calling thread.
 */
#ifndef TSR_EMU_H
#define TSR_EMU_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Worker pool                                                                */

typedef struct tsr_emu_pool tsr_emu_pool;

/* One item of a step (a PE's task). */
typedef void (*tsr_emu_item)(void *ctx, uint32_t item);

/* Start a pool of n workers: the thread that calls tsr_emu_pool_run is
 * worker 0, so n - 1 threads are created, once.  Idle workers spin briefly
 * on a generation word, then sleep on a futex (at once, without spinning,
 * when n exceeds the CPUs this process may run on).  When nodes > 1, worker w
 * runs on NUMA node tsr_emu_worker_node(w, n, nodes).  Returns 0, or an
 * errno value (EINVAL for n == 0 or n > 256, or what pthread_create
 * returned). */
int tsr_emu_pool_create(uint32_t n, int nodes, tsr_emu_pool **out);


/* Stop and join the workers; NULL is a no-op. */
void tsr_emu_pool_destroy(tsr_emu_pool *pool);

/* Workers in the pool (1 for NULL). */
uint32_t tsr_emu_pool_size(const tsr_emu_pool *pool);

/* Run fn(ctx, i) for every item i of [0, n) on up to nw workers (nw <=
 * size; the caller is worker 0) and return when all are done.  Worker w
 * takes the items of its block [w*n/nw, (w+1)*n/nw) first (the PEs it
 * owns), then what is left of the others': a worker the OS has not
 * scheduled leaves its share to the rest, so a busy machine never makes a
 * step wait for a thread that has not started it.  Each item runs exactly
 * once, on one thread; items must not depend on each other.  No lock and
 * no thread creation: one release store starts the step, a counter ends
 * it.  NULL pool or nw <= 1: the items in order on the calling thread.
 * Not reentrant: one step at a time. */
void tsr_emu_pool_run(tsr_emu_pool *pool, uint32_t n, uint32_t nw, tsr_emu_item fn, void *ctx);

/* tsr_emu_pool_run(pool, n, every worker, fn, ctx), or on the calling
 * thread alone when the step has fewer than 16 K multiply-accumulates of
 * work (roughly): waking the workers would cost more than it saves. */
void tsr_emu_pool_share(tsr_emu_pool *pool, uint32_t n, uint64_t work, tsr_emu_item fn, void *ctx);

/* In that measure, one element of a per-item vector pass (RMSNorm and the
 * quantizer's divide and rounding, or a gather with RoPE or the residual
 * and its sum of squares) weighs this many multiply-adds: so the inputs
 * and gathers of 2 or more items of dim 768 (stories110M), or of 4 or
 * more of dim 288 (stories15M), run on every worker; a gather that makes
 * the next stage's input too (kernels/forward.c) weighs both, so it is
 * shared from 2 items of dim 288. */
#define TSR_EMU_ELEM_WORK 16u

/* Store v to *word (release) and wake the threads waiting on it with
 * tsr_emu_wait_change: how the kernel publishes DECODE's token count. */
void tsr_emu_publish(uint32_t *word, uint32_t v);

/* Wait until *word != old, a tsr_emu_publish/tsr_emu_wake on word, or
 * timeout_us microseconds, whichever comes first (it may also return
 * early, as a futex does: callers re-check their condition). */
void tsr_emu_wait_change(uint32_t *word, uint32_t old, uint32_t timeout_us);

/* Wake every thread waiting on word. */
void tsr_emu_wake(uint32_t *word);

/* The NUMA node of worker w of n (and of the PEs it owns). */
static inline int tsr_emu_worker_node(uint32_t w, uint32_t n, int nodes)
{
    return nodes > 1 ? (int)((uint64_t)w * (uint32_t)nodes / n) : 0;
}

/* The worker of n that owns PE p of P: the inverse of the block split
 * [w*P/n, (w+1)*P/n). */
static inline uint32_t tsr_emu_pe_owner(uint32_t p, uint32_t P, uint32_t n)
{
    uint32_t w = 0;
    while (w + 1u < n && (w + 1u) * P / n <= p) w++;
    return w;
}

/* Acquire-load a word the other side publishes (the ring's sequence
 * numbers, the cancel word). */
static inline uint32_t tsr_emu_observe(const uint32_t *word)
{
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------------ */
/* PE steps (pes.c)                                                           */

struct tsr_kstate;
struct tsr_pe_job;

/* A PE task of the kernel (kernels/tsr_hls.h TSR_RUN_PES): PE p's share of
 * a mesh step, active 1 for a configured PE; returns the cycles it
 * charged. */
typedef uint32_t (*tsr_emu_pe_task)(struct tsr_kstate *st, uint32_t p,
                                    const struct tsr_pe_job *job, uint32_t active, uint32_t k);

/* fn(st, p, job, 1, k) for p = 0..P-1 on the pool of st (worker w the PE block
 * [w*P/n, (w+1)*P/n)), or on the calling thread when the pool is NULL or
 * job->work says the step is too small to share; returns the largest
 * cycle count (st->pe_cy[] holds each PE's). */
uint32_t tsr_emu_run_pes(struct tsr_kstate *st, uint32_t P, tsr_emu_pe_task fn,
                         const struct tsr_pe_job *job, uint32_t k);

/* ------------------------------------------------------------------------ */
/* Attention passes (att_rows.c)                                              */

/* pe_att_mac's sums: for o < no, acc[(o % parts) * acc_stride + j] (j < nj)
 * = (o < parts ? 0 : itself) + s[o] * row o's element j, bit-identical to
 * the kernel's pass.  Row o's element j is kv[o * stride + (j / W) * step
 * + j % W], W = TSR_ATT_LANES (a word; all three in elements): step W
 * for rows stored whole (V), step head_size x W for K^T's position tiles
 * (stride W). */
void tsr_emu_att_mac(const float *kv, uint32_t stride, uint32_t step, const float *s, uint32_t no,
                     uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride);

/* The same over an IEEE-half cache (each element decoded exactly, as the
 * kernel's tsr_f32_from_f16) and over an int8 cache (each element's
 * integer value; its scale is the kernel's business). */
void tsr_emu_att_mac_f16(const uint16_t *kv, uint32_t stride, uint32_t step, const float *s,
                         uint32_t no, uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride);
void tsr_emu_att_mac_i8(const int8_t *kv, uint32_t stride, uint32_t step, const float *s,
                        uint32_t no, uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride);

/* pe_att_scale_max with one partial: att[t] = (ks ? acc[t] * ks[t] :
 * acc[t]) / sqrt_hs for t < nl (nl >= 1; ks: the int8 cache's K scales,
 * else NULL); returns their max as the kernel finds it (8 lanes, t in lane
 * t mod 8, each taking a larger value only, from -FLT_MAX; then its tree),
 * bit for bit. */
float tsr_emu_att_scale_max(const float *acc, const float *ks, float sqrt_hs, float *att,
                            uint32_t nl);

/* pe_att_norm: coef[t] = att[t] / sum (vs: times the int8 cache's V scale
 * vs[t]; else NULL) for t < nl, bit for bit. */
void tsr_emu_att_norm(const float *att, const float *vs, float sum, float *coef, uint32_t nl);

/* ------------------------------------------------------------------------ */
/* expf over arrays (vexpf.c)                                                 */

/* y[i] = expf(x[i]) for i < n, bit for bit the C library's expf (x == y
 * allowed): with AVX-512 or AVX2 and FMA, 8 at a time by glibc's
 * algorithm, when the first call's check found it equal to this process's
 * expf; expf a value at a time otherwise.  Thread-safe (the check runs
 * once, under pthread_once). */
void tsr_emu_expf(const float *x, float *y, uint32_t n);

/* The path tsr_emu_expf takes on this CPU and C library (TSR_EMU_VEC_*:
 * the widest the CPU has whose first-call check found it equal to expf,
 * at most tsr_emu_vec_limit). */
int tsr_emu_expf_vector(void);

/* a[i] = expf(a[i] - sub) for i < n: attention's exponentials
 * (kernels/attention.c pe_att_exp), bit for bit. */
void tsr_emu_exp_shifted(float *a, uint32_t n, float sub);

/* g[i] = g[i] * (1 / (1 + expf(-g[i]))) * g[rows + i] for i < rows, in
 * that order of fp32 operations: SwiGLU of W13's two halves
 * (kernels/mesh.c pe_swiglu), bit for bit. */
void tsr_emu_swiglu(float *g, uint32_t rows);

/* h[i] = tsr_f16_from_f32(x[i]) for i < n, bit for bit (the f16 cache's
 * stores). */
void tsr_emu_f16_encode(const float *x, uint16_t *h, uint32_t n);

/* Ask for n runs of `bytes` bytes, `stride` bytes apart from p (every cache
 * line they touch), into L2: a prefetch a line, which never faults and
 * changes no value.  A KV cache's rows ahead of the attention pass that
 * reads them, at most TSR_EMU_PREFETCH_MAX bytes a PE and item. */
void tsr_emu_prefetch_runs(const void *p, uint32_t n, size_t stride, size_t bytes);
#define TSR_EMU_PREFETCH_MAX (256u << 10)
#define TSR_EMU_LINE         64u   /* bytes of a cache line */

/* ------------------------------------------------------------------------ */
/* The input quantizer (quant.c)                                              */

/* q[j] = (int8_t)tsr_round_q8(v[j] / sc) for j < n, sc != 0: one group's
 * values of the Q8 input quantizer (kernels/mesh.c), bit for bit, 16 at a
 * time on a CPU with AVX-512 F and VL (the scalar loop otherwise). */
void tsr_emu_quantize_q8(const float *v, float sc, int8_t *q, uint32_t n);

/* ------------------------------------------------------------------------ */
/* CPU features                                                               */

/* probe()'s answer (its __builtin_cpu_supports tests), asked once and kept
 * in *cache (a static int, -1 before the first call); 0 off x86-64 GCC.
 * Thread-safe: racing first calls store the same answer. */
int tsr_emu_cpu_once(int *cache, int (*probe)(void));

/* 1 when the CPU has AVX-512 F, BW and VL (asked once): attention's
 * register sums and the f16 encoder (att_rows.c), the quantizer (quant.c). */
int tsr_emu_avx512(void);

/* 1 when the CPU has AVX2 and FMA (asked once). */
int tsr_emu_avx2(void);

/* The emulator's vector paths (the expf, SwiGLU and softmax loops, the
 * register sums, the quantizer, the tile GEMMs, AVX-VNNI, AMX): the CPU's
 * widest of these, at most tsr_emu_vec_limit.  Below TSR_EMU_VEC_AVX512
 * the emulator takes an AVX2-only CPU's paths: AVX2 and FMA, no AVX-512,
 * AVX-VNNI or AMX. */
enum { TSR_EMU_VEC_NONE = 0, TSR_EMU_VEC_AVX2 = 1, TSR_EMU_VEC_AVX512 = 2 };
int tsr_emu_vec_level(void);

/* The widest path those may take (default TSR_EMU_VEC_AVX512;
 * TSR_EMU_VEC_NONE: the scalar loops): tests, and a device opened with
 * "simd=avx2" (backend_emu.c; process-wide, as the CPU's features are).
 * Not thread-safe: set it while no pass runs. */
extern int tsr_emu_vec_limit;

/* ------------------------------------------------------------------------ */
/* SIMD rows                                                                  */

/* 1 when this CPU runs the SIMD rows (x86-64 with AVX2) and they were built
 * in (EMU_SIMD=1); 0 otherwise. */
int tsr_emu_simd_available(void);

/* 128 x the sum of the G int8 weights at w: the correction the GEMM rows
 * subtract after multiplying the weights by x + 128 (tsr_emu_tile_q8).
 * Kept per entry by the kernel's LOAD. */
int32_t tsr_emu_wcorr(const int8_t *w, uint32_t G);

/* The Q8_0 tile product of kernels/mesh.c pe_tile_q8 for a tile's full
 * blocks of TSR_ROW_SLOTS (8) rows, for nx items, in the layout of
 * tsr_layout.h: w8 the tile's first byte (entries (block, group, row), G
 * bytes each), ws its first scale, wcorr its first entry's tsr_emu_wcorr
 * (in ws's order); item k's input from the tile's first
 * group at xq + k * xq_stride (bytes) and xs + k * xs_stride (scales), its
 * outputs at psum + k * psum_stride (rows,).  The same per-group int32 sums
 * (exact) and, per row and item, the same fp32 operations in the same
 * order, ((float)isum * ws) * xs added groups ascending, so the result is
 * bit-identical.  Two or more items on a CPU with AVX-512 VNNI: one pass
 * over the tile for up to 16 items (a GEMM); without it (or kept to AVX2,
 * tsr_emu_vec_limit): one pass for all of them, each block's weights
 * transposed once and taken four items at a time in 8-bit products
 * (vpmaddubsw, vpmaddwd); one item: a pass.
 * Handles G 32 and 64 only; returns the blocks done (0 when the CPU or G
 * is not supported).  xq values must lie in -127..127 (the quantizer's
 * range); w8 any int8. */
uint32_t tsr_emu_tile_q8(const int8_t *w8, const float *ws, const int32_t *wcorr, uint32_t rows,
                         uint32_t ng, uint32_t G, const int8_t *xq, size_t xq_stride,
                         const float *xs, size_t xs_stride, uint32_t nx, float *psum,
                         size_t psum_stride);

/* ---- the transposed units ----------------------------------------------
 *
 * On a CPU with AVX-512 VNNI the emulator keeps the full 8-row blocks of
 * its Q8_0 tiles at G = 32 in its own arrangement in the PEs' int8 arrays
 * (the kernel's LOAD, READ_MEM and embedding read through it; tail blocks,
 * Q4_0 tiles and other group sizes stay in tsr_layout.h's).  A unit is the
 * 256 bytes of one group of one block: in the layout, the block's 8 rows'
 * entries, row r's 32 bytes at 32 r.  Transposed, 64-byte part k of the
 * unit holds, for each row r, the row's bytes 8k..8k+7 at 64 k + 8 r, and
 * every byte is w + 128 as an unsigned byte (w ^ 0x80).  So one 64-byte
 * load carries dwords 2k, 2k+1 of all 8 rows, a register lane pair a row,
 * and the products take the weights as vpdpbusd's unsigned operand and the
 * inputs as they are: w . x = (w + 128) . x - 128 sum(x), the correction
 * one per item and group instead of per row. */

/* Bytes of a transposed unit: one group of a block, 8 rows x 32. */
#define TSR_EMU_TR_UNIT 256u

/* 1 when this CPU and build run tsr_emu_tile_q8t (AVX-512 F, BW and VNNI,
 * with the SIMD rows built in). */
int tsr_emu_tr_available(void);

/* 1 when tsr_emu_tile_q8t takes calls of 9 or more items (all of them)
 * through Intel AMX (tile_amx.c): tsr_emu_amx_granted(), and a first
 * product equalled the plain loop's; asked once (thread-safe), then 0
 * while tsr_emu_amx_limit is 0. */
int tsr_emu_amx_available(void);

/* 1 when the CPU has AMX-TILE, AMX-INT8 and AVX-512 and Linux granted the
 * process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, process-wide and
 * for good); asked once, with tsr_emu_amx_available.  Where this is 1 and
 * tsr_emu_amx_available() is 0, the AMX product disagreed with the plain
 * loop: the tests take that for a failure. */
int tsr_emu_amx_granted(void);

/* Tests only: 0 keeps tsr_emu_tile_q8t off AMX (default 1).  Not
 * thread-safe: set it while no pass runs. */
extern int tsr_emu_amx_limit;

/* Bytes of the B tiles of one group of a pair of blocks (tile_amx.c). */
#define TSR_EMU_AMX_PAIR 512u

/* The nb blocks of transposed units at w8 (scales ws) times nx items (xq,
 * xq_stride, xs, xs_stride, psum, psum_stride as tsr_emu_tile_q8t's),
 * with AMX: bit-identical to tsr_emu_tile_q8t.  pb: the caller's scratch
 * of ng * TSR_EMU_AMX_PAIR bytes, 64-byte aligned.  Only where
 * tsr_emu_amx_available() says 1; thread-safe (tile state is per thread:
 * configured on entry, released on return). */
void tsr_emu_tr_gemm_amx(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                         const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                         uint32_t nx, float *psum, size_t psum_stride, uint8_t *pb);

/* The place in its transposed unit of the unit's layout byte u (0..255):
 * row u / 32, byte u % 32 of the row's entry.  Whole 8-byte runs move
 * together, so a 4-byte-aligned word stays whole. */
static inline uint32_t tsr_emu_tr_byte(uint32_t u)
{
    return ((u >> 3) & 3u) << 6 | (u >> 5) << 3 | (u & 7u);
}

/* Bytes the tile loops prefetch their weight stream ahead of the unit
 * they read (emu/tile_simd.c). */
#define TSR_EMU_TILE_AHEAD 16384u

/* tsr_emu_tile_q8 for a tile whose full blocks are transposed units (G =
 * 32): w8 the tile's first unit, ws, xq, xs and psum as there (no weight
 * sums: the correction comes from the inputs).  One item: a pass; 2 to 8:
 * a pass for them all, in pairs of items; more: GEMMs of up to 16 items
 * (each a lane), then a rest of up to 8 as above (one alone: the one-item
 * pass), or, where tsr_emu_amx_available(), all of them in one pass of
 * AMX tile products (tsr_emu_tr_gemm_amx).  Bytes of a unit that LOAD never wrote read as w = -128.  The same int32 sums
 * and, per row and item, the same fp32 operations in the same order:
 * bit-identical to pe_tile_q8 on the layout.  Returns rows / 8, the blocks
 * done, on any CPU that tsr_emu_tr_available accepts (without memory for
 * its scratch it falls back to a plain loop), 0 on others.  xkey, when not
 * 0, names the inputs as they are now (tsr_emu_next_key): a call with the
 * xkey, xq, ng and nx of one of this thread's last few reuses the 9 to 16
 * items' transposed inputs it made (the PE tiles of one GEMV take the
 * same inputs); 0 always makes them. */
uint32_t tsr_emu_tile_q8t(const uint8_t *w8, const float *ws, uint32_t rows, uint32_t ng,
                          const int8_t *xq, size_t xq_stride, const float *xs, size_t xs_stride,
                          uint32_t nx, float *psum, size_t psum_stride, uint64_t xkey);

/* A new xkey, never returned before in this process (thread-safe). */
uint64_t tsr_emu_next_key(void);

/* Ask for what a tsr_emu_tile_q8t call on this tile reads first: the
 * weight units of its first TSR_EMU_TILE_AHEAD bytes and their scales.
 * The call's own prefetch runs that far ahead of it inside the tile, so
 * a tile that does not follow its predecessor in memory (the next PE's
 * slab) would otherwise start on misses.  A hint: no value changes. */
void tsr_emu_tile_q8t_head(const uint8_t *w8, const float *ws, uint32_t rows, uint32_t ng);

/* The plain loop over a tile's nb full blocks of transposed units, one
 * item (x, xs, psum as tsr_emu_tile_q8t's item 0): what tsr_emu_tile_q8t
 * falls back to when it gets no memory for its scratch. */
void tsr_emu_tile_q8t_plain(const uint8_t *w8, const float *ws, uint32_t nb, uint32_t ng,
                            const int8_t *x, const float *xs, float *psum);

/* 128 x the sum of the 32 values of one Q4_0 entry at w (16 bytes, as
 * tsr_emu_tile_q4 reads it): tsr_emu_wcorr of the entry widened to int8.
 * Kept per entry by the kernel's LOAD. */
int32_t tsr_emu_wcorr_q4(const int8_t *w);

/* The Q4_0 tile product of kernels/mesh.c pe_tile_q4 (G = 32) for a
 * tile's full blocks of 8 rows, for nx items: w4 the tile's first byte
 * (entries (block, group, row), 16 bytes each: element i in the low nibble
 * of byte i, i + 16 in the high one, value nibble - 8), ws its first
 * scale, wcorr its first entry's tsr_emu_wcorr_q4 (in ws's order); the
 * items' inputs and outputs as tsr_emu_tile_q8's.  Each entry widened to
 * its 32 int8 values, then tsr_emu_tile_q8's sums and fp32 operations in
 * its order (a GEMM for two or more items, AVX-512 VNNI's or AVX2's,
 * else a pass): bit-identical to pe_tile_q4.  Returns the blocks done (0
 * without AVX2). */
uint32_t tsr_emu_tile_q4(const int8_t *w4, const float *ws, const int32_t *wcorr, uint32_t rows,
                         uint32_t ng, const int8_t *xq, size_t xq_stride, const float *xs,
                         size_t xs_stride, uint32_t nx, float *psum, size_t psum_stride);

/* The F32 tile product of pe_tile_f32 for the full 8-row blocks, for nx
 * items: wf the tile's first value (entries (block, column, row)), item k's
 * input from its first column at xf + k * xf_stride, cols columns, its
 * outputs at psum + k * psum_stride (rows,).  Per row v = v + w * x,
 * columns ascending, no FMA: bit-identical.  Returns the blocks done. */
uint32_t tsr_emu_tile_f32(const float *wf, uint32_t rows, uint32_t cols, const float *xf,
                          size_t xf_stride, uint32_t nx, float *psum, size_t psum_stride);

#endif
