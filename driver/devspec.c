/* devspec.c - parse a device spec string: "emu", "emu:part=u55c,pes=16",
 * "emu:pes=16,cols=4,kvsplit=2", "emu:batch=2", "emu:cards=2",
 * "emu:stages=0-2/3-4", "xrt:0", "xrt:1,xclbin=path". */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devspec.h"

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

/* "0-1/2-4": contiguous layer ranges from 0, two or more (a split).
 * Returns the ranges, ends[k] the layer after range k; or -1 with why
 * (NUL-terminated, at most cap bytes). */
static int parse_stages(const char *s, int *ends, char *why, size_t cap)
{
    int n = 0, next = 0;
    while (*s) {
        char *p;
        long a = strtol(s, &p, 10), b;
        if (p == s || *p != '-') {
            snprintf(why, cap, "range %d is not FIRST-LAST", n + 1);
            return -1;
        }
        if (a != next) {
            snprintf(why, cap, "range %d starts at layer %ld, not %d (ranges run on from 0, "
                     "no gap, no overlap)", n + 1, a, next);
            return -1;
        }
        s = p + 1;
        b = strtol(s, &p, 10);
        if (p == s || b < a || b > 4095) {
            snprintf(why, cap, "range %d does not end at a layer from %ld on", n + 1, a);
            return -1;
        }
        if (n == TSR_DEV_MAX_CARDS) {
            snprintf(why, cap, "more than %d ranges (one a device)", TSR_DEV_MAX_CARDS);
            return -1;
        }
        ends[n++] = (int)b + 1;
        next = (int)b + 1;
        s = p;
        if (*s == '/' && s[1]) s++;
        else if (*s) {
            snprintf(why, cap, "'%s' after range %d", s, n);
            return -1;
        }
    }
    if (n < 2) {
        snprintf(why, cap, "%s: a split needs two ranges or more (one device holds the whole "
                 "model without stages=)", n ? "one range" : "no range");
        return -1;
    }
    return n;
}

static int copy_field(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n == 0 || n >= cap) return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

/* cards=val or stages=val: the card count, each saying the same as the
 * other when both are given. */
static int devspec_cards(const char *spec, const char *tok, const char *val, tsr_devspec *out,
                         tsr_err *e)
{
    if (!strcmp(tok, "cards")) {
        int c = 0;
        if (parse_int(val, 1, TSR_DEV_MAX_CARDS, &c))
            return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': cards=%s: not an integer "
                              "in 1..%d", spec, val, TSR_DEV_MAX_CARDS);
        if (out->cards && out->cards != c)   /* stages= says otherwise */
            return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': cards=%d, stages= gives %d "
                              "ranges", spec, c, out->cards);
        out->cards = c;
        return TSR_OK;
    }
    char why[160];
    int c = parse_stages(val, out->stage_end, why, sizeof why);
    if (c < 0)
        return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': stages=%s: %s", spec, val, why);
    if (out->cards && out->cards != c)
        return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': stages= gives %d ranges, "
                          "cards=%d", spec, c, out->cards);
    out->cards = c;
    return TSR_OK;
}

/* One key=value option of spec into out. */
static int devspec_option(const char *spec, const char *tok, const char *val, tsr_devspec *out,
                          tsr_err *e)
{
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
        if (bad)
            return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': simd=%s: 0 (the kernel loops), "
                              "1 (this CPU's best, the default) or avx2", spec, val);
    }
    else if (!strcmp(tok, "cols"))    bad = parse_int(val, 1, 4096, &out->cols);
    else if (!strcmp(tok, "kvsplit")) bad = parse_int(val, 1, 4096, &out->kv_split);
    else if (!strcmp(tok, "batch")) {
        if (parse_int(val, 1, 8, &out->batch))
            return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': batch=%s: not an integer "
                              "in 1..8", spec, val);
        bad = 0;
    }
    else if (!strcmp(tok, "cards") || !strcmp(tok, "stages"))
        return devspec_cards(spec, tok, val, out, e);
    else
        return tsr_seterr(e, TSR_ERR_ARG,
                          "device spec '%s': unknown key '%s' (valid: part, pes, cols, kvsplit, batch, "
                          "threads, simd, xclbin, index, cards, stages)",
                          spec, tok);
    if (bad)
        return tsr_seterr(e, TSR_ERR_ARG, "device spec '%s': bad value '%s' for %s",
                          spec, val, tok);
    return TSR_OK;
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
        int rc = devspec_option(spec, tok, val, out, e);
        if (rc) return rc;
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
