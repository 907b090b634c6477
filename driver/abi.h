/*
 * abi.h - the size rule of tessera.h's growing structs (tessera.h,
 * "Growing structs"), in one place.
 *
 * A caller's struct starts with `size`: the bytes of the struct as the
 * caller's tessera.h declares it (0: this struct as 0.3.0, the first
 * version with a size field, declares it).  The library reads an input
 * struct into a zeroed copy of its own size (fields past the caller's size
 * take their zero defaults) and writes an output struct's first bytes only,
 * up to the caller's size.
 */
#ifndef TSR_ABI_H
#define TSR_ABI_H

#include <stddef.h>

#include "error.h"

/* The largest size a caller may state for an input struct: far above any
 * struct's, so a garbage size is refused before the library reads past it. */
#define TSR_ABI_SIZE_MAX 4096

/* What the library knows of one struct type. */
typedef struct tsr_abi_type {
    const char *name;   /* "tsr_model_opts", for messages                  */
    size_t      now;    /* sizeof in this version                          */
    size_t      v030;   /* sizeof in 0.3.0: what a size of 0 stands for    */
    size_t      min;    /* bytes every version had: the fields before the
                           first one added after 0.2.0                     */
} tsr_abi_type;

/* The caller's struct's size in bytes: its `size` field (the first size_t
 * at p), 0 read as t->v030.  Checks nothing. */
size_t tsr_abi_size(const tsr_abi_type *t, const void *p);

/* Read the caller's input struct in (size bytes from the caller's
 * size field, checked: t->min .. TSR_ABI_SIZE_MAX) into out (t->now bytes):
 * zeroed, then its first min(size, t->now) bytes copied.  Bytes the caller
 * has past t->now (a newer header) must be zero.  Errors: TSR_ERR_ARG (size
 * below t->min or above TSR_ABI_SIZE_MAX), TSR_ERR_UNSUPPORTED (a non-zero
 * byte past t->now); e gets the message. */
int tsr_abi_read(const tsr_abi_type *t, const void *in, void *out, tsr_err *e);

/* Check an output struct's size before the library fills it: TSR_ERR_ARG
 * (with e's message) when it is below t->min; nothing is written. */
int tsr_abi_check_out(const tsr_abi_type *t, const void *out, tsr_err *e);

/* Write the library's filled struct full (t->now bytes, its size field
 * ignored) into the caller's out: its first min(size, t->now) bytes, the
 * caller's size field kept; nothing past them.  size checked before
 * (tsr_abi_check_out). */
void tsr_abi_write(const tsr_abi_type *t, void *out, const void *full);

/* The public growing structs. */
extern const tsr_abi_type tsr_abi_traffic, tsr_abi_pipeline, tsr_abi_model_opts,
    tsr_abi_model_info, tsr_abi_gen_opts, tsr_abi_seq_stats, tsr_abi_chat_msg,
    tsr_abi_file_info, tsr_abi_plan_opts;

#endif
