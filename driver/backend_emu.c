/*
 * backend_emu.c - the emulator backend: runs the kernel sources (kernels/)
 * on the CPU, behind the same command interface an FPGA exposes.
 *
 * The device is a tsr_kstate (controller state) plus one tsr_pe per PE, each
 * its own allocation placed with libnuma (spread over the nodes; plain
 * aligned memory when NUMA is unavailable).  Every command "crosses the host
 * link": its 32 command words and its `in` payload count as host->device
 * bytes, the part of `out` the host reads back as device->host bytes, per
 * phase (tsr_link_counters).  A decode runs the kernel in a worker thread;
 * the calling thread sleeps on the token count word (the kernel wakes it
 * as it publishes each token), streams tokens to on_token and forwards
 * cancellation to the kernel's cancel word.
 */
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "parts.h"
#include "plan.h"
#include "tsr_emu.h"
#include "tsr_kernel.h"
#include "weight_image.h"

#define CMD_BYTES (4u * TSR_CMD_WORDS)

struct tsr_backend {
    tsr_kstate       *st;          /* the device state                       */
    int               pes;         /* PEs allocated                          */
    int               numa;        /* 1: PEs come from numa_alloc_*          */
    const tsr_part   *part;        /* capacity cap, or NULL                  */
    tsr_link_counters link;
    int               loaded;      /* an image is resident                   */
    uint64_t          image_hash;  /* its content hash                       */
    uint32_t         *watch;       /* the running decode's count word (the
                                      host sleeps on it), or NULL           */
};

/* ------------------------------------------------------------------------ */
/* Commands and link accounting                                               */

static int kfail(int k, const char *what, tsr_err *e) { return tsr_kstatus_err(k, "emu", what, e); }

/* Run one command, charging cmd words + in_bytes h2d and out_bytes d2h to
 * phase. */
static int run(tsr_backend *b, int phase, const uint32_t cmd[TSR_CMD_WORDS], const uint32_t *in,
               uint64_t in_bytes, uint32_t *out, uint64_t out_bytes)
{
    b->link.h2d[phase] += CMD_BYTES + in_bytes;
    b->link.invocations[phase]++;
    int k = tsr_kernel_run(b->st, cmd, in, out, NULL);
    b->link.d2h[phase] += out_bytes;
    return k;
}

static uint32_t f32_bits(float f)
{
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    return w;
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

static void emu_close(tsr_backend *b)
{
    if (!b) return;
    if (b->st) {
        tsr_emu_pool_destroy(b->st->pool);
        for (int p = 0; p < b->pes; p++) {
            if (!b->st->pe[p]) continue;
            if (b->numa) numa_free(b->st->pe[p], sizeof(tsr_pe));
            else free(b->st->pe[p]);
        }
        free(b->st);
    }
    free(b);
}

static int emu_open(const tsr_devspec *spec, tsr_backend **out, tsr_err *e)
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
    b->part = part;
    b->st = aligned_alloc(64, (sizeof(tsr_kstate) + 63u) & ~(size_t)63u);
    if (!b->st) { free(b); return tsr_seterr(e, TSR_ERR_NOMEM, "emu: out of memory"); }
    memset(b->st, 0, sizeof *b->st);
    tsr_kernel_init(b->st, (uint32_t)pes);
    /* Worker threads over the PEs (never more than PEs): worker w owns the
     * PE block [w*P/n, (w+1)*P/n) of every mesh step (emu/pool.c). */
    uint32_t threads = (uint32_t)(spec->threads ? spec->threads : cpus_available());
    if (threads > (uint32_t)pes) threads = (uint32_t)pes;
    b->numa = numa_available() >= 0;
    int nodes = b->numa ? numa_num_configured_nodes() : 1;
    if (threads > 1) {
        int rc = tsr_emu_pool_create(threads, nodes, &b->st->pool);
        if (rc) {
            emu_close(b);
            return tsr_seterr(e, TSR_ERR_NOMEM, "emu: cannot start %u worker threads: %s",
                              threads, strerror(rc));
        }
    }
    b->st->simd = !spec->no_simd;
    /* One allocation per PE, on the NUMA node of the worker that owns it;
     * pages are touched only when written. */
    for (int p = 0; p < pes; p++) {
        void *mem;
        int node = tsr_emu_worker_node(tsr_emu_pe_owner((uint32_t)p, (uint32_t)pes, threads),
                                       threads, nodes);
        if (b->numa)
            mem = nodes > 1 ? numa_alloc_onnode(sizeof(tsr_pe), node)
                            : numa_alloc_local(sizeof(tsr_pe));
        else
            mem = aligned_alloc(4096, sizeof(tsr_pe));
        if (!mem) {
            emu_close(b);
            return tsr_seterr(e, TSR_ERR_NOMEM, "emu: cannot allocate PE %d's %zu bytes", p,
                              sizeof(tsr_pe));
        }
        /* 2 MB pages where the kernel has them: a GEMV streams every
         * tile, and 4 KB pages cost a TLB miss every 4 KB */
        madvise(mem, sizeof(tsr_pe), MADV_HUGEPAGE);
        b->st->pe[p] = mem;
    }
    *out = b;
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Fit and load                                                               */

static int emu_fit(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o,
                   uint64_t *need_bytes, uint64_t *have_bytes, tsr_err *e)
{
    tsr_kconfig kc;
    tsr_wneed nd;
    int rc = tsr_wimage_config(m, o, b->pes, &kc, e);
    if (rc) return rc;
    tsr_wimage_need(&kc, &nd);
    uint64_t have = (uint64_t)b->pes * (TSR_PE_I8_BYTES + 4ull * TSR_PE_F32_WORDS) +
                    4ull * TSR_CTRL_WORDS;
    if (b->part && tsr_part_bytes(b->part) < have) have = tsr_part_bytes(b->part);
    if (need_bytes) *need_bytes = nd.total_bytes;
    if (have_bytes) *have_bytes = have;
    if (b->part && nd.total_bytes > tsr_part_bytes(b->part))
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "%s: needs %llu bytes on-chip (weights %llu + KV cache %llu + "
                          "norms %llu), %s has %llu", m->path,
                          (unsigned long long)nd.total_bytes,
                          (unsigned long long)nd.weight_bytes, (unsigned long long)nd.kv_bytes,
                          (unsigned long long)(4u * nd.ctrl_words), b->part->name,
                          (unsigned long long)tsr_part_bytes(b->part));
    rc = tsr_wimage_check_profile(&kc, e);
    if (rc) {
        /* prefix the file name to the profile's complaint */
        char msg[TSR_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", e ? e->msg : "");
        return tsr_seterr(e, rc, "%s: %s", m->path, msg);
    }
    return TSR_OK;
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

/* After CONFIGURE: "power on" the SRAM the weights will occupy, i.e. let
 * the OS allocate and zero those pages now, as the emulator's part of
 * opening the device, so that streaming measures the transfer itself and
 * not first-touch page faults (on a VM those run near 1 GB/s).  The KV
 * cache is left to fault in as positions are written. */
static void power_on_weights(tsr_backend *b)
{
    tsr_kstate *st = b->st;
    uint32_t P = st->cfg.mesh_rows * st->cfg.mesh_cols;
    for (uint32_t p = 0; p < P; p++) {
        populate(st->pe[p]->w8, st->i8_used[p]);
        populate(st->pe[p]->f32, 4u * (size_t)st->kv_off[p]);
    }
}

static int emu_load(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e)
{
    int rc = emu_fit(b, m, o, NULL, NULL, e);
    if (rc) return rc;
    tsr_kconfig kc;
    tsr_wimage img;
    if ((rc = tsr_wimage_config(m, o, b->pes, &kc, e))) return rc;
    if ((rc = tsr_wimage_build(m, &kc, &img, e))) return rc;
    if (b->loaded && b->image_hash == img.hash) {
        /* The same image (same content hash) is resident: nothing crosses
         * the link; the caller resets the slots it opens. */
        tsr_wimage_free(&img);
        return TSR_OK;
    }
    b->loaded = 0;
    uint32_t cfgw[TSR_KCONFIG_WORDS], fitw[TSR_KFIT_WORDS];
    memcpy(cfgw, &kc, sizeof cfgw);
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, 0, 0 };
    int k = run(b, TSR_PHASE_LOAD, cmd, cfgw, sizeof cfgw, fitw, sizeof fitw);
    if (k) {
        tsr_wimage_free(&img);
        return kfail(k, "configure", e);
    }
    power_on_weights(b);
    uint64_t sent = 0;
    if (o->progress) o->progress(0, img.bytes, o->progress_user);   /* streaming starts */
    for (int i = 0; i < img.n_chunks; i++) {
        const tsr_wchunk *ch = &img.chunks[i];
        uint32_t lc[TSR_CMD_WORDS] = { TSR_OP_LOAD, 0, ch->pe, ch->region, ch->offset,
                                       ch->length, 0, 0 };
        k = run(b, TSR_PHASE_LOAD, lc, ch->data, ch->nbytes, NULL, 0);
        if (k) {
            tsr_wimage_free(&img);
            return kfail(k, "load chunk", e);
        }
        sent += ch->nbytes;
        if (o->progress) o->progress(sent, img.bytes, o->progress_user);
    }
    b->loaded = 1;
    b->image_hash = img.hash;
    tsr_wimage_free(&img);
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Sequences                                                                  */

static int emu_reset(tsr_backend *b, int slot, tsr_err *e)
{
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_RESET, (uint32_t)slot, 0, 0, 0, 0, 0, 0 };
    int k = run(b, TSR_PHASE_PREFILL, cmd, NULL, 0, NULL, 0);
    return k ? kfail(k, "reset", e) : TSR_OK;
}

static int emu_truncate(tsr_backend *b, int slot, int pos, int pending, tsr_err *e)
{
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_TRUNCATE, (uint32_t)slot, (uint32_t)pos,
                                    (uint32_t)pending, 0, 0, 0, 0 };
    int k = run(b, TSR_PHASE_PREFILL, cmd, NULL, 0, NULL, 0);
    return k ? kfail(k, "truncate", e) : TSR_OK;
}

static int emu_prefill(tsr_backend *b, int slot, const int *tokens, int n, tsr_err *e)
{
    if (n <= 0) return TSR_OK;
    uint32_t *in = malloc((size_t)n * sizeof *in);
    if (!in) return tsr_seterr(e, TSR_ERR_NOMEM, "emu: out of memory");
    for (int i = 0; i < n; i++) in[i] = (uint32_t)tokens[i];
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_PREFILL, (uint32_t)slot, (uint32_t)n, 0, 0, 0, 0, 0 };
    int k = run(b, TSR_PHASE_PREFILL, cmd, in, 4u * (uint64_t)n, NULL, 0);
    free(in);
    return k ? kfail(k, "prefill", e) : TSR_OK;
}

/* The decode worker: one kernel run. */
typedef struct decode_job {
    tsr_kstate *st;
    uint32_t    cmd[TSR_CMD_WORDS];
    uint32_t   *out;      /* (1 + n,) the device's output buffer */
    uint32_t    cancel;   /* the kernel's cancel word            */
    int         status;   /* kernel status                       */
    int         done;     /* set (release) when the run returned */
} decode_job;

static void *decode_worker(void *arg)
{
    decode_job *j = arg;
    j->status = tsr_kernel_run(j->st, j->cmd, NULL, j->out, &j->cancel);
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    tsr_emu_wake(&j->out[0]);
    return NULL;
}

static int emu_decode(tsr_backend *b, int slot, int n, const tsr_sampler *s, int *out,
                      int *n_out, tsr_token_fn on_token, void *user, volatile int *cancel,
                      tsr_err *e)
{
    *n_out = 0;
    if (n <= 0) return TSR_OK;
    decode_job j;
    memset(&j, 0, sizeof j);
    j.st = b->st;
    j.out = calloc((size_t)n + 1u, sizeof *j.out);
    if (!j.out) return tsr_seterr(e, TSR_ERR_NOMEM, "emu: out of memory");
    uint32_t cmd[TSR_CMD_WORDS] = {
        TSR_OP_DECODE, (uint32_t)slot, (uint32_t)n, f32_bits(s->temperature),
        f32_bits(s->top_p), (uint32_t)s->seed, (uint32_t)(s->seed >> 32),
        (s->reseed ? TSR_DEC_RESEED : 0u) | (s->ignore_stop ? TSR_DEC_IGNORE_STOP : 0u)
    };
    memcpy(j.cmd, cmd, sizeof cmd);
    b->link.h2d[TSR_PHASE_DECODE] += CMD_BYTES;
    b->link.invocations[TSR_PHASE_DECODE]++;

    __atomic_store_n(&b->watch, &j.out[0], __ATOMIC_RELEASE);
    pthread_t th;
    if (pthread_create(&th, NULL, decode_worker, &j) != 0) {
        __atomic_store_n(&b->watch, NULL, __ATOMIC_RELEASE);
        free(j.out);
        return tsr_seterr(e, TSR_ERR_DEVICE, "emu: cannot start the decode thread");
    }
    /* Watch the count word; hand new tokens to the caller as they appear. */
    uint32_t seen = 0;
    for (;;) {
        int done = __atomic_load_n(&j.done, __ATOMIC_ACQUIRE);
        uint32_t cnt = __atomic_load_n(&j.out[0], __ATOMIC_ACQUIRE);
        while (seen < cnt) {
            int tok = (int)j.out[1u + seen];
            out[seen++] = tok;
            if (on_token && on_token(tok, user)) __atomic_store_n(&j.cancel, 1u, __ATOMIC_RELAXED);
        }
        if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) __atomic_store_n(&j.cancel, 1u, __ATOMIC_RELAXED);
        if (done) break;
        /* Sleep until the kernel publishes a token or tsr_seq_cancel()
         * interrupts us (both wake this word), at most 1 ms: no polling
         * that would steal a core from the kernel's workers.  A wake-up
         * that lands between the loads above and the wait costs at most
         * the 1 ms. */
        tsr_emu_wait_change(&j.out[0], cnt, 1000u);
    }
    pthread_join(th, NULL);
    __atomic_store_n(&b->watch, NULL, __ATOMIC_RELEASE);
    *n_out = (int)seen;
    /* The host read the count word and each token once. */
    b->link.d2h[TSR_PHASE_DECODE] += 4u + 4u * (uint64_t)seen;
    int k = j.status;
    free(j.out);
    return k ? kfail(k, "decode", e) : TSR_OK;
}

/* tsr_seq_cancel(): wake the watcher of a running decode (a futex wake is
 * async-signal-safe; a wake that races the end of the decode hits a word
 * nobody waits on, which is harmless). */
static void emu_interrupt(tsr_backend *b)
{
    uint32_t *w = __atomic_load_n(&b->watch, __ATOMIC_ACQUIRE);
    if (w) tsr_emu_wake(w);
}

/* ------------------------------------------------------------------------ */
/* Debug reads and counters                                                   */

static int emu_read_logits(tsr_backend *b, float *logits, int n, tsr_err *e)
{
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_READ_LOGITS, 0, (uint32_t)n, 0, 0, 0, 0, 0 };
    uint32_t *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf) return tsr_seterr(e, TSR_ERR_NOMEM, "emu: out of memory");
    int k = run(b, TSR_PHASE_DEBUG, cmd, NULL, 0, buf, 4u * (uint64_t)(n > 0 ? n : 0));
    if (!k) memcpy(logits, buf, (size_t)(n > 0 ? n : 0) * sizeof *logits);
    free(buf);
    return k ? kfail(k, "read logits", e) : TSR_OK;
}

static void emu_link_counters(tsr_backend *b, tsr_link_counters *c) { *c = b->link; }

static int emu_kernel_counters(tsr_backend *b, void *buf, size_t len, tsr_err *e)
{
    tsr_kcounters kc;
    uint32_t words = (uint32_t)(sizeof kc / 4u);
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_READ_COUNTERS, 0, words, 0, 0, 0, 0, 0 };
    int k = run(b, TSR_PHASE_DEBUG, cmd, NULL, 0, (uint32_t *)(void *)&kc, sizeof kc);
    if (k) return kfail(k, "read counters", e);
    /* projected at the part's clock (300 MHz, the Alveo platforms' default,
     * without part=) */
    tsr_kcounters_text(&kc, TSR_MAX_PES, TSR_PROFILE_NAME, &b->st->cfg,
                       b->part && b->part->clock_mhz > 0 ? b->part->clock_mhz : 300, buf, len);
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */

const tsr_backend_iface tsr_backend_emu = {
    .name = "emu",
    .open = emu_open,
    .close = emu_close,
    .fit = emu_fit,
    .load = emu_load,
    .reset = emu_reset,
    .truncate = emu_truncate,
    .prefill = emu_prefill,
    .decode = emu_decode,
    .read_logits = emu_read_logits,
    .link_counters = emu_link_counters,
    .kernel_counters = emu_kernel_counters,
    .interrupt = emu_interrupt,
};
