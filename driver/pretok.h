/*
 * pretok.h - the pre-tokenizer of a byte-level BPE vocabulary: text into
 * words before the merges, by the regular expressions its GGUF file names in
 * tokenizer.ggml.pre.
 *
 * A pre-tokenizer is a list of expressions applied in turn: each one cuts
 * every piece the previous ones left into its matches and the text between
 * them, and a match never reaches past the piece it is in (llama.cpp's
 * unicode_regex_split, src/unicode.cpp; the expressions are those of
 * src/llama-vocab.cpp at c392e509 for the names below).  The expressions run
 * on PCRE2 (Debian libpcre2-dev) with Unicode properties, compiled once and
 * JIT-compiled where PCRE2 can.
 *
 * Names (aliases as llama.cpp reads them):
 *   default                                  punctuation runs, GPT-2's, digits
 *   gpt-2 phi-2 roberta-bpe jina-*           GPT-2's expression
 *   llama3 llama-v3 llama-bpe falcon3 dbrx smaug-bpe   Llama 3's
 *   qwen2 deepseek-r1-qwen megrez stablelm2  Qwen2's (digits one by one)
 *   deepseek-coder                           newline, letters, punctuation,
 *                                            CJK, single digits
 *   starcoder refact command-r smollm codeshell exaone minerva-7b
 *                                            single digits, then GPT-2's
 * A pre-tokenizer is read-only once made and may be shared by threads.
 */
#ifndef TSR_PRETOK_H
#define TSR_PRETOK_H

#include <stddef.h>

#include "error.h"

typedef struct tsr_pretok tsr_pretok;

/* The pre-tokenizer named name[0..len) (not NUL-terminated; len 0 means the
 * file names none, which llama.cpp reads as `default`).  *ignore_merges
 * gets 1 where a word that is itself a token is taken whole before any merge
 * (Llama 3's vocabularies), *add_bos 1 where the name implies a BOS
 * (Llama 3), else 0; a file's tokenizer.ggml.add_bos_token overrides the
 * latter.  Errors: TSR_ERR_UNSUPPORTED naming an unknown pre-tokenizer,
 * TSR_ERR_NOMEM. */
int  tsr_pretok_open(const char *name, size_t len, tsr_pretok **out, int *ignore_merges,
                     int *add_bos, tsr_err *e);

void tsr_pretok_free(tsr_pretok *p);   /* NULL is a no-op */

/* Cut text[0..len) (UTF-8; invalid sequences are kept, as pieces of their
 * own) into words: (*ends)[0..*n) are the byte offsets where each word ends,
 * increasing, the last equal to len (none when len is 0).  *ends is
 * malloc'd; the caller frees it.  Safe to call from several threads at
 * once.  Errors: TSR_ERR_NOMEM, TSR_ERR_FORMAT (a PCRE2 matching error,
 * such as its match limit, with PCRE2's message). */
int  tsr_pretok_split(const tsr_pretok *p, const char *text, size_t len, size_t **ends, int *n,
                      tsr_err *e);

#endif
