/*
 * error.h - status plus a one-line detail message, for internal calls.
 *
 * Internal functions take a tsr_err * (may be NULL) and return a tsr_status;
 * on failure the message says what and where: "model.bin: truncated: header
 * says 1056540 bytes of tensors, file has 1000".
 */
#ifndef TSR_ERROR_H
#define TSR_ERROR_H

#include "tessera.h"

#define TSR_ERRMSG_MAX 512

typedef struct tsr_err {
    int  code;                  /* last status, TSR_OK when none */
    char msg[TSR_ERRMSG_MAX];   /* one line, no trailing newline */
} tsr_err;

/* Record code and a printf-style message in e (if not NULL); returns code. */
int tsr_seterr(tsr_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clear e to TSR_OK and an empty message. */
void tsr_clearerr(tsr_err *e);

#endif
