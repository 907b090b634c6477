/* inspect.c - public entry points that work on model files without a
 * device: tsr_file_inspect (tessera info) and tsr_synth_file (tessera synth). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "abi.h"
#include "model.h"
#include "weight_image.h"

static void copy_err(const tsr_err *e, char *err, size_t errlen)
{
    if (err && errlen) snprintf(err, errlen, "%s", e->msg);
}


/* Bytes of a tensor as held: 4 per F32 element, 2 per F16 element; 1 per
 * Q8_0 element, half a byte per Q4_0 element, plus a 4-byte scale per
 * group (llama2.c v2), or as GGUF stores them: blocks of 32 elements, 34
 * bytes (Q8_0) or 18 (Q4_0). */
static uint64_t tensor_bytes(const tsr_tensor *t)
{
    uint64_t n = (uint64_t)t->rows * (uint64_t)t->cols;
    switch (t->type) {
    case TSR_DT_F16:  return 2 * n;
    case TSR_DT_Q8_0: return t->blk ? n / 32u * TSR_GGML_Q8_BYTES : n + 4 * (n / (uint64_t)t->group);
    case TSR_DT_Q4_0: return t->blk ? n / 32u * TSR_GGML_Q4_BYTES : n / 2 + 4 * (n / 32u);
    default:          return 4 * n;
    }
}

static uint64_t tensor_params(const tsr_tensor *t)
{
    return (uint64_t)t->rows * (uint64_t)t->cols;
}

static const char *format_name(const tsr_config *c)
{
    switch (c->format) {
    case TSR_FMT_LLAMA2C_LEGACY: return "llama2.c legacy (fp32)";
    case TSR_FMT_LLAMA2C_V1:     return "llama2.c v1 (fp32)";
    case TSR_FMT_LLAMA2C_V2:     return "llama2.c v2 (Q8_0)";
    case TSR_FMT_GGUF:           return "GGUF";
    }
    return "unknown";
}

int tsr_file_inspect(const char *path, tsr_file_info *out, char *err, size_t errlen)
{
    tsr_err e = {0};
    if (!path || !out) {
        tsr_seterr(&e, TSR_ERR_ARG, "inspect: NULL path or info");
        copy_err(&e, err, errlen);
        return TSR_ERR_ARG;
    }
    int rc = tsr_abi_check_out(&tsr_abi_file_info, out, &e);
    if (rc) { copy_err(&e, err, errlen); return rc; }
    tsr_file_info full = { 0 }, *info = &full;   /* written up to out->size */
    tsr_checkpoint *ck = NULL;
    rc = tsr_checkpoint_open(path, &ck, &e);
    if (rc) {
        tsr_abi_write(&tsr_abi_file_info, out, &full);
        copy_err(&e, err, errlen);
        return rc;
    }
    const tsr_config *c = &ck->cfg;
    snprintf(info->format, sizeof info->format, "%s", format_name(c));
    info->dim = c->dim;
    info->hidden_dim = c->hidden_dim;
    info->n_layers = c->n_layers;
    info->n_heads = c->n_heads;
    info->n_kv_heads = c->n_kv_heads;
    info->vocab_size = c->vocab_size;
    info->seq_len = c->seq_len;
    info->shared_classifier = c->shared_classifier;
    info->group_size = c->group_size;
    info->file_bytes = ck->map_len;
    info->n_params = tsr_checkpoint_param_count(ck);

    info->params_embedding = tensor_params(&ck->tok_embedding);
    info->bytes_embedding = tensor_bytes(&ck->tok_embedding);
    for (int l = 0; l < c->n_layers; l++) {
        const tsr_tensor *att[] = { &ck->wq[l], &ck->wk[l], &ck->wv[l], &ck->wo[l] };
        const tsr_tensor *ffn[] = { &ck->w1[l], &ck->w2[l], &ck->w3[l] };
        const tsr_tensor *nrm[] = { &ck->rms_att[l], &ck->rms_ffn[l] };
        for (int i = 0; i < 4; i++) {
            info->params_attention += tensor_params(att[i]);
            info->bytes_attention += tensor_bytes(att[i]);
        }
        for (int i = 0; i < 3; i++) {
            info->params_ffn += tensor_params(ffn[i]);
            info->bytes_ffn += tensor_bytes(ffn[i]);
        }
        for (int i = 0; i < 2; i++) {
            info->params_norms += tensor_params(nrm[i]);
            info->bytes_norms += tensor_bytes(nrm[i]);
        }
    }
    info->params_norms += tensor_params(&ck->rms_final);
    info->bytes_norms += tensor_bytes(&ck->rms_final);
    if (!c->shared_classifier) {
        info->params_classifier = tensor_params(&ck->wcls);
        info->bytes_classifier = tensor_bytes(&ck->wcls);
    }
    if (c->format == TSR_FMT_GGUF) {
        snprintf(info->architecture, sizeof info->architecture, "%s",
                 ck->cfg.arch == TSR_ARCH_QWEN2 ? "qwen2" : "llama");
        info->tensors_f32 = ck->n_src_type[0];
        info->tensors_f16 = ck->n_src_type[1];
        info->tensors_q8_0 = ck->n_src_type[2];
        info->tensors_q4_0 = ck->n_src_type[3];
    }
    /* On chip by default: the file's own formats on the default mesh. */
    {
        tsr_load_opts o = { .seq_len = c->seq_len, .n_slots = 1 };
        tsr_kconfig kc;
        tsr_wneed need;
        const tsr_kprofile prof = TSR_KPROFILE_INIT;
        tsr_mesh_opts mo = { .pes = TSR_DEFAULT_PES };
        if (tsr_wimage_config(ck, &o, &mo, &prof, &kc, NULL) == TSR_OK) {
            tsr_wimage_need(&kc, &need);
            tsr_wimage_describe(&kc, info->onchip_weights, sizeof info->onchip_weights);
            info->onchip_bytes = need.total_bytes;
        }
    }
    /* On-chip bytes: the weight image layout on the default mesh. */
    for (int f32 = 0; f32 <= 1; f32++) {
        tsr_load_opts o = { .weights_f32 = f32, .weights = TSR_WEIGHTS_Q8, .group_size = 32,
                            .seq_len = c->seq_len,
                            .n_slots = 1 };
        tsr_kconfig kc;
        tsr_wneed need;
        const tsr_kprofile prof = TSR_KPROFILE_INIT;
        tsr_mesh_opts mo = { .pes = TSR_DEFAULT_PES };
        if (tsr_wimage_config(ck, &o, &mo, &prof, &kc, NULL) != TSR_OK) continue;
        tsr_wimage_need(&kc, &need);
        *(f32 ? &info->onchip_f32_bytes : &info->onchip_q8_bytes) = need.total_bytes;
    }
    tsr_checkpoint_close(ck);
    tsr_abi_write(&tsr_abi_file_info, out, &full);
    return TSR_OK;
}

int tsr_synth_file(const char *shape, const char *path, int group_size, uint64_t seed,
                   char *err, size_t errlen)
{
    tsr_err e = {0};
    int rc = TSR_OK;
    if (!shape || !path)
        rc = tsr_seterr(&e, TSR_ERR_ARG, "synth: NULL shape or path");
    else if (group_size < TSR_SYNTH_LEGACY)
        rc = tsr_seterr(&e, TSR_ERR_ARG, "%s: group size %d: 0 writes fp32, > 0 Q8_0, "
                        "TSR_SYNTH_LEGACY (-1) the legacy fp32 layout", path, group_size);
    if (rc) {
        copy_err(&e, err, errlen);
        return rc;
    }
    tsr_config cfg;
    rc = tsr_synth_shape(shape, &cfg, &e);
    if (!rc) rc = tsr_synth_write(path, &cfg, group_size, seed, &e);
    if (rc) copy_err(&e, err, errlen);
    return rc;
}

int tsr_synth_gguf_file(const char *arch, const char *shape, const char *vocab,
                        const char *path, int type, uint64_t seed, char *err, size_t errlen)
{
    tsr_err e = {0};
    int rc = TSR_OK, qwen = arch && !strcmp(arch, "qwen2");
    tsr_config cfg;
    if (!arch || !vocab || !path)
        rc = tsr_seterr(&e, TSR_ERR_ARG, "synth: NULL arch, vocab or path");
    else if (!qwen && strcmp(arch, "llama3"))
        rc = tsr_seterr(&e, TSR_ERR_ARG, "synth: architecture '%s' (want llama3 or qwen2)", arch);
    else if (type < TSR_SYNTH_F32 || type > TSR_SYNTH_Q4_0)
        rc = tsr_seterr(&e, TSR_ERR_ARG, "%s: weight type %d (want TSR_SYNTH_F32, _Q8_0, _Q4_0)",
                        path, type);
    if (!rc) rc = tsr_synth_shape(shape ? shape : qwen ? "qwen2-tiny" : "llama3-tiny", &cfg, &e);
    if (!rc && shape && strchr("0123456789", shape[0]) && qwen) {
        /* DIMxLAYERS made qwen2 */
        cfg.arch = TSR_ARCH_QWEN2;
        cfg.qkv_bias = cfg.rope_neox = 1;
    }
    if (!rc && (cfg.arch == TSR_ARCH_QWEN2) != qwen)
        rc = tsr_seterr(&e, TSR_ERR_ARG, "synth: shape %s is not of architecture %s", shape, arch);
    if (!rc) {
        static const int types[3] = { TSR_DT_F32, TSR_DT_Q8_0, TSR_DT_Q4_0 };
        rc = tsr_synth_gguf_write(path, &cfg, vocab, types[type], seed, &e);
    }
    if (rc) copy_err(&e, err, errlen);
    return rc;
}
