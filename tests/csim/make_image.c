/*
 * make_image.c - writes the input file of the C-simulation testbench
 * (tb_tessera_top.c): a model's weight image as the driver builds it, plus
 * a tokenized prompt, so the testbench itself needs nothing but the kernel
 * sources and stdio (as Vitis csim / cosim want).
 *
 * usage: tsr_csim_image MODEL.bin TOKENIZER.bin PROMPT OUT.timg [pes]
 *        (F32 validation weights, one slot, the model's seq_len, a mesh of
 *        pes PEs chosen as the emulator chooses it; pes defaults to 4 = 2x2,
 *        the stories260k synthesis profile's mesh)
 *
 * File format (all little-endian uint32 words; see tb_tessera_top.c):
 *   "TIMG" magic, version 1,
 *   n_prompt, prompt ids (n_prompt,),
 *   the CONFIGURE block (TSR_KCONFIG_WORDS,),
 *   n_chunks, then per chunk: pe, region, offset, length, n_words,
 *   payload (n_words,) - one LOAD command each, in streaming order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tokenizer.h"
#include "weight_image.h"

#define TIMG_MAGIC   0x474D4954u  /* "TIMG" */
#define TIMG_VERSION 1u
#define MAX_PROMPT   1024

/* ------------------------------------------------------------------------ */
/* Output                                                                     */

static int put(FILE *f, const uint32_t *w, size_t n)
{
    return fwrite(w, sizeof *w, n, f) == n ? 0 : -1;
}

static int write_image(const char *path, const int *prompt, int n_prompt, const tsr_wimage *img)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint32_t head[3] = { TIMG_MAGIC, TIMG_VERSION, (uint32_t)n_prompt };
    int bad = put(f, head, 3);
    for (int i = 0; i < n_prompt && !bad; i++) {
        uint32_t t = (uint32_t)prompt[i];
        bad = put(f, &t, 1);
    }
    uint32_t cfg[TSR_KCONFIG_WORDS];
    memcpy(cfg, &img->cfg, sizeof cfg);
    if (!bad) bad = put(f, cfg, TSR_KCONFIG_WORDS);
    uint32_t nc = (uint32_t)img->n_chunks;
    if (!bad) bad = put(f, &nc, 1);
    for (int i = 0; i < img->n_chunks && !bad; i++) {
        const tsr_wchunk *c = &img->chunks[i];
        uint32_t h[5] = { c->pe, c->region, c->offset, c->length, c->nbytes / 4u };
        bad = put(f, h, 5) || put(f, c->data, c->nbytes / 4u);
    }
    if (fclose(f) != 0) bad = -1;
    return bad;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                       */

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: %s MODEL.bin TOKENIZER.bin PROMPT OUT.timg [pes]\n", argv[0]);
        return 2;
    }
    int pes = argc == 6 ? atoi(argv[5]) : 4;
    tsr_err e = { 0, "" };
    tsr_checkpoint *m = NULL;
    tsr_tokenizer *tok = NULL;
    tsr_wimage img;
    memset(&img, 0, sizeof img);
    int prompt[MAX_PROMPT], n_prompt = 0, rc = 1;

    if (tsr_checkpoint_open(argv[1], &m, &e) ||
        tsr_tokenizer_load(argv[2], m->cfg.vocab_size, &tok, &e) ||
        tsr_tokenizer_encode(tok, argv[3], 1, 0, prompt, MAX_PROMPT, &n_prompt, &e))
        goto fail;
    tsr_load_opts o;
    memset(&o, 0, sizeof o);
    o.weights_f32 = 1;
    o.n_slots = 1;
    tsr_kconfig kc;
    if (tsr_wimage_config(m, &o, pes, &kc, &e) || tsr_wimage_build(m, &kc, &img, &e))
        goto fail;
    if (write_image(argv[4], prompt, n_prompt, &img)) {
        fprintf(stderr, "tsr_csim_image: %s: cannot write\n", argv[4]);
        goto out;
    }
    printf("tsr_csim_image: %s: %d prompt tokens, %d chunks, %u x %u mesh, F32\n", argv[4],
           n_prompt, img.n_chunks, kc.mesh_rows, kc.mesh_cols);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "tsr_csim_image: %s\n", e.msg);
out:
    tsr_wimage_free(&img);
    tsr_tokenizer_free(tok);
    tsr_checkpoint_close(m);
    return rc;
}
