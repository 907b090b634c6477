/*
 * test_tokenizer.c - the llama2.c tokenizer against run.c's reference output.
 *
 * Sections: helpers (temp files, a naive run.c-style encoder used as an
 * oracle), loading and its errors, encoding, decoding, cross-checks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <unistd.h>

#include "tokenizer.h"
#include "test_util.h"

#define TOK512   SHARED_MODEL("tok512.bin")
#define TOK32K   SHARED_MODEL("tokenizer.bin")
#define REF_TOKS SHARED_REF("stories260K_once_upon_a_time.tokens")
#define REF_TXT  SHARED_REF("stories260K_once_upon_a_time.txt")

/* ----------------------------------------------------------- helpers ---- */

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc((size_t)sz + 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    d[sz] = 0;
    *n = (size_t)sz;
    return d;
}

/* Write n bytes to a fresh temp file; path goes into buf (>= 32 bytes). */
static void write_temp(char *buf, const void *data, size_t n)
{
    strcpy(buf, "/tmp/tsr_tok_XXXXXX");
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static int *read_ref_tokens(int *n)
{
    FILE *f = fopen(REF_TOKS, "r");
    assert_non_null(f);
    int cap = 1024, k = 0, v;
    int *ids = malloc((size_t)cap * sizeof *ids);
    assert_non_null(ids);
    while (fscanf(f, "%d", &v) == 1) {
        assert_true(k < cap);
        ids[k++] = v;
    }
    fclose(f);
    *n = k;
    return ids;
}

static tsr_tokenizer *load_ok(const char *path, int vocab)
{
    tsr_tokenizer *t = NULL;
    tsr_err e = {0};
    int rc = tsr_tokenizer_load(path, vocab, &t, &e);
    if (rc) fprintf(stderr, "load: %s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    assert_non_null(t);
    return t;
}

/* Decode ids[from..n) after ids[from-1] into out (NUL-terminated), the bytes
 * run.c would print: safe_printf() drops a lone unprintable byte. */
static size_t decode_runc(const tsr_tokenizer *t, const int *ids, int from, int n,
                          char *out, size_t cap)
{
    size_t k = 0;
    for (int i = from; i < n; i++) {
        size_t len;
        const char *p = tsr_tokenizer_piece(t, ids[i - 1], ids[i], &len);
        if (len == 1 && !isprint((unsigned char)p[0]) && !isspace((unsigned char)p[0])) continue;
        assert_true(k + len < cap);
        memcpy(out + k, p, len);
        k += len;
    }
    out[k] = 0;
    return k;
}

/* Decode ids[1..n) (ids[0] is BOS) with every byte kept, for round trips. */
static size_t decode_all(const tsr_tokenizer *t, const int *ids, int n, char *out, size_t cap)
{
    size_t k = 0;
    assert_int_equal(ids[0], TSR_TOKEN_BOS);
    for (int i = 1; i < n; i++) {
        size_t len;
        const char *p = tsr_tokenizer_piece(t, ids[i - 1], ids[i], &len);
        assert_true(k + len < cap);
        memcpy(out + k, p, len);
        k += len;
    }
    out[k] = 0;
    return k;
}

/* The oracle: run.c's encode() algorithm written the slow, obvious way from
 * its description (rescan every pair after each merge, string lookups by
 * linear search over the raw file records).  Returns the token count. */
typedef struct { int n; unsigned char **p; int *len; float *score; } naive_vocab;

static naive_vocab naive_load(const char *path)
{
    size_t sz;
    unsigned char *d = slurp(path, &sz);
    naive_vocab v = {0};
    size_t o = 4;
    while (o < sz) {
        v.p = realloc(v.p, (size_t)(v.n + 1) * sizeof *v.p);
        v.len = realloc(v.len, (size_t)(v.n + 1) * sizeof *v.len);
        v.score = realloc(v.score, (size_t)(v.n + 1) * sizeof *v.score);
        memcpy(&v.score[v.n], d + o, 4);
        memcpy(&v.len[v.n], d + o + 4, 4);
        v.p[v.n] = malloc((size_t)v.len[v.n] + 1);
        memcpy(v.p[v.n], d + o + 8, (size_t)v.len[v.n]);
        o += 8 + (size_t)v.len[v.n];
        v.n++;
    }
    free(d);
    return v;
}

static void naive_free(naive_vocab *v)
{
    for (int i = 0; i < v->n; i++) free(v->p[i]);
    free(v->p);
    free(v->len);
    free(v->score);
}

static int naive_find(const naive_vocab *v, const unsigned char *s, int n)
{
    for (int i = 0; i < v->n; i++)
        if (v->len[i] == n && memcmp(v->p[i], s, (size_t)n) == 0) return i;
    return -1;
}

static int naive_encode(const naive_vocab *v, const char *text, int *out)
{
    int n = 0;
    out[n++] = 1;
    if (*text) out[n++] = naive_find(v, (const unsigned char *)" ", 1);
    const unsigned char *s = (const unsigned char *)text;
    size_t L = strlen(text);
    for (size_t i = 0; i < L;) {
        size_t j = i + 1;
        while (j < L && (s[j] & 0xC0) == 0x80 && j - i < 4) j++;
        int id = naive_find(v, s + i, (int)(j - i));
        if (id >= 0) out[n++] = id;
        else for (size_t b = i; b < j; b++) out[n++] = s[b] + 3;
        i = j;
    }
    unsigned char buf[256];
    for (;;) {
        float best = -1e10f;
        int bi = -1, bid = -1;
        for (int i = 0; i + 1 < n; i++) {
            int la = v->len[out[i]], lb = v->len[out[i + 1]];
            if (la + lb > (int)sizeof buf) continue;
            memcpy(buf, v->p[out[i]], (size_t)la);
            memcpy(buf + la, v->p[out[i + 1]], (size_t)lb);
            int id = naive_find(v, buf, la + lb);
            if (id >= 0 && v->score[id] > best) { best = v->score[id]; bi = i; bid = id; }
        }
        if (bi < 0) break;
        out[bi] = bid;
        memmove(out + bi + 1, out + bi + 2, (size_t)(n - bi - 2) * sizeof *out);
        n--;
    }
    return n;
}

/* ------------------------------------------------------------ loading --- */

static void test_load_sizes(void **state)
{
    (void)state;
    tsr_tokenizer *t = load_ok(TOK512, 512);
    assert_int_equal(tsr_tokenizer_vocab_size(t), 512);
    assert_int_equal(tsr_tokenizer_lookup(t, " "), 410);
    assert_int_equal(tsr_tokenizer_lookup(t, " Once"), 403);
    assert_int_equal(tsr_tokenizer_lookup(t, "<0x41>"), 3 + 0x41);
    assert_int_equal(tsr_tokenizer_lookup(t, "no such piece"), -1);
    assert_int_equal(tsr_tokenizer_lookup(t, ""), -1);
    tsr_tokenizer_free(t);

    t = load_ok(TOK32K, 32000);
    assert_int_equal(tsr_tokenizer_vocab_size(t), 32000);
    assert_int_equal(tsr_tokenizer_lookup(t, " "), 29871);
    assert_int_equal(tsr_tokenizer_lookup(t, "日"), 30325);
    tsr_tokenizer_free(t);
    tsr_tokenizer_free(NULL);   // harmless
}

static void test_load_vocab_mismatch(void **state)
{
    (void)state;
    tsr_tokenizer *t = (tsr_tokenizer *)&t;   // must be reset to NULL
    tsr_err e = {0};
    // fewer tokens in the file than the model's vocab
    assert_int_equal(tsr_tokenizer_load(TOK512, 32000, &t, &e), TSR_ERR_FORMAT);
    assert_null(t);
    assert_non_null(strstr(e.msg, "tok512.bin"));
    assert_non_null(strstr(e.msg, "512"));
    assert_non_null(strstr(e.msg, "32000"));
    // more tokens in the file than the model's vocab
    assert_int_equal(tsr_tokenizer_load(TOK32K, 512, &t, &e), TSR_ERR_FORMAT);
    assert_null(t);
    assert_non_null(strstr(e.msg, "tokenizer.bin: holds 32000 tokens"));
    assert_non_null(strstr(e.msg, "512"));
    // off by one either way
    assert_int_equal(tsr_tokenizer_load(TOK512, 511, &t, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "holds 512 tokens"));
    assert_non_null(strstr(e.msg, "511"));
    assert_int_equal(tsr_tokenizer_load(TOK512, 513, &t, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "holds 512 tokens"));
    assert_non_null(strstr(e.msg, "513"));
    assert_int_equal(tsr_tokenizer_load(TOK512, 0, &t, &e), TSR_ERR_ARG);
}

static void test_load_missing(void **state)
{
    (void)state;
    tsr_tokenizer *t = NULL;
    tsr_err e = {0};
    assert_int_equal(tsr_tokenizer_load("/nonexistent/tok.bin", 512, &t, &e), TSR_ERR_IO);
    assert_null(t);
    assert_non_null(strstr(e.msg, "/nonexistent/tok.bin"));
    assert_null(strchr(e.msg, '\n'));
}

/* Load a variant of tok512.bin and expect a format error naming the file
 * and containing `needle`. */
static void expect_bad(const unsigned char *d, size_t n, const char *needle)
{
    char path[32];
    write_temp(path, d, n);
    tsr_tokenizer *t = NULL;
    tsr_err e = {0};
    int rc = tsr_tokenizer_load(path, 512, &t, &e);
    unlink(path);
    if (rc != TSR_ERR_FORMAT || !strstr(e.msg, needle) || !strstr(e.msg, path))
        fprintf(stderr, "unexpected: rc %d msg '%s' (want '%s')\n", rc, e.msg, needle);
    assert_int_equal(rc, TSR_ERR_FORMAT);
    assert_null(t);
    assert_non_null(strstr(e.msg, path));
    assert_non_null(strstr(e.msg, needle));
    assert_null(strchr(e.msg, '\n'));
}

static void test_load_malformed(void **state)
{
    (void)state;
    size_t n;
    unsigned char *d = slurp(TOK512, &n);
    unsigned char *c = malloc(n + 64);
    assert_non_null(c);

    expect_bad(d, 0, "truncated");         // empty file
    expect_bad(d, 3, "truncated");         // partial header
    expect_bad(d, 4, "holds 0 tokens");    // header only
    expect_bad(d, 4 + 6, "truncated");     // partial score/len
    expect_bad(d, n - 1, "truncated");     // last piece cut short
    expect_bad(d, n / 2, "");              // cut somewhere in the middle

    // negative length of token 0
    memcpy(c, d, n);
    int32_t neg = -5;
    memcpy(c + 8, &neg, 4);
    expect_bad(c, n, "token 0 has length -5");
    // huge length of token 0
    int32_t huge = 0x7fffffff;
    memcpy(c + 8, &huge, 4);
    expect_bad(c, n, "token 0 has length 2147483647");
    // a length beyond max_token_length (7) that still fits in the file
    int32_t eight = 8;
    memcpy(c + 8, &eight, 4);
    expect_bad(c, n, "max_token_length 7");
    // bad max_token_length
    memcpy(c, d, n);
    memcpy(c, &neg, 4);
    expect_bad(c, n, "max_token_length -5");
    memcpy(c, &huge, 4);
    expect_bad(c, n, "max_token_length 2147483647");
    // trailing bytes that are not a whole token
    memcpy(c, d, n);
    memset(c + n, 0, 3);
    expect_bad(c, n + 3, "more than 512 tokens");
    // one extra whole token
    float sc = 0;
    int32_t one = 1;
    memcpy(c + n, &sc, 4);
    memcpy(c + n + 4, &one, 4);
    c[n + 8] = 'x';
    expect_bad(c, n + 9, "holds 513 tokens");

    free(c);
    free(d);
}

static void test_from_arrays(void **state)
{
    (void)state;
    // a toy vocab: unk, bos, eos, 256 byte tokens, then pieces with scores
    enum { NB = 3 + 256, NV = NB + 7 };
    static char bytes[256][7];
    const char *pieces[NV];
    int lens[NV];
    float scores[NV];
    pieces[0] = "<unk>"; pieces[1] = "<s>"; pieces[2] = "</s>";
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        pieces[3 + b] = bytes[b];
    }
    const char *extra[7] = { " ", "a", "b", "ab", "ba", " a", "\xF0\x9F\x98\x80" };
    float extra_sc[7] = { 0, 0, 0, -1, -1, -5, 0 };
    for (int i = 0; i < 7; i++) { pieces[NB + i] = extra[i]; scores[NB + i] = extra_sc[i]; }
    for (int i = 0; i < NV; i++) {
        lens[i] = (int)strlen(pieces[i]);
        if (i < NB) scores[i] = 0;
    }
    tsr_tokenizer *t = NULL;
    tsr_err e = {0};
    assert_int_equal(tsr_tokenizer_from_arrays(NV, pieces, lens, scores, &t, &e), TSR_OK);
    const int SP = NB, A = NB + 1, B = NB + 2, AB = NB + 3, BA = NB + 4, SA = NB + 5, EMO = NB + 6;
    int ids[16], n;
    // "aba": " ","a","b","a"; "ab" and "ba" tie at -1 and beat " a" (-5):
    // the leftmost of the best wins -> " ","ab","a"; then " a"? no: " "+"ab"
    // is not a piece, "ab"+"a" is not either -> done
    assert_int_equal(tsr_tokenizer_encode(t, "aba", 0, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], SP);
    assert_int_equal(ids[1], AB);
    assert_int_equal(ids[2], A);
    // "ba": " ","b","a" -> "ba" (-1)
    assert_int_equal(tsr_tokenizer_encode(t, "ba", 1, 1, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], TSR_TOKEN_BOS);
    assert_int_equal(ids[1], SP);
    assert_int_equal(ids[2], BA);
    assert_int_equal(ids[3], TSR_TOKEN_EOS);
    // "a": " ","a" -> " a"
    assert_int_equal(tsr_tokenizer_encode(t, "a", 0, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], SA);
    (void)B;
    // "c" has no piece: byte fallback 'c' + 3
    assert_int_equal(tsr_tokenizer_encode(t, "c", 0, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[1], 'c' + 3);
    // a 4-byte code point with a piece is one token; a 5th continuation byte
    // starts a new (byte-fallback) point, as run.c cuts runs at 4 bytes
    assert_int_equal(tsr_tokenizer_encode(t, "\xF0\x9F\x98\x80\x80", 0, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], SP);
    assert_int_equal(ids[1], EMO);
    assert_int_equal(ids[2], 0x80 + 3);
    tsr_tokenizer_free(t);

    // bad arguments
    assert_int_equal(tsr_tokenizer_from_arrays(0, pieces, lens, scores, &t, &e), TSR_ERR_ARG);
    assert_int_equal(tsr_tokenizer_from_arrays(NV, NULL, lens, scores, &t, &e), TSR_ERR_ARG);
    lens[5] = -1;
    assert_int_equal(tsr_tokenizer_from_arrays(NV, pieces, lens, scores, &t, &e), TSR_ERR_ARG);
    assert_null(t);

    // a vocab too small for byte fallback is an error, not a wild id
    const char *tiny[4] = { "<unk>", "<s>", "</s>", " " };
    int tiny_len[4] = { 5, 3, 4, 1 };
    float tiny_sc[4] = { 0, 0, 0, 0 };
    assert_int_equal(tsr_tokenizer_from_arrays(4, tiny, tiny_len, tiny_sc, &t, &e), TSR_OK);
    assert_int_equal(tsr_tokenizer_encode(t, "  ", 1, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 4);
    assert_int_equal(tsr_tokenizer_encode(t, "x", 1, 0, ids, 16, &n, &e), TSR_ERR_RANGE);
    assert_non_null(strstr(e.msg, "0x78"));
    tsr_tokenizer_free(t);
}

/* The same pieces through from_arrays encode like the loaded file. */
static void test_from_arrays_matches_file(void **state)
{
    (void)state;
    naive_vocab v = naive_load(TOK512);
    assert_int_equal(v.n, 512);
    tsr_tokenizer *a = NULL, *f = load_ok(TOK512, 512);
    tsr_err e = {0};
    assert_int_equal(tsr_tokenizer_from_arrays(v.n, (const char *const *)v.p, v.len, v.score, &a, &e),
                     TSR_OK);
    const char *text = "Once upon a time, a little girl named Lily loved to play.";
    int x[128], y[128], nx, ny;
    assert_int_equal(tsr_tokenizer_encode(a, text, 1, 0, x, 128, &nx, &e), TSR_OK);
    assert_int_equal(tsr_tokenizer_encode(f, text, 1, 0, y, 128, &ny, &e), TSR_OK);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, (size_t)nx * sizeof *x);
    tsr_tokenizer_free(a);
    tsr_tokenizer_free(f);
    naive_free(&v);
}

/* ----------------------------------------------------------- encoding --- */

/* "Once upon a time" encodes to the prompt part of run.c's token file. */
static void test_encode_reference_prompt(void **state)
{
    (void)state;
    const char *prompt = "Once upon a time";
    tsr_tokenizer *t = load_ok(TOK512, 512);
    int nref;
    int *ref = read_ref_tokens(&nref);
    assert_true(nref > 10);
    assert_int_equal(ref[0], TSR_TOKEN_BOS);

    // the prompt is the shortest prefix of the file that decodes to it
    char buf[256];
    int k = 0;
    for (int m = 2; m <= nref; m++) {
        decode_all(t, ref, m, buf, sizeof buf);
        if (strcmp(buf, prompt) == 0) { k = m; break; }
    }
    assert_int_equal(k, 5);   // BOS " Once" " upon" " a" " time"

    int ids[64], n;
    tsr_err e = {0};
    assert_int_equal(tsr_tokenizer_encode(t, prompt, 1, 0, ids, 64, &n, &e), TSR_OK);
    assert_int_equal(n, k);
    assert_memory_equal(ids, ref, (size_t)k * sizeof *ids);
    const int want[5] = { 1, 403, 407, 261, 378 };
    assert_memory_equal(ids, want, sizeof want);

    // with EOS, and without BOS
    assert_int_equal(tsr_tokenizer_encode(t, prompt, 0, 1, ids, 64, &n, &e), TSR_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(ids, want + 1, 4 * sizeof *ids);
    assert_int_equal(ids[4], TSR_TOKEN_EOS);
    free(ref);
    tsr_tokenizer_free(t);

    // the 32000-token vocab gives llama2.c's well-known ids
    t = load_ok(TOK32K, 32000);
    const int want32[5] = { 1, 9038, 2501, 263, 931 };
    assert_int_equal(tsr_tokenizer_encode(t, prompt, 1, 0, ids, 64, &n, &e), TSR_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(ids, want32, sizeof want32);
    tsr_tokenizer_free(t);
}

static void test_encode_empty(void **state)
{
    (void)state;
    tsr_tokenizer *t = load_ok(TOK512, 512);
    int ids[4] = { -7, -7, -7, -7 }, n = -1;
    tsr_err e = {0};
    assert_int_equal(tsr_tokenizer_encode(t, "", 1, 0, ids, 4, &n, &e), TSR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], TSR_TOKEN_BOS);
    assert_int_equal(tsr_tokenizer_encode(t, "", 0, 0, ids, 4, &n, &e), TSR_OK);
    assert_int_equal(n, 0);
    assert_int_equal(tsr_tokenizer_encode(t, "", 0, 0, NULL, 0, &n, &e), TSR_OK);
    assert_int_equal(n, 0);
    assert_int_equal(tsr_tokenizer_encode(t, "", 1, 1, ids, 4, &n, &e), TSR_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], TSR_TOKEN_BOS);
    assert_int_equal(ids[1], TSR_TOKEN_EOS);
    tsr_tokenizer_free(t);
}

static void test_encode_utf8(void **state)
{
    (void)state;
    tsr_tokenizer *t = load_ok(TOK32K, 32000);
    // é ö 日 本 have their own tokens; the emoji has none -> 4 byte tokens
    const char *text = "héllo wörld 日本 \xF0\x9F\x98\x80";
    const int want[] = { 1, 298, 3610, 417, 281, 1340, 430, 29871, 30325, 30346, 29871,
                         0xF0 + 3, 0x9F + 3, 0x98 + 3, 0x80 + 3 };
    const int nw = (int)(sizeof want / sizeof want[0]);
    int ids[64], n;
    tsr_err e = {0};
    assert_int_equal(tsr_tokenizer_encode(t, text, 1, 0, ids, 64, &n, &e), TSR_OK);
    assert_int_equal(n, nw);
    assert_memory_equal(ids, want, sizeof want);
    // each fallback piece decodes to its raw byte, and the whole round-trips
    size_t len;
    const char *p = tsr_tokenizer_piece(t, 29871, 0xF0 + 3, &len);
    assert_int_equal(len, 1);
    assert_int_equal((unsigned char)p[0], 0xF0);
    char out[128];
    size_t k = decode_all(t, ids, n, out, sizeof out);
    assert_int_equal(k, strlen(text));
    assert_string_equal(out, text);

    // the same text with the 512 vocab: é is bytes, and so on
    tsr_tokenizer *s = load_ok(TOK512, 512);
    const int want512[] = { 1, 270, 485, 306, 414, 263, 198, 185, 420, 341, 410, 233, 154, 168,
                            233, 159, 175, 410, 243, 162, 155, 131 };
    assert_int_equal(tsr_tokenizer_encode(s, text, 1, 0, ids, 64, &n, &e), TSR_OK);
    assert_int_equal(n, (int)(sizeof want512 / sizeof want512[0]));
    assert_memory_equal(ids, want512, sizeof want512);
    k = decode_all(s, ids, n, out, sizeof out);
    assert_string_equal(out, text);
    tsr_tokenizer_free(s);
    tsr_tokenizer_free(t);
}

static void test_encode_invalid_bytes(void **state)
{
    (void)state;
    tsr_tokenizer *t = load_ok(TOK512, 512);
    int ids[16], n;
    tsr_err e = {0};
    // 0xff is never valid UTF-8 and has no piece: <0xFF> = 255 + 3
    assert_int_equal(tsr_tokenizer_encode(t, "\xff", 1, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 410);
    assert_int_equal(ids[2], 258);
    size_t len;
    const char *p = tsr_tokenizer_piece(t, 410, 258, &len);
    assert_int_equal(len, 1);
    assert_int_equal((unsigned char)p[0], 0xff);
    // a stray continuation run longer than 4 bytes is cut into 4 + 1
    assert_int_equal(tsr_tokenizer_encode(t, "\x80\x81\x82\x83\x84", 0, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 6);
    for (int i = 0; i < 5; i++) assert_int_equal(ids[1 + i], 0x80 + i + 3);
    tsr_tokenizer_free(t);

    t = load_ok(TOK32K, 32000);
    assert_int_equal(tsr_tokenizer_encode(t, "\xff", 1, 0, ids, 16, &n, &e), TSR_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[1], 29871);
    assert_int_equal(ids[2], 258);
    tsr_tokenizer_free(t);
}

static void test_encode_range(void **state)
{
    (void)state;
    tsr_tokenizer *t = load_ok(TOK512, 512);
    int ids[8], n = -1;
    tsr_err e = {0};
    // needs 5 (BOS + 4), 6 with EOS
    assert_int_equal(tsr_tokenizer_encode(t, "Once upon a time", 1, 0, ids, 5, &n, &e), TSR_OK);
    assert_int_equal(n, 5);
    assert_int_equal(tsr_tokenizer_encode(t, "Once upon a time", 1, 0, ids, 4, &n, &e), TSR_ERR_RANGE);
    assert_int_equal(n, 0);
    assert_non_null(strstr(e.msg, "5"));
    assert_int_equal(tsr_tokenizer_encode(t, "Once upon a time", 1, 1, ids, 5, &n, &e), TSR_ERR_RANGE);
    assert_int_equal(tsr_tokenizer_encode(t, "", 1, 0, ids, 0, &n, &e), TSR_ERR_RANGE);
    assert_int_equal(tsr_tokenizer_encode(t, NULL, 1, 0, ids, 8, &n, &e), TSR_ERR_ARG);
    tsr_tokenizer_free(t);
}

/* ----------------------------------------------------------- decoding --- */

/* Printing every piece after BOS, as run.c does, gives its output. */
static void test_decode_reference(void **state)
{
    (void)state;
    tsr_tokenizer *t = load_ok(TOK512, 512);
    int nref;
    int *ref = read_ref_tokens(&nref);
    size_t ntxt;
    unsigned char *txt = slurp(REF_TXT, &ntxt);
    assert_true(ntxt > 0 && txt[ntxt - 1] == '\n');
    char out[4096];
    size_t k = decode_runc(t, ref, 1, nref, out, sizeof out);
    assert_int_equal(k, ntxt - 1);
    assert_memory_equal(out, txt, ntxt - 1);

    // after BOS the leading space goes; elsewhere it stays
    size_t len;
    const char *p = tsr_tokenizer_piece(t, TSR_TOKEN_BOS, 403, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(p, "Once", 4);
    p = tsr_tokenizer_piece(t, 378, 403, &len);
    assert_int_equal(len, 5);
    assert_memory_equal(p, " Once", 5);
    // the space piece after BOS is empty
    p = tsr_tokenizer_piece(t, TSR_TOKEN_BOS, 410, &len);
    assert_int_equal(len, 0);
    // <0x0A> is a newline byte, <0x20> a space even after BOS
    p = tsr_tokenizer_piece(t, TSR_TOKEN_BOS, 0x20 + 3, &len);
    assert_int_equal(len, 1);
    assert_int_equal(p[0], ' ');
    p = tsr_tokenizer_piece(t, 5, 0x0A + 3, &len);
    assert_int_equal(len, 1);
    assert_int_equal(p[0], '\n');
    free(txt);
    free(ref);
    tsr_tokenizer_free(t);
}

/* --------------------------------------------------------- cross-check --- */

/* Random texts (ASCII words, UTF-8, raw bytes) against the naive oracle. */
static void cross_check(const char *path, int vocab, int rounds, int maxlen)
{
    naive_vocab v = naive_load(path);
    assert_int_equal(v.n, vocab);
    tsr_tokenizer *t = load_ok(path, vocab);
    static const char *frags[] = { "the", " ", "  ", "Once", " upon", "a", "time", ",", ".",
                                   "\n", "é", "ö", "日本", "\xF0\x9F\x98\x80", "\xff", "\x80",
                                   "ing", "er", "Lily", "!", "\t", "ab", "zz", "\xC3" };
    const int nf = (int)(sizeof frags / sizeof frags[0]);
    unsigned seed = 12345;
    char *text = malloc((size_t)maxlen + 16);
    int *a = malloc(((size_t)maxlen + 20) * sizeof *a);
    int *b = malloc(((size_t)maxlen + 20) * sizeof *b);
    char *dec = malloc((size_t)maxlen + 16);
    assert_true(text && a && b && dec);
    for (int r = 0; r < rounds; r++) {
        size_t L = 0;
        int target = (int)(seed % (unsigned)maxlen);
        while ((int)L < target) {
            seed = seed * 1103515245u + 12345u;
            const char *f = frags[(seed >> 16) % (unsigned)nf];
            size_t fl = strlen(f);
            if (L + fl > (size_t)maxlen) break;
            memcpy(text + L, f, fl);
            L += fl;
        }
        text[L] = 0;
        seed = seed * 1103515245u + 12345u;
        int na = naive_encode(&v, text, a), nb;
        tsr_err e = {0};
        assert_int_equal(tsr_tokenizer_encode(t, text, 1, 0, b, maxlen + 20, &nb, &e), TSR_OK);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, (size_t)na * sizeof *a);
        decode_all(t, b, nb, dec, (size_t)maxlen + 16);
        assert_string_equal(dec, text);
    }
    free(text);
    free(a);
    free(b);
    free(dec);
    tsr_tokenizer_free(t);
    naive_free(&v);
}

static void test_cross_check_512(void **state) { (void)state; cross_check(TOK512, 512, 200, 120); }
static void test_cross_check_32k(void **state) { (void)state; cross_check(TOK32K, 32000, 12, 80); }

/* A long prompt: no fixed buffer overflows, and it is fast (heap merges). */
static void test_encode_long(void **state)
{
    (void)state;
    tsr_tokenizer *t = load_ok(TOK32K, 32000);
    const char *unit = "Once upon a time, there was a little girl named Lily. 日本 \xF0\x9F\x98\x80 ";
    size_t ul = strlen(unit), reps = 4000, L = ul * reps;
    char *text = malloc(L + 1);
    char *dec = malloc(L + 1);
    int *ids = malloc((L + 2) * sizeof *ids);
    assert_true(text && dec && ids);
    for (size_t i = 0; i < reps; i++) memcpy(text + i * ul, unit, ul);
    text[L] = 0;
    int n;
    tsr_err e = {0};
    assert_int_equal(tsr_tokenizer_encode(t, text, 1, 0, ids, (int)L + 2, &n, &e), TSR_OK);
    assert_true(n > 1 && n < (int)L / 2);
    assert_int_equal(decode_all(t, ids, n, dec, L + 1), L);
    assert_string_equal(dec, text);
    free(text);
    free(dec);
    free(ids);
    tsr_tokenizer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_sizes),
        cmocka_unit_test(test_load_vocab_mismatch),
        cmocka_unit_test(test_load_missing),
        cmocka_unit_test(test_load_malformed),
        cmocka_unit_test(test_from_arrays),
        cmocka_unit_test(test_from_arrays_matches_file),
        cmocka_unit_test(test_encode_reference_prompt),
        cmocka_unit_test(test_encode_empty),
        cmocka_unit_test(test_encode_utf8),
        cmocka_unit_test(test_encode_invalid_bytes),
        cmocka_unit_test(test_encode_range),
        cmocka_unit_test(test_decode_reference),
        cmocka_unit_test(test_cross_check_512),
        cmocka_unit_test(test_cross_check_32k),
        cmocka_unit_test(test_encode_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
