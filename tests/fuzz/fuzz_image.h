/* fuzz_image.h - shared by the loader fuzzers: the weight image of a small
 * model streamed one PE at a time (tsr_wstream) must be the whole image
 * (tsr_wimage_build) chunk for chunk, with its size and hash. */
#ifndef TSR_FUZZ_IMAGE_H
#define TSR_FUZZ_IMAGE_H

#include <assert.h>
#include <string.h>

#include "model.h"
#include "weight_image.h"

/* Both images of ck for kc; a failure to build must fail both alike. */
static inline void fuzz_image_compare(const tsr_checkpoint *ck, const tsr_kconfig *kc)
{
    tsr_err e = { 0 };
    tsr_wimage img;
    tsr_wstream ws;
    int rw = tsr_wimage_build(ck, kc, &img, &e), rs = tsr_wstream_open(ck, kc, &ws, &e);
    if (rw != TSR_OK || rs != TSR_OK) {
        assert(e.msg[0] && !strchr(e.msg, '\n'));
        if (rw == TSR_OK) tsr_wimage_free(&img);
        if (rs == TSR_OK) tsr_wstream_close(&ws);
        return;
    }
    assert(ws.bytes == img.bytes);
    tsr_wchunk ch;
    int i = 0, done = 0;
    for (;; i++) {
        int rc = tsr_wstream_next(&ws, &ch, &done, &e);
        assert(rc == TSR_OK);
        if (done) break;
        assert(i < img.n_chunks);
        const tsr_wchunk *w = &img.chunks[i];
        assert(ch.pe == w->pe && ch.region == w->region && ch.offset == w->offset &&
               ch.length == w->length && ch.nbytes == w->nbytes);
        assert(!memcmp(ch.data, w->data, ch.nbytes));
    }
    assert(i == img.n_chunks && ws.hash == img.hash);
    tsr_wstream_close(&ws);
    tsr_wimage_free(&img);
}

/* The emulator's profile on 4 PEs (its default columns and KV split):
 * the file's formats, Q8_0 at group 8, and F32. */
static inline void fuzz_image_check(const tsr_checkpoint *ck)
{
    const tsr_config *c = &ck->cfg;
    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    tsr_mesh_opts mo = { .pes = 4 };
    tsr_load_opts o[3] = {
        { .weights = TSR_WEIGHTS_FILE },
        { .weights = TSR_WEIGHTS_Q8, .group_size = 8 },
        { .weights_f32 = 1, .group_size = 8 },
    };
    for (int k = 0; k < 3; k++) {
        tsr_kconfig kc;
        tsr_err e = { 0 };
        o[k].seq_len = c->seq_len < 16 ? c->seq_len : 16;
        o[k].n_slots = 1;
        if (tsr_wimage_config(ck, &o[k], &mo, &prof, &kc, &e) != TSR_OK) continue;
        fuzz_image_compare(ck, &kc);
    }
}

#endif
