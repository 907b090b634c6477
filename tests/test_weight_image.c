/*
 * test_weight_image.c - the weight image streamed one PE at a time
 * (tsr_wstream, driver/weight_image.c) against the whole image
 * (tsr_wimage_build, built matrix by matrix): chunk for chunk the same
 * headers and payload bytes, the same size and hash, for llama2.c fp32
 * and v2 files (group 4, and group 64 whose groups cross w2's rows), GGUF
 * F32, F16, Q8_0 and Q4_0 files (also opened from misaligned memory), on
 * several meshes, in the file's own formats, Q8_0 at other groups, Q4_0
 * and F32; and a load lets the file go and keeps the resident-image check.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "model.h"
#include "tessera.h"
#include "test_util.h"
#include "v2_writer.h"
#include "weight_image.h"

/* Every chunk of the stream equals the whole image's; the size and hash
 * too, and again after a rewind. */
static void stream_equals_whole(const tsr_checkpoint *m, const tsr_kconfig *kc)
{
    tsr_wimage img;
    tsr_wstream ws;
    tsr_err e = { 0 };
    assert_int_equal(tsr_wimage_build(m, kc, &img, &e), TSR_OK);
    assert_int_equal(tsr_wstream_open(m, kc, &ws, &e), TSR_OK);
    assert_true(ws.bytes == img.bytes);
    for (int pass = 0; pass < 2; pass++) {
        int i = 0, done = 0;
        tsr_wchunk ch;
        for (;; i++) {
            assert_int_equal(tsr_wstream_next(&ws, &ch, &done, &e), TSR_OK);
            if (done) break;
            assert_true(i < img.n_chunks);
            const tsr_wchunk *w = &img.chunks[i];
            assert_int_equal(ch.pe, w->pe);
            assert_int_equal(ch.region, w->region);
            assert_int_equal(ch.offset, w->offset);
            assert_int_equal(ch.length, w->length);
            assert_int_equal(ch.nbytes, w->nbytes);
            assert_memory_equal(ch.data, w->data, ch.nbytes);
        }
        assert_int_equal(i, img.n_chunks);
        assert_true(ws.hash == img.hash);
        tsr_wstream_rewind(&ws);
    }
    tsr_wstream_close(&ws);
    tsr_wimage_free(&img);
}

/* The meshes: PEs and columns (0: the profile's default), KV split 0. */
static const struct { int pes, cols; } meshes[] = {
    { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 2 }, { 8, 4 }, { 16, 0 },
};

/* How the weights go on chip: the file's, Q8_0 at groups 8 and 32,
 * Q4_0, F32. */
static const tsr_load_opts formats[] = {
    { .weights = TSR_WEIGHTS_FILE },
    { .weights = TSR_WEIGHTS_Q8, .group_size = 8 },
    { .weights = TSR_WEIGHTS_Q8, .group_size = 32 },
    { .weights = TSR_WEIGHTS_Q4 },
    { .weights_f32 = 1 },
};

/* Every mesh and format that m's shape and the emulator's profile take;
 * *built counts the configurations compared, *q4 those with Q4_0 tiles. */
static void all_placements(const tsr_checkpoint *m, int *built, int *q4)
{
    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
        for (size_t k = 0; k < sizeof meshes / sizeof meshes[0]; k++) {
            tsr_load_opts o = formats[f];
            o.seq_len = 16;
            o.n_slots = 1;
            tsr_mesh_opts mo = { .pes = meshes[k].pes, .cols = meshes[k].cols };
            tsr_kconfig kc;
            tsr_err e = { 0 };
            if (tsr_wimage_config(m, &o, &mo, &prof, &kc, &e) != TSR_OK) continue;
            if (tsr_wimage_check_profile(&kc, &prof, "generic", &e) != TSR_OK) continue;
            stream_equals_whole(m, &kc);
            ++*built;
            if (kc.q4_kinds) ++*q4;
        }
}

static void check_file(const char *path, int want_q4)
{
    tsr_checkpoint *m = NULL;
    tsr_err e = { 0 };
    assert_int_equal(tsr_checkpoint_open(path, &m, &e), TSR_OK);
    int built = 0, q4 = 0;
    all_placements(m, &built, &q4);
    assert_true(built >= 20);   /* most of the 30 placements fit the 260K shape */
    if (want_q4) assert_true(q4 > 0);
    tsr_checkpoint_close(m);
}

static void llama2c_fp32(void **state)
{
    (void)state;
    check_file(SHARED_MODEL("stories260K.bin"), 1);
}

/* v2 files written from stories260K.bin: group 4 (every tensor's groups in
 * whole rows), group 64 (w2's rows of 172 are crossed by its groups, so
 * that kind is re-quantized; the rest copied). */
static void llama2c_v2(void **state)
{
    (void)state;
    tsr_checkpoint *f = NULL;
    assert_int_equal(tsr_checkpoint_open(SHARED_MODEL("stories260K.bin"), &f, NULL), TSR_OK);
    const int groups[] = { 4, 64 };
    for (int i = 0; i < 2; i++) {
        char path[] = "/tmp/tsr_wimg_v2_XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(v2_write(f, groups[i], path), 0);
        tsr_checkpoint *m = NULL;
        assert_int_equal(tsr_checkpoint_open(path, &m, NULL), TSR_OK);
        assert_int_equal(m->cfg.group_size, groups[i]);
        if (groups[i] == 64) assert_false(m->cfg.kinds_q8 & (1u << TSR_KIND_W2));
        else assert_true(m->cfg.kinds_q8 & (1u << TSR_KIND_W2));
        int built = 0, q4 = 0;
        all_placements(m, &built, &q4);
        assert_true(built >= 20);
        assert_true(q4 > 0);
        tsr_checkpoint_close(m);
        unlink(path);
    }
    tsr_checkpoint_close(f);
}

static void gguf_types(void **state)
{
    (void)state;
    check_file(SHARED_MODEL("stories260K-f32.gguf"), 1);
    check_file(SHARED_MODEL("stories260K-f16.gguf"), 1);
    check_file(SHARED_MODEL("stories260K-q8_0.gguf"), 1);
    check_file(SHARED_MODEL("stories260K-q4_0.gguf"), 1);
}

/* A GGUF file read into memory at an odd address: the blocks and halves
 * are views at any alignment, the F32 norms copies; the image is the
 * aligned file's, byte for byte. */
static void gguf_misaligned(void **state)
{
    (void)state;
    const char *names[] = { "stories260K-q8_0.gguf", "stories260K-q4_0.gguf",
                            "stories260K-f16.gguf" };
    for (int i = 0; i < 3; i++) {
        const char *path = SHARED_MODEL("x");
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", path);
        buf[strlen(buf) - 1] = '\0';
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s", names[i]);
        FILE *fp = fopen(buf, "rb");
        assert_non_null(fp);
        fseek(fp, 0, SEEK_END);
        size_t len = (size_t)ftell(fp);
        fseek(fp, 0, SEEK_SET);
        uint8_t *mem = malloc(len + 1);
        assert_non_null(mem);
        assert_int_equal(fread(mem + 1, 1, len, fp), len);
        fclose(fp);
        tsr_checkpoint *a = NULL, *b = NULL;
        assert_int_equal(tsr_checkpoint_open(buf, &a, NULL), TSR_OK);
        assert_int_equal(tsr_checkpoint_open_memory(mem + 1, len, "odd", &b, NULL), TSR_OK);
        assert_true(b->rms_final.f != NULL && ((uintptr_t)b->rms_final.f & 3u) == 0);
        assert_null(b->map);   /* the caller's memory, not ours to unmap */
        const tsr_kprofile prof = TSR_KPROFILE_INIT;
        tsr_load_opts o = { .seq_len = 16, .n_slots = 1 };
        tsr_mesh_opts mo = { .pes = 4 };
        tsr_kconfig kc;
        assert_int_equal(tsr_wimage_config(a, &o, &mo, &prof, &kc, NULL), TSR_OK);
        tsr_wimage wa, wb;
        assert_int_equal(tsr_wimage_build(a, &kc, &wa, NULL), TSR_OK);
        assert_int_equal(tsr_wimage_build(b, &kc, &wb, NULL), TSR_OK);
        assert_true(wa.hash == wb.hash);
        assert_int_equal(wa.n_chunks, wb.n_chunks);
        stream_equals_whole(b, &kc);
        tsr_wimage_free(&wa);
        tsr_wimage_free(&wb);
        tsr_checkpoint_close(a);
        tsr_checkpoint_close(b);
        free(mem);
    }
}

/* The Q8_0 GGUF's tensors are views into the kept map: no copy at open. */
static void gguf_views(void **state)
{
    (void)state;
    tsr_checkpoint *m = NULL;
    assert_int_equal(tsr_checkpoint_open(SHARED_MODEL("stories260K-q8_0.gguf"), &m, NULL), TSR_OK);
    assert_non_null(m->map);
    const uint8_t *lo = m->map, *hi = lo + m->map_len;
    assert_int_equal(m->wq[0].type, TSR_DT_Q8_0);
    assert_true(m->wq[0].blk >= lo && m->wq[0].blk < hi);
    assert_null(m->wq[0].q);
    assert_null(m->wq[0].s);
    assert_true((const uint8_t *)m->rms_final.f >= lo && (const uint8_t *)m->rms_final.f < hi);
    /* the first block's values and scale through the accessors */
    uint16_t h;
    memcpy(&h, m->wq[0].blk, 2);
    assert_ptr_equal(tsr_tensor_q8(&m->wq[0], 0), (const int8_t *)m->wq[0].blk + 2);
    float v = tsr_tensor_get(&m->wq[0], 3);
    assert_true(v == (float)((const int8_t *)m->wq[0].blk)[2 + 3] * tsr_tensor_scale(&m->wq[0], 0));
    tsr_checkpoint_drop_weights(m);
    assert_null(m->map);
    assert_null(m->wq[0].blk);
    assert_int_equal(m->wq[0].rows, 64);   /* the shapes stay */
    tsr_checkpoint_close(m);
}

/* After a load the model's file is unmapped; loading the same file again
 * streams nothing (the hash-only pass finds it resident), another one
 * streams its image. */
static void load_lets_go(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=4,threads=2", &dev), TSR_OK);
    tsr_model_opts mopt = { 0 };
    tsr_model *a = NULL, *b = NULL, *c = NULL;
    tsr_traffic t0 = { 0 }, t1 = { 0 }, t2 = { 0 }, t3 = { 0 };
    assert_int_equal(tsr_device_traffic(dev, &t0), TSR_OK);
    assert_int_equal(tsr_model_load(dev, SHARED_MODEL("stories260K-q8_0.gguf"), &mopt, &a), TSR_OK);
    assert_null(a->ck->map);
    assert_null(a->ck->wq[0].blk);
    assert_int_equal(tsr_device_traffic(dev, &t1), TSR_OK);
    assert_true(t1.load_h2d > t0.load_h2d);
    assert_int_equal(tsr_model_load(dev, SHARED_MODEL("stories260K-q8_0.gguf"), &mopt, &b), TSR_OK);
    assert_int_equal(tsr_device_traffic(dev, &t2), TSR_OK);
    assert_true(t2.load_h2d == t1.load_h2d);   /* the same image: resident */
    assert_int_equal(tsr_model_load(dev, SHARED_MODEL("stories260K-q4_0.gguf"), &mopt, &c), TSR_OK);
    assert_int_equal(tsr_device_traffic(dev, &t3), TSR_OK);
    assert_true(t3.load_h2d > t2.load_h2d);
    tsr_model_info info = { 0 };
    assert_int_equal(tsr_model_get_info(c, &info), TSR_OK);
    assert_int_equal(info.dim, 64);
    tsr_model_close(a);
    tsr_model_close(b);
    tsr_model_close(c);
    tsr_device_close(dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama2c_fp32),
        cmocka_unit_test(llama2c_v2),
        cmocka_unit_test(gguf_types),
        cmocka_unit_test(gguf_misaligned),
        cmocka_unit_test(gguf_views),
        cmocka_unit_test(load_lets_go),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
