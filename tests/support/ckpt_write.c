/* ckpt_write.c - small llama2.c checkpoints (ckpt_write.h). */
#include <stdint.h>
#include <stdio.h>

#include "ckpt_write.h"
#include "model.h"

int tsr_test_synth(const char *spec, int group, const char *path)
{
    tsr_config c;
    tsr_err e = {0};
    if (tsr_synth_shape(spec, &c, &e) || tsr_synth_write(path, &c, group, 7, &e)) {
        fprintf(stderr, "tsr_test_synth: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static void put_t(FILE *f, const tsr_tensor *t)
{
    fwrite(t->f, sizeof(float), (size_t)t->rows * (size_t)t->cols, f);
}

int tsr_test_write_legacy(const char *v1_path, const char *path)
{
    tsr_checkpoint *m = NULL;
    tsr_err e = {0};
    if (tsr_checkpoint_open(v1_path, &m, &e)) {
        fprintf(stderr, "tsr_test_write_legacy: %s\n", e.msg);
        return -1;
    }
    const tsr_config *c = &m->cfg;
    FILE *f = fopen(path, "wb");
    if (!f) {
        tsr_checkpoint_close(m);
        perror(path);
        return -1;
    }
    int32_t hdr[7] = { c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                       c->shared_classifier ? c->vocab_size : -c->vocab_size, c->seq_len };
    fwrite(hdr, sizeof hdr, 1, f);
    put_t(f, &m->tok_embedding);
    const tsr_tensor *kinds[9] = { m->rms_att, m->wq, m->wk, m->wv, m->wo, m->rms_ffn,
                                   m->w1, m->w2, m->w3 };
    for (int k = 0; k < 9; k++)
        for (int l = 0; l < c->n_layers; l++) put_t(f, &kinds[k][l]);
    put_t(f, &m->rms_final);
    size_t rope = (size_t)c->seq_len * (size_t)(c->dim / c->n_heads);   /* real + imag */
    for (size_t i = 0; i < rope; i++) { float z = 0.5f; fwrite(&z, 4, 1, f); }
    if (!c->shared_classifier) put_t(f, &m->wcls);
    tsr_checkpoint_close(m);
    return fclose(f) == 0 ? 0 : -1;
}
