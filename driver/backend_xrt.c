/*
 * backend_xrt.c - the XRT backend: drives tessera_top on an Alveo card
 * through XRT's C API, behind the same vtable and command interface as
 * backend_emu.c.
 *
 *   open:    xclProbe -> xrtDeviceOpen(index) -> read + check the xclbin
 *            (kernel tessera_top, arguments cmd/in/out/cancel, banks,
 *            tessera_profile) -> xrtDeviceLoadXclbinFile -> kernel, one run
 *            handle, one buffer per m_axi argument in the group
 *            (xrtKernelArgGroupId) of the bank CONNECTIVITY names
 *   load:    fit against the xclbin's profile, then CONFIGURE and one LOAD
 *            run per weight-image chunk (skipped when the same image is
 *            resident, as in emu)
 *   prefill: token ids -> `in`, one PREFILL run
 *   decode:  one DECODE run; the host polls out[0] (a 4-byte sync) while it
 *            runs, reads new token ids, and writes the cancel word on cancel
 *
 * Link accounting matches emu: a run costs its 32 command words h2d plus
 * the bytes synced to `in`; bytes synced from `out` count d2h.  Two 4-byte
 * writes have no emu counterpart and are counted too: clearing out[0]
 * before each decode (so a poll never sees the previous count) and the
 * cancel word (set on cancel, cleared after; cleared once at the first
 * load, charged to the load phase).  While a decode streams, each poll of
 * out[0] costs 4 bytes d2h.
 *
 * The kernel's status is the ap_return register (offset 0x10 of the
 * ap_ctrl_hs register map), read with exclusive access to the compute unit.
 *
 * XRT is optional at build time (TSR_HAVE_XRT) and at link time: the XRT
 * functions are weak references, so libtessera links without XRT and the
 * program chooses the shim (tessera: libxrt_core; tests: libxrt_noop).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_xrt.h"
#include "weight_image.h"

#define KERNEL_NAME  "tessera_top"
#define CMD_BYTES    (4u * TSR_CMD_WORDS)
#define AP_RETURN    0x10u   /* ap_ctrl_hs register map: return value */

#ifdef TSR_HAVE_XRT

#include <stddef.h>
#include <xclbin.h>
#include <xrt.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>
#include <experimental/xrt_ini.h>

/* xclbin_meta.c reads the file with its own offsets: they are these. */
_Static_assert(offsetof(struct axlf, m_header) == 304, "axlf header offset");
_Static_assert(offsetof(struct axlf, m_sections) == 456, "axlf sections offset");
_Static_assert(offsetof(struct axlf_header, m_platformVBNV) == 48, "VBNV offset");
_Static_assert(offsetof(struct axlf_header, uuid) == 112, "uuid offset");
_Static_assert(offsetof(struct axlf_header, m_numSections) == 144, "numSections offset");
_Static_assert(offsetof(struct axlf_section_header, m_sectionOffset) == 24, "section offset");
_Static_assert(offsetof(struct mem_topology, m_mem_data) == 8, "mem_data offset");
_Static_assert(offsetof(struct mem_data, m_tag) == 24, "mem tag offset");
_Static_assert(offsetof(struct connectivity, m_connection) == 4, "connection offset");
_Static_assert(sizeof(struct connection) == 12, "connection size");

/* Weak: resolved when the program links XRT, NULL otherwise. */
#pragma weak xclProbe
#pragma weak xclGetDeviceInfo2
#pragma weak xrtIniStringSet
#pragma weak xrtDeviceOpen
#pragma weak xrtDeviceClose
#pragma weak xrtDeviceToXclDevice
#pragma weak xrtDeviceLoadXclbinFile
#pragma weak xrtDeviceGetXclbinUUID
#pragma weak xrtPLKernelOpenExclusive
#pragma weak xrtKernelClose
#pragma weak xrtKernelArgGroupId
#pragma weak xrtKernelReadRegister
#pragma weak xrtBOAlloc
#pragma weak xrtBOFree
#pragma weak xrtBOMap
#pragma weak xrtBOSync
#pragma weak xrtRunOpen
#pragma weak xrtRunClose
#pragma weak xrtRunSetArg
#pragma weak xrtRunStart
#pragma weak xrtRunWait
#pragma weak xrtRunWaitFor

struct tsr_backend {
    xrtDeviceHandle   dev;
    xrtKernelHandle   kern;
    xrtRunHandle      run;
    xrtBufferHandle   bo[TSR_XRT_NARGS];   /* [ARG_CMD] unused                 */
    uint32_t         *map[TSR_XRT_NARGS];  /* host maps of the buffers          */
    tsr_xrt_info      info;
    int               pes;                 /* PEs the mesh uses                 */
    tsr_link_counters link;
    int               loaded;              /* an image is resident              */
    uint64_t          image_hash;
    int               cancel_clear;        /* the device's cancel word is 0     */
    tsr_kconfig       cfg;                 /* the configuration loaded          */
};

static tsr_xrt_trace g_trace;              /* tests only (backend_xrt.h)        */

void tsr_xrt_set_trace(const tsr_xrt_trace *t)
{
    if (t) g_trace = *t;
    else memset(&g_trace, 0, sizeof g_trace);
}

int tsr_xrt_info_get(tsr_backend *b, tsr_xrt_info *info)
{
    if (!b || !b->dev) return TSR_ERR_ARG;
    *info = b->info;
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Buffers and runs                                                           */

static const char *const arg_names[TSR_XRT_NARGS] = { "cmd", "in", "out", "cancel" };

static int kfail(int k, const char *what, tsr_err *e) { return tsr_kstatus_err(k, "xrt", what, e); }

/* Sync bytes at offset of buffer arg in direction dir, charging phase. */
static int bo_sync(tsr_backend *b, int arg, int dir, size_t bytes, size_t offset, int phase,
                   tsr_err *e)
{
    if (bytes == 0) return TSR_OK;
    if (g_trace.on_sync) g_trace.on_sync(arg, dir, bytes, offset, g_trace.user);
    if (xrtBOSync(b->bo[arg], dir == TSR_XRT_H2D ? XCL_BO_SYNC_BO_TO_DEVICE
                                                 : XCL_BO_SYNC_BO_FROM_DEVICE,
                  bytes, offset) != 0)
        return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: syncing %zu bytes of '%s' %s the device "
                          "failed", bytes, arg_names[arg], dir == TSR_XRT_H2D ? "to" : "from");
    if (dir == TSR_XRT_H2D) b->link.h2d[phase] += bytes;
    else b->link.d2h[phase] += bytes;
    return TSR_OK;
}

/* Start one run with these command words (the m_axi arguments are set once
 * at open). */
static int run_start(tsr_backend *b, int phase, const uint32_t cmd[TSR_CMD_WORDS], tsr_err *e)
{
    uint32_t words[TSR_CMD_WORDS];
    memcpy(words, cmd, sizeof words);
    if (xrtRunSetArg(b->run, TSR_XRT_ARG_CMD, words) != 0 || xrtRunStart(b->run) != 0)
        return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot start %s (op %u)", KERNEL_NAME,
                          cmd[TSR_CMD_OP]);
    b->link.h2d[phase] += CMD_BYTES;
    b->link.invocations[phase]++;
    if (g_trace.on_run)
        g_trace.on_run(cmd, b->map[TSR_XRT_ARG_OUT], b->info.bo_bytes[TSR_XRT_ARG_OUT] / 4u,
                       g_trace.user);
    return TSR_OK;
}

/* The finished run's kernel status into *k. */
static int run_status(tsr_backend *b, const uint32_t cmd[TSR_CMD_WORDS], int state, int *k,
                      tsr_err *e)
{
    if (state != ERT_CMD_STATE_COMPLETED)
        return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: %s (op %u) ended in state %d, not completed",
                          KERNEL_NAME, cmd[TSR_CMD_OP], state);
    if (g_trace.status) {
        *k = g_trace.status(cmd, g_trace.user);
        return TSR_OK;
    }
    uint32_t v = 0;
    if (xrtKernelReadRegister(b->kern, AP_RETURN, &v) != 0)
        return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot read %s's return register (0x%x)",
                          KERNEL_NAME, AP_RETURN);
    *k = (int)v;
    return TSR_OK;
}

/* One complete command: in_bytes of in to `in`, run, out_bytes of `out`
 * back into out.  *k gets the kernel status. */
static int exec(tsr_backend *b, int phase, const uint32_t cmd[TSR_CMD_WORDS], const void *in,
                size_t in_bytes, void *out, size_t out_bytes, int *k, tsr_err *e)
{
    int rc;
    if (in_bytes > b->info.bo_bytes[TSR_XRT_ARG_IN] || out_bytes > b->info.bo_bytes[TSR_XRT_ARG_OUT])
        return tsr_seterr(e, TSR_ERR_RANGE, "xrt: op %u moves %zu/%zu bytes, buffers hold %zu/%zu",
                          cmd[TSR_CMD_OP], in_bytes, out_bytes, b->info.bo_bytes[TSR_XRT_ARG_IN],
                          b->info.bo_bytes[TSR_XRT_ARG_OUT]);
    if (in_bytes) {
        memcpy(b->map[TSR_XRT_ARG_IN], in, in_bytes);
        if ((rc = bo_sync(b, TSR_XRT_ARG_IN, TSR_XRT_H2D, in_bytes, 0, phase, e))) return rc;
    }
    if ((rc = run_start(b, phase, cmd, e))) return rc;
    int state = (int)xrtRunWait(b->run);
    if ((rc = run_status(b, cmd, state, k, e))) return rc;
    if (out_bytes) {
        if ((rc = bo_sync(b, TSR_XRT_ARG_OUT, TSR_XRT_D2H, out_bytes, 0, phase, e))) return rc;
        memcpy(out, b->map[TSR_XRT_ARG_OUT], out_bytes);
    }
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                               */

static void xrt_close(tsr_backend *b)
{
    if (!b) return;
    if (b->run) xrtRunClose(b->run);
    for (int a = TSR_XRT_ARG_IN; a < TSR_XRT_NARGS; a++)
        if (b->bo[a]) xrtBOFree(b->bo[a]);
    if (b->kern) xrtKernelClose(b->kern);
    if (b->dev) xrtDeviceClose(b->dev);
    free(b);
}

/* XRT prints a banner and its own error lines unless Runtime.runtime_log
 * is "null".  The library speaks through return codes, so it silences XRT
 * before the first XRT call -- unless the user points XRT_INI_PATH at an
 * xrt.ini of their own, which then decides. */
static void quiet_xrt(void)
{
    static int done;
    if (done) return;
    done = 1;
    const char *ini = getenv("XRT_INI_PATH");
    if (!ini || !*ini) xrtIniStringSet("Runtime.runtime_log", "null");
}

/* The default xclbin: the one bitstreams/tessera_*_<platform>.xclbin for
 * the card's platform ($TESSERA_BITSTREAMS overrides the directory). */
static int default_xclbin(tsr_backend *b, int index, char *out, size_t cap, tsr_err *e)
{
    const char *dir = getenv("TESSERA_BITSTREAMS");
    if (!dir || !*dir) dir = "bitstreams";
    char platform[256] = "";
    struct xclDeviceInfo2 di;
    memset(&di, 0, sizeof di);
    xclDeviceHandle xh = xrtDeviceToXclDevice(b->dev);
    if (xh && xclGetDeviceInfo2(xh, &di) == 0) {
        memcpy(platform, di.mName, sizeof platform - 1);
        platform[sizeof platform - 1] = '\0';
    }
    char suffix[300];
    if (platform[0]) snprintf(suffix, sizeof suffix, "_%s.xclbin", platform);
    else snprintf(suffix, sizeof suffix, ".xclbin");   /* platform unknown: any */
    DIR *d = opendir(dir);
    int found = 0;
    char names[256] = "";
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t nl = strlen(de->d_name), sl = strlen(suffix);
            if (strncmp(de->d_name, "tessera_", 8) || nl < sl ||
                strcmp(de->d_name + nl - sl, suffix))
                continue;
            if (found++ == 0) snprintf(out, cap, "%s/%s", dir, de->d_name);
            size_t at = strlen(names);
            snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "", de->d_name);
        }
        closedir(d);
    }
    if (found == 1) return TSR_OK;
    if (found == 0)
        return tsr_seterr(e, TSR_ERR_IO,
                          "xrt:%d: no tessera_<profile>_%s.xclbin in %s/ (build one with make "
                          "xclbin PLATFORM=%s PROFILE=..., or pass --xclbin FILE)", index,
                          platform[0] ? platform : "<platform>", dir,
                          platform[0] ? platform : "<platform>");
    return tsr_seterr(e, TSR_ERR_ARG, "xrt:%d: %d xclbins in %s/ fit platform %s (%s): pass "
                      "--xclbin FILE", index, found, dir, platform[0] ? platform : "?", names);
}

/* Check the kernel and its arguments in m (read from path). */
static int check_kernel(const char *path, const tsr_xmeta *m, tsr_err *e)
{
    if (!m->has_kernel)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: no kernel '%s' in the xclbin (it has: %s)",
                          path, KERNEL_NAME, m->kernels[0] ? m->kernels : "no kernels");
    for (int a = 0; a < TSR_XRT_NARGS; a++) {
        const tsr_xarg *g = tsr_xmeta_arg(m, arg_names[a]);
        if (!g)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                              "%s: kernel %s has no argument '%s' (expected cmd, in, out, "
                              "cancel)", path, KERNEL_NAME, arg_names[a]);
        if (g->id != a)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: kernel %s argument '%s' has index "
                              "%d, expected %d", path, KERNEL_NAME, g->name, g->id, a);
        if (a == TSR_XRT_ARG_CMD) {
            /* XRT 2.13 passes a multi-word s_axilite argument by pointer only
             * when its type says uint* or int*. */
            if (g->address_qualifier != 0 || g->size != CMD_BYTES ||
                (strcmp(g->type, "uint*") && strcmp(g->type, "int*")))
                return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                                  "%s: kernel %s argument 'cmd' must be an s_axilite uint*/int* "
                                  "of %u bytes (found addressQualifier %d, %u bytes, type '%s')",
                                  path, KERNEL_NAME, CMD_BYTES, g->address_qualifier, g->size,
                                  g->type);
        } else {
            if (g->address_qualifier != 1)
                return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                                  "%s: kernel %s argument '%s' must be m_axi global memory "
                                  "(addressQualifier 1), found %d", path, KERNEL_NAME, g->name,
                                  g->address_qualifier);
            if (g->mem_index < 0)
                return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                                  "%s: kernel %s argument '%s' is connected to no memory bank "
                                  "(CONNECTIVITY)", path, KERNEL_NAME, g->name);
        }
    }
    if (!m->has_profile)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                          "%s: no tessera_profile key in KEYVALUE_METADATA, so the kernel "
                          "profile is unknown (make xclbin adds it; or xclbinutil "
                          "--add-key-value USER:tessera_profile:$(profile_kv))", path);
    return TSR_OK;
}

static size_t round_up(size_t v, size_t to) { return (v + to - 1u) / to * to; }

static int xrt_open(const tsr_devspec *spec, tsr_backend **out, tsr_err *e)
{
    *out = NULL;
    if (!xrtDeviceOpen || !xclProbe)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                          "xrt:%d: this program was not linked with XRT (link -lxrt_coreutil "
                          "-Wl,--no-as-needed -lxrt_core -Wl,--as-needed)", spec->index);
    if (spec->part[0])
        return tsr_seterr(e, TSR_ERR_ARG, "xrt:%d: part=%s is for the emulator; a card's "
                          "capacity comes from its xclbin", spec->index, spec->part);
    quiet_xrt();
    unsigned n = xclProbe();
    if (n == 0)
        return tsr_seterr(e, TSR_ERR_NODEV, "no Xilinx device found (xrt:%d): XRT sees no card "
                          "on this machine", spec->index);
    if ((unsigned)spec->index >= n)
        return tsr_seterr(e, TSR_ERR_NODEV, "no Xilinx device found (xrt:%d): XRT sees %u "
                          "card(s), indices 0..%u", spec->index, n, n - 1u);
    tsr_backend *b = calloc(1, sizeof *b);
    if (!b) return tsr_seterr(e, TSR_ERR_NOMEM, "xrt: out of memory");
    int rc;
    errno = 0;
    b->dev = xrtDeviceOpen((unsigned)spec->index);
    if (!b->dev) {
        rc = tsr_seterr(e, TSR_ERR_NODEV, "no Xilinx device found (xrt:%d): cannot open it%s%s",
                        spec->index, errno ? ": " : "", errno ? strerror(errno) : "");
        goto fail;
    }

    /* The xclbin: read and check it ourselves before XRT sees it. */
    tsr_xrt_info *in = &b->info;
    if (spec->xclbin[0]) snprintf(in->xclbin, sizeof in->xclbin, "%s", spec->xclbin);
    else if ((rc = default_xclbin(b, spec->index, in->xclbin, sizeof in->xclbin, e))) goto fail;
    tsr_xmeta *m = malloc(sizeof *m);
    if (!m) { rc = tsr_seterr(e, TSR_ERR_NOMEM, "xrt: out of memory"); goto fail; }
    rc = tsr_xmeta_read(in->xclbin, KERNEL_NAME, m, e);
    if (!rc) rc = check_kernel(in->xclbin, m, e);
    if (!rc) {
        memcpy(in->platform, m->platform, sizeof in->platform);
        in->profile = m->profile;
        for (int a = 0; a < TSR_XRT_NARGS; a++)
            memcpy(in->bank[a], tsr_xmeta_arg(m, arg_names[a])->bank, sizeof in->bank[a]);
    }
    free(m);
    if (rc) goto fail;
    const tsr_xprofile *p = &in->profile;
    b->pes = spec->pes ? spec->pes : (int)p->pes;
    if (b->pes < 1 || (uint32_t)b->pes > p->pes) {
        rc = tsr_seterr(e, TSR_ERR_ARG, "xrt:%d: pes=%d outside 1..%u (profile %s of %s)",
                        spec->index, b->pes, p->pes, p->name, in->xclbin);
        goto fail;
    }

    /* Load it, open the compute unit (exclusive: the status register is
     * read after each run) and one run handle. */
    if (xrtDeviceLoadXclbinFile(b->dev, in->xclbin) != 0) {
        rc = tsr_seterr(e, TSR_ERR_DEVICE, "%s: XRT cannot load it on device %d (platform %s)",
                        in->xclbin, spec->index, in->platform);
        goto fail;
    }
    xuid_t uuid;
    if (xrtDeviceGetXclbinUUID(b->dev, uuid) != 0 ||
        !(b->kern = xrtPLKernelOpenExclusive(b->dev, uuid, KERNEL_NAME))) {
        rc = tsr_seterr(e, TSR_ERR_DEVICE, "%s: XRT cannot open kernel %s exclusively (in use "
                        "by another process?)", in->xclbin, KERNEL_NAME);
        goto fail;
    }

    /* Buffers: in holds a LOAD chunk or a prompt; out the largest answer
     * (decode ids, logits, counters); cancel one word. */
    size_t out_words = 1u + p->seq;
    if (p->vocab > out_words) out_words = p->vocab;
    if (sizeof(tsr_kcounters) / 4u > out_words) out_words = sizeof(tsr_kcounters) / 4u;
    in->bo_bytes[TSR_XRT_ARG_IN] = round_up(TSR_WIMAGE_CHUNK > 4u * p->seq ? TSR_WIMAGE_CHUNK
                                                                          : 4u * p->seq, 4096);
    in->bo_bytes[TSR_XRT_ARG_OUT] = round_up(4u * out_words, 4096);
    in->bo_bytes[TSR_XRT_ARG_CANCEL] = 4096;
    in->group[TSR_XRT_ARG_CMD] = -1;
    for (int a = TSR_XRT_ARG_IN; a < TSR_XRT_NARGS; a++) {
        in->group[a] = xrtKernelArgGroupId(b->kern, a);
        if (in->group[a] < 0 ||
            !(b->bo[a] = xrtBOAlloc(b->dev, in->bo_bytes[a], 0, (xrtMemoryGroup)in->group[a])) ||
            !(b->map[a] = xrtBOMap(b->bo[a]))) {
            rc = tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot allocate %zu bytes for '%s' in bank "
                            "%s (group %d)", in->bo_bytes[a], arg_names[a], in->bank[a],
                            in->group[a]);
            goto fail;
        }
        memset(b->map[a], 0, in->bo_bytes[a]);
    }
    if (!(b->run = xrtRunOpen(b->kern)) ||
        xrtRunSetArg(b->run, TSR_XRT_ARG_IN, b->bo[TSR_XRT_ARG_IN]) != 0 ||
        xrtRunSetArg(b->run, TSR_XRT_ARG_OUT, b->bo[TSR_XRT_ARG_OUT]) != 0 ||
        xrtRunSetArg(b->run, TSR_XRT_ARG_CANCEL, b->bo[TSR_XRT_ARG_CANCEL]) != 0) {
        rc = tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot set up a run of %s", KERNEL_NAME);
        goto fail;
    }
    *out = b;
    return TSR_OK;
fail:
    xrt_close(b);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Fit and load                                                               */

/* The CONFIGURE block for m on this card: the emu's, with the mesh picked
 * under the xclbin profile's column limit. */
static int xrt_config(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o,
                      tsr_kconfig *kc, tsr_err *e)
{
    int rc = tsr_wimage_config(m, o, b->pes, kc, e);
    if (rc) return rc;
    uint32_t P = (uint32_t)b->pes, C = 1;
    while (2u * C <= b->info.profile.cols && (2u * C) * (2u * C) <= P && P % (2u * C) == 0) C *= 2u;
    kc->mesh_rows = P / C;
    kc->mesh_cols = C;
    return TSR_OK;
}

static int xrt_fit(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o,
                   uint64_t *need_bytes, uint64_t *have_bytes, tsr_err *e)
{
    const tsr_xprofile *p = &b->info.profile;
    tsr_kconfig kc;
    int rc = xrt_config(b, m, o, &kc, e);
    if (rc) return rc;
    tsr_wneed nd;
    tsr_wimage_need(&kc, &nd);
    uint64_t have = (uint64_t)b->pes * (p->i8_bytes + 4ull * p->f32_words) +
                    4ull * (2ull * p->layers + 1u) * p->dim;
    if (need_bytes) *need_bytes = nd.total_bytes;
    if (have_bytes) *have_bytes = have;
    /* Shapes against the profile the xclbin was synthesized for. */
    struct { const char *what; uint32_t v, max; } lim[] = {
        { "dim", kc.dim, p->dim },
        { "hidden_dim", kc.hidden_dim, p->hidden },
        { "n_layers", kc.n_layers, p->layers },
        { "n_heads", kc.n_heads, p->heads },
        { "n_kv_heads", kc.n_kv_heads, p->kv_heads },
        { "head_size", kc.n_heads ? kc.dim / kc.n_heads : 0, p->head_size },
        { "vocab_size", kc.vocab_size, p->vocab },
        { "seq_len", kc.seq_len, p->seq },
        { "group size", kc.group, p->group_max },
        { "mesh rows", kc.mesh_rows, p->rows },
    };
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].v > lim[i].max)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: %s %u exceeds the maximum %u of "
                              "profile %s (%s)", m->path, lim[i].what, lim[i].v, lim[i].max,
                              p->name, b->info.xclbin);
    if (kc.group < p->group_min)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: group size %u is below the minimum %u of "
                          "profile %s (%s)", m->path, kc.group, p->group_min, p->name,
                          b->info.xclbin);
    /* Slots are KV regions: too many is a capacity limit, so the caller
     * may retry with fewer. */
    if (kc.n_slots > p->slots)
        return tsr_seterr(e, TSR_ERR_CAPACITY, "%s: %u sequence slots, profile %s (%s) has %u",
                          m->path, kc.n_slots, p->name, b->info.xclbin, p->slots);
    if (kc.n_heads == 0 || kc.n_kv_heads == 0 || kc.dim % kc.n_heads ||
        kc.n_heads % kc.n_kv_heads || (kc.dim / kc.n_heads) % 2u)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: dim %u, %u heads, %u kv heads: heads "
                          "must divide dim (even head size) and kv heads must divide heads",
                          m->path, kc.dim, kc.n_heads, kc.n_kv_heads);
    /* Per-PE SRAM, from the kernel's own layout arithmetic. */
    if (nd.pe_i8_max > p->i8_bytes)
        return tsr_seterr(e, TSR_ERR_CAPACITY, "%s: needs %llu bytes of int8 tiles on one of %d "
                          "PEs, a PE of profile %s (%s) has %u", m->path,
                          (unsigned long long)nd.pe_i8_max, b->pes, p->name, b->info.xclbin,
                          p->i8_bytes);
    if (nd.pe_f32_max > p->f32_words)
        return tsr_seterr(e, TSR_ERR_CAPACITY, "%s: needs %llu bytes of fp32 weights/scales + "
                          "KV cache on one of %d PEs, a PE of profile %s (%s) has %llu",
                          m->path, (unsigned long long)nd.pe_f32_max * 4u, b->pes, p->name,
                          b->info.xclbin, (unsigned long long)p->f32_words * 4u);
    return TSR_OK;
}

static int xrt_load(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e)
{
    int rc = xrt_fit(b, m, o, NULL, NULL, e);
    if (rc) return rc;
    tsr_kconfig kc;
    tsr_wimage img;
    if ((rc = xrt_config(b, m, o, &kc, e))) return rc;
    if ((rc = tsr_wimage_build(m, &kc, &img, e))) return rc;
    if (b->loaded && b->image_hash == img.hash) {
        tsr_wimage_free(&img);   /* the same image is resident: nothing moves */
        return TSR_OK;
    }
    b->loaded = 0;
    if (!b->cancel_clear) {
        b->map[TSR_XRT_ARG_CANCEL][0] = 0;
        if ((rc = bo_sync(b, TSR_XRT_ARG_CANCEL, TSR_XRT_H2D, 4, 0, TSR_PHASE_LOAD, e))) goto out;
        b->cancel_clear = 1;
    }
    uint32_t cfgw[TSR_KCONFIG_WORDS], fitw[TSR_KFIT_WORDS];
    memcpy(cfgw, &kc, sizeof cfgw);
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_CONFIGURE, 0, 0, 0, 0, 0, 0, 0 };
    int k = 0;
    if ((rc = exec(b, TSR_PHASE_LOAD, cmd, cfgw, sizeof cfgw, fitw, sizeof fitw, &k, e))) goto out;
    if (k) { rc = kfail(k, "configure", e); goto out; }
    uint64_t sent = 0;
    for (int i = 0; i < img.n_chunks; i++) {
        const tsr_wchunk *ch = &img.chunks[i];
        uint32_t lc[TSR_CMD_WORDS] = { TSR_OP_LOAD, 0, ch->pe, ch->region, ch->offset,
                                       ch->length, 0, 0 };
        if ((rc = exec(b, TSR_PHASE_LOAD, lc, ch->data, ch->nbytes, NULL, 0, &k, e))) goto out;
        if (k) { rc = kfail(k, "load chunk", e); goto out; }
        sent += ch->nbytes;
        if (o->progress) o->progress(sent, img.bytes, o->progress_user);
    }
    b->loaded = 1;
    b->image_hash = img.hash;
    b->cfg = kc;
out:
    tsr_wimage_free(&img);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Sequences                                                                  */

static int simple(tsr_backend *b, int phase, const uint32_t cmd[TSR_CMD_WORDS], const char *what,
                  tsr_err *e)
{
    int k = 0, rc = exec(b, phase, cmd, NULL, 0, NULL, 0, &k, e);
    return rc ? rc : k ? kfail(k, what, e) : TSR_OK;
}

static int xrt_reset(tsr_backend *b, int slot, tsr_err *e)
{
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_RESET, (uint32_t)slot, 0, 0, 0, 0, 0, 0 };
    return simple(b, TSR_PHASE_PREFILL, cmd, "reset", e);
}

static int xrt_truncate(tsr_backend *b, int slot, int pos, int pending, tsr_err *e)
{
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_TRUNCATE, (uint32_t)slot, (uint32_t)pos,
                                    (uint32_t)pending, 0, 0, 0, 0 };
    return simple(b, TSR_PHASE_PREFILL, cmd, "truncate", e);
}

static int xrt_prefill(tsr_backend *b, int slot, const int *tokens, int n, tsr_err *e)
{
    if (n <= 0) return TSR_OK;
    if ((size_t)n * 4u > b->info.bo_bytes[TSR_XRT_ARG_IN])
        return tsr_seterr(e, TSR_ERR_RANGE, "xrt: prefill of %d tokens exceeds the input buffer", n);
    uint32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return tsr_seterr(e, TSR_ERR_NOMEM, "xrt: out of memory");
    for (int i = 0; i < n; i++) ids[i] = (uint32_t)tokens[i];
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_PREFILL, (uint32_t)slot, (uint32_t)n, 0, 0, 0, 0, 0 };
    int k = 0, rc = exec(b, TSR_PHASE_PREFILL, cmd, ids, 4u * (size_t)n, NULL, 0, &k, e);
    free(ids);
    return rc ? rc : k ? kfail(k, "prefill", e) : TSR_OK;
}

static uint32_t f32_bits(float f)
{
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    return w;
}

static int xrt_decode(tsr_backend *b, int slot, int n, const tsr_sampler *s, int *out,
                      int *n_out, tsr_token_fn on_token, void *user, volatile int *cancel,
                      tsr_err *e)
{
    *n_out = 0;
    if (n <= 0) return TSR_OK;
    if ((size_t)(n + 1) * 4u > b->info.bo_bytes[TSR_XRT_ARG_OUT])
        return tsr_seterr(e, TSR_ERR_RANGE, "xrt: decode of %d tokens exceeds the output buffer", n);
    uint32_t *o = b->map[TSR_XRT_ARG_OUT];
    const int ph = TSR_PHASE_DECODE;
    int rc;
    /* A poll must never see the previous decode's count. */
    o[0] = 0;
    if ((rc = bo_sync(b, TSR_XRT_ARG_OUT, TSR_XRT_H2D, 4, 0, ph, e))) return rc;
    uint32_t cmd[TSR_CMD_WORDS] = {
        TSR_OP_DECODE, (uint32_t)slot, (uint32_t)n, f32_bits(s->temperature),
        f32_bits(s->top_p), (uint32_t)s->seed, (uint32_t)(s->seed >> 32),
        (s->reseed ? TSR_DEC_RESEED : 0u) | (s->ignore_stop ? TSR_DEC_IGNORE_STOP : 0u)
    };
    if ((rc = run_start(b, ph, cmd, e))) return rc;

    /* Poll out[0] while the run streams tokens (only when someone watches);
     * back off while nothing new appears. */
    int stream = on_token != NULL || cancel != NULL, want_cancel = 0, state;
    uint32_t seen = 0, poll_ms = 1;
    for (;;) {
        state = stream ? (int)xrtRunWaitFor(b->run, poll_ms) : (int)xrtRunWait(b->run);
        int done = state != ERT_CMD_STATE_NEW && state != ERT_CMD_STATE_QUEUED &&
                   state != ERT_CMD_STATE_RUNNING && state != ERT_CMD_STATE_SUBMITTED;
        if (done && state != ERT_CMD_STATE_COMPLETED) break;
        if ((rc = bo_sync(b, TSR_XRT_ARG_OUT, TSR_XRT_D2H, 4, 0, ph, e))) goto stop;
        uint32_t cnt = o[0] > (uint32_t)n ? (uint32_t)n : o[0];
        if (cnt > seen) {
            if ((rc = bo_sync(b, TSR_XRT_ARG_OUT, TSR_XRT_D2H, 4u * (cnt - seen), 4u * (1u + seen),
                              ph, e)))
                goto stop;
            while (seen < cnt) {
                int tok = (int)o[1u + seen];
                out[seen++] = tok;
                if (on_token && on_token(tok, user)) want_cancel = 1;
            }
            poll_ms = 1;
        } else if (poll_ms < 64) {
            poll_ms *= 2;
        }
        if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) want_cancel = 1;
        if (want_cancel && b->cancel_clear && !done) {
            b->map[TSR_XRT_ARG_CANCEL][0] = 1;
            if ((rc = bo_sync(b, TSR_XRT_ARG_CANCEL, TSR_XRT_H2D, 4, 0, ph, e))) goto stop;
            b->cancel_clear = 0;
        }
        if (done) break;
    }
    *n_out = (int)seen;
    int k = 0;
    if ((rc = run_status(b, cmd, state, &k, e))) goto stop;
    if (k) rc = kfail(k, "decode", e);
stop:
    if (!b->cancel_clear) {
        /* wait out the run before the word is cleared */
        if (rc) xrtRunWait(b->run);
        b->map[TSR_XRT_ARG_CANCEL][0] = 0;
        int rc2 = bo_sync(b, TSR_XRT_ARG_CANCEL, TSR_XRT_H2D, 4, 0, ph, e);
        if (!rc2) b->cancel_clear = 1;
        if (!rc) rc = rc2;
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Debug reads and counters                                                   */

static int xrt_read_logits(tsr_backend *b, float *logits, int n, tsr_err *e)
{
    if (n < 0) n = 0;
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_READ_LOGITS, 0, (uint32_t)n, 0, 0, 0, 0, 0 };
    int k = 0, rc = exec(b, TSR_PHASE_DEBUG, cmd, NULL, 0, logits, 4u * (size_t)n, &k, e);
    return rc ? rc : k ? kfail(k, "read logits", e) : TSR_OK;
}

static void xrt_link_counters(tsr_backend *b, tsr_link_counters *c) { *c = b->link; }

/* READ_COUNTERS (debug phase).  The card's counters block ends with one
 * word pair per PE of its own profile, so ask for exactly that much. */
static int xrt_kernel_counters(tsr_backend *b, void *buf, size_t len, tsr_err *e)
{
    tsr_kcounters kc;
    memset(&kc, 0, sizeof kc);
    uint32_t pes = b->info.profile.pes < TSR_MAX_PES ? b->info.profile.pes : TSR_MAX_PES;
    size_t bytes = offsetof(tsr_kcounters, pe_sram_bytes) + 8u * pes;
    uint32_t cmd[TSR_CMD_WORDS] = { TSR_OP_READ_COUNTERS, 0, (uint32_t)(bytes / 4u), 0, 0, 0, 0, 0 };
    int k = 0, rc = exec(b, TSR_PHASE_DEBUG, cmd, NULL, 0, &kc, bytes, &k, e);
    if (rc) return rc;
    if (k) return kfail(k, "read counters", e);
    /* projected at 300 MHz, the Alveo platforms' default kernel clock */
    tsr_kcounters_text(&kc, pes, b->info.profile.name, b->loaded ? &b->cfg : NULL, 300, buf, len);
    return TSR_OK;
}

#else /* !TSR_HAVE_XRT: every entry point says XRT is missing */

struct tsr_backend { int unused; };

void tsr_xrt_set_trace(const tsr_xrt_trace *t) { (void)t; }

int tsr_xrt_info_get(tsr_backend *b, tsr_xrt_info *info)
{
    (void)b;
    (void)info;
    return TSR_ERR_ARG;
}

static int xrt_open(const tsr_devspec *spec, tsr_backend **out, tsr_err *e)
{
    *out = NULL;
    return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "xrt:%d: tessera was built without XRT (install "
                      "libxrt-dev and rebuild)", spec->index);
}

static void xrt_close(tsr_backend *b) { free(b); }

static int xrt_fit(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o,
                   uint64_t *need_bytes, uint64_t *have_bytes, tsr_err *e)
{
    (void)b; (void)m; (void)o; (void)need_bytes; (void)have_bytes;
    return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "xrt: built without XRT");
}

static int xrt_load(tsr_backend *b, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e)
{
    return xrt_fit(b, m, o, NULL, NULL, e);
}

static int xrt_reset(tsr_backend *b, int slot, tsr_err *e)
{
    (void)b; (void)slot;
    return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "xrt: built without XRT");
}

static int xrt_truncate(tsr_backend *b, int slot, int pos, int pending, tsr_err *e)
{
    (void)pos; (void)pending;
    return xrt_reset(b, slot, e);
}

static int xrt_prefill(tsr_backend *b, int slot, const int *tokens, int n, tsr_err *e)
{
    (void)tokens; (void)n;
    return xrt_reset(b, slot, e);
}

static int xrt_decode(tsr_backend *b, int slot, int n, const tsr_sampler *s, int *out,
                      int *n_out, tsr_token_fn on_token, void *user, volatile int *cancel,
                      tsr_err *e)
{
    (void)n; (void)s; (void)out; (void)on_token; (void)user; (void)cancel;
    *n_out = 0;
    return xrt_reset(b, slot, e);
}

static int xrt_read_logits(tsr_backend *b, float *logits, int n, tsr_err *e)
{
    (void)logits; (void)n;
    return xrt_reset(b, 0, e);
}

static void xrt_link_counters(tsr_backend *b, tsr_link_counters *c)
{
    (void)b;
    memset(c, 0, sizeof *c);
}

static int xrt_kernel_counters(tsr_backend *b, void *buf, size_t len, tsr_err *e)
{
    (void)buf; (void)len;
    return xrt_reset(b, 0, e);
}

#endif /* TSR_HAVE_XRT */

/* ------------------------------------------------------------------------ */

const tsr_backend_iface tsr_backend_xrt = {
    .name = "xrt",
    .open = xrt_open,
    .close = xrt_close,
    .fit = xrt_fit,
    .load = xrt_load,
    .reset = xrt_reset,
    .truncate = xrt_truncate,
    .prefill = xrt_prefill,
    .decode = xrt_decode,
    .read_logits = xrt_read_logits,
    .link_counters = xrt_link_counters,
    .kernel_counters = xrt_kernel_counters,
};
