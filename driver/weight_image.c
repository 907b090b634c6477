/*
 * weight_image.c - build the device image of a model (see weight_image.h):
 * quantize (or copy) every matrix row once, scatter its column blocks into
 * the tiles of the PEs of its row block, then cut each PE's arrays into
 * LOAD-sized chunks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* Configuration and needs                                                    */

void tsr_wimage_mesh(int pes, uint32_t *rows, uint32_t *cols)
{
    uint32_t P = pes > 0 ? (uint32_t)pes : 1u, C = 1;
    while (2u * C <= TSR_MAX_MESH_COLS && (2u * C) * (2u * C) <= P && P % (2u * C) == 0) C *= 2u;
    *rows = P / C;
    *cols = C;
}

int tsr_wimage_config(const tsr_checkpoint *m, const tsr_load_opts *o, int pes, tsr_kconfig *kc,
                      tsr_err *e)
{
    const tsr_config *c = &m->cfg;
    int group = o->group_size ? o->group_size : TSR_WIMAGE_DEFAULT_GROUP;
    int seq_len = o->seq_len ? o->seq_len : c->seq_len;
    int n_slots = o->n_slots ? o->n_slots : 1;
    if (group < 1)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: group size %d must be >= 1", m->path, group);
    // GGUF's llama.context_length may understate the trained context (the
    // llama2.c converters write 128 for stories260K, trained with 512), so
    // the caller may raise it; the device logs a warning
    int max_seq = c->format == TSR_FMT_GGUF ? TSR_CKPT_MAX_SEQ : c->seq_len;
    if (seq_len < 1 || seq_len > max_seq)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: seq_len %d outside 1..%d", m->path, seq_len,
                          max_seq);
    if (n_slots < 1)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: %d sequence slots", m->path, n_slots);
    memset(kc, 0, sizeof *kc);
    kc->magic = TSR_KCONFIG_MAGIC;
    kc->dim = (uint32_t)c->dim;
    kc->hidden_dim = (uint32_t)c->hidden_dim;
    kc->n_layers = (uint32_t)c->n_layers;
    kc->n_heads = (uint32_t)c->n_heads;
    kc->n_kv_heads = (uint32_t)c->n_kv_heads;
    kc->vocab_size = (uint32_t)c->vocab_size;
    kc->seq_len = (uint32_t)seq_len;
    kc->n_slots = (uint32_t)n_slots;
    kc->dtype = o->weights_f32 ? TSR_KDT_F32 : TSR_KDT_Q8;
    kc->group = (uint32_t)group;
    tsr_wimage_mesh(pes, &kc->mesh_rows, &kc->mesh_cols);
    kc->shared_classifier = c->shared_classifier ? 1u : 0u;
    kc->rope_theta = c->rope_theta;
    kc->norm_eps = c->norm_eps;
    return TSR_OK;
}

void tsr_wimage_need(const tsr_kconfig *kc, tsr_wneed *need)
{
    memset(need, 0, sizeof *need);
    uint32_t P = tsr_lay_pes(kc);
    for (uint32_t p = 0; p < P; p++) {
        uint64_t b, w, kv = tsr_lay_kv_words(kc, p);
        tsr_lay_pe_weights(kc, p, &b, &w);
        if (b > need->pe_i8_max) need->pe_i8_max = b;
        if (w + kv > need->pe_f32_max) need->pe_f32_max = w + kv;
        need->weight_bytes += b + 4u * w;
        need->kv_bytes += 4u * kv;
    }
    need->ctrl_words = tsr_lay_ctrl_words(kc);
    need->total_bytes = need->weight_bytes + need->kv_bytes + 4u * need->ctrl_words;
}

int tsr_wimage_check_profile(const tsr_kconfig *kc, tsr_err *e)
{
    const char *prof = TSR_PROFILE_NAME;
    struct { const char *what; uint32_t v, max; } lim[] = {
        { "dim", kc->dim, TSR_MAX_DIM },
        { "hidden_dim", kc->hidden_dim, TSR_MAX_HIDDEN },
        { "n_layers", kc->n_layers, TSR_MAX_LAYERS },
        { "n_heads", kc->n_heads, TSR_MAX_HEADS },
        { "n_kv_heads", kc->n_kv_heads, TSR_MAX_KV_HEADS },
        { "head_size", kc->n_heads ? kc->dim / kc->n_heads : 0, TSR_MAX_HEAD_SIZE },
        { "vocab_size", kc->vocab_size, TSR_MAX_VOCAB },
        { "seq_len", kc->seq_len, TSR_MAX_SEQ },
        { "sequence slots", kc->n_slots, TSR_MAX_SLOTS },
        { "group size", kc->group, TSR_MAX_GROUP },
        { "PEs", kc->mesh_rows * kc->mesh_cols, TSR_MAX_PES },
    };
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].v > lim[i].max)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s %u exceeds the %s profile's maximum %u",
                              lim[i].what, lim[i].v, prof, lim[i].max);
    if (kc->group < TSR_MIN_GROUP)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "group size %u is below the %s profile's minimum %u",
                          kc->group, prof, TSR_MIN_GROUP);
    if (kc->n_heads == 0 || kc->n_kv_heads == 0 || kc->dim % kc->n_heads ||
        kc->n_heads % kc->n_kv_heads || (kc->dim / kc->n_heads) % 2u)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                          "dim %u, %u heads, %u kv heads: heads must divide dim (even head size) "
                          "and kv heads must divide heads", kc->dim, kc->n_heads, kc->n_kv_heads);
    tsr_wneed nd;
    tsr_wimage_need(kc, &nd);
    if (nd.pe_i8_max > TSR_PE_I8_BYTES)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "needs %llu bytes of int8 tiles on one PE, a %s PE has %u "
                          "(use more PEs)", (unsigned long long)nd.pe_i8_max, prof,
                          (unsigned)TSR_PE_I8_BYTES);
    if (nd.pe_f32_max > TSR_PE_F32_WORDS)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "needs %llu bytes of fp32 weights/scales + KV cache on one PE, a %s PE "
                          "has %u (use more PEs, a shorter seq_len or fewer slots)",
                          (unsigned long long)nd.pe_f32_max * 4u, prof,
                          (unsigned)TSR_PE_F32_WORDS * 4u);
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Building                                                                   */

/* The model tensor behind matrix mat. */
static const tsr_tensor *mat_src(const tsr_checkpoint *m, const tsr_kconfig *kc, uint32_t mat)
{
    if (mat == TSR_MAT_EMB) return &m->tok_embedding;
    if (mat == 1u + 7u * kc->n_layers) return &m->wcls;
    uint32_t l = (mat - 1u) / 7u;
    switch ((mat - 1u) % 7u) {
    case TSR_W_Q: return &m->wq[l];
    case TSR_W_K: return &m->wk[l];
    case TSR_W_V: return &m->wv[l];
    case TSR_W_O: return &m->wo[l];
    case TSR_W_1: return &m->w1[l];
    case TSR_W_2: return &m->w2[l];
    default:      return &m->w3[l];
    }
}


/* The numerics contract's group rule on one row x (n,): q (ng*G,) zero
 * padded, s (ng,). */
static void quantize_row(const float *x, uint32_t n, uint32_t G, int8_t *q, float *s)
{
    uint32_t ng = tsr_cdiv(n, G);
    for (uint32_t g = 0; g < ng; g++) {
        uint32_t j0 = g * G, j1 = j0 + G < n ? j0 + G : n;
        float amax = 0.0f;
        for (uint32_t j = j0; j < j1; j++) {
            float a = fabsf(x[j]);
            if (a > amax) amax = a;
        }
        float scale = amax / 127.0f;
        s[g] = scale;
        uint32_t j = j0;
        if (scale != 0.0f)   /* straight-line, so the compiler vectorizes it */
            for (; j < j1; j++) q[j] = (int8_t)tsr_round_q8(x[j] / scale);
        for (; j < j0 + G; j++) q[j] = 0;   /* an all-zero group, or the padding */
    }
}

static int add_chunks(tsr_wimage *img, int *cap, uint32_t pe, uint32_t region, const void *base,
                      uint64_t units, uint32_t unit_bytes)
{
    uint64_t per = TSR_WIMAGE_CHUNK / unit_bytes;
    for (uint64_t off = 0; off < units; off += per) {
        if (img->n_chunks == *cap) {
            int ncap = *cap ? 2 * *cap : 64;
            tsr_wchunk *nc = realloc(img->chunks, (size_t)ncap * sizeof *nc);
            if (!nc) return TSR_ERR_NOMEM;
            img->chunks = nc;
            *cap = ncap;
        }
        uint64_t len = units - off < per ? units - off : per;
        tsr_wchunk *ch = &img->chunks[img->n_chunks++];
        ch->pe = pe;
        ch->region = region;
        ch->offset = (uint32_t)off;
        ch->length = (uint32_t)len;
        ch->nbytes = (uint32_t)((len * unit_bytes + 3u) & ~(uint64_t)3u);
        ch->data = (const uint32_t *)((const unsigned char *)base + off * unit_bytes);
    }
    return TSR_OK;
}

int tsr_wimage_build(const tsr_checkpoint *m, const tsr_kconfig *kc, tsr_wimage *img, tsr_err *e)
{
    memset(img, 0, sizeof *img);
    const tsr_config *c = &m->cfg;
    if ((uint32_t)c->dim != kc->dim || (uint32_t)c->hidden_dim != kc->hidden_dim ||
        (uint32_t)c->n_layers != kc->n_layers || (uint32_t)c->vocab_size != kc->vocab_size ||
        (uint32_t)c->n_kv_heads != kc->n_kv_heads || (uint32_t)c->n_heads != kc->n_heads)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: model shape differs from the device config",
                          m->path);
    uint32_t P = tsr_lay_pes(kc), R = kc->mesh_rows, C = kc->mesh_cols, G = kc->group;
    int q8 = kc->dtype == TSR_KDT_Q8, rc = TSR_ERR_NOMEM;
    uint32_t *off8 = NULL, *offf = NULL;   // [P] running tile offsets
    float *row = NULL, *sc = NULL;
    int8_t *qr = NULL;
    img->cfg = *kc;
    img->n_pes = P;
    img->pe_i8 = calloc(P, sizeof *img->pe_i8);
    img->pe_f32 = calloc(P, sizeof *img->pe_f32);
    img->i8_bytes = calloc(P, sizeof *img->i8_bytes);
    img->f32_words = calloc(P, sizeof *img->f32_words);
    off8 = calloc(P, sizeof *off8);
    offf = calloc(P, sizeof *offf);
    if (!img->pe_i8 || !img->pe_f32 || !img->i8_bytes || !img->f32_words || !off8 || !offf)
        goto fail;
    for (uint32_t p = 0; p < P; p++) {
        uint64_t b, w;
        tsr_lay_pe_weights(kc, p, &b, &w);
        img->i8_bytes[p] = (uint32_t)b;
        img->f32_words[p] = (uint32_t)w;
        img->pe_i8[p] = calloc((size_t)(b + 3u) / 4u + 1u, 4);
        img->pe_f32[p] = calloc((size_t)w + 1u, 4);
        if (!img->pe_i8[p] || !img->pe_f32[p]) goto fail;
    }

    /* every matrix, row by row */
    uint32_t max_n = kc->dim > kc->hidden_dim ? kc->dim : kc->hidden_dim;
    uint32_t max_pad = tsr_cdiv(max_n, G) * G;
    row = calloc(max_pad, sizeof *row);
    qr = calloc(max_pad, sizeof *qr);
    sc = calloc(tsr_cdiv(max_n, G), sizeof *sc);
    if (!row || !qr || !sc) goto fail;
    uint32_t nm = tsr_lay_n_mats(kc);
    for (uint32_t mat = 0; mat < nm; mat++) {
        const tsr_tensor *src = mat_src(m, kc, mat);
        uint32_t d, n;
        tsr_lay_mat_shape(kc, mat, &d, &n);
        if ((uint32_t)src->rows != d || (uint32_t)src->cols != n) {
            rc = tsr_seterr(e, TSR_ERR_ARG, "%s: tensor %u is %dx%d, expected %ux%u", m->path,
                            mat, src->rows, src->cols, d, n);
            goto fail;
        }
        uint32_t r = 0;
        tsr_tile tiles[TSR_MAX_MESH_COLS];   // row block r's tiles, by mesh column
        for (uint32_t cc = 0; cc < C; cc++) tiles[cc] = tsr_lay_tile(kc, d, n, cc);
        for (uint32_t ro = 0; ro < d; ro++) {
            if ((r + 1u) * d / R <= ro) {   // next row block (a block may be empty)
                while ((r + 1u) * d / R <= ro) r++;
                for (uint32_t cc = 0; cc < C; cc++) tiles[cc] = tsr_lay_tile(kc, d, n, r * C + cc);
            }
            tsr_tensor_row(src, (int)ro, row);
            if (q8) quantize_row(row, n, G, qr, sc);
            for (uint32_t cc = 0; cc < C; cc++) {
                uint32_t p = r * C + cc;
                tsr_tile t = tiles[cc];
                uint32_t i = ro - t.row0, cols = t.ngroups * G;
                if (q8) {
                    int8_t *dst = (int8_t *)img->pe_i8[p] + off8[p] + (size_t)i * cols;
                    memcpy(dst, qr + (size_t)t.g0 * G, cols);
                    memcpy(img->pe_f32[p] + offf[p] + (size_t)i * t.ngroups, sc + t.g0,
                           (size_t)t.ngroups * sizeof(float));
                } else {
                    float *dst = img->pe_f32[p] + offf[p] + (size_t)i * cols;
                    for (uint32_t j = 0; j < cols; j++) {
                        uint32_t col = t.g0 * G + j;
                        dst[j] = col < n ? row[col] : 0.0f;
                    }
                }
            }
        }
        for (uint32_t p = 0; p < P; p++) {
            tsr_tile t = tsr_lay_tile(kc, d, n, p);
            off8[p] += tsr_lay_tile_i8(kc, t);
            offf[p] += tsr_lay_tile_f32(kc, t);
        }
    }

    /* controller: norm weights */
    img->ctrl_words = tsr_lay_ctrl_words(kc);
    img->ctrl = calloc(img->ctrl_words, sizeof *img->ctrl);
    if (!img->ctrl) goto fail;
    for (uint32_t l = 0; l < kc->n_layers; l++) {
        tsr_tensor_row(&m->rms_att[l], 0, img->ctrl + (size_t)l * kc->dim);
        tsr_tensor_row(&m->rms_ffn[l], 0, img->ctrl + (size_t)(kc->n_layers + l) * kc->dim);
    }
    tsr_tensor_row(&m->rms_final, 0, img->ctrl + (size_t)2u * kc->n_layers * kc->dim);

    /* chunks, in streaming order: per PE int8 then fp32, then the controller */
    int cap = 0;
    for (uint32_t p = 0; p < P; p++) {
        if (add_chunks(img, &cap, p, TSR_REG_I8, img->pe_i8[p], img->i8_bytes[p], 1) ||
            add_chunks(img, &cap, p, TSR_REG_F32, img->pe_f32[p], img->f32_words[p], 4))
            goto fail;
    }
    if (add_chunks(img, &cap, 0, TSR_REG_CTRL, img->ctrl, img->ctrl_words, 4)) goto fail;

    /* size and content hash: XXH3-64 (libxxhash) of the config, then each
     * chunk's header and bytes, so any change of placement or value changes
     * it; at tens of GB/s it costs nothing next to the copy */
    XXH3_state_t *hs = XXH3_createState();
    if (!hs || XXH3_64bits_reset(hs) != XXH_OK) {
        XXH3_freeState(hs);
        goto fail;
    }
    XXH3_64bits_update(hs, kc, sizeof *kc);
    img->bytes = 4u * TSR_KCONFIG_WORDS;
    for (int i = 0; i < img->n_chunks; i++) {
        const tsr_wchunk *ch = &img->chunks[i];
        uint32_t hdr[4] = { ch->pe, ch->region, ch->offset, ch->length };
        XXH3_64bits_update(hs, hdr, sizeof hdr);
        XXH3_64bits_update(hs, ch->data, ch->nbytes);
        img->bytes += ch->nbytes;
    }
    img->hash = XXH3_64bits_digest(hs);
    XXH3_freeState(hs);
    free(off8);
    free(offf);
    free(row);
    free(qr);
    free(sc);
    return TSR_OK;

fail:
    free(off8);
    free(offf);
    free(row);
    free(qr);
    free(sc);
    tsr_wimage_free(img);
    if (rc == TSR_ERR_NOMEM) return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory building the weight image", m->path);
    return rc;
}

void tsr_wimage_free(tsr_wimage *img)
{
    if (!img) return;
    for (uint32_t p = 0; p < img->n_pes; p++) {
        if (img->pe_i8) free(img->pe_i8[p]);
        if (img->pe_f32) free(img->pe_f32[p]);
    }
    free(img->pe_i8);
    free(img->pe_f32);
    free(img->i8_bytes);
    free(img->f32_words);
    free(img->ctrl);
    free(img->chunks);
    memset(img, 0, sizeof *img);
}
