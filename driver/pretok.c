/*
 * pretok.c - byte-level BPE pre-tokenizers on PCRE2.
 *
 * Sections: the table of pre-tokenizers, compiling, splitting.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdlib.h>
#include <string.h>

#include "pretok.h"

/* ------------------------------------------------------------- table ---- */

/* GPT-2's expression: contractions, then runs of letters, digits, other
 * (each with one leading space), then whitespace not followed by a
 * non-space. */
#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

/* Llama 3's and Qwen2's expressions differ only in digits (up to three
 * together for Llama 3, one by one for Qwen2).  Their tokenizer.json writes
 * the contractions case-insensitively, as (?i:'s|...); llama.cpp spells the
 * cases out, which is the same set. */
#define RX_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RX_LLAMA3 RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2 RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* CJK ideographs and Hangul as DeepSeek's tokenizer.json ranges them:
 * U+4E00..U+9FA5, U+0800..U+4E00, U+AC00..U+D7FF. */
#define RX_CJK "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

#define MAX_RX 5

typedef struct {
    const char *names;              /* aliases, each followed by '\0'; "" ends */
    int         ignore_merges, add_bos;
    const char *rx[MAX_RX];         /* applied in order; NULL ends */
} pretok_def;

static const pretok_def defs[] = {
    { "default\0", 0, 0,
      { "[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+" } },
    { "gpt-2\0gpt2\0phi-2\0roberta-bpe\0jina-es\0jina-de\0jina-v1-en\0jina-v2-es\0"
      "jina-v2-de\0jina-v2-code\0gigachat\0mpt\0olmo\0jais\0", 0, 0,
      { RX_GPT2 } },
    { "llama3\0llama-v3\0llama-bpe\0falcon3\0dbrx\0smaug-bpe\0", 1, 1,
      { RX_LLAMA3 } },
    { "qwen2\0deepseek-r1-qwen\0megrez\0stablelm2\0", 0, 0,
      { RX_QWEN2 } },
    { "deepseek-coder\0", 0, 0,
      { "[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RX_CJK, "\\p{N}" } },
    { "starcoder\0refact\0command-r\0smollm\0codeshell\0exaone\0minerva-7b\0", 0, 0,
      { "\\p{N}", RX_GPT2 } },
};

struct tsr_pretok {
    int          n_rx;
    pcre2_code  *rx[MAX_RX];
};

/* ---------------------------------------------------------- compiling --- */

static const pretok_def *find_def(const char *name, size_t len)
{
    if (len == 0) return &defs[0];   // no tokenizer.ggml.pre: llama.cpp's default
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        for (const char *a = defs[i].names; *a; a += strlen(a) + 1)
            if (strlen(a) == len && memcmp(a, name, len) == 0) return &defs[i];
    return NULL;
}

void tsr_pretok_free(tsr_pretok *p)
{
    if (!p) return;
    for (int i = 0; i < p->n_rx; i++) pcre2_code_free(p->rx[i]);
    free(p);
}

int tsr_pretok_open(const char *name, size_t len, tsr_pretok **out, int *ignore_merges,
                    int *add_bos, tsr_err *e)
{
    *out = NULL;
    const pretok_def *d = find_def(name, len);
    if (!d)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                          "pre-tokenizer '%.*s' is not supported (default, gpt-2, llama-bpe, "
                          "qwen2, deepseek-coder, starcoder, smollm and their aliases are)",
                          len > 64 ? 64 : (int)len, name);
    tsr_pretok *p = calloc(1, sizeof *p);
    if (!p) return tsr_seterr(e, TSR_ERR_NOMEM, "out of memory for the pre-tokenizer");
    for (int i = 0; i < MAX_RX && d->rx[i]; i++) {
        int err;
        PCRE2_SIZE at;
        /* UCP: \s, \p{..} by Unicode properties; MATCH_INVALID_UTF: text
         * that is not valid UTF-8 is matched around, not refused */
        p->rx[i] = pcre2_compile((PCRE2_SPTR)d->rx[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at,
                                 NULL);
        if (!p->rx[i]) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(err, msg, sizeof msg);
            tsr_pretok_free(p);
            return tsr_seterr(e, TSR_ERR_NOMEM, "pre-tokenizer '%.*s': PCRE2: %s",
                              (int)len, name, (const char *)msg);
        }
        p->n_rx = i + 1;
        (void)pcre2_jit_compile(p->rx[i], PCRE2_JIT_COMPLETE);   // interpreted without JIT
    }
    if (ignore_merges) *ignore_merges = d->ignore_merges;
    if (add_bos) *add_bos = d->add_bos;
    *out = p;
    return TSR_OK;
}

/* ---------------------------------------------------------- splitting --- */

/* A growing list of word ends. */
typedef struct {
    size_t *v;
    int     n, cap;
} ends_list;

static int push_end(ends_list *l, size_t end)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        size_t *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = end;
    return 0;
}

/* Cut the piece text[start..end) by rx into out: matches and the gaps
 * between them.  Returns 0, or a PCRE2 error code (< 0), or 1 for no
 * memory. */
static int cut_piece(const pcre2_code *rx, pcre2_match_data *md, const char *text, size_t start,
                     size_t end, ends_list *out)
{
    PCRE2_SPTR s = (PCRE2_SPTR)(text + start);
    size_t n = end - start, at = 0, done = 0;   // search from at; words emitted up to done
    while (at < n) {
        int rc = pcre2_match(rx, s, n, at, 0, md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(rx, s, n, at, PCRE2_NO_JIT, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return rc;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t m0 = ov[0], m1 = ov[1];
        if (m1 == m0) {   // an empty match adds no word: step one character on
            at = m0 + 1;
            while (at < n && (s[at] & 0xC0) == 0x80) at++;
            continue;
        }
        if (m0 > done && push_end(out, start + m0)) return 1;
        if (push_end(out, start + m1)) return 1;
        done = at = m1;
    }
    if (done < n && push_end(out, end)) return 1;
    return 0;
}

int tsr_pretok_split(const tsr_pretok *p, const char *text, size_t len, size_t **ends, int *n,
                     tsr_err *e)
{
    *ends = NULL;
    *n = 0;
    ends_list cur = { 0 }, next = { 0 };
    if (len == 0) return TSR_OK;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int rc = TSR_OK;
    if (!md || push_end(&cur, len)) {
        rc = tsr_seterr(e, TSR_ERR_NOMEM, "pre-tokenizer: out of memory");
        goto done;
    }
    for (int r = 0; r < p->n_rx; r++) {
        next.n = 0;
        size_t start = 0;
        for (int i = 0; i < cur.n; i++) {
            int m = cut_piece(p->rx[r], md, text, start, cur.v[i], &next);
            if (m == 1) {
                rc = tsr_seterr(e, TSR_ERR_NOMEM, "pre-tokenizer: out of memory");
                goto done;
            }
            if (m < 0) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(m, msg, sizeof msg);
                rc = tsr_seterr(e, TSR_ERR_FORMAT, "pre-tokenizer: PCRE2: %s",
                                (const char *)msg);
                goto done;
            }
            start = cur.v[i];
        }
        ends_list t = cur;
        cur = next;
        next = t;
    }
    *ends = cur.v;
    *n = cur.n;
    cur.v = NULL;
done:
    free(cur.v);
    free(next.v);
    pcre2_match_data_free(md);
    return rc;
}
