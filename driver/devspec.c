/* devspec.c - parse a device spec string: "emu", "emu:part=u55c,pes=16",
 * "emu:pes=16,cols=4,kvsplit=2", "emu:batch=2", "emu:cards=2",
 * "emu:stages=0-2/3-4", "xrt:0", "xrt:1,xclbin=path". */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* Parse a positive decimal int in [lo, hi]; returns 0 on success. */
static int parse_int(const char *s, int lo, int hi, int *out)
{
    if (!*s) return -1;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p)) return -1;
    long v = strtol(s, NULL, 10);
    if (v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* "0-2/3-4": contiguous layer ranges from 0, into ends (3, 5); the count,
 * or -1. */
static int parse_stages(const char *s, int *ends)
{
    int n = 0, next = 0;
    while (*s) {
        char *p;
        long a = strtol(s, &p, 10), b;
        if (p == s || a != next || *p != '-') return -1;
        s = p + 1;
        b = strtol(s, &p, 10);
        if (p == s || b < a || b > 4095 || n == TSR_DEV_MAX_CARDS) return -1;
        ends[n++] = (int)b + 1;
        next = (int)b + 1;
        s = p;
        if (*s == '/') s++;
        else if (*s) return -1;
    }
    return n > 0 ? n : -1;
}

static int copy_field(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n == 0 || n >= cap) return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

int tsr_devspec_parse(const char *spec, tsr_devspec *out, tsr_err *e)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec) spec = "emu";
    char buf[512];
    if (strlen(spec) >= sizeof buf)
        return tsr_seterr(e, TSR_ERR_ARG, "device spec too long");
    strcpy(buf, spec);

    char *opts = strchr(buf, ':');
    if (opts) *opts++ = '\0';
    if (strcmp(buf, "emu") != 0 && strcmp(buf, "xrt") != 0)
        return tsr_seterr(e, TSR_ERR_ARG,
                          "device spec '%s': unknown backend '%s' (valid: emu, xrt)",
                          spec, buf);
    strcpy(out->backend, buf);

    static const char *const keys[] = { "part", "pes", "threads", "xclbin", "index", "simd",
                                        "cols", "kvsplit", "batch", "cards", "stages" };
    unsigned seen = 0;   /* bit k: keys[k] given (a bare number is "index") */
    // strtok_r: tsr_device_open is thread-safe, so no parser state is shared
    char *save = NULL;
    for (char *tok = opts ? strtok_r(opts, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *val = strchr(tok, '=');
        if (!val) {
            /* A bare number is the device index: "xrt:0". */
            if (parse_int(tok, 0, 255, &out->index) != 0)
                return tsr_seterr(e, TSR_ERR_ARG,
                                  "device spec '%s': '%s' is not key=value or a device index",
                                  spec, tok);
            continue;
        }
        *val++ = '\0';
        for (unsigned k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (strcmp(tok, keys[k]) != 0) continue;
            if (seen & (1u << k))
                return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': %s given twice", spec, tok);
            seen |= 1u << k;
        }
        int bad;
        if (!strcmp(tok, "part"))         bad = copy_field(out->part, sizeof out->part, val);
        else if (!strcmp(tok, "pes"))     bad = parse_int(val, 1, 1 << 16, &out->pes);
        else if (!strcmp(tok, "threads")) bad = parse_int(val, 1, 1024, &out->threads);
        else if (!strcmp(tok, "xclbin"))  bad = copy_field(out->xclbin, sizeof out->xclbin, val);
        else if (!strcmp(tok, "index"))   bad = parse_int(val, 0, 255, &out->index);
        else if (!strcmp(tok, "simd")) {
            int on = 1;
            out->simd_avx2 = !strcmp(val, "avx2");
            bad = out->simd_avx2 ? 0 : parse_int(val, 0, 1, &on);
            out->no_simd = !on;
        }
        else if (!strcmp(tok, "cols"))    bad = parse_int(val, 1, 4096, &out->cols);
        else if (!strcmp(tok, "kvsplit")) bad = parse_int(val, 1, 4096, &out->kv_split);
        else if (!strcmp(tok, "batch"))   bad = parse_int(val, 1, 8, &out->batch);
        else if (!strcmp(tok, "cards")) {
            int c = 0;
            bad = parse_int(val, 1, TSR_DEV_MAX_CARDS, &c);
            if (!bad && out->cards && out->cards != c) bad = 1;   /* stages= says otherwise */
            if (!bad) out->cards = c;
        }
        else if (!strcmp(tok, "stages")) {
            int c = parse_stages(val, out->stage_end);
            bad = c < 0 || (out->cards && out->cards != c);
            if (!bad) out->cards = c;
        }
        else
            return tsr_seterr(e, TSR_ERR_ARG,
                              "device spec '%s': unknown key '%s' (valid: part, pes, cols, kvsplit, batch, "
                              "threads, simd, xclbin, index, cards, stages)",
                              spec, tok);
        if (bad)
            return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': bad value '%s' for %s",
                              spec, val, tok);
    }
    for (char *p = out->part; *p; p++) *p = (char)tolower((unsigned char)*p);
    // The emulator runs the kernel C sources, not a bitstream: an xclbin
    // given to it would be silently ignored, so refuse it.
    if (!strcmp(out->backend, "emu") && out->xclbin[0])
        return tsr_seterr(e, TSR_ERR_ARG,
                          "device spec '%s': xclbin= is for the xrt backend; the emulator "
                          "runs the kernel sources and loads no xclbin", spec);
    return TSR_OK;
}
