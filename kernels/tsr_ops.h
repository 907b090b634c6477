/*
 * tsr_ops.h - the kernel's building blocks, for the kernel sources and the
 * kernel unit tests (tests/test_kernel_ops.c).  Not for driver/: it talks to
 * the kernel through tsr_kernel.h commands only.
 *
 * Numerics follow the project's numerics contract (llama2.c run.c forward()
 * for F32; per-row Q8_0 groups of G for weights and GEMV inputs).
 */
#ifndef TSR_OPS_H
#define TSR_OPS_H

#include <stdint.h>

#include "tsr_kernel.h"

/* ---- vector ops on the controller (ops.c) ------------------------------ */

/* RMSNorm: o = w * (x / sqrt(mean(x^2) + eps)); x, w, o (n,); o may be x. */
void tsr_rmsnorm(float *o, const float *x, const float *w, uint32_t n, float eps);

/* RoPE, run.c style (adjacent pairs): rotate q (dim,) and, for i < kv_dim,
 * k (kv_dim,) by pos * theta^(-(i % head_size) / head_size). */
void tsr_rope(float *q, float *k, uint32_t dim, uint32_t kv_dim, uint32_t head_size,
              uint32_t pos, float theta);

/* In-place softmax of x (n,), n >= 1: subtract the max, expf, divide by sum. */
void tsr_softmax(float *x, uint32_t n);

/* SwiGLU: hb[i] = silu(hb[i]) * hb2[i], silu(a) = a / (1 + expf(-a)); (n,). */
void tsr_swiglu(float *hb, const float *hb2, uint32_t n);

/* Residual add: x (n,) += d (n,). */
void tsr_residual(float *x, const float *d, uint32_t n);

/* Q8 group rule on x (n,) in groups of G (last group short): s[g] =
 * amax/127, q = (int8)roundf(x/s) (0 when s == 0).  q gets ceil(n/G)*G
 * entries (zeros past n), s gets ceil(n/G). */
void tsr_quantize(const float *x, uint32_t n, uint32_t G, int8_t *q, float *s);

/* Index of the first maximum of v (n,), n >= 1. */
uint32_t tsr_argmax(const float *v, uint32_t n);

/* ---- sampler (sampler.c) ----------------------------------------------- */

/* xorshift64* as llama2.c run.c's random_u32: state ^= state >> 12,
 * ^= << 25, ^= >> 27, return (state * 0x2545F4914F6CDD1D) >> 32.
 * state must not be 0. */
uint32_t tsr_rng_u32(uint64_t *state);
/* (tsr_rng_u32 >> 8) / 2^24, in [0, 1). */
float tsr_rng_f32(uint64_t *state);

/* Sample a token from logits (n,), which is overwritten (probabilities).
 * temperature <= 0 or top_p <= 0: argmax (first max).  Otherwise softmax of
 * logits / temperature, one coin from rng, then multinomial (top_p >= 1) or
 * nucleus sampling as llama2.c's sample_topp: candidates with p >= (1 -
 * top_p) / (n - 1), taken in descending p (ties: lower id first) until the
 * cumulative p exceeds top_p.  The descending order comes from a bounded
 * binary heap (no recursion).  cand_p, cand_i: (n,) scratch. */
int32_t tsr_sample(float *logits, uint32_t n, float temperature, float top_p, uint64_t *rng,
                   float *cand_p, int32_t *cand_i);

/* ---- mesh operations (mesh.c) ------------------------------------------ */

/* W (d, n) @ x (n,) -> y (d,) for matrix mat of the configured layout:
 * quantize x (Q8) or pad it (F32), broadcast slice c to the PEs of mesh
 * column c, every PE multiplies its tile into its psum, a binary adder tree
 * per mesh row reduces the C partial sums, the controller gathers y.
 * Counts MACs and fabric bytes. */
void tsr_mesh_gemv(tsr_kstate *st, uint32_t mat, const float *x, float *y);

/* q, k, v of layer l: st->q (dim,), st->k, st->v (kv_dim,) = Wq, Wk, Wv @ x
 * (dim,), three tsr_mesh_gemv on one input (the emulator prepares it once
 * and runs the three as one worker step; same results and counters). */
void tsr_mesh_gemv_qkv(tsr_kstate *st, uint32_t l, const float *x);

/* The FFN's up projections of layer l and SwiGLU (after Shazeer 2020, "GLU
 * Variants Improve Transformer"): st->hb2 = W3 @ x, st->hb = silu(W1 @ x) *
 * st->hb2, all (hidden,), x (dim,).  The emulator runs both GEMVs as one
 * worker step, each worker applying SwiGLU to the rows it reduced. */
void tsr_mesh_ffn_up(tsr_kstate *st, uint32_t l, const float *x);

/* x (dim,) = row `token` of the embedding table, gathered from the PEs of its
 * row block (dequantized in Q8 mode: q * scale). */
void tsr_mesh_embed(tsr_kstate *st, uint32_t token, float *x);

/* ---- attention (attention.c) ------------------------------------------- */

/* For layer l of slot at position pos: send st->k, st->v (kv_dim,) to the
 * PEs that own each KV head and store them at pos, then every owner runs the
 * query heads of its KV head (GQA) over positions 0..pos, writing st->xb
 * (dim,).  st->q (dim,) is broadcast to the owners. */
void tsr_attention(tsr_kstate *st, uint32_t slot, uint32_t l, uint32_t pos);

/* ---- forward pass (forward.c) ------------------------------------------ */

/* Run token at pos through the model for slot (its KV cache at pos gets the
 * token's keys/values).  want_logits: also the final norm and classifier
 * into st->logits. */
void tsr_forward(tsr_kstate *st, uint32_t slot, uint32_t token, uint32_t pos, int want_logits);

#endif
