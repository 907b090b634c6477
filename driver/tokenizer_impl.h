/*
 * tokenizer_impl.h - the tokenizer's insides, shared by tokenizer.c (the
 * llama2.c kind, the merge loop, decoding) and tokenizer_gguf.c (GGUF
 * vocabularies: types, special tokens, merges, pre-tokenizer).  Not for
 * other files.
 */
#ifndef TSR_TOKENIZER_IMPL_H
#define TSR_TOKENIZER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "pretok.h"
#include "tokenizer.h"

/* One entry of the lookup index: a piece and its id. */
struct tok_index {
    const char *s;   /* piece bytes, inside blob */
    int         len; /* bytes */
    int         id;
};

/* In tsr_tokenizer.type: spaces after this special token are dropped. */
#define TOK_RSTRIP 0x80

/* A BPE merge: tokens left, right become token id; lower rank first. */
typedef struct {
    uint64_t key;    /* left << 32 | right */
    int      rank, id;
} tok_merge_rule;

struct tsr_tokenizer {
    int    vocab_size;
    int    max_token_length;  /* longest piece, bytes; sizes merge buffers   */
    char  *blob;              /* every piece, each followed by a NUL         */
    size_t *off;              /* (vocab_size,) offset of piece i in blob     */
    int   *len;               /* (vocab_size,) piece length, bytes           */
    float *scores;            /* (vocab_size,) merge priority, higher first  */
    struct tok_index *sorted; /* (vocab_size,) pieces in byte order         */
    short *byte;              /* (vocab_size,) NN for a "<0xNN>" piece, or -1 */
    unsigned char raw[256];   /* raw[b] == b: storage for decoded byte pieces */
    int    bos, eos;          /* special ids (TSR_TOKEN_BOS/EOS unless set)  */

    /* GGUF vocabularies (kind 0: llama2.c, none of the below) */
    int    kind;              /* 0, TSR_VOCAB_SPM or TSR_VOCAB_BPE           */
    uint8_t *type;            /* (vocab_size,) TSR_TT_*, | TOK_RSTRIP        */
    int   *special;           /* (n_special,) control / user-defined /
                                 unknown ids, longest text first            */
    int    n_special;
    tok_merge_rule *merges;   /* (n_merges,) by key, then rank               */
    int    n_merges;
    int    byte_tok[256];     /* BPE: the token of each byte's character     */
    uint16_t byte_cp[256];    /* BPE: GPT-2's character (code point) of each
                                 byte                                        */
    tsr_pretok *pre;          /* BPE pre-tokenizer                           */
    int    ignore_merges;     /* BPE: a word that is a token is taken whole  */
    int    add_bos;           /* texts start with BOS                        */
    int    add_space_prefix;  /* SPM: a text piece after the start or a
                                 special token gets the dummy ' '           */
    char  *dec;               /* BPE: every token's bytes                    */
    size_t *dec_off;          /* (vocab_size,) into dec                      */
    int   *dec_len;           /* (vocab_size,)                               */
    int   *eog;               /* (n_eog,) end-of-generation ids, ascending   */
    int    n_eog;
};

/* A growing array of token ids. */
typedef struct {
    int *v;
    int  n, cap;
} tok_buf;

/* Append id; -1 when out of memory. */
int  tok_buf_push(tok_buf *b, int id);

/* Piece i's bytes (blob). */
static inline const char *tok_piece(const tsr_tokenizer *t, int i) { return t->blob + t->off[i]; }

/* An empty tokenizer with room for vocab_size pieces totalling blob_bytes
 * (NULs included), or NULL. */
tsr_tokenizer *tok_alloc(int vocab_size, size_t blob_bytes);

/* Fill the sorted index and byte-piece table once off/len/blob are set. */
void tok_build_index(tsr_tokenizer *t);

/* Id of the piece equal to s[0..n), or -1 (the lowest id on duplicates). */
int  tok_lookup(const tsr_tokenizer *t, const char *s, int n);

/* Merge the adjacent tokens tok[0..*n) until no pair merges (SentencePiece:
 * the pair whose joined text is a token of the best score; BPE: the pair of
 * the lowest merge rank; leftmost on ties), leaving the result in
 * tok[0..*n).  Errors: TSR_ERR_NOMEM. */
int  tok_merge(const tsr_tokenizer *t, int *tok, int *n, tsr_err *e);

/* The BPE merge of tokens a, b: 1 with *rank and *id, or 0. */
int  tok_bpe_pair(const tsr_tokenizer *t, int a, int b, int *rank, int *id);

/* SentencePiece-encode text[0..len) (with a leading ' ' first when
 * prefix), appending to out: one token per UTF-8 character or byte tokens,
 * then tok_merge.  Errors: TSR_ERR_RANGE (a byte without a token),
 * TSR_ERR_NOMEM. */
int  tok_spm_text(const tsr_tokenizer *t, const char *text, size_t len, int prefix, tok_buf *out,
                  tsr_err *e);

/* Encode text[0..len) with a GGUF vocab's rules (flags TSR_ENC_*), appending
 * to out.  Errors: as tsr_tokenizer_encode_ex. */
int  tok_gguf_encode(const tsr_tokenizer *t, const char *text, size_t len, int flags,
                     tok_buf *out, tsr_err *e);

/* Free what tokenizer_gguf.c added. */
void tok_gguf_free(tsr_tokenizer *t);

#endif
