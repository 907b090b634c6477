/*
 * llama_greedy.c - llama.cpp's side of the parity check (parity.sh): feed
 * token ids to a GGUF model through llama.h, greedy-decode N tokens and
 * print their ids, and write the logits after the first token alone
 * (vocab fp32) to a file.  Built by hand against a llama.cpp build outside
 * this tree (never by make; docs/architecture.md "Against llama.cpp"):
 *
 *   cc -O2 -o llama_greedy llama_greedy.c -I$LLAMA/include -I$LLAMA/ggml/include \
 *      -L$LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$LLAMA/build/bin
 *
 * usage: llama_greedy MODEL.gguf N ID,ID,... LOGITS.bin
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: llama_greedy MODEL.gguf N ID,ID,... LOGITS.bin\n");
        return 2;
    }
    int n_gen = atoi(argv[2]), toks[512], n = 0;
    for (char *p = strtok(argv[3], ","); p && n < 512; p = strtok(NULL, ",")) toks[n++] = atoi(p);
    llama_backend_init();
    struct llama_model *m = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!m) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    cp.n_threads = cp.n_threads_batch = 2;
    struct llama_context *ctx = llama_init_from_model(m, cp);
    if (!ctx) return 1;
    int V = llama_vocab_n_tokens(llama_model_get_vocab(m));
    /* the first token alone: its logits */
    if (llama_decode(ctx, llama_batch_get_one(toks, 1))) return 1;
    FILE *f = fopen(argv[4], "wb");
    if (!f || fwrite(llama_get_logits_ith(ctx, -1), 4, (size_t)V, f) != (size_t)V) return 1;
    fclose(f);
    if (n > 1 && llama_decode(ctx, llama_batch_get_one(toks + 1, n - 1))) return 1;
    for (int i = 0; i < n_gen; i++) {
        const float *lg = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int j = 1; j < V; j++)
            if (lg[j] > lg[best]) best = j;   /* the first maximum, as tessera's */
        printf("%d%s", best, i + 1 < n_gen ? "," : "\n");
        if (llama_decode(ctx, llama_batch_get_one(&best, 1))) return 1;
    }
    llama_free(ctx);
    llama_model_free(m);
    return 0;
}
