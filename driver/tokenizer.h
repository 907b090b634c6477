/*
 * tokenizer.h - the llama2.c sentencepiece-style BPE tokenizer.
 *
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

void tsr_tokenizer_free(tsr_tokenizer *t);   /* NULL is a no-op */

int  tsr_tokenizer_vocab_size(const tsr_tokenizer *t);

/* The BOS and EOS ids encode() inserts and piece() knows BOS by (GGUF's
 * tokenizer.ggml.bos_token_id / eos_token_id); both must lie in the
 * vocab (ignored otherwise).  Call before sharing t between threads. */
void tsr_tokenizer_set_special(tsr_tokenizer *t, int bos, int eos);
int  tsr_tokenizer_bos(const tsr_tokenizer *t);
int  tsr_tokenizer_eos(const tsr_tokenizer *t);

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

/* The bytes that token adds to the text, given the token before it (prev):
 * after BOS a leading space is stripped; "<0xNN>" becomes the single raw
 * byte NN.  *len gets the byte count (may be 0).  The pointer stays valid
 * while t lives.  token must be in [0, vocab). */
const char *tsr_tokenizer_piece(const tsr_tokenizer *t, int prev, int token,
                                size_t *len);

/* Token id of an exact piece string, or -1.  Should a vocab hold a piece
 * twice (possible via from_arrays), lookups and encoding use the lowest id. */
int  tsr_tokenizer_lookup(const tsr_tokenizer *t, const char *piece);

#endif
