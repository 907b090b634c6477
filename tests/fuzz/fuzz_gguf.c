/*
 * fuzz_gguf.c - libFuzzer harness for the GGUF loader (driver/format_gguf.c):
 * the input is a whole file, opened from memory.  What opens is walked: the
 * non-finite weight check, every tensor's first row, a small model's weight
 * image streamed and whole (fuzz_image.h), and the tokenizer from
 * the metadata (encode a text, every piece).  Every failure must be a
 * status with a one-line message, never a crash, leak or undefined
 * behaviour.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_image.h"
#include "model.h"
#include "tokenizer.h"

static void walk(const tsr_checkpoint *ck)
{
    const tsr_config *c = &ck->cfg;
    int widest = c->dim > c->hidden_dim ? c->dim : c->hidden_dim;
    float *row = malloc((size_t)widest * sizeof *row);
    if (!row) abort();
    tsr_tensor_row(&ck->tok_embedding, c->vocab_size - 1, row);
    tsr_tensor_row(&ck->wcls, 0, row);
    for (int l = 0; l < c->n_layers; l++) {
        tsr_tensor_row(&ck->w2[l], ck->w2[l].rows - 1, row);
        tsr_tensor_row(&ck->wk[l], ck->wk[l].rows - 1, row);
    }
    free(row);
    tsr_err e = {0};
    int finite = tsr_checkpoint_check_finite(ck, &e) == TSR_OK;
    if (!finite) assert(e.msg[0] && !strchr(e.msg, '\n'));
    /* small models: the image streamed PE by PE is the whole image */
    if (finite && tsr_checkpoint_param_count(ck) <= 100000) fuzz_image_check(ck);
    const tsr_tokenizer *t = ck->tok;
    assert(t && tsr_tokenizer_vocab_size(t) == c->vocab_size);
    int toks[64], n = 0;
    if (tsr_tokenizer_encode(t, "Once upon a time \xe2\x96\x81 <0x41>", 1, 1, toks, 64, &n, &e) ==
        TSR_OK)
        for (int i = 1; i < n; i++) {
            size_t len;
            assert(toks[i] >= 0 && toks[i] < c->vocab_size);
            (void)tsr_tokenizer_piece(t, toks[i - 1], toks[i], &len);
        }
    for (int id = 0; id < c->vocab_size && id < 4096; id++) {
        size_t len;
        (void)tsr_tokenizer_piece(t, 1, id, &len);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsr_checkpoint *ck = NULL;
    tsr_err e = {0};
    int rc = tsr_checkpoint_open_memory(data, size, "fuzz.gguf", &ck, &e);
    if (rc != TSR_OK) {
        assert(!ck && e.msg[0] && !strchr(e.msg, '\n'));
        return 0;
    }
    walk(ck);
    tsr_checkpoint_close(ck);
    return 0;
}
