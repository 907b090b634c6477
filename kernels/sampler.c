/*
 * sampler.c - token sampling on the device, so no logits cross the host link.
 *
 * Dataflow: logits (vocab,) -> [greedy: argmax] | [softmax(logits / T) ->
 * coin from the slot's xorshift64* RNG -> multinomial, or nucleus: cutoff
 * filter -> bounded heap yields candidates in descending probability until
 * their sum passes top_p -> pick by the coin] -> token id.
 * Semantics after llama2.c run.c (sample_argmax, sample_mult, sample_topp).
 */
#include "tsr_hls.h"

/* ------------------------------------------------------------------------ */
/* RNG                                                                        */

uint32_t tsr_rng_u32(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
}

float tsr_rng_f32(uint64_t *state)
{
    return (float)(tsr_rng_u32(state) >> 8) / 16777216.0f;
}

/* ------------------------------------------------------------------------ */
/* Candidate heap: a max-heap by (probability descending, id ascending)      */

/* a ranks before b. */
static int cand_before(const float *p, const int32_t *id, uint32_t a, uint32_t b)
{
    return p[a] > p[b] || (p[a] == p[b] && id[a] < id[b]);
}

static void cand_swap(float *p, int32_t *id, uint32_t a, uint32_t b)
{
    float tp = p[a];
    int32_t ti = id[a];
    p[a] = p[b];
    id[a] = id[b];
    p[b] = tp;
    id[b] = ti;
}

/* Restore the heap property below node i of a heap of n entries; a path is at
 * most log2(n) < TSR_HEAP_DEPTH steps long. */
static void cand_sift_down(float *p, int32_t *id, uint32_t i, uint32_t n)
{
heap_sift:
    for (uint32_t depth = 0; depth < TSR_HEAP_DEPTH; depth++) {
        uint32_t l = 2u * i + 1u, r = l + 1u, best = i;
        if (l < n && cand_before(p, id, l, best)) best = l;
        if (r < n && cand_before(p, id, r, best)) best = r;
        if (best == i) break;
        cand_swap(p, id, i, best);
        i = best;
    }
}

/* ------------------------------------------------------------------------ */
/* Samplers                                                                   */

/* Multinomial: first i with coin < cdf(i); the last token on rounding.
 * *it gets the positions scanned (the cdf is one recurrence: II =
 * TSR_FADD_LAT). */
static int32_t sample_mult(const float *probs, uint32_t n, float coin, uint32_t *it)
{
#pragma HLS INLINE
    float cdf = 0.0f;
mult_scan:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=TSR_FADD_LAT
        cdf += probs[i];
        if (coin < cdf) {
            *it = i + 1u;
            return (int32_t)i;
        }
    }
    *it = n;
    return (int32_t)n - 1;
}

/* *cy gets its loops' cycles: the filter pass, heapify and pops (each a
 * sift of up to log2(n0) compare-swap levels), the pick. */
static int32_t sample_topp(const float *probs, uint32_t n, float top_p, float coin,
                           float *cp, int32_t *ci, uint32_t *cy)
{
#pragma HLS INLINE
    /* Tokens below the cutoff cannot be in the nucleus (llama2.c's filter). */
    float cutoff = n > 1 ? (1.0f - top_p) / (float)(n - 1) : 0.0f;
    uint32_t n0 = 0;
topp_filter:
    for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=1
        if (probs[i] >= cutoff) {
            cp[n0] = probs[i];
            ci[n0] = (int32_t)i;
            n0++;
        }
    }
    *cy = TSR_CY(tsr_cy_loop(n, 1u, TSR_D_CMP));
    if (n0 == 0) {
        *cy += TSR_CY(tsr_cy_loop(n, TSR_D_CMP, 0u));
        return (int32_t)tsr_argmax(probs, n);
    }
    uint32_t sift = TSR_CY((tsr_cy_log2(n0) + 1u) * 2u * TSR_D_CMP);   /* one sift-down */
    (void)sift;
    *cy += TSR_CY((n0 / 2u) * sift);
topp_heapify:
    for (uint32_t k = n0 / 2u; k > 0; k--) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=TSR_LIT_HALF_VOCAB
        cand_sift_down(cp, ci, k - 1u, n0);
    }
    /* Pop the largest to the end of the heap array, one at a time: after m
     * pops, cp[n0-1], cp[n0-2], ... cp[n0-m] are the m largest in order. */
    float cum = 0.0f;
    uint32_t taken = 0;
topp_pop:
    for (uint32_t m = 0; m < n0; m++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
        uint32_t last = n0 - 1u - m;
        cand_swap(cp, ci, 0, last);
        cand_sift_down(cp, ci, 0, last);
        cum += cp[last];
        taken = m + 1u;
        if (cum > top_p) break;
    }
    *cy += TSR_CY(taken * sift + tsr_cy_loop(taken, TSR_FADD_LAT, 0u) * 2u);
    float r = coin * cum;
    float cdf = 0.0f;
topp_pick:
    for (uint32_t m = 0; m < taken; m++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
        cdf += cp[n0 - 1u - m];
        if (r < cdf) return ci[n0 - 1u - m];
    }
    return ci[n0 - taken];
}

int32_t tsr_sample(float *logits, uint32_t n, float temperature, float top_p, uint64_t *rng,
                   float *cand_p, int32_t *cand_i, uint32_t *cy)
{
#pragma HLS INLINE
    uint32_t c = 0, it = 0;
    int32_t tok;
    if (temperature <= 0.0f || top_p <= 0.0f) {
        tok = (int32_t)tsr_argmax(logits, n);
        c = TSR_CY(tsr_cy_loop(n, TSR_D_CMP, 0u));
    } else {
sample_temp:
        for (uint32_t i = 0; i < n; i++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=TSR_MAX_VOCAB
#pragma HLS PIPELINE II=1
            logits[i] /= temperature;
        }
        tsr_softmax(logits, n);
        /* temperature, the softmax's max (a compare recurrence), exp, sum,
         * normalise */
        c = TSR_CY(tsr_cy_loop(n, 1u, TSR_D_DIV) + tsr_cy_loop(n, TSR_D_CMP, 0u) +
                   tsr_cy_loop(n, 1u, TSR_D_EXP) + tsr_cy_sum(n) + tsr_cy_loop(n, 1u, TSR_D_DIV));
        float coin = tsr_rng_f32(rng);
        if (top_p >= 1.0f) {
            tok = sample_mult(logits, n, coin, &it);
            c += TSR_CY(tsr_cy_loop(it, TSR_FADD_LAT, 0u));
        } else {
            uint32_t tc = 0;
            tok = sample_topp(logits, n, top_p, coin, cand_p, cand_i, &tc);
            c += tc;
        }
    }
    if (cy) *cy = c;
    return tok;
}
