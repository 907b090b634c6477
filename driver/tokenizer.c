/*
 * tokenizer.c - the tokenizers of tokenizer.h.
 *
 * Sections: the tokenizer struct, building it (from arrays or from a
 * tokenizer.bin), lookup, encoding, decoding.  GGUF vocabularies' own
 * parts (types, special tokens, merges, byte characters) are in
 * tokenizer_gguf.c; the merge loop here serves every kind.
 *
 * Encoding gives exactly the ids of llama2.c run.c encode().  run.c rescans
 * the whole sequence after every merge (quadratic, with a string lookup per
 * pair); here each adjacent pair is looked up once, kept in a max-heap keyed
 * by (score, position), and only the two pairs touching a merge are looked up
 * again.  Ordering by position on equal scores picks the same pair run.c
 * picks: the leftmost of the best.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer_impl.h"

/* ---------------------------------------------------------- tokenizer --- */

/* run.c starts its best score at -1e10: a merge scored at or below that is
 * never taken, so it is not taken here either. */
#define MERGE_SCORE_FLOOR (-1e10f)

/* Sanity bound on tokenizer.bin's max_token_length: real vocabularies stay
 * far below (27 bytes for llama2's 32000 tokens, a few hundred for larger
 * BPE vocabs); beyond it the header is garbage, not a tokenizer. */
#define MAX_PIECE_BYTES 65536

/* ---------------------------------------------------------- building ---- */


/* Byte order of two byte strings, shorter first on a common prefix: the
 * order strcmp() gives run.c for NUL-free pieces. */
static int bytes_cmp(const char *a, int na, const char *b, int nb)
{
    int n = na < nb ? na : nb;
    int c = memcmp(a, b, (size_t)n);
    if (c) return c;
    return (na > nb) - (na < nb);
}

static int index_cmp(const void *pa, const void *pb)
{
    const struct tok_index *a = pa, *b = pb;
    int c = bytes_cmp(a->s, a->len, b->s, b->len);
    if (c) return c;
    return (a->id > b->id) - (a->id < b->id);   // duplicates: lowest id first
}

/* "<0xNN>" (either hex case) -> NN, anything else -> -1.  run.c decode()
 * turns such pieces into the single raw byte. */
static int parse_byte_piece(const char *p, int n)
{
    if (n != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        int c = (unsigned char)p[k], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else return -1;
        v = v * 16 + d;
    }
    return v;
}

tsr_tokenizer *tok_alloc(int vocab_size, size_t blob_bytes)
{
    tsr_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    size_t n = (size_t)vocab_size;
    t->vocab_size = vocab_size;
    t->bos = TSR_TOKEN_BOS;
    t->eos = TSR_TOKEN_EOS;
    t->blob   = malloc(blob_bytes ? blob_bytes : 1);
    t->off    = malloc(n * sizeof *t->off);
    t->len    = malloc(n * sizeof *t->len);
    t->scores = malloc(n * sizeof *t->scores);
    t->sorted = malloc(n * sizeof *t->sorted);
    t->byte   = malloc(n * sizeof *t->byte);
    if (!t->blob || !t->off || !t->len || !t->scores || !t->sorted || !t->byte) {
        tsr_tokenizer_free(t);
        return NULL;
    }
    for (int b = 0; b < 256; b++) {
        t->raw[b] = (unsigned char)b;
        t->byte_tok[b] = -1;
    }
    t->add_bos = 1;
    return t;
}

void tok_build_index(tsr_tokenizer *t)
{
    t->max_token_length = 0;
    for (int i = 0; i < t->vocab_size; i++) {
        t->sorted[i] = (struct tok_index){ tok_piece(t, i), t->len[i], i };
        t->byte[i] = (short)parse_byte_piece(tok_piece(t, i), t->len[i]);
        if (t->len[i] > t->max_token_length) t->max_token_length = t->len[i];
        if (t->byte[i] >= 0 && t->byte_tok[t->byte[i]] < 0) t->byte_tok[t->byte[i]] = i;
    }
    qsort(t->sorted, (size_t)t->vocab_size, sizeof *t->sorted, index_cmp);
}

int tsr_tokenizer_from_arrays(int vocab_size, const char *const *pieces,
                              const int *n_bytes, const float *scores,
                              tsr_tokenizer **out, tsr_err *e)
{
    if (!out) return tsr_seterr(e, TSR_ERR_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (vocab_size <= 0 || !pieces || !n_bytes || !scores)
        return tsr_seterr(e, TSR_ERR_ARG, "tokenizer: vocab_size %d or a NULL array",
                          vocab_size);
    size_t blob_bytes = 0;
    for (int i = 0; i < vocab_size; i++) {
        if (n_bytes[i] < 0 || (n_bytes[i] > 0 && !pieces[i]))
            return tsr_seterr(e, TSR_ERR_ARG, "tokenizer: token %d has length %d%s",
                              i, n_bytes[i], n_bytes[i] < 0 ? "" : " and no bytes");
        blob_bytes += (size_t)n_bytes[i] + 1;
    }
    tsr_tokenizer *t = tok_alloc(vocab_size, blob_bytes);
    if (!t) return tsr_seterr(e, TSR_ERR_NOMEM, "tokenizer: out of memory for %d tokens", vocab_size);
    size_t o = 0;
    for (int i = 0; i < vocab_size; i++) {
        t->off[i] = o;
        t->len[i] = n_bytes[i];
        t->scores[i] = scores[i];
        if (n_bytes[i]) memcpy(t->blob + o, pieces[i], (size_t)n_bytes[i]);
        t->blob[o + (size_t)n_bytes[i]] = '\0';
        o += (size_t)n_bytes[i] + 1;
    }
    tok_build_index(t);
    *out = t;
    return TSR_OK;
}

/* Little-endian int32/fp32 at p (llama2.c writes host order; every target we
 * build for is little-endian). */
static int32_t rd_i32(const unsigned char *p) { int32_t v; memcpy(&v, p, 4); return v; }
static float   rd_f32(const unsigned char *p) { float v;   memcpy(&v, p, 4); return v; }

/* Read all of path into a malloc'd buffer.  Errors: TSR_ERR_IO, TSR_ERR_NOMEM. */
static int read_file(const char *path, unsigned char **data, size_t *size, tsr_err *e)
{
    *data = NULL;
    *size = 0;
    // stat before fopen: opening a FIFO for reading blocks until a writer
    // comes, so anything but a regular file is refused unopened.
    struct stat st;
    if (stat(path, &st) != 0)
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return tsr_seterr(e, TSR_ERR_IO, "%s: is not a regular file%s", path,
                          S_ISDIR(st.st_mode) ? " (a directory)" :
                          S_ISFIFO(st.st_mode) ? " (a named pipe)" : "");
    FILE *f = fopen(path, "rb");
    if (!f) return tsr_seterr(e, TSR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {   // changed since stat
        fclose(f);
        return tsr_seterr(e, TSR_ERR_IO, "%s: is not a regular file", path);
    }
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot get the file size", path);
    }
    unsigned char *d = malloc(n ? (size_t)n : 1);
    if (!d) {
        fclose(f);
        return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory for %ld bytes", path, n);
    }
    if (fread(d, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(d);
        return tsr_seterr(e, TSR_ERR_IO, "%s: read error", path);
    }
    fclose(f);
    *data = d;
    *size = (size_t)n;
    return TSR_OK;
}

/* Outcome of walking the token records of a tokenizer.bin. */
typedef struct {
    enum { SCAN_OK, SCAN_TRUNCATED, SCAN_BAD_LENGTH } status;
    long    count;       /* whole records read                            */
    size_t  end;         /* offset after the last whole record            */
    size_t  blob_bytes;  /* piece bytes of those records, plus one NUL each */
    int32_t bad_len;     /* the offending length when SCAN_BAD_LENGTH      */
} token_scan;

/* Walk records (fp32 score, int32 len, len bytes) of d[start..size), at most
 * `limit` of them, checking each length against max_len and the data end.
 * On a bad record, count is its index. */
static token_scan scan_tokens(const unsigned char *d, size_t size, size_t start,
                              int max_len, long limit)
{
    token_scan r = { SCAN_OK, 0, start, 0, 0 };
    size_t o = start;
    while (o < size && r.count < limit) {
        if (size - o < 8) { r.status = SCAN_TRUNCATED; break; }
        int32_t n = rd_i32(d + o + 4);
        if (n < 0 || n > max_len) { r.status = SCAN_BAD_LENGTH; r.bad_len = n; break; }
        if (size - o - 8 < (size_t)n) { r.status = SCAN_TRUNCATED; break; }
        r.blob_bytes += (size_t)n + 1;
        o += 8 + (size_t)n;
        r.count++;
    }
    r.end = o;
    return r;
}

int tsr_tokenizer_load(const char *path, int vocab_size, tsr_tokenizer **out, tsr_err *e)
{
    if (!out || !path) return tsr_seterr(e, TSR_ERR_ARG, "tokenizer: path or out is NULL");
    *out = NULL;
    if (vocab_size <= 0)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: vocab_size %d is not positive", path, vocab_size);

    unsigned char *d;
    size_t size;
    int rc = read_file(path, &d, &size, e);
    if (rc) return rc;

    // header: int32 max_token_length, the bound for every record's length
    if (size < 4) {
        free(d);
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: truncated: %zu bytes, no header", path, size);
    }
    int32_t max_len = rd_i32(d);
    if (max_len <= 0 || max_len > MAX_PIECE_BYTES) {
        free(d);
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: bad max_token_length %d (want 1..%d)",
                          path, (int)max_len, MAX_PIECE_BYTES);
    }

    // records: every length checked against max_token_length and the file end
    token_scan sc = scan_tokens(d, size, 4, max_len, vocab_size);
    if (sc.status == SCAN_BAD_LENGTH)
        rc = tsr_seterr(e, TSR_ERR_FORMAT,
                        "%s: token %ld has length %d, outside [0, max_token_length %d] (not a "
                        "llama2.c tokenizer.bin? -z takes the tokenizer, -m the model)",
                        path, sc.count, (int)sc.bad_len, (int)max_len);
    else if (sc.status == SCAN_TRUNCATED)
        rc = tsr_seterr(e, TSR_ERR_FORMAT, "%s: truncated: token %ld of %d runs past the end (%zu bytes)",
                        path, sc.count, vocab_size, size);
    else if (sc.count < vocab_size)
        rc = tsr_seterr(e, TSR_ERR_FORMAT, "%s: holds %ld tokens, the model's vocab_size is %d",
                        path, sc.count, vocab_size);
    else if (sc.end < size) {
        // more tokens than expected: count the rest if it parses, for the message
        token_scan rest = scan_tokens(d, size, sc.end, max_len, 0x7fffffffL);
        if (rest.status == SCAN_OK)
            rc = tsr_seterr(e, TSR_ERR_FORMAT, "%s: holds %ld tokens, the model's vocab_size is %d",
                            path, (long)vocab_size + rest.count, vocab_size);
        else
            rc = tsr_seterr(e, TSR_ERR_FORMAT,
                            "%s: holds more than %d tokens (%zu bytes after token %d), the model's vocab_size is %d",
                            path, vocab_size, size - sc.end, vocab_size - 1, vocab_size);
    }
    if (rc) {
        free(d);
        return rc;
    }

    tsr_tokenizer *t = tok_alloc(vocab_size, sc.blob_bytes);
    if (!t) {
        free(d);
        return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory for %d tokens", path, vocab_size);
    }
    size_t o = 4, bo = 0;
    for (int i = 0; i < vocab_size; i++) {
        int32_t n = rd_i32(d + o + 4);
        t->scores[i] = rd_f32(d + o);
        t->len[i] = n;
        t->off[i] = bo;
        memcpy(t->blob + bo, d + o + 8, (size_t)n);
        t->blob[bo + (size_t)n] = '\0';
        bo += (size_t)n + 1;
        o += 8 + (size_t)n;
    }
    free(d);
    tok_build_index(t);
    *out = t;
    return TSR_OK;
}

void tsr_tokenizer_free(tsr_tokenizer *t)
{
    if (!t) return;
    free(t->blob);
    free(t->off);
    free(t->len);
    free(t->scores);
    free(t->sorted);
    free(t->byte);
    tok_gguf_free(t);
    free(t);
}

int tsr_tokenizer_vocab_size(const tsr_tokenizer *t) { return t->vocab_size; }

void tsr_tokenizer_set_special(tsr_tokenizer *t, int bos, int eos)
{
    if (bos >= 0 && bos < t->vocab_size) t->bos = bos;
    if (eos >= 0 && eos < t->vocab_size) t->eos = eos;
}

int tsr_tokenizer_bos(const tsr_tokenizer *t) { return t->bos; }
int tsr_tokenizer_eos(const tsr_tokenizer *t) { return t->eos; }

/* ------------------------------------------------------------ lookup ---- */

/* Id of the piece equal to s[0..n), or -1: binary search of the sorted
 * index, as run.c str_lookup() does with bsearch().  This one finds the
 * first match, so a vocab with a duplicated piece (possible through
 * from_arrays) answers with the lowest id. */
int tok_lookup(const tsr_tokenizer *t, const char *s, int n)
{
    int lo = 0, hi = t->vocab_size;   // first entry whose piece >= s
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const struct tok_index *x = &t->sorted[mid];
        if (bytes_cmp(x->s, x->len, s, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < t->vocab_size) {
        const struct tok_index *x = &t->sorted[lo];
        if (bytes_cmp(x->s, x->len, s, n) == 0) return x->id;
    }
    return -1;
}

int tsr_tokenizer_lookup(const tsr_tokenizer *t, const char *piece)
{
    size_t n = strlen(piece);
    if (n > (size_t)t->max_token_length) return -1;
    return tok_lookup(t, piece, (int)n);
}

/* ---------------------------------------------------------- encoding ---- */

/* A candidate merge of the adjacent nodes left, right into token id.  The
 * generations say which versions of the two nodes it was computed for. */
typedef struct {
    float    score;
    int      left, right, id;
    unsigned gen_left, gen_right;
} merge;

/* Heap order: a before b if a has the higher score, or the same score and
 * sits further left.  Node indices grow left to right and merging keeps the
 * left node, so position order is node index order. */
static int merge_before(const merge *a, const merge *b)
{
    if (a->score != b->score) return a->score > b->score;
    return a->left < b->left;
}

static void heap_push(merge *h, int *n, merge m)
{
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!merge_before(&m, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = m;
}

static merge heap_pop(merge *h, int *n)
{
    merge top = h[0], last = h[--*n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && merge_before(&h[c + 1], &h[c])) c++;
        if (!merge_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

/* Working state of one tok_merge() call. */
typedef struct {
    int      *tok;    /* (n,) token id at each node                        */
    int      *prev;   /* (n,) node to the left, -1 at the start            */
    int      *next;   /* (n,) node to the right, -1 at the end             */
    unsigned *gen;    /* (n,) bumped whenever the node changes or dies     */
    merge    *heap;   /* (3n,) candidate merges; stale ones skipped on pop */
    int       n_heap;
    char     *buf;    /* (2 * max_token_length,) concatenation scratch     */
} merge_state;

/* Look up the merge of nodes l, r and queue it if it can happen: for
 * SentencePiece when the joined text is a token run.c would take, for BPE
 * when the pair has a merge rule (its score the negated rank). */
static void queue_pair(const tsr_tokenizer *t, merge_state *s, int l, int r)
{
    if (l < 0 || r < 0) return;
    int a = s->tok[l], b = s->tok[r];
    if (a < 0 || b < 0) return;   // a byte without a token merges with nothing
    if (t->kind == TSR_VOCAB_BPE) {
        int rank, id;
        if (!tok_bpe_pair(t, a, b, &rank, &id)) return;
        merge m = { -(float)rank, l, r, id, s->gen[l], s->gen[r] };
        heap_push(s->heap, &s->n_heap, m);
        return;
    }
    int na = t->len[a], nb = t->len[b];
    if (na + nb > t->max_token_length) return;   // cannot be a piece
    memcpy(s->buf, tok_piece(t, a), (size_t)na);
    memcpy(s->buf + na, tok_piece(t, b), (size_t)nb);
    int id = tok_lookup(t, s->buf, na + nb);
    if (id < 0 || !(t->scores[id] > MERGE_SCORE_FLOOR)) return;
    merge m = { t->scores[id], l, r, id, s->gen[l], s->gen[r] };
    heap_push(s->heap, &s->n_heap, m);
}

int tok_merge(const tsr_tokenizer *t, int *tok, int *n_io, tsr_err *e)
{
    int n = *n_io;
    if (n < 2) return TSR_OK;
    merge_state s = { .tok = tok };
    s.prev = malloc((size_t)n * sizeof *s.prev);
    s.next = malloc((size_t)n * sizeof *s.next);
    s.gen  = calloc((size_t)n, sizeof *s.gen);
    s.heap = malloc((size_t)n * 3 * sizeof *s.heap);
    s.buf  = malloc((size_t)t->max_token_length * 2 + 1);
    int rc = TSR_OK;
    if (!s.prev || !s.next || !s.gen || !s.heap || !s.buf) {
        rc = tsr_seterr(e, TSR_ERR_NOMEM, "tokenizer: out of memory merging %d tokens", n);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        s.prev[i] = i - 1;
        s.next[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int i = 0; i + 1 < n; i++) queue_pair(t, &s, i, i + 1);
    while (s.n_heap > 0) {
        merge m = heap_pop(s.heap, &s.n_heap);
        if (s.gen[m.left] != m.gen_left || s.gen[m.right] != m.gen_right ||
            s.next[m.left] != m.right)
            continue;   // a node changed since this pair was queued
        int l = m.left, r = m.right;
        s.tok[l] = m.id;
        s.gen[l]++;
        s.gen[r]++;
        s.next[l] = s.next[r];
        if (s.next[r] >= 0) s.prev[s.next[r]] = l;
        queue_pair(t, &s, s.prev[l], l);
        queue_pair(t, &s, l, s.next[l]);
    }
    // compact in order: node 0 always lives (merges keep the left node)
    int k = 0;
    for (int i = 0; i >= 0; i = s.next[i]) tok[k++] = tok[i];
    *n_io = k;
done:
    free(s.prev);
    free(s.next);
    free(s.gen);
    free(s.heap);
    free(s.buf);
    return rc;
}

int tok_buf_push(tok_buf *b, int id)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 64;
        int *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = id;
    return 0;
}

/* Append the token(s) for one code point p[0..n): its own token if the
 * vocab has it, else one byte-fallback token per byte (llama2.c: id byte +
 * 3, as run.c; a GGUF vocab: its "<0xNN>" token).  Errors: TSR_ERR_RANGE
 * when the vocab has no token for a byte. */
static int push_point(const tsr_tokenizer *t, const char *p, int n, tok_buf *out, tsr_err *e)
{
    int id = tok_lookup(t, p, n);
    if (id >= 0) return tok_buf_push(out, id) ? TSR_ERR_NOMEM : TSR_OK;
    for (int i = 0; i < n; i++) {
        int b = (unsigned char)p[i];
        int bt = t->kind ? t->byte_tok[b] : b + 3;   // <0x00> is id 3 in llama2.c vocabularies
        if (bt < 0 || bt >= t->vocab_size)
            return tsr_seterr(e, TSR_ERR_RANGE, "tokenizer: byte 0x%02X has no token (%s)", b,
                              t->kind ? "no <0xNN> piece for it" : "vocab too small for id byte+3");
        if (tok_buf_push(out, bt)) return TSR_ERR_NOMEM;
    }
    return TSR_OK;
}

int tok_spm_text(const tsr_tokenizer *t, const char *text, size_t len, int prefix, tok_buf *out,
                 tsr_err *e)
{
    int first = out->n, rc = TSR_OK;
    // the dummy prefix " " that sentencepiece adds
    if (prefix) rc = push_point(t, " ", 1, out, e);
    // one token per UTF-8 code point: a lead byte and up to 3 continuation
    // bytes (0b10xxxxxx); longer runs are cut at 4 bytes as run.c does
    for (size_t i = 0; i < len && !rc;) {
        size_t j = i + 1;
        while (j < len && ((unsigned char)text[j] & 0xC0) == 0x80 && j - i < 4) j++;
        rc = push_point(t, text + i, (int)(j - i), out, e);
        i = j;
    }
    if (rc == TSR_ERR_NOMEM)
        return tsr_seterr(e, TSR_ERR_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
    if (rc) return rc;
    int n = out->n - first;
    if (n < 2) return TSR_OK;   // nothing to merge (and out->v may be NULL)
    rc = tok_merge(t, out->v + first, &n, e);
    out->n = first + n;
    return rc;
}

/* The BOS (EOS) id a text asked to start (end) with, inside the vocab:
 * a vocab too small for llama2.c's BOS (1) / EOS (2) ids is refused. */
static int ends_in_vocab(const tsr_tokenizer *t, int bos, int eos, tsr_err *e)
{
    int bad_bos = bos && (t->bos < 0 || t->bos >= t->vocab_size);
    int bad_eos = eos && (t->eos < 0 || t->eos >= t->vocab_size);
    if (!bad_bos && !bad_eos) return TSR_OK;
    return tsr_seterr(e, TSR_ERR_RANGE, "tokenizer: the %s id %d is outside the vocab of %d",
                      bad_bos ? "BOS" : "EOS", bad_bos ? t->bos : t->eos, t->vocab_size);
}

int tsr_tokenizer_encode_ex(const tsr_tokenizer *t, const char *text, size_t len, int flags,
                            int *tokens, int max_tokens, int *n_tokens, tsr_err *e)
{
    if (n_tokens) *n_tokens = 0;
    if (!t || !text || !n_tokens || (max_tokens > 0 && !tokens))
        return tsr_seterr(e, TSR_ERR_ARG, "tokenizer: encode given a NULL argument");
    int bos = flags & TSR_ENC_BOS, eos = flags & TSR_ENC_EOS;
    int rc0 = ends_in_vocab(t, bos, eos, e);
    if (rc0) return rc0;
    if (len > (size_t)(INT32_MAX / 4 - 4))
        return tsr_seterr(e, TSR_ERR_RANGE, "tokenizer: text of %zu bytes is too long", len);

    tok_buf out = { 0 };
    int rc = TSR_OK;
    if (bos && tok_buf_push(&out, t->bos)) rc = TSR_ERR_NOMEM;
    if (!rc && t->kind) rc = tok_gguf_encode(t, text, len, flags, &out, e);
    else if (!rc) rc = tok_spm_text(t, text, len, len > 0, &out, e);
    if (!rc && eos && tok_buf_push(&out, t->eos)) rc = TSR_ERR_NOMEM;
    if (rc == TSR_ERR_NOMEM)
        rc = tsr_seterr(e, TSR_ERR_NOMEM, "tokenizer: out of memory encoding %zu bytes", len);
    if (!rc && out.n > max_tokens)
        rc = tsr_seterr(e, TSR_ERR_RANGE, "tokenizer: text needs %d tokens, room for %d", out.n,
                        max_tokens);
    if (!rc) {
        if (out.n) memcpy(tokens, out.v, (size_t)out.n * sizeof *tokens);
        *n_tokens = out.n;
    }
    free(out.v);
    return rc;
}

int tsr_tokenizer_encode(const tsr_tokenizer *t, const char *text, int bos, int eos,
                         int *tokens, int max_tokens, int *n_tokens, tsr_err *e)
{
    return tsr_tokenizer_encode_ex(t, text, text ? strlen(text) : 0,
                                   (bos ? TSR_ENC_BOS : 0) | (eos ? TSR_ENC_EOS : 0) |
                                   TSR_ENC_SPECIAL, tokens, max_tokens, n_tokens, e);
}

/* ---------------------------------------------------------- decoding ---- */

const char *tsr_tokenizer_piece(const tsr_tokenizer *t, int prev, int token, size_t *len)
{
    assert(t && len && token >= 0 && token < t->vocab_size);
    if (t->kind && tsr_tokenizer_is_control(t, token)) {
        *len = 0;
        return (const char *)t->raw;
    }
    if (t->kind == TSR_VOCAB_BPE) {
        *len = (size_t)t->dec_len[token];
        return t->dec + t->dec_off[token];
    }
    const char *p = tok_piece(t, token);
    int n = t->len[token];
    // sentencepiece drops the dummy-prefix space of the first word after BOS
    // (a GGUF vocab's also at the start of a text without BOS)
    if ((prev == t->bos || (t->kind && prev < 0)) && n > 0 && p[0] == ' ' &&
        !(t->kind && t->type[token] == TSR_TT_USER_DEFINED)) {
        p++;
        n--;
    }
    if (t->byte[token] >= 0 && (!t->kind || t->type[token] == TSR_TT_BYTE)) {
        *len = 1;
        return (const char *)&t->raw[t->byte[token]];
    }
    *len = (size_t)n;
    return p;
}
