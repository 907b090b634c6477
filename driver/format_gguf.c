/*
 * format_gguf.c - open GGUF v2/v3 files of the llama and qwen2 architectures.
 * Facts from the GGUF spec (ggml docs/gguf.md) and ggml's block layouts.
 *
 * Layout (little-endian):
 *   header   "GGUF", uint32 version, uint64 n_tensors, uint64 n_kv
 *   n_kv     key (gguf string: uint64 len + bytes), uint32 value type, value
 *            (scalars; string; array = uint32 elem type, uint64 count, elems)
 *   n_tensor name (gguf string), uint32 n_dims, uint64 ne[n_dims],
 *            uint32 ggml type, uint64 offset (from the data section start,
 *            a multiple of the alignment)
 *   padding  to general.alignment (default 32)
 *   data     tensor bytes
 * ggml order: ne[0] is the row length (cols), ne[1] the row count.
 *
 * Every tensor stays where the file holds it, in its stored type (views:
 * Q8_0 and Q4_0 as ggml blocks, F16 as halves, F32 as fp32 unless
 * misaligned, then copied), so the file stays mapped while the tensors are
 * read: the checkpoint owns the map (format_llama2c.c's open_gguf).
 * Every count, length and offset is checked against the bytes that remain
 * before it is used, in 64-bit arithmetic that cannot overflow.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model.h"
#include "tokenizer.h"

/* ------------------------------------------------------------------------ */
/* Bounds-checked reader                                                      */

typedef struct rd {
    const uint8_t *b;     // (len,) the whole file
    uint64_t len, off;    // bytes; read position
    const char *name;     // for messages
    tsr_err *e;
} rd;

/* TSR_OK when n more bytes are available at r->off; else a truncation error. */
static int need(rd *r, uint64_t n, const char *what)
{
    if (n <= r->len - r->off) return TSR_OK;
    return tsr_seterr(r->e, TSR_ERR_FORMAT,
        "%s: truncated: %s needs %llu bytes at offset %llu, file has %llu",
        r->name, what, (unsigned long long)n, (unsigned long long)r->off,
        (unsigned long long)r->len);
}

static uint32_t get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int rd_u32(rd *r, uint32_t *v, const char *what)
{
    if (need(r, 4, what)) return TSR_ERR_FORMAT;
    *v = get_u32(r->b + r->off);
    r->off += 4;
    return TSR_OK;
}

static int rd_u64(rd *r, uint64_t *v, const char *what)
{
    if (need(r, 8, what)) return TSR_ERR_FORMAT;
    *v = get_u64(r->b + r->off);
    r->off += 8;
    return TSR_OK;
}

/* A gguf string: *s points into the file (not NUL-terminated), *n bytes. */
static int rd_str(rd *r, const char **s, uint64_t *n, const char *what)
{
    if (rd_u64(r, n, what) || need(r, *n, what)) return TSR_ERR_FORMAT;
    *s = (const char *)(r->b + r->off);
    r->off += *n;
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Metadata                                                                   */

enum { GT_U8, GT_I8, GT_U16, GT_I16, GT_U32, GT_I32, GT_F32, GT_BOOL, GT_STRING,
       GT_ARRAY, GT_U64, GT_I64, GT_F64, GT_COUNT };

/* Bytes of a scalar value type; 0 for string, array, unknown. */
static uint64_t scalar_size(uint32_t t)
{
    static const uint8_t sz[GT_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    return t < GT_COUNT ? sz[t] : 0;
}

/* One key/value pair; the value stays in the file. */
typedef struct kv {
    const char *key;      // (klen,) bytes in the file
    uint64_t klen;
    uint32_t type;        // GT_*
    uint64_t voff;        // file offset of the value (arrays: first element)
    uint32_t atype;       // arrays: element type
    uint64_t acount;      // arrays: element count
    uint64_t kend;        // file offset just past the value
} kv;

/* Skip one value of type t at r->off, checking every length against the
 * bytes left (arrays of arrays recurse up to a small depth). */
static int skip_value(rd *r, uint32_t t, int depth)
{
    uint64_t sz = scalar_size(t);
    if (sz) { if (need(r, sz, "metadata value")) return TSR_ERR_FORMAT; r->off += sz; return TSR_OK; }
    if (t == GT_STRING) {
        const char *s; uint64_t n;
        return rd_str(r, &s, &n, "metadata string");
    }
    if (t != GT_ARRAY)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: unknown metadata value type %u at offset %llu",
                          r->name, t, (unsigned long long)r->off);
    if (depth > 4)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: metadata arrays nested too deep", r->name);
    uint32_t at; uint64_t cnt;
    if (rd_u32(r, &at, "array type") || rd_u64(r, &cnt, "array count")) return TSR_ERR_FORMAT;
    uint64_t esz = scalar_size(at);
    if (esz) {
        // count * esz must fit the rest of the file; divide, do not multiply
        if (cnt > (r->len - r->off) / esz)
            return tsr_seterr(r->e, TSR_ERR_FORMAT,
                "%s: truncated: array of %llu elements of %llu bytes at offset %llu passes the end",
                r->name, (unsigned long long)cnt, (unsigned long long)esz,
                (unsigned long long)r->off);
        r->off += cnt * esz;
        return TSR_OK;
    }
    // strings take >= 8 bytes each, nested arrays >= 12
    if (cnt > (r->len - r->off) / 8)
        return tsr_seterr(r->e, TSR_ERR_FORMAT,
            "%s: truncated: array of %llu elements at offset %llu passes the end",
            r->name, (unsigned long long)cnt, (unsigned long long)r->off);
    for (uint64_t i = 0; i < cnt; i++)
        if (skip_value(r, at, depth + 1)) return TSR_ERR_FORMAT;
    return TSR_OK;
}

static const kv *find_kv(const kv *kvs, uint64_t n, const char *key)
{
    size_t kl = strlen(key);
    for (uint64_t i = 0; i < n; i++)
        if (kvs[i].klen == kl && !memcmp(kvs[i].key, key, kl)) return &kvs[i];
    return NULL;
}

/* Integer value of key (any integer type) into *v.  Returns 1 when absent,
 * 0 when read, or an error when the type is not an integer. */
static int kv_int(const rd *r, const kv *kvs, uint64_t n, const char *key, int64_t *v)
{
    const kv *k = find_kv(kvs, n, key);
    if (!k) return 1;
    const uint8_t *p = r->b + k->voff;
    switch (k->type) {
    case GT_U8:  *v = p[0]; break;
    case GT_I8:  *v = (int8_t)p[0]; break;
    case GT_U16: { uint16_t x; memcpy(&x, p, 2); *v = x; break; }
    case GT_I16: { int16_t x; memcpy(&x, p, 2); *v = x; break; }
    case GT_U32: *v = get_u32(p); break;
    case GT_I32: *v = (int32_t)get_u32(p); break;
    case GT_U64: { uint64_t x = get_u64(p); *v = x > INT64_MAX ? INT64_MAX : (int64_t)x; break; }
    case GT_I64: *v = (int64_t)get_u64(p); break;
    default:
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: metadata %s has type %u, expected an integer",
                          r->name, key, k->type);
    }
    return 0;
}

/* Float value of key (f32 or f64) into *v; returns as kv_int. */
static int kv_float(const rd *r, const kv *kvs, uint64_t n, const char *key, float *v)
{
    const kv *k = find_kv(kvs, n, key);
    if (!k) return 1;
    const uint8_t *p = r->b + k->voff;
    double d;
    if (k->type == GT_F32) { float f; memcpy(&f, p, 4); d = f; }
    else if (k->type == GT_F64) memcpy(&d, p, 8);
    else
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: metadata %s has type %u, expected a float",
                          r->name, key, k->type);
    /* every float the model takes must be one: a NaN or an infinity (an F64
     * past FLT_MAX included) would run and print nonsense */
    if (!isfinite((float)d))
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: metadata %s is %g, not a finite number",
                          r->name, key, d);
    *v = (float)d;
    return 0;
}

/* kv_float for a value that must lie in (lo, hi): the same returns, and
 * TSR_ERR_FORMAT naming the key and the range outside it. */
static int kv_float_in(const rd *r, const kv *kvs, uint64_t n, const char *key, float *v,
                       double lo, double hi)
{
    float f = 0.0f;
    int rc = kv_float(r, kvs, n, key, &f);
    if (rc) return rc;
    if (!(f > lo && f < hi))
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: metadata %s is %g, outside (%g, %g)",
                          r->name, key, (double)f, lo, hi);
    *v = f;
    return 0;
}

/* String value of key: *s into the file, *len bytes.  Returns as kv_int. */
static int kv_str(const rd *r, const kv *kvs, uint64_t n, const char *key,
                  const char **s, uint64_t *len)
{
    const kv *k = find_kv(kvs, n, key);
    if (!k) return 1;
    if (k->type != GT_STRING)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: metadata %s has type %u, expected a string",
                          r->name, key, k->type);
    *len = get_u64(r->b + k->voff);
    *s = (const char *)(r->b + k->voff + 8);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Tensor types                                                               */

enum { GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q8_0 = 8 };
#define QK 32   /* elements per Q4_0 / Q8_0 block */

/* Name of a ggml type id for messages. */
static const char *type_name(uint32_t t)
{
    static const char *const names[] = {
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
        "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
    };
    if (t < sizeof names / sizeof names[0]) return names[t];
    if (t == 30) return "BF16";
    return "unknown";
}

/* Bytes a tensor of n elements of type t takes in the checkpoint's memory:
 * an F32 tensor whose data is not 4-byte aligned is copied (4n bytes);
 * every other tensor is a view into the file (0). */
static uint64_t held_bytes(uint32_t t, const uint8_t *src, uint64_t n)
{
    return t == GGML_F32 && ((uintptr_t)src & 3u) ? 4 * n : 0;
}

/* Point tv at n elements (n a multiple of QK for the block types) of type
 * t at src, as stored: F32 as fp32 (copied to dst, held_bytes(t, src, n)
 * bytes, when src is misaligned), F16 as halves, Q8_0 / Q4_0 as their ggml
 * blocks (model.h: TSR_GGML_Q8_BYTES / TSR_GGML_Q4_BYTES). */
static void hold(uint32_t t, const uint8_t *src, uint64_t n, uint8_t *dst, tsr_tensor *tv)
{
    switch (t) {
    case GGML_F32:
        if (held_bytes(t, src, n)) memcpy(dst, src, n * 4);
        *tv = (tsr_tensor){ .type = TSR_DT_F32, .f = held_bytes(t, src, n)
                                                   ? (const float *)(void *)dst
                                                   : (const float *)(const void *)src };
        break;
    case GGML_F16: *tv = (tsr_tensor){ .type = TSR_DT_F16, .blk = src }; break;
    case GGML_Q8_0: *tv = (tsr_tensor){ .type = TSR_DT_Q8_0, .group = QK, .blk = src }; break;
    case GGML_Q4_0: *tv = (tsr_tensor){ .type = TSR_DT_Q4_0, .group = QK, .blk = src }; break;
    }
}

/* ------------------------------------------------------------------------ */
/* Tensor infos                                                               */

typedef struct tinfo {
    const char *name;     // (nlen,) bytes in the file
    uint64_t nlen;
    uint32_t n_dims;
    uint64_t ne[4];       // ne[0] = row length
    uint32_t type;
    uint64_t off;         // from the data section start
    uint64_t bytes;       // stored size
    uint64_t numel;
} tinfo;

/* Read and check one tensor info (everything but the extent). */
static int read_tinfo(rd *r, tinfo *t, uint64_t align)
{
    if (rd_str(r, &t->name, &t->nlen, "tensor name") ||
        rd_u32(r, &t->n_dims, "tensor n_dims"))
        return TSR_ERR_FORMAT;
    int nl = t->nlen > 64 ? 64 : (int)t->nlen;
    if (t->n_dims < 1 || t->n_dims > 4)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: tensor %.*s has %u dimensions (1..4)",
                          r->name, nl, t->name, t->n_dims);
    t->numel = 1;
    for (uint32_t d = 0; d < 4; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims && rd_u64(r, &t->ne[d], "tensor shape")) return TSR_ERR_FORMAT;
        if (t->ne[d] == 0 || __builtin_mul_overflow(t->numel, t->ne[d], &t->numel) ||
            t->numel > ((uint64_t)1 << 48))
            return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: tensor %.*s has a bad shape",
                              r->name, nl, t->name);
    }
    if (rd_u32(r, &t->type, "tensor type") || rd_u64(r, &t->off, "tensor offset"))
        return TSR_ERR_FORMAT;
    switch (t->type) {
    case GGML_F32: t->bytes = 4 * t->numel; break;
    case GGML_F16: t->bytes = 2 * t->numel; break;
    case GGML_Q8_0: case GGML_Q4_0:
        if (t->ne[0] % QK)
            return tsr_seterr(r->e, TSR_ERR_FORMAT,
                "%s: tensor %.*s: row length %llu is not a multiple of the %s block (%d)",
                r->name, nl, t->name, (unsigned long long)t->ne[0], type_name(t->type), QK);
        t->bytes = t->numel / QK * (t->type == GGML_Q8_0 ? 2 + QK : 2 + QK / 2);
        break;
    default:
        return tsr_seterr(r->e, TSR_ERR_UNSUPPORTED,
            "%s: tensor %.*s has ggml type %s (id %u); supported: F32, F16, Q4_0, Q8_0",
            r->name, nl, t->name, type_name(t->type), t->type);
    }
    if (t->off % align)
        return tsr_seterr(r->e, TSR_ERR_FORMAT,
            "%s: tensor %.*s: offset %llu is misaligned (alignment %llu)",
            r->name, nl, t->name, (unsigned long long)t->off, (unsigned long long)align);
    return TSR_OK;
}

static int cmp_off(const void *a, const void *b)
{
    const tinfo *x = *(const tinfo *const *)a, *y = *(const tinfo *const *)b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static const tinfo *find_tensor(const tinfo *ts, uint64_t n, const char *name)
{
    size_t nl = strlen(name);
    for (uint64_t i = 0; i < n; i++)
        if (ts[i].nlen == nl && !memcmp(ts[i].name, name, nl)) return &ts[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Open                                                                       */

/* Everything the open needs to free on any path. */
typedef struct gguf {
    rd r;
    kv *kvs;  uint64_t n_kv;
    tinfo *ts; uint64_t n_t;
    uint64_t data_off;
    tsr_checkpoint *m;
    int n_src_type[4];    // tensors by stored type: F32, F16, Q8_0, Q4_0
    int quantized;        // the model has a Q8_0 or Q4_0 tensor
} gguf;

/* The header: magic, version, and the counts of tensors and metadata
 * pairs. */
static int parse_header(rd *r, uint64_t *n_t, uint64_t *n_kv)
{
    uint32_t magic, version;
    if (rd_u32(r, &magic, "header") || rd_u32(r, &version, "header")) return TSR_ERR_FORMAT;
    if (memcmp(&magic, "GGUF", 4))
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: not a GGUF file", r->name);
    if (version != 2 && version != 3)
        return tsr_seterr(r->e, TSR_ERR_UNSUPPORTED, "%s: GGUF version %u (supported: 2, 3)",
                          r->name, version);
    if (rd_u64(r, n_t, "header") || rd_u64(r, n_kv, "header")) return TSR_ERR_FORMAT;
    return TSR_OK;
}

/* The n_kv metadata pairs into g->kvs: keys, types and where each value
 * lies (values are skipped, bounds-checked). */
static int parse_metadata(gguf *g, uint64_t n_kv)
{
    rd *r = &g->r;
    // each pair takes >= 13 bytes (key length, type, 1-byte value)
    if (n_kv > (r->len - r->off) / 13)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: truncated: %llu metadata pairs cannot fit",
                          r->name, (unsigned long long)n_kv);
    g->kvs = calloc(n_kv ? n_kv : 1, sizeof *g->kvs);
    if (!g->kvs) return tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: out of memory", r->name);
    for (uint64_t i = 0; i < n_kv; i++, g->n_kv++) {
        kv *k = &g->kvs[i];
        if (rd_str(r, &k->key, &k->klen, "metadata key") ||
            rd_u32(r, &k->type, "metadata type"))
            return TSR_ERR_FORMAT;
        k->voff = r->off;
        if (k->type == GT_ARRAY) {
            if (need(r, 12, "array header")) return TSR_ERR_FORMAT;
            k->atype = get_u32(r->b + r->off);
            k->acount = get_u64(r->b + r->off + 4);
            k->voff = r->off + 12;
        }
        if (skip_value(r, k->type, 0)) return TSR_ERR_FORMAT;
        k->kend = r->off;
    }
    return TSR_OK;
}

/* general.alignment (default 32): a power of two up to 16 MiB. */
static int parse_alignment(gguf *g, uint64_t *align)
{
    rd *r = &g->r;
    int64_t al = 32;
    int rc = kv_int(r, g->kvs, g->n_kv, "general.alignment", &al);
    if (rc < 0 || rc > 1) return rc;
    if (al < 1 || al > (1 << 24) || (al & (al - 1)))
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: general.alignment %lld is not a power of two",
                          r->name, (long long)al);
    *align = (uint64_t)al;
    return TSR_OK;
}

/* The n_t tensor infos into g->ts, counted by stored type. */
static int parse_tinfos(gguf *g, uint64_t n_t, uint64_t al)
{
    rd *r = &g->r;
    // each tensor info takes >= 32 bytes
    if (n_t > (r->len - r->off) / 32)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: truncated: %llu tensor infos cannot fit",
                          r->name, (unsigned long long)n_t);
    g->ts = calloc(n_t ? n_t : 1, sizeof *g->ts);
    if (!g->ts) return tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: out of memory", r->name);
    int rc;
    for (uint64_t i = 0; i < n_t; i++, g->n_t++)
        if ((rc = read_tinfo(r, &g->ts[i], al))) return rc;
    for (uint64_t i = 0; i < n_t; i++) {
        uint32_t ty = g->ts[i].type;
        int k = ty == GGML_F32 ? 0 : ty == GGML_F16 ? 1 : ty == GGML_Q8_0 ? 2 : 3;
        g->n_src_type[k]++;
    }
    return TSR_OK;
}

/* Every tensor within the data section (data_len bytes), and no two
 * overlapping. */
static int check_extents(gguf *g, uint64_t data_len)
{
    rd *r = &g->r;
    uint64_t n_t = g->n_t;
    const tinfo **by = malloc((n_t ? n_t : 1) * sizeof *by);
    if (!by) return tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: out of memory", r->name);
    for (uint64_t i = 0; i < n_t; i++) by[i] = &g->ts[i];
    qsort(by, n_t, sizeof *by, cmp_off);
    int rc = TSR_OK;
    for (uint64_t i = 0; i < n_t && !rc; i++) {
        const tinfo *t = by[i];
        int nl = t->nlen > 64 ? 64 : (int)t->nlen;
        if (t->off > data_len || t->bytes > data_len - t->off)
            rc = tsr_seterr(r->e, TSR_ERR_FORMAT,
                "%s: truncated: tensor %.*s (%llu bytes at data offset %llu) passes the end (%llu data bytes)",
                r->name, nl, t->name, (unsigned long long)t->bytes,
                (unsigned long long)t->off, (unsigned long long)data_len);
        else if (i > 0 && by[i - 1]->off + by[i - 1]->bytes > t->off)
            rc = tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: tensors %.*s and %.*s overlap",
                r->name, by[i - 1]->nlen > 64 ? 64 : (int)by[i - 1]->nlen, by[i - 1]->name,
                nl, t->name);
    }
    free(by);
    return rc;
}

/* Header, metadata and tensor infos; checks extents and overlaps. */
static int parse(gguf *g)
{
    rd *r = &g->r;
    uint64_t n_t, n_kv, al = 32;
    int rc;
    if ((rc = parse_header(r, &n_t, &n_kv)) || (rc = parse_metadata(g, n_kv)) ||
        (rc = parse_alignment(g, &al)) || (rc = parse_tinfos(g, n_t, al)))
        return rc;
    // the data section starts at the next multiple of the alignment
    uint64_t pad = al - r->off % al;
    if (pad == al) pad = 0;
    /* a file without tensors (llama.cpp's vocab-only files) may end
     * without the padding: it has no data section */
    if (n_t == 0 && pad > r->len - r->off) pad = r->len - r->off;
    if (need(r, pad, "alignment padding")) return TSR_ERR_FORMAT;
    g->data_off = r->off + pad;
    return check_extents(g, r->len - g->data_off);
}

/* The architectures tessera runs: general.architecture's name, the
 * variant, the prefix of its hyperparameter keys (the name itself). */
static const struct { const char *name; tsr_arch arch; } archs[] = {
    { "llama", TSR_ARCH_LLAMA },
    { "qwen2", TSR_ARCH_QWEN2 },
};

/* general.architecture: *ai gets its index in archs.  Errors: FORMAT
 * (absent), UNSUPPORTED (another, named in printable ASCII). */
static int config_arch(gguf *g, size_t *ai)
{
    rd *r = &g->r;
    const char *s; uint64_t sl;
    int rc = kv_str(r, g->kvs, g->n_kv, "general.architecture", &s, &sl);
    if (rc == 1)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: no general.architecture", r->name);
    if (rc) return rc;
    *ai = sizeof archs / sizeof archs[0];
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (sl == strlen(archs[i].name) && !memcmp(s, archs[i].name, sl)) *ai = i;
    if (*ai < sizeof archs / sizeof archs[0]) return TSR_OK;
    /* the name as printable ASCII, whatever bytes the file holds */
    char nm[65];
    size_t n = sl > 64 ? 64 : (size_t)sl;
    for (size_t i = 0; i < n; i++) nm[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    nm[n] = '\0';
    return tsr_seterr(r->e, TSR_ERR_UNSUPPORTED,
        "%s: architecture '%s' is not supported (llama, qwen2)", r->name, nm);
}

/* The integer hyperparameters ARCH.* (a: the architecture's name). */
static int config_ints(gguf *g, const char *a, tsr_config *c)
{
    rd *r = &g->r;
    static const struct { const char *key; size_t off; int required; } ints[] = {
        { "embedding_length",      offsetof(tsr_config, dim),        1 },
        { "feed_forward_length",   offsetof(tsr_config, hidden_dim), 1 },
        { "block_count",           offsetof(tsr_config, n_layers),   1 },
        { "attention.head_count",  offsetof(tsr_config, n_heads),    1 },
        { "attention.head_count_kv", offsetof(tsr_config, n_kv_heads), 0 },
        { "context_length",        offsetof(tsr_config, seq_len),    1 },
    };
    char key[96];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int64_t v = 0;
        snprintf(key, sizeof key, "%s.%s", a, ints[i].key);
        int rc = kv_int(r, g->kvs, g->n_kv, key, &v);
        if (rc == 1 && ints[i].required)
            return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: no %s", r->name, key);
        if (rc > 1) return rc;
        if (rc == 0) {
            if (v < 1 || v > INT32_MAX)
                return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: %s %lld out of range",
                                  r->name, key, (long long)v);
            *(int *)(void *)((char *)c + ints[i].off) = (int)v;
        }
    }
    if (!c->n_kv_heads) c->n_kv_heads = c->n_heads;
    return TSR_OK;
}

/* RoPE base, norm epsilon and RoPE scaling by keys (a: the architecture's
 * name). */
static int config_rope(gguf *g, const char *a, tsr_config *c)
{
    rd *r = &g->r;
    char key[96];
    int rc;
    c->rope_theta = 10000.0f;
    c->norm_eps = 1e-5f;
    /* the ranges every llama-family file is in (10000 to 1e6 and 1e-6 to
     * 1e-5 in practice): a base of 1 or less gives no rotation that varies
     * with position, an epsilon of 0 divides by zero on a zero vector */
    snprintf(key, sizeof key, "%s.rope.freq_base", a);
    if ((rc = kv_float_in(r, g->kvs, g->n_kv, key, &c->rope_theta, 1.0, 1e30)) > 1)
        return rc;
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", a);
    if ((rc = kv_float_in(r, g->kvs, g->n_kv, key, &c->norm_eps, 0.0, 1.0)) > 1)
        return rc;
    /* RoPE scaling by keys: none, or linear (Llama 3's comes as the
     * rope_freqs.weight tensor, read with the tensors) */
    const char *s; uint64_t sl;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    if ((rc = kv_str(r, g->kvs, g->n_kv, key, &s, &sl)) > 1) return rc;
    if (rc != 0 || (sl == 4 && !memcmp(s, "none", 4))) return TSR_OK;
    if (!(sl == 6 && !memcmp(s, "linear", 6)))
        return tsr_seterr(r->e, TSR_ERR_UNSUPPORTED,
            "%s: %s '%.*s' is not supported (none, linear)", r->name, key,
            sl > 32 ? 32 : (int)sl, s);
    snprintf(key, sizeof key, "%s.rope.scaling.factor", a);
    c->rope_factor = 1.0f;
    if ((rc = kv_float_in(r, g->kvs, g->n_kv, key, &c->rope_factor, 0.0, 1e6)) > 1)
        return rc;
    c->rope_scaled = 2;
    return TSR_OK;
}

/* The vocabulary's size (tokenizer.ggml.tokens), the classifier's sharing
 * and the special ids, each defaulting to llama2.c's. */
static int config_vocab(gguf *g, tsr_config *c)
{
    rd *r = &g->r;
    const kv *tok = find_kv(g->kvs, g->n_kv, "tokenizer.ggml.tokens");
    if (!tok || tok->type != GT_ARRAY || tok->atype != GT_STRING)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: no tokenizer.ggml.tokens string array",
                          r->name);
    if (tok->acount < 1 || tok->acount > TSR_CKPT_MAX_VOCAB)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: vocab size %llu out of range", r->name,
                          (unsigned long long)tok->acount);
    c->vocab_size = (int)tok->acount;
    c->shared_classifier = find_tensor(g->ts, g->n_t, "output.weight") == NULL;
    c->bos_id = 1;
    c->eos_id = 2;
    static const struct { const char *key; int dflt; size_t off; } sp[] = {
        { "tokenizer.ggml.bos_token_id", 1, offsetof(tsr_config, bos_id) },
        { "tokenizer.ggml.eos_token_id", 2, offsetof(tsr_config, eos_id) },
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        int64_t v = sp[i].dflt;
        int rc = kv_int(r, g->kvs, g->n_kv, sp[i].key, &v);
        if (rc > 1) return rc;
        if (rc == 1) continue;
        c->special_ids = 1;
        if (v < 0 || v >= c->vocab_size)
            return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: %s %lld is outside the vocabulary "
                              "(0..%d)", r->name, sp[i].key, (long long)v, c->vocab_size - 1);
        *(int *)(void *)((char *)c + sp[i].off) = (int)v;
    }
    return TSR_OK;
}

/* The head size as keys give it, which must be dim / n_heads: RoPE over
 * the whole head, keys and values of that size (not Gemma-style). */
static int config_head_size(gguf *g, const char *a, const tsr_config *c)
{
    rd *r = &g->r;
    char key[96];
    int64_t rope_dims;
    snprintf(key, sizeof key, "%s.rope.dimension_count", a);
    int rc = kv_int(r, g->kvs, g->n_kv, key, &rope_dims);
    if (rc > 1) return rc;
    if (rc == 0 && rope_dims != c->dim / c->n_heads)
        return tsr_seterr(r->e, TSR_ERR_UNSUPPORTED,
            "%s: %s %lld differs from head_size %d (partial RoPE)",
            r->name, key, (long long)rope_dims, c->dim / c->n_heads);
    /* a head size given apart from dim / n_heads (Gemma-style) */
    static const char *const hd[2] = { "attention.key_length", "attention.value_length" };
    for (int i = 0; i < 2; i++) {
        snprintf(key, sizeof key, "%s.%s", a, hd[i]);
        if ((rc = kv_int(r, g->kvs, g->n_kv, key, &rope_dims)) > 1) return rc;
        if (rc == 0 && rope_dims != c->dim / c->n_heads)
            return tsr_seterr(r->e, TSR_ERR_UNSUPPORTED,
                "%s: %s %lld differs from dim / n_heads %d", r->name, key,
                (long long)rope_dims, c->dim / c->n_heads);
    }
    return TSR_OK;
}

/* Read hyperparameters into c: the architecture, its keys (prefixed with
 * its name), the vocabulary's size and special ids.  Errors: FORMAT,
 * UNSUPPORTED. */
static int read_config(gguf *g, tsr_config *c)
{
    size_t ai;
    int rc = config_arch(g, &ai);
    if (rc) return rc;
    const char *a = archs[ai].name;
    memset(c, 0, sizeof *c);
    c->format = TSR_FMT_GGUF;
    c->arch = archs[ai].arch;
    /* qwen2 has q, k, v biases; a llama file may (llama.cpp takes them
     * when present) */
    c->qkv_bias = c->arch == TSR_ARCH_QWEN2 || find_tensor(g->ts, g->n_t, "blk.0.attn_q.bias");
    c->rope_neox = c->arch == TSR_ARCH_QWEN2;   /* llama.cpp: LLAMA_ROPE_TYPE_NEOX */
    if ((rc = config_ints(g, a, c)) || (rc = config_rope(g, a, c)) ||
        (rc = config_vocab(g, c)) ||
        (rc = tsr_config_check(c, g->r.name, TSR_ERR_FORMAT, g->r.e)))
        return rc;
    return config_head_size(g, a, c);
}

/* A boolean key: 0 with *v set, 1 when absent, else an error. */
static int kv_bool(const rd *r, const kv *kvs, uint64_t n, const char *key, int *v)
{
    const kv *k = find_kv(kvs, n, key);
    if (!k) return 1;
    if (k->type != GT_BOOL)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: metadata %s has type %u, expected a bool",
                          r->name, key, k->type);
    *v = r->b[k->voff] != 0;
    return 0;
}

/* An optional token id key: *v stays -1 when absent.  Errors: FORMAT for an
 * id outside the vocab. */
static int kv_token(const rd *r, const kv *kvs, uint64_t n, const char *key, int vocab, int *v)
{
    int64_t x;
    int rc = kv_int(r, kvs, n, key, &x);
    if (rc == 1) return TSR_OK;
    if (rc) return rc;
    if (x < 0 || x >= vocab)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: %s %lld is outside the vocabulary (0..%d)",
                          r->name, key, (long long)x, vocab - 1);
    *v = (int)x;
    return TSR_OK;
}

/* The strings of a string array as pointers into the file (each GGUF
 * string is a u64 length, then its bytes; parse() bounds-checked them).
 * *ptr and *len are malloc'd.  sp_space: "▁" (U+2581) becomes ' ' (the
 * strings are then copied into *buf, malloc'd too).  Errors: FORMAT, NOMEM. */
static int str_array(const rd *r, const kv *k, const char ***ptr, int **len, char **buf,
                     int sp_space)
{
    uint64_t n = k->acount;
    *ptr = NULL;
    *len = NULL;
    *buf = NULL;
    const uint8_t *p = r->b + k->voff;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l = get_u64(p);
        total += l;
        p += 8 + l;
    }
    if (total > INT32_MAX)
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: tokenizer strings too long", r->name);
    *ptr = malloc((n ? n : 1) * sizeof **ptr);
    *len = malloc((n ? n : 1) * sizeof **len);
    if (sp_space) *buf = malloc(total + 1);
    if (!*ptr || !*len || (sp_space && !*buf))
        return tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: out of memory for the tokenizer", r->name);
    p = r->b + k->voff;
    char *w = *buf;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l = get_u64(p);
        const uint8_t *src = p + 8;
        if (!sp_space) {
            (*ptr)[i] = (const char *)src;
            (*len)[i] = (int)l;
        } else {
            (*ptr)[i] = w;
            for (uint64_t j = 0; j < l; j++) {
                if (j + 2 < l && src[j] == 0xe2 && src[j + 1] == 0x96 && src[j + 2] == 0x81) {
                    *w++ = ' ';
                    j += 2;
                } else {
                    *w++ = (char)src[j];
                }
            }
            (*len)[i] = (int)(w - (*ptr)[i]);
        }
        p += 8 + l;
    }
    return TSR_OK;
}

/* The tokenizer's arrays in the metadata (tokens checked by read_config). */
typedef struct tok_keys {
    const kv *tok, *sc, *tt, *mg;   /* tokens, scores, token types, merges */
} tok_keys;

/* tokenizer.ggml.model: d->kind; its arrays, checked: scores for
 * SentencePiece, merges (and the pre-tokenizer's name) for BPE. */
static int tok_model(gguf *g, tsr_vocab_desc *d, tok_keys *k)
{
    rd *r = &g->r;
    const char *s = "llama", *pre = NULL;
    uint64_t sl = 5, pl = 0;
    int rc = kv_str(r, g->kvs, g->n_kv, "tokenizer.ggml.model", &s, &sl);
    if (rc > 1) return rc;
    if (sl == 5 && !memcmp(s, "llama", 5)) d->kind = TSR_VOCAB_SPM;
    else if (sl == 4 && !memcmp(s, "gpt2", 4)) d->kind = TSR_VOCAB_BPE;
    else
        return tsr_seterr(r->e, TSR_ERR_UNSUPPORTED,
            "%s: tokenizer model '%.*s' is not supported (llama: SentencePiece, gpt2: "
            "byte-level BPE)", r->name, sl > 64 ? 64 : (int)sl, s);
    k->tok = find_kv(g->kvs, g->n_kv, "tokenizer.ggml.tokens");
    k->sc = find_kv(g->kvs, g->n_kv, "tokenizer.ggml.scores");
    k->tt = find_kv(g->kvs, g->n_kv, "tokenizer.ggml.token_type");
    k->mg = find_kv(g->kvs, g->n_kv, "tokenizer.ggml.merges");
    uint64_t n = k->tok->acount;   // checked by read_config
    const kv *sc = k->sc, *tt = k->tt, *mg = k->mg;
    if (d->kind == TSR_VOCAB_SPM &&
        (!sc || sc->type != GT_ARRAY || sc->atype != GT_F32 || sc->acount != n))
        return tsr_seterr(r->e, TSR_ERR_FORMAT,
            "%s: tokenizer.ggml.scores must be %llu f32 values", r->name, (unsigned long long)n);
    if (tt && (tt->type != GT_ARRAY || tt->atype != GT_I32 || tt->acount != n))
        return tsr_seterr(r->e, TSR_ERR_FORMAT,
            "%s: tokenizer.ggml.token_type must be %llu int32 values", r->name,
            (unsigned long long)n);
    if (d->kind != TSR_VOCAB_BPE) return TSR_OK;
    if (!mg || mg->type != GT_ARRAY || mg->atype != GT_STRING || mg->acount < 1 ||
        mg->acount > INT32_MAX)
        return tsr_seterr(r->e, TSR_ERR_FORMAT,
            "%s: a gpt2 tokenizer needs tokenizer.ggml.merges, a string array", r->name);
    if ((rc = kv_str(r, g->kvs, g->n_kv, "tokenizer.ggml.pre", &pre, &pl)) > 1) return rc;
    d->pre = pre;
    d->pre_len = pl;
    return TSR_OK;
}

/* The special ids (n tokens) and flags: BOS, EOS, EOT, EOM (SentencePiece
 * defaults as llama.cpp's), add_bos_token, add_space_prefix, and Phi-3's
 * special tokens that drop the spaces after them. */
static int tok_specials(gguf *g, tsr_vocab_desc *d, uint64_t n)
{
    rd *r = &g->r;
    int rc;
    static const struct { const char *key; size_t off; } ids[] = {
        { "tokenizer.ggml.bos_token_id", offsetof(tsr_vocab_desc, bos) },
        { "tokenizer.ggml.eos_token_id", offsetof(tsr_vocab_desc, eos) },
        { "tokenizer.ggml.eot_token_id", offsetof(tsr_vocab_desc, eot) },
        { "tokenizer.ggml.eom_token_id", offsetof(tsr_vocab_desc, eom) },
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if ((rc = kv_token(r, g->kvs, g->n_kv, ids[i].key, (int)n,
                           (int *)(void *)((char *)d + ids[i].off))))
            return rc;
    if (d->kind == TSR_VOCAB_SPM) {   // llama.cpp's defaults for SentencePiece
        if (d->bos < 0 && n > 1) d->bos = 1;
        if (d->eos < 0 && n > 2) d->eos = 2;
    }
    if ((rc = kv_bool(r, g->kvs, g->n_kv, "tokenizer.ggml.add_bos_token", &d->add_bos)) > 1 ||
        (rc = kv_bool(r, g->kvs, g->n_kv, "tokenizer.ggml.add_space_prefix",
                      &d->add_space_prefix)) > 1)
        return rc;
    /* Phi-3's special tokens drop the spaces after them (llama.cpp decides
     * it by the model's name) */
    const char *name;
    uint64_t nl;
    if ((rc = kv_str(r, g->kvs, g->n_kv, "general.name", &name, &nl)) > 1) return rc;
    for (uint64_t i = 0; rc == 0 && i + 4 <= nl; i++)
        if (!strncasecmp(name + i, "phi3", 4) || (i + 5 <= nl && !strncasecmp(name + i, "phi-3", 5)))
            d->rstrip_special = 1;
    return TSR_OK;
}

/* A copy of the n-element array of elem-byte values at p (the file's
 * arrays may sit at any alignment), or NULL when p is NULL; *rc gets
 * NOMEM when the copy fails. */
static void *copy_array(const rd *r, const void *p, uint64_t n, size_t elem, int *rc)
{
    if (!p || *rc) return NULL;
    void *c = malloc(n * elem);
    if (c) memcpy(c, p, n * elem);
    else *rc = tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: out of memory for the tokenizer", r->name);
    return c;
}

/* The tokenizer from d (kind, specials) and the arrays k (n tokens). */
static int tok_build(gguf *g, tsr_vocab_desc *d, const tok_keys *k, uint64_t n,
                     tsr_tokenizer **out)
{
    rd *r = &g->r;
    const char **pieces = NULL, **merges = NULL;
    int *nb = NULL, *mb = NULL;
    char *buf = NULL, *mbuf = NULL;
    int rc = str_array(r, k->tok, &pieces, &nb, &buf, d->kind == TSR_VOCAB_SPM);
    if (!rc && d->kind == TSR_VOCAB_BPE) rc = str_array(r, k->mg, &merges, &mb, &mbuf, 0);
    const kv *sc = k->sc;
    const void *sp = sc && sc->type == GT_ARRAY && sc->atype == GT_F32 && sc->acount == n
                         ? r->b + sc->voff : NULL;
    float *scores = copy_array(r, sp, n, sizeof *scores, &rc);
    int32_t *types = copy_array(r, k->tt ? r->b + k->tt->voff : NULL, n, sizeof *types, &rc);
    if (!rc) {
        d->vocab_size = (int)n;
        d->pieces = pieces;
        d->n_bytes = nb;
        d->scores = scores;
        d->types = types;
        d->merges = merges;
        d->merge_bytes = mb;
        d->n_merges = merges ? (int)k->mg->acount : 0;
        rc = tsr_tokenizer_from_vocab(d, out, r->e);
        if (rc && r->e) {   // name the file in the message
            char m[TSR_ERRMSG_MAX];
            snprintf(m, sizeof m, "%s", r->e->msg);
            tsr_seterr(r->e, rc, "%s: %s", r->name, m);
        }
    }
    free(scores);
    free(types);
    free(pieces);
    free(nb);
    free(buf);
    free(merges);
    free(mb);
    free(mbuf);
    return rc;
}

/* Build the tokenizer from tokenizer.ggml.*: model "llama" (SentencePiece,
 * "▁" becomes ' ' so that pieces match llama2.c's tokenizer.bin) or "gpt2"
 * (byte-level BPE, with merges and pre-tokenizer), the token types, the
 * special ids and add_bos_token / add_space_prefix.  Errors: FORMAT,
 * UNSUPPORTED (another tokenizer model, an unknown pre-tokenizer), NOMEM. */
static int read_tokenizer(gguf *g, tsr_tokenizer **out)
{
    tsr_vocab_desc d = { .add_bos = -1, .add_space_prefix = -1, .bos = -1, .eos = -1,
                         .eot = -1, .eom = -1 };
    tok_keys k = { 0 };
    int rc = tok_model(g, &d, &k);
    if (rc) return rc;
    uint64_t n = k.tok->acount;
    if ((rc = tok_specials(g, &d, n))) return rc;
    return tok_build(g, &d, &k, n, out);
}

/* Copy the named tensor, which must have shape (rows, cols), into *dst
 * (advanced past it, hold()) and point t at it; with t NULL only check
 * that it is there with that shape, and add the bytes it will take to
 * *need. */
static int take(gguf *g, tsr_tensor *t, const char *name, int rows, int cols, uint8_t **dst,
                uint64_t *need)
{
    rd *r = &g->r;
    const tinfo *ti = find_tensor(g->ts, g->n_t, name);
    if (!ti) return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: missing tensor %s", r->name, name);
    if (ti->ne[0] != (uint64_t)cols || ti->ne[1] != (uint64_t)rows || ti->ne[2] != 1 || ti->ne[3] != 1)
        return tsr_seterr(r->e, TSR_ERR_FORMAT,
            "%s: tensor %s has shape [%llu, %llu, %llu, %llu], expected [%d, %d] (cols, rows)",
            r->name, name, (unsigned long long)ti->ne[0], (unsigned long long)ti->ne[1],
            (unsigned long long)ti->ne[2], (unsigned long long)ti->ne[3], cols, rows);
    if (ti->type == GGML_Q8_0 || ti->type == GGML_Q4_0) g->quantized = 1;
    if (!t) {
        *need += held_bytes(ti->type, r->b + g->data_off + ti->off, ti->numel);
        return TSR_OK;
    }
    hold(ti->type, r->b + g->data_off + ti->off, ti->numel, *dst, t);
    t->rows = rows;
    t->cols = cols;
    *dst += held_bytes(ti->type, r->b + g->data_off + ti->off, ti->numel);
    return TSR_OK;
}

/* Layer l's tensors (and its q, k, v biases when c has them), as take_all
 * takes them: into m's views, or (m NULL) checked and counted in *need. */
static int take_layer(gguf *g, const tsr_config *c, tsr_checkpoint *m, int l, uint8_t **f,
                      uint64_t *need)
{
    int D = c->dim, H = c->hidden_dim;
    int KV = c->n_kv_heads * (c->dim / c->n_heads);   // kv_dim
    static const char *const suf[9] = { "attn_norm", "attn_q", "attn_k", "attn_v",
        "attn_output", "ffn_norm", "ffn_gate", "ffn_down", "ffn_up" };
    const int rows[9] = { 1, D, KV, KV, D, 1, H, D, H }, cols[9] = { D, D, D, D, D, D, D, H, D };
    tsr_tensor *v[9] = { NULL };
    if (m) {
        tsr_tensor *const all[9] = { &m->rms_att[l], &m->wq[l], &m->wk[l], &m->wv[l], &m->wo[l],
                                     &m->rms_ffn[l], &m->w1[l], &m->w2[l], &m->w3[l] };
        memcpy(v, all, sizeof v);
    }
    char n[64];
    int rc;
    for (int i = 0; i < 9; i++) {
        snprintf(n, sizeof n, "blk.%d.%s.weight", l, suf[i]);
        if ((rc = take(g, v[i], n, rows[i], cols[i], f, need))) return rc;
    }
    if (!c->qkv_bias) return TSR_OK;
    tsr_tensor *b[4] = { NULL };
    if (m) {
        b[1] = &m->bq[l];
        b[2] = &m->bk[l];
        b[3] = &m->bv[l];
    }
    for (int i = 1; i < 4; i++) {
        snprintf(n, sizeof n, "blk.%d.%s.bias", l, suf[i]);
        if ((rc = take(g, b[i], n, 1, i == 1 ? D : KV, f, need))) return rc;
    }
    return TSR_OK;
}

/* Llama 3's RoPE scaling, as llama.cpp's converter writes it: one divisor
 * per frequency (head_size / 2 of them), when the file has
 * rope_freqs.weight; taken as take_all takes tensors. */
static int take_rope_freqs(gguf *g, const tsr_config *c, tsr_checkpoint *m, uint8_t **f,
                           uint64_t *need)
{
    if (!find_tensor(g->ts, g->n_t, "rope_freqs.weight")) return TSR_OK;
    int nf = c->dim / c->n_heads / 2;
    tsr_tensor ff;
    int rc = take(g, m ? &ff : NULL, "rope_freqs.weight", 1, nf, f, need);
    if (rc) return rc;
    if (!m) {
        *need += (uint64_t)nf * sizeof(float);
        return TSR_OK;
    }
    m->rope_ff = (float *)(void *)*f;
    *f += (size_t)nf * sizeof(float);
    for (int j = 0; j < nf; j++) {
        float v = tsr_tensor_get(&ff, (size_t)j);
        /* a divisor: finite and positive (llama.cpp's are 1 to 32) */
        if (!(v > 0.0f && v <= 1e30f))
            return tsr_seterr(g->r.e, TSR_ERR_FORMAT,
                "%s: rope_freqs.weight[%d] is %g, not a positive divisor",
                g->r.name, j, (double)v);
        m->rope_ff[j] = v;
    }
    return TSR_OK;
}

/* Take every tensor of a model of shape c into m's views and the memory
 * at *pd; with m NULL only check names and shapes and add up in *need the
 * bytes they take (before anything is allocated, so a header cannot make
 * the open allocate what the file does not hold). */
static int take_all(gguf *g, const tsr_config *c, tsr_checkpoint *m, uint8_t **pd, uint64_t *need)
{
    int rc;
    uint8_t **f = pd;   // NULL when only checking
    int D = c->dim, V = c->vocab_size;
    if ((rc = take(g, m ? &m->tok_embedding : NULL, "token_embd.weight", V, D, f, need)) ||
        (rc = take(g, m ? &m->rms_final : NULL, "output_norm.weight", 1, D, f, need)))
        return rc;
    if (c->shared_classifier) { if (m) m->wcls = m->tok_embedding; }
    else if ((rc = take(g, m ? &m->wcls : NULL, "output.weight", V, D, f, need))) return rc;
    for (int l = 0; l < c->n_layers; l++)
        if ((rc = take_layer(g, c, m, l, f, need))) return rc;
    return take_rope_freqs(g, c, m, f, need);
}

/* tokenizer.chat_template (optional): a NUL-terminated copy into *out, or
 * NULL when the key is absent.  A template is text: a NUL byte in it is a
 * malformed file. */
static int read_chat_template(gguf *g, char **out)
{
    rd *r = &g->r;
    const char *s;
    uint64_t n;
    int rc = kv_str(r, g->kvs, g->n_kv, "tokenizer.chat_template", &s, &n);
    if (rc) return rc == 1 ? TSR_OK : rc;
    if (memchr(s, '\0', (size_t)n))
        return tsr_seterr(r->e, TSR_ERR_FORMAT, "%s: tokenizer.chat_template holds a NUL byte",
                          r->name);
    if (!(*out = malloc((size_t)n + 1)))
        return tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: out of memory for the chat template", r->name);
    memcpy(*out, s, (size_t)n);
    (*out)[n] = '\0';
    return TSR_OK;
}

/* Allocate the checkpoint and fill every tensor. */
static int build(gguf *g, tsr_config *c)
{
    rd *r = &g->r;
    size_t L = (size_t)c->n_layers;
    uint64_t bytes = 0;
    int rc = take_all(g, c, NULL, NULL, &bytes);
    if (rc) return rc;
    int ovf = __builtin_add_overflow(bytes, 12 * L * sizeof(tsr_tensor), &bytes);
    if (ovf || bytes > SIZE_MAX)
        return tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: model too large", r->name);
    /* the quantized tensors' group: the block of 32 */
    if (g->quantized) c->group_size = QK;
    g->m = calloc(1, sizeof *g->m);
    void *owned = g->m ? malloc((size_t)bytes) : NULL;
    if (!owned)
        return tsr_seterr(r->e, TSR_ERR_NOMEM, "%s: out of memory for %llu bytes of weights",
                          r->name, (unsigned long long)bytes);
    tsr_checkpoint *m = g->m;
    m->cfg = *c;
    memcpy(m->n_src_type, g->n_src_type, sizeof m->n_src_type);
    m->owned = owned;
    m->map_len = (size_t)r->len;   // file size; the map itself is set by open_gguf
    snprintf(m->path, sizeof m->path, "%s", r->name);
    tsr_tensor *t = owned;   // (12, n_layers) per-layer tensor views
    m->rms_att = t + 0 * L;  m->wq = t + 1 * L;  m->wk = t + 2 * L;
    m->wv = t + 3 * L;       m->wo = t + 4 * L;  m->rms_ffn = t + 5 * L;
    m->w1 = t + 6 * L;       m->w2 = t + 7 * L;  m->w3 = t + 8 * L;
    if (c->qkv_bias) { m->bq = t + 9 * L;  m->bk = t + 10 * L;  m->bv = t + 11 * L; }
    uint8_t *d = (uint8_t *)(void *)(t + 12 * L);   // the tensors' values

    if ((rc = take_all(g, c, m, &d, NULL))) return rc;
    tsr_checkpoint_scan_kinds(m);
    if ((rc = read_tokenizer(g, &m->tok))) return rc;
    /* the kernel stops at the config's BOS / EOS: the tokenizer's, where a
     * vocabulary names only one, that one for both */
    int bos = tsr_tokenizer_bos(m->tok), eos = tsr_tokenizer_eos(m->tok);
    if (bos >= 0 || eos >= 0) {
        m->cfg.bos_id = bos >= 0 ? bos : eos;
        m->cfg.eos_id = eos >= 0 ? eos : bos;
        m->cfg.special_ids = 1;
    }
    tsr_tokenizer_set_special(m->tok, tsr_config_bos(&m->cfg), tsr_config_eos(&m->cfg));
    return read_chat_template(g, &m->chat_template);
}

int tsr_gguf_open_memory(const void *data, size_t len, const char *name,
                         tsr_checkpoint **out, tsr_err *e)
{
    *out = NULL;
    gguf g = { .r = { .b = data, .len = len, .name = name, .e = e } };
    tsr_config cfg;
    int rc = parse(&g);
    if (!rc) rc = read_config(&g, &cfg);
    if (!rc) rc = build(&g, &cfg);
    free(g.kvs);
    free(g.ts);
    if (rc) tsr_checkpoint_close(g.m);
    else *out = g.m;
    return rc;
}

int tsr_gguf_read_tokenizer(const void *data, size_t len, const char *name,
                            tsr_tokenizer **out, tsr_err *e)
{
    *out = NULL;
    gguf g = { .r = { .b = data, .len = len, .name = name, .e = e } };
    int rc = parse(&g);
    if (!rc) {
        const kv *tok = find_kv(g.kvs, g.n_kv, "tokenizer.ggml.tokens");
        if (!tok || tok->type != GT_ARRAY || tok->atype != GT_STRING || tok->acount < 1 ||
            tok->acount > TSR_CKPT_MAX_VOCAB)
            rc = tsr_seterr(e, TSR_ERR_FORMAT, "%s: no tokenizer.ggml.tokens string array of "
                            "1..%d tokens", name, TSR_CKPT_MAX_VOCAB);
    }
    if (!rc) rc = read_tokenizer(&g, out);
    if (!rc) {   // as a model's: BOS / EOS where the vocabulary names one of them
        int bos = tsr_tokenizer_bos(*out), eos = tsr_tokenizer_eos(*out);
        if (bos >= 0 || eos >= 0)
            tsr_tokenizer_set_special(*out, bos >= 0 ? bos : eos, eos >= 0 ? eos : bos);
    }
    free(g.kvs);
    free(g.ts);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Metadata as stored (tessera synth copies a vocabulary's)                   */

int tsr_gguf_meta_prefix(const void *data, size_t len, const char *name, const char *prefix,
                         uint8_t **out, size_t *out_len, uint64_t *count, int *n_tokens,
                         tsr_err *e)
{
    *out = NULL;
    *out_len = 0;
    *count = 0;
    *n_tokens = 0;
    gguf g = { .r = { .b = data, .len = len, .name = name, .e = e } };
    int rc = parse(&g);
    size_t pl = strlen(prefix), total = 0;
    for (uint64_t i = 0; !rc && i < g.n_kv; i++) {
        const kv *k = &g.kvs[i];
        if (k->klen >= pl && !memcmp(k->key, prefix, pl))
            total += (size_t)(k->kend - ((uint64_t)((const uint8_t *)k->key - g.r.b) - 8));
    }
    uint8_t *buf = rc ? NULL : malloc(total ? total : 1);
    if (!rc && !buf) rc = tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", name);
    for (uint64_t i = 0; !rc && i < g.n_kv; i++) {
        const kv *k = &g.kvs[i];
        if (k->klen < pl || memcmp(k->key, prefix, pl)) continue;
        uint64_t start = (uint64_t)((const uint8_t *)k->key - g.r.b) - 8;   // its key's length
        memcpy(buf + *out_len, g.r.b + start, (size_t)(k->kend - start));
        *out_len += (size_t)(k->kend - start);
        (*count)++;
    }
    const kv *tok = rc ? NULL : find_kv(g.kvs, g.n_kv, "tokenizer.ggml.tokens");
    if (tok && tok->type == GT_ARRAY && tok->atype == GT_STRING && tok->acount <= INT32_MAX)
        *n_tokens = (int)tok->acount;
    free(g.kvs);
    free(g.ts);
    if (rc) {
        free(buf);
        *out_len = 0;
        *count = 0;
        return rc;
    }
    *out = buf;
    return TSR_OK;
}
