/*
 * kernel_rig.c - the kernel on the test's thread (see kernel_rig.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "kernel_rig.h"

/* The CONFIGURE payload is the struct's words in field order. */
typedef char rig_kconfig_is_words[sizeof(tsr_kconfig) == 4u * TSR_KCONFIG_WORDS ? 1 : -1];

tsr_kstate *rig_state_new(void)
{
    /* the generic profile's PE arrays are far larger than a test touches:
     * reserve, as backend_emu.c does, and let the pages come on first use */
    void *p = mmap(NULL, sizeof(tsr_kstate), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(p != MAP_FAILED);
    tsr_kstate *st = p;
    tsr_kernel_init(st);
    st->pool = NULL;
    st->simd = 0;
    return st;
}

void rig_state_free(tsr_kstate *st)
{
    if (st) munmap(st, sizeof *st);
}

int rig_cmd(tsr_kstate *st, uint32_t op, uint32_t slot, const uint32_t a[6], const void *in,
            uint32_t in_words, void *out, uint32_t out_words, uint32_t *out_n)
{
    uint32_t c[TSR_CMD_WORDS] = { 0 }, n = 0, hdr[TSR_CTL_CMD0] = { 0 }, none = 0;
    c[TSR_CMD_OP] = op;
    c[TSR_CMD_SLOT] = slot;
    c[TSR_CMD_IN_WORDS] = in_words;
    c[TSR_CMD_OUT_WORDS] = out_words;
    for (int i = 0; i < 6 && a; i++) c[TSR_CMD_A0 + i] = a[i];
    /* one buffer read as words and as floats, as tessera_top's port pairs */
    const uint32_t *in_w = in ? in : &none;
    uint32_t *out_w = out ? out : &none;
    int rc = tsr_kernel_exec(st, c, in_w, (const float *)(const void *)in_w, out_w,
                             (float *)(void *)out_w, hdr, NULL, NULL, &n);
    if (out_n) *out_n = n;
    return rc;
}

int rig_configure(tsr_kstate *st, const tsr_kconfig *kc, uint32_t fit[TSR_KFIT_WORDS])
{
    uint32_t w[TSR_KCONFIG_WORDS];
    memcpy(w, kc, sizeof w);
    return rig_cmd(st, TSR_OP_CONFIGURE, 0, NULL, w, TSR_KCONFIG_WORDS, fit, TSR_KFIT_WORDS,
                   NULL);
}

void rig_place(tsr_kstate *st, const tsr_checkpoint *m, const tsr_load_opts *o,
               const tsr_mesh_opts *mo, tsr_kconfig *kc_out)
{
    const tsr_kprofile prof = TSR_KPROFILE_INIT;
    tsr_kconfig kc;
    tsr_err e = { 0 };
    int rc = tsr_wimage_config(m, o, mo, &prof, &kc, &e);
    if (rc == TSR_OK) rc = tsr_wimage_check_profile(&kc, &prof, TSR_PROFILE_NAME, &e);
    if (rc) print_error("place: %s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    tsr_wimage img;
    rc = tsr_wimage_build(m, &kc, &img, &e);
    if (rc) print_error("place: %s\n", e.msg);
    assert_int_equal(rc, TSR_OK);
    uint32_t fit[TSR_KFIT_WORDS];
    assert_int_equal(rig_configure(st, &kc, fit), TSR_K_OK);
    assert_int_equal(fit[TSR_KFIT_STATUS], TSR_K_OK);
    for (int i = 0; i < img.n_chunks; i++) {
        const tsr_wchunk *ch = &img.chunks[i];
        uint32_t a[6] = { ch->pe, ch->region, ch->offset, ch->length, 0, 0 };
        assert_int_equal(rig_cmd(st, TSR_OP_LOAD, 0, a, ch->data, ch->nbytes / 4u, NULL, 0, NULL),
                         TSR_K_OK);
    }
    tsr_wimage_free(&img);
    if (kc_out) *kc_out = kc;
}
