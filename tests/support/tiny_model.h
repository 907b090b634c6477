/*
 * tiny_model.h - a small synthetic checkpoint for the kernel tests
 * (tests/test_kernel_ops.c, tests/test_kernel_layout.c), and its placement
 * on the rig (kernel_rig.h): dim 80, hidden 136, 2 layers, 10 heads over 5
 * KV heads (GQA), vocab 100, seq 24.  Neither 80 nor 136 is a multiple of
 * 32, so at the usual group sizes every matrix has a short last group.
 * F32 tensors in memory, drawn from tm_rand.
 */
#ifndef TSR_TEST_TINY_MODEL_H
#define TSR_TEST_TINY_MODEL_H

#include <stdint.h>

#include "kernel_rig.h"
#include "model.h"

enum { DIM = 80, HID = 136, LAYERS = 2, HEADS = 10, KVH = 5, VOCAB = 100, SEQ = 24 };
#define HS    (DIM / HEADS)     /* 8                                  */
#define KVD   (KVH * HS)        /* 40                                 */
#define KVMUL (HEADS / KVH)     /* 2 query heads per KV head (GQA)    */
#define QKVD  (DIM + 2 * KVD)   /* rows of the fused q|k|v matrix     */

typedef struct tm_model {
    tsr_checkpoint ck;
    tsr_tensor     t[9][LAYERS];   /* rms_att wq wk wv wo rms_ffn w1 w2 w3 */
    float         *emb;            /* (VOCAB, DIM) tok_embedding, writable */
    float         *pool;           /* every tensor's values                */
} tm_model;

/* Uniform in [-1, 1): one xorshift stream for a test binary. */
float tm_rand(void);

/* A CMocka setup: restart the stream, so that a test's data do not depend
 * on how far the tests before it got. */
int tm_reseed(void **state);

/* The model's shape; shared: 1 the classifier is the embedding, 0 a
 * matrix of its own. */
tsr_config tm_cfg(int shared);

/* A new model with weights from tm_rand; free with tm_free. */
tm_model *tm_new(int shared);
void tm_free(tm_model *fx);

/* A mesh: PEs, of them mesh columns. */
typedef struct tm_mesh { int pes, cols; } tm_mesh;

/* The CONFIGURE block of fx on mesh m (Q8_0 at group G, or F32), 2
 * sequence slots, as the driver makes it (tsr_wimage_config against the
 * compiled profile; kv_split 0: the default). */
tsr_kconfig tm_config(const tm_model *fx, tm_mesh m, int f32, int G, int kv_split);

/* A rig state with fx placed on mesh m (weights loaded). */
tsr_kstate *tm_place(const tm_model *fx, tm_mesh m, int f32, int G, int kv_split);

/* A rig state configured for fx on mesh m, no weights loaded (enough for
 * the controller's ops and attention). */
tsr_kstate *tm_configured(const tm_model *fx, tm_mesh m, int f32, int G, int kv_split);

#endif
