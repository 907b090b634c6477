/*
 * abi.c - the size rule of the growing structs (abi.h): read a caller's
 * input struct of any version's size, write an output struct no further
 * than the caller's size.
 */
#include "abi.h"

#include <string.h>

#include "tessera.h"

/* ------------------------------------------------------------ the table --- */

/* v030: every struct is as 0.3.0 has it (tests/test_abi.c pins each size
 * and offset).  A struct that grows in a later version keeps its 0.3.0
 * size here as a number.  min: the fields 0.2.0 had (before size existed)
 * plus size; for the structs 0.3.0 added, or that never grew, every named
 * field. */
#define ABI(T, MIN) { #T, sizeof(T), sizeof(T), MIN }
const tsr_abi_type tsr_abi_traffic    = ABI(tsr_traffic, offsetof(tsr_traffic, link_prefill));
const tsr_abi_type tsr_abi_pipeline   = ABI(tsr_pipeline, offsetof(tsr_pipeline, reserved));
const tsr_abi_type tsr_abi_model_opts = ABI(tsr_model_opts, offsetof(tsr_model_opts, weights));
const tsr_abi_type tsr_abi_model_info = ABI(tsr_model_info, offsetof(tsr_model_info, bos));
const tsr_abi_type tsr_abi_gen_opts   = ABI(tsr_gen_opts, offsetof(tsr_gen_opts, reserved));
const tsr_abi_type tsr_abi_seq_stats  = ABI(tsr_seq_stats, offsetof(tsr_seq_stats, reserved));
const tsr_abi_type tsr_abi_chat_msg   = ABI(tsr_chat_msg, offsetof(tsr_chat_msg, reserved));
const tsr_abi_type tsr_abi_file_info  = ABI(tsr_file_info, offsetof(tsr_file_info, onchip_weights));
const tsr_abi_type tsr_abi_plan_opts  = ABI(tsr_plan_opts, offsetof(tsr_plan_opts, weights));
#undef ABI

/* ------------------------------------------------------------- the rule --- */

size_t tsr_abi_size(const tsr_abi_type *t, const void *p)
{
    size_t size;
    memcpy(&size, p, sizeof size);
    return size ? size : t->v030;
}

static int size_ok(const tsr_abi_type *t, size_t size, tsr_err *e)
{
    if (size < t->min)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: size %zu is below the %zu bytes every version "
                          "has (set size = sizeof(%s), or 0)", t->name, size, t->min, t->name);
    /* a sizeof is a multiple of the struct's alignment (a size_t's) */
    if (size % sizeof(size_t))
        return tsr_seterr(e, TSR_ERR_ARG, "%s: size %zu is no struct's size (not a multiple "
                          "of %zu)", t->name, size, sizeof(size_t));
    return TSR_OK;
}

int tsr_abi_read(const tsr_abi_type *t, const void *in, void *out, tsr_err *e)
{
    size_t size = tsr_abi_size(t, in);
    int rc = size_ok(t, size, e);
    if (rc) return rc;
    if (size > TSR_ABI_SIZE_MAX)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: size %zu is larger than any version's (%d at most)",
                          t->name, size, TSR_ABI_SIZE_MAX);
    memset(out, 0, t->now);
    memcpy(out, in, size < t->now ? size : t->now);
    /* a newer header's fields this library does not know must be unused */
    const unsigned char *b = in;
    for (size_t i = t->now; i < size; i++)
        if (b[i])
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: byte %zu of %zu is set: a field this "
                              "library (%zu bytes) lacks (built against a newer tessera.h?)",
                              t->name, i, size, t->now);
    return TSR_OK;
}

int tsr_abi_check_out(const tsr_abi_type *t, const void *out, tsr_err *e)
{
    return size_ok(t, tsr_abi_size(t, out), e);
}

void tsr_abi_write(const tsr_abi_type *t, void *out, const void *full)
{
    size_t size = tsr_abi_size(t, out), n = size < t->now ? size : t->now;
    /* the caller's size field stays as the caller set it */
    memcpy((char *)out + sizeof(size_t), (const char *)full + sizeof(size_t),
           n - sizeof(size_t));
}
