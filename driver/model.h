/*
 * model.h - a transformer checkpoint as the driver holds it (llama
 * architecture), independent of the file format it came from.
 *
 * Tensors point into the mmap()ed file where the file's layout allows it;
 * otherwise into buffers the model owns.  A model is read-only once opened
 * and may be shared by threads.
 */
#ifndef TSR_MODEL_H
#define TSR_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Element type of a stored tensor. */
typedef enum {
    TSR_DT_F32  = 0,   /* IEEE fp32 */
    TSR_DT_Q8_0 = 1,   /* int8 values, one fp32 scale per `group` consecutive
                          elements of the flattened tensor (llama2.c v2) */
} tsr_dtype;

/* A 2-D weight tensor, row-major: rows x cols.  Vectors are rows == 1.
 * Q8_0 groups run over the flattened tensor (element i has scale
 * s[i / group]), so a group may cross a row end when group does not divide
 * cols: llama2.c's exporter writes such files (hidden 1376, group 64). */
typedef struct tsr_tensor {
    tsr_dtype     type;
    int           rows, cols;
    int           group;   /* Q8_0 group size in elements; 0 for F32        */
    const float  *f;       /* (rows, cols) F32 values; NULL for Q8_0        */
    const int8_t *q;       /* (rows * cols) Q8_0 values; NULL for F32       */
    const float  *s;       /* (rows * cols / group) Q8_0 scales; NULL for F32 */
} tsr_tensor;

/* Where a model came from. */
typedef enum {
    TSR_FMT_LLAMA2C_LEGACY = 0,  /* 7 int32 header fields, fp32 tensors   */
    TSR_FMT_LLAMA2C_V1     = 1,  /* 256-byte header, magic "ak42", fp32  */
    TSR_FMT_LLAMA2C_V2     = 2,  /* 256-byte header, Q8_0 matrices       */
    TSR_FMT_GGUF           = 3,
} tsr_format;

/* Hyperparameters of a llama-architecture model. */
typedef struct tsr_config {
    int   dim;               /* transformer width                          */
    int   hidden_dim;        /* FFN inner width                            */
    int   n_layers;
    int   n_heads;           /* query heads                                */
    int   n_kv_heads;        /* key/value heads (GQA when < n_heads)       */
    int   vocab_size;
    int   seq_len;           /* trained context length, tokens             */
    int   shared_classifier; /* 1: wcls is tok_embedding                   */
    float rope_theta;        /* RoPE base, 10000 for llama2.c              */
    float norm_eps;          /* RMSNorm epsilon, 1e-5 for llama2.c         */
    tsr_format format;
    int   group_size;        /* file's Q8_0 group size, 0 for fp32 files   */
} tsr_config;

/* A loaded model.  head_size = dim / n_heads, kv_dim = n_kv_heads * head_size. */
typedef struct tsr_model {
    tsr_config cfg;
    tsr_tensor tok_embedding;   /* (vocab_size, dim)                       */
    tsr_tensor *rms_att;        /* [n_layers] each (1, dim), F32           */
    tsr_tensor *wq;             /* [n_layers] each (dim, dim)              */
    tsr_tensor *wk;             /* [n_layers] each (kv_dim, dim)           */
    tsr_tensor *wv;             /* [n_layers] each (kv_dim, dim)           */
    tsr_tensor *wo;             /* [n_layers] each (dim, dim)              */
    tsr_tensor *rms_ffn;        /* [n_layers] each (1, dim), F32           */
    tsr_tensor *w1;             /* [n_layers] each (hidden_dim, dim) gate  */
    tsr_tensor *w2;             /* [n_layers] each (dim, hidden_dim) down  */
    tsr_tensor *w3;             /* [n_layers] each (hidden_dim, dim) up    */
    tsr_tensor rms_final;       /* (1, dim), F32                           */
    tsr_tensor wcls;            /* (vocab_size, dim); a copy of tok_embedding's
                                   view when cfg.shared_classifier          */
    /* private */
    void  *map;                 /* mmap()ed file, or NULL                  */
    size_t map_len;             /* bytes                                   */
    void  *owned;               /* allocations the tensors point into      */
    char   path[256];           /* for error messages                      */
} tsr_model;

/* Open a llama2.c checkpoint (legacy, v1 fp32, v2 Q8_0): mmap the file, check
 * every header field and the size the tensors imply against the file length,
 * then point the tensors into the map.  Errors: TSR_ERR_IO (missing,
 * unreadable), TSR_ERR_FORMAT (truncated, bad magic, bad dims, size
 * mismatch), TSR_ERR_UNSUPPORTED (unknown version), TSR_ERR_NOMEM.
 * On failure *out is NULL and e->msg names the file and the problem.
 * Source: llama2.c export.py (legacy_export, version1_export,
 * version2_export) and run.c / runq.c. */
int  tsr_model_open(const char *path, tsr_model **out, tsr_err *e);

/* Unmap and free; NULL is a no-op. */
void tsr_model_close(tsr_model *m);

/* Number of weight parameters (elements), counting a shared classifier once. */
uint64_t tsr_model_param_count(const tsr_model *m);

/* Element i of t as fp32 (dequantized for Q8_0).  No bounds check beyond
 * an assert: i < rows * cols. */
float tsr_tensor_get(const tsr_tensor *t, size_t i);

/* Dequantize row r of t into out (t->cols floats). */
void tsr_tensor_row(const tsr_tensor *t, int r, float *out);

/* ------------------------------------------------------------------------ */
/* Synthetic checkpoints (tessera synth)                                      */

/* Shape presets: "stories260K", "stories15M", "stories42M", "stories110M",
 * or "DIMxLAYERS" with optional ":hidden=H,heads=N,kv=K,vocab=V,seq=S".
 * Fills cfg (format, rope, eps defaulted).  Errors: TSR_ERR_ARG. */
int tsr_synth_shape(const char *spec, tsr_config *cfg, tsr_err *e);

/* Write a llama2.c checkpoint with deterministic pseudo-random weights
 * (seeded xorshift, normal with std 0.02; norm weights 1): version 1 fp32,
 * or version 2 Q8_0 when group_size > 0.  Errors: TSR_ERR_IO, TSR_ERR_ARG
 * (group size does not divide dim). */
int tsr_synth_write(const char *path, const tsr_config *cfg, int group_size,
                    uint64_t seed, tsr_err *e);

#endif
