/*
 * tsr_greedy.c - tessera's side of the parity check (parity.sh): the same
 * as llama_greedy.c through libtessera's public API on the emulator.
 *
 *   cc -O2 -o tsr_greedy tsr_greedy.c -Idriver/include build/libtessera.a \
 *      -lxxhash -lnuma -lpthread -lm -lxrt_coreutil -Wl,--no-as-needed -lxrt_noop
 *
 * usage: tsr_greedy MODEL.gguf N ID,ID,... LOGITS.bin F32(0|1) [PES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera.h"

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: tsr_greedy MODEL.gguf N ID,ID,... LOGITS.bin F32 [PES]\n");
        return 2;
    }
    int n_gen = atoi(argv[2]), toks[512], n = 0;
    for (char *p = strtok(argv[3], ","); p && n < 512; p = strtok(NULL, ",")) toks[n++] = atoi(p);
    char spec[64];
    snprintf(spec, sizeof spec, "emu:pes=%s,threads=2", argc > 6 ? argv[6] : "16");
    tsr_device *dev = NULL;
    tsr_model *m = NULL;
    tsr_seq *s = NULL;
    if (tsr_device_open(spec, &dev)) return 1;
    tsr_model_opts o = { .weights_f32 = atoi(argv[5]), .seq_len = 256, .n_seqs = 1 };
    if (tsr_model_load(dev, argv[1], &o, &m)) {
        fprintf(stderr, "%s\n", tsr_device_errmsg(dev));
        return 1;
    }
    tsr_model_info mi = { 0 };
    if (tsr_model_get_info(m, &mi)) return 1;
    float *lg = malloc((size_t)mi.vocab_size * sizeof *lg);
    tsr_gen_opts one = { .max_tokens = 1, .ignore_stop = 1 };
    if (!lg || tsr_seq_open(m, &s) || tsr_seq_append_tokens(s, toks, 1) ||
        tsr_seq_generate(s, &one, NULL, NULL, NULL) || tsr_seq_read_logits(s, lg, mi.vocab_size))
        return 1;
    FILE *f = fopen(argv[4], "wb");
    if (!f || fwrite(lg, 4, (size_t)mi.vocab_size, f) != (size_t)mi.vocab_size) return 1;
    fclose(f);
    tsr_seq_close(s);
    tsr_gen_opts go = { .max_tokens = n_gen, .ignore_stop = 1 };
    const int *t;
    int nt;
    if (tsr_seq_open(m, &s) || tsr_seq_append_tokens(s, toks, n) ||
        tsr_seq_generate(s, &go, NULL, NULL, NULL) || tsr_seq_tokens(s, &t, &nt))
        return 1;
    for (int i = n; i < nt; i++) printf("%d%s", t[i], i + 1 < nt ? "," : "\n");
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
    free(lg);
    return 0;
}
