/*
 * gguf_write.h - a tiny GGUF v3 file of the llama (or qwen2) architecture (dim 32,
 * hidden 32, 1 layer, 2 heads, 1 KV head, vocab 4, context 64) for tests
 * and fuzz seeds, with switches that corrupt it in one named way each.
 * Layout: ggml docs/gguf.md.
 */
#ifndef TSR_GGUF_WRITE_H
#define TSR_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

enum { TSR_GGUF_TD = 32, TSR_GGUF_TH = 32, TSR_GGUF_TV = 4 };   /* dim, hidden, vocab */

/* A growable byte buffer; zero-initialise, free p. */
typedef struct tsr_gbuf { uint8_t *p; size_t n, cap; } tsr_gbuf;

/* Corruptions of the tiny model (all zero: a valid file). */
typedef struct tsr_gguf_spec {
    uint32_t version;          /* 0: 3                                         */
    const char *arch;          /* NULL: "llama"                                */
    uint64_t arch_len;         /* nonzero: claimed length of the arch string   */
    uint64_t tok_count;        /* nonzero: claimed count of the tokens array   */
    const char *omit;          /* tensor left out                              */
    const char *bad_name;      /* tensor whose offset or type changes          */
    int64_t off_delta;         /* added to bad_name's offset                   */
    int overlap;               /* bad_name gets the previous tensor's offset   */
    uint32_t bad_type;         /* nonzero: bad_name's type id                  */
    uint32_t emb_type;         /* token_embd type: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0 */
    int64_t alignment;         /* nonzero: general.alignment                   */
    int with_output;           /* 1: a separate output.weight                  */
    int eos_id;                /* nonzero: tokenizer.ggml.eos_token_id         */
    const char *poison;        /* tensor whose element (F32, F16) or first
                                  block scale (Q8_0, Q4_0) poison_at becomes a
                                  NaN (poison_inf 0) or +Inf (1)               */
    uint64_t poison_at;
    int poison_inf;
    int hyper;                 /* 1: rms_eps and freq_base below, instead of
                                  1e-6 and 5e5                                */
    float rms_eps;             /* llama.attention.layer_norm_rms_epsilon (F32) */
    double freq_base;          /* llama.rope.freq_base (F64)                   */
    const char *chat_template; /* non-NULL: tokenizer.chat_template (a string,
                                  chat_template_len bytes; 0: strlen)          */
    uint64_t chat_template_len;
    int qwen2;                 /* 1: architecture qwen2 (its keys) with
                                  blk.0.attn_{q,k,v}.bias                      */
    int rope_freqs;            /* 1: a rope_freqs.weight of divisors 1..8      */
} tsr_gguf_spec;

/* Append the tiny GGUF of sp to b (aborts when out of memory). */
void tsr_gguf_build(tsr_gbuf *b, const tsr_gguf_spec *sp);

/* A vocab-only GGUF of a byte-level BPE vocabulary, appended to b: the 256
 * byte characters of GPT-2 (token i is byte i's), "ab" 256, "Ġa" 257,
 * "Ġab" 258, the control token "<|im_end|>" 259 and the user-defined
 * "<|user|>" 260; tokenizer.ggml.model `model`, .pre `pre` (NULL: none),
 * .merges (NULL: none). */
enum { TSR_GGUF_BPE_VOCAB = 261 };
void tsr_gguf_bpe_vocab(tsr_gbuf *b, const char *model, const char *pre,
                        const char *const *merges, int n_merges);

#endif
