/*
 * backend_emu.c - the emulator backend: the kernel sources (kernels/) on
 * the CPU, behind the same command ring an FPGA serves.
 *
 * The device is a tsr_kstate (one reservation of address space; each PE's
 * slice of every PE array placed on the NUMA node of the worker that owns
 * it, pages touched only when written) and three host buffers standing in
 * for device memory: ctl (the ring), in, out.  A device thread runs the
 * kernel's own tsr_kernel_serve loop on them, as tessera_top does on a
 * card, and is worker 0 of the pool that runs the PE blocks (emu/pool.c).
 * A publish is a release store plus a futex wake; a wait sleeps on the
 * word's futex, woken by the kernel's publishes (the token count, the
 * responses) or by interrupt().
 */
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "parts.h"
#include "tsr_emu.h"
#include "tsr_kernel.h"

/* Ring entries: LOAD keeps two commands in flight; 8 leaves room. */

struct tsr_backend {
    tsr_kstate     *st;          /* the device state (mmap)               */
    size_t          st_bytes;
    int             numa;        /* 1: PE slices bound to NUMA nodes       */
    int             nodes;
    uint32_t        threads;
    int             pes;         /* PEs the device exposes                */
    uint32_t       *buf[TSR_BUF_ALL];    /* ctl, in, out, link_in, link_out */
    uint32_t        words[TSR_BUF_ALL];
    pthread_t       dev;         /* the device thread                     */
    int             started;
    uint32_t       *watch;       /* the word a wait() sleeps on, or NULL  */
    pthread_t       prep;        /* faults the weights' pages in (prepare) */
    int             prep_running;
    tsr_kconfig     prep_cfg;    /* what it prepares for; set before it starts */
};

/* ------------------------------------------------------------------------ */
/* The device thread                                                          */

static void *device_main(void *arg)
{
    tsr_backend *b = arg;
    if (b->nodes > 1) numa_run_on_node(tsr_emu_worker_node(0, b->threads, b->nodes));
    tsr_kernel_init(b->st);
    /* in and out are each read as uint32 and as fp32, as tessera_top's two
     * m_axi ports per buffer (kernels/tsr_kernel.h) */
    tsr_kernel_serve(b->st, b->buf[TSR_BUF_CTL], b->buf[TSR_BUF_IN],
                     (const float *)(const void *)b->buf[TSR_BUF_IN], b->buf[TSR_BUF_OUT],
                     (float *)(void *)b->buf[TSR_BUF_OUT],
                     (const float *)(const void *)b->buf[TSR_BUF_LINK_IN],
                     (float *)(void *)b->buf[TSR_BUF_LINK_OUT]);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                               */

/* Worker threads by default: the CPUs this process may run on. */
static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void prep_join(tsr_backend *b);

static void emu_close(tsr_backend *b)
{
    if (!b) return;
    prep_join(b);
    if (b->started) pthread_join(b->dev, NULL);   /* the command layer sent EXIT */
    if (b->st) {
        tsr_emu_pool_destroy(b->st->pool);
        munmap(b->st, b->st_bytes);
    }
    for (int i = 0; i < TSR_BUF_ALL; i++) free(b->buf[i]);
    free(b);
}

/* Each PE's slice of an [n][...] array over the first n PEs (TSR_PES, or
 * TSR_ATT_PES for the attention PEs') on its owner's NUMA node.  The
 * slices start on pages (TSR_MEM_ALIGN: emu/tsr_platform_emu.h). */
static void place_slices(tsr_backend *b, void *base, size_t per_pe, int n)
{
    for (int p = 0; p < n; p++) {
        char *s = (char *)base + (size_t)p * per_pe;
        if (b->numa && b->nodes > 1 && per_pe % 4096u == 0) {
            uint32_t w = tsr_emu_pe_owner((uint32_t)(p < b->pes ? p : b->pes - 1), (uint32_t)b->pes,
                                          b->threads);
            numa_tonode_memory(s, per_pe, tsr_emu_worker_node(w, b->threads, b->nodes));
        }
    }
}

static int emu_open(const tsr_devspec *spec, tsr_backend **out, tsr_devinfo *info, tsr_err *e)
{
    *out = NULL;
    int pes = spec->pes ? spec->pes : TSR_DEFAULT_PES;
    if (pes < 1 || pes > TSR_MAX_PES)
        return tsr_seterr(e, TSR_ERR_ARG, "emu: pes=%d outside 1..%d (profile %s)", pes,
                          TSR_MAX_PES, TSR_PROFILE_NAME);
    const tsr_part *part = NULL;
    if (spec->part[0] && !(part = tsr_part_find(spec->part)))
        return tsr_seterr(e, TSR_ERR_ARG, "emu: unknown part '%s' (known: %s)", spec->part,
                          tsr_part_names());
    if (part && tsr_part_bytes(part) == 0)   /* hw/parts.def lacks its block counts */
        return tsr_seterr(e, TSR_ERR_ARG, "emu: part '%s': block RAM / UltraRAM counts unknown "
                          "(hw/parts.def), no capacity to emulate", spec->part);
    tsr_backend *b = calloc(1, sizeof *b);
    if (!b) return tsr_seterr(e, TSR_ERR_NOMEM, "emu: out of memory");
    b->pes = pes;
    /* the state: address space only; untouched pages cost nothing */
    b->st_bytes = (sizeof(tsr_kstate) + 4095u) & ~(size_t)4095u;
    void *st = mmap(NULL, b->st_bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (st == MAP_FAILED) {
        free(b);
        return tsr_seterr(e, TSR_ERR_NOMEM, "emu: cannot reserve %zu bytes for the device state",
                          sizeof(tsr_kstate));
    }
    b->st = st;
    /* worker threads over the PEs (never more than PEs): worker w owns the
     * PE block [w*P/n, (w+1)*P/n) of every mesh step; the device thread
     * is worker 0 */
    b->threads = (uint32_t)(spec->threads ? spec->threads : cpus_available());
    if (b->threads > (uint32_t)pes) b->threads = (uint32_t)pes;
    b->numa = numa_available() >= 0;
    b->nodes = b->numa ? numa_num_configured_nodes() : 1;
    if (b->threads > 1) {
        int rc = tsr_emu_pool_create(b->threads, b->nodes, &b->st->pool);
        if (rc) {
            emu_close(b);
            return tsr_seterr(e, TSR_ERR_NOMEM, "emu: cannot start %u worker threads: %s",
                              b->threads, strerror(rc));
        }
    }
    b->st->simd = !spec->no_simd;
    /* "simd=avx2": an AVX2-only CPU's paths (no AVX-512, AVX-VNNI or AMX),
     * for this process, before the first pass (tsr_emu.h) */
    if (spec->simd_avx2) tsr_emu_vec_limit = TSR_EMU_VEC_AVX2;
    tsr_kstate *s = b->st;
    place_slices(b, s->w8, sizeof s->w8[0], TSR_PES);
    place_slices(b, s->f32, sizeof s->f32[0], TSR_PES);
    place_slices(b, s->kv, sizeof s->kv[0], TSR_ATT_PES);
    place_slices(b, s->psum, sizeof s->psum[0], TSR_PES);
    place_slices(b, s->xq, sizeof s->xq[0], TSR_PES);
    place_slices(b, s->kvh, sizeof s->kvh[0], TSR_ATT_PES);
    place_slices(b, s->kvq, sizeof s->kvq[0], TSR_ATT_PES);
    place_slices(b, s->kvs, sizeof s->kvs[0], TSR_ATT_PES);
    /* the link buffers */
    b->words[TSR_BUF_CTL] = TSR_CTL_WORDS(TSR_RING_ENTRIES);
    b->words[TSR_BUF_IN] = TSR_IN_WORDS;
    b->words[TSR_BUF_OUT] = TSR_OUT_WORDS;
    b->words[TSR_BUF_LINK_IN] = TSR_LINK_WORDS;
    b->words[TSR_BUF_LINK_OUT] = TSR_LINK_WORDS;
    for (int i = 0; i < TSR_BUF_ALL; i++) {
        b->buf[i] = aligned_alloc(64, ((size_t)b->words[i] * 4u + 63u) & ~(size_t)63u);
        if (!b->buf[i]) {
            emu_close(b);
            return tsr_seterr(e, TSR_ERR_NOMEM, "emu: out of memory");
        }
        memset(b->buf[i], 0, (size_t)b->words[i] * 4u);
    }

    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    memset(info, 0, sizeof *info);
    snprintf(info->profile, sizeof info->profile, "%s", TSR_PROFILE_NAME);
    info->prof = prof;
    info->pes = pes;
    info->cap_bytes = part ? tsr_part_bytes(part) : 0;
    info->cap_name = part ? part->name : NULL;
    /* projections at the part's clock (the platforms' default without
     * part=) */
    info->clock_mhz = part && part->clock_mhz > 0 ? part->clock_mhz : TSR_CLOCK_MHZ_DEFAULT;
    info->ring_n = TSR_RING_ENTRIES;
    for (int i = 0; i < TSR_BUF_ALL; i++) info->words[i] = b->words[i];
    *out = b;
    return TSR_OK;
}

static int emu_start(tsr_backend *b, tsr_err *e)
{
    if (pthread_create(&b->dev, NULL, device_main, b) != 0)
        return tsr_seterr(e, TSR_ERR_DEVICE, "emu: cannot start the device thread");
    b->started = 1;
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Transport                                                                  */

static int check_range(const tsr_backend *b, int buf, uint32_t off, uint32_t words, tsr_err *e)
{
    if (buf < 0 || buf >= TSR_BUF_ALL || off > b->words[buf] || words > b->words[buf] - off)
        return tsr_seterr(e, TSR_ERR_RANGE, "emu: buffer %d: words %u..%u outside its %u", buf,
                          off, off + words, buf >= 0 && buf < TSR_BUF_ALL ? b->words[buf] : 0u);
    return TSR_OK;
}

static int emu_write(tsr_backend *b, int buf, uint32_t off, const void *src, uint32_t words,
                     tsr_err *e)
{
    int rc = check_range(b, buf, off, words, e);
    if (!rc) memcpy(b->buf[buf] + off, src, (size_t)words * 4u);
    return rc;
}

static int emu_read(tsr_backend *b, int buf, uint32_t off, void *dst, uint32_t words, tsr_err *e)
{
    int rc = check_range(b, buf, off, words, e);
    if (rc) return rc;
    /* A single word may be one the kernel publishes (a sequence or count
     * word): an acquire load.  The command layer reads a payload only
     * after such a word, so its plain copy is ordered after the kernel's
     * writes (release before the publish). */
    if (words == 1) {
        uint32_t v = __atomic_load_n(b->buf[buf] + off, __ATOMIC_ACQUIRE);
        memcpy(dst, &v, 4);
    } else {
        memcpy(dst, b->buf[buf] + off, (size_t)words * 4u);
    }
    return TSR_OK;
}

static int emu_publish(tsr_backend *b, int buf, uint32_t off, uint32_t v, tsr_err *e)
{
    int rc = check_range(b, buf, off, 1, e);
    if (!rc) tsr_emu_publish(b->buf[buf] + off, v);   /* release store + wake */
    return rc;
}

static int emu_wait(tsr_backend *b, int buf, uint32_t off, uint32_t old, uint32_t timeout_us,
                    uint32_t *now, tsr_err *e)
{
    int rc = check_range(b, buf, off, 1, e);
    if (rc) return rc;
    uint32_t *w = b->buf[buf] + off;
    __atomic_store_n(&b->watch, w, __ATOMIC_RELEASE);
    if (__atomic_load_n(w, __ATOMIC_ACQUIRE) == old) tsr_emu_wait_change(w, old, timeout_us);
    __atomic_store_n(&b->watch, NULL, __ATOMIC_RELEASE);
    *now = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    return TSR_OK;
}

/* tsr_seq_cancel(): wake a waiting decode (a futex wake is
 * async-signal-safe; one that races the end of the wait hits a word nobody
 * waits on, which is harmless). */
static void emu_interrupt(tsr_backend *b)
{
    uint32_t *w = __atomic_load_n(&b->watch, __ATOMIC_ACQUIRE);
    if (w) tsr_emu_wake(w);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

/* Fault in (allocate and zero) the pages of [p, p + n). */
static void populate(void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095u, z = ((uintptr_t)p + n + 4095u) & ~(uintptr_t)4095u;
    if (n) (void)madvise((void *)a, z - a, MADV_POPULATE_WRITE);   /* best effort */
}

/* Ask for 2 MB pages over the 2 MB-aligned part of [p, p + n): int8 tiles
 * that the stream fills whole and every GEMV reads end to end (a 4 KB page
 * costs a TLB miss every 4 KB).  Not past n: a 2 MB page there would
 * commit memory nothing uses, as would 2 MB pages for the KV cache and the
 * per-item buffers, which are touched sparsely. */
static void huge_interior(void *p, size_t n)
{
    const uintptr_t M = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + M - 1u) & ~(M - 1u), z = ((uintptr_t)p + n) & ~(M - 1u);
    if (z > a) (void)madvise((void *)a, z - a, MADV_HUGEPAGE);   /* best effort */
}

/* "Power on" the SRAM the weights of b->prep_cfg will occupy, PE by PE in
 * the order the weight stream fills it: let the OS allocate and zero those
 * pages.  The KV cache is left to fault in as positions are written. */
static void *prep_main(void *arg)
{
    tsr_backend *b = arg;
    const tsr_kconfig *kc = &b->prep_cfg;
    uint32_t P = tsr_lay_pes(kc);
    for (uint32_t p = 0; p < P; p++) {
        uint64_t w8, f32;
        tsr_lay_pe_weights(kc, p, &w8, &f32, NULL);
        huge_interior(b->st->w8[p], (size_t)w8);
        populate(b->st->w8[p], (size_t)w8);
        populate(b->st->f32[p], 4u * (size_t)f32);
    }
    return NULL;
}

static void prep_join(tsr_backend *b)
{
    if (!b->prep_running) return;
    pthread_join(b->prep, NULL);
    b->prep_running = 0;
}

/* After CONFIGURE: fault in the weights' pages (prep_main) on a thread of
 * their own, so that the zeroing (near 1 GB/s on a VM) runs beside the
 * host's image building and the stream instead of before them; a LOAD that
 * reaches a page first faults it in itself, and populating a page that is
 * already there leaves it as it is.  Without a thread, here and now. */
static void emu_prepare(tsr_backend *b, const tsr_kconfig *kc)
{
    prep_join(b);
    b->prep_cfg = *kc;
    if (pthread_create(&b->prep, NULL, prep_main, b) == 0) b->prep_running = 1;
    else prep_main(b);
}

/* ------------------------------------------------------------------------ */

const tsr_backend_iface tsr_backend_emu = {
    .name = "emu",
    .open = emu_open,
    .start = emu_start,
    .close = emu_close,
    .write = emu_write,
    .read = emu_read,
    .publish = emu_publish,
    .wait = emu_wait,
    .interrupt = emu_interrupt,
    .prepare = emu_prepare,
};
