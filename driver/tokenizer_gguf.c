/*
 * tokenizer_gguf.c - GGUF vocabularies: SentencePiece and byte-level BPE
 * with their token types, special tokens, merges and pre-tokenizer.
 *
 * Sections: GPT-2's byte characters, building, queries, special tokens in
 * the text, encoding.  The rules follow llama.cpp's src/llama-vocab.cpp at
 * c392e509, whose tests/test-tokenizer-0 vectors (../shared/vocab/) the
 * tests hold us to; the byte characters are GPT-2's encoder.py
 * bytes_to_unicode().
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

/* ------------------------------------------------ GPT-2's byte characters */

/* The printable characters GPT-2 writes for the bytes: the byte itself
 * for '!'..'~', 0xA1..0xAC and 0xAE..0xFF, the others U+0100 onwards in
 * byte order.  cp[b] is byte b's character; back[c] (c < 0x144) the byte
 * character c stands for, or -1. */
typedef struct {
    uint16_t cp[256];
    int16_t  back[0x144];
} byte_chars;

static void byte_chars_init(byte_chars *m)
{
    for (int c = 0; c < 0x144; c++) m->back[c] = -1;
    int k = 0;
    for (int b = 0; b < 256; b++) {
        int own = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        m->cp[b] = (uint16_t)(own ? b : 0x100 + k++);
        m->back[m->cp[b]] = (int16_t)b;
    }
}

/* UTF-8 of code point c (< 0x800) into p; returns the byte count. */
static int put_utf8_2(char *p, int c)
{
    if (c < 0x80) {
        p[0] = (char)c;
        return 1;
    }
    p[0] = (char)(0xC0 | (c >> 6));
    p[1] = (char)(0x80 | (c & 0x3F));
    return 2;
}

/* The byte a GPT-2 character stands for, from its UTF-8 at p (n bytes
 * left); *used gets the character's length.  -1 for any other character. */
static int char_byte(const byte_chars *m, const unsigned char *p, int n, int *used)
{
    int c;
    if (p[0] < 0x80) {
        c = p[0];
        *used = 1;
    } else if ((p[0] & 0xE0) == 0xC0 && n >= 2 && (p[1] & 0xC0) == 0x80) {
        c = ((p[0] & 0x1F) << 6) | (p[1] & 0x3F);
        *used = 2;
    } else {
        *used = 1;
        return -1;
    }
    return c < 0x144 ? m->back[c] : -1;
}

/* ------------------------------------------------------------ building --- */

static int merge_cmp(const void *pa, const void *pb)
{
    const tok_merge_rule *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Read the merges "left right" into t->merges.  Errors: TSR_ERR_FORMAT,
 * TSR_ERR_NOMEM. */
static int build_merges(tsr_tokenizer *t, const tsr_vocab_desc *d, tsr_err *e)
{
    if (!d->merges || d->n_merges <= 0)
        return tsr_seterr(e, TSR_ERR_FORMAT, "byte-level BPE vocabulary without "
                                             "tokenizer.ggml.merges");
    t->merges = malloc((size_t)d->n_merges * sizeof *t->merges);
    char *joined = malloc((size_t)t->max_token_length + 1);
    if (!t->merges || !joined) {
        free(joined);
        return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for %d merges", d->n_merges);
    }
    int rc = TSR_OK;
    for (int i = 0; i < d->n_merges && !rc; i++) {
        const char *m = d->merges[i];
        int n = d->merge_bytes[i];
        // the first space after the first byte separates the two sides
        const char *sp = n > 1 ? memchr(m + 1, ' ', (size_t)n - 1) : NULL;
        int nl = sp ? (int)(sp - m) : 0, nr = sp ? n - nl - 1 : 0;
        int l = sp ? tok_lookup(t, m, nl) : -1, r = sp ? tok_lookup(t, sp + 1, nr) : -1, id = -1;
        if (l >= 0 && r >= 0 && nl + nr <= t->max_token_length) {
            memcpy(joined, m, (size_t)nl);
            memcpy(joined + nl, sp + 1, (size_t)nr);
            id = tok_lookup(t, joined, nl + nr);
        }
        if (id < 0)
            rc = tsr_seterr(e, TSR_ERR_FORMAT,
                            "tokenizer.ggml.merges[%d] '%.*s' does not parse (%s)", i,
                            n > 60 ? 60 : n, m,
                            !sp ? "no space between two tokens" :
                            l < 0 ? "its left side is not a token" :
                            r < 0 ? "its right side is not a token" :
                                    "the two joined are not a token");
        t->merges[i] = (tok_merge_rule){ (uint64_t)l << 32 | (uint32_t)r, i, id };
    }
    free(joined);
    if (rc) return rc;
    t->n_merges = d->n_merges;
    qsort(t->merges, (size_t)t->n_merges, sizeof *t->merges, merge_cmp);
    return TSR_OK;
}

/* Every token's bytes (GPT-2 characters back to bytes) and each byte's
 * token.  Errors: TSR_ERR_FORMAT (a byte without a token), NOMEM. */
static int build_bytes(tsr_tokenizer *t, tsr_err *e)
{
    byte_chars m;
    byte_chars_init(&m);
    memcpy(t->byte_cp, m.cp, sizeof t->byte_cp);
    size_t total = 0;
    for (int i = 0; i < t->vocab_size; i++) total += (size_t)t->len[i];
    t->dec = malloc(total + 1);
    t->dec_off = malloc((size_t)t->vocab_size * sizeof *t->dec_off);
    t->dec_len = malloc((size_t)t->vocab_size * sizeof *t->dec_len);
    if (!t->dec || !t->dec_off || !t->dec_len)
        return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for the tokenizer");
    size_t o = 0;
    for (int i = 0; i < t->vocab_size; i++) {
        const unsigned char *p = (const unsigned char *)tok_piece(t, i);
        int n = t->len[i];
        t->dec_off[i] = o;
        if ((t->type[i] & ~TOK_RSTRIP) == TSR_TT_USER_DEFINED) {   // written as it reads
            memcpy(t->dec + o, p, (size_t)n);
            o += (size_t)n;
        } else {
            for (int k = 0; k < n;) {
                int used, b = char_byte(&m, p + k, n - k, &used);
                if (b >= 0) t->dec[o++] = (char)b;
                else for (int j = 0; j < used; j++) t->dec[o++] = (char)p[k + j];
                k += used;
            }
        }
        t->dec_len[i] = (int)(o - t->dec_off[i]);
    }
    /* a byte may have no token (StarCoder's vocab has none for 0xC0, 0xC1,
     * 0xF5..0xFF, which UTF-8 never uses): such a byte is dropped, as
     * llama.cpp drops it, after standing between its neighbours while they
     * merge */
    int n_bytes = 0;
    for (int b = 0; b < 256; b++) {
        char c[2];
        int n = put_utf8_2(c, m.cp[b]);
        t->byte_tok[b] = tok_lookup(t, c, n);
        n_bytes += t->byte_tok[b] >= 0;
    }
    if (n_bytes < 128)
        return tsr_seterr(e, TSR_ERR_FORMAT, "not a byte-level BPE vocabulary: tokens for only "
                                             "%d of the 256 bytes", n_bytes);
    return TSR_OK;
}

/* A special token and its text's length, for sorting longest first. */
typedef struct {
    int len, id;
} special_key;

static int special_cmp(const void *pa, const void *pb)
{
    const special_key *a = pa, *b = pb;
    if (a->len != b->len) return b->len - a->len;   // longest first
    return a->id - b->id;
}

static int int_cmp(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

/* Texts llama.cpp ends a generation at, whatever the metadata says. */
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>",
};

/* End-of-generation ids, the special-token list and Phi-3's rstrip.
 * Errors: NOMEM. */
static int build_special(tsr_tokenizer *t, const tsr_vocab_desc *d, tsr_err *e)
{
    int n_texts = (int)(sizeof eog_texts / sizeof eog_texts[0]);
    t->eog = malloc((size_t)(3 + n_texts) * sizeof *t->eog);
    if (!t->eog) return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for the tokenizer");
    int cand[3] = { d->eos, d->eot, d->eom };
    for (int i = 0; i < 3; i++)
        if (cand[i] >= 0 && cand[i] < t->vocab_size) t->eog[t->n_eog++] = cand[i];
    for (int i = 0; i < n_texts; i++) {
        int id = tok_lookup(t, eog_texts[i], (int)strlen(eog_texts[i]));
        if (id < 0) continue;
        t->eog[t->n_eog++] = id;
        t->type[id] = TSR_TT_CONTROL;   // llama.cpp overrides their type too
    }
    qsort(t->eog, (size_t)t->n_eog, sizeof *t->eog, int_cmp);
    int k = 0;
    for (int i = 0; i < t->n_eog; i++)
        if (k == 0 || t->eog[k - 1] != t->eog[i]) t->eog[k++] = t->eog[i];
    t->n_eog = k;

    for (int i = 0; i < t->vocab_size; i++) {
        int ty = t->type[i];
        if (ty == TSR_TT_CONTROL || ty == TSR_TT_USER_DEFINED || ty == TSR_TT_UNKNOWN)
            t->n_special++;
    }
    t->special = malloc((size_t)(t->n_special ? t->n_special : 1) * sizeof *t->special);
    if (!t->special) return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for the tokenizer");
    special_key *keys = malloc((size_t)(t->n_special ? t->n_special : 1) * sizeof *keys);
    if (!keys) return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for the tokenizer");
    k = 0;
    for (int i = 0; i < t->vocab_size; i++) {
        int ty = t->type[i];
        if (ty == TSR_TT_CONTROL || ty == TSR_TT_USER_DEFINED || ty == TSR_TT_UNKNOWN)
            keys[k++] = (special_key){ t->len[i], i };
    }
    qsort(keys, (size_t)t->n_special, sizeof *keys, special_cmp);
    for (int i = 0; i < t->n_special; i++) t->special[i] = keys[i].id;
    free(keys);

    if (d->rstrip_special) {   // Phi-3: every special but <unk>, <s>, <|endoftext|>; and </s>
        static const char *const keep[] = { "<unk>", "<s>", "<|endoftext|>" };
        for (int i = 0; i < t->n_special; i++) t->type[t->special[i]] |= TOK_RSTRIP;
        for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
            int id = tok_lookup(t, keep[i], (int)strlen(keep[i]));
            if (id >= 0) t->type[id] &= (uint8_t)~TOK_RSTRIP;
        }
        int id = tok_lookup(t, "</s>", 4);
        if (id >= 0) t->type[id] |= TOK_RSTRIP;
    }
    return TSR_OK;
}

/* The pieces and scores into a tokenizer (*out): a BPE vocabulary has no
 * scores, so it gets zeros. */
static int from_pieces(const tsr_vocab_desc *d, tsr_tokenizer **out, tsr_err *e)
{
    static const float zero = 0.0f;
    float *scores = NULL;
    if (d->kind == TSR_VOCAB_BPE) {   // from_arrays wants scores; BPE has none
        scores = malloc((size_t)(d->vocab_size > 0 ? d->vocab_size : 1) * sizeof *scores);
        if (!scores) return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for the tokenizer");
        for (int i = 0; i < d->vocab_size; i++) scores[i] = zero;
    }
    int rc = tsr_tokenizer_from_arrays(d->vocab_size, d->pieces, d->n_bytes,
                                       scores ? scores : d->scores, out, e);
    free(scores);
    return rc;
}

/* Token types (d's, or all normal; unknown ones 0), BOS and EOS. */
static int set_types(tsr_tokenizer *t, const tsr_vocab_desc *d, tsr_err *e)
{
    t->kind = d->kind;
    t->type = malloc((size_t)t->vocab_size);
    if (!t->type) return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for the tokenizer");
    for (int i = 0; i < t->vocab_size; i++) {
        int ty = d->types ? d->types[i] : TSR_TT_NORMAL;
        t->type[i] = (uint8_t)(ty >= TSR_TT_NORMAL && ty <= TSR_TT_BYTE ? ty : 0);
    }
    t->bos = d->bos >= 0 && d->bos < t->vocab_size ? d->bos : -1;
    t->eos = d->eos >= 0 && d->eos < t->vocab_size ? d->eos : -1;
    return TSR_OK;
}

/* SentencePiece: add_bos and add_space_prefix (default 1), and the byte
 * tokens, by type where the vocabulary types them. */
static void set_spm(tsr_tokenizer *t, const tsr_vocab_desc *d)
{
    t->add_bos = d->add_bos >= 0 ? d->add_bos : 1;
    t->add_space_prefix = d->add_space_prefix >= 0 ? d->add_space_prefix : 1;
    for (int b = 0; b < 256; b++) t->byte_tok[b] = -1;
    for (int i = 0; i < t->vocab_size; i++)   // byte tokens by type where typed
        if (t->byte[i] >= 0 && t->byte_tok[t->byte[i]] < 0 &&
            (!d->types || t->type[i] == TSR_TT_BYTE))
            t->byte_tok[t->byte[i]] = i;
}

/* Byte-level BPE: the pre-tokenizer (add_bos defaults to its rule), the
 * merges and the byte tokens. */
static int set_bpe(tsr_tokenizer *t, const tsr_vocab_desc *d, tsr_err *e)
{
    int pre_bos = 0;
    int rc = tsr_pretok_open(d->pre, d->pre ? d->pre_len : 0, &t->pre, &t->ignore_merges,
                             &pre_bos, e);
    if (rc) return rc;
    t->add_bos = d->add_bos >= 0 ? d->add_bos : pre_bos;
    if ((rc = build_merges(t, d, e))) return rc;
    return build_bytes(t, e);
}

int tsr_tokenizer_from_vocab(const tsr_vocab_desc *d, tsr_tokenizer **out, tsr_err *e)
{
    if (!out) return tsr_seterr(e, TSR_ERR_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!d || (d->kind != TSR_VOCAB_SPM && d->kind != TSR_VOCAB_BPE) ||
        (d->kind == TSR_VOCAB_SPM && !d->scores))
        return tsr_seterr(e, TSR_ERR_ARG, "tokenizer: a vocabulary of no known kind");
    tsr_tokenizer *t;
    int rc = from_pieces(d, &t, e);
    if (rc) return rc;
    if ((rc = set_types(t, d, e))) goto fail;
    if (d->kind == TSR_VOCAB_SPM) set_spm(t, d);
    else if ((rc = set_bpe(t, d, e))) goto fail;
    if ((rc = build_special(t, d, e))) goto fail;
    if (t->add_bos && t->bos < 0) {
        rc = tsr_seterr(e, TSR_ERR_FORMAT, "the vocabulary adds a BOS but names none "
                                           "(tokenizer.ggml.bos_token_id)");
        goto fail;
    }
    *out = t;
    return TSR_OK;
fail:
    tsr_tokenizer_free(t);
    return rc;
}

void tok_gguf_free(tsr_tokenizer *t)
{
    free(t->type);
    free(t->special);
    free(t->merges);
    tsr_pretok_free(t->pre);
    free(t->dec);
    free(t->dec_off);
    free(t->dec_len);
    free(t->eog);
}

/* ------------------------------------------------------------- queries --- */

int tsr_tokenizer_add_bos(const tsr_tokenizer *t) { return t->add_bos && t->bos >= 0; }

int tsr_tokenizer_is_eog(const tsr_tokenizer *t, int token)
{
    if (!t->kind) return token == t->eos || token == t->bos;
    return bsearch(&token, t->eog, (size_t)t->n_eog, sizeof *t->eog, int_cmp) != NULL;
}

int tsr_tokenizer_eog_ids(const tsr_tokenizer *t, int *ids, int max)
{
    if (!t->kind) {
        int v[2] = { t->bos < t->eos ? t->bos : t->eos, t->bos < t->eos ? t->eos : t->bos };
        int n = v[0] == v[1] ? 1 : 2;
        for (int i = 0; i < n && i < max; i++) ids[i] = v[i];
        return n;
    }
    for (int i = 0; i < t->n_eog && i < max; i++) ids[i] = t->eog[i];
    return t->n_eog;
}

int tsr_tokenizer_is_control(const tsr_tokenizer *t, int token)
{
    if (!t->kind || token < 0 || token >= t->vocab_size) return 0;
    int ty = t->type[token] & ~TOK_RSTRIP;
    return !(ty == TSR_TT_NORMAL || ty == TSR_TT_USER_DEFINED ||
             (ty == TSR_TT_BYTE && t->kind == TSR_VOCAB_SPM));
}

int tok_bpe_pair(const tsr_tokenizer *t, int a, int b, int *rank, int *id)
{
    uint64_t key = (uint64_t)a << 32 | (uint32_t)b;
    int lo = 0, hi = t->n_merges;   // first rule with key >= key
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (t->merges[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    if (lo == t->n_merges || t->merges[lo].key != key) return 0;
    *rank = t->merges[lo].rank;
    *id = t->merges[lo].id;
    return 1;
}

/* -------------------------------------------- special tokens in the text */

/* A piece of the text: bytes [off, off + len) still to tokenize, or a
 * special token (tok >= 0). */
typedef struct {
    size_t off, len;
    int    tok;
} frag;

typedef struct {
    frag *v;
    int   n, cap;
} frag_list;

static int frag_push(frag_list *l, size_t off, size_t len, int tok)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        frag *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (frag){ off, len, tok };
    return 0;
}

/* Cut the special tokens out of text, longest first, each at every place
 * it occurs in what is still text (llama.cpp tokenizer_st_partition):
 * user-defined ones always, control and unknown ones when `special`.
 * Errors: NOMEM. */
static int partition(const tsr_tokenizer *t, const char *text, size_t len, int special,
                     frag_list *out)
{
    frag_list cur = { 0 }, next = { 0 };
    int rc = TSR_OK;
    if (len && frag_push(&cur, 0, len, -1)) rc = TSR_ERR_NOMEM;
    for (int s = 0; s < t->n_special && !rc; s++) {
        int id = t->special[s], ty = t->type[id] & ~TOK_RSTRIP;
        if (!special && ty != TSR_TT_USER_DEFINED) continue;
        const char *p = tok_piece(t, id);
        size_t pl = (size_t)t->len[id];
        if (pl == 0) continue;
        next.n = 0;
        for (int i = 0; i < cur.n && !rc; i++) {
            frag f = cur.v[i];
            if (f.tok >= 0) {
                if (frag_push(&next, f.off, f.len, f.tok)) rc = TSR_ERR_NOMEM;
                continue;
            }
            size_t at = f.off, end = f.off + f.len;
            for (;;) {
                const char *m = end - at >= pl ? memmem(text + at, end - at, p, pl) : NULL;
                if (!m) break;
                size_t mo = (size_t)(m - text);
                if (mo > at && frag_push(&next, at, mo - at, -1)) { rc = TSR_ERR_NOMEM; break; }
                if (frag_push(&next, mo, pl, id)) { rc = TSR_ERR_NOMEM; break; }
                at = mo + pl;
                if (t->type[id] & TOK_RSTRIP)
                    while (at < end && isspace((unsigned char)text[at])) at++;
            }
            if (!rc && at < end && frag_push(&next, at, end - at, -1)) rc = TSR_ERR_NOMEM;
        }
        frag_list tmp = cur;
        cur = next;
        next = tmp;
    }
    free(next.v);
    if (rc) {
        free(cur.v);
        return rc;
    }
    *out = cur;
    return TSR_OK;
}

/* ------------------------------------------------------------ encoding --- */

/* One pre-tokenized word text[0..n) into tokens: whole if it is a token and
 * the vocab says so, else its bytes' characters merged.  scratch holds 2n
 * bytes. */
static int bpe_word(const tsr_tokenizer *t, const char *w, size_t n, char *scratch, tok_buf *out,
                    tsr_err *e)
{
    if (t->ignore_merges) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) k += (size_t)put_utf8_2(scratch + k, t->byte_cp[(unsigned char)w[i]]);
        int id = k <= (size_t)t->max_token_length ? tok_lookup(t, scratch, (int)k) : -1;
        if (id >= 0) return tok_buf_push(out, id) ? TSR_ERR_NOMEM : TSR_OK;
    }
    int first = out->n;
    for (size_t i = 0; i < n; i++)
        if (tok_buf_push(out, t->byte_tok[(unsigned char)w[i]])) return TSR_ERR_NOMEM;
    int m = out->n - first;
    if (m == 0) return TSR_OK;
    int rc = tok_merge(t, out->v + first, &m, e);
    int k = first;   // drop the bytes without a token
    for (int i = first; i < first + m; i++)
        if (out->v[i] >= 0) out->v[k++] = out->v[i];
    out->n = k;
    return rc;
}

/* Byte-level BPE of the text piece text[0..len). */
static int bpe_text(const tsr_tokenizer *t, const char *text, size_t len, tok_buf *out, tsr_err *e)
{
    size_t *ends;
    int n;
    int rc = tsr_pretok_split(t->pre, text, len, &ends, &n, e);
    if (rc) return rc;
    size_t longest = 0, start = 0;
    for (int i = 0; i < n; i++) {
        if (ends[i] - start > longest) longest = ends[i] - start;
        start = ends[i];
    }
    char *scratch = malloc(2 * longest + 1);
    if (!scratch) rc = TSR_ERR_NOMEM;
    start = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = bpe_word(t, text + start, ends[i] - start, scratch, out, e);
        start = ends[i];
    }
    free(scratch);
    free(ends);
    return rc;
}

int tok_gguf_encode(const tsr_tokenizer *t, const char *text, size_t len, int flags,
                    tok_buf *out, tsr_err *e)
{
    frag_list fl = { 0 };
    int rc = partition(t, text, len, flags & TSR_ENC_SPECIAL, &fl);
    int prev_special = 1;   // a text's start counts as after a special token
    for (int i = 0; i < fl.n && !rc; i++) {
        const frag *f = &fl.v[i];
        if (f->tok >= 0) {
            rc = tok_buf_push(out, f->tok) ? TSR_ERR_NOMEM : TSR_OK;
            prev_special = 1;
        } else if (t->kind == TSR_VOCAB_SPM) {
            rc = tok_spm_text(t, text + f->off, f->len, t->add_space_prefix && prev_special, out, e);
            prev_special = 0;
        } else {
            rc = bpe_text(t, text + f->off, f->len, out, e);
            prev_special = 0;
        }
    }
    free(fl.v);
    return rc;
}
