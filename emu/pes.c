/*
 * pes.c - a mesh step of the kernel on the emulator's worker pool (see
 * tsr_emu.h, kernels/tsr_hls.h TSR_RUN_PES): each PE's task is one item,
 * worker w taking its own PE block [w*P/n, (w+1)*P/n) first.  Tasks touch
 * only their own PE's memories (and a tree partner's, read-only), so the
 * result is the same whichever thread runs one.  The step's cycles are the
 * slowest PE's, as the hardware's unrolled PE loop takes.
 */
#include "tsr_ops.h"
#include "tsr_emu.h"

/* Below this many multiply-accumulates a step runs on the calling thread:
 * waking the workers costs more than it saves. */
#define PARALLEL_MIN_WORK (16u * 1024u)

typedef struct pes_step {
    tsr_kstate        *st;
    tsr_emu_pe_task    fn;
    const tsr_pe_job  *job;
    uint32_t           P, k;
} pes_step;

static void run_pe(void *ctx, uint32_t p)
{
    const pes_step *s = ctx;
    s->st->pe_cy[p] = s->fn(s->st, p, s->job, 1u, s->k);
}

void tsr_emu_pool_share(tsr_emu_pool *pool, uint32_t n, uint64_t work, tsr_emu_item fn, void *ctx)
{
    tsr_emu_pool_run(pool, n, work < PARALLEL_MIN_WORK ? 1u : tsr_emu_pool_size(pool), fn, ctx);
}

uint32_t tsr_emu_run_pes(tsr_kstate *st, uint32_t P, tsr_emu_pe_task fn, const tsr_pe_job *job,
                         uint32_t k)
{
    pes_step s = { st, fn, job, P, k };
    tsr_emu_pool_share(st->pool, P, job->work, run_pe, &s);
    uint32_t worst = 0;
    for (uint32_t p = 0; p < P; p++) {
#ifdef TSR_SERIAL_PES
        worst += st->pe_cy[p];   /* the PEs one after another (tsr_hls.h) */
#else
        if (st->pe_cy[p] > worst) worst = st->pe_cy[p];
#endif
    }
    return worst;
}
