/*
 * att_rows.c - the attention passes of kernels/attention.c as plain nested
 * loops the host compiler vectorizes (see tsr_emu.h).  The kernel's loops
 * are flattened and padded for the hardware's II=1 schedule (a pass per
 * head dimension padded to TSR_FADD_LAT words); here the same fp32
 * operations run in the same order per element -- a score adds q[i] *
 * K[i][t] for i ascending, an output adds att[t] * V[t][i] for t ascending,
 * starting from 0 -- without the idle slots, so the results are
 * bit-identical.  (Built without -ffp-contract: no FMA.)
 */
#include <stddef.h>

#include "tsr_emu.h"

void tsr_emu_att_scores(const float *kt, uint32_t sl, const float *q, uint32_t hs, uint32_t nl,
                        float *att)
{
    for (uint32_t t = 0; t < nl; t++) att[t] = 0.0f;
    for (uint32_t i = 0; i < hs; i++) {
        const float *k = kt + (size_t)i * sl;   /* (nl,) row i of K^T */
        float qi = q[i];
        for (uint32_t t = 0; t < nl; t++) att[t] = att[t] + qi * k[t];
    }
}

void tsr_emu_att_values(const float *v, uint32_t hs, const float *att, uint32_t nl, float *out)
{
    for (uint32_t i = 0; i < hs; i++) out[i] = 0.0f;
    for (uint32_t t = 0; t < nl; t++) {
        const float *vt = v + (size_t)t * hs;   /* (hs,) row t of V */
        float a = att[t];
        for (uint32_t i = 0; i < hs; i++) out[i] = out[i] + a * vt[i];
    }
}
