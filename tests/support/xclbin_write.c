/*
 * xclbin_write.c - a metadata-only xclbin for the XRT backend tests (see
 * xclbin_write.h).
 *
 * File layout (xrt/xclbin.h, "AXLF LAYOUT"): struct axlf (magic "xclbin2",
 * header, the first section header), the other section headers, then each
 * section's bytes at an 8-byte aligned offset.  The kernel XML follows the
 * shape v++ writes (project/platform/device/core/kernel with port, arg and
 * instance elements), reduced to what XRT 2.13's parser reads.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xclbin_write.h"

#ifdef TSR_HAVE_XRT

#include <xclbin.h>

/* ------------------------------------------------------------------------ */
/* Sections                                                                   */

#define MAX_SECTIONS 6

typedef struct section {
    uint32_t    kind;      /* axlf_section_kind */
    const char *name;
    void       *data;      /* owned */
    size_t      size;
} section;

/* Memory banks: the distinct tags of the arguments, in first-use order. */
typedef struct banks {
    const char *tag[TSR_XW_NARGS];
    int         n;
    int         of_arg[TSR_XW_NARGS];   /* bank index of each argument */
} banks;

static void collect_banks(const tsr_xclbin_desc *d, banks *b)
{
    static const char *const def[TSR_XW_NARGS] = { "HBM[1]", "HBM[0]", "HBM[0]", "HBM[1]",
                                                   "HBM[1]" };
    memset(b, 0, sizeof *b);
    for (int a = 0; a < TSR_XW_NARGS; a++) {
        const char *t = d->bank[a] ? d->bank[a] : def[a];
        int k = 0;
        while (k < b->n && strcmp(b->tag[k], t) != 0) k++;
        if (k == b->n) b->tag[b->n++] = t;
        b->of_arg[a] = k;
    }
}

/* Argument a's id in the XML and CONNECTIVITY. */
static int arg_id(const tsr_xclbin_desc *d, int a)
{
    if (d->swap_in_ids && a == TSR_XW_IN_W) return TSR_XW_IN_F;
    if (d->swap_in_ids && a == TSR_XW_IN_F) return TSR_XW_IN_W;
    return a;
}

static void *mem_topology_section(const banks *b, size_t *size)
{
    *size = sizeof(struct mem_topology) + (size_t)(b->n - 1) * sizeof(struct mem_data);
    struct mem_topology *mt = calloc(1, *size);
    if (!mt) return NULL;
    mt->m_count = b->n;
    for (int k = 0; k < b->n; k++) {
        struct mem_data *md = &mt->m_mem_data[k];
        md->m_type = strncmp(b->tag[k], "HBM", 3) == 0    ? MEM_HBM
                   : strncmp(b->tag[k], "HOST", 4) == 0 ? MEM_HOST
                                                        : MEM_DDR4;
        md->m_used = 1;
        md->m_size = 256u * 1024u;                          /* KB: 256 MiB */
        md->m_base_address = 0x4000000000ull + (uint64_t)k * 0x10000000ull;
        snprintf((char *)md->m_tag, sizeof md->m_tag, "%s", b->tag[k]);
    }
    return mt;
}

static void *ip_layout_section(const char *kernel, size_t *size)
{
    *size = sizeof(struct ip_layout);
    struct ip_layout *ip = calloc(1, *size);
    if (!ip) return NULL;
    ip->m_count = 1;
    ip->m_ip_data[0].m_type = IP_KERNEL;
    /* ap_ctrl_hs, interrupt enabled */
    ip->m_ip_data[0].properties = (AP_CTRL_HS << IP_CONTROL_SHIFT) | IP_INT_ENABLE_MASK;
    ip->m_ip_data[0].m_base_address = 0x1800000;
    snprintf((char *)ip->m_ip_data[0].m_name, sizeof ip->m_ip_data[0].m_name, "%s:%s_1",
             kernel, kernel);
    return ip;
}

/* One connection per m_axi argument that has a bank. */
static void *connectivity_section(const tsr_xclbin_desc *d, const banks *b, size_t *size)
{
    *size = sizeof(struct connectivity) + (TSR_XW_NARGS - 1u) * sizeof(struct connection);
    struct connectivity *c = calloc(1, *size);
    if (!c) return NULL;
    for (int a = 0; a < TSR_XW_NARGS; a++) {
        if (d->omit_arg == a + 1 || d->scalar_arg == a + 1 || d->unbanked_arg == a + 1) continue;
        struct connection *x = &c->m_connection[c->m_count++];
        x->arg_index = arg_id(d, a);
        x->m_ip_layout_index = 0;
        x->mem_data_index = b->of_arg[a];
    }
    return c;
}

/* Append printf output to a growing string. */
typedef struct sbuf { char *s; size_t n, cap; int oom; } sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) { b->oom = 1; return; }
        if (b->s && b->n + (size_t)w < b->cap) { b->n += (size_t)w; return; }
        size_t cap = (b->cap + (size_t)w + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) { b->oom = 1; return; }
        b->s = s;
        b->cap = cap;
    }
}

/* The kernel XML, as v++ writes it for tessera_top: one m_axi port per
 * bundle (gmem0 ctl, out_w, out_f; gmem1 in_w, in_f, as the INTERFACE
 * pragmas of kernels/tsr_kernel.c bundle them), 64-bit pointer arguments in
 * the control register map from 0x10. */
static void *kernel_xml_section(const tsr_xclbin_desc *d, const char *kernel,
                                const char *platform, size_t *size)
{
    static const struct { const char *name, *port, *type; } args[TSR_XW_NARGS] = {
        { "ctl", "M_AXI_GMEM0", "unsigned int*" },
        { "in_w", "M_AXI_GMEM1", "unsigned int*" },
        { "in_f", "M_AXI_GMEM1", "float*" },
        { "out_w", "M_AXI_GMEM0", "unsigned int*" },
        { "out_f", "M_AXI_GMEM0", "float*" },
    };
    sbuf b = { 0 };
    sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<project name=\"tessera\">\n"
                  "  <platform vendor=\"xilinx\" boardid=\"test\" name=\"%s\" featureRomTime=\"0\">\n"
                  "    <version major=\"1\" minor=\"0\"/>\n"
                  "    <description/>\n"
                  "    <device name=\"fpga0\" fpgaDevice=\"test\" addrWidth=\"0\">\n"
                  "      <systemClocks/>\n"
                  "      <core name=\"OCL_REGION_0\" target=\"hw\" type=\"clc_region\" "
                  "clockFreq=\"300MHz\" numComputeUnits=\"1\">\n"
                  "        <kernel name=\"%s\" language=\"c\" vlnv=\"xilinx.com:hls:%s:1.0\" "
                  "preferredWorkGroupSizeMultiple=\"0\" workGroupSize=\"1\" interrupt=\"true\" "
                  "hwControlProtocol=\"ap_ctrl_hs\">\n", platform, kernel, kernel);
    for (int p = 0; p < 2; p++)
        sb_printf(&b, "          <port name=\"M_AXI_GMEM%d\" mode=\"master\" range=\"0xFFFFFFFF\" "
                      "dataWidth=\"32\" portType=\"addressable\" base=\"0x0\"/>\n", p);
    sb_printf(&b, "          <port name=\"S_AXI_CONTROL\" mode=\"slave\" range=\"0x1000\" "
                  "dataWidth=\"32\" portType=\"addressable\" base=\"0x0\"/>\n");
    for (int a = 0; a < TSR_XW_NARGS; a++) {
        if (d->omit_arg == a + 1) continue;
        int scalar = d->scalar_arg == a + 1;
        unsigned size = scalar ? 0x4 : 0x8, offset = 0x10 + 0xc * (unsigned)a;
        sb_printf(&b, "          <arg name=\"%s\" addressQualifier=\"%d\" id=\"%d\" port=\"%s\" "
                      "size=\"0x%x\" offset=\"0x%x\" hostOffset=\"0x0\" hostSize=\"0x%x\" "
                      "type=\"%s\"/>\n", args[a].name, scalar ? 0 : 1, arg_id(d, a),
                  scalar ? "S_AXI_CONTROL" : args[a].port, size, offset, size,
                  scalar ? "unsigned int" : args[a].type);
    }
    sb_printf(&b, "          <instance name=\"%s_1\">\n"
                  "            <addrRemap base=\"0x1800000\" range=\"0x10000\" port=\"S_AXI_CONTROL\"/>\n"
                  "          </instance>\n"
                  "        </kernel>\n"
                  "      </core>\n"
                  "    </device>\n"
                  "  </platform>\n"
                  "</project>\n", kernel);
    if (b.oom) { free(b.s); return NULL; }
    *size = b.n;
    return b.s;
}

static void *text_section(const char *text, size_t *size)
{
    *size = strlen(text);
    char *s = malloc(*size + 1);
    if (s) memcpy(s, text, *size + 1);
    return s;
}

/* ------------------------------------------------------------------------ */
/* The file                                                                   */

int tsr_xclbin_write(const char *path, const tsr_xclbin_desc *d)
{
    const char *kernel = d->kernel ? d->kernel : "tessera_top";
    const char *platform = d->platform ? d->platform : "xilinx_u55c_gen3x16_xdma_3_202210_1";
    banks bk;
    collect_banks(d, &bk);

    section sec[MAX_SECTIONS];
    int ns = 0;
    sec[ns] = (section){ MEM_TOPOLOGY, "mem_topology", NULL, 0 };
    sec[ns].data = mem_topology_section(&bk, &sec[ns].size); ns++;
    sec[ns] = (section){ IP_LAYOUT, "ip_layout", NULL, 0 };
    sec[ns].data = ip_layout_section(kernel, &sec[ns].size); ns++;
    sec[ns] = (section){ CONNECTIVITY, "connectivity", NULL, 0 };
    sec[ns].data = connectivity_section(d, &bk, &sec[ns].size); ns++;
    sec[ns] = (section){ EMBEDDED_METADATA, "xml", NULL, 0 };
    sec[ns].data = kernel_xml_section(d, kernel, platform, &sec[ns].size); ns++;
    sec[ns] = (section){ BUILD_METADATA, "build", NULL, 0 };
    sec[ns].data = text_section("{\"build_metadata\":{\"xclbin\":{\"generated_by\":"
                                "{\"name\":\"tessera tests/support/xclbin_write.c\"}}}}",
                                &sec[ns].size); ns++;
    if (d->profile) {
        char kv[2048];
        snprintf(kv, sizeof kv, "{\"key_values\":[{\"key\":\"tessera_profile\",\"value\":\"%s\"}]}",
                 d->profile);
        sec[ns] = (section){ KEYVALUE_METADATA, "keyvalue", NULL, 0 };
        sec[ns].data = text_section(kv, &sec[ns].size); ns++;
    }

    int rc = -1, err = ENOMEM;
    size_t head = sizeof(struct axlf) + (size_t)(ns - 1) * sizeof(struct axlf_section_header);
    size_t total = (head + 7u) & ~(size_t)7u;
    for (int i = 0; i < ns; i++) {
        if (!sec[i].data) goto out;
        total += (sec[i].size + 7u) & ~(size_t)7u;
    }
    unsigned char *file = calloc(1, total);
    if (!file) goto out;
    struct axlf *top = (struct axlf *)(void *)file;
    memcpy(top->m_magic, "xclbin2", 8);
    top->m_signature_length = -1;
    memset(top->reserved, 0xff, sizeof top->reserved);
    memset(top->m_keyBlock, 0xff, sizeof top->m_keyBlock);
    top->m_uniqueId = 0x7473720000000001ull;
    top->m_header.m_length = total;
    top->m_header.m_timeStamp = 1700000000u;
    top->m_header.m_versionMajor = 2;
    top->m_header.m_versionMinor = 13;
    top->m_header.m_mode = XCLBIN_FLAT;
    snprintf((char *)top->m_header.m_platformVBNV, sizeof top->m_header.m_platformVBNV, "%s",
             platform);
    /* A fixed, non-zero uuid that differs per kernel name and profile. */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = kernel; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    for (const char *s = d->profile ? d->profile : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    memcpy(top->m_header.uuid, "tsrtest\0", 8);
    memcpy(top->m_header.uuid + 8, &h, 8);
    top->m_header.m_numSections = (uint32_t)ns;

    size_t at = (head + 7u) & ~(size_t)7u;
    for (int i = 0; i < ns; i++) {
        struct axlf_section_header *sh = &top->m_sections[i];
        sh->m_sectionKind = sec[i].kind;
        snprintf(sh->m_sectionName, sizeof sh->m_sectionName, "%s", sec[i].name);
        sh->m_sectionOffset = at;
        sh->m_sectionSize = sec[i].size;
        memcpy(file + at, sec[i].data, sec[i].size);
        at += (sec[i].size + 7u) & ~(size_t)7u;
    }
    FILE *f = fopen(path, "wb");
    if (!f) { err = errno; free(file); goto out; }
    size_t w = fwrite(file, 1, total, f);
    int cl = fclose(f);
    free(file);
    if (w != total || cl != 0) { err = EIO; goto out; }
    rc = 0;
out:
    for (int i = 0; i < ns; i++) free(sec[i].data);
    if (rc) errno = err;
    return rc;
}

#else /* !TSR_HAVE_XRT */

int tsr_xclbin_write(const char *path, const tsr_xclbin_desc *d)
{
    (void)path;
    (void)d;
    errno = ENOSYS;
    return -1;
}

#endif
