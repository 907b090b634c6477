/*
 * format_llama2c.c - open llama2.c checkpoints: legacy fp32, version 1 fp32,
 * version 2 Q8_0.  Facts from llama2.c export.py (legacy_export,
 * version1_export, version2_export), run.c and runq.c.
 *
 * Layouts (all little-endian; L = n_layers, kv_dim = n_kv_heads * head_size):
 *
 *   legacy  int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
 *           seq_len (vocab_size < 0: classifier stored separately), then fp32
 *           tok_embeddings (vocab,dim), rms_att (L,dim), wq (L,dim,dim),
 *           wk (L,kv_dim,dim), wv (L,kv_dim,dim), wo (L,dim,dim),
 *           rms_ffn (L,dim), w1 (L,hidden,dim), w2 (L,dim,hidden),
 *           w3 (L,hidden,dim), rms_final (dim), freq_cis_real and
 *           freq_cis_imag (seq_len*head_size/2 each, unused), [wcls].
 *   v1      256-byte header: uint32 magic, int32 version 1, the 7 int32
 *           above, uint8 shared_classifier, zeros.  Then fp32 rms_att,
 *           rms_ffn, rms_final, tok_embeddings, wq, wk, wv, wo, w1, w2, w3,
 *           [wcls].
 *   v2      header as v1 with version 2 and an int32 group_size right after
 *           shared_classifier.  Then fp32 rms_att, rms_ffn, rms_final; then
 *           per tensor int8 values (numel) followed by fp32 scales
 *           (numel/group) for tok_embeddings, wq[0..L), wk.., wv.., wo..,
 *           w1.., w2.., w3.., [wcls].  Groups run over each tensor's flat
 *           element list and may cross a row end.  (This is what runq.c
 *           reads; an early export.py wrote all scales after all int8
 *           blocks, which gives the same file size and cannot be told apart.)
 *
 * Open: read and check the header, compute the size it implies and compare
 * with the file length, and only then mmap the file and point the tensors
 * into it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"

/* ------------------------------------------------------------------------ */
/* Overflow-checked 64-bit size arithmetic                                    */

/* acc += a * b; sets *ovf on overflow. */
static void mac_u64(uint64_t *acc, uint64_t a, uint64_t b, int *ovf)
{
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p) || __builtin_add_overflow(*acc, p, acc))
        *ovf = 1;
}

/* ------------------------------------------------------------------------ */
/* Implied file size                                                          */

int tsr_llama2c_size(const tsr_config *cfg, uint64_t *bytes)
{
    const tsr_config *p = cfg;
    uint64_t dim = (uint64_t)p->dim, hidden = (uint64_t)p->hidden_dim;
    uint64_t L = (uint64_t)p->n_layers, vocab = (uint64_t)p->vocab_size;
    uint64_t head_size = dim / (uint64_t)p->n_heads;
    uint64_t kv_dim = (uint64_t)p->n_kv_heads * head_size;
    int ovf = 0;

    // element counts: norms (always fp32) and matrices (fp32 or Q8_0)
    uint64_t norms = 0, mats = 0;
    mac_u64(&norms, 2 * L, dim, &ovf);               // rms_att, rms_ffn
    mac_u64(&norms, 1, dim, &ovf);                   // rms_final
    mac_u64(&mats, vocab, dim, &ovf);                // tok_embedding
    mac_u64(&mats, 2 * L, dim * dim, &ovf);          // wq, wo
    mac_u64(&mats, 2 * L, kv_dim * dim, &ovf);       // wk, wv
    mac_u64(&mats, 3 * L, hidden * dim, &ovf);       // w1, w2, w3
    if (!p->shared_classifier) mac_u64(&mats, vocab, dim, &ovf);   // wcls

    uint64_t n = 0;
    switch (p->format) {
    case TSR_FMT_LLAMA2C_LEGACY:
        n = TSR_LLAMA2C_LEGACY_HEADER;
        mac_u64(&n, 4, norms, &ovf);
        mac_u64(&n, 4, mats, &ovf);
        mac_u64(&n, 4, (uint64_t)p->seq_len * head_size, &ovf);  // freq_cis re+im
        break;
    case TSR_FMT_LLAMA2C_V1:
        n = TSR_LLAMA2C_HEADER;
        mac_u64(&n, 4, norms, &ovf);
        mac_u64(&n, 4, mats, &ovf);
        break;
    case TSR_FMT_LLAMA2C_V2:
        // every tensor's numel is a multiple of group (tsr_config_check), so
        // the scale count of the whole set is mats / group
        n = TSR_LLAMA2C_HEADER;
        mac_u64(&n, 4, norms, &ovf);
        mac_u64(&n, 1, mats, &ovf);
        mac_u64(&n, 4, mats / (uint64_t)p->group_size, &ovf);
        break;
    default:
        return TSR_ERR_UNSUPPORTED;
    }
    if (ovf) return TSR_ERR_FORMAT;
    *bytes = n;
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Header                                                                     */

static int32_t rd_i32(const uint8_t *b) { int32_t v; memcpy(&v, b, 4); return v; }

/* Fill the 7 shared hyperparameters from 7 consecutive int32. */
static void read_params(tsr_config *c, const uint8_t *b)
{
    c->dim        = rd_i32(b + 0);
    c->hidden_dim = rd_i32(b + 4);
    c->n_layers   = rd_i32(b + 8);
    c->n_heads    = rd_i32(b + 12);
    c->n_kv_heads = rd_i32(b + 16);
    c->vocab_size = rd_i32(b + 20);
    c->seq_len    = rd_i32(b + 24);
}

/* Parse the header bytes hdr (n of them, n >= 4) of a file of file_len bytes
 * into cfg and check it.  Errors: TSR_ERR_FORMAT, TSR_ERR_UNSUPPORTED. */
/* " (a directory)" etc. for a file type that is not a regular file, to
 * follow "is not a regular file" in a message. */
static const char *tsr_file_kind(mode_t m)
{
    if (S_ISDIR(m))  return " (a directory)";
    if (S_ISFIFO(m)) return " (a named pipe)";
    if (S_ISCHR(m))  return " (a character device)";
    if (S_ISBLK(m))  return " (a block device)";
    if (S_ISSOCK(m)) return " (a socket)";
    return "";
}

/* 1 if hdr (n bytes) reads as the start of a llama2.c tokenizer.bin
 * (run.c build_tokenizer): int32 max_token_length, then records of fp32
 * score, int32 len, len bytes.  Asks for at least 3 whole records with
 * 1 <= len <= max_token_length and a finite score; used only to explain a
 * header that already failed as a checkpoint. */
static int looks_like_tokenizer(const uint8_t *hdr, size_t n)
{
    if (n < 4) return 0;
    int32_t max_len = rd_i32(hdr);
    if (max_len < 1 || max_len > 1024) return 0;
    size_t off = 4;
    int records = 0;
    while (records < 3 && off + 8 <= n) {
        float score;
        memcpy(&score, hdr + off, 4);
        int32_t len = rd_i32(hdr + off + 4);
        if (!isfinite(score) || len < 1 || len > max_len || off + 8 + (size_t)len > n) return 0;
        off += 8 + (size_t)len;
        records++;
    }
    return records == 3;
}

static int parse_header(const char *path, const uint8_t *hdr, size_t n,
                        uint64_t file_len, tsr_config *cfg, tsr_err *e)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->rope_theta = 10000.0f;
    cfg->norm_eps = 1e-5f;

    uint32_t magic;
    memcpy(&magic, hdr, 4);
    if (magic == TSR_LLAMA2C_MAGIC) {
        if (n < TSR_LLAMA2C_HEADER)
            return tsr_seterr(e, TSR_ERR_FORMAT,
                "%s: truncated: %llu bytes, shorter than the %d-byte v1/v2 header",
                path, (unsigned long long)file_len, TSR_LLAMA2C_HEADER);
        int32_t version = rd_i32(hdr + 4);
        if (version != 1 && version != 2)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                "%s: unsupported llama2.c version %d (known: 1 fp32, 2 Q8_0)",
                path, (int)version);
        read_params(cfg, hdr + 8);
        uint8_t shared = hdr[36];
        if (shared > 1)
            return tsr_seterr(e, TSR_ERR_FORMAT,
                "%s: shared_classifier byte is %u, expected 0 or 1", path, shared);
        cfg->shared_classifier = shared;
        cfg->format = version == 1 ? TSR_FMT_LLAMA2C_V1 : TSR_FMT_LLAMA2C_V2;
        if (version == 2) cfg->group_size = rd_i32(hdr + 37);
    } else {
        // No magic: either a legacy file, whose first word is dim, or junk.
        // (GGUF files never get here: the open functions hand them to format_gguf.c)
        int32_t dim = rd_i32(hdr);
        if (dim < 1 || dim > TSR_CKPT_MAX_DIM)
            return tsr_seterr(e, TSR_ERR_FORMAT,
                "%s: bad magic 0x%08x: not llama2.c v1/v2 (0x%08x) nor legacy "
                "(dim %d out of range 1..%d)",
                path, magic, TSR_LLAMA2C_MAGIC, (int)dim, TSR_CKPT_MAX_DIM);
        if (n < TSR_LLAMA2C_LEGACY_HEADER)
            return tsr_seterr(e, TSR_ERR_FORMAT,
                "%s: truncated: %llu bytes, shorter than the %d-byte legacy header",
                path, (unsigned long long)file_len, TSR_LLAMA2C_LEGACY_HEADER);
        read_params(cfg, hdr);
        // llama2.c run.c: a negative vocab_size flags an unshared classifier
        cfg->shared_classifier = cfg->vocab_size > 0;
        if (cfg->vocab_size < 0 && cfg->vocab_size != INT32_MIN)
            cfg->vocab_size = -cfg->vocab_size;
        cfg->format = TSR_FMT_LLAMA2C_LEGACY;
    }
    int rc = tsr_config_check(cfg, path, TSR_ERR_FORMAT, e);
    // A tokenizer.bin passed as the model fails as a legacy header with a
    // puzzling field ("hidden_dim 0"): say what the file seems to be.
    if (rc != TSR_OK && cfg->format == TSR_FMT_LLAMA2C_LEGACY && looks_like_tokenizer(hdr, n))
        return tsr_seterr(e, TSR_ERR_FORMAT,
            "%s: not a model checkpoint (a llama2.c tokenizer file? its records start "
            "like one, max token length %d)", path, (int)rd_i32(hdr));
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Tensor layout                                                              */

/* Walks the mapped file in layout order, pointing tensors into it. */
typedef struct walker {
    const uint8_t *base;   // (file_len,) the mmap()ed file
    uint64_t off;          // bytes consumed so far
    float *spill;          // (n_spill,) aligned copies of misaligned scales
    size_t n_spill;        // floats of spill used
} walker;

/* Next rows x cols fp32 tensor (offsets of fp32 data are 4-aligned in all
 * three layouts: every preceding field is a multiple of 4 bytes). */
static void take_f32(walker *w, tsr_tensor *t, int rows, int cols)
{
    size_t n = (size_t)rows * (size_t)cols;
    *t = (tsr_tensor){ .type = TSR_DT_F32, .rows = rows, .cols = cols,
                       .f = (const float *)(const void *)(w->base + w->off) };
    w->off += 4 * (uint64_t)n;
}

/* Next rows x cols Q8_0 tensor: numel int8 values, then numel/group fp32
 * scales.  The scales start misaligned when numel % 4 != 0; they are then
 * copied into the spill buffer so that t->s is a valid float pointer. */
static void take_q8(walker *w, tsr_tensor *t, int rows, int cols, int group)
{
    size_t n = (size_t)rows * (size_t)cols;
    size_t ns = n / (size_t)group;
    *t = (tsr_tensor){ .type = TSR_DT_Q8_0, .rows = rows, .cols = cols,
                       .group = group,
                       .q = (const int8_t *)(w->base + w->off) };
    w->off += n;
    const uint8_t *s = w->base + w->off;
    if (((uintptr_t)s & (sizeof(float) - 1)) == 0) {
        t->s = (const float *)(const void *)s;
    } else {
        float *dst = w->spill + w->n_spill;
        memcpy(dst, s, ns * sizeof(float));
        w->n_spill += ns;
        t->s = dst;
    }
    w->off += 4 * (uint64_t)ns;
}

/* Next matrix in the file's matrix type. */
static void take_mat(walker *w, const tsr_config *c, tsr_tensor *t, int rows, int cols)
{
    if (c->format == TSR_FMT_LLAMA2C_V2) take_q8(w, t, rows, cols, c->group_size);
    else take_f32(w, t, rows, cols);
}

/* Point every tensor of m into the map, in the order of m->cfg.format. */
static void layout(tsr_checkpoint *m, walker *w)
{
    const tsr_config *c = &m->cfg;
    int L = c->n_layers, dim = c->dim, hidden = c->hidden_dim;
    int kv_dim = c->n_kv_heads * (dim / c->n_heads);

    if (c->format == TSR_FMT_LLAMA2C_LEGACY) {
        w->off = TSR_LLAMA2C_LEGACY_HEADER;
        take_f32(w, &m->tok_embedding, c->vocab_size, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->rms_att[l], 1, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->wq[l], dim, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->wk[l], kv_dim, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->wv[l], kv_dim, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->wo[l], dim, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->rms_ffn[l], 1, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->w1[l], hidden, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->w2[l], dim, hidden);
        for (int l = 0; l < L; l++) take_f32(w, &m->w3[l], hidden, dim);
        take_f32(w, &m->rms_final, 1, dim);
        // skip freq_cis_real and freq_cis_imag: RoPE is computed, not read
        w->off += 4 * (uint64_t)c->seq_len * (uint64_t)(dim / c->n_heads);
    } else {
        // v1 and v2 share the order; v2 stores the matrices as Q8_0
        w->off = TSR_LLAMA2C_HEADER;
        for (int l = 0; l < L; l++) take_f32(w, &m->rms_att[l], 1, dim);
        for (int l = 0; l < L; l++) take_f32(w, &m->rms_ffn[l], 1, dim);
        take_f32(w, &m->rms_final, 1, dim);
        take_mat(w, c, &m->tok_embedding, c->vocab_size, dim);
        for (int l = 0; l < L; l++) take_mat(w, c, &m->wq[l], dim, dim);
        for (int l = 0; l < L; l++) take_mat(w, c, &m->wk[l], kv_dim, dim);
        for (int l = 0; l < L; l++) take_mat(w, c, &m->wv[l], kv_dim, dim);
        for (int l = 0; l < L; l++) take_mat(w, c, &m->wo[l], dim, dim);
        for (int l = 0; l < L; l++) take_mat(w, c, &m->w1[l], hidden, dim);
        for (int l = 0; l < L; l++) take_mat(w, c, &m->w2[l], dim, hidden);
        for (int l = 0; l < L; l++) take_mat(w, c, &m->w3[l], hidden, dim);
    }
    if (c->shared_classifier) m->wcls = m->tok_embedding;
    else take_mat(w, c, &m->wcls, c->vocab_size, dim);
}

/* Floats of spill a v2 model may need: all its scales, when some quantized
 * tensor has an element count that is not a multiple of 4 (else none). */
static size_t spill_floats(const tsr_config *c)
{
    if (c->format != TSR_FMT_LLAMA2C_V2) return 0;
    size_t dim = (size_t)c->dim, hidden = (size_t)c->hidden_dim;
    size_t kv_dim = (size_t)c->n_kv_heads * (dim / (size_t)c->n_heads);
    size_t emb = (size_t)c->vocab_size * dim;
    if (emb % 4 == 0 && (dim * dim) % 4 == 0 && (kv_dim * dim) % 4 == 0 &&
        (hidden * dim) % 4 == 0)
        return 0;
    size_t per_layer = 2 * dim * dim + 2 * kv_dim * dim + 3 * hidden * dim;
    size_t n = emb * (c->shared_classifier ? 1 : 2) + (size_t)c->n_layers * per_layer;
    return n / (size_t)c->group_size;
}

/* ------------------------------------------------------------------------ */
/* Open                                                                       */

/* Point a new checkpoint's tensors into base (len bytes, already checked
 * against cfg); owns_map: tsr_checkpoint_close unmaps base. */
static int build_views(const char *name, const tsr_config *cfg, const uint8_t *base,
                       size_t len, int owns_map, tsr_checkpoint **out, tsr_err *e)
{
    // the model, its per-layer tensor arrays and any spill, in one block
    tsr_checkpoint *m = calloc(1, sizeof *m);
    size_t L = (size_t)cfg->n_layers, n_spill = spill_floats(cfg);
    size_t n_owned = 9 * L * sizeof(tsr_tensor) + n_spill * sizeof(float);
    void *owned = m ? malloc(n_owned) : NULL;
    if (!owned) {
        free(m);
        return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory for %zu bytes of tensor views",
                          name, n_owned);
    }
    m->cfg = *cfg;
    m->map = owns_map ? (void *)base : NULL;
    m->map_len = len;
    m->owned = owned;
    snprintf(m->path, sizeof m->path, "%s", name);
    tsr_tensor *t = owned;   // (9, n_layers) per-layer tensor views
    m->rms_att = t + 0 * L;  m->wq = t + 1 * L;  m->wk = t + 2 * L;
    m->wv = t + 3 * L;       m->wo = t + 4 * L;  m->rms_ffn = t + 5 * L;
    m->w1 = t + 6 * L;       m->w2 = t + 7 * L;  m->w3 = t + 8 * L;

    walker w = { .base = base, .spill = (float *)(void *)(t + 9 * L) };
    layout(m, &w);
    // the size check and the walk must agree; a difference is a bug here
    if (w.off != len || w.n_spill > n_spill) {
        m->map = NULL;
        tsr_checkpoint_close(m);
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: internal: layout walked %llu bytes of %llu",
                          name, (unsigned long long)w.off, (unsigned long long)len);
    }
    tsr_checkpoint_scan_kinds(m);
    *out = m;
    return TSR_OK;
}

/* Check cfg's implied size against len bytes. */
static int check_size(const char *name, const tsr_config *cfg, uint64_t len, tsr_err *e)
{
    uint64_t implied;
    if (tsr_llama2c_size(cfg, &implied) != TSR_OK)
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: header implies a size beyond 64 bits", name);
    if (implied != len)
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: %s: header implies %llu bytes, file has %llu",
                          name, implied > len ? "truncated" : "size mismatch",
                          (unsigned long long)implied, (unsigned long long)len);
    return TSR_OK;
}

int tsr_checkpoint_open_memory(const void *data, size_t len, const char *name,
                               tsr_checkpoint **out, tsr_err *e)
{
    if (!out) return tsr_seterr(e, TSR_ERR_ARG, "tsr_checkpoint_open_memory: out is NULL");
    *out = NULL;
    if (!name) name = "(memory)";
    if (!data) return tsr_seterr(e, TSR_ERR_ARG, "%s: data is NULL", name);
    if (len < 4)
        return tsr_seterr(e, TSR_ERR_FORMAT,
            "%s: truncated: %zu bytes, shorter than any llama2.c header", name, len);
    if (!memcmp(data, "GGUF", 4)) return tsr_gguf_open_memory(data, len, name, out, e);
    size_t want = len < TSR_LLAMA2C_HEADER ? len : TSR_LLAMA2C_HEADER;
    tsr_config cfg;
    int rc = parse_header(name, data, want, len, &cfg, e);
    if (rc == TSR_OK) rc = check_size(name, &cfg, len, e);
    if (rc == TSR_OK) rc = build_views(name, &cfg, data, len, 0, out, e);
    return rc;
}

/* Map file_len bytes of fd read-only into *map; takes fd (the mapping keeps
 * the file).  Errors: TSR_ERR_NOMEM (larger than the address space),
 * TSR_ERR_IO. */
static int map_file(const char *path, int fd, uint64_t file_len, void **map, tsr_err *e)
{
    *map = NULL;
    if (file_len > SIZE_MAX) {
        close(fd);
        return tsr_seterr(e, TSR_ERR_NOMEM, "%s: %llu bytes do not fit the address space",
                          path, (unsigned long long)file_len);
    }
    void *m = mmap(NULL, (size_t)file_len, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_err = errno;
    close(fd);
    if (m == MAP_FAILED)
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot mmap %llu bytes: %s", path,
                          (unsigned long long)file_len, strerror(map_err));
    *map = m;
    return TSR_OK;
}

/* A GGUF file: map it whole and let format_gguf.c point the tensors into
 * the map, which the checkpoint then owns.  Takes fd. */
static int open_gguf(const char *path, int fd, uint64_t file_len, tsr_checkpoint **out,
                     tsr_err *e)
{
    void *map;
    int rc = map_file(path, fd, file_len, &map, e);
    if (rc != TSR_OK) return rc;
    rc = tsr_gguf_open_memory(map, (size_t)file_len, path, out, e);
    if (rc != TSR_OK) {
        munmap(map, (size_t)file_len);
        return rc;
    }
    (*out)->map = map;
    (*out)->map_len = (size_t)file_len;
    return TSR_OK;
}

int tsr_checkpoint_open(const char *path, tsr_checkpoint **out, tsr_err *e)
{
    if (!out) return tsr_seterr(e, TSR_ERR_ARG, "tsr_checkpoint_open: out is NULL");
    *out = NULL;
    if (!path) return tsr_seterr(e, TSR_ERR_ARG, "tsr_checkpoint_open: path is NULL");
    // stat before open: opening a FIFO for reading blocks until a writer
    // comes, so anything but a regular file is refused without opening it.
    struct stat st;
    if (stat(path, &st) != 0)
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return tsr_seterr(e, TSR_ERR_IO, "%s: is not a regular file%s", path,
                          tsr_file_kind(st.st_mode));
    // O_NONBLOCK: should the path become a FIFO after stat, open still returns
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot stat: %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {   // no errno here: a stale one would mislead
        close(fd);
        return tsr_seterr(e, TSR_ERR_IO, "%s: is not a regular file%s", path,
                          tsr_file_kind(st.st_mode));
    }
    uint64_t file_len = (uint64_t)st.st_size;

    // header: read with pread, so nothing is mapped until it checks out
    uint8_t hdr[TSR_LLAMA2C_HEADER];
    size_t want = file_len < sizeof hdr ? (size_t)file_len : sizeof hdr;
    ssize_t got = pread(fd, hdr, want, 0);
    if (got < 0 || (size_t)got != want) {
        int err = got < 0 ? errno : EIO;
        close(fd);
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot read header: %s", path, strerror(err));
    }
    if (want < 4) {
        close(fd);
        return tsr_seterr(e, TSR_ERR_FORMAT,
            "%s: truncated: %llu bytes, shorter than any llama2.c header",
            path, (unsigned long long)file_len);
    }
    if (!memcmp(hdr, "GGUF", 4)) return open_gguf(path, fd, file_len, out, e);
    tsr_config cfg;
    int rc = parse_header(path, hdr, want, file_len, &cfg, e);
    if (rc != TSR_OK) { close(fd); return rc; }

    rc = check_size(path, &cfg, file_len, e);
    if (rc != TSR_OK) { close(fd); return rc; }
    void *map;
    rc = map_file(path, fd, file_len, &map, e);
    if (rc != TSR_OK) return rc;
    rc = build_views(path, &cfg, map, (size_t)file_len, 1, out, e);
    if (rc != TSR_OK) munmap(map, (size_t)file_len);
    return rc;
}
