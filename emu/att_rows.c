/*
 * att_rows.c - the attention PE's multiply-add pass (kernels/attention.c
 * pe_att_mac) as plain nested loops the host compiler vectorizes (see
 * tsr_emu.h).  The kernel's loop is flattened and, with one accumulator per
 * element, padded for the hardware's II=1 schedule; here the same fp32
 * operations run in the same order per element -- acc[o % parts][j] adds
 * s[o] * row o's element j for o ascending, each partial from 0 -- without
 * the idle slots, so the results are bit-identical.  (Built without
 * -ffp-contract: no FMA.)
 */
#include <stddef.h>

#include "tsr_emu.h"
#include "tsr_half.h"

/* Row buffers for the converted rows: the longest row (positions or head
 * dimensions) a pass reads. */
#define ROW_MAX 8192u

/* Built for AVX-512, AVX2 and the baseline, picked at load time (GCC's
 * target_clones): the same operations, wider lanes (C11 mode: no FMA
 * contraction in any clone).  The clones are static: GCC gives the ifunc of
 * an extern target_clones function default visibility whatever
 * -fvisibility says, which would export it from libtessera.so.  Not under
 * ASan or TSan: the clones' ifunc resolver runs during relocation, before
 * the sanitizer's runtime is up, and its instrumented entry crashes there. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define ATT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATT_CLONES
#endif

ATT_CLONES
static void att_mac(const float *kv, uint32_t stride, const float *s, uint32_t no, uint32_t nj,
                    uint32_t parts, float *acc, uint32_t acc_stride)
{
    for (uint32_t o = 0; o < no; o++) {
        const float *k = kv + (size_t)o * stride;   /* (nj,) row o */
        float *a = acc + (size_t)(o % parts) * acc_stride, sv = s[o];
        if (o < parts)
            for (uint32_t j = 0; j < nj; j++) a[j] = 0.0f + sv * k[j];
        else
            for (uint32_t j = 0; j < nj; j++) a[j] = a[j] + sv * k[j];
    }
}

void tsr_emu_att_mac(const float *kv, uint32_t stride, const float *s, uint32_t no, uint32_t nj,
                     uint32_t parts, float *acc, uint32_t acc_stride)
{
    att_mac(kv, stride, s, no, nj, parts, acc, acc_stride);
}

/* A converted row at a time, then the fp32 loop's own operations. */
#define ATT_MAC_CONVERTED(CONVERT)                                                        \
    float row[ROW_MAX];                                                                   \
    for (uint32_t j0 = 0; j0 < nj; j0 += ROW_MAX) {                                       \
        uint32_t n = nj - j0 < ROW_MAX ? nj - j0 : ROW_MAX;                               \
        for (uint32_t o = 0; o < no; o++) {                                               \
            const __typeof__(kv) k = kv + (size_t)o * stride + j0;                        \
            for (uint32_t j = 0; j < n; j++) row[j] = CONVERT(k[j]);                      \
            float *a = acc + (size_t)(o % parts) * acc_stride + j0, sv = s[o];            \
            if (o < parts)                                                                \
                for (uint32_t j = 0; j < n; j++) a[j] = 0.0f + sv * row[j];               \
            else                                                                          \
                for (uint32_t j = 0; j < n; j++) a[j] = a[j] + sv * row[j];               \
        }                                                                                 \
    }

#define I8_TO_F32(v) ((float)(v))

void tsr_emu_att_mac_f16(const uint16_t *kv, uint32_t stride, const float *s, uint32_t no,
                         uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
    ATT_MAC_CONVERTED(tsr_f32_from_f16)
}

void tsr_emu_att_mac_i8(const int8_t *kv, uint32_t stride, const float *s, uint32_t no,
                        uint32_t nj, uint32_t parts, float *acc, uint32_t acc_stride)
{
    ATT_MAC_CONVERTED(I8_TO_F32)
}
