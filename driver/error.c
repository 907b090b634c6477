/* error.c - status strings and per-handle error detail. */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

const char *tsr_version(void) { return TSR_VERSION_STRING; }

const char *tsr_strerror(int status)
{
    switch (status) {
#define TSR_STATUS_CASE_(name, value, text) case value: return text;
        TSR_STATUS_LIST(TSR_STATUS_CASE_)
#undef TSR_STATUS_CASE_
    }
    return "unknown status";
}

int tsr_seterr(tsr_err *e, int code, const char *fmt, ...)
{
    if (!e) return code;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return code;
}

void tsr_clearerr(tsr_err *e)
{
    if (!e) return;
    e->code = TSR_OK;
    e->msg[0] = '\0';
}
