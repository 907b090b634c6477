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
#include "tsr_layout.h"   /* TSR_KIND_*: the kinds of weight matrix */

/* Element type of a stored tensor. */
typedef enum {
    TSR_DT_F32  = 0,   /* IEEE fp32 */
    TSR_DT_Q8_0 = 1,   /* int8 values, one fp32 scale per `group` consecutive
                          elements of the flattened tensor (llama2.c v2,
                          GGUF Q8_0 with group 32) */
    TSR_DT_Q4_0 = 2,   /* GGUF Q4_0: per 32 consecutive elements 16 bytes,
                          element i in the low nibble of byte i and i + 16 in
                          the high one, value nibble - 8, and one scale */
    TSR_DT_F16  = 3,   /* IEEE half (GGUF F16), kept as stored in `blk`  */
} tsr_dtype;

/* A 2-D weight tensor, row-major: rows x cols.  Vectors are rows == 1.
 * The data pointers are views into the file (or the caller's memory) or
 * into memory the checkpoint owns; all are NULL once
 * tsr_checkpoint_drop_weights has run.
 * Q8_0 groups run over the flattened tensor (element i has scale
 * s[i / group]), so a group may cross a row end when group does not divide
 * cols: llama2.c's exporter writes such files (hidden 1376, group 64). */
typedef struct tsr_tensor {
    tsr_dtype     type;
    int           rows, cols;
    int           group;   /* Q8_0 / Q4_0 group size in elements (Q4_0: 32);
                              0 for F32                                      */
    const float  *f;       /* (rows, cols) F32 values; NULL otherwise       */
    const int8_t *q;       /* (rows * cols) Q8_0 values; NULL otherwise     */
    const uint8_t *q4;     /* (rows * cols / 2) Q4_0 nibbles, 16 bytes a
                              group; NULL otherwise                          */
    const float  *s;       /* (rows * cols / group) scales; NULL for F32  */
    const uint8_t *blk;    /* the file's bytes, where q / q4 / s are NULL:
                              GGUF Q8_0 / Q4_0 as ggml blocks of 32 elements
                              (an IEEE half scale d, then 32 int8 values,
                              34 bytes, or the 16 nibble bytes above, 18),
                              F16 as (rows * cols) halves; any alignment
                              (read with memcpy); NULL otherwise           */
} tsr_tensor;

/* Bytes of one GGUF (ggml) block of 32 elements: Q8_0 and Q4_0. */
#define TSR_GGML_QK      32
#define TSR_GGML_Q8_BYTES 34
#define TSR_GGML_Q4_BYTES 18

/* Where a model came from. */
typedef enum {
    TSR_FMT_LLAMA2C_LEGACY = 0,  /* 7 int32 header fields, fp32 tensors   */
    TSR_FMT_LLAMA2C_V1     = 1,  /* 256-byte header, magic "ak42", fp32  */
    TSR_FMT_LLAMA2C_V2     = 2,  /* 256-byte header, Q8_0 matrices       */
    TSR_FMT_GGUF           = 3,
} tsr_format;

/* Architectures (GGUF general.architecture; llama2.c files are llama). */
typedef enum {
    TSR_ARCH_LLAMA = 0,   /* "llama": Llama 2/3, TinyLlama, SmolLM2, Mistral */
    TSR_ARCH_QWEN2 = 1,   /* "qwen2": biases on q, k, v; NEOX-style RoPE     */
} tsr_arch;

/* Hyperparameters of a llama-family model. */
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
    int   group_size;        /* file's Q8_0 / Q4_0 group size (32 in GGUF),
                                0 for fp32 files                          */
    /* What the file stores, per kind of matrix (bits 1 << TSR_KIND_*): every
     * tensor of the kind in Q8_0 (groups of group_size that never cross a
     * row's end) or in Q4_0; a kind in neither has F32/F16 tensors, mixed
     * types or row-crossing groups.  Set by the loaders. */
    uint32_t kinds_q8, kinds_q4;
    /* The kinds whose every tensor is Q8_0 in groups that cross a row's
     * end (a llama2.c v2 file quantizes each tensor flattened, so a shape
     * whose rows are not a multiple of the group, stories260K's w2 with
     * rows of 172, has groups across rows): on chip they are re-quantized
     * along the rows, as F32/F16 kinds are quantized. */
    uint32_t kinds_q8x;
    /* Special tokens: special_ids 1 when the file names them (GGUF
     * metadata), else llama2.c's BOS 1 and EOS 2 apply (tsr_config_bos). */
    int   special_ids;
    int   bos_id, eos_id;
    /* Architecture variants (zero for llama2.c and llama files). */
    tsr_arch arch;
    int   qkv_bias;          /* 1: q, k, v have biases (qwen2)             */
    int   rope_neox;         /* 1: RoPE pairs element j with j + head_size/2
                                of each head (llama.cpp's NEOX rope, qwen2);
                                0: adjacent pairs (2i, 2i + 1), as run.c.
                                The loader permutes q and k rows so that
                                the kernel's adjacent pairs are these      */
    /* RoPE scaling besides a file's rope_freqs.weight factors (which take
     * precedence): 0 none; 1 Llama 3's rule with the fields below (synth
     * and plan shapes); 2 linear (GGUF ARCH.rope.scaling.type "linear":
     * every frequency divided by rope_factor) */
    int   rope_scaled;
    float rope_factor;       /* long-wavelength divisor (32 for Llama 3.2) */
    float rope_low, rope_high; /* low / high frequency factors (1, 4)      */
    int   rope_orig_ctx;     /* original context (8192)                    */
} tsr_config;

/* The model's BOS / EOS ids: the file's, or llama2.c's 1 and 2. */
static inline int tsr_config_bos(const tsr_config *c) { return c->special_ids ? c->bos_id : 1; }
static inline int tsr_config_eos(const tsr_config *c) { return c->special_ids ? c->eos_id : 2; }

/* A checkpoint file opened on the host (the public tsr_model is the model
 * resident on a device, which holds one of these).
 * head_size = dim / n_heads, kv_dim = n_kv_heads * head_size. */
typedef struct tsr_checkpoint {
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
    tsr_tensor *bq;             /* [n_layers] each (1, dim), F32; NULL unless
                                   cfg.qkv_bias                             */
    tsr_tensor *bk;             /* [n_layers] each (1, kv_dim)              */
    tsr_tensor *bv;             /* [n_layers] each (1, kv_dim)              */
    float *rope_ff;             /* (head_size / 2,) RoPE frequency divisors
                                   from the file (GGUF rope_freqs.weight,
                                   owned); NULL when it has none            */
    int    n_src_type[4];       /* GGUF: tensors stored as F32, F16, Q8_0,
                                   Q4_0 (before conversion); zero otherwise */
    /* private */
    void  *map;                 /* mmap()ed file, or NULL                  */
    size_t map_len;             /* bytes                                   */
    void  *owned;               /* allocations the tensors point into      */
    struct tsr_tokenizer *tok;  /* owned; the file's own tokenizer (GGUF), or
                                   NULL (llama2.c files need tokenizer.bin) */
    char  *chat_template;       /* owned, NUL-terminated: GGUF
                                   tokenizer.chat_template (Jinja source), or
                                   NULL when the file has none              */
    char   path[256];           /* for error messages                      */
} tsr_checkpoint;

/* Open a llama2.c checkpoint (legacy, v1 fp32, v2 Q8_0): mmap the file, check
 * every header field and the size the tensors imply against the file length,
 * then point the tensors into the map.  Errors: TSR_ERR_IO (missing,
 * unreadable), TSR_ERR_FORMAT (truncated, bad magic, bad dims, size
 * mismatch), TSR_ERR_UNSUPPORTED (unknown version), TSR_ERR_NOMEM.
 * On failure *out is NULL and e->msg names the file and the problem.
 * Source: llama2.c export.py (legacy_export, version1_export,
 * version2_export) and run.c / runq.c. */
int  tsr_checkpoint_open(const char *path, tsr_checkpoint **out, tsr_err *e);

/* The same from memory: data (len bytes) holds a whole checkpoint file and
 * must stay valid and unchanged until tsr_checkpoint_close; name is used in
 * messages.  Errors as tsr_checkpoint_open, without TSR_ERR_IO. */
int  tsr_checkpoint_open_memory(const void *data, size_t len, const char *name,
                                tsr_checkpoint **out, tsr_err *e);

/* Open a GGUF v2/v3 file of the llama or qwen2 architecture held in memory (data,
 * len bytes; name for messages).  Every tensor stays in data as stored,
 * nothing is copied: Q8_0 and Q4_0 as their ggml blocks (tsr_tensor.blk),
 * F16 as halves, F32 as fp32 (copied into memory the checkpoint owns only
 * when not 4-byte aligned), so data must stay valid and unchanged until
 * tsr_checkpoint_close, or until tsr_checkpoint_drop_weights; the
 * tokenizer from the metadata (a copy) goes to (*out)->tok, with BOS/EOS from
 * tokenizer.ggml.bos_token_id / eos_token_id (else 1 and 2), and the
 * optional tokenizer.chat_template string (a copy) to (*out)->chat_template.
 * Hyperparameters from the ARCH.* keys (ARCH = general.architecture:
 * "llama" or "qwen2"), vocab from tokenizer.ggml.tokens, seq_len from
 * ARCH.context_length; no output.weight means a shared classifier; qwen2
 * (or a llama file with blk.0.attn_q.bias) takes blk.N.attn_{q,k,v}.bias
 * and uses NEOX RoPE (llama.cpp's rope type for qwen2); rope_freqs.weight
 * (Llama 3) gives RoPE's frequency divisors (rope_ff), ARCH.rope.scaling.type
 * "linear" a uniform one.  Errors: TSR_ERR_FORMAT (truncated, counts or
 * offsets past the end, overlapping or misaligned tensors, missing keys or
 * tensors, bad shapes, a bias of the wrong length, a rope factor <= 0),
 * TSR_ERR_UNSUPPORTED (GGUF version, architecture (named), tensor type,
 * partial RoPE, a head size apart from dim / n_heads, rope scaling other
 * than linear), TSR_ERR_NOMEM.  Source: ggml docs/gguf.md; llama.cpp
 * src/llama-model.cpp (tensors per architecture, rope types). */
int  tsr_gguf_open_memory(const void *data, size_t len, const char *name,
                          tsr_checkpoint **out, tsr_err *e);

/* The metadata pairs of the GGUF file held in data (len bytes; name for
 * messages) whose key starts with prefix, byte for byte as stored (key,
 * value type, value), concatenated into *out (malloc()ed, *out_len bytes;
 * the caller frees it), *count pairs; *n_tokens gets the length of
 * tokenizer.ggml.tokens (0 without one).  The whole file is checked as
 * tsr_gguf_open_memory's parse does.  Errors: TSR_ERR_FORMAT,
 * TSR_ERR_UNSUPPORTED, TSR_ERR_NOMEM.  Source: ggml docs/gguf.md. */
int  tsr_gguf_meta_prefix(const void *data, size_t len, const char *name, const char *prefix,
                          uint8_t **out, size_t *out_len, uint64_t *count, int *n_tokens,
                          tsr_err *e);

/* Only the tokenizer of a GGUF file in memory (a vocab-only file such as
 * llama.cpp's models/ggml-vocab-*.gguf, or a model): its tokenizer.ggml.*
 * metadata as tsr_gguf_open_memory reads it.  The tokenizer copies what it
 * keeps.  Errors: TSR_ERR_FORMAT, TSR_ERR_UNSUPPORTED, TSR_ERR_NOMEM. */
int  tsr_gguf_read_tokenizer(const void *data, size_t len, const char *name,
                             struct tsr_tokenizer **out, tsr_err *e);

/* Unmap and free (the tokenizer and chat template too); NULL is a no-op. */
void tsr_checkpoint_close(tsr_checkpoint *m);

/* A pipeline stage's view of m: layers [l0, l1) of it as a model of l1 -
 * l0 layers (the per-layer tensors of those layers; the embedding, final
 * norm, classifier, RoPE factors and config otherwise m's), for the weight
 * image of one stage (tsr_mesh_opts.stage says which of the embedding and
 * the classifier it holds).  *view points into m and owns nothing: it is
 * valid while m is and its weights are, and is never closed.
 * Errors: TSR_ERR_ARG unless 0 <= l0 < l1 <= n_layers. */
int tsr_checkpoint_stage_view(const tsr_checkpoint *m, int l0, int l1, tsr_checkpoint *view,
                              tsr_err *e);

/* Start reading the whole mapped file into the page cache (read-ahead,
 * asynchronous; not into this process's resident set), before a pass that
 * reads all of it.  A no-op for a checkpoint opened from memory. */
void tsr_checkpoint_prefetch(const tsr_checkpoint *m);

/* Let the OS take back this process's pages of the mapped file (they stay
 * in the page cache and come back on the next touch), so a pass that reads
 * the model piece by piece (the weight image stream) never holds all of it
 * resident.  A no-op for a checkpoint opened from memory (the caller's
 * pages are not ours to drop) or with nothing mapped.  Safe beside readers
 * of the tensors: they fault the pages in again. */
void tsr_checkpoint_evict(const tsr_checkpoint *m);

/* The weights have gone to the device: unmap the file and clear every tensor's data pointers; cfg, the
 * shapes and types, path, map_len, n_src_type and the tokenizer stay, so
 * the device's memory is the weights' one home.  Tensor accessors and
 * tsr_checkpoint_check_finite must not be called afterwards.  NULL is a
 * no-op. */
void tsr_checkpoint_drop_weights(tsr_checkpoint *m);

/* Refuse a model with a NaN or infinite weight: every fp32 and fp16 value,
 * and every Q8_0 / Q4_0 scale (int8 values are always finite; a scale above
 * FLT_MAX / 128 dequantizes some q * s to an infinity, so it is refused too;
 * a GGUF block's half scale is refused when it is not finite), of every
 * tensor.  Such a weight is undefined behaviour in the Q8_0 quantizer's
 * float-to-int conversion and garbage in F32 mode.  Errors: TSR_ERR_FORMAT, one line
 * naming the file and the tensor (its name in the file's own format:
 * llama2.c model.py names, GGUF tensor names), the count of non-finite
 * values and the first one's element index. */
int  tsr_checkpoint_check_finite(const tsr_checkpoint *m, tsr_err *e);

/* RoPE's frequencies, (head_size / 2,) into out: theta^(-2j / head_size)
 * (as run.c, in fp32: 1.0f / powf(theta, 2j / head_size)), each divided by
 * the file's rope_freqs factor j when it has one, else by the Llama 3
 * factor the cfg's rope scaling gives (llama.cpp convert_hf_to_gguf.py's
 * rule: wavelength 2 pi / f shorter than orig_ctx / high: 1; longer than
 * orig_ctx / low: factor; between, 1 / ((1 - s) / factor + s) with
 * s = (orig_ctx / wavelength - low) / (high - low)).  Needs only cfg and
 * rope_ff, so it works after tsr_checkpoint_drop_weights. */
void tsr_checkpoint_rope_freqs(const tsr_checkpoint *m, float *out);

/* The Llama 3 factor of frequency f (radians per position) under cfg's
 * scaling (the rule above); 1 when cfg has none. */
float tsr_rope_llama3_factor(const tsr_config *cfg, double f);

/* The row of q (or k, n_heads_of = its head count) that feeds row r of
 * the on-chip q (k): r itself, or with cfg->rope_neox, within each head
 * element j < hs / 2 at 2j and element j + hs / 2 at 2j + 1, so that the
 * kernel's adjacent pairs rotate NEOX's pairs (q . k is unchanged when q and
 * k are permuted alike). */
static inline int tsr_rope_src_row(const tsr_config *cfg, int r)
{
    if (!cfg->rope_neox) return r;
    int hs = cfg->dim / cfg->n_heads, i = r % hs;
    return r - i + (i % 2 ? hs / 2 + i / 2 : i / 2);
}

/* Number of weight parameters (elements), counting a shared classifier once. */
uint64_t tsr_checkpoint_param_count(const tsr_checkpoint *m);

/* Element i of t as fp32 (dequantized for Q8_0, Q4_0).  No bounds check
 * beyond an assert: i < rows * cols. */
float tsr_tensor_get(const tsr_tensor *t, size_t i);

/* Dequantize row r of t into out (t->cols floats). */
void tsr_tensor_row(const tsr_tensor *t, int r, float *out);

/* Dequantize columns [c0, c0 + n) of row r of t into out (n floats);
 * 0 <= c0, c0 + n <= cols (asserted).  What tsr_tensor_row gives for those
 * columns, bit for bit. */
void tsr_tensor_span(const tsr_tensor *t, int r, int c0, int n, float *out);

/* The scale of Q8_0 / Q4_0 group gi (flat element index / group) of t,
 * from s[] or from the GGUF block's half (widened exactly). */
float tsr_tensor_scale(const tsr_tensor *t, size_t gi);

/* The int8 values of Q8_0 group gi of t (t->group of them): into q[] or
 * the GGUF block. */
const int8_t *tsr_tensor_q8(const tsr_tensor *t, size_t gi);

/* The 16 nibble bytes of Q4_0 group gi of t. */
const uint8_t *tsr_tensor_q4(const tsr_tensor *t, size_t gi);

/* Fill m->cfg.kinds_q8 / kinds_q4 from its tensors' types (the loaders
 * call it once the tensors are in place). */
void tsr_checkpoint_scan_kinds(tsr_checkpoint *m);

/* ------------------------------------------------------------------------ */
/* Shape checks and llama2.c file sizes (shared by the loader and synth)      */

/* Header magic of llama2.c v1/v2 files ("ak42"; on disk the bytes "24ka",
 * a little-endian uint32 0x616b3432 as export.py writes it). */
#define TSR_LLAMA2C_MAGIC  0x616b3432u
/* Header bytes of v1/v2 files (zero padded); legacy files have 7 int32. */
#define TSR_LLAMA2C_HEADER 256
#define TSR_LLAMA2C_LEGACY_HEADER 28

/* Largest hyperparameters a header may claim.  Far above any real llama
 * model, and low enough that every size product fits in 64 bits. */
#define TSR_CKPT_MAX_DIM    (1 << 20)   /* dim, hidden_dim                  */
#define TSR_CKPT_MAX_LAYERS (1 << 12)
#define TSR_CKPT_MAX_VOCAB  (1 << 24)
#define TSR_CKPT_MAX_SEQ    (1 << 24)

/* Check cfg's shape: every dim > 0 and within the limits above, n_heads
 * divides dim, n_kv_heads divides n_heads, head_size even, and for a
 * TSR_FMT_LLAMA2C_V2 cfg a group_size > 0 that divides the element count of
 * every quantized tensor.  On a problem returns code (the caller's choice:
 * TSR_ERR_FORMAT for a file, TSR_ERR_ARG for a spec) with the one-line
 * message "<name>: <problem>".  Returns TSR_OK otherwise. */
int tsr_config_check(const tsr_config *cfg, const char *name, int code,
                     tsr_err *e);

/* Bytes of a llama2.c checkpoint of shape cfg in format cfg->format
 * (legacy, v1 or v2 with cfg->group_size), header included; a not-shared
 * classifier adds wcls.  cfg must have passed tsr_config_check.  Returns
 * TSR_OK, TSR_ERR_FORMAT if the size does not fit in 64 bits, or
 * TSR_ERR_UNSUPPORTED for a format that is not llama2.c.  Layouts:
 * llama2.c export.py legacy_export / version1_export / version2_export. */
int tsr_llama2c_size(const tsr_config *cfg, uint64_t *bytes);

/* ------------------------------------------------------------------------ */
/* Synthetic checkpoints (tessera synth)                                      */

/* Shape presets: "stories260K", "stories15M", "stories42M", "stories110M",
 * the llama / qwen2 shapes "smollm2-135m", "qwen2.5-0.5b", "llama3.2-1b"
 * (their own vocabulary sizes, RoPE bases, epsilons, Llama 3.2's RoPE
 * scaling, qwen2's biases) and the tiny "llama3-tiny" (dim 128, 2 layers,
 * 4 heads, 2 KV heads, Llama 3 RoPE scaling) and "qwen2-tiny" (the same
 * with hidden 320, biases), or "DIMxLAYERS" with optional ":hidden=H,heads=N,kv=K,vocab=V,seq=S"
 * (and "shared=0" for a separate classifier).  Defaults: hidden by
 * llama2.c's rule (2/3 of 4*dim, rounded up to a multiple of 32), heads =
 * dim/64 (at least 1), kv = heads, vocab 32000, seq 1024, shared 1.
 * Fills cfg (format V1, rope, eps defaulted).  Errors: TSR_ERR_ARG. */
int tsr_synth_shape(const char *spec, tsr_config *cfg, tsr_err *e);

/* Write a llama2.c checkpoint with deterministic pseudo-random weights
 * (seeded xorshift, normal with std 0.02; norm weights 1): version 1 fp32,
 * or version 2 Q8_0 when group_size > 0.  Each tensor has its own stream
 * derived from (seed, tensor), so v1 and v2 files of one seed hold the same
 * weights up to quantization.  Streams to disk: a regular file goes to
 * "path.tmp.PID.N" first and is renamed to path when complete (a failed or
 * interrupted write never leaves a partial file under path; a failed one
 * removes its temporary file); a device or pipe is written directly.
 * Errors: TSR_ERR_IO, TSR_ERR_ARG (bad shape, or group size does not
 * divide some tensor's element count). */
int tsr_synth_write(const char *path, const tsr_config *cfg, int group_size,
                    uint64_t seed, tsr_err *e);

/* Write a GGUF v3 file of cfg's shape and architecture (llama, or qwen2
 * with q, k, v biases) with deterministic pseudo-random weights (normal,
 * std 0.02; biases std 0.1; norm weights 1; with cfg->rope_scaled == 1 a
 * rope_freqs.weight of Llama 3 factors) and the vocabulary of the
 * vocab-only GGUF at vocab_path: every tokenizer.* metadata pair copied as
 * stored, vocab_size its token count.  Matrices are wtype (TSR_DT_F32,
 * TSR_DT_Q8_0 or TSR_DT_Q4_0, quantized by ggml's reference rules), the
 * rest F32.  Names, keys and layouts as llama.cpp's convert_hf_to_gguf.py
 * writes them (gguf-py constants.py), so llama.cpp loads the file; the
 * classifier is tied unless cfg->shared_classifier is 0.  Written to a
 * temporary name and renamed, as tsr_synth_write.  Errors: TSR_ERR_ARG
 * (bad shape or type; quantized rows not a multiple of 32), TSR_ERR_IO,
 * TSR_ERR_FORMAT (vocab_path is not a GGUF with tokens), TSR_ERR_NOMEM. */
int tsr_synth_gguf_write(const char *path, const tsr_config *cfg, const char *vocab_path,
                         int wtype, uint64_t seed, tsr_err *e);

#endif
