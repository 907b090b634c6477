/*
 * pool.c - the emulator's worker threads (see tsr_emu.h).
 *
 * A step is n items (PEs) in one block per worker, worker w's block
 * [w*n/nw, (w+1)*n/nw) (the PEs whose memories it placed on its NUMA
 * node).  Each block has a claim word, (step << 32) | next item: a worker
 * takes an item by compare-and-swap, so no item runs twice and a claim
 * from a finished step fails.  A worker takes its own block's items
 * first, then whatever is left of the others'; the caller publishes the
 * step by bumping `gen` (release), takes part as worker 0 and returns when
 * `remaining` reaches 0.  It never waits for a worker that has not
 * claimed anything: a worker the OS has not scheduled (a busy machine) just
 * leaves its block to the others, so a step on a loaded machine costs
 * about what it costs on one thread (a worker counts its items off once,
 * after its last claim, so one preempted between them holds the step
 * until it runs again, as one preempted inside an item always did).  Idle workers spin briefly, then sleep on the
 * futex word `gen`; `sleeping` lets the caller skip the wake-up syscall
 * when every worker is still spinning (the usual case between the GEMVs
 * of a token).
 *
 * Publication, in C11 terms.  A worker that acquired gen == g may still be
 * inside take_items(g) while the caller sets up step g+1 (its step is
 * over, every block taken by others), reading end[] and the claim words as
 * the caller rewrites them.  What must hold: a successful claim of (g, i)
 * has i below step g's end of that block, so that it is one of step g's n
 * items.  So the caller first retags the claim words of the new step, then
 * stores end[b] with release; the worker loads end[b] with acquire before
 * its claims.  If that load reads step h's end (h > g), step h's retag of
 * claim[b] happens before the worker's claims, and by coherence they see a
 * word tagged h or later and fail; otherwise it read step g's own end
 * (gen's acquire rules out older ones; a block past step g's nblk has no
 * word tagged g).  Given that, fn and ctx need no atomics: a worker reads
 * them after acquiring gen == g (stored after them) and before its release
 * decrement of `remaining`, which the caller's acquire load of 0
 * synchronizes with (the decrements are RMWs: one release sequence) before
 * it writes the next step's; ThreadSanitizer checks the protocol through
 * them.  Stored the other way round, a late worker could pair step g's
 * exhausted claim word with step g+1's larger end (the kernel alternates
 * steps over P and att_pes PEs), claim a phantom item, run it with step
 * g+1's fn and ctx as the caller wrote them, and count it off step g+1's
 * `remaining`: an item run twice, a step returning before its last item.
 * One caller per pool: the emulator's device thread.
 */
#include <errno.h>
#include <linux/futex.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tsr_emu.h"

/* Spins (x86 `pause`, ~20-140 cycles each) before a waiting thread sleeps
 * on a futex: a worker between steps (a few tens of microseconds; the
 * steps of one token follow each other closely), and the caller waiting
 * for the items others claimed (shorter). */
#define WORKER_SPINS 4000
#define CALLER_SPINS 1000
/* With more workers than CPUs a spinning thread only keeps the thread it
 * waits for off the CPU: such a pool never spins, it sleeps at once. */
#define MAX_WORKERS  256

/* The words written in a step go on lines of their own, two cache lines
 * apart (the adjacent-line prefetcher pairs lines): each claim word; the
 * finished count (with caller_waits); the step word (with sleeping); and
 * the step's description, which only the caller writes.  A worker
 * claiming from its own block keeps its claim word in its own cache, and
 * the spinners' reads of `gen` do not bounce the line the finished items
 * are counted on. */
#define POOL_LINE 128

typedef struct block_claim {
    _Alignas(POOL_LINE) uint64_t word;   /* (gen << 32) | the block's next item */
} block_claim;

struct tsr_emu_pool {
    uint32_t     n;           /* workers, the caller included             */
    int          nodes;       /* NUMA nodes (1: no placement)             */
    pthread_t   *threads;     /* (n - 1,) workers 1..n-1                  */
    uint32_t     started;     /* threads created                          */
    int          worker_spins, caller_spins;   /* 0 when oversubscribed  */
    /* the current step, written by the caller only */
    _Alignas(POOL_LINE) tsr_emu_item fn;
    void        *ctx;
    uint32_t     nblk;        /* blocks (= workers taking part)           */
    uint32_t     end[MAX_WORKERS];   /* block b's items end here          */
    block_claim  claim[MAX_WORKERS];
    _Alignas(POOL_LINE) uint32_t remaining;   /* items not finished; futex word */
    uint32_t     caller_waits; /* 1: the caller sleeps on `remaining`     */
    _Alignas(POOL_LINE) uint32_t gen;   /* step number; futex word        */
    uint32_t     sleeping;    /* workers inside FUTEX_WAIT                */
    uint32_t     stop;
};

typedef struct worker_arg {
    tsr_emu_pool *pool;
    uint32_t      w;
} worker_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void futex_wait(uint32_t *word, uint32_t expect)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, NULL, NULL, 0);
}

static void futex_wake_all(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

void tsr_emu_publish(uint32_t *word, uint32_t v)
{
    __atomic_store_n(word, v, __ATOMIC_RELEASE);
    futex_wake_all(word);
}

void tsr_emu_wake(uint32_t *word) { futex_wake_all(word); }

void tsr_emu_wait_change(uint32_t *word, uint32_t old, uint32_t timeout_us)
{
    struct timespec ts = { (time_t)(timeout_us / 1000000u), (long)(timeout_us % 1000000u) * 1000L };
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, old, &ts, NULL, 0);
}

/* Take and run step g's items, block `first` first, then the others in
 * turn; returns when every block is taken. */
static void take_items(tsr_emu_pool *pool, uint32_t g, uint32_t first)
{
    /* nblk and end[] may already be a later step's when this worker is
     * late; the claim word's step number decides.  end[b] is acquired: a
     * later step's end comes with that step's retagged claim word, which
     * fails the claims below (the head comment) */
    uint32_t nb = __atomic_load_n(&pool->nblk, __ATOMIC_RELAXED), done = 0;
    for (uint32_t k = 0; k < nb; k++) {
        uint32_t b = (first + k) % nb, end = __atomic_load_n(&pool->end[b], __ATOMIC_ACQUIRE);
        uint64_t *claim = &pool->claim[b].word, c = __atomic_load_n(claim, __ATOMIC_ACQUIRE);
        while ((uint32_t)(c >> 32) == g && (uint32_t)c < end) {
            if (!__atomic_compare_exchange_n(claim, &c, c + 1u, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE))
                continue;   /* c now holds the current word */
            pool->fn(pool->ctx, (uint32_t)c);
            c++;
            done++;
        }
    }
    /* the items this thread ran, counted off at once: every block is
     * taken, so nothing is left for this thread to do in step g.  seq_cst
     * pairs with the caller's store of caller_waits then read of
     * remaining (as `sleeping` below) */
    if (done && __atomic_sub_fetch(&pool->remaining, done, __ATOMIC_SEQ_CST) == 0u &&
        __atomic_load_n(&pool->caller_waits, __ATOMIC_SEQ_CST))
        futex_wake_all(&pool->remaining);
}

static void *worker_main(void *arg)
{
    tsr_emu_pool *pool = ((worker_arg *)arg)->pool;
    uint32_t w = ((worker_arg *)arg)->w;
    free(arg);
    if (pool->nodes > 1) numa_run_on_node(tsr_emu_worker_node(w, pool->n, pool->nodes));
    uint32_t seen = 0;
    for (;;) {
        uint32_t g;
        int spins = 0;
        while ((g = __atomic_load_n(&pool->gen, __ATOMIC_ACQUIRE)) == seen) {
            if (spins++ < pool->worker_spins) {
                cpu_relax();
                continue;
            }
            /* seq_cst pairs with the caller's bump of gen then read of
             * sleeping: either it sees us sleeping, or we see the new gen
             * (FUTEX_WAIT returns at once when gen != seen) */
            __atomic_add_fetch(&pool->sleeping, 1u, __ATOMIC_SEQ_CST);
            futex_wait(&pool->gen, seen);
            __atomic_sub_fetch(&pool->sleeping, 1u, __ATOMIC_SEQ_CST);
            spins = 0;
        }
        seen = g;
        if (__atomic_load_n(&pool->stop, __ATOMIC_ACQUIRE)) break;
        /* the step's fields were written before gen (acquired above); a
         * step that is already over fails every claim */
        if (w < __atomic_load_n(&pool->nblk, __ATOMIC_RELAXED)) take_items(pool, g, w);
    }
    return NULL;
}

uint32_t tsr_emu_pool_size(const tsr_emu_pool *pool) { return pool ? pool->n : 1u; }

void tsr_emu_pool_destroy(tsr_emu_pool *pool)
{
    if (!pool) return;
    __atomic_store_n(&pool->stop, 1u, __ATOMIC_RELEASE);
    __atomic_add_fetch(&pool->gen, 1u, __ATOMIC_SEQ_CST);
    futex_wake_all(&pool->gen);
    for (uint32_t i = 0; i < pool->started; i++) pthread_join(pool->threads[i], NULL);
    free(pool->threads);
    free(pool);
}

int tsr_emu_pool_create(uint32_t n, int nodes, tsr_emu_pool **out)
{
    *out = NULL;
    if (n == 0 || n > MAX_WORKERS) return EINVAL;
    size_t bytes = sizeof(tsr_emu_pool);   /* a multiple of its alignment, POOL_LINE */
    tsr_emu_pool *pool = aligned_alloc(POOL_LINE, bytes);
    if (!pool) return ENOMEM;
    memset(pool, 0, bytes);
    pool->n = n;
    pool->nodes = nodes > 1 ? nodes : 1;
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    int spin = (int)n <= cpus;
    pool->worker_spins = spin ? WORKER_SPINS : 0;
    pool->caller_spins = spin ? CALLER_SPINS : 0;
    if (n > 1 && !(pool->threads = calloc(n - 1u, sizeof *pool->threads))) {
        free(pool);
        return ENOMEM;
    }
    for (uint32_t w = 1; w < n; w++) {
        worker_arg *a = malloc(sizeof *a);
        int rc = a ? 0 : ENOMEM;
        if (a) {
            a->pool = pool;
            a->w = w;
            rc = pthread_create(&pool->threads[w - 1u], NULL, worker_main, a);
            if (rc) free(a);
        }
        if (rc) {
            tsr_emu_pool_destroy(pool);
            return rc;
        }
        pool->started++;
    }
    *out = pool;
    return 0;
}

void tsr_emu_pool_run(tsr_emu_pool *pool, uint32_t n, uint32_t nw, tsr_emu_item fn, void *ctx)
{
    if (nw > n) nw = n;
    if (!pool || nw <= 1 || pool->n == 1) {
        for (uint32_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    if (nw > pool->n) nw = pool->n;
    /* no item of the previous step is left (remaining reached 0), but a
     * late worker may still be looking at its claim words: retag them
     * first, so none can be claimed against this step's end[] (released
     * after them) or run with this step's fn and ctx (the head comment).
     * No worker takes a word tagged g before it acquires gen == g. */
    uint32_t g = pool->gen + 1u;
    for (uint32_t b = 0; b < nw; b++)
        __atomic_store_n(&pool->claim[b].word, ((uint64_t)g << 32) | (uint64_t)b * n / nw,
                         __ATOMIC_RELAXED);
    pool->fn = fn;
    pool->ctx = ctx;
    __atomic_store_n(&pool->nblk, nw, __ATOMIC_RELAXED);
    for (uint32_t b = 0; b < nw; b++)
        __atomic_store_n(&pool->end[b], (uint32_t)((uint64_t)(b + 1u) * n / nw), __ATOMIC_RELEASE);
    __atomic_store_n(&pool->remaining, n, __ATOMIC_RELAXED);
    __atomic_store_n(&pool->gen, g, __ATOMIC_SEQ_CST);   /* publishes the step */
    if (__atomic_load_n(&pool->sleeping, __ATOMIC_SEQ_CST)) futex_wake_all(&pool->gen);
    take_items(pool, g, 0);
    int spins = 0;
    uint32_t r;
    while ((r = __atomic_load_n(&pool->remaining, __ATOMIC_ACQUIRE)) != 0u) {
        if (spins++ < pool->caller_spins) {
            cpu_relax();
            continue;
        }
        __atomic_store_n(&pool->caller_waits, 1u, __ATOMIC_SEQ_CST);
        r = __atomic_load_n(&pool->remaining, __ATOMIC_SEQ_CST);
        if (r != 0u) futex_wait(&pool->remaining, r);
        __atomic_store_n(&pool->caller_waits, 0u, __ATOMIC_RELAXED);
        spins = 0;
    }
}
