/* textout.h - token pieces into the text a reader sees, for every command
 * that prints or sends generated text (tessera run and chat, the server).
 *
 * Token pieces are raw bytes: a whole word from the vocabulary, one byte of
 * a byte-fallback token ("<0xE2>"), or a byte-level BPE token that ends
 * inside a character the next one completes.  Here they become UTF-8
 * (RFC 3629's table of well-formed sequences): an incomplete character waits
 * for its next bytes, a byte that cannot start or continue a character
 * becomes U+FFFD, a lone control byte is dropped (as llama2.c's safe_printf
 * drops it), and the text is held back while it might be the start of a
 * stop string.  One textout per stream; not thread-safe. */
#ifndef TSR_TEXTOUT_H
#define TSR_TEXTOUT_H

#include <stddef.h>
#include <stdio.h>

#include "tessera.h"

typedef struct textout {
    char  *buf;           /* (cap,) released and held text, valid UTF-8      */
    size_t len, cap, sent;/* bytes in buf; bytes released so far             */
    unsigned char part[4];/* an incomplete UTF-8 character                   */
    int    part_len, part_need;
    char *const *stop;    /* n_stop stop strings, not owned                  */
    int    n_stop;
    int    stopped;       /* a stop string matched; buf ends before it       */
} textout;

void   textout_init(textout *t, char *const *stop, int n_stop);
void   textout_free(textout *t);
/* Add one token's piece.  Returns 0, or -1 out of memory. */
int    textout_push(textout *t, const char *piece, size_t n);
/* The newly releasable text: *p points into t, valid until the next push. */
size_t textout_take(textout *t, const char **p);
/* End of the turn: release what was held (an incomplete character as
 * U+FFFD). */
size_t textout_finish(textout *t, const char **p);

/* ------------------------------------------- printing tokens (run, chat) --- */

/* The one rule by which a command prints generated tokens: the piece of
 * token after prev (tsr_model_token_text), none for the model's BOS and
 * EOS (they end the text unprinted), then through a textout (whole UTF-8
 * characters, lone control bytes dropped).  *n gets the piece's length;
 * NULL when there is nothing to print. */
const char *textout_token(tsr_model *m, int prev, int token, int bos, int eos, size_t *n);

/* Push a piece (textout_token's) into t and write what is ready to out,
 * flushed, so the reader sees each character as it is made.  Returns 0,
 * or -1 out of memory (nothing written). */
int textout_print(textout *t, FILE *out, const char *piece, size_t n);

/* The end of a printed stream: write what t held back (textout_finish). */
void textout_print_end(textout *t, FILE *out);

#endif
