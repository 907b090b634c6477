/*
 * weight_image.c - build the device image of a model (see weight_image.h):
 * whole (tsr_wimage_build: quantize or copy every matrix row once, scatter
 * its column blocks into the tiles of the PEs of its row block, then cut
 * each PE's arrays into LOAD-sized chunks), or one PE at a time as it
 * streams (tsr_wstream: each PE's tiles from the spans of the rows they
 * hold, the same bytes).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "tsr_half.h"
#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* Configuration and needs                                                    */

static int pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

/* The group size of the file's own quantized weights (0: none). */
static int file_group(const tsr_config *c)
{
    return (c->kinds_q8 | c->kinds_q4) ? c->group_size : 0;
}

/* The group size: the file's own unless told otherwise (F32 mode splits
 * its columns in groups too: 32 by default), checked against the kernel
 * profile's range; also the weights format and KV precision named. */
static int wi_group(const tsr_checkpoint *m, const tsr_load_opts *o, const tsr_kprofile *prof,
                    int *group_out, tsr_err *e)
{
    const tsr_config *c = &m->cfg;
    int f32 = o->weights_f32 != 0, fg = file_group(c);
    int group = o->group_size ? o->group_size
              : !f32 && o->weights == TSR_WEIGHTS_Q4 ? (int)TSR_Q4_GROUP
              : !f32 && fg ? fg : TSR_WIMAGE_DEFAULT_GROUP;
    const char *whose = o->group_size ? "" : " (the file's)";   /* the non-power-of-two message */
    if (group < 1)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: group size %d must be >= 1", m->path, group);
    if (o->weights < TSR_WEIGHTS_FILE || o->weights > TSR_WEIGHTS_Q4 || o->kv < TSR_KV_F32 ||
        o->kv >= TSR_KV_COUNT)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: weights format %d or KV precision %d unknown",
                          m->path, o->weights, o->kv);
    if (!pow2(group))
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: group size %d%s is not a power of two "
                          "(the PE lanes take groups of 4, 8, ..., 256; --group-size N "
                          "re-quantizes)", m->path, group, whose);
    if (!f32 && (group < (int)prof->group_min || group > (int)prof->group_max)) {
        uint32_t near = group < (int)prof->group_min ? prof->group_min : prof->group_max;
        if (!o->group_size)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: the file's group size %d is outside "
                              "the %u..%u the device's kernel profile takes (--group-size %u "
                              "re-quantizes)", m->path, group, prof->group_min, prof->group_max,
                              near);
        if (fg)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: group size %d is outside the %u..%u "
                              "the device's kernel profile takes (the file's is %d)", m->path,
                              group, prof->group_min, prof->group_max, fg);
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: group size %d is outside the %u..%u the "
                          "device's kernel profile takes", m->path, group, prof->group_min,
                          prof->group_max);
    }
    *group_out = group;
    return TSR_OK;
}

/* The kinds of matrix held as Q4_0 tiles: what the file holds as Q4_0, or
 * everything (--weights q4); a Q4_0 block is 32 values, so another group
 * size makes Q8_0 tiles. */
static int wi_q4(const tsr_checkpoint *m, const tsr_load_opts *o, const tsr_kprofile *prof,
                 int group, uint32_t *q4_out, tsr_err *e)
{
    const tsr_config *c = &m->cfg;
    int f32 = o->weights_f32 != 0;
    uint32_t q4 = 0;
    if (!f32 && o->weights == TSR_WEIGHTS_Q4) {
        if (group != (int)TSR_Q4_GROUP)
            return tsr_seterr(e, TSR_ERR_ARG, "%s: Q4_0 weights take group size %u (GGUF's "
                              "block), not %d", m->path, TSR_Q4_GROUP, group);
        if (!prof->with_q4)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: the device's kernel profile has no "
                              "Q4_0 datapath (use Q8_0 weights)", m->path);
        q4 = TSR_KINDS_ALL;
    } else if (!f32 && o->weights == TSR_WEIGHTS_FILE && group == (int)TSR_Q4_GROUP &&
               prof->with_q4) {
        q4 = c->kinds_q4;   /* without the datapath they are widened to Q8_0 */
    }
    if (c->shared_classifier) q4 &= ~(1u << TSR_KIND_CLS);
    *q4_out = q4;
    return TSR_OK;
}

/* The context, the slots and the stage bits checked. */
static int wi_context(const tsr_checkpoint *m, const tsr_mesh_opts *mo, int seq_len, int n_slots,
                      tsr_err *e)
{
    const tsr_config *c = &m->cfg;
    // GGUF's llama.context_length may understate the trained context (the
    // llama2.c converters write 128 for stories260K, trained with 512), so
    // the caller may raise it; the device logs a warning
    int max_seq = c->format == TSR_FMT_GGUF ? TSR_CKPT_MAX_SEQ : c->seq_len;
    if (seq_len < 1 || seq_len > max_seq)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: a context of %d positions is outside 1..%d (%s)",
                          m->path, seq_len, max_seq,
                          c->format == TSR_FMT_GGUF ? "the most a GGUF file may ask for"
                                                    : "a llama2.c file's own seq_len");
    if (n_slots < 1)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: %d sequence slots", m->path, n_slots);
    if (mo->stage & ~(int)TSR_STAGE_ALL)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: stage bits 0x%x", m->path, (unsigned)mo->stage);
    return TSR_OK;
}

/* The mesh columns (0: the profile's default) and the KV split and
 * attention PEs of pes PEs. */
static int wi_mesh(const tsr_checkpoint *m, const tsr_mesh_opts *mo, const tsr_kprofile *prof,
                   int *cols_out, int *split_out, int *att_out, tsr_err *e)
{
    const tsr_config *c = &m->cfg;
    int pes = mo->pes > 0 ? mo->pes : 1, cols = mo->cols > 0 ? mo->cols : 0;
    if (cols == 0) {
        /* every matrix picks its own columns up to the mesh's
         * (tsr_lay_mat_cols); adding partial sums across columns reorders
         * a row's sum, so a profile that keeps run.c's order (sum lanes 1)
         * gets one column, the others as many as they take */
        cols = 1;
        if (prof->sum_lanes > 1)
            while (2 * cols <= (int)prof->mesh_cols && pes % (2 * cols) == 0) cols *= 2;
    }
    if (!pow2(cols) || pes % cols || cols > TSR_WIMAGE_MAX_COLS)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: %d mesh columns: a power of two that divides "
                          "the %d PEs", m->path, cols, pes);
    int nkv = c->n_kv_heads > 0 ? c->n_kv_heads : 1, split = mo->kv_split;
    int att = pes < (int)prof->att_pes ? pes : (int)prof->att_pes;
    if (split == 0) {
        /* one PE per KV head keeps run.c's order of attention's sums; a
         * profile that reorders its sums (TSR_SUM_LANES > 1) spreads each
         * head over as many PEs as fit */
        split = 1;
        if (prof->sum_lanes > 1)
            while (2 * split * nkv <= att && 2u * (uint32_t)split <= prof->kv_split_max) split *= 2;
    }
    if (!pow2(split) || (split > 1 && split * nkv > att))
        return tsr_seterr(e, TSR_ERR_ARG, "%s: KV split %d: a power of two, and %d KV heads x "
                          "%d PEs <= the %d PEs with attention", m->path, split, nkv, split, att);
    att = att / split * split;   /* whole groups */
    if (att > nkv * split) att = nkv * split;   /* a group a KV head, no idle groups */
    *cols_out = cols;
    *split_out = split;
    *att_out = att;
    return TSR_OK;
}

int tsr_wimage_config(const tsr_checkpoint *m, const tsr_load_opts *o, const tsr_mesh_opts *mo,
                      const tsr_kprofile *prof, tsr_kconfig *kc, tsr_err *e)
{
    const tsr_config *c = &m->cfg;
    int group = 0, cols = 0, split = 0, att = 0;
    uint32_t q4 = 0;
    int rc = wi_group(m, o, prof, &group, e);
    if (rc || (rc = wi_q4(m, o, prof, group, &q4, e))) return rc;
    int bos = tsr_config_bos(c), eos = tsr_config_eos(c);
    if (bos < 0 || bos >= c->vocab_size || eos < 0 || eos >= c->vocab_size)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: BOS %d / EOS %d outside the vocabulary (0..%d)",
                          m->path, bos, eos, c->vocab_size - 1);
    int seq_len = o->seq_len ? o->seq_len : c->seq_len;
    int n_slots = o->n_slots ? o->n_slots : 1;
    int pes = mo->pes > 0 ? mo->pes : 1;
    if ((rc = wi_context(m, mo, seq_len, n_slots, e))) return rc;
    if ((rc = wi_mesh(m, mo, prof, &cols, &split, &att, e))) return rc;
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
    kc->mesh_rows = (uint32_t)(pes / cols);
    kc->mesh_cols = (uint32_t)cols;
    kc->shared_classifier = c->shared_classifier ? 1u : 0u;
    kc->kv_split = (uint32_t)split;
    kc->att_pes = (uint32_t)att;
    kc->q4_kinds = q4;
    kc->kv_dtype = (uint32_t)o->kv;
    kc->bos = (uint32_t)bos;
    kc->eos = (uint32_t)eos;
    kc->stage = (uint32_t)mo->stage;
    kc->qkv_bias = c->qkv_bias ? 1u : 0u;
    kc->rope_theta = c->rope_theta;
    kc->norm_eps = c->norm_eps;
    return TSR_OK;
}

void tsr_wimage_need(const tsr_kconfig *kc, tsr_wneed *need)
{
    memset(need, 0, sizeof *need);
    uint32_t P = tsr_lay_pes(kc);
    for (uint32_t p = 0; p < P; p++) {
        uint64_t b, w, kv = tsr_lay_kv_words(kc, p), kvs = tsr_lay_kv_scales(kc, p);
        uint32_t rows;
        tsr_lay_pe_weights(kc, p, &b, &w, &rows);
        if (b > need->pe_w8_max) need->pe_w8_max = b;
        if (w > need->pe_f32_max) need->pe_f32_max = w;
        if (kv > need->pe_kv_max) need->pe_kv_max = kv;
        if (kvs > need->pe_kvs_max) need->pe_kvs_max = kvs;
        if (rows > need->pe_rows_max) need->pe_rows_max = rows;
        if (tsr_lay_att_words(kc, p) > need->pe_att_max) need->pe_att_max = tsr_lay_att_words(kc, p);
        need->weight_bytes += b + 4u * w;
        need->kv_bytes += tsr_lay_kv_bytes(kc, p);
    }
    need->ctrl_words = tsr_lay_ctrl_words(kc);
    need->total_bytes = need->weight_bytes + need->kv_bytes + 4u * need->ctrl_words;
}

static const char *const kv_names[TSR_KV_COUNT] = { "f32", "f16", "int8" };

const char *tsr_wimage_kv_name(uint32_t kv) { return kv < TSR_KV_COUNT ? kv_names[kv] : "?"; }

/* Kind names, as notices and descriptions give them. */
static const char *const kind_names[TSR_KIND_COUNT] = {
    "embedding", "wq/wk/wv", "wo", "w1/w3", "w2", "classifier"
};

/* The kinds matrices of kc come in (a shared classifier is the embedding). */
static uint32_t kinds_present(const tsr_kconfig *kc)
{
    return kc->shared_classifier ? TSR_KINDS_ALL & ~(1u << TSR_KIND_CLS) : TSR_KINDS_ALL;
}

/* ", "-separated names of the kinds in mask into buf at *at. */
static void put_kinds(char *buf, size_t cap, size_t *at, uint32_t mask)
{
    int first = 1;
    for (int k = 0; k < TSR_KIND_COUNT; k++) {
        if (!(mask & (1u << k))) continue;
        int n = snprintf(*at < cap ? buf + *at : NULL, *at < cap ? cap - *at : 0, "%s%s",
                         first ? "" : ", ", kind_names[k]);
        if (n > 0) *at += (size_t)n;
        first = 0;
    }
}

#define PUTB(...) do { int n_ = snprintf(at < cap ? buf + at : NULL, at < cap ? cap - at : 0, \
                                         __VA_ARGS__); if (n_ > 0) at += (size_t)n_; } while (0)

size_t tsr_wimage_describe(const tsr_kconfig *kc, char *buf, size_t cap)
{
    size_t at = 0;
    if (cap) buf[0] = '\0';
    if (kc->dtype == TSR_KDT_F32) {
        PUTB("F32");
        return at;
    }
    uint32_t all = kinds_present(kc), q4 = kc->q4_kinds & all;
    if (q4 == all) PUTB("Q4_0 group %u", kc->group);
    else if (!q4) PUTB("Q8_0 group %u", kc->group);
    else {
        PUTB("Q4_0 (");
        put_kinds(buf, cap, &at, q4);
        PUTB(") + Q8_0 group %u (", kc->group);
        put_kinds(buf, cap, &at, all & ~q4);
        PUTB(")");
    }
    return at;
}

int tsr_wimage_notice(const tsr_checkpoint *m, const tsr_kconfig *kc, char *buf, size_t cap)
{
    const tsr_config *c = &m->cfg;
    size_t at = 0;
    if (cap) buf[0] = '\0';
    if (kc->dtype != TSR_KDT_Q8) return 0;   /* F32: every weight as it is, exactly */
    uint32_t all = kinds_present(kc), q4 = kc->q4_kinds & all, q8 = all & ~q4;
    uint32_t own8 = c->kinds_q8 & all, own4 = c->kinds_q4 & all;
    int fg = file_group(c);
    /* kinds the file holds quantized that change, and (in a quantized
     * file) the F32/F16 kinds that get quantized */
    uint32_t regroup = fg && (int)kc->group != fg ? own8 & q8 : 0;   /* Q8_0 -> Q8_0 at G */
    uint32_t to_q4 = own8 & q4, widen = own4 & q8, rest = all & ~own8 & ~own4;
    if (!fg) return 0;   /* an fp32 file: quantizing it is the default, not a change */
    if (!(regroup | to_q4 | widen | rest)) return 0;
    PUTB("%s: on chip:", m->path);
    const char *sep = " ";
    if (regroup) {
        PUTB("%sQ8_0 re-quantized from group %d to %u (", sep, fg, kc->group);
        put_kinds(buf, cap, &at, regroup);
        PUTB(")");
        sep = "; ";
    }
    if (to_q4) {
        PUTB("%sQ8_0 re-quantized to Q4_0 (", sep);
        put_kinds(buf, cap, &at, to_q4);
        PUTB(")");
        sep = "; ";
    }
    if (widen) {
        if (kc->group == TSR_Q4_GROUP) PUTB("%sQ4_0 widened to Q8_0, exactly (", sep);
        else PUTB("%sQ4_0 re-quantized to Q8_0 group %u (", sep, kc->group);
        put_kinds(buf, cap, &at, widen);
        PUTB(")");
        sep = "; ";
    }
    uint32_t across = rest & c->kinds_q8x;   /* Q8_0 groups across row ends */
    rest &= ~across;
    if (across) {
        PUTB("%sQ8_0 in groups across row ends re-quantized to %s along the rows (", sep,
             (across & q4) == across ? "Q4_0" : "Q8_0");
        put_kinds(buf, cap, &at, across);
        PUTB(")");
        sep = "; ";
    }
    if (rest) {
        PUTB("%sF32/F16 quantized to %s (", sep, (rest & q4) == rest ? "Q4_0" : "Q8_0");
        put_kinds(buf, cap, &at, rest);
        PUTB(")");
    }
    return 1;
}
#undef PUTB

/* tsr_wimage_check_profile's shape half: the model's dimensions, group
 * size, datapaths and head layout against the profile's. */
static int check_profile_shape(const tsr_kconfig *kc, const tsr_kprofile *pf, const char *prof,
                               tsr_err *e)
{
    struct { const char *what; uint32_t v, max; } lim[] = {
        { "dim", kc->dim, pf->dim },
        { "hidden_dim", kc->hidden_dim, pf->hidden },
        { "n_layers", kc->n_layers, pf->layers },
        { "n_heads", kc->n_heads, pf->heads },
        { "n_kv_heads", kc->n_kv_heads, pf->kv_heads },
        { "head_size", kc->n_heads ? kc->dim / kc->n_heads : 0, pf->head_size },
        { "vocab_size", kc->vocab_size, pf->vocab },
        { "seq_len", kc->seq_len, pf->seq },
        { "sequence slots", kc->n_slots, pf->slots },
        { "group size", kc->group, pf->group_max },
        { "PEs", kc->mesh_rows * kc->mesh_cols, pf->pes },
        { "mesh rows", kc->mesh_rows, pf->mesh_rows },
        { "mesh columns", kc->mesh_cols, pf->mesh_cols },
        { "KV split", kc->kv_split, pf->kv_split_max },
    };
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].v > lim[i].max)
            return tsr_seterr(e, i == 8 ? TSR_ERR_CAPACITY : TSR_ERR_UNSUPPORTED,
                              "%s %u exceeds the %s profile's maximum %u", lim[i].what, lim[i].v,
                              prof, lim[i].max);
    if (kc->group < pf->group_min)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "group size %u is below the %s profile's minimum %u",
                          kc->group, prof, pf->group_min);
    if (kc->dtype == TSR_KDT_F32 && !pf->with_f32)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "the %s profile has no F32 datapath "
                          "(use Q8_0 weights)", prof);
    if (kc->dtype == TSR_KDT_Q8 && kc->q4_kinds && !pf->with_q4)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "the %s profile has no Q4_0 datapath "
                          "(use Q8_0 weights)", prof);
    if (kc->n_heads == 0 || kc->n_kv_heads == 0 || kc->dim % kc->n_heads ||
        kc->n_heads % kc->n_kv_heads || (kc->dim / kc->n_heads) % 2u)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                          "dim %u, %u heads, %u kv heads: heads must divide dim (even head size) "
                          "and kv heads must divide heads", kc->dim, kc->n_heads, kc->n_kv_heads);
    if ((kc->dim / kc->n_kv_heads) % TSR_VEC)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                          "dim %u / %u kv heads = %u is not a multiple of %u: a KV head group's "
                          "query slice must be whole bus words", kc->dim, kc->n_kv_heads,
                          kc->dim / kc->n_kv_heads, (unsigned)TSR_VEC);
    return TSR_OK;
}

/* Its memory half: each PE's tiles, scales, KV cache, partial sums and
 * scores against the profile's arrays. */
static int check_profile_memories(const tsr_kconfig *kc, const tsr_kprofile *pf, const char *prof,
                                  tsr_err *e)
{
    tsr_wneed nd;
    tsr_wimage_need(kc, &nd);
    uint32_t P = kc->mesh_rows * kc->mesh_cols;
    if (nd.pe_w8_max > (uint64_t)pf->w8_words * TSR_LANES)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "needs %llu bytes of int8 tiles on one of %u PEs, a %s PE has %llu "
                          "(use more PEs)", (unsigned long long)nd.pe_w8_max, P, prof,
                          (unsigned long long)pf->w8_words * TSR_LANES);
    if (nd.pe_f32_max > pf->f32_words)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "needs %llu bytes of fp32 scales/weights on one of %u PEs, a %s PE "
                          "has %llu (use more PEs)", (unsigned long long)nd.pe_f32_max * 4u, P,
                          prof, (unsigned long long)pf->f32_words * 4u);
    /* the KV cache in the array of its precision */
    uint32_t kvt = kc->kv_dtype, eb = tsr_lay_kv_elem_bytes(kc);
    uint64_t room = kvt == TSR_KV_F16 ? pf->kvh_words : kvt == TSR_KV_INT8 ? pf->kvq_bytes
                                                                            : pf->kv_words;
    if (room == 0 || (kvt == TSR_KV_INT8 && pf->kvs_words == 0))
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "the %s profile has no %s KV cache (--kv f32)",
                          prof, tsr_wimage_kv_name(kvt));
    if (nd.pe_kv_max > room || nd.pe_kvs_max > pf->kvs_words)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "needs %llu bytes of %s KV cache on one of %u PEs, a %s PE has %llu "
                          "(use more PEs, a shorter context, fewer slots or a smaller --kv)",
                          (unsigned long long)(nd.pe_kv_max * eb + 4u * nd.pe_kvs_max),
                          tsr_wimage_kv_name(kvt), P, prof,
                          (unsigned long long)(room * eb + (kvt == TSR_KV_INT8 ? 4ull * pf->kvs_words : 0u)));
    if (nd.pe_rows_max > pf->pe_rows)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "a tile of %u rows on one of %u PEs, a %s PE holds %u partial sums "
                          "(use more PEs)", nd.pe_rows_max, P, prof, pf->pe_rows);
    if (nd.pe_att_max > pf->att_words)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "%u attention scores on one of %u PEs, a %s PE holds %u (use more PEs "
                          "or a shorter context)", nd.pe_att_max, P, prof, pf->att_words);
    return TSR_OK;
}

int tsr_wimage_check_profile(const tsr_kconfig *kc, const tsr_kprofile *pf, const char *prof,
                             tsr_err *e)
{
    int rc = check_profile_shape(kc, pf, prof, e);
    if (rc == TSR_OK) rc = check_profile_memories(kc, pf, prof, e);
    if (rc != TSR_OK) return rc;
    /* the mesh-row roots the layout needs (kernels/mesh.c TSR_SWIGLU_ROOT,
     * TSR_BEST_ROOT; the kernel's CONFIGURE refuses the same), once the
     * PEs hold the model */
    {
        uint32_t c13 = tsr_lay_mat_cols(kc, TSR_MAT_LAYER(0u, TSR_W_13));
        uint32_t wcls = tsr_lay_mat_wcls(kc), dc, nc, pc;
        tsr_lay_mat_shape(kc, wcls, &dc, &nc, &pc);
        uint32_t ccls = dc ? tsr_lay_mat_cols(kc, wcls) : 0u;
        uint32_t p13 = pf->w13_cols ? pf->w13_cols : 1u, pcls = pf->cls_cols ? pf->cls_cols : 1u;
        if (c13 % p13 || (ccls && ccls % pcls))
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                              "on a %u x %u mesh %s splits over %u mesh column%s, and the %s "
                              "profile builds its roots every %u PEs only (use more PEs or mesh columns)",
                              kc->mesh_rows, kc->mesh_cols, c13 % p13 ? "W13" : "the classifier",
                              c13 % p13 ? c13 : ccls, (c13 % p13 ? c13 : ccls) == 1 ? "" : "s",
                              prof, c13 % p13 ? p13 : pcls);
    }
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Building                                                                   */

/* Row `row` of matrix mat (of half h of W13) from the model: the tensor
 * and the row within it (QKV stacks wq, wk, wv). */
static const tsr_tensor *mat_row_src(const tsr_checkpoint *m, const tsr_kconfig *kc, uint32_t mat,
                                     uint32_t h, uint32_t row, uint32_t *src_row)
{
    *src_row = row;
    if (mat == TSR_MAT_EMB) return &m->tok_embedding;
    if (mat == 1u + (uint32_t)TSR_W_COUNT * kc->n_layers) return &m->wcls;
    uint32_t l = (mat - 1u) / TSR_W_COUNT, dim = kc->dim, kvd = tsr_lay_kv_dim(kc);
    switch ((mat - 1u) % TSR_W_COUNT) {
    case TSR_W_QKV:
        /* q and k rows in the kernel's RoPE pair order (NEOX: permuted
         * within each head, model.h tsr_rope_src_row) */
        if (row < dim) {
            *src_row = (uint32_t)tsr_rope_src_row(&m->cfg, (int)row);
            return &m->wq[l];
        }
        if (row < dim + kvd) {
            *src_row = (uint32_t)tsr_rope_src_row(&m->cfg, (int)(row - dim));
            return &m->wk[l];
        }
        *src_row = row - dim - kvd;
        return &m->wv[l];
    case TSR_W_O:  return &m->wo[l];
    case TSR_W_13: return h ? &m->w3[l] : &m->w1[l];
    default:       return &m->w2[l];
    }
}

/* The controller region of m for kc (tsr_lay_ctrl_words(kc) floats): the
 * norm rows, RoPE's frequencies (model.c tsr_checkpoint_rope_freqs), and
 * with qkv_bias each layer's q | k | v biases, q and k in the QKV matrix's
 * row order (mat_row_src). */
static void fill_ctrl(const tsr_checkpoint *m, const tsr_kconfig *kc, float *ctrl)
{
    uint32_t L = kc->n_layers, dim = kc->dim, kvd = tsr_lay_kv_dim(kc);
    for (uint32_t l = 0; l < L; l++) {
        tsr_tensor_row(&m->rms_att[l], 0, ctrl + (size_t)l * dim);
        tsr_tensor_row(&m->rms_ffn[l], 0, ctrl + (size_t)(L + l) * dim);
    }
    tsr_tensor_row(&m->rms_final, 0, ctrl + (size_t)2u * L * dim);
    tsr_checkpoint_rope_freqs(m, ctrl + tsr_lay_ctrl_norms(kc));
    if (!kc->qkv_bias) return;
    float *b = ctrl + tsr_lay_ctrl_rope_end(kc);   /* (L, dim + 2 kvd) */
    for (uint32_t l = 0; l < L; l++, b += dim + 2u * kvd) {
        for (uint32_t i = 0; i < dim; i++)
            b[i] = tsr_tensor_get(&m->bq[l], (size_t)tsr_rope_src_row(&m->cfg, (int)i));
        for (uint32_t i = 0; i < kvd; i++) {
            b[dim + i] = tsr_tensor_get(&m->bk[l], (size_t)tsr_rope_src_row(&m->cfg, (int)i));
            b[dim + kvd + i] = tsr_tensor_get(&m->bv[l], i);
        }
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

/* GGUF's Q4_0 rule (ggml quantize_row_q4_0_ref) on one row x (n,), zero
 * padded to whole blocks of 32: per block the value of largest magnitude,
 * max, gives d = max / -8 and id = 1 / d; element x -> min(15, (int8)(x *
 * id + 8.5)), element i and i + 16 sharing byte i (low, high nibble); the
 * scale is d rounded to an IEEE half (GGUF stores it so), widened back.
 * q4 (ng*16,) bytes, s (ng,). */
static void quantize_row_q4(const float *x, uint32_t n, uint8_t *q4, float *s)
{
    uint32_t ng = tsr_cdiv(n, TSR_Q4_GROUP);
    for (uint32_t g = 0; g < ng; g++) {
        float v[TSR_Q4_GROUP], amax = 0.0f, max = 0.0f;
        for (uint32_t j = 0; j < TSR_Q4_GROUP; j++) {
            uint32_t i = g * TSR_Q4_GROUP + j;
            v[j] = i < n ? x[i] : 0.0f;
            if (amax < fabsf(v[j])) {
                amax = fabsf(v[j]);
                max = v[j];
            }
        }
        float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        s[g] = tsr_f32_from_f16(tsr_f16_from_f32(d));
        for (uint32_t j = 0; j < TSR_Q4_ENTRY_BYTES; j++) {
            int lo = (int8_t)(v[j] * id + 8.5f), hi = (int8_t)(v[j + 16u] * id + 8.5f);
            lo = lo < 15 ? lo : 15;
            hi = hi < 15 ? hi : 15;
            q4[g * TSR_Q4_ENTRY_BYTES + j] = (uint8_t)(lo | hi << 4);
        }
    }
}

/* Row sr of src as the on-chip Q8_0 row at group G: its own values and
 * scales when src is Q8_0 at G in whole groups; Q4_0 values widened
 * (nibble - 8, the same scale) when G is 32; else dequantized (row, n
 * floats of scratch) and quantized by the group rule.  q (ng*G,), s (ng,). */
static void span_q8(const tsr_tensor *src, uint32_t sr, uint32_t n, uint32_t G, uint32_t g0,
                    uint32_t ng, float *row, int8_t *q, float *s);

static void row_q8(const tsr_tensor *src, uint32_t sr, uint32_t n, uint32_t G, float *row,
                   int8_t *q, float *s)
{
    span_q8(src, sr, n, G, 0, tsr_cdiv(n, G), row, q, s);   /* the whole row is its groups' span */
}

/* Row sr of src as the on-chip Q4_0 row: the file's own bytes and scales
 * when src is Q4_0, else dequantized and quantized by GGUF's rule.  q4
 * (ng*16,), s (ng,). */
static void row_q4(const tsr_tensor *src, uint32_t sr, uint32_t n, float *row, uint8_t *q4,
                   float *s)
{
    uint32_t ng = tsr_cdiv(n, TSR_Q4_GROUP);
    if (src->type == TSR_DT_Q4_0) {   /* GGUF rows are whole blocks */
        for (uint32_t g = 0; g < ng; g++) {
            memcpy(q4 + (size_t)g * TSR_Q4_ENTRY_BYTES, tsr_tensor_q4(src, (size_t)sr * ng + g),
                   TSR_Q4_ENTRY_BYTES);
            s[g] = tsr_tensor_scale(src, (size_t)sr * ng + g);
        }
        return;
    }
    tsr_tensor_row(src, (int)sr, row);
    quantize_row_q4(row, n, q4, s);
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

/* TSR_OK when m has the shape kc was made for, else TSR_ERR_ARG. */
static int check_shape(const tsr_checkpoint *m, const tsr_kconfig *kc, tsr_err *e)
{
    const tsr_config *c = &m->cfg;
    if ((uint32_t)c->dim != kc->dim || (uint32_t)c->hidden_dim != kc->hidden_dim ||
        (uint32_t)c->n_layers != kc->n_layers || (uint32_t)c->vocab_size != kc->vocab_size ||
        (uint32_t)c->n_kv_heads != kc->n_kv_heads || (uint32_t)c->n_heads != kc->n_heads)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: model shape differs from the device config",
                          m->path);
    return TSR_OK;
}

/* A build in progress: the model, its config, the image, each PE's next
 * tile offsets and one row's scratch. */
typedef struct wbuild {
    const tsr_checkpoint *m;
    const tsr_kconfig    *kc;
    tsr_wimage           *img;
    uint32_t *offw, *offf;   /* (P,) each PE's next tile offsets (int8 bytes, fp32 words) */
    float    *row;           /* (max_pad,) one row's values                               */
    int8_t   *qr;            /* (max_pad,) ... quantized                                  */
    float    *sc;            /* (max_pad / G,) ... its group scales                       */
} wbuild;

/* Each PE's int8 and fp32 arrays, at the sizes the layout gives them. */
static int alloc_pes(tsr_wimage *img, const tsr_kconfig *kc)
{
    uint32_t P = img->n_pes;
    img->pe_w8 = calloc(P, sizeof *img->pe_w8);
    img->pe_f32 = calloc(P, sizeof *img->pe_f32);
    img->w8_bytes = calloc(P, sizeof *img->w8_bytes);
    img->f32_words = calloc(P, sizeof *img->f32_words);
    if (!img->pe_w8 || !img->pe_f32 || !img->w8_bytes || !img->f32_words) return -1;
    for (uint32_t p = 0; p < P; p++) {
        uint64_t b, w;
        tsr_lay_pe_weights(kc, p, &b, &w, NULL);
        img->w8_bytes[p] = (uint32_t)b;
        img->f32_words[p] = (uint32_t)w;
        img->pe_w8[p] = calloc((size_t)(b + 3u) / 4u + 1u, 4);
        img->pe_f32[p] = calloc((size_t)w + 1u, 4);
        if (!img->pe_w8[p] || !img->pe_f32[p]) return -1;
    }
    return 0;
}

/* Where row i of a mesh row's block of rows goes: its block b of
 * TSR_ROW_SLOTS rows (kb of them), its slot j, half h of a pair. */
typedef struct row_at { uint32_t h, rows, b, j, kb; } row_at;

/* The row in wb's scratch (values, or quantized with scales) into the
 * tiles t (C,) of the mesh row r's PEs. */
static void place_row(const wbuild *wb, uint32_t r, uint32_t C, const tsr_tile *t, uint32_t eb,
                      uint32_t n, const row_at *at)
{
    const tsr_kconfig *kc = wb->kc;
    tsr_wimage *img = wb->img;
    uint32_t G = kc->group, h = at->h, rows = at->rows, b = at->b, j = at->j, kb = at->kb;
    for (uint32_t cc = 0; cc < C; cc++) {
        uint32_t p = r * C + cc, ng = t[cc].ngroups;
        if (kc->dtype == TSR_KDT_Q8) {   /* entries (block, group, row) of eb bytes */
            uint32_t ent0 = h * rows * ng + b * TSR_ROW_SLOTS * ng + j;
            for (uint32_t g = 0; g < ng; g++) {
                uint32_t ent = ent0 + g * kb, gi = t[cc].g0 + g;
                memcpy((int8_t *)img->pe_w8[p] + wb->offw[p] + (size_t)ent * eb,
                       wb->qr + (size_t)gi * eb, eb);
                img->pe_f32[p][wb->offf[p] + ent] = wb->sc[gi];
            }
        } else {    /* values (block, column, row) */
            uint32_t cols = ng * G, x0 = t[cc].g0 * G;
            float *dst = img->pe_f32[p] + wb->offf[p] + (size_t)h * rows * cols +
                         (size_t)b * TSR_ROW_SLOTS * cols + j;
            for (uint32_t col = 0; col < cols; col++)
                dst[(size_t)col * kb] = x0 + col < n ? wb->row[x0 + col] : 0.0f;
        }
    }
}

/* Matrix mat (at rotation rot), row by row, each row's groups into its
 * mesh row's tiles; then each PE's offsets past its tile. */
static int build_matrix(wbuild *wb, uint32_t mat, uint32_t rot, tsr_err *e)
{
    const tsr_kconfig *kc = wb->kc;
    uint32_t P = tsr_lay_pes(kc), G = kc->group;
    uint32_t d, n, pair, sr, C = tsr_lay_mat_cols(kc, mat), R = P / C;
    tsr_lay_mat_shape(kc, mat, &d, &n, &pair);
    uint32_t q4 = tsr_lay_mat_q4(kc, mat), eb = q4 ? TSR_Q4_ENTRY_BYTES : G;  /* entry bytes */
    for (uint32_t r = 0; r < R; r++) {   /* the matrix's mesh rows */
        uint32_t row0, rows;
        tsr_lay_row_block(kc, mat, rot, r, &row0, &rows);
        if (rows == 0) continue;
        tsr_tile t[TSR_WIMAGE_MAX_COLS];
        for (uint32_t cc = 0; cc < C; cc++) t[cc] = tsr_lay_tile(kc, mat, rot, r * C + cc);
        uint32_t nb = tsr_cdiv(rows, TSR_ROW_SLOTS), tail = rows - (nb - 1u) * TSR_ROW_SLOTS;
        for (uint32_t h = 0; h < (pair ? 2u : 1u); h++)
            for (uint32_t i = 0; i < rows; i++) {
                const tsr_tensor *src = mat_row_src(wb->m, kc, mat, h, row0 + i, &sr);
                if (src->cols != (int)n || (int)sr >= src->rows)
                    return tsr_seterr(e, TSR_ERR_ARG, "%s: a tensor of matrix %u is %dx%d, "
                                      "expected %u columns", wb->m->path, mat, src->rows,
                                      src->cols, n);
                if (q4) row_q4(src, sr, n, wb->row, (uint8_t *)wb->qr, wb->sc);
                else if (kc->dtype == TSR_KDT_Q8) row_q8(src, sr, n, G, wb->row, wb->qr, wb->sc);
                else tsr_tensor_row(src, (int)sr, wb->row);
                uint32_t b = i / TSR_ROW_SLOTS;
                row_at at = { h, rows, b, i % TSR_ROW_SLOTS, b == nb - 1u ? tail : TSR_ROW_SLOTS };
                place_row(wb, r, C, t, eb, n, &at);
            }
    }
    for (uint32_t p = 0; p < P; p++) {
        tsr_tile t = tsr_lay_tile(kc, mat, rot, p);
        wb->offw[p] += tsr_lay_tile_w8(kc, t);
        wb->offf[p] += tsr_lay_tile_f32(kc, t);
    }
    return TSR_OK;
}

/* Size and content hash: XXH3-64 (libxxhash) of the config, then each
 * chunk's header and bytes, so any change of placement or value changes
 * it; at tens of GB/s it costs nothing next to the copy.  -1: no memory. */
static int hash_image(tsr_wimage *img, const tsr_kconfig *kc)
{
    XXH3_state_t *hs = XXH3_createState();
    if (!hs || XXH3_64bits_reset(hs) != XXH_OK) {
        XXH3_freeState(hs);
        return -1;
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
    return 0;
}

/* The controller's words (norm weights, RoPE's frequencies, QKV biases),
 * then the chunks in streaming order: per PE int8 then fp32, then the
 * controller.  -1: no memory. */
static int build_chunks(const tsr_checkpoint *m, const tsr_kconfig *kc, tsr_wimage *img)
{
    img->ctrl_words = tsr_lay_ctrl_words(kc);
    img->ctrl = calloc(img->ctrl_words, sizeof *img->ctrl);
    if (!img->ctrl) return -1;
    fill_ctrl(m, kc, img->ctrl);
    int cap = 0;
    for (uint32_t p = 0; p < img->n_pes; p++) {
        if (add_chunks(img, &cap, p, TSR_REG_W8, img->pe_w8[p], img->w8_bytes[p], 1) ||
            add_chunks(img, &cap, p, TSR_REG_F32, img->pe_f32[p], img->f32_words[p], 4))
            return -1;
    }
    return add_chunks(img, &cap, 0, TSR_REG_CTRL, img->ctrl, img->ctrl_words, 4) ? -1 : 0;
}

int tsr_wimage_build(const tsr_checkpoint *m, const tsr_kconfig *kc, tsr_wimage *img, tsr_err *e)
{
    memset(img, 0, sizeof *img);
    if (check_shape(m, kc, e)) return TSR_ERR_ARG;
    uint32_t P = tsr_lay_pes(kc), G = kc->group;
    int rc = TSR_ERR_NOMEM;
    img->cfg = *kc;
    img->n_pes = P;
    uint32_t max_n = kc->dim > kc->hidden_dim ? kc->dim : kc->hidden_dim;
    uint32_t max_pad = tsr_cdiv(max_n, G) * G;
    wbuild wb = { .m = m, .kc = kc, .img = img, .offw = calloc(P, sizeof *wb.offw),
                  .offf = calloc(P, sizeof *wb.offf), .row = calloc(max_pad, sizeof *wb.row),
                  .qr = calloc(max_pad, sizeof *wb.qr),
                  .sc = calloc(tsr_cdiv(max_n, G), sizeof *wb.sc) };
    if (!wb.offw || !wb.offf || !wb.row || !wb.qr || !wb.sc || alloc_pes(img, kc)) goto fail;

    /* every matrix, row by row, each row's groups into its mesh row's tiles */
    uint32_t nm = tsr_lay_n_mats(kc), rot = 0;
    for (uint32_t mat = 0; mat < nm; mat++) {
        if ((rc = build_matrix(&wb, mat, rot, e))) goto fail;
        rot = tsr_lay_rot_next(kc, mat, rot);
    }
    rc = TSR_ERR_NOMEM;
    if (build_chunks(m, kc, img) || hash_image(img, kc)) goto fail;
    rc = TSR_OK;

fail:
    free(wb.offw);
    free(wb.offf);
    free(wb.row);
    free(wb.qr);
    free(wb.sc);
    if (rc == TSR_OK) return TSR_OK;
    tsr_wimage_free(img);
    if (rc == TSR_ERR_NOMEM) return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory building the weight image", m->path);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Streaming: the same image, one PE at a time                                */

/* Groups [g0, g0 + ng) of row sr of src (n columns) as on chip, what
 * row_q8 / row_q4 / tsr_tensor_row give for those groups of the whole
 * row, bit for bit (every rule works group by group; the tile's groups all
 * start inside the row, so the span is cdiv(span, G) = ng groups).  Q8_0:
 * q (ng*G,) and s (ng,); Q4_0: q (ng*16,) bytes and s (ng,); F32: row
 * (ng*G,) values, zero past the row's end.  row has room for ng*G floats. */
static void span_q8(const tsr_tensor *src, uint32_t sr, uint32_t n, uint32_t G, uint32_t g0,
                    uint32_t ng, float *row, int8_t *q, float *s)
{
    uint32_t x0 = g0 * G, span = n - x0 < ng * G ? n - x0 : ng * G;
    if (src->type == TSR_DT_Q8_0 && (uint32_t)src->group == G && n % G == 0) {
        size_t f0 = (size_t)sr * (n / G) + g0;   /* the span's first group in the tensor */
        for (uint32_t g = 0; g < ng; g++) {
            memcpy(q + (size_t)g * G, tsr_tensor_q8(src, f0 + g), G);
            s[g] = tsr_tensor_scale(src, f0 + g);
        }
        return;
    }
    if (src->type == TSR_DT_Q4_0 && G == TSR_Q4_GROUP) {
        size_t f0 = (size_t)sr * (n / G) + g0;
        for (uint32_t g = 0; g < ng; g++) {
            const uint8_t *b = tsr_tensor_q4(src, f0 + g);
            for (uint32_t j = 0; j < TSR_Q4_ENTRY_BYTES; j++) {
                q[g * TSR_Q4_GROUP + j] = (int8_t)((b[j] & 15) - 8);
                q[g * TSR_Q4_GROUP + j + 16u] = (int8_t)((b[j] >> 4) - 8);
            }
            s[g] = tsr_tensor_scale(src, f0 + g);
        }
        return;
    }
    tsr_tensor_span(src, (int)sr, (int)x0, (int)span, row);
    quantize_row(row, span, G, q, s);
}

static void span_q4(const tsr_tensor *src, uint32_t sr, uint32_t n, uint32_t g0, uint32_t ng,
                    float *row, uint8_t *q4, float *s)
{
    uint32_t x0 = g0 * TSR_Q4_GROUP;
    uint32_t span = n - x0 < ng * TSR_Q4_GROUP ? n - x0 : ng * TSR_Q4_GROUP;
    if (src->type == TSR_DT_Q4_0) {   /* GGUF rows are whole blocks */
        size_t f0 = (size_t)sr * (n / TSR_Q4_GROUP) + g0;
        for (uint32_t g = 0; g < ng; g++) {
            memcpy(q4 + (size_t)g * TSR_Q4_ENTRY_BYTES, tsr_tensor_q4(src, f0 + g),
                   TSR_Q4_ENTRY_BYTES);
            s[g] = tsr_tensor_scale(src, f0 + g);
        }
        return;
    }
    tsr_tensor_span(src, (int)sr, (int)x0, (int)span, row);
    quantize_row_q4(row, span, q4, s);
}

/* PE p's tile t of matrix mat into its arrays (w8, f32 at the tile's
 * start), entries as tsr_wimage_build lays them: Q8 (block, group, row)
 * of eb bytes and a scale; F32 values (block, column, row). */
static int fill_tile(const tsr_wstream *ws, uint32_t mat, tsr_tile t, int8_t *w8, float *f32,
                     tsr_err *e)
{
    const tsr_kconfig *kc = &ws->cfg;
    const tsr_checkpoint *m = ws->m;
    uint32_t d, n, pair, sr, G = kc->group, ng = t.ngroups, rows = t.rows;
    tsr_lay_mat_shape(kc, mat, &d, &n, &pair);
    int q8 = kc->dtype == TSR_KDT_Q8;
    uint32_t q4 = tsr_lay_mat_q4(kc, mat), eb = q4 ? TSR_Q4_ENTRY_BYTES : G;
    uint32_t nb = tsr_cdiv(rows, TSR_ROW_SLOTS), tail = rows - (nb - 1u) * TSR_ROW_SLOTS;
    for (uint32_t h = 0; h < (pair ? 2u : 1u); h++)
        for (uint32_t i = 0; i < rows; i++) {
            const tsr_tensor *src = mat_row_src(m, kc, mat, h, t.row0 + i, &sr);
            if (src->cols != (int)n || (int)sr >= src->rows)
                return tsr_seterr(e, TSR_ERR_ARG, "%s: a tensor of matrix %u is %dx%d, "
                                  "expected %u columns", m->path, mat, src->rows, src->cols, n);
            uint32_t b = i / TSR_ROW_SLOTS, j = i % TSR_ROW_SLOTS;
            uint32_t kb = b == nb - 1u ? tail : TSR_ROW_SLOTS;
            if (q8) {
                if (q4) span_q4(src, sr, n, t.g0, ng, ws->row, (uint8_t *)ws->qr, ws->sc);
                else span_q8(src, sr, n, G, t.g0, ng, ws->row, ws->qr, ws->sc);
                uint32_t ent0 = h * rows * ng + b * TSR_ROW_SLOTS * ng + j;
                for (uint32_t g = 0; g < ng; g++) {
                    uint32_t ent = ent0 + g * kb;
                    memcpy(w8 + (size_t)ent * eb, ws->qr + (size_t)g * eb, eb);
                    f32[ent] = ws->sc[g];
                }
            } else {
                uint32_t cols = ng * G, x0 = t.g0 * G;
                uint32_t span = n - x0 < cols ? n - x0 : cols;
                float *dst = f32 + (size_t)h * rows * cols + (size_t)b * TSR_ROW_SLOTS * cols + j;
                tsr_tensor_span(src, (int)sr, (int)x0, (int)span, ws->row);
                for (uint32_t col = 0; col < cols; col++)
                    dst[(size_t)col * kb] = col < span ? ws->row[col] : 0.0f;
            }
        }
    return TSR_OK;
}

/* PE p's arrays, every matrix's tile in matrix order, zero where no entry
 * goes (as tsr_wimage_build's calloc leaves them). */
static int build_pe(tsr_wstream *ws, uint32_t p, tsr_err *e)
{
    const tsr_kconfig *kc = &ws->cfg;
    memset(ws->w8, 0, ws->w8_cap);
    memset(ws->f32, 0, ws->f32_cap);
    uint32_t nm = tsr_lay_n_mats(kc), rot = 0;
    size_t offw = 0, offf = 0;
    for (uint32_t mat = 0; mat < nm; mat++) {
        tsr_tile t = tsr_lay_tile(kc, mat, rot, p);
        if (t.rows && t.ngroups) {
            int rc = fill_tile(ws, mat, t, (int8_t *)ws->w8 + offw, ws->f32 + offf, e);
            if (rc) return rc;
        }
        offw += tsr_lay_tile_w8(kc, t);
        offf += tsr_lay_tile_f32(kc, t);
        rot = tsr_lay_rot_next(kc, mat, rot);
    }
    return TSR_OK;
}

enum { WS_W8 = 0, WS_F32, WS_CTRL, WS_DONE };

int tsr_wstream_open(const tsr_checkpoint *m, const tsr_kconfig *kc, tsr_wstream *ws, tsr_err *e)
{
    memset(ws, 0, sizeof *ws);
    if (check_shape(m, kc, e)) return TSR_ERR_ARG;
    ws->m = m;
    ws->cfg = *kc;
    ws->n_pes = tsr_lay_pes(kc);
    /* the fullest PE's arrays, and the size of the whole image */
    uint64_t max_b = 0, max_w = 0, ctrl = tsr_lay_ctrl_words(kc);
    ws->bytes = 4u * TSR_KCONFIG_WORDS + 4u * ctrl;
    for (uint32_t p = 0; p < ws->n_pes; p++) {
        uint64_t b, w;
        tsr_lay_pe_weights(kc, p, &b, &w, NULL);
        if (b > max_b) max_b = b;
        if (w > max_w) max_w = w;
        ws->bytes += ((b + 3u) & ~(uint64_t)3u) + 4u * w;
    }
    uint32_t G = kc->group, max_n = kc->dim > kc->hidden_dim ? kc->dim : kc->hidden_dim;
    size_t pad = (size_t)tsr_cdiv(max_n, G) * G;
    ws->w8_cap = ((size_t)(max_b + 3u) / 4u + 1u) * 4u;
    ws->f32_cap = ((size_t)max_w + 1u) * 4u;
    ws->w8 = malloc(ws->w8_cap);
    ws->f32 = malloc(ws->f32_cap);
    ws->ctrl = calloc(ctrl ? ctrl : 1u, sizeof *ws->ctrl);
    ws->row = calloc(pad, sizeof *ws->row);
    ws->qr = calloc(pad, sizeof *ws->qr);
    ws->sc = calloc(tsr_cdiv(max_n, G), sizeof *ws->sc);
    ws->hs = XXH3_createState();
    if (!ws->w8 || !ws->f32 || !ws->ctrl || !ws->row || !ws->qr || !ws->sc || !ws->hs) {
        tsr_wstream_close(ws);
        return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory for the weight stream", m->path);
    }
    fill_ctrl(m, kc, ws->ctrl);
    tsr_wstream_rewind(ws);
    return TSR_OK;
}

void tsr_wstream_rewind(tsr_wstream *ws)
{
    ws->pe = 0;
    ws->stage = ws->n_pes ? WS_W8 : WS_CTRL;
    ws->off = 0;
    ws->units = ws->n_pes ? 0 : tsr_lay_ctrl_words(&ws->cfg);
    ws->built = 0;
    ws->hash = 0;
    XXH3_64bits_reset(ws->hs);
    XXH3_64bits_update(ws->hs, &ws->cfg, sizeof ws->cfg);
}

int tsr_wstream_next(tsr_wstream *ws, tsr_wchunk *ch, int *done, tsr_err *e)
{
    *done = 0;
    for (;;) {
        if (ws->stage == WS_DONE) {
            *done = 1;
            return TSR_OK;
        }
        if (ws->stage == WS_W8 && ws->built != ws->pe + 1u) {
            /* a new PE: build its arrays, then let the file's pages go */
            uint64_t b, w;
            tsr_lay_pe_weights(&ws->cfg, ws->pe, &b, &w, NULL);
            int rc = build_pe(ws, ws->pe, e);
            if (rc) return rc;
            tsr_checkpoint_evict(ws->m);
            ws->built = ws->pe + 1u;
            ws->units = b;
        }
        uint32_t unit = ws->stage == WS_W8 ? 1u : 4u;
        if (ws->off < ws->units) {
            uint64_t per = TSR_WIMAGE_CHUNK / unit, len = ws->units - ws->off;
            if (len > per) len = per;
            const void *base = ws->stage == WS_W8 ? (const void *)ws->w8
                             : ws->stage == WS_F32 ? (const void *)ws->f32 : (const void *)ws->ctrl;
            ch->pe = ws->stage == WS_CTRL ? 0u : ws->pe;
            ch->region = ws->stage == WS_W8 ? TSR_REG_W8 : ws->stage == WS_F32 ? TSR_REG_F32
                                                                                 : TSR_REG_CTRL;
            ch->offset = (uint32_t)ws->off;
            ch->length = (uint32_t)len;
            ch->nbytes = (uint32_t)((len * unit + 3u) & ~(uint64_t)3u);
            ch->data = (const uint32_t *)((const unsigned char *)base + ws->off * unit);
            uint32_t hdr[4] = { ch->pe, ch->region, ch->offset, ch->length };
            XXH3_64bits_update(ws->hs, hdr, sizeof hdr);
            XXH3_64bits_update(ws->hs, ch->data, ch->nbytes);
            ws->off += len;
            return TSR_OK;
        }
        /* the region is through: the next one */
        ws->off = 0;
        if (ws->stage == WS_W8) {
            uint64_t b, w;
            tsr_lay_pe_weights(&ws->cfg, ws->pe, &b, &w, NULL);
            ws->stage = WS_F32;
            ws->units = w;
        } else if (ws->stage == WS_F32) {
            ws->units = 0;
            if (++ws->pe < ws->n_pes) {
                ws->stage = WS_W8;
            } else {
                ws->stage = WS_CTRL;
                ws->units = tsr_lay_ctrl_words(&ws->cfg);
            }
        } else {
            ws->stage = WS_DONE;
            ws->units = 0;
            ws->hash = XXH3_64bits_digest(ws->hs);
        }
    }
}

void tsr_wstream_close(tsr_wstream *ws)
{
    if (!ws) return;
    free(ws->w8);
    free(ws->f32);
    free(ws->ctrl);
    free(ws->row);
    free(ws->qr);
    free(ws->sc);
    XXH3_freeState(ws->hs);
    memset(ws, 0, sizeof *ws);
}

void tsr_wimage_free(tsr_wimage *img)
{
    if (!img) return;
    for (uint32_t p = 0; p < img->n_pes; p++) {
        if (img->pe_w8) free(img->pe_w8[p]);
        if (img->pe_f32) free(img->pe_f32[p]);
    }
    free(img->pe_w8);
    free(img->pe_f32);
    free(img->w8_bytes);
    free(img->f32_words);
    free(img->ctrl);
    free(img->chunks);
    memset(img, 0, sizeof *img);
}
