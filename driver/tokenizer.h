/*
 * tokenizer.h - tokenizers: llama2.c's sentencepiece-style BPE, and the
 * SentencePiece and byte-level BPE vocabularies of GGUF files.
 *
 * Three kinds, one interface:
 *  - llama2.c (tsr_tokenizer_load, tsr_tokenizer_from_arrays): exactly
 *    run.c encode(), as below.
 *  - GGUF SentencePiece (tokenizer.ggml.model "llama"): the same merges by
 *    score, with llama.cpp's rules around them: control, user-defined and
 *    unknown tokens are cut out of the text first (user-defined ones always,
 *    control ones when special tokens are parsed), each piece of text after
 *    the start or a special token gets the dummy-prefix space.
 *  - GGUF byte-level BPE (tokenizer.ggml.model "gpt2"): the special tokens
 *    cut out as above, the pre-tokenizer of tokenizer.ggml.pre (pretok.h) cuts
 *    the rest into words, each word's bytes become GPT-2's printable
 *    characters (one token each), merged by tokenizer.ggml.merges rank,
 *    lowest first, leftmost on a tie (Sennrich et al. 2016; GPT-2's
 *    encoder.py; llama.cpp src/llama-vocab.cpp at c392e509 for the rules
 *    around it, which its tests/test-tokenizer-0 vectors pin).
 *
 * The llama2.c kind in detail:
 * File format (llama2.c tokenizer.bin): int32 max_token_length, then for each
 * of vocab_size tokens: fp32 score, int32 len, len bytes (no NUL).
 * Encoding follows llama2.c run.c encode(): optional BOS, a leading space
 * (" " -> token of " ") when the text is not empty, one token per UTF-8
 * code point (or byte-fallback tokens <0xNN> = id byte + 3), then repeated
 * merges of the adjacent pair whose merged string has the best score.
 * A tokenizer is read-only after loading and may be shared by threads.
 */
#ifndef TSR_TOKENIZER_H
#define TSR_TOKENIZER_H

#include <stddef.h>

#include "error.h"

typedef struct tsr_tokenizer tsr_tokenizer;

/* llama2.c's BOS and EOS ids: every tokenizer's until
 * tsr_tokenizer_set_special names the model's own. */
#define TSR_TOKEN_BOS 1
#define TSR_TOKEN_EOS 2

/* Load a tokenizer.bin that must hold exactly vocab_size tokens (the model's
 * vocab): a file with more or fewer is refused with TSR_ERR_FORMAT and a
 * message giving both counts.  Errors: TSR_ERR_IO, TSR_ERR_FORMAT,
 * TSR_ERR_NOMEM. */
int  tsr_tokenizer_load(const char *path, int vocab_size, tsr_tokenizer **out,
                        tsr_err *e);

/* Build from in-memory arrays (GGUF metadata): pieces[i] is n_bytes[i] bytes;
 * the tokenizer copies them.  Errors: TSR_ERR_ARG, TSR_ERR_NOMEM. */
int  tsr_tokenizer_from_arrays(int vocab_size, const char *const *pieces,
                               const int *n_bytes, const float *scores,
                               tsr_tokenizer **out, tsr_err *e);

/* Token types of a GGUF vocabulary (tokenizer.ggml.token_type; llama.cpp's
 * llama_token_type). */
enum {
    TSR_TT_NORMAL = 1, TSR_TT_UNKNOWN = 2, TSR_TT_CONTROL = 3,
    TSR_TT_USER_DEFINED = 4, TSR_TT_UNUSED = 5, TSR_TT_BYTE = 6,
};

/* Kinds of GGUF vocabulary. */
typedef enum { TSR_VOCAB_SPM = 1, TSR_VOCAB_BPE = 2 } tsr_vocab_kind;

/* A GGUF vocabulary as its metadata gives it.  Arrays are borrowed for the
 * call only; the tokenizer copies what it keeps. */
typedef struct tsr_vocab_desc {
    tsr_vocab_kind kind;
    int                vocab_size;
    const char *const *pieces;     /* (vocab_size,) token texts: SPM with "▁"
                                      already turned into ' ', BPE as stored
                                      (GPT-2's byte characters)            */
    const int         *n_bytes;    /* (vocab_size,) their lengths, bytes     */
    const float       *scores;     /* (vocab_size,) SPM merge scores; NULL
                                      for BPE                              */
    const int32_t     *types;      /* (vocab_size,) TSR_TT_*; NULL: normal   */
    const char *const *merges;     /* (n_merges,) BPE "left right", rank =
                                      index; NULL for SPM                  */
    const int         *merge_bytes;/* (n_merges,) their lengths             */
    int                n_merges;
    const char        *pre;        /* BPE tokenizer.ggml.pre, pre_len bytes  */
    size_t             pre_len;
    int                add_bos;    /* tokenizer.ggml.add_bos_token, or -1    */
    int                bos, eos;   /* ids, or -1 when the file has none      */
    int                eot, eom;   /* end of turn / message ids, or -1       */
    int                add_space_prefix; /* SPM tokenizer.ggml.add_space_prefix,
                                            or -1 (then 1)                 */
    int                rstrip_special; /* 1: Phi-3: spaces after a special
                                          token are dropped (llama.cpp sets
                                          it by model name)                */
} tsr_vocab_desc;

/* Build a GGUF vocabulary's tokenizer.  Errors: TSR_ERR_FORMAT (a merge
 * that does not parse: no space, or a side or the merged text that is not a
 * token; a byte-level vocab without a token for some byte; a special id
 * outside the vocab), TSR_ERR_UNSUPPORTED (an unknown pre-tokenizer, named),
 * TSR_ERR_ARG, TSR_ERR_NOMEM. */
int  tsr_tokenizer_from_vocab(const tsr_vocab_desc *d, tsr_tokenizer **out, tsr_err *e);

void tsr_tokenizer_free(tsr_tokenizer *t);   /* NULL is a no-op */

int  tsr_tokenizer_vocab_size(const tsr_tokenizer *t);

/* The BOS and EOS ids encode() inserts and piece() knows BOS by (GGUF's
 * tokenizer.ggml.bos_token_id / eos_token_id); both must lie in the
 * vocab (ignored otherwise).  Call before sharing t between threads. */
void tsr_tokenizer_set_special(tsr_tokenizer *t, int bos, int eos);
int  tsr_tokenizer_bos(const tsr_tokenizer *t);
int  tsr_tokenizer_eos(const tsr_tokenizer *t);

/* 1 when a text's tokens start with BOS for this model: llama2.c's and
 * SentencePiece's always, a byte-level BPE vocab's when its file says so
 * (tokenizer.ggml.add_bos_token) or its pre-tokenizer implies it (Llama 3). */
int  tsr_tokenizer_add_bos(const tsr_tokenizer *t);

/* 1 when token ends a generation: EOS, the file's end-of-turn and
 * end-of-message ids, and the tokens llama.cpp recognises by their text
 * (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>,
 * <|eom_id|>, <EOT>).  llama2.c's: EOS (and BOS, as run.c stops). */
int  tsr_tokenizer_is_eog(const tsr_tokenizer *t, int token);

/* Up to max end-of-generation ids into ids (ascending); returns how many
 * there are in all. */
int  tsr_tokenizer_eog_ids(const tsr_tokenizer *t, int *ids, int max);

/* 1 for a control, unknown or unused token of a GGUF vocab: one whose text
 * is not part of the output (piece() gives it no bytes). */
int  tsr_tokenizer_is_control(const tsr_tokenizer *t, int token);

/* Flags of tsr_tokenizer_encode_ex. */
enum {
    TSR_ENC_BOS     = 1,   /* BOS first                                   */
    TSR_ENC_EOS     = 2,   /* EOS last                                    */
    TSR_ENC_SPECIAL = 4,   /* control tokens written in the text are those
                              tokens ("<|im_start|>"); without it only the
                              user-defined ones are (llama.cpp's
                              parse_special)                              */
};

/* encode() with flags; encode(t, text, bos, eos, ...) is
 * encode_ex(t, text, strlen(text), bos | eos | TSR_ENC_SPECIAL, ...).
 * text[0..len) need not be NUL-terminated.  Errors as encode(). */
int  tsr_tokenizer_encode_ex(const tsr_tokenizer *t, const char *text, size_t len, int flags,
                             int *tokens, int max_tokens, int *n_tokens, tsr_err *e);

/* Encode text (NUL-terminated UTF-8) into tokens[0..max_tokens): BOS first if
 * bos, EOS last if eos.  *n_tokens gets the count.  Errors: TSR_ERR_RANGE if
 * more than max_tokens would be written (nothing useful in tokens then, or a
 * BOS / EOS asked for whose id is outside the vocab), TSR_ERR_NOMEM.
 * Also (beyond run.c, which has no such checks): TSR_ERR_ARG for a NULL
 * argument; TSR_ERR_RANGE when a byte needs a fallback token byte+3 that is
 * outside a tiny vocab.  A vocab without " " gets the byte token of ' ' as
 * the dummy prefix (run.c would index vocab[-1]).  Cost: O(n log n) in the
 * text length; memory is allocated per call, so concurrent calls are safe. */
int  tsr_tokenizer_encode(const tsr_tokenizer *t, const char *text, int bos,
                          int eos, int *tokens, int max_tokens, int *n_tokens,
                          tsr_err *e);

/* The bytes that token adds to the text, given the token before it (prev,
 * -1 at the start of a text without BOS): after BOS a leading space is
 * stripped (a SentencePiece GGUF vocab's also at the start); "<0xNN>"
 * becomes the single raw byte NN; a byte-level BPE token its bytes; a GGUF
 * control or unknown token nothing.  A token may end inside a UTF-8
 * character that the next one completes.  *len gets the byte count (may be 0).  The pointer stays valid
 * while t lives.  token must be in [0, vocab). */
const char *tsr_tokenizer_piece(const tsr_tokenizer *t, int prev, int token,
                                size_t *len);

/* Token id of an exact piece string, or -1.  Should a vocab hold a piece
 * twice (possible via from_arrays), lookups and encoding use the lowest id. */
int  tsr_tokenizer_lookup(const tsr_tokenizer *t, const char *piece);

#endif
