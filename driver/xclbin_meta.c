/*
 * xclbin_meta.c - read the parts of an xclbin the XRT backend checks (see
 * xclbin_meta.h): header, section table, MEM_TOPOLOGY, CONNECTIVITY, the
 * kernel XML and the tessera_profile key.
 *
 * The byte offsets below are those of the structs in xrt/xclbin.h (XRT
 * 2.13); backend_xrt.c checks them against the real header at compile time
 * when XRT is available.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xclbin_meta.h"

/* ------------------------------------------------------------------------ */
/* Layout (xrt/xclbin.h)                                                      */

#define AXLF_MAGIC            "xclbin2"
#define AXLF_HEADER_OFF       304u   /* struct axlf: m_header                  */
#define AXLF_LENGTH_OFF       (AXLF_HEADER_OFF + 0u)    /* m_header.m_length   */
#define AXLF_VBNV_OFF         (AXLF_HEADER_OFF + 48u)   /* m_platformVBNV[64]  */
#define AXLF_UUID_OFF         (AXLF_HEADER_OFF + 112u)  /* uuid[16]            */
#define AXLF_NSECTIONS_OFF    (AXLF_HEADER_OFF + 144u)  /* m_numSections       */
#define AXLF_SECTIONS_OFF     456u   /* struct axlf: m_sections[]              */
#define AXLF_SECTION_BYTES    40u    /* kind u32 @0, name[16] @4, offset u64 @24,
                                        size u64 @32                           */
#define SEC_EMBEDDED_METADATA 2u
#define SEC_MEM_TOPOLOGY      6u
#define SEC_CONNECTIVITY      7u
#define SEC_KEYVALUE_METADATA 15u
#define MEM_DATA_OFF          8u     /* mem_topology: m_count i32, mem_data[] @8 */
#define MEM_DATA_BYTES        40u    /* m_type u8 @0, m_used u8 @1, tag[16] @24 */
#define CONN_OFF              4u     /* connectivity: m_count i32, connection[] @4 */
#define CONN_BYTES            12u    /* arg_index, ip_layout_index, mem_data_index */

static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* A section's bytes, bounds-checked; NULL when absent. */
typedef struct span { const unsigned char *p; size_t n; } span;

/* ------------------------------------------------------------------------ */
/* Profile                                                                    */

/* The tessera_profile key's figures (kernels/tsr_profile.def), in its order. */
typedef struct pfield { const char *key; size_t off; int need; } pfield;
#define PF_ROW_(member, key, macro, need) { key, offsetof(tsr_kprofile, member), need },
static const pfield pfields[] = { TSR_PROFILE_FIELDS(PF_ROW_) };
#undef PF_ROW_
enum { NPF = sizeof pfields / sizeof pfields[0] };

static uint32_t *pf_at(tsr_kprofile *k, unsigned i)
{
    return (uint32_t *)(void *)((char *)k + pfields[i].off);
}

/* One key=value pair [s, end) with '=' at eq, not "name": its figure set,
 * *seen marking it.  Unknown keys are ignored: a newer profile may say more. */
static int xprofile_pair(const char *text, const char *s, const char *eq, const char *end,
                         tsr_kprofile *k, uint64_t *seen, tsr_err *e)
{
    size_t kl = (size_t)(eq - s), vl = (size_t)(end - eq - 1);
    for (unsigned i = 0; i < NPF; i++) {
        if (strlen(pfields[i].key) != kl || strncmp(s, pfields[i].key, kl)) continue;
        char *stop;
        errno = 0;
        unsigned long v = strtoul(eq + 1, &stop, 10);
        if (stop != end || vl == 0 || errno || v > 0xffffffffu ||
            (pfields[i].off == offsetof(tsr_kprofile, block) && (v == 0 || v > 4096)) ||
            ((pfields[i].off == offsetof(tsr_kprofile, w13_cols) ||
              pfields[i].off == offsetof(tsr_kprofile, cls_cols)) && (v == 0 || (v & (v - 1u)))))
            return tsr_seterr(e, TSR_ERR_FORMAT, "tessera_profile '%s': bad value for %s", text,
                              pfields[i].key);
        *pf_at(k, i) = (uint32_t)v;
        *seen |= 1ull << i;
    }
    return TSR_OK;
}

int tsr_xprofile_parse(const char *text, tsr_xprofile *p, tsr_err *e)
{
    memset(p, 0, sizeof *p);
    tsr_kprofile *k = &p->k;
    k->block = 1;
    k->w13_cols = k->cls_cols = 1;   /* before those figures: roots on every PE */
    uint64_t seen = 0;
    int have_name = 0;
    const char *s = text;
    while (*s) {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        if (!end) end = s + strlen(s);
        if (!eq || eq > end)
            return tsr_seterr(e, TSR_ERR_FORMAT, "tessera_profile '%s': '%.*s' is not key=value",
                              text, (int)(end - s), s);
        size_t kl = (size_t)(eq - s), vl = (size_t)(end - eq - 1);
        if (kl == 4 && !strncmp(s, "name", 4)) {
            if (vl == 0 || vl >= sizeof p->name)
                return tsr_seterr(e, TSR_ERR_FORMAT, "tessera_profile '%s': bad name", text);
            memcpy(p->name, eq + 1, vl);
            have_name = 1;
        } else {
            int rc = xprofile_pair(text, s, eq, end, k, &seen, e);
            if (rc) return rc;
        }
        s = *end ? end + 1 : end;
    }
    if (!have_name)
        return tsr_seterr(e, TSR_ERR_FORMAT, "tessera_profile '%s': no name", text);
    for (unsigned i = 0; i < NPF; i++)
        if (pfields[i].need != TSR_PF_OPT &&
            (!(seen & (1ull << i)) || (pfields[i].need == TSR_PF_REQ && *pf_at(k, i) == 0)))
            return tsr_seterr(e, TSR_ERR_FORMAT, "tessera_profile '%s': %s missing or zero",
                              text, pfields[i].key);
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Kernel XML                                                                 */

/* Value of attribute `name` inside the tag [tag, end): copied to out
 * (cap bytes).  Returns 0 when found. */
static int xml_attr(const char *tag, const char *end, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *p = tag; p + nl + 2 < end; p++) {
        if ((p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n' && p[-1] != '\r') ||
            strncmp(p, name, nl) ||
            p[nl] != '=' || p[nl + 1] != '"')
            continue;
        const char *v = p + nl + 2, *q = memchr(v, '"', (size_t)(end - v));
        if (!q) return -1;
        size_t n = (size_t)(q - v);
        if (n >= cap) n = cap - 1;
        memcpy(out, v, n);
        out[n] = '\0';
        return 0;
    }
    return -1;
}

/* Next element <elem ...> at or after p (before end); *tag_end gets its '>'. */
static const char *xml_next(const char *p, const char *end, const char *elem,
                            const char **tag_end)
{
    size_t el = strlen(elem);
    for (; p && p + el + 1 < end; p++) {
        p = memchr(p, '<', (size_t)(end - p));
        if (!p || p + el + 1 >= end) return NULL;
        if (!strncmp(p + 1, elem, el) && (p[el + 1] == ' ' || p[el + 1] == '>' ||
                                          p[el + 1] == '/' || p[el + 1] == '\n')) {
            const char *gt = memchr(p, '>', (size_t)(end - p));
            if (!gt) return NULL;
            *tag_end = gt;
            return p;
        }
    }
    return NULL;
}

static int parse_kernel_xml(const char *path, span xml, const char *kernel, tsr_xmeta *m,
                            tsr_err *e)
{
    /* The XML as a string of its own: the section need not end in NUL. */
    char *x = malloc(xml.n + 1);
    if (!x) return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", path);
    memcpy(x, xml.p, xml.n);
    x[xml.n] = '\0';
    const char *end = x + strlen(x), *te;
    const char *k = x;
    size_t kl = 0;
    while ((k = xml_next(k, end, "kernel", &te))) {
        char name[128];
        if (xml_attr(k + 1, te, "name", name, sizeof name) == 0) {
            int w = snprintf(m->kernels + kl, sizeof m->kernels - kl, "%s%s", kl ? ", " : "",
                             name);
            if (w > 0 && kl + (size_t)w < sizeof m->kernels) kl += (size_t)w;
            if (!m->has_kernel && !strcmp(name, kernel)) {
                m->has_kernel = 1;
                /* the kernel's body runs to </kernel> */
                const char *kend = strstr(te, "</kernel>");
                if (!kend) kend = end;
                const char *a = te, *ae;
                while ((a = xml_next(a, kend, "arg", &ae)) && m->n_args < TSR_XMETA_MAX_ARGS) {
                    tsr_xarg *g = &m->args[m->n_args];
                    char num[32];
                    memset(g, 0, sizeof *g);
                    g->mem_index = -1;
                    if (xml_attr(a + 1, ae, "name", g->name, sizeof g->name) ||
                        xml_attr(a + 1, ae, "id", num, sizeof num)) {
                        free(x);
                        return tsr_seterr(e, TSR_ERR_FORMAT,
                                          "%s: kernel %s: an <arg> without name or id", path,
                                          kernel);
                    }
                    g->id = (int)strtol(num, NULL, 0);
                    if (xml_attr(a + 1, ae, "addressQualifier", num, sizeof num) == 0)
                        g->address_qualifier = (int)strtol(num, NULL, 0);
                    if (xml_attr(a + 1, ae, "size", num, sizeof num) == 0)
                        g->size = (uint32_t)strtoul(num, NULL, 0);
                    if (xml_attr(a + 1, ae, "offset", num, sizeof num) == 0)
                        g->offset = (uint32_t)strtoul(num, NULL, 0);
                    xml_attr(a + 1, ae, "type", g->type, sizeof g->type);
                    m->n_args++;
                    a = ae;
                }
            }
        }
        k = te;
    }
    free(x);
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* The file                                                                   */

/* Find `"key"` then its string value in JSON text; copies the value. */
static int json_value_after(const char *s, const char *end, const char *field, const char **at,
                            char *out, size_t cap)
{
    size_t fl = strlen(field);
    for (const char *p = *at; p + fl + 2 < end; p++) {
        if (p[0] != '"' || strncmp(p + 1, field, fl) || p[fl + 1] != '"') continue;
        const char *q = p + fl + 2;
        while (q < end && (*q == ' ' || *q == ':' || *q == '\n' || *q == '\t')) q++;
        if (q >= end || *q != '"') continue;
        const char *v = ++q;
        while (q < end && *q != '"') q += (*q == '\\' && q + 1 < end) ? 2 : 1;
        if (q >= end) return -1;
        size_t n = (size_t)(q - v);
        if (n >= cap) n = cap - 1;
        memcpy(out, v, n);
        out[n] = '\0';
        *at = q + 1;
        return 0;
    }
    (void)s;
    return -1;
}

static void find_profile(span kv, tsr_xmeta *m)
{
    char *s = malloc(kv.n + 1);
    if (!s) return;
    memcpy(s, kv.p, kv.n);
    s[kv.n] = '\0';
    const char *end = s + strlen(s), *at = s;
    char key[64];
    while (json_value_after(s, end, "key", &at, key, sizeof key) == 0) {
        char val[sizeof m->profile_text];
        const char *vat = at;
        if (json_value_after(s, end, "value", &vat, val, sizeof val) != 0) break;
        if (!strcmp(key, "tessera_profile")) {
            memcpy(m->profile_text, val, sizeof val);
            m->has_profile = 1;
            break;
        }
        at = vat;
    }
    free(s);
}

/* The whole file at path into *buf (malloc'd), *n bytes: at least an
 * xclbin header's.  Errors: IO, FORMAT (empty, too short), NOMEM. */
static int slurp(const char *path, unsigned char **buf, size_t *n, tsr_err *e)
{
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return tsr_seterr(e, TSR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    int rc = TSR_OK;
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0)
        rc = tsr_seterr(e, TSR_ERR_IO, "%s: cannot read", path);
    else if (len == 0)
        rc = tsr_seterr(e, TSR_ERR_FORMAT, "%s: empty file, not an xclbin", path);
    else if ((size_t)len < AXLF_SECTIONS_OFF)
        rc = tsr_seterr(e, TSR_ERR_FORMAT, "%s: %zu bytes, too short for an xclbin header",
                        path, (size_t)len);
    else if (!(*buf = malloc((size_t)len)))
        rc = tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", path);
    else if (fread(*buf, 1, (size_t)len, f) != (size_t)len)
        rc = tsr_seterr(e, TSR_ERR_IO, "%s: short read", path);
    fclose(f);
    *n = rc ? 0 : (size_t)len;
    return rc;
}

/* The sections tessera reads (the first of each kind). */
typedef struct xsections { span xml, mem, conn, kv; } xsections;

/* The header (magic, length, platform, uuid into m) and the section table
 * of buf (n bytes) into *x.  Errors: FORMAT. */
static int read_header(const char *path, const unsigned char *buf, size_t n, tsr_xmeta *m,
                       xsections *x, tsr_err *e)
{
    if (memcmp(buf, AXLF_MAGIC, 8) != 0)
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: not an xclbin (no \"xclbin2\" magic)", path);
    uint64_t flen = rd64(buf + AXLF_LENGTH_OFF);
    if (flen > n)
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: truncated: header says %llu bytes, file has %zu",
                          path, (unsigned long long)flen, n);
    memcpy(m->platform, buf + AXLF_VBNV_OFF, 64);
    m->platform[64] = '\0';
    memcpy(m->uuid, buf + AXLF_UUID_OFF, 16);
    uint32_t ns = rd32(buf + AXLF_NSECTIONS_OFF);
    if (ns == 0 || (uint64_t)AXLF_SECTIONS_OFF + (uint64_t)ns * AXLF_SECTION_BYTES > n)
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: %u section headers do not fit in %zu bytes",
                          path, ns, n);
    memset(x, 0, sizeof *x);
    for (uint32_t i = 0; i < ns; i++) {
        const unsigned char *sh = buf + AXLF_SECTIONS_OFF + (size_t)i * AXLF_SECTION_BYTES;
        uint32_t kind = rd32(sh);
        uint64_t off = rd64(sh + 24), sz = rd64(sh + 32);
        if (off > n || sz > n - off)
            return tsr_seterr(e, TSR_ERR_FORMAT,
                              "%s: section %u (kind %u) at %llu + %llu bytes lies outside the "
                              "%zu-byte file", path, i, kind, (unsigned long long)off,
                              (unsigned long long)sz, n);
        span s = { buf + off, (size_t)sz };
        if (kind == SEC_EMBEDDED_METADATA && !x->xml.p) x->xml = s;
        else if (kind == SEC_MEM_TOPOLOGY && !x->mem.p) x->mem = s;
        else if (kind == SEC_CONNECTIVITY && !x->conn.p) x->conn = s;
        else if (kind == SEC_KEYVALUE_METADATA && !x->kv.p) x->kv = s;
    }
    if (!x->xml.p)
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: no EMBEDDED_METADATA (kernel XML) section",
                          path);
    return TSR_OK;
}

/* Banks: CONNECTIVITY (arg index, ip, mem index) -> MEM_TOPOLOGY tag.
 * The design has one compute unit; the highest mem index wins, as in
 * XRT's default group for an argument.  Errors: FORMAT. */
static int read_banks(const char *path, span conn, span mem, tsr_xmeta *m, tsr_err *e)
{
    if (!conn.p || !mem.p || conn.n < CONN_OFF || mem.n < MEM_DATA_OFF) return TSR_OK;
    int32_t nc = (int32_t)rd32(conn.p), nm = (int32_t)rd32(mem.p);
    if (nc < 0 || (uint64_t)CONN_OFF + (uint64_t)nc * CONN_BYTES > conn.n || nm < 0 ||
        (uint64_t)MEM_DATA_OFF + (uint64_t)nm * MEM_DATA_BYTES > mem.n)
        return tsr_seterr(e, TSR_ERR_FORMAT, "%s: CONNECTIVITY or MEM_TOPOLOGY count exceeds "
                          "its section", path);
    for (int32_t c = 0; c < nc; c++) {
        const unsigned char *cx = conn.p + CONN_OFF + (size_t)c * CONN_BYTES;
        int32_t arg = (int32_t)rd32(cx), mi = (int32_t)rd32(cx + 8);
        if (mi < 0 || mi >= nm) continue;
        for (int a = 0; a < m->n_args; a++) {
            tsr_xarg *g = &m->args[a];
            if (g->id != arg || mi < g->mem_index) continue;
            g->mem_index = mi;
            memcpy(g->bank, mem.p + MEM_DATA_OFF + (size_t)mi * MEM_DATA_BYTES + 24u, 16);
            g->bank[16] = '\0';
        }
    }
    return TSR_OK;
}

int tsr_xmeta_read(const char *path, const char *kernel, tsr_xmeta *m, tsr_err *e)
{
    memset(m, 0, sizeof *m);
    unsigned char *buf = NULL;
    size_t n = 0;
    int rc = slurp(path, &buf, &n, e);
    xsections x = { 0 };
    if (!rc) rc = read_header(path, buf, n, m, &x, e);
    if (!rc) rc = parse_kernel_xml(path, x.xml, kernel, m, e);
    if (!rc) rc = read_banks(path, x.conn, x.mem, m, e);
    if (!rc && x.kv.p) find_profile(x.kv, m);
    if (!rc && m->has_profile) {
        tsr_err pe;
        tsr_clearerr(&pe);
        if (tsr_xprofile_parse(m->profile_text, &m->profile, &pe))
            rc = tsr_seterr(e, TSR_ERR_FORMAT, "%s: %s", path, pe.msg);
    }
    free(buf);
    return rc;
}

const tsr_xarg *tsr_xmeta_arg(const tsr_xmeta *m, const char *name)
{
    for (int a = 0; a < m->n_args; a++)
        if (!strcmp(m->args[a].name, name)) return &m->args[a];
    return NULL;
}
