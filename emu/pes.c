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

uint32_t tsr_emu_run_pes(tsr_kstate *st, uint32_t P, tsr_emu_pe_task fn, const tsr_pe_job *job,
                         uint32_t k)
{
    pes_step s = { st, fn, job, P, k };
    uint32_t nw = tsr_emu_pool_size(st->pool);
    if (job->work < TSR_EMU_PARALLEL_MIN_WORK) nw = 1;
    tsr_emu_pool_run(st->pool, P, nw, run_pe, &s);
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
