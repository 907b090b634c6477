/*
 * emu_ref.c - the emulator's answer for the C-simulation testbench
 * (tb_tessera_top.c): the same model file and prompt decoded greedily by an
 * emulator built with the same synthesis profile (make's
 * BUILD-stories15m/, the library build-stories15m/tessera links), through
 * the public API only.
 *
 * usage: tsr_csim_emuref MODEL.bin TOKENIZER.bin PROMPT N K OUT.tokens OUT.logits [DEVICE]
 *        OUT.tokens: the prompt's ids (BOS first) and the N decoded ids,
 *        one decimal a line (the format of llama2.c's reference ids, which
 *        tb_tessera_top reads); N tokens exactly (BOS/EOS do not stop it).
 *        OUT.logits: K x vocab fp32 values: the N tokens are generated in K
 *        calls (of N * (i + 1) / K - N * i / K tokens, as the testbench's
 *        DECODE commands), and after each the logits of its last forward
 *        pass (the one that gave its last token), as READ_LOGITS returns
 *        them.
 *        DEVICE: the device spec (default "emu": the profile's default
 *        mesh), e.g. emu:pes=4,cols=1,kvsplit=1 for the mesh the
 *        testbench image of stories260k is placed on.
 *
 * The device is the emulator at its profile's default mesh (emu), the
 * model placed as tsr_model_load places it: Q8_0 at group 32, one slot,
 * the model's seq_len - as tests/csim/make_image.c writes the image.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

int main(int argc, char **argv)
{
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: %s MODEL.bin TOKENIZER.bin PROMPT N K OUT.tokens OUT.logits "
                "[DEVICE]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[4]), checks = atoi(argv[5]);
    if (n < 1 || checks < 1 || checks > n) {
        fprintf(stderr, "tsr_csim_emuref: N %s and K %s: 1 <= K <= N\n", argv[4], argv[5]);
        return 2;
    }
    tsr_device *dev = NULL;
    tsr_model *m = NULL;
    tsr_seq *s = NULL;
    float *logits = NULL;
    int rc = 1, st;
    const char *spec = argc == 9 ? argv[8] : "emu";
    if ((st = tsr_device_open(spec, &dev)) != TSR_OK) {
        fprintf(stderr, "tsr_csim_emuref: %s: %s\n", spec, tsr_device_errmsg(dev));
        goto out;
    }
    tsr_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.tokenizer = argv[2];
    mo.n_seqs = 1;
    tsr_model_info info = { 0 };
    if ((st = tsr_model_load(dev, argv[1], &mo, &m)) != TSR_OK ||
        (st = tsr_model_get_info(m, &info)) != TSR_OK || (st = tsr_seq_open(m, &s)) != TSR_OK ||
        (st = tsr_seq_append_text(s, argv[3])) != TSR_OK)
        goto fail;
    const size_t V = (size_t)info.vocab_size;
    logits = malloc((size_t)checks * V * sizeof *logits);   /* (K, vocab) */
    if (!logits) goto out;
    for (int i = 0; i < checks; i++) {
        tsr_gen_opts g;
        memset(&g, 0, sizeof g);
        g.max_tokens = (int)((long)n * (i + 1) / checks - (long)n * i / checks);
        g.ignore_stop = 1;
        int got = 0;
        if ((st = tsr_seq_generate(s, &g, NULL, NULL, &got)) != TSR_OK) goto fail;
        if (got != g.max_tokens) {
            fprintf(stderr, "tsr_csim_emuref: %d tokens generated, not %d\n", got, g.max_tokens);
            goto out;
        }
        if ((st = tsr_seq_read_logits(s, logits + (size_t)i * V, info.vocab_size)) != TSR_OK)
            goto fail;
    }
    const int *ids;
    int len;
    if ((st = tsr_seq_tokens(s, &ids, &len)) != TSR_OK) goto fail;
    FILE *f = fopen(argv[6], "w");
    if (!f) {
        fprintf(stderr, "tsr_csim_emuref: %s: cannot write\n", argv[6]);
        goto out;
    }
    for (int i = 0; i < len; i++) fprintf(f, "%d\n", ids[i]);
    int bad = fclose(f) != 0;
    f = fopen(argv[7], "wb");
    bad |= !f || fwrite(logits, sizeof *logits, (size_t)checks * V, f) != (size_t)checks * V;
    if (f) bad |= fclose(f) != 0;
    if (bad) {
        fprintf(stderr, "tsr_csim_emuref: %s / %s: cannot write\n", argv[6], argv[7]);
        goto out;
    }
    printf("tsr_csim_emuref: %s: %d prompt + %d decoded tokens, %d x %d logits\n", argv[6],
           len - n, n, checks, info.vocab_size);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "tsr_csim_emuref: %s\n", tsr_device_errmsg(dev));
out:
    free(logits);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
    return rc;
}
