/*
 * make_image.c - writes the input file of the C-simulation testbench
 * (tb_tessera_top.c): a model's weight image as the driver builds it, the
 * CONFIGURE block as the command layer sends it, and a tokenized prompt, so
 * the testbench itself needs nothing but the kernel sources and stdio (as
 * Vitis csim / cosim want).
 *
 * usage: tsr_csim_image MODEL.bin TOKENIZER.bin PROMPT OUT.timg [pes [profile [f32|q8 [cols]]]]
 *        One slot, the model's seq_len, placed for the synthesis profile
 *        named (default stories260k, driver/profiles.c) as the driver
 *        places it on a device of that profile.  pes PEs (default 4; 0: the
 *        profile's), in the mesh columns and KV split the driver picks for
 *        the profile (tsr_wimage_config: one column and one PE per KV head
 *        for stories260k, whose sums keep run.c's order; as many as the
 *        profile takes for stories15m: 32 x 4, kv split 8).  Weights F32
 *        (validation mode) when the profile has an F32 datapath, else Q8_0
 *        at the driver's default group (32); f32 or q8 says which.  cols:
 *        the mesh columns (default: the driver's choice).
 *
 * File format (little-endian uint32 words; see tb_tessera_top.c):
 *   "TIMG" magic, version 2,
 *   n_prompt, prompt ids (n_prompt,),
 *   the CONFIGURE payload (TSR_KCONFIG_WORDS,): the tsr_kconfig integers in
 *   field order, then rope_theta and norm_eps as fp32 bit patterns,
 *   n_chunks, then per chunk: pe, region, offset, length, n_words,
 *   payload (n_words,) - one LOAD command each, in streaming order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "profiles.h"
#include "tokenizer.h"
#include "weight_image.h"
#include "kcmd.h"

#define TIMG_MAGIC   0x474D4954u  /* "TIMG" */
#define TIMG_VERSION 2u
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
    tsr_kcmd_config_words(&img->cfg, cfg);
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
    if (argc < 5 || argc > 9) {
        fprintf(stderr, "usage: %s MODEL.bin TOKENIZER.bin PROMPT OUT.timg [pes [profile "
                "[f32|q8 [cols]]]]\n", argv[0]);
        return 2;
    }
    int pes = argc >= 6 ? atoi(argv[5]) : 4;
    const char *pname = argc >= 7 ? argv[6] : "stories260k";
    const tsr_kprofile *prof = tsr_profile_find(pname);
    if (!prof || pes < 0 || (prof && pes > (int)prof->pes)) {
        fprintf(stderr, "tsr_csim_image: bad pes %d or profile '%s' (profiles: %s)\n", pes, pname,
                tsr_profile_names());
        return 2;
    }
    if (pes == 0) pes = (int)prof->pes;
    int f32 = prof->with_f32 ? 1 : 0;
    if (argc >= 8) {
        if (strcmp(argv[7], "f32") && strcmp(argv[7], "q8")) {
            fprintf(stderr, "tsr_csim_image: weights '%s': f32 or q8\n", argv[7]);
            return 2;
        }
        f32 = !strcmp(argv[7], "f32");
    }
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
    o.weights_f32 = f32;
    o.n_slots = 1;
    tsr_mesh_opts mesh = { .pes = pes, .cols = argc >= 9 ? atoi(argv[8]) : 0, .kv_split = 0 };
    tsr_kconfig kc;
    if (tsr_wimage_config(m, &o, &mesh, prof, &kc, &e) ||
        tsr_wimage_check_profile(&kc, prof, pname, &e) || tsr_wimage_build(m, &kc, &img, &e))
        goto fail;
    if (write_image(argv[4], prompt, n_prompt, &img)) {
        fprintf(stderr, "tsr_csim_image: %s: cannot write\n", argv[4]);
        goto out;
    }
    printf("tsr_csim_image: %s: %d prompt tokens, %d chunks (%llu bytes), %u x %u mesh, kv split "
           "%u, %s, profile %s\n", argv[4], n_prompt, img.n_chunks, (unsigned long long)img.bytes,
           kc.mesh_rows, kc.mesh_cols, kc.kv_split, f32 ? "F32" : "Q8_0", pname);
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
