/*
 * synth.c - synthetic checkpoints: shape presets and writers of
 * deterministic pseudo-random weights: llama2.c (version 1 fp32, version 2
 * Q8_0, legacy) and GGUF of the llama and qwen2 architectures (F32, Q8_0,
 * Q4_0) with a real vocabulary copied from a vocab-only GGUF.
 *
 * For tests and capacity planning without a trained model of the shape.
 * The writer streams: weights are generated chunk by chunk into a small
 * buffer and written with buffered stdio, so a 110M-parameter file never
 * sits in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "tsr_half.h"

/* ------------------------------------------------------------------------ */
/* Shapes                                                                     */

typedef struct preset {
    const char *name;
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
} preset;

/* The llama2.c "tinystories" models (README table; stories260K from its
 * checkpoint header). */
static const preset presets[] = {
    { "stories260K",  64,  172,  5,  8,  4,   512,  512 },
    { "stories15M",  288,  768,  6,  6,  6, 32000,  256 },
    { "stories42M",  512, 1376,  8,  8,  8, 32000, 1024 },
    { "stories110M", 768, 2048, 12, 12, 12, 32000, 1024 },
};

/* Shapes of real small models of the llama and qwen2 architectures, from
 * their published config.json (hidden_size, num_hidden_layers,
 * num_attention_heads, num_key_value_heads, intermediate_size,
 * max_position_embeddings, rope_theta, rms_norm_eps, rope_scaling,
 * tie_word_embeddings: every one of these ties), and a tiny one of each
 * for fast tests.  The vocabulary is the model's own size here (plan);
 * a GGUF synth takes the vocabulary file's. */
typedef struct arch_preset {
    const char *name;
    tsr_arch arch;
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    float theta, eps;
    int llama3_rope;   /* Llama 3 RoPE scaling: factor 32, low 1, high 4, 8192 */
} arch_preset;

static const arch_preset arch_presets[] = {
    { "smollm2-135m", TSR_ARCH_LLAMA,  576, 1536, 30,  9, 3,  49152,   8192, 1e5f, 1e-5f, 0 },
    { "qwen2.5-0.5b", TSR_ARCH_QWEN2,  896, 4864, 24, 14, 2, 151936,  32768, 1e6f, 1e-6f, 0 },
    { "llama3.2-1b",  TSR_ARCH_LLAMA, 2048, 8192, 16, 32, 8, 128256, 131072, 5e5f, 1e-5f, 1 },
    { "llama3-tiny",  TSR_ARCH_LLAMA,  128,  384,  2,  4, 2,  32000,    512, 5e5f, 1e-5f, 1 },
    { "qwen2-tiny",   TSR_ARCH_QWEN2,  128,  320,  2,  4, 2,  32000,    512, 1e6f, 1e-6f, 0 },
};

static void arch_fill(const arch_preset *p, tsr_config *c)
{
    c->arch = p->arch;
    c->dim = p->dim; c->hidden_dim = p->hidden_dim; c->n_layers = p->n_layers;
    c->n_heads = p->n_heads; c->n_kv_heads = p->n_kv_heads;
    c->vocab_size = p->vocab_size; c->seq_len = p->seq_len;
    c->rope_theta = p->theta;
    c->norm_eps = p->eps;
    c->qkv_bias = c->rope_neox = p->arch == TSR_ARCH_QWEN2;
    if (p->llama3_rope) {
        c->rope_scaled = 1;
        c->rope_factor = 32.0f;
        c->rope_low = 1.0f;
        c->rope_high = 4.0f;
        c->rope_orig_ctx = 8192;
    }
}

/* llama2.c model.py's FFN width: 2/3 of 4*dim, rounded up to a multiple of
 * multiple_of (32). */
static int default_hidden(int dim)
{
    long long h = 4LL * dim;
    h = 2 * h / 3;
    return (int)(32 * ((h + 31) / 32));
}

/* Parse a decimal int at *s (advancing it).  Returns 0 on success. */
static int parse_int(const char **s, int *v)
{
    char *end;
    errno = 0;
    long x = strtol(*s, &end, 10);
    if (end == *s || errno == ERANGE || x < INT_MIN || x > INT_MAX) return -1;
    *v = (int)x;
    *s = end;
    return 0;
}

/* The base of a shape spec (its first base_len bytes): a preset's name
 * (any case) into c; 0 when none is named. */
static int shape_preset(const char *spec, size_t base_len, tsr_config *c)
{
    int found = 0;
    for (size_t i = 0; i < sizeof arch_presets / sizeof arch_presets[0]; i++) {
        const arch_preset *p = &arch_presets[i];
        if (strlen(p->name) == base_len && strncasecmp(spec, p->name, base_len) == 0) {
            arch_fill(p, c);
            found = 1;
        }
    }
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const preset *p = &presets[i];
        if (strlen(p->name) == base_len && strncasecmp(spec, p->name, base_len) == 0) {
            c->dim = p->dim; c->hidden_dim = p->hidden_dim; c->n_layers = p->n_layers;
            c->n_heads = p->n_heads; c->n_kv_heads = p->n_kv_heads;
            c->vocab_size = p->vocab_size; c->seq_len = p->seq_len;
            found = 1;
        }
    }
    return found;
}

/* The options after the colon (s: key=value, comma separated) into c;
 * given: bit 0 hidden, 1 heads, 2 kv named. */
static int shape_options(const char *spec, const char *s, tsr_config *c, unsigned *given,
                         tsr_err *e)
{
    while (s && *s) {
        static const char *const keys[] = { "hidden", "heads", "kv", "vocab", "seq", "shared" };
        int *const dst[] = { &c->hidden_dim, &c->n_heads, &c->n_kv_heads, &c->vocab_size,
                             &c->seq_len, &c->shared_classifier };
        int k = -1;
        for (int i = 0; i < 6; i++) {
            size_t n = strlen(keys[i]);
            if (strncmp(s, keys[i], n) == 0 && s[n] == '=') { k = i; s += n + 1; break; }
        }
        if (k < 0 || parse_int(&s, dst[k]) || (*s != ',' && *s != '\0'))
            return tsr_seterr(e, TSR_ERR_ARG,
                "%s: bad option near '%s' (keys: hidden, heads, kv, vocab, seq, shared)",
                spec, s);
        if (k <= 2) *given |= 1u << k;
        if (*s == ',') s++;
    }
    if (c->shared_classifier != 0 && c->shared_classifier != 1)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: shared must be 0 or 1", spec);
    return TSR_OK;
}

int tsr_synth_shape(const char *spec, tsr_config *cfg, tsr_err *e)
{
    tsr_config c;
    memset(&c, 0, sizeof c);
    c.rope_theta = 10000.0f;
    c.norm_eps = 1e-5f;
    c.format = TSR_FMT_LLAMA2C_V1;
    c.shared_classifier = 1;
    if (!spec || !*spec) return tsr_seterr(e, TSR_ERR_ARG, "synth shape: empty spec");

    // base: a preset name, or DIMxLAYERS
    const char *colon = strchr(spec, ':');
    size_t base_len = colon ? (size_t)(colon - spec) : strlen(spec);
    int found = shape_preset(spec, base_len, &c);
    unsigned given = found ? 7u : 0u;   /* hidden, heads, kv */
    if (!found) {
        const char *s = spec;
        int ok = parse_int(&s, &c.dim) == 0 && (*s == 'x' || *s == 'X');
        if (ok) s++;
        ok = ok && parse_int(&s, &c.n_layers) == 0 && s == spec + base_len;
        if (!ok)
            return tsr_seterr(e, TSR_ERR_ARG,
                "%s: unknown shape (want stories260K|stories15M|stories42M|stories110M|"
                "smollm2-135m|qwen2.5-0.5b|llama3.2-1b|llama3-tiny|qwen2-tiny "
                "or DIMxLAYERS[:hidden=H,heads=N,kv=K,vocab=V,seq=S,shared=0|1])", spec);
        c.vocab_size = 32000;
        c.seq_len = 1024;
    }

    // options: key=value, comma separated
    int rc = shape_options(spec, colon ? colon + 1 : NULL, &c, &given, e);
    if (rc != TSR_OK) return rc;

    // defaults that depend on dim
    if (!(given & 1u) && c.dim > 0 && c.dim <= TSR_CKPT_MAX_DIM) c.hidden_dim = default_hidden(c.dim);
    if (!(given & 2u)) c.n_heads = c.dim / 64 > 0 ? c.dim / 64 : 1;
    if (!(given & 4u)) c.n_kv_heads = c.n_heads;

    rc = tsr_config_check(&c, spec, TSR_ERR_ARG, e);
    if (rc != TSR_OK) return rc;
    *cfg = c;
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Random numbers: xorshift64* plus Box-Muller                                */

typedef struct rng {
    uint64_t s;        // xorshift state, never 0
    int      has_spare;
    double   spare;    // second normal of the last Box-Muller pair
} rng;

/* splitmix64: spreads (seed, tensor id) into an independent stream start. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static void rng_init(rng *r, uint64_t seed, uint64_t stream)
{
    r->s = splitmix64(seed ^ splitmix64(stream));
    if (r->s == 0) r->s = 0x2545F4914F6CDD1DULL;
    r->has_spare = 0;
}

/* xorshift64* (Vigna): 64 random bits. */
static uint64_t rng_u64(rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}

/* Uniform in (0, 1): 53 bits, offset by half a step so log() never sees 0. */
static double rng_uniform(rng *r)
{
    return ((double)(rng_u64(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal (Box-Muller, both values of each pair used). */
static double rng_normal(rng *r)
{
    if (r->has_spare) { r->has_spare = 0; return r->spare; }
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    r->spare = rad * sin(th);
    r->has_spare = 1;
    return rad * cos(th);
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                     */

#define SYNTH_STD   0.02    /* matrices: small enough to keep activations finite */
#define SYNTH_CHUNK 65536   /* floats generated per chunk                          */

typedef struct writer {
    FILE       *f;
    const tsr_config *c;
    uint64_t    seed;
    float      *buf;      // (chunk,) generated weights
    int8_t     *qbuf;     // (chunk,) quantized weights (v2)
    float      *sbuf;     // (chunk / group,) scales (v2)
    size_t      chunk;    // floats per chunk; a multiple of group in v2
    uint64_t    written;  // bytes
    int         failed;   // a write failed
    int         err;      // errno of the failed write
} writer;

/* Appends n bytes; after a failed write nothing more is written, and the
 * generating loops stop (a full disk must not cost the rest of the
 * model's random numbers). */
static void put(writer *w, const void *p, size_t n)
{
    if (w->failed) return;
    if (fwrite(p, 1, n, w->f) != n) { w->failed = 1; w->err = errno ? errno : EIO; }
    w->written += n;
}

/* n norm weights, all 1 (the llama initialisation). */
static void put_ones(writer *w, size_t n)
{
    for (size_t i = 0; i < w->chunk; i++) w->buf[i] = 1.0f;
    for (size_t done = 0; done < n && !w->failed; ) {
        size_t k = n - done < w->chunk ? n - done : w->chunk;
        put(w, w->buf, k * sizeof(float));
        done += k;
    }
}

/* Next k weights of stream r into w->buf. */
static void gen(writer *w, rng *r, size_t k)
{
    for (size_t i = 0; i < k; i++) w->buf[i] = (float)(SYNTH_STD * rng_normal(r));
}

/* Quantize w->buf[0..k) (k a multiple of group) in flat groups, as
 * llama2.c's exporter does: scale = max|w| / 127, q = round(w / scale). */
static void quantize(writer *w, size_t k, size_t group)
{
    for (size_t g = 0; g < k / group; g++) {
        const float *x = w->buf + g * group;   // (group,)
        float amax = 0.0f;
        for (size_t j = 0; j < group; j++) amax = fmaxf(amax, fabsf(x[j]));
        float scale = amax / 127.0f;
        for (size_t j = 0; j < group; j++)
            w->qbuf[g * group + j] = scale != 0.0f ? (int8_t)roundf(x[j] / scale) : 0;
        w->sbuf[g] = scale;
    }
}

/* One matrix of n elements from stream id: fp32 (v1), or Q8_0 int8 values
 * then scales (v2; the stream is replayed for the scales so that nothing
 * tensor-sized is buffered). */
static void put_matrix(writer *w, uint64_t id, size_t n)
{
    rng r;
    if (w->c->format != TSR_FMT_LLAMA2C_V2) {
        rng_init(&r, w->seed, id);
        for (size_t done = 0; done < n && !w->failed; ) {
            size_t k = n - done < w->chunk ? n - done : w->chunk;
            gen(w, &r, k);
            put(w, w->buf, k * sizeof(float));
            done += k;
        }
        return;
    }
    size_t group = (size_t)w->c->group_size;
    for (int pass = 0; pass < 2; pass++) {     // 0: int8 values, 1: scales
        rng_init(&r, w->seed, id);
        for (size_t done = 0; done < n && !w->failed; ) {
            size_t k = n - done < w->chunk ? n - done : w->chunk;
            gen(w, &r, k);
            quantize(w, k, group);
            if (pass == 0) put(w, w->qbuf, k);
            else put(w, w->sbuf, k / group * sizeof(float));
            done += k;
        }
    }
}

/* RoPE's table as llama2.c's legacy export wrote it (precompute_freqs_cis):
 * cos (re 1) or sin (re 0) of t * theta^(-2j / head_size), (seq_len,
 * head_size / 2).  Nothing reads it back (run.c skips it). */
static void put_freq_cis(writer *w, int re)
{
    const tsr_config *c = w->c;
    int hs = c->dim / c->n_heads, half = hs / 2;
    size_t k = 0;
    for (int t = 0; t < c->seq_len; t++)
        for (int j = 0; j < half; j++) {
            double f = pow(c->rope_theta > 0 ? c->rope_theta : 10000.0, -2.0 * j / hs);
            w->buf[k++] = (float)(re ? cos(t * f) : sin(t * f));
            if (k == w->chunk) {
                put(w, w->buf, k * sizeof(float));
                k = 0;
            }
        }
    if (k) put(w, w->buf, k * sizeof(float));
}

/* Create "PATH.tmp.PID.N" exclusively (N counts up, so that threads and
 * processes writing the same path never share a file); name gets it
 * (strlen(path) + 48 bytes).  Returns the descriptor, or -1 with errno. */
static int open_temp(const char *path, char *name)
{
    static unsigned counter;   /* atomic */
    for (int tries = 0; tries < 100; tries++) {
        unsigned n = __atomic_fetch_add(&counter, 1u, __ATOMIC_RELAXED);
        sprintf(name, "%s.tmp.%ld.%u", path, (long)getpid(), n);
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

/* The llama2.c config of cfg for group_size (0 v1, > 0 v2 at that group,
 * TSR_SYNTH_LEGACY legacy) into c, checked, and the file's size. */
static int l2c_config(const char *path, const tsr_config *cfg, int group_size, tsr_config *c,
                      uint64_t *implied, tsr_err *e)
{
    if (group_size < TSR_SYNTH_LEGACY)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: group size %d < 0", path, group_size);
    *c = *cfg;
    c->format = group_size > 0 ? TSR_FMT_LLAMA2C_V2
              : group_size == TSR_SYNTH_LEGACY ? TSR_FMT_LLAMA2C_LEGACY : TSR_FMT_LLAMA2C_V1;
    c->group_size = group_size > 0 ? group_size : 0;
    c->shared_classifier = cfg->shared_classifier ? 1 : 0;
    int rc = tsr_config_check(c, path, TSR_ERR_ARG, e);
    if (rc != TSR_OK) return rc;
    if (c->arch != TSR_ARCH_LLAMA || c->qkv_bias || c->rope_scaled || c->rope_theta != 10000.0f ||
        c->norm_eps != 1e-5f)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: a llama2.c file cannot hold this shape's RoPE "
                          "base, scaling, epsilon or biases (write it as GGUF: --arch)", path);
    if (tsr_llama2c_size(c, implied) != TSR_OK)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: file size beyond 64 bits", path);
    return TSR_OK;
}

/* The writer's buffers (qbuf of qbytes, sbuf of sfloats; 0: none) and
 * the stdio buffer *iobuf (SYNTH_IOBUF bytes).  -1: no memory, nothing
 * held. */
#define SYNTH_IOBUF ((size_t)1 << 20)
static void writer_free(writer *w, char *iobuf)
{
    free(iobuf); free(w->buf); free(w->qbuf); free(w->sbuf);
}
static int writer_alloc(writer *w, size_t qbytes, size_t sfloats, char **iobuf)
{
    *iobuf = malloc(SYNTH_IOBUF);
    w->buf = malloc(w->chunk * sizeof(float));
    w->qbuf = malloc(qbytes);
    w->sbuf = sfloats ? malloc(sfloats * sizeof(float)) : NULL;
    if (*iobuf && w->buf && w->qbuf && (w->sbuf || !sfloats)) return 0;
    writer_free(w, *iobuf);
    return -1;
}

/* A regular file is written under a temporary name and renamed when
 * complete, so that an interrupted write never leaves a partial
 * checkpoint under the final name; a device, a pipe or a symbolic link
 * named by path is written directly (through the link: a rename would
 * replace the link itself, /dev/stdout's included).  w->f gets the file
 * (NULL: errno says why), *tmp the temporary name (NULL: direct). */
static void l2c_open(const char *path, writer *w, char **tmp)
{
    struct stat sb;
    *tmp = NULL;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        w->f = fopen(path, "wb");
        return;
    }
    w->f = NULL;
    errno = ENOMEM;
    *tmp = malloc(strlen(path) + 48);
    if (!*tmp) return;
    int fd = open_temp(path, *tmp);
    if (fd >= 0 && !(w->f = fdopen(fd, "wb"))) {
        int err = errno;
        close(fd);
        unlink(*tmp);
        errno = err;
    }
}

/* llama2.c's legacy layout: 7 int32 (vocab negative: a classifier of its
 * own), then tok_embeddings, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2,
 * w3, rms_final, freq_cis re and im, [wcls]: the same stream ids. */
static void l2c_put_legacy(writer *w, const tsr_config *c, const size_t *numel)
{
    size_t L = (size_t)c->n_layers, dim = (size_t)c->dim, vocab = (size_t)c->vocab_size;
    int32_t head[7] = { c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                        c->shared_classifier ? c->vocab_size : -c->vocab_size, c->seq_len };
    put(w, head, sizeof head);
    put_matrix(w, 0, vocab * dim);
    put_ones(w, L * dim);
    for (size_t t = 0; t < 4; t++)        // wq, wk, wv, wo
        for (size_t l = 0; l < L; l++) put_matrix(w, 1 + t * L + l, numel[t]);
    put_ones(w, L * dim);
    static const size_t ffn[3] = { 4, 5, 6 };   // w1, w2, w3
    for (size_t k = 0; k < 3; k++)
        for (size_t l = 0; l < L; l++) put_matrix(w, 1 + ffn[k] * L + l, numel[ffn[k]]);
    put_ones(w, dim);
    put_freq_cis(w, 1);
    put_freq_cis(w, 0);
    if (!c->shared_classifier) put_matrix(w, 1 + 7 * L, vocab * dim);
}

/* Version 1 (fp32) or 2 (Q8_0): the header (magic, version, 7 params,
 * shared byte, [group], zeros to 256), the fp32 norms, then the matrices;
 * stream ids: tok_embedding 0, wq[l] 1+l, wk 1+L+l, wv 1+2L+l, wo 1+3L+l,
 * w1 1+4L+l, w2 1+5L+l, w3 1+6L+l, wcls 1+7L. */
static void l2c_put_v12(writer *w, const tsr_config *c, const size_t *numel)
{
    size_t L = (size_t)c->n_layers, dim = (size_t)c->dim, vocab = (size_t)c->vocab_size;
    uint8_t hdr[TSR_LLAMA2C_HEADER] = { 0 };
    uint32_t magic = TSR_LLAMA2C_MAGIC;
    int32_t head[9] = { c->format == TSR_FMT_LLAMA2C_V2 ? 2 : 1, c->dim, c->hidden_dim,
                        c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size, c->seq_len, 0 };
    memcpy(hdr, &magic, 4);
    memcpy(hdr + 4, head, 8 * sizeof(int32_t));
    hdr[36] = (uint8_t)c->shared_classifier;
    if (c->group_size > 0) memcpy(hdr + 37, &c->group_size, 4);
    put(w, hdr, sizeof hdr);
    put_ones(w, 2 * L * dim + dim);      // rms_att, rms_ffn, rms_final
    put_matrix(w, 0, vocab * dim);
    for (size_t t = 0; t < 7; t++)        // wq, wk, wv, wo, w1, w2, w3
        for (size_t l = 0; l < L; l++) put_matrix(w, 1 + t * L + l, numel[t]);
    if (!c->shared_classifier) put_matrix(w, 1 + 7 * L, vocab * dim);
}

/* Close w->f and put the file in place (rename tmp, when not direct);
 * on failure the temporary file is removed.  Frees tmp. */
static int l2c_finish(const char *path, writer *w, char *tmp, uint64_t implied, tsr_err *e)
{
    int failed = w->failed, err = w->err;
    if (fclose(w->f) != 0 && !failed) { failed = 1; err = errno; }
    if (!failed && w->written != implied) {   // the writer and tsr_llama2c_size disagree: a bug
        if (tmp) unlink(tmp);
        free(tmp);
        return tsr_seterr(e, TSR_ERR_IO, "%s: internal: wrote %llu bytes, layout says %llu",
                          path, (unsigned long long)w->written, (unsigned long long)implied);
    }
    if (!failed && tmp && rename(tmp, path) != 0) { failed = 1; err = errno; }
    if (tmp && failed) unlink(tmp);
    free(tmp);
    if (failed) return tsr_seterr(e, TSR_ERR_IO, "%s: write failed: %s", path, strerror(err));
    return TSR_OK;
}

int tsr_synth_write(const char *path, const tsr_config *cfg, int group_size,
                    uint64_t seed, tsr_err *e)
{
    tsr_config c;
    uint64_t implied;
    int rc = l2c_config(path, cfg, group_size, &c, &implied, e);
    if (rc != TSR_OK) return rc;
    group_size = c.group_size;

    writer w = { .c = &c, .seed = seed };
    w.chunk = SYNTH_CHUNK;
    if (group_size > 0)
        w.chunk = (size_t)group_size * (SYNTH_CHUNK / (size_t)group_size > 0
                                        ? SYNTH_CHUNK / (size_t)group_size : 1);
    char *iobuf, *tmp;
    if (writer_alloc(&w, w.chunk, group_size > 0 ? w.chunk / (size_t)group_size : 1, &iobuf))
        return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory for write buffers", path);
    l2c_open(path, &w, &tmp);
    if (!w.f) {
        int err = errno;
        free(tmp);
        writer_free(&w, iobuf);
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot create: %s", path, strerror(err));
    }
    setvbuf(w.f, iobuf, _IOFBF, SYNTH_IOBUF);

    size_t dim = (size_t)c.dim, hidden = (size_t)c.hidden_dim;
    size_t kv_dim = (size_t)c.n_kv_heads * (dim / (size_t)c.n_heads);
    const size_t numel[7] = { dim * dim, kv_dim * dim, kv_dim * dim, dim * dim,
                              hidden * dim, dim * hidden, hidden * dim };
    if (c.format == TSR_FMT_LLAMA2C_LEGACY) l2c_put_legacy(&w, &c, numel);
    else l2c_put_v12(&w, &c, numel);
    rc = l2c_finish(path, &w, tmp, implied, e);
    writer_free(&w, iobuf);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* GGUF writer (tessera synth --arch)                                         */

/* GGUF value types and ggml tensor types (ggml docs/gguf.md). */
enum { GV_U32 = 4, GV_F32 = 6, GV_STRING = 8 };
enum { GG_F32 = 0, GG_Q4_0 = 2, GG_Q8_0 = 8 };
#define GG_ALIGN 32u   /* general.alignment's default */
#define GG_QK    32u   /* elements of a Q8_0 / Q4_0 block */

/* A growable byte buffer for the header part (metadata, tensor infos). */
typedef struct hbuf { uint8_t *p; size_t n, cap; int oom; } hbuf;

static void hb_put(hbuf *b, const void *d, size_t n)
{
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void hb_u32(hbuf *b, uint32_t v) { hb_put(b, &v, 4); }
static void hb_u64(hbuf *b, uint64_t v) { hb_put(b, &v, 8); }
static void hb_str(hbuf *b, const char *s) { hb_u64(b, strlen(s)); hb_put(b, s, strlen(s)); }
static void kv_u32(hbuf *b, const char *k, uint32_t v) { hb_str(b, k); hb_u32(b, GV_U32); hb_u32(b, v); }
static void kv_f32(hbuf *b, const char *k, float v)
{
    hb_str(b, k);
    hb_u32(b, GV_F32);
    hb_put(b, &v, 4);
}
static void kv_s(hbuf *b, const char *k, const char *v) { hb_str(b, k); hb_u32(b, GV_STRING); hb_str(b, v); }

/* One tensor of the file: what it holds and where. */
typedef struct gten {
    char     name[48];
    uint64_t rows, cols;   /* ne[1], ne[0]                                 */
    int      kind;         /* 0 matrix (random), 1 norm (ones), 2 bias
                              (random), 3 rope_freqs (the Llama 3 factors) */
    uint64_t id;           /* its random stream                            */
    uint32_t type;         /* GG_*                                         */
    uint64_t off, bytes;   /* in the data section                          */
} gten;

static uint64_t gg_bytes(uint32_t type, uint64_t n)
{
    return type == GG_Q8_0 ? n / GG_QK * 34u : type == GG_Q4_0 ? n / GG_QK * 18u : 4u * n;
}

/* Blocks of 32 of x (n a multiple of 32) as ggml's reference quantizers
 * make them (ggml-quants.c quantize_row_q8_0_ref / q4_0_ref): Q8_0 d =
 * max |x| / 127 as a half, q = roundf(x / d); Q4_0 d = the value of
 * largest magnitude / -8, q = min(15, (int8)(x / d + 8.5)), element j in
 * the low nibble of byte j and j + 16 in the high one. */
static size_t gg_quantize(uint32_t type, const float *x, size_t n, uint8_t *out)
{
    uint8_t *o = out;
    for (size_t b = 0; b < n / GG_QK; b++, x += GG_QK) {
        float amax = 0.0f, mx = 0.0f;
        for (uint32_t j = 0; j < GG_QK; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); mx = x[j]; }
        float d = type == GG_Q8_0 ? amax / 127.0f : mx / -8.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t h = tsr_f16_from_f32(d);
        memcpy(o, &h, 2);
        o += 2;
        if (type == GG_Q8_0) {
            for (uint32_t j = 0; j < GG_QK; j++) o[j] = (uint8_t)(int8_t)roundf(x[j] * id);
            o += GG_QK;
        } else {
            for (uint32_t j = 0; j < GG_QK / 2; j++) {
                int a = (int8_t)(x[j] * id + 8.5f), c = (int8_t)(x[j + GG_QK / 2] * id + 8.5f);
                a = a < 15 ? a : 15;
                c = c < 15 ? c : 15;
                o[j] = (uint8_t)(a | (c << 4));
            }
            o += GG_QK / 2;
        }
    }
    return (size_t)(o - out);
}

/* The tensors of cfg's model, in the order llama.cpp's converter writes
 * a Hugging Face checkpoint (names: gguf-py constants.py TENSOR_NAMES),
 * into t (room for 4 + 12 n_layers); returns the count.  Matrices get
 * type wt; norms, biases and rope_freqs F32. */
static int gg_tensors(const tsr_config *c, uint32_t wt, gten *t)
{
    uint64_t L = (uint64_t)c->n_layers, D = (uint64_t)c->dim, H = (uint64_t)c->hidden_dim;
    uint64_t KV = (uint64_t)c->n_kv_heads * (D / (uint64_t)c->n_heads);
    int n = 0;
#define GT(nm_fmt, lay, r, co, k, i, ty)                                                          \
    do {                                                                                         \
        snprintf(t[n].name, sizeof t[n].name, nm_fmt, lay);                                      \
        t[n].rows = (r); t[n].cols = (co); t[n].kind = (k); t[n].id = (i); t[n].type = (ty);     \
        n++;                                                                                     \
    } while (0)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-extra-args"
    GT("token_embd.weight", 0, (uint64_t)c->vocab_size, D, 0, 0, wt);
    for (uint64_t l = 0; l < L; l++) {
        int li = (int)l;
        GT("blk.%d.attn_norm.weight", li, 1, D, 1, 0, GG_F32);
        GT("blk.%d.attn_q.weight", li, D, D, 0, 1 + 0 * L + l, wt);
        GT("blk.%d.attn_k.weight", li, KV, D, 0, 1 + 1 * L + l, wt);
        GT("blk.%d.attn_v.weight", li, KV, D, 0, 1 + 2 * L + l, wt);
        if (c->qkv_bias) {
            GT("blk.%d.attn_q.bias", li, 1, D, 2, 1 + 8 * L + l, GG_F32);
            GT("blk.%d.attn_k.bias", li, 1, KV, 2, 1 + 9 * L + l, GG_F32);
            GT("blk.%d.attn_v.bias", li, 1, KV, 2, 1 + 10 * L + l, GG_F32);
        }
        GT("blk.%d.attn_output.weight", li, D, D, 0, 1 + 3 * L + l, wt);
        GT("blk.%d.ffn_norm.weight", li, 1, D, 1, 0, GG_F32);
        GT("blk.%d.ffn_gate.weight", li, H, D, 0, 1 + 4 * L + l, wt);
        GT("blk.%d.ffn_down.weight", li, D, H, 0, 1 + 5 * L + l, wt);
        GT("blk.%d.ffn_up.weight", li, H, D, 0, 1 + 6 * L + l, wt);
    }
    GT("output_norm.weight", 0, 1, D, 1, 0, GG_F32);
    if (!c->shared_classifier) GT("output.weight", 0, (uint64_t)c->vocab_size, D, 0, 1 + 7 * L, wt);
    if (c->rope_scaled == 1) GT("rope_freqs.weight", 0, 1, D / (uint64_t)c->n_heads / 2, 3, 0, GG_F32);
#pragma GCC diagnostic pop
#undef GT
    return n;
}

#define SYNTH_BIAS_STD 0.1   /* biases: larger than the weights, so that they matter */

/* Tensor g's data, streamed: chunks of generated values, quantized when
 * its type says so. */
static void gg_put_tensor(writer *w, const gten *g, uint64_t seed, const tsr_config *c)
{
    uint64_t n = g->rows * g->cols;
    if (g->kind == 1) { put_ones(w, (size_t)n); return; }
    if (g->kind == 3) {
        uint32_t hs = (uint32_t)(c->dim / c->n_heads);
        for (uint32_t j = 0; j < hs / 2u; j++)
            w->buf[j] = tsr_rope_llama3_factor(c, pow(c->rope_theta, -2.0 * j / hs));
        put(w, w->buf, hs / 2u * sizeof(float));
        return;
    }
    rng r;
    rng_init(&r, seed, g->id);
    for (uint64_t done = 0; done < n && !w->failed; ) {
        size_t k = n - done < w->chunk ? (size_t)(n - done) : w->chunk;
        if (g->kind == 2)
            for (size_t i = 0; i < k; i++) w->buf[i] = (float)(SYNTH_BIAS_STD * rng_normal(&r));
        else
            gen(w, &r, k);
        if (g->type == GG_F32) put(w, w->buf, k * sizeof(float));
        else put(w, w->qbuf, gg_quantize(g->type, w->buf, k, (uint8_t *)w->qbuf));
        done += k;
    }
}

/* The vocabulary's metadata: every tokenizer.* pair of the vocab-only
 * GGUF at vocab_path, as stored (*meta, malloc'd: the caller frees it),
 * their count and the number of tokens. */
static int gg_read_vocab(const char *vocab_path, uint8_t **meta, size_t *meta_len,
                         uint64_t *n_meta, int *n_tok, tsr_err *e)
{
    FILE *vf = fopen(vocab_path, "rb");
    if (!vf) return tsr_seterr(e, TSR_ERR_IO, "%s: cannot open: %s", vocab_path, strerror(errno));
    uint8_t *vb = NULL;
    long vlen = -1;
    if (fseek(vf, 0, SEEK_END) == 0 && (vlen = ftell(vf)) >= 0 && fseek(vf, 0, SEEK_SET) == 0) {
        vb = malloc(vlen > 0 ? (size_t)vlen : 1u);
        if (vb && fread(vb, 1, (size_t)vlen, vf) != (size_t)vlen) vlen = -1;
    }
    fclose(vf);
    if (!vb || vlen < 0) {
        free(vb);
        return tsr_seterr(e, vb ? TSR_ERR_IO : TSR_ERR_NOMEM, "%s: cannot read", vocab_path);
    }
    *meta = NULL;
    int rc = tsr_gguf_meta_prefix(vb, (size_t)vlen, vocab_path, "tokenizer.", meta, meta_len,
                                  n_meta, n_tok, e);
    free(vb);
    if (rc) return rc;
    if (*n_tok < 1) {
        free(*meta);
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: no tokenizer.ggml.tokens", vocab_path);
    }
    return TSR_OK;
}

/* cfg as a GGUF of n_tok tokens and matrices of type wt, into c, checked
 * (quantized rows need multiples of 32). */
static int gg_config(const char *path, const tsr_config *cfg, int n_tok, uint32_t wt,
                     tsr_config *c, tsr_err *e)
{
    *c = *cfg;
    c->vocab_size = n_tok;
    c->format = TSR_FMT_GGUF;
    c->shared_classifier = cfg->shared_classifier ? 1 : 0;
    int rc = tsr_config_check(c, path, TSR_ERR_ARG, e);
    if (rc) return rc;
    uint64_t D = (uint64_t)c->dim, H = (uint64_t)c->hidden_dim;
    uint64_t KV = (uint64_t)c->n_kv_heads * (D / (uint64_t)c->n_heads);
    if (wt != GG_F32 && (D % GG_QK || H % GG_QK || KV % GG_QK))
        return tsr_seterr(e, TSR_ERR_ARG, "%s: dim %llu, hidden %llu and kv_dim %llu must be "
                          "multiples of 32 for Q8_0 / Q4_0 rows", path, (unsigned long long)D,
                          (unsigned long long)H, (unsigned long long)KV);
    return TSR_OK;
}

/* The header (magic, version, counts), the metadata (the keys llama.cpp's
 * converter writes: gguf-py constants.py Keys, then the vocabulary's
 * meta), the tensor infos ts (nt,), and the padding to the data. */
static void gg_header(hbuf *hb, const tsr_config *c, const tsr_config *cfg, uint32_t wt,
                      const gten *ts, int nt, const uint8_t *meta, size_t meta_len,
                      uint64_t n_meta)
{
    static const uint8_t zeros[GG_ALIGN] = { 0 };
    const char *a = c->arch == TSR_ARCH_QWEN2 ? "qwen2" : "llama";
    char k[96];
    int llama = c->arch == TSR_ARCH_LLAMA;
    uint64_t n_kv = 11u + (llama ? 2u : 0u) + (wt != GG_F32 ? 1u : 0u) + n_meta;
    hb_put(hb, "GGUF", 4);
    hb_u32(hb, 3);
    hb_u64(hb, (uint64_t)nt);
    hb_u64(hb, n_kv);
    kv_s(hb, "general.architecture", a);
    snprintf(k, sizeof k, "tessera synth %s", cfg->rope_scaled == 1 ? "llama3" : a);
    kv_s(hb, "general.name", k);
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", a, suffix), k)
    kv_u32(hb, KEY("block_count"), (uint32_t)c->n_layers);
    kv_u32(hb, KEY("context_length"), (uint32_t)c->seq_len);
    kv_u32(hb, KEY("embedding_length"), (uint32_t)c->dim);
    kv_u32(hb, KEY("feed_forward_length"), (uint32_t)c->hidden_dim);
    kv_u32(hb, KEY("attention.head_count"), (uint32_t)c->n_heads);
    kv_u32(hb, KEY("attention.head_count_kv"), (uint32_t)c->n_kv_heads);
    kv_f32(hb, KEY("rope.freq_base"), c->rope_theta);
    kv_f32(hb, KEY("attention.layer_norm_rms_epsilon"), c->norm_eps);
    kv_u32(hb, "general.file_type", wt == GG_Q8_0 ? 7u : wt == GG_Q4_0 ? 2u : 0u);   /* LlamaFileType */
    if (llama) {
        kv_u32(hb, KEY("vocab_size"), (uint32_t)c->vocab_size);
        kv_u32(hb, KEY("rope.dimension_count"), (uint32_t)(c->dim / c->n_heads));
    }
#undef KEY
    if (wt != GG_F32) kv_u32(hb, "general.quantization_version", 2u);
    hb_put(hb, meta, meta_len);
    for (int i = 0; i < nt; i++) {
        hb_str(hb, ts[i].name);
        hb_u32(hb, ts[i].rows == 1 ? 1u : 2u);
        hb_u64(hb, ts[i].cols);
        if (ts[i].rows != 1) hb_u64(hb, ts[i].rows);
        hb_u32(hb, ts[i].type);
        hb_u64(hb, ts[i].off);
    }
    size_t pad = (GG_ALIGN - hb->n % GG_ALIGN) % GG_ALIGN;
    hb_put(hb, zeros, pad);
}

/* The file at path: the header hb, then each tensor's data padded to
 * GG_ALIGN (data bytes in all), under a temporary name renamed when
 * complete. */
static int gg_write_file(const char *path, const tsr_config *c, uint64_t seed, const hbuf *hb,
                         const gten *ts, int nt, uint64_t data, tsr_err *e)
{
    static const uint8_t zeros[GG_ALIGN] = { 0 };
    writer w = { .c = c, .seed = seed, .chunk = SYNTH_CHUNK };
    char *iobuf;
    if (writer_alloc(&w, w.chunk / GG_QK * 34u, 0, &iobuf))
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot create: %s", path, strerror(ENOMEM));
    char *tmp = malloc(strlen(path) + 48);
    int fd = tmp ? open_temp(path, tmp) : -1;
    if (fd < 0 || !(w.f = fdopen(fd, "wb"))) {
        int err = errno;
        if (fd >= 0) { close(fd); unlink(tmp); }
        free(tmp);
        writer_free(&w, iobuf);
        return tsr_seterr(e, TSR_ERR_IO, "%s: cannot create: %s", path, strerror(err));
    }
    setvbuf(w.f, iobuf, _IOFBF, SYNTH_IOBUF);
    put(&w, hb->p, hb->n);
    for (int i = 0; i < nt && !w.failed; i++) {
        gg_put_tensor(&w, &ts[i], seed, c);
        put(&w, zeros, (size_t)((GG_ALIGN - ts[i].bytes % GG_ALIGN) % GG_ALIGN));
    }
    int failed = w.failed, err = w.err;
    if (fclose(w.f) != 0 && !failed) { failed = 1; err = errno; }
    if (!failed && w.written != hb->n + data) { failed = 1; err = EIO; }   /* a bug */
    if (!failed && rename(tmp, path) != 0) { failed = 1; err = errno; }
    if (failed) unlink(tmp);
    free(tmp);
    writer_free(&w, iobuf);
    if (failed) return tsr_seterr(e, TSR_ERR_IO, "%s: write failed: %s", path, strerror(err));
    return TSR_OK;
}

int tsr_synth_gguf_write(const char *path, const tsr_config *cfg, const char *vocab_path,
                         int wtype, uint64_t seed, tsr_err *e)
{
    if (wtype != TSR_DT_F32 && wtype != TSR_DT_Q8_0 && wtype != TSR_DT_Q4_0)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: GGUF synth writes F32, Q8_0 or Q4_0", path);
    uint32_t wt = wtype == TSR_DT_Q8_0 ? GG_Q8_0 : wtype == TSR_DT_Q4_0 ? GG_Q4_0 : GG_F32;
    uint8_t *meta = NULL;
    size_t meta_len = 0;
    uint64_t n_meta = 0;
    int n_tok = 0;
    int rc = gg_read_vocab(vocab_path, &meta, &meta_len, &n_meta, &n_tok, e);
    if (rc) return rc;
    tsr_config c;
    if ((rc = gg_config(path, cfg, n_tok, wt, &c, e))) { free(meta); return rc; }
    gten *ts = calloc(4u + 12u * (size_t)c.n_layers, sizeof *ts);
    if (!ts) { free(meta); return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", path); }
    int nt = gg_tensors(&c, wt, ts);
    uint64_t off = 0;
    for (int i = 0; i < nt; i++) {
        ts[i].off = off;
        ts[i].bytes = gg_bytes(ts[i].type, ts[i].rows * ts[i].cols);
        off += (ts[i].bytes + GG_ALIGN - 1u) / GG_ALIGN * GG_ALIGN;
    }
    hbuf hb = { 0 };
    gg_header(&hb, &c, cfg, wt, ts, nt, meta, meta_len, n_meta);
    free(meta);
    if (hb.oom) rc = tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", path);
    else rc = gg_write_file(path, &c, seed, &hb, ts, nt, off, e);
    free(hb.p);
    free(ts);
    return rc;
}
