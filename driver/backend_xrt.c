/*
 * backend_xrt.c - the XRT backend: a transport to tessera_top on an Alveo
 * card through XRT's C API, behind the same vtable as backend_emu.c.
 *
 *   open:    xclProbe -> xrtDeviceOpen(index) -> read + check the xclbin
 *            (kernel tessera_top, its five m_axi arguments ctl, in_w, in_f,
 *            out_w, out_f and their banks, the tessera_profile key) ->
 *            xrtDeviceLoadXclbinFile -> kernel, one run handle, three
 *            buffers (ctl; in bound to in_w and in_f; out bound to out_w
 *            and out_f) in the groups (xrtKernelArgGroupId) CONNECTIVITY
 *            names
 *   start:   one xrtRunStart: the kernel serves its ring until EXIT
 *            (kernels/tsr_kernel.h); no run per command
 *   write:   the host map, then a sync of those bytes to the device
 *   read:    a sync of those bytes from the device, then the host map
 *   publish: one word, written and synced after every earlier write
 *   wait:    poll the word (a 4-byte sync) until it changes, backing off
 *            from 20 us to 1 ms between polls; interrupt() cuts a wait short
 *   A buffer whose bank is HOST[n] (the ring and the answers, where the
 *   link config puts them: docs/hls-flow.md, "The command ring") is a
 *   host-only buffer (XRT_BO_FLAGS_HOST_ONLY): the kernel reads and writes
 *   host memory over PCIe, so no sync moves it, and a poll is a load from
 *   memory instead of a DMA of 4 bytes.
 *   close:   wait for the run to finish (the command layer sent EXIT)
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
    xrtBufferHandle   bo[TSR_BUF_COUNT];
    uint32_t         *map[TSR_BUF_COUNT];   /* host maps of the buffers          */
    tsr_xrt_info      info;
    int               started;
    int               stop_wait;            /* interrupt(): a wait returns now   */
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
/* Buffers                                                                    */

static const char *const arg_names[TSR_XRT_NARGS] = { "ctl", "in_w", "in_f", "out_w", "out_f" };
static const int arg_buf[TSR_XRT_NARGS] = { TSR_BUF_CTL, TSR_BUF_IN, TSR_BUF_IN, TSR_BUF_OUT,
                                            TSR_BUF_OUT };
static const char *const buf_names[TSR_BUF_COUNT] = { "ctl", "in", "out" };

/* Sync bytes at offset of buffer buf in direction dir (nothing for a
 * buffer in host memory: the hook still sees it, as a test's card needs
 * the host's writes to wake it). */
static int bo_sync(tsr_backend *b, int buf, int dir, size_t bytes, size_t offset, tsr_err *e)
{
    if (bytes == 0) return TSR_OK;
    if (g_trace.on_sync) g_trace.on_sync(buf, dir, bytes, offset, g_trace.user);
    if (b->info.host_mem[buf]) return TSR_OK;
    b->info.dma_syncs[buf]++;
    if (xrtBOSync(b->bo[buf], dir == TSR_XRT_H2D ? XCL_BO_SYNC_BO_TO_DEVICE
                                                 : XCL_BO_SYNC_BO_FROM_DEVICE,
                  bytes, offset) != 0)
        return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: syncing %zu bytes of '%s' %s the device "
                          "failed", bytes, buf_names[buf], dir == TSR_XRT_H2D ? "to" : "from");
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                               */

static void xrt_close(tsr_backend *b)
{
    if (!b) return;
    /* the command layer sent EXIT: the run ends (a hung card: give up
     * after a few seconds rather than hang the caller) */
    if (b->started) (void)xrtRunWaitFor(b->run, 5000);
    if (b->run) xrtRunClose(b->run);
    for (int i = 0; i < TSR_BUF_COUNT; i++)
        if (b->bo[i]) xrtBOFree(b->bo[i]);
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
                              "%s: kernel %s has no argument '%s' (expected ctl, in_w, in_f, "
                              "out_w, out_f: a persistent kernel of this tessera)", path,
                              KERNEL_NAME, arg_names[a]);
        if (g->id != a)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: kernel %s argument '%s' has index "
                              "%d, expected %d", path, KERNEL_NAME, g->name, g->id, a);
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
    /* one buffer each for in and out: their two ports must share a bank */
    for (int a = TSR_XRT_ARG_IN_W; a <= TSR_XRT_ARG_OUT_W; a += 2) {
        const tsr_xarg *x = tsr_xmeta_arg(m, arg_names[a]), *y = tsr_xmeta_arg(m, arg_names[a + 1]);
        if (x->mem_index != y->mem_index)
            return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: kernel %s arguments '%s' (%s) and "
                              "'%s' (%s) must be connected to one bank: the host binds one "
                              "buffer to both", path, KERNEL_NAME, x->name, x->bank, y->name,
                              y->bank);
    }
    if (!m->has_profile)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                          "%s: no tessera_profile key in KEYVALUE_METADATA, so the kernel "
                          "profile is unknown (make xclbin adds it; or xclbinutil "
                          "--add-key-value USER:tessera_profile:$(profile_kv))", path);
    const tsr_kprofile *k = &m->profile.k;
    if (k->lanes != TSR_LANES || k->vec != TSR_VEC || k->row_slots != TSR_ROW_SLOTS)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: built for a datapath of %u lanes, %u-word "
                          "bus, %u row slots; this tessera lays weights out for %u, %u, %u",
                          path, k->lanes, k->vec, k->row_slots, (unsigned)TSR_LANES,
                          (unsigned)TSR_VEC, (unsigned)TSR_ROW_SLOTS);
    return TSR_OK;
}

static size_t round_up(size_t v, size_t to) { return (v + to - 1u) / to * to; }

/* Before anything is opened: XRT linked in, no emulator part, card
 * spec->index present. */
static int probe_card(const tsr_devspec *spec, tsr_err *e)
{
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
    return TSR_OK;
}

/* The xclbin (spec's, or the default one for the card): read and checked
 * here before XRT sees it; its platform, profile and banks into b->info. */
static int read_xclbin(tsr_backend *b, const tsr_devspec *spec, tsr_err *e)
{
    tsr_xrt_info *in = &b->info;
    int rc;
    if (spec->xclbin[0]) snprintf(in->xclbin, sizeof in->xclbin, "%s", spec->xclbin);
    else if ((rc = default_xclbin(b, spec->index, in->xclbin, sizeof in->xclbin, e))) return rc;
    tsr_xmeta *m = malloc(sizeof *m);
    if (!m) return tsr_seterr(e, TSR_ERR_NOMEM, "xrt: out of memory");
    rc = tsr_xmeta_read(in->xclbin, KERNEL_NAME, m, e);
    if (!rc) rc = check_kernel(in->xclbin, m, e);
    if (!rc) {
        memcpy(in->platform, m->platform, sizeof in->platform);
        in->profile = m->profile;
        for (int a = 0; a < TSR_XRT_NARGS; a++)
            memcpy(in->bank[a], tsr_xmeta_arg(m, arg_names[a])->bank, sizeof in->bank[a]);
    }
    free(m);
    return rc;
}

/* Load the xclbin, open the compute unit (exclusive: one host drives its
 * ring). */
static int load_kernel(tsr_backend *b, int index, tsr_err *e)
{
    tsr_xrt_info *in = &b->info;
    if (xrtDeviceLoadXclbinFile(b->dev, in->xclbin) != 0)
        return tsr_seterr(e, TSR_ERR_DEVICE, "%s: XRT cannot load it on device %d (platform %s)",
                          in->xclbin, index, in->platform);
    xuid_t uuid;
    if (xrtDeviceGetXclbinUUID(b->dev, uuid) != 0 ||
        !(b->kern = xrtPLKernelOpenExclusive(b->dev, uuid, KERNEL_NAME)))
        return tsr_seterr(e, TSR_ERR_DEVICE, "%s: XRT cannot open kernel %s exclusively (in use "
                          "by another process?)", in->xclbin, KERNEL_NAME);
    return TSR_OK;
}

/* Buffers of words[i] 32-bit words each, mapped and zeroed, in their
 * first argument's group (host memory when its bank is HOST); one run
 * handle with every argument bound. */
static int bind_buffers(tsr_backend *b, const uint32_t *words, tsr_err *e)
{
    tsr_xrt_info *in = &b->info;
    for (int a = 0; a < TSR_XRT_NARGS; a++) in->group[a] = xrtKernelArgGroupId(b->kern, a);
    static const int first_arg[TSR_BUF_COUNT] = { TSR_XRT_ARG_CTL, TSR_XRT_ARG_IN_W,
                                                  TSR_XRT_ARG_OUT_W };
    for (int i = 0; i < TSR_BUF_COUNT; i++) {
        int a = first_arg[i];
        in->bo_bytes[i] = round_up(4u * (size_t)words[i], 4096);
        in->host_mem[i] = !strncmp(in->bank[a], "HOST", 4);
        xrtBufferFlags fl = in->host_mem[i] ? XRT_BO_FLAGS_HOST_ONLY : 0;
        if (in->group[a] < 0 ||
            !(b->bo[i] = xrtBOAlloc(b->dev, in->bo_bytes[i], fl, (xrtMemoryGroup)in->group[a])) ||
            !(b->map[i] = xrtBOMap(b->bo[i])))
            return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot allocate %zu bytes for '%s' in bank "
                              "%s (group %d)", in->bo_bytes[i], buf_names[i], in->bank[a],
                              in->group[a]);
        memset(b->map[i], 0, in->bo_bytes[i]);
    }
    if (!(b->run = xrtRunOpen(b->kern)))
        return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot set up a run of %s", KERNEL_NAME);
    for (int a = 0; a < TSR_XRT_NARGS; a++)
        if (xrtRunSetArg(b->run, a, b->bo[arg_buf[a]]) != 0)
            return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot bind '%s' of %s", arg_names[a],
                              KERNEL_NAME);
    return TSR_OK;
}

static int xrt_open(const tsr_devspec *spec, tsr_backend **out, tsr_devinfo *info, tsr_err *e)
{
    *out = NULL;
    int rc = probe_card(spec, e);
    if (rc) return rc;
    tsr_backend *b = calloc(1, sizeof *b);
    if (!b) return tsr_seterr(e, TSR_ERR_NOMEM, "xrt: out of memory");
    errno = 0;
    b->dev = xrtDeviceOpen((unsigned)spec->index);
    if (!b->dev) {
        rc = tsr_seterr(e, TSR_ERR_NODEV, "no Xilinx device found (xrt:%d): cannot open it%s%s",
                        spec->index, errno ? ": " : "", errno ? strerror(errno) : "");
        goto fail;
    }
    if ((rc = read_xclbin(b, spec, e))) goto fail;
    tsr_xrt_info *in = &b->info;
    const tsr_xprofile *p = &in->profile;
    int pes = spec->pes ? spec->pes : (int)p->k.pes;
    if (pes < 1 || (uint32_t)pes > p->k.pes) {
        rc = tsr_seterr(e, TSR_ERR_ARG, "xrt:%d: pes=%d outside 1..%u (profile %s of %s)",
                        spec->index, pes, p->k.pes, p->name, in->xclbin);
        goto fail;
    }
    if ((rc = load_kernel(b, spec->index, e))) goto fail;

    /* Buffers: the ring; two LOAD payloads or a prompt; the largest answer
     * (decoded ids, logits, counters) of the card's profile.  The group of
     * a buffer is its first argument's. */
    uint32_t words[TSR_BUF_COUNT];
    words[TSR_BUF_CTL] = TSR_CTL_WORDS(TSR_RING_ENTRIES);
    words[TSR_BUF_IN] = TSR_IN_WORDS;
    uint32_t ow = p->k.vocab > p->k.seq + 1u ? p->k.vocab : p->k.seq + 1u;
    if (2u * (TSR_KCOUNTERS_FIXED + p->k.pes) > ow) ow = 2u * (TSR_KCOUNTERS_FIXED + p->k.pes);
    words[TSR_BUF_OUT] = ow;
    if ((rc = bind_buffers(b, words, e))) goto fail;
    memset(info, 0, sizeof *info);
    snprintf(info->profile, sizeof info->profile, "%s", p->name);
    info->prof = p->k;
    info->pes = pes;
    info->clock_mhz = TSR_CLOCK_MHZ_DEFAULT;
    info->ring_n = TSR_RING_ENTRIES;
    for (int i = 0; i < TSR_BUF_COUNT; i++) info->words[i] = words[i];
    *out = b;
    return TSR_OK;
fail:
    xrt_close(b);
    return rc;
}

static int xrt_start(tsr_backend *b, tsr_err *e)
{
    /* the ring's header is written to the map: the kernel reads it first */
    int rc = bo_sync(b, TSR_BUF_CTL, TSR_XRT_H2D, 4u * TSR_CTL_CMD0, 0, e);
    if (rc) return rc;
    if (xrtRunStart(b->run) != 0)
        return tsr_seterr(e, TSR_ERR_DEVICE, "xrt: cannot start %s", KERNEL_NAME);
    b->started = 1;
    if (g_trace.on_start) {
        uint32_t w[TSR_BUF_COUNT];
        for (int i = 0; i < TSR_BUF_COUNT; i++) w[i] = (uint32_t)(b->info.bo_bytes[i] / 4u);
        g_trace.on_start(b->map[TSR_BUF_CTL], b->map[TSR_BUF_IN], b->map[TSR_BUF_OUT], w,
                         g_trace.user);
    }
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Transport                                                                  */

static int check_range(const tsr_backend *b, int buf, uint32_t off, uint32_t words, tsr_err *e)
{
    size_t have = buf >= 0 && buf < TSR_BUF_COUNT ? b->info.bo_bytes[buf] / 4u : 0u;
    if (off > have || words > have - off)
        return tsr_seterr(e, TSR_ERR_RANGE, "xrt: buffer %d: words %u..%u outside its %zu", buf,
                          off, off + words, have);
    return TSR_OK;
}

static int xrt_write(tsr_backend *b, int buf, uint32_t off, const void *src, uint32_t words,
                     tsr_err *e)
{
    int rc = check_range(b, buf, off, words, e);
    if (rc) return rc;
    memcpy(b->map[buf] + off, src, (size_t)words * 4u);
    return bo_sync(b, buf, TSR_XRT_H2D, (size_t)words * 4u, (size_t)off * 4u, e);
}

static int xrt_read(tsr_backend *b, int buf, uint32_t off, void *dst, uint32_t words, tsr_err *e)
{
    int rc = check_range(b, buf, off, words, e);
    if (!rc) rc = bo_sync(b, buf, TSR_XRT_D2H, (size_t)words * 4u, (size_t)off * 4u, e);
    if (rc) return rc;
    if (words == 1) {
        uint32_t v = __atomic_load_n(b->map[buf] + off, __ATOMIC_ACQUIRE);
        memcpy(dst, &v, 4);
    } else {
        memcpy(dst, b->map[buf] + off, (size_t)words * 4u);
    }
    return TSR_OK;
}

static int xrt_publish(tsr_backend *b, int buf, uint32_t off, uint32_t v, tsr_err *e)
{
    int rc = check_range(b, buf, off, 1, e);
    if (rc) return rc;
    /* the syncs before this one have completed: the word lands last */
    __atomic_store_n(b->map[buf] + off, v, __ATOMIC_RELEASE);
    return bo_sync(b, buf, TSR_XRT_H2D, 4, (size_t)off * 4u, e);
}

static int xrt_wait(tsr_backend *b, int buf, uint32_t off, uint32_t old, uint32_t timeout_us,
                    uint32_t *now, tsr_err *e)
{
    uint32_t waited = 0, step = 20;
    int rc;
    __atomic_store_n(&b->stop_wait, 0, __ATOMIC_RELAXED);
    for (;;) {
        if ((rc = xrt_read(b, buf, off, now, 1, e))) return rc;
        if (*now != old || waited >= timeout_us || __atomic_load_n(&b->stop_wait, __ATOMIC_ACQUIRE))
            return TSR_OK;
        struct timespec ts = { 0, (long)step * 1000L };
        nanosleep(&ts, NULL);
        waited += step;
        if (step < 1000u) step *= 2u;
    }
}

/* tsr_seq_cancel(): cut a poll short (an atomic store: async-signal-safe). */
static void xrt_interrupt(tsr_backend *b) { __atomic_store_n(&b->stop_wait, 1, __ATOMIC_RELEASE); }

#else /* !TSR_HAVE_XRT: every entry point says XRT is missing */

struct tsr_backend { int unused; };

void tsr_xrt_set_trace(const tsr_xrt_trace *t) { (void)t; }

int tsr_xrt_info_get(tsr_backend *b, tsr_xrt_info *info)
{
    (void)b;
    (void)info;
    return TSR_ERR_ARG;
}

static int xrt_open(const tsr_devspec *spec, tsr_backend **out, tsr_devinfo *info, tsr_err *e)
{
    (void)info;
    *out = NULL;
    return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "xrt:%d: tessera was built without XRT (install "
                      "libxrt-dev and rebuild)", spec->index);
}

static void xrt_close(tsr_backend *b) { free(b); }

static int missing(tsr_err *e) { return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "xrt: built without XRT"); }

static int xrt_start(tsr_backend *b, tsr_err *e) { (void)b; return missing(e); }

static int xrt_write(tsr_backend *b, int buf, uint32_t off, const void *src, uint32_t words,
                     tsr_err *e)
{
    (void)b; (void)buf; (void)off; (void)src; (void)words;
    return missing(e);
}

static int xrt_read(tsr_backend *b, int buf, uint32_t off, void *dst, uint32_t words, tsr_err *e)
{
    (void)b; (void)buf; (void)off; (void)dst; (void)words;
    return missing(e);
}

static int xrt_publish(tsr_backend *b, int buf, uint32_t off, uint32_t v, tsr_err *e)
{
    (void)b; (void)buf; (void)off; (void)v;
    return missing(e);
}

static int xrt_wait(tsr_backend *b, int buf, uint32_t off, uint32_t old, uint32_t timeout_us,
                    uint32_t *now, tsr_err *e)
{
    (void)b; (void)buf; (void)off; (void)old; (void)timeout_us; (void)now;
    return missing(e);
}

static void xrt_interrupt(tsr_backend *b) { (void)b; }

#endif /* TSR_HAVE_XRT */

/* ------------------------------------------------------------------------ */

const tsr_backend_iface tsr_backend_xrt = {
    .name = "xrt",
    .open = xrt_open,
    .start = xrt_start,
    .close = xrt_close,
    .write = xrt_write,
    .read = xrt_read,
    .publish = xrt_publish,
    .wait = xrt_wait,
    .interrupt = xrt_interrupt,
};
