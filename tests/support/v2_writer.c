/* v2_writer.c - llama2.c export.py version2_export in C (see v2_writer.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "v2_writer.h"

/* One tensor: every element's fp32 value (tsr_tensor_get), its int8 values
 * in groups of G, then the groups' scales. */
static int put_q80(FILE *f, const tsr_tensor *t, int G)
{
    size_t n = (size_t)t->rows * (size_t)t->cols, ng = n / (size_t)G;
    if (n % (size_t)G) return -1;
    int8_t *q = malloc(n);
    float *s = malloc(ng * sizeof *s);
    if (!q || !s) { free(q); free(s); return -1; }
    for (size_t g = 0; g < ng; g++) {
        float wmax = 0.0f;
        for (int j = 0; j < G; j++) {
            float a = fabsf(tsr_tensor_get(t, g * (size_t)G + (size_t)j));
            if (a > wmax) wmax = a;
        }
        float scale = wmax / 127.0f;
        s[g] = scale;
        for (int j = 0; j < G; j++)   /* rintf: round half to even, as torch.round */
            q[g * (size_t)G + (size_t)j] =
                (int8_t)rintf(tsr_tensor_get(t, g * (size_t)G + (size_t)j) / scale);
    }
    int rc = fwrite(q, 1, n, f) == n && fwrite(s, sizeof *s, ng, f) == ng ? 0 : -1;
    free(q);
    free(s);
    return rc;
}

static int put_f32(FILE *f, const tsr_tensor *t)
{
    size_t n = (size_t)t->rows * (size_t)t->cols;
    for (size_t i = 0; i < n; i++) {
        float v = tsr_tensor_get(t, i);
        if (fwrite(&v, 4, 1, f) != 1) return -1;
    }
    return 0;
}

int v2_write(const tsr_checkpoint *m, int G, const char *path)
{
    const tsr_config *c = &m->cfg;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned char hdr[TSR_LLAMA2C_HEADER] = { 0 };
    uint32_t magic = TSR_LLAMA2C_MAGIC;
    int32_t v[10] = { 2, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                      c->vocab_size, c->seq_len, 0, G };
    memcpy(hdr, &magic, 4);
    memcpy(hdr + 4, v, 8 * 4);                /* version, then the 7 fields */
    hdr[36] = (unsigned char)(c->shared_classifier ? 1 : 0);
    memcpy(hdr + 37, &v[9], 4);               /* group_size */
    int rc = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr ? 0 : -1;
    int L = c->n_layers;
    for (int l = 0; l < L && !rc; l++) rc = put_f32(f, &m->rms_att[l]);
    for (int l = 0; l < L && !rc; l++) rc = put_f32(f, &m->rms_ffn[l]);
    if (!rc) rc = put_f32(f, &m->rms_final);
    if (!rc) rc = put_q80(f, &m->tok_embedding, G);
    const tsr_tensor *per[7] = { m->wq, m->wk, m->wv, m->wo, m->w1, m->w2, m->w3 };
    for (int k = 0; k < 7 && !rc; k++)
        for (int l = 0; l < L && !rc; l++) rc = put_q80(f, &per[k][l], G);
    if (!rc && !c->shared_classifier) rc = put_q80(f, &m->wcls, G);
    if (fclose(f) != 0) rc = -1;
    if (rc) remove(path);
    return rc;
}
