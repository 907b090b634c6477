/* error.c - status strings and per-handle error detail. */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

const char *tsr_version(void) { return TSR_VERSION_STRING; }

int tsr_version_number(void) { return TSR_VERSION_NUMBER; }

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
    /* One line, whatever the message quotes (a spec or a file name may hold
     * a newline): control bytes become '?'. */
    for (char *p = e->msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return code;
}

void tsr_clearerr(tsr_err *e)
{
    if (!e) return;
    e->code = TSR_OK;
    e->msg[0] = '\0';
}
