/*
 * fuzz_llama2c.c - libFuzzer harness for the llama2.c checkpoint loader
 * (driver/format_llama2c.c): the input is a whole file, opened from memory
 * and through a path (pread + mmap).  What opens is then walked the way a
 * load walks it: the non-finite weight check, every tensor's first and last
 * row, and for small models the weight image (whose Q8_0 quantizer met
 * NaN weights before the check existed), streamed one PE at a time and
 * whole, which must agree chunk for chunk.  Every failure must be a status
 * with a one-line message, never a crash, leak or undefined behaviour.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_image.h"
#include "fuzz_util.h"
#include "model.h"
#include "weight_image.h"

/* Rows of t, as a load reads them. */
__attribute__((noinline)) static void walk_tensor(const tsr_tensor *t, float *row)
{
    tsr_tensor_row(t, 0, row);
    tsr_tensor_row(t, t->rows - 1, row);
}

static void walk(const tsr_checkpoint *ck)
{
    const tsr_config *c = &ck->cfg;
    int widest = c->dim > c->hidden_dim ? c->dim : c->hidden_dim;
    float *row = malloc((size_t)widest * sizeof *row);
    if (!row) abort();
    walk_tensor(&ck->tok_embedding, row);
    walk_tensor(&ck->rms_final, row);
    walk_tensor(&ck->wcls, row);
    for (int l = 0; l < c->n_layers; l++) {
        const tsr_tensor *ts[9] = { &ck->rms_att[l], &ck->wq[l], &ck->wk[l], &ck->wv[l],
                                    &ck->wo[l], &ck->rms_ffn[l], &ck->w1[l], &ck->w2[l],
                                    &ck->w3[l] };
        for (int k = 0; k < 9; k++) walk_tensor(ts[k], row);
    }
    free(row);
    (void)tsr_checkpoint_param_count(ck);
    tsr_err e = {0};
    if (tsr_checkpoint_check_finite(ck, &e) != TSR_OK) {
        assert(e.msg[0] && !strchr(e.msg, '\n'));
        return;
    }
    if (tsr_checkpoint_param_count(ck) > 100000) return;   /* image build: small models */
    fuzz_image_check(ck);   /* whole and streamed, chunk for chunk */
}

static void one(int rc, tsr_checkpoint *ck, const tsr_err *e)
{
    if (rc != TSR_OK) {
        assert(!ck && e->msg[0] && !strchr(e->msg, '\n'));
        return;
    }
    walk(ck);
    tsr_checkpoint_close(ck);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 4 && !memcmp(data, "GGUF", 4)) return 0;   /* fuzz_gguf's */
    tsr_checkpoint *ck = NULL;
    tsr_err e = {0};
    int rc = tsr_checkpoint_open_memory(data, size, "fuzz", &ck, &e);
    one(rc, ck, &e);
    const char *path = fuzz_file(data, size);
    if (path) {
        ck = NULL;
        memset(&e, 0, sizeof e);
        rc = tsr_checkpoint_open(path, &ck, &e);
        one(rc, ck, &e);
    }
    return 0;
}
