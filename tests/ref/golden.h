/*
 * golden.h - the golden reference forward pass (test code).
 *
 * A plain fp32 transformer forward pass over a tsr_checkpoint, one token at a
 * time, written to be obviously correct rather than fast.  Every kernel and
 * backend is checked against it.  It implements the project's numerics
 * contract (the one the kernels follow) exactly:
 *   - GOLDEN_F32: llama2.c run.c forward() (same operations, same order of
 *     float additions), so greedy tokens match run.c's output token for token.
 *   - GOLDEN_Q8: Q8_0 with group size G: every matrix is quantized per row in
 *     groups of G columns at build time (the last group of a row is short when
 *     G does not divide the row), and the input vector of every matrix
 *     multiply is quantized the same way (after llama2.c runq.c, but per row).
 *
 * Test code only: it shares nothing with kernels/.  Not thread-safe per
 * instance (the run state is inside golden); separate instances are
 * independent.
 */
#ifndef TSR_GOLDEN_H
#define TSR_GOLDEN_H

#include <stdint.h>

#include "model.h"

/* ------------------------------------------------------------------------ */
/* Weights                                                                    */

enum { GOLDEN_F32 = 0, GOLDEN_Q8 = 1 };

/* One weight matrix W (rows, cols), in exactly one of two forms. */
typedef struct golden_mat {
    int     rows, cols;
    int     group;     /* Q8 group size along a row; 0 for F32              */
    int     n_groups;  /* groups per row: ceil(cols / group); 0 for F32     */
    float  *f;         /* (rows, cols) fp32 values; NULL in Q8 form          */
    int8_t *q;         /* (rows, cols) int8 values; NULL in F32 form         */
    float  *s;         /* (rows, n_groups) fp32 scales; NULL in F32 form     */
} golden_mat;

/* The model's weights for one layer, in golden form. */
typedef struct golden_layer {
    float     *rms_att;   /* (dim,) always fp32 */
    float     *rms_ffn;   /* (dim,) always fp32 */
    golden_mat wq;        /* (dim, dim)         */
    golden_mat wk;        /* (kv_dim, dim)      */
    golden_mat wv;        /* (kv_dim, dim)      */
    golden_mat wo;        /* (dim, dim)         */
    golden_mat w1;        /* (hidden_dim, dim)  */
    golden_mat w2;        /* (dim, hidden_dim)  */
    golden_mat w3;        /* (hidden_dim, dim)  */
} golden_layer;

/* ------------------------------------------------------------------------ */
/* The reference model plus its run state                                     */

typedef struct golden {
    tsr_config    cfg;        /* copied from the model                     */
    int           mode;       /* GOLDEN_F32 or GOLDEN_Q8                   */
    int           group;      /* Q8 group size G; 0 in F32 mode            */
    int           seq_len;    /* KV cache length, positions                */
    golden_mat    tok_emb;    /* (vocab_size, dim)                         */
    golden_layer *layers;     /* [n_layers]                                */
    float        *rms_final;  /* (dim,)                                    */
    golden_mat    wcls;       /* (vocab_size, dim); same buffers as tok_emb
                                 when cfg.shared_classifier                */
    /* run state */
    float  *x;           /* (dim,) residual stream                         */
    float  *xb;          /* (dim,) normed input / attention output          */
    float  *xb2;         /* (dim,) output of wo or w2                      */
    float  *hb;          /* (hidden_dim,) w1 output, then silu(w1) * w3     */
    float  *hb2;         /* (hidden_dim,) w3 output                        */
    float  *q;           /* (dim,) query                                   */
    float  *att;         /* (n_heads, seq_len) attention scores            */
    float  *logits;      /* (vocab_size,)                                   */
    float  *key_cache;   /* (n_layers, seq_len, kv_dim)                     */
    float  *value_cache; /* (n_layers, seq_len, kv_dim)                     */
    int8_t *xq;          /* (max(dim, hidden_dim),) quantized GEMV input    */
    float  *xs;          /* (ceil(max(dim, hidden_dim) / G),) its scales    */
} golden;

/* Build the reference for model m.  mode: GOLDEN_F32 (group_size ignored) or
 * GOLDEN_Q8 (group_size >= 1; need not divide dim or hidden_dim).  Weights
 * are read through tsr_tensor_row (so a Q8_0 file is dequantized first, then
 * requantized per row in Q8 mode); every matrix is copied, so g does not
 * point into m and m may be closed afterwards.  seq_len: KV cache positions,
 * 1..cfg.seq_len, or 0 for cfg.seq_len.  Returns TSR_OK, TSR_ERR_ARG (bad
 * mode, group size or seq_len) or TSR_ERR_NOMEM; on failure g holds nothing
 * to free (golden_free is still harmless). */
int golden_build(golden *g, const tsr_checkpoint *m, int mode, int group_size,
                 int seq_len);

/* Free everything golden_build allocated; g NULL or zeroed is a no-op. */
void golden_free(golden *g);

/* Run token (0..vocab) at position pos (0..seq_len) through the model: adds
 * its keys/values to the KV cache at pos (positions 0..pos-1 must have been
 * run before, as in run.c) and returns the logits (vocab_size,), owned by g
 * and overwritten by the next call.  Asserts on out-of-range arguments. */
const float *golden_forward(golden *g, int token, int pos);

/* llama2.c run.c's greedy generate loop: for pos = 0..steps-1 run
 * token at pos; the next token is prompt[pos + 1] while pos < n_prompt - 1,
 * else argmax of the logits.  out (steps + 1,) receives the tokens at
 * positions 0..steps (prompt[0], normally BOS, first): the format of the
 * reference .tokens files.  Like run.c, a generated BOS (id 1) ends the
 * sequence early and is not written.  steps is capped at g->seq_len.
 * Returns the number of ids written (steps + 1 normally), or -1 when
 * n_prompt < 1 or a prompt token is out of range. */
int golden_generate_greedy(golden *g, const int *prompt, int n_prompt,
                           int steps, int *out);

/* Index of the largest of v[0..n) (the first one on ties), as run.c's
 * sample_argmax. */
int golden_argmax(const float *v, int n);

/* Normalized mean squared error sum((a - ref)^2) / sum(ref^2) over n
 * elements, in double.  0 when both are all-zero; +inf when only ref is. */
double golden_nmse(const float *a, const float *ref, int n);

/* The Q8 group rule, on a vector x (n,) in groups of G (last group short when
 * G does not divide n): amax = max |x| over the group; scale = amax / 127;
 * q = (int8) roundf(x / scale), 0 when scale == 0.  Writes q (n,) and
 * s (ceil(n / G),). */
void golden_quantize(const float *x, int n, int group_size, int8_t *q,
                     float *s);

/* Q8 GEMV: W (d, n) in Q8 form @ (xq (n,), xs (ceil(n / G),)) -> y (d,):
 * y[i] = sum over groups g, ascending, of
 *        (float)(int32 sum_j wq[i, j] * xq[j] over g) * ws[i, g] * xs[g]. */
void golden_gemv_q8(const golden_mat *w, const int8_t *xq, const float *xs,
                    float *y);

#endif
