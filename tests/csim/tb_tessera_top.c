/*
 * tb_tessera_top.c - C-simulation testbench of the synthesis top
 * tessera_top (kernels/tsr_kernel.c), for Vitis csim / cosim and for gcc.
 *
 *   IMAGE (make_image.c) --> CONFIGURE, LOAD x n_chunks --> PREFILL prompt
 *     --> DECODE greedy --> compare token ids with REF (llama2.c run.c's ids,
 *     BOS first, one decimal a line)  --> exit 0 on a match, 1 otherwise
 *
 * usage: tb_tessera_top IMAGE.timg REF.tokens [max_new]
 *        max_new (default: all of REF) caps the decoded tokens, so cosim can
 *        check a few tokens through the RTL in reasonable time.
 *
 * Build: the kernel sources with -DTSR_CSIM (the synthesis view of the
 * device state, a static PE array inside tessera_top, without
 * __SYNTHESIS__) and the profile header, e.g.
 *   -DTSR_PROFILE_HEADER='"profiles/profile_stories260k.h"'.
 * The testbench only calls tessera_top, as the host does through XRT.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_kernel.h"

#define TIMG_MAGIC   0x474D4954u  /* "TIMG" */
#define TIMG_VERSION 1u
#define TB_MAX_REF   4096

/* ------------------------------------------------------------------------ */
/* Input                                                                      */

/* Whole file into a malloc'd word array; *n gets the word count. */
static uint32_t *read_words(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1u << 16, len = 0, got;
    uint32_t *w = malloc(cap * sizeof *w);   /* (cap,) */
    while (w && (got = fread(w + len, sizeof *w, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint32_t *g = realloc(w, 2 * cap * sizeof *w);
            if (!g) { free(w); w = NULL; break; }
            w = g;
            cap *= 2;
        }
    }
    fclose(f);
    *n = len;
    return w;
}

/* REF: decimal ids, whitespace separated; returns the count or -1. */
static int read_ref(const char *path, int32_t *ids, int max)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0;
    long v;
    while (n < max && fscanf(f, "%ld", &v) == 1) ids[n++] = (int32_t)v;
    fclose(f);
    return n;
}

/* ------------------------------------------------------------------------ */
/* Kernel calls                                                               */

static const uint32_t no_cancel = 0; /* the m_axi cancel word: never set */

static int run(uint32_t op, uint32_t slot, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
               const uint32_t *in, uint32_t *out)
{
    uint32_t cmd[TSR_CMD_WORDS] = { op, slot, a0, a1, a2, a3, 0, 0 };
    return tessera_top(cmd, in, out, &no_cancel);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                       */

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s IMAGE.timg REF.tokens [max_new]\n", argv[0]);
        return 2;
    }
    size_t nw = 0;
    uint32_t *w = read_words(argv[1], &nw);  /* (nw,) the image file */
    static int32_t ref[TB_MAX_REF];
    int n_ref = read_ref(argv[2], ref, TB_MAX_REF);
    if (!w || nw < 3 || w[0] != TIMG_MAGIC || w[1] != TIMG_VERSION) {
        fprintf(stderr, "tb_tessera_top: %s: not a version %u TIMG image\n", argv[1], TIMG_VERSION);
        free(w);
        return 1;
    }
    if (n_ref < 2) {
        fprintf(stderr, "tb_tessera_top: %s: no reference token ids\n", argv[2]);
        free(w);
        return 1;
    }

    /* the prompt, then the CONFIGURE block */
    size_t at = 2;
    uint32_t n_prompt = w[at++];
    const uint32_t *prompt = w + at;         /* (n_prompt,) */
    at += n_prompt;
    if (at + TSR_KCONFIG_WORDS + 1 > nw || n_prompt == 0 || (int)n_prompt >= n_ref) {
        fprintf(stderr, "tb_tessera_top: %s: truncated header\n", argv[1]);
        free(w);
        return 1;
    }
    int fails = 0;
    for (uint32_t i = 0; i < n_prompt; i++)
        if ((int32_t)prompt[i] != ref[i]) {
            fprintf(stderr, "tb_tessera_top: prompt token %u is %u, reference %d\n", i, prompt[i],
                    ref[i]);
            fails++;
        }
    uint32_t fit[TSR_KFIT_WORDS];
    int rc = run(TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, w + at, fit);
    at += TSR_KCONFIG_WORDS;
    if (rc != TSR_K_OK) {
        fprintf(stderr, "tb_tessera_top: CONFIGURE: status %d (needs %u int8 bytes / %u fp32 words "
                "per PE, profile %s has %u / %u)\n", rc, fit[1], fit[2], TSR_PROFILE_NAME,
                fit[4], fit[5]);
        free(w);
        return 1;
    }

    /* LOAD every chunk */
    uint32_t n_chunks = w[at++];
    for (uint32_t c = 0; c < n_chunks; c++) {
        if (at + 5 > nw || at + 5 + w[at + 4] > nw) {
            fprintf(stderr, "tb_tessera_top: %s: truncated at chunk %u\n", argv[1], c);
            free(w);
            return 1;
        }
        const uint32_t *h = w + at;          /* pe, region, offset, length, n_words */
        rc = run(TSR_OP_LOAD, 0, h[0], h[1], h[2], h[3], h + 5, NULL);
        if (rc != TSR_K_OK) {
            fprintf(stderr, "tb_tessera_top: LOAD chunk %u (pe %u region %u): status %d\n", c, h[0],
                    h[1], rc);
            free(w);
            return 1;
        }
        at += 5 + h[4];
    }

    /* PREFILL the prompt, DECODE greedy (temperature 0) */
    rc = run(TSR_OP_PREFILL, 0, n_prompt, 0, 0, 0, prompt, NULL);
    uint32_t want = (uint32_t)n_ref - n_prompt;
    if (argc == 4 && (uint32_t)atoi(argv[3]) < want) want = (uint32_t)atoi(argv[3]);
    uint32_t *out = calloc(1u + want, sizeof *out); /* (1 + want,) count, then ids */
    if (rc == TSR_K_OK && out) {
        float zero = 0.0f, one = 1.0f;
        uint32_t t0, p1;
        memcpy(&t0, &zero, 4);
        memcpy(&p1, &one, 4);
        rc = run(TSR_OP_DECODE, 0, want, t0, p1, 0, NULL, out);
    }
    if (rc != TSR_K_OK || !out) {
        fprintf(stderr, "tb_tessera_top: PREFILL/DECODE: status %d\n", rc);
        free(out);
        free(w);
        return 1;
    }
    if (out[0] != want) {
        fprintf(stderr, "tb_tessera_top: decoded %u tokens, expected %u\n", out[0], want);
        fails++;
    }
    for (uint32_t i = 0; i < out[0] && i < want; i++)
        if ((int32_t)out[1 + i] != ref[n_prompt + i]) {
            fprintf(stderr, "tb_tessera_top: token %u (position %u) is %u, reference %d\n", i,
                    n_prompt + i, out[1 + i], ref[n_prompt + i]);
            if (++fails >= 5) break;
        }
    if (fails == 0)
        printf("tb_tessera_top: PASS: %u prompt + %u decoded tokens match the reference "
               "(profile %s)\n", n_prompt, want, TSR_PROFILE_NAME);
    else
        printf("tb_tessera_top: FAIL: %d mismatch(es)\n", fails);
    free(out);
    free(w);
    return fails ? 1 : 0;
}
