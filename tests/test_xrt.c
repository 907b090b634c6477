/*
 * test_xrt.c - the XRT backend on XRT's noop shim (linked instead of the
 * real one by the Makefile), with the test playing the card.
 *
 *   metadata-only xclbin (tests/support/xclbin_write.c, the profile line
 *   hw/profile_kv prints)  ->  tsr_device_open("xrt:0,xclbin=...")
 *   -> backend_xrt starts tessera_top once -> trace hook on_start: the host
 *   maps of ctl, in and out, which on noop ARE the device memory -> a thread
 *   runs the kernel's own serve loop (tsr_kernel_serve) on them: the card
 *   -> every BO sync passes the hook on_sync: recorded, and a command's
 *   sequence word recorded with the entry and its payload
 *
 * Wake and poll: on a card the kernel polls its ring; the serve loop as the
 * library builds it (the emulator's) sleeps on the entry's word and is woken
 * by a futex wake, which noop's sync does not do.  So on_sync wakes the card
 * at every host-to-device sync of ctl, standing in for the poll.  The host
 * side polls as it would on a card (backend_xrt.c wait()).
 *
 * The card is the library's kernel, compiled with the emulator's profile
 * (generic), behind an xclbin that names a synthesis profile: the host sizes
 * and checks everything against the xclbin's profile, as on a card.  What is
 * checked: the command words and their order, banks, bytes per phase (the
 * weight image streamed once; decode moves only token ids), progress, cancel,
 * refusals (an xclbin that is not this kernel, a model its profile cannot
 * hold, a kernel that refuses what its key promised), and tokens and logits
 * equal to the emulator's for stories260K.  The numerics of a stories260k
 * build are tests/csim's (tb_tessera_top).
 *
 * Also: `tessera run --backend xrt:0` with the real shim on this card-less
 * machine says so in one line, without XRT's banner.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "backend_xrt.h"
#include "device.h"
#include "greedy.h"
#include "model.h"
#include "profiles.h"
#include "run_capture.h"
#include "tessera.h"
#include "test_util.h"
#include "tsr_emu.h"
#include "tsr_kernel.h"
#include "weight_image.h"
#include "xclbin_write.h"

#ifdef TSR_HAVE_XRT
/* generated at build time by hw/vitis.mk from hw/profile_kv */
#include "profile_kv.h"
#include "kcmd.h"
#endif
#define MODEL SHARED_MODEL("stories260K.bin")
#define MODEL_SH SH_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")
#define TOK_SH SH_MODEL("tok512.bin")

#define MODEL  SHARED_MODEL("stories260K.bin")
#define TOK    SHARED_MODEL("tok512.bin")
#define PROMPT "Once upon a time"

/* The tessera_profile lines of the shipped profiles: what hw/profile_kv
 * prints for each, so that these xclbins carry the key a `make xclbin` of
 * that profile would, however the profile is tuned.  The expected messages
 * below take their figures from the same profiles (driver/profiles.c). */
#define PROFILE_260K    TSR_PROFILE_KV_STORIES260K
#define PROFILE_15M     TSR_PROFILE_KV_STORIES15M
#define PROFILE_GENERIC TSR_PROFILE_KV_GENERIC

#define CMD_BYTES  (4u * TSR_CMD_WORDS)
#define RESP_BYTES (4u * TSR_RESP_WORDS)

#ifdef TSR_HAVE_XRT

/* ------------------------------------------------------------ the card --- */

/* The card: tsr_kernel_serve on the buffers' host maps, in a thread. */
typedef struct card {
    pthread_t   thread;
    int         started, joined;
    tsr_kstate *st;                   /* mmap'd: the generic profile's arrays
                                         are address space only          */
    size_t      st_bytes;
    uint32_t   *ctl, *in, *out;       /* the maps: the "device memory"   */
    uint32_t    words[TSR_BUF_COUNT];
} card;

static void *card_main(void *arg)
{
    card *c = arg;
    tsr_kernel_init(c->st);
    /* in and out each bound to two ports, uint32 and fp32, as tessera_top;
     * no link ports (one card holds the whole model) */
    tsr_kernel_serve(c->st, c->ctl, c->in, (const float *)(const void *)c->in, c->out,
                     (float *)(void *)c->out, NULL, NULL);
    return NULL;
}

/* ------------------------------------------------------------ the trace --- */

enum { EV_SYNC = 0, EV_CMD };

typedef struct event {
    int      kind;
    /* EV_SYNC: every BO sync */
    int      buf, dir;
    size_t   bytes, offset;
    uint32_t word;                    /* a one-word ctl write: its value  */
    /* EV_CMD: a ring entry as its sequence word was published */
    uint32_t cmd[TSR_CMD_WORDS];
    uint32_t entry;                   /* its first word in ctl            */
    uint64_t payload_hash;            /* FNV-1a of its in_words payload   */
    uint32_t payload[TSR_KCONFIG_WORDS]; /* its first words               */
} event;

typedef struct trace {
    event *ev;
    int    n, cap;
    card   card;
} trace;

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static event *push(trace *t, int kind)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 4096;
        event *ev = realloc(t->ev, (size_t)cap * sizeof *ev);
        assert_non_null(ev);
        t->ev = ev;
        t->cap = cap;
    }
    event *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    return e;
}

static void on_start(uint32_t *ctl, uint32_t *in, uint32_t *out,
                     const uint32_t words[TSR_BUF_COUNT], void *user)
{
    trace *t = user;
    card *c = &t->card;
    assert_false(c->started);   /* one start per device */
    c->ctl = ctl;
    c->in = in;
    c->out = out;
    memcpy(c->words, words, sizeof c->words);
    c->st_bytes = (sizeof(tsr_kstate) + 4095u) & ~(size_t)4095u;
    void *st = mmap(NULL, c->st_bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(st != MAP_FAILED);
    c->st = st;
    c->st->pool = NULL;   /* one thread: the card's own */
    c->st->simd = 1;      /* as the emulator by default (bit-identical) */
    assert_int_equal(pthread_create(&c->thread, NULL, card_main, c), 0);
    c->started = 1;
}

static void on_sync(int buf, int dir, size_t bytes, size_t offset, void *user)
{
    trace *t = user;
    event *e = push(t, EV_SYNC);
    e->buf = buf;
    e->dir = dir;
    e->bytes = bytes;
    e->offset = offset;
    if (buf != TSR_BUF_CTL || dir != TSR_XRT_H2D || !t->card.started) return;
    uint32_t *ctl = t->card.ctl, w = (uint32_t)(offset / 4u);
    if (bytes == 4) e->word = __atomic_load_n(&ctl[w], __ATOMIC_ACQUIRE);
    /* a sequence word: the host wrote the entry and its payload before it */
    uint32_t ring = ctl[TSR_CTL_RING_N];
    if (bytes == 4 && w >= TSR_CTL_CMD0 && w < TSR_CTL_CMD0 + ring * TSR_CMD_WORDS &&
        (w - TSR_CTL_CMD0) % TSR_CMD_WORDS == 0) {
        event *c = push(t, EV_CMD);
        c->entry = w;
        for (uint32_t i = 0; i < TSR_CMD_WORDS; i++) c->cmd[i] = ctl[w + i];
        c->cmd[TSR_CMD_SEQ] = e->word;
        const uint32_t *pay = t->card.in + c->cmd[TSR_CMD_IN_OFF];
        uint32_t n = c->cmd[TSR_CMD_IN_WORDS];
        assert_true(c->cmd[TSR_CMD_IN_OFF] + n <= t->card.words[TSR_BUF_IN]);
        c->payload_hash = fnv1a(pay, 4u * (size_t)n);
        memcpy(c->payload, pay, 4u * (n < TSR_KCONFIG_WORDS ? n : TSR_KCONFIG_WORDS));
    }
    /* the card sleeps on the word it waits for: wake it, as its poll would */
    tsr_emu_wake(&ctl[w]);
}

static trace *trace_on(void)
{
    trace *t = calloc(1, sizeof *t);
    assert_non_null(t);
    tsr_xrt_trace h = { .on_start = on_start, .on_sync = on_sync, .user = t };
    tsr_xrt_set_trace(&h);
    return t;
}

/* After the device is closed: the card must have left its loop (EXIT). */
static void trace_off(trace *t)
{
    card *c = &t->card;
    if (c->started && !c->joined) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30;
        int rc = pthread_timedjoin_np(c->thread, NULL, &until);
        if (rc) print_error("the card did not leave tsr_kernel_serve after EXIT\n");
        assert_int_equal(rc, 0);
        c->joined = 1;
        munmap(c->st, c->st_bytes);
    }
    tsr_xrt_set_trace(NULL);
    free(t->ev);
    free(t);
}

/* The commands recorded in events [from, t->n): their indices into t->ev. */
static int commands(const trace *t, int from, int *idx, int cap)
{
    int n = 0;
    for (int i = from; i < t->n; i++)
        if (t->ev[i].kind == EV_CMD) {
            if (n < cap) idx[n] = i;
            n++;
        }
    return n;
}

/* Bytes synced in events [from, to) for buffer buf (-1: any) in direction dir. */
static uint64_t synced(const trace *t, int from, int to, int buf, int dir)
{
    uint64_t b = 0;
    for (int i = from; i < to; i++) {
        const event *e = &t->ev[i];
        if (e->kind == EV_SYNC && (buf < 0 || e->buf == buf) && e->dir == dir) b += e->bytes;
    }
    return b;
}

/* ------------------------------------------------------------ helpers --- */

/* A temp file path (mkstemp); the caller unlinks it. */
static void temp_path(char *path, size_t cap, const char *stem)
{
    snprintf(path, cap, "/tmp/tsr_xrt_%s_XXXXXX", stem);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

static void write_xclbin(char *path, size_t cap, const tsr_xclbin_desc *d)
{
    temp_path(path, cap, "xclbin");
    assert_int_equal(tsr_xclbin_write(path, d), 0);
}

/* Open "xrt:0,xclbin=path[,extra]"; returns the status, *dev always set. */
static int open_xrt(const char *path, const char *extra, tsr_device **dev)
{
    char spec[600];
    snprintf(spec, sizeof spec, "xrt:0,xclbin=%s%s%s", path, extra ? "," : "", extra ? extra : "");
    return tsr_device_open(spec, dev);
}

/* The profile line p with key's value replaced by value (out: cap bytes). */
static void profile_with(const char *p, const char *key, const char *value, char *out, size_t cap)
{
    char k[64];
    snprintf(k, sizeof k, ",%s=", key);
    const char *at = strstr(p, k);
    assert_non_null(at);
    const char *end = strchr(at + 1, ',');
    if (!end) end = at + strlen(at);
    int w = snprintf(out, cap, "%.*s%s%s%s", (int)(at - p), p, k, value, end);
    assert_true(w > 0 && (size_t)w < cap);
}


static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Progress calls of a load. */
typedef struct progress_log {
    uint64_t sent[512], total[512];
    int      n;
} progress_log;

static void on_progress(uint64_t sent, uint64_t total, void *user)
{
    progress_log *p = user;
    if (p->n < 512) {
        p->sent[p->n] = sent;
        p->total[p->n] = total;
    }
    p->n++;
}

/* The emulator's greedy history of stories260K on the same mesh (4 PEs),
 * len tokens (the prompt's 5 included), and its last logits when logits is
 * not NULL.  Returns the history's length (shorter at a stop token). */
static int emu_history(int len, int ignore_stop, int *ids, int cap, float *logits)
{
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=4", &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &mo, &m), TSR_OK);
    int n = greedy_history(m, PROMPT, len - 1, ignore_stop, ids, cap, logits, logits ? 512 : 0);
    tsr_model_close(m);
    tsr_device_close(dev);
    return n;
}

/* ------------------------------------------------- the xclbin itself --- */

static const char *const arg_names[TSR_XW_NARGS] = { "ctl", "in_w", "in_f", "out_w", "out_f" };

/* The writer's file reads back through the backend's own reader: five
 * m_axi arguments with their banks, and every figure of the profile line. */
static void test_xclbin_metadata(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_15M,
                          .bank = { "HBM[5]", "HBM[3]", "HBM[3]", "HBM[7]", "HBM[7]" } };
    write_xclbin(path, sizeof path, &d);
    tsr_xmeta *m = malloc(sizeof *m);
    assert_non_null(m);
    tsr_err e;
    tsr_clearerr(&e);
    assert_int_equal(tsr_xmeta_read(path, "tessera_top", m, &e), TSR_OK);
    assert_string_equal(m->platform, "xilinx_u55c_gen3x16_xdma_3_202210_1");
    assert_int_equal(m->has_kernel, 1);
    assert_int_equal(m->n_args, TSR_XRT_NARGS);
    static const char *const banks[TSR_XW_NARGS] = { "HBM[5]", "HBM[3]", "HBM[3]", "HBM[7]",
                                                     "HBM[7]" };
    for (int a = 0; a < TSR_XW_NARGS; a++) {
        const tsr_xarg *g = tsr_xmeta_arg(m, arg_names[a]);
        assert_non_null(g);
        assert_int_equal(g->id, a);
        assert_int_equal(g->address_qualifier, 1);
        assert_int_equal(g->size, 8);
        assert_string_equal(g->bank, banks[a]);
    }
    assert_string_equal(tsr_xmeta_arg(m, "in_f")->type, "float*");
    /* one bank per buffer: the pairs share a MEM_TOPOLOGY index */
    assert_int_equal(tsr_xmeta_arg(m, "in_w")->mem_index, tsr_xmeta_arg(m, "in_f")->mem_index);
    assert_int_equal(tsr_xmeta_arg(m, "out_w")->mem_index, tsr_xmeta_arg(m, "out_f")->mem_index);
    assert_int_not_equal(tsr_xmeta_arg(m, "ctl")->mem_index, tsr_xmeta_arg(m, "in_w")->mem_index);

    /* The key is the line profile_kv prints, and it reads back as the
     * profile the driver ships (driver/profiles.c reads the same header).
     * The URAM flags are the build's (hw/vitis.mk HW_DEFS_stories15m, which
     * test_hls_flow checks): compared with the line itself. */
    assert_int_equal(m->has_profile, 1);
    assert_string_equal(m->profile_text, PROFILE_15M);
    assert_string_equal(m->profile.name, "stories15m");
    const tsr_kprofile *want = tsr_profile_find("stories15m");
    assert_non_null(want);
    tsr_kprofile got = m->profile.k;
    assert_int_equal(got.f32_uram, strstr(PROFILE_15M, ",f32_uram=1,") ? 1 : 0);
    assert_int_equal(got.kv_uram, strstr(PROFILE_15M, ",kv_uram=1,") ? 1 : 0);
    got.f32_uram = want->f32_uram;
    got.kv_uram = want->kv_uram;
    assert_memory_equal(&got, want, sizeof got);
    free(m);
    unlink(path);
}

/* Every key profile_kv prints is one the reader requires, except those
 * older xclbins predate (block: one item a pass; the Q4_0 tile and the
 * f16 / int8 KV caches: not built); a newer key is ignored; a value that
 * is not a number is refused. */
static void test_profile_keys(void **state)
{
    (void)state;
    tsr_xprofile p;
    tsr_err e;
    tsr_clearerr(&e);
    assert_int_equal(tsr_xprofile_parse(PROFILE_260K, &p, &e), TSR_OK);
    assert_string_equal(p.name, "stories260k");
    assert_memory_equal(&p.k, tsr_profile_find("stories260k"), sizeof p.k);

    /* name + the 28 figures of tsr_kprofile that are required, and the 7
     * that a profile from before blocked passes (block: 1), the Q4_0 tile
     * and the f16 / int8 caches (0) and the roots' columns (1: every PE)
     * lacks */
    static const char *const optional[] = { "block", "with_q4", "kvh_words", "kvq_bytes",
                                            "kvs_words", "w13_cols", "cls_cols" };
    int keys = 0;
    for (const char *s = PROFILE_260K; s; s = strchr(s + 1, ',')) {
        const char *k = *s == ',' ? s + 1 : s, *eq = strchr(k, '=');
        assert_non_null(eq);
        keys++;
        if (!strncmp(k, "name=", 5)) continue;
        char key[32], without[1024];
        snprintf(key, sizeof key, "%.*s", (int)(eq - k), k);
        const char *end = strchr(k, ',');
        snprintf(without, sizeof without, "%.*s%s", (int)(k - PROFILE_260K - 1), PROFILE_260K,
                 end ? end : "");
        int opt = 0;
        for (int i = 0; i < 7; i++) opt |= !strcmp(key, optional[i]);
        if (opt) {
            tsr_xprofile q;
            assert_int_equal(tsr_xprofile_parse(without, &q, &e), TSR_OK);
            /* the full profile with that figure at its default */
            tsr_kprofile d = *tsr_profile_find("stories260k");
            if (!strcmp(key, "block")) d.block = 1;
            else if (!strcmp(key, "with_q4")) d.with_q4 = 0;
            else if (!strcmp(key, "kvh_words")) d.kvh_words = 0;
            else if (!strcmp(key, "kvq_bytes")) d.kvq_bytes = 0;
            else if (!strcmp(key, "w13_cols")) d.w13_cols = 1;
            else if (!strcmp(key, "cls_cols")) d.cls_cols = 1;
            else d.kvs_words = 0;
            assert_memory_equal(&q.k, &d, sizeof d);
            continue;
        }
        char msg[64];
        snprintf(msg, sizeof msg, ": %s missing or zero", key);
        assert_int_equal(tsr_xprofile_parse(without, &p, &e), TSR_ERR_FORMAT);
        if (!strstr(e.msg, msg)) print_error("without %s: %s\n", key, e.msg);
        assert_non_null(strstr(e.msg, msg));
    }
    char more[1024];
    assert_int_equal(keys, 36);
    assert_int_equal(sizeof(tsr_kprofile) / sizeof(uint32_t), 35);
    /* a root spacing that is not a power of two */
    profile_with(PROFILE_260K, "w13_cols", "3", more, sizeof more);
    assert_int_equal(tsr_xprofile_parse(more, &p, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "bad value for w13_cols"));
    snprintf(more, sizeof more, "%s,future_key=7", PROFILE_260K);
    assert_int_equal(tsr_xprofile_parse(more, &p, &e), TSR_OK);
    profile_with(PROFILE_260K, "pes", "four", more, sizeof more);
    assert_int_equal(tsr_xprofile_parse(more, &p, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "bad value for pes"));
    assert_int_equal(tsr_xprofile_parse("pes=4", &p, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "no name"));
}

/* ------------------------------------------------------ open and banks --- */

/* The device opens on the noop shim, starts its kernel once, and allocates
 * each buffer in the group of the bank its first argument names. */
static void test_open_maps_banks(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K,
                          .bank = { "DDR[1]", "DDR[0]", "DDR[0]", "DDR[1]", "DDR[1]" } };
    write_xclbin(path, sizeof path, &d);
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    assert_true(t->card.started);
    tsr_xrt_info info;
    assert_int_equal(tsr_xrt_info_get(dev->k.b, &info), TSR_OK);
    assert_string_equal(info.xclbin, path);
    assert_string_equal(info.profile.name, "stories260k");
    for (int a = 0; a < TSR_XRT_NARGS; a++) assert_string_equal(info.bank[a], d.bank[a]);
    /* MEM_TOPOLOGY holds DDR[1] at index 0 (first used, by ctl), DDR[0] at 1 */
    const int groups[TSR_XRT_NARGS] = { 0, 1, 1, 0, 0 };
    for (int a = 0; a < TSR_XRT_NARGS; a++) assert_int_equal(info.group[a], groups[a]);
    /* ctl: the 8-entry ring and its responses; in: two LOAD payloads; out:
     * the profile's largest answer (decoded ids, logits or counters), all
     * in whole pages, and the maps the card got are those sizes */
    const tsr_kprofile *pf = tsr_profile_find("stories260k");
    uint32_t ow = pf->vocab > pf->seq + 1u ? pf->vocab : pf->seq + 1u;
    if (2u * (TSR_KCOUNTERS_FIXED + pf->pes) > ow) ow = 2u * (TSR_KCOUNTERS_FIXED + pf->pes);
    assert_int_equal(info.bo_bytes[TSR_BUF_CTL], (4u * TSR_CTL_WORDS(8) + 4095u) / 4096u * 4096u);
    assert_int_equal(info.bo_bytes[TSR_BUF_IN], 4u * TSR_IN_WORDS);
    assert_int_equal(info.bo_bytes[TSR_BUF_OUT], (4u * ow + 4095u) / 4096u * 4096u);
    assert_true(info.bo_bytes[TSR_BUF_OUT] >= 4u * (pf->seq + 1u));
    for (int b = 0; b < TSR_BUF_COUNT; b++) assert_int_equal(4u * t->card.words[b], info.bo_bytes[b]);
    /* the ring's header went down before the start: ring size 8 */
    assert_int_equal(t->card.ctl[TSR_CTL_RING_N], 8);
    assert_int_equal(__atomic_load_n(&t->card.ctl[TSR_CTL_SERVING], __ATOMIC_ACQUIRE), 1);
    tsr_device_close(dev);
    /* the last command is EXIT, and the card left its loop */
    int idx[4];
    int nc = commands(t, 0, idx, 4);
    assert_int_equal(nc, 1);
    assert_int_equal(t->ev[idx[0]].cmd[TSR_CMD_OP], TSR_OP_EXIT);
    assert_int_equal(t->ev[idx[0]].cmd[TSR_CMD_SEQ], 1);
    trace_off(t);
    unlink(path);
}

/* Open must fail with code and a message containing want, before the
 * kernel is started. */
static void expect_open_error(const char *path, const char *extra, int code, const char *want)
{
    trace *t = trace_on();
    tsr_device *dev = NULL;
    int rc = open_xrt(path, extra, &dev);
    if (rc != code || !strstr(tsr_device_errmsg(dev), want))
        print_error("got %d '%s', want %d '...%s...'\n", rc, tsr_device_errmsg(dev), code, want);
    assert_int_equal(rc, code);
    assert_non_null(strstr(tsr_device_errmsg(dev), want));
    tsr_device_close(dev);
    assert_false(t->card.started);
    trace_off(t);
}

static void expect_xclbin_error(const tsr_xclbin_desc *d, const char *extra, int code,
                                const char *want)
{
    char path[64];
    write_xclbin(path, sizeof path, d);
    expect_open_error(path, extra, code, want);
    unlink(path);
}

/* in_w/in_f (and out_w/out_f) are one buffer: split across banks, refused. */
static void test_bank_pairs(void **state)
{
    (void)state;
    tsr_xclbin_desc in = { .profile = PROFILE_260K,
                           .bank = { NULL, "HBM[0]", "HBM[2]", NULL, NULL } };
    expect_xclbin_error(&in, NULL, TSR_ERR_UNSUPPORTED,
                        "arguments 'in_w' (HBM[0]) and 'in_f' (HBM[2]) must be connected to one "
                        "bank: the host binds one buffer to both");
    tsr_xclbin_desc out = { .profile = PROFILE_260K,
                            .bank = { NULL, NULL, NULL, "HBM[1]", "HBM[4]" } };
    expect_xclbin_error(&out, NULL, TSR_ERR_UNSUPPORTED,
                        "arguments 'out_w' (HBM[1]) and 'out_f' (HBM[4]) must be connected to one "
                        "bank");
    /* ctl may sit anywhere */
    tsr_xclbin_desc ctl = { .profile = PROFILE_260K,
                            .bank = { "HBM[9]", "HBM[0]", "HBM[0]", "HBM[1]", "HBM[1]" } };
    char path[64];
    write_xclbin(path, sizeof path, &ctl);
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    tsr_device_close(dev);
    trace_off(t);
    unlink(path);
}

/* An xclbin that is not this kernel is refused at open, naming why. */
static void test_not_this_kernel(void **state)
{
    (void)state;
    tsr_xclbin_desc name = { .kernel = "vadd", .profile = PROFILE_260K };
    expect_xclbin_error(&name, NULL, TSR_ERR_UNSUPPORTED,
                        "no kernel 'tessera_top' in the xclbin (it has: vadd)");
    tsr_xclbin_desc omit = { .profile = PROFILE_260K, .omit_arg = 1 + TSR_XW_OUT_F };
    expect_xclbin_error(&omit, NULL, TSR_ERR_UNSUPPORTED,
                        "kernel tessera_top has no argument 'out_f' (expected ctl, in_w, in_f, "
                        "out_w, out_f");
    tsr_xclbin_desc scalar = { .profile = PROFILE_260K, .scalar_arg = 1 + TSR_XW_CTL };
    expect_xclbin_error(&scalar, NULL, TSR_ERR_UNSUPPORTED,
                        "argument 'ctl' must be m_axi global memory (addressQualifier 1), found 0");
    tsr_xclbin_desc unbanked = { .profile = PROFILE_260K, .unbanked_arg = 1 + TSR_XW_IN_F };
    expect_xclbin_error(&unbanked, NULL, TSR_ERR_UNSUPPORTED,
                        "argument 'in_f' is connected to no memory bank");
    tsr_xclbin_desc swapped = { .profile = PROFILE_260K, .swap_in_ids = 1 };
    expect_xclbin_error(&swapped, NULL, TSR_ERR_UNSUPPORTED,
                        "argument 'in_w' has index 2, expected 1");
}

/* The profile key: absent, malformed, or for another datapath. */
static void test_profile_key_refused(void **state)
{
    (void)state;
    tsr_xclbin_desc none = { 0 };
    expect_xclbin_error(&none, NULL, TSR_ERR_UNSUPPORTED, "no tessera_profile key");
    char p[1024];
    profile_with(PROFILE_260K, "kv_uram", "", p, sizeof p);
    tsr_xclbin_desc bad = { .profile = p };
    expect_xclbin_error(&bad, NULL, TSR_ERR_FORMAT, "bad value for kv_uram");
    profile_with(PROFILE_260K, "lanes", "16", p, sizeof p);
    tsr_xclbin_desc lanes = { .profile = p };
    expect_xclbin_error(&lanes, NULL, TSR_ERR_UNSUPPORTED,
                        "built for a datapath of 16 lanes, 16-word bus, 8 row slots");
    /* more PEs than the profile has */
    tsr_xclbin_desc ok = { .profile = PROFILE_260K };
    expect_xclbin_error(&ok, "pes=8", TSR_ERR_ARG, "pes=8 outside 1..4 (profile stories260k");
}

static void test_empty_and_foreign_files(void **state)
{
    (void)state;
    char path[64];
    temp_path(path, sizeof path, "empty");
    expect_open_error(path, NULL, TSR_ERR_FORMAT, "empty file, not an xclbin");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 100; i++) fputs("this is a text file, not an FPGA image\n", f);
    fclose(f);
    expect_open_error(path, NULL, TSR_ERR_FORMAT, "not an xclbin (no \"xclbin2\" magic)");
    unlink(path);
    expect_open_error("/nonexistent/k.xclbin", NULL, TSR_ERR_IO,
                      "/nonexistent/k.xclbin: cannot open");
}

/* ------------------------------------------------------------ protocol --- */

/* Load, prefill and decode through the public API against the played card:
 * the commands come in order with the right words and payloads, the weight
 * image crosses once, progress sums to it, each phase moves the bytes the
 * protocol says, and the tokens are the emulator's. */
static void test_protocol(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(path, sizeof path, &d);
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    int idx[64];
    assert_int_equal(commands(t, 0, idx, 64), 0);   /* opening runs no command */

    /* The image the host should stream: stories260k's 4 PEs (1 column). */
    tsr_checkpoint *ck = NULL;
    tsr_err e;
    tsr_clearerr(&e);
    assert_int_equal(tsr_checkpoint_open(MODEL, &ck, &e), TSR_OK);
    tsr_load_opts lo = { .group_size = 32, .seq_len = 512, .n_slots = 2 };
    tsr_mesh_opts mesh = { .pes = 4 };
    tsr_kconfig kc;
    assert_int_equal(tsr_wimage_config(ck, &lo, &mesh, tsr_profile_find("stories260k"), &kc, &e),
                     TSR_OK);
    tsr_wimage img;
    assert_int_equal(tsr_wimage_build(ck, &kc, &img, &e), TSR_OK);
    assert_true(img.n_chunks >= 4 && img.n_chunks < 60);

    /* ---- load ---- */
    int mark = t->n;
    progress_log pg = { .n = 0 };
    tsr_model_opts mo = { .tokenizer = TOK, .progress = on_progress, .progress_user = &pg };
    tsr_model *model = NULL;
    int rc = tsr_model_load(dev, MODEL, &mo, &model);
    if (rc) print_error("%s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    tsr_model_info mi = { 0 };
    assert_int_equal(tsr_model_get_info(model, &mi), TSR_OK);
    assert_int_equal(mi.n_seqs, 2);          /* the profile's slots */

    /* CONFIGURE, then one LOAD per chunk, alternating halves of `in` */
    int nc = commands(t, mark, idx, 64);
    assert_int_equal(nc, 1 + img.n_chunks);
    const event *c = &t->ev[idx[0]];
    const uint32_t want_cfg[TSR_CMD_WORDS] = { 1, TSR_OP_CONFIGURE, 0, 0, TSR_KCONFIG_WORDS, 0,
                                               TSR_KFIT_WORDS };
    assert_memory_equal(c->cmd, want_cfg, sizeof want_cfg);
    assert_int_equal(c->entry, TSR_CTL_CMD0);
    uint32_t cfgw[TSR_KCONFIG_WORDS];
    tsr_kcmd_config_words(&kc, cfgw);
    assert_memory_equal(c->payload, cfgw, sizeof cfgw);
    for (int k = 0; k < img.n_chunks; k++) {
        const tsr_wchunk *ch = &img.chunks[k];
        c = &t->ev[idx[1 + k]];
        uint32_t seq = 2u + (uint32_t)k;
        const uint32_t want[TSR_CMD_WORDS] = {
            seq, TSR_OP_LOAD, 0, (uint32_t)(k & 1) * TSR_LOAD_WORDS, ch->nbytes / 4u, 0, 0,
            ch->pe, ch->region, ch->offset, ch->length
        };
        assert_memory_equal(c->cmd, want, sizeof want);
        assert_int_equal(c->entry, TSR_CTL_CMD0 + ((seq - 1u) % 8u) * TSR_CMD_WORDS);
        assert_int_equal(c->payload_hash, fnv1a(ch->data, ch->nbytes));
    }
    /* progress: 0 as streaming starts, then after every chunk, to the total */
    assert_int_equal(pg.n, 1 + img.n_chunks);
    uint64_t sent = 4u * TSR_KCONFIG_WORDS;
    assert_int_equal(pg.sent[0], 0);
    for (int k = 0; k < pg.n; k++) assert_int_equal(pg.total[k], img.bytes);
    for (int k = 0; k < img.n_chunks; k++) {
        sent += img.chunks[k].nbytes;
        assert_int_equal(pg.sent[1 + k], sent);
    }
    assert_int_equal(pg.sent[pg.n - 1], img.bytes);
    /* bytes: the image once (its config block included) and 64 per command
     * down; per command a 16-byte response, and the 32-byte fit, up */
    tsr_traffic tr = { 0 };
    assert_int_equal(tsr_device_traffic(dev, &tr), TSR_OK);
    assert_int_equal(tr.load_h2d, img.bytes + CMD_BYTES * (uint64_t)(1 + img.n_chunks));
    assert_int_equal(tr.load_d2h, RESP_BYTES * (uint64_t)(1 + img.n_chunks) + 4u * TSR_KFIT_WORDS);
    assert_int_equal(tr.loads, 1);
    /* and that is exactly what was synced to the card: `in` got the image */
    assert_int_equal(synced(t, mark, t->n, -1, TSR_XRT_H2D), tr.load_h2d);
    assert_int_equal(synced(t, mark, t->n, TSR_BUF_IN, TSR_XRT_H2D), img.bytes);
    assert_int_equal(synced(t, mark, t->n, TSR_BUF_OUT, TSR_XRT_D2H), 4u * TSR_KFIT_WORDS);

    /* ---- prefill: RESET of the slot, PREFILL with the prompt's ids ---- */
    mark = t->n;
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(model, &s), TSR_OK);
    int prompt[16], np = 0;
    assert_int_equal(tsr_model_tokenize(model, PROMPT, 1, prompt, 16, &np), TSR_OK);
    assert_int_equal(np, 5);
    assert_int_equal(tsr_seq_append_tokens(s, prompt, np), TSR_OK);
    nc = commands(t, mark, idx, 64);
    assert_int_equal(nc, 2);
    uint32_t seq = 2u + (uint32_t)img.n_chunks, slot = (uint32_t)s->slot;
    const uint32_t want_reset[TSR_CMD_WORDS] = { seq, TSR_OP_RESET, slot };
    assert_memory_equal(t->ev[idx[0]].cmd, want_reset, sizeof want_reset);
    const uint32_t want_prefill[TSR_CMD_WORDS] = { seq + 1, TSR_OP_PREFILL, slot, 0, 5, 0, 0, 5 };
    assert_memory_equal(t->ev[idx[1]].cmd, want_prefill, sizeof want_prefill);
    for (int i = 0; i < np; i++) assert_int_equal(t->ev[idx[1]].payload[i], (uint32_t)prompt[i]);
    assert_int_equal(tsr_device_traffic(dev, &tr), TSR_OK);
    assert_int_equal(tr.prefill_h2d, CMD_BYTES + CMD_BYTES + 4u * 5u);
    assert_int_equal(tr.prefill_d2h, 2u * RESP_BYTES);

    /* ---- decode: 40 greedy tokens ---- */
    enum { N = 40 };
    mark = t->n;
    tsr_gen_opts go = { .max_tokens = N };
    int n_gen = 0;
    assert_int_equal(tsr_seq_generate(s, &go, NULL, NULL, &n_gen), TSR_OK);
    assert_int_equal(n_gen, N);
    nc = commands(t, mark, idx, 64);
    assert_int_equal(nc, 1);
    const uint64_t seed = TSR_DEFAULT_SEED;
    const uint32_t want_decode[TSR_CMD_WORDS] = {
        seq + 2, TSR_OP_DECODE, slot, 0, 2, 0, N + 1,
        N, (uint32_t)seed, (uint32_t)(seed >> 32), TSR_DEC_RESEED
    };
    assert_memory_equal(t->ev[idx[0]].cmd, want_decode, sizeof want_decode);
    assert_int_equal(t->ev[idx[0]].payload[0], f32_bits(0.0f));   /* temperature */
    assert_int_equal(t->ev[idx[0]].payload[1], f32_bits(1.0f));   /* top_p: off  */
    /* before it: out[0] cleared, so a count read before the kernel starts is 0 */
    int first = mark;
    while (t->ev[first].kind != EV_SYNC || t->ev[first].dir != TSR_XRT_H2D) first++;
    assert_int_equal(t->ev[first].buf, TSR_BUF_OUT);
    assert_int_equal(t->ev[first].offset, 0);
    assert_int_equal(t->ev[first].bytes, 4);
    /* down: that word, the entry and its 2-word payload, nothing else */
    assert_int_equal(tsr_device_traffic(dev, &tr), TSR_OK);
    assert_int_equal(tr.decode_h2d, 4u + CMD_BYTES + 8u);
    assert_int_equal(synced(t, mark, t->n, -1, TSR_XRT_H2D), tr.decode_h2d);
    /* up: the token ids, each read once and in order, plus count polls of
     * out[0] and the response */
    uint64_t next = 4, polls = 0;
    for (int i = mark; i < t->n; i++) {
        const event *v = &t->ev[i];
        if (v->kind != EV_SYNC || v->buf != TSR_BUF_OUT || v->dir != TSR_XRT_D2H) continue;
        if (v->offset == 0) {
            assert_int_equal(v->bytes, 4);
            polls++;
            continue;
        }
        assert_int_equal(v->offset, next);
        next += v->bytes;
    }
    assert_int_equal(next, 4u + 4u * N);
    uint64_t counted = tr.decode_d2h - 4u * N - RESP_BYTES;
    assert_true(counted % 4u == 0 && counted >= 4u && counted / 4u <= polls);
    assert_true(tr.decode_d2h <= 4u * N + RESP_BYTES + 4u * polls);

    /* the tokens: the emulator's, on the same mesh */
    const int *hist;
    int nh;
    assert_int_equal(tsr_seq_tokens(s, &hist, &nh), TSR_OK);
    assert_int_equal(nh, 5 + N);
    int ref[64];
    assert_int_equal(emu_history(5 + N, 0, ref, 64, NULL), 5 + N);
    assert_memory_equal(hist, ref, sizeof(int) * (5 + N));

    /* ---- the same image again: nothing crosses the link ---- */
    mark = t->n;
    tsr_model *again = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &mo, &again), TSR_OK);
    assert_int_equal(commands(t, mark, idx, 64), 0);
    assert_int_equal(synced(t, mark, t->n, -1, TSR_XRT_H2D), 0);
    tsr_traffic tr2 = { 0 };
    assert_int_equal(tsr_device_traffic(dev, &tr2), TSR_OK);
    assert_int_equal(tr2.loads, 1);
    assert_int_equal(tr2.load_h2d, tr.load_h2d);

    /* ---- close: EXIT, and the card leaves its loop ---- */
    mark = t->n;
    tsr_model_close(again);
    tsr_seq_close(s);
    tsr_model_close(model);
    tsr_device_close(dev);
    nc = commands(t, mark, idx, 64);
    assert_int_equal(nc, 1);
    assert_int_equal(t->ev[idx[0]].cmd[TSR_CMD_OP], TSR_OP_EXIT);
    assert_int_equal(t->ev[idx[0]].cmd[TSR_CMD_SEQ], seq + 3);
    tsr_wimage_free(&img);
    tsr_checkpoint_close(ck);
    trace_off(t);
    unlink(path);
}

/* The whole reference run: 200 positions, greedy, the emulator's tokens,
 * with every buffer in card memory (each crossing a DMA sync), and with
 * the ring and the answers in host memory as the link configs put them
 * (HOST[0]: host-only buffers, no DMA sync for either, a poll is a load;
 * the weights and prompts still synced into card memory). */
static void test_tokens_equal_emulator(void **state)
{
    (void)state;
    for (int host = 0; host < 2; host++) {
        char path[64];
        tsr_xclbin_desc d = { .profile = PROFILE_260K };
        static const char *const ring_in_host[TSR_XRT_NARGS] = { "HOST[0]", "DDR[0]", "DDR[0]",
                                                                 "HOST[0]", "HOST[0]" };
        if (host) memcpy(d.bank, ring_in_host, sizeof d.bank);
        write_xclbin(path, sizeof path, &d);
        trace *t = trace_on();
        tsr_device *dev = NULL;
        assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
        tsr_model_opts mo = { .tokenizer = TOK, .n_seqs = 1 };
        tsr_model *m = NULL;
        assert_int_equal(tsr_model_load(dev, MODEL, &mo, &m), TSR_OK);
        static int got[512], ref[512];
        static float lg[512], lref[512];
        int n = greedy_history(m, PROMPT, 200, 0, got, 512, lg, 512);
        assert_int_equal(emu_history(201, 0, ref, 512, lref), n);
        assert_true(n > 100);
        assert_memory_equal(got, ref, sizeof(int) * (size_t)n);
        /* READ_LOGITS: the last pass's logits, bit for bit */
        assert_memory_equal(lg, lref, sizeof lg);
        tsr_xrt_info info;
        assert_int_equal(tsr_xrt_info_get(dev->k.b, &info), TSR_OK);
        for (int b = 0; b < TSR_BUF_COUNT; b++) {
            int in_host = host && b != TSR_BUF_IN;
            assert_int_equal(info.host_mem[b], in_host);
            if (in_host) assert_int_equal(info.dma_syncs[b], 0);
            else assert_true(info.dma_syncs[b] > 0);
        }
        tsr_model_close(m);
        tsr_device_close(dev);
        trace_off(t);
        unlink(path);
    }
}

static int stop_at_two(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)s;
    (void)token;
    int *seen = user;
    return ++*seen >= 2;
}

static int cancel_at_three(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)text;
    (void)len;
    (void)token;
    int *seen = user;
    if (++*seen == 3) tsr_seq_cancel(s);
    return 0;
}

/* Cancel: the host's cancel word stops a long decode within tokens, then
 * clears; a callback that stops early leaves the device rewound (TRUNCATE)
 * to what the caller saw.  Either way the next decode continues the
 * emulator's sequence. */
static void test_cancel(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(path, sizeof path, &d);
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &mo, &m), TSR_OK);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, PROMPT), TSR_OK);

    /* a callback that stops after two tokens */
    int mark = t->n, seen = 0, n_gen = 0, idx[8] = { 0 };
    tsr_gen_opts go = { .max_tokens = 500, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &go, stop_at_two, &seen, &n_gen), TSR_OK);
    assert_int_equal(n_gen, 2);
    assert_int_equal(tsr_seq_length(s), 5 + 2);
    int nc = commands(t, mark, idx, 8);
    assert_true(nc == 1 || nc == 2);
    assert_int_equal(t->ev[idx[0]].cmd[TSR_CMD_OP], TSR_OP_DECODE);
    const int *hist;
    int nh;
    assert_int_equal(tsr_seq_tokens(s, &hist, &nh), TSR_OK);
    if (nc == 2) {   /* the device sampled past the second token: rewound */
        const uint32_t want[TSR_CMD_WORDS] = {
            t->ev[idx[0]].cmd[TSR_CMD_SEQ] + 1, TSR_OP_TRUNCATE, (uint32_t)s->slot, 0, 0, 0, 0,
            5 + 2 - 1, (uint32_t)hist[6]
        };
        assert_memory_equal(t->ev[idx[1]].cmd, want, sizeof want);
    }

    /* the cancel word: asked at the third token of a 500-token decode */
    mark = t->n;
    seen = 0;
    assert_int_equal(tsr_seq_generate(s, &go, cancel_at_three, &seen, &n_gen), TSR_OK);
    assert_int_equal(tsr_seq_was_cancelled(s), 1);
    assert_true(n_gen >= 3 && n_gen < 500);
    assert_int_equal(seen, n_gen);
    uint32_t words[4], nw = 0;
    for (int i = mark; i < t->n; i++) {
        const event *v = &t->ev[i];
        if (v->kind == EV_SYNC && v->buf == TSR_BUF_CTL && v->dir == TSR_XRT_H2D &&
            v->offset == 4u * TSR_CTL_CANCEL && nw < 4)
            words[nw++] = v->word;
    }
    assert_int_equal(nw, 2);
    assert_int_equal(words[0], 1);   /* set while the kernel ran ... */
    assert_int_equal(words[1], 0);   /* ... cleared once it answered */
    assert_int_equal(__atomic_load_n(&t->card.ctl[TSR_CTL_CANCEL], __ATOMIC_ACQUIRE), 0);
    tsr_traffic tr = { 0 };
    assert_int_equal(tsr_device_traffic(dev, &tr), TSR_OK);

    /* and on: 20 more tokens; the whole history is the emulator's */
    int total = 5 + 2 + n_gen + 20;
    tsr_gen_opts more = { .max_tokens = 20, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &more, NULL, NULL, &n_gen), TSR_OK);
    assert_int_equal(n_gen, 20);
    assert_int_equal(tsr_seq_was_cancelled(s), 0);
    assert_int_equal(tsr_seq_tokens(s, &hist, &nh), TSR_OK);
    assert_int_equal(nh, total);
    static int ref[600];
    assert_int_equal(emu_history(total, 1, ref, 600, NULL), total);
    assert_memory_equal(hist, ref, sizeof(int) * (size_t)total);

    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
    trace_off(t);
    unlink(path);
}

/* READ_LOGITS and READ_COUNTERS travel in the debug phase; a kernel
 * status other than OK reaches the caller mapped. */
static void test_debug_reads(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(path, sizeof path, &d);
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &mo, &m), TSR_OK);
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, PROMPT), TSR_OK);
    static float lg[512];
    /* no full forward pass since the prefill: the kernel says bad state */
    assert_int_equal(tsr_seq_read_logits(s, lg, 512), TSR_ERR_STATE);
    assert_non_null(strstr(tsr_device_errmsg(dev), "xrt: read logits: none for this sequence's "
                                                   "last token (generate a token first; "));
    assert_non_null(strstr(tsr_device_errmsg(dev), "kernel status 3 (bad state)"));

    tsr_traffic before = { 0 }, after = { 0 };
    tsr_gen_opts go = { .max_tokens = 7, .ignore_stop = 1 };
    assert_int_equal(tsr_seq_generate(s, &go, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(tsr_device_traffic(dev, &before), TSR_OK);
    assert_int_equal(tsr_seq_read_logits(s, lg, 512), TSR_OK);
    assert_int_equal(tsr_device_traffic(dev, &after), TSR_OK);
    assert_int_equal(after.debug_h2d - before.debug_h2d, CMD_BYTES);
    assert_int_equal(after.debug_d2h - before.debug_d2h, RESP_BYTES + 4u * 512u);
    assert_int_equal(after.decode_d2h, before.decode_d2h);

    /* READ_COUNTERS asks for the card profile's block (4 PEs here, not the
     * library's 64) and prints what the kernel counted */
    int mark = t->n, idx[4];
    char text[8192];
    assert_int_equal(tsr_device_kernel_counters(dev, text, sizeof text), TSR_OK);
    assert_int_equal(commands(t, mark, idx, 4), 1);
    const event *c = &t->ev[idx[0]];
    assert_int_equal(c->cmd[TSR_CMD_OP], TSR_OP_READ_COUNTERS);
    const uint32_t room = 2u * (TSR_KCOUNTERS_FIXED + 4u);
    assert_int_equal(c->cmd[TSR_CMD_OUT_WORDS], room);
    tsr_traffic last = { 0 };
    assert_int_equal(tsr_device_traffic(dev, &last), TSR_OK);
    /* (the played card has the generic profile's 64 PEs: it fills the room) */
    assert_int_equal(last.debug_d2h - after.debug_d2h, RESP_BYTES + 4u * room);
    tsr_wimage img;
    tsr_checkpoint *ck = NULL;
    tsr_err e;
    tsr_clearerr(&e);
    assert_int_equal(tsr_checkpoint_open(MODEL, &ck, &e), TSR_OK);
    assert_int_equal(tsr_wimage_build(ck, &dev->k.cfg, &img, &e), TSR_OK);
    char want[128];
    assert_non_null(strstr(text, "profile stories260k, 4 PEs\n"));
    snprintf(want, sizeof want, "\nruns.load %d\n", img.n_chunks);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "\nruns.decode 1\n"));
    assert_non_null(strstr(text, "\nruns.read_logits 2\n"));   /* the refused one too */
    assert_non_null(strstr(text, "\ntokens_sampled 7\n"));
    uint64_t lb = 0;   /* the kernel counts W8 bytes, fp32 words x 4 */
    for (int k = 0; k < img.n_chunks; k++)
        lb += img.chunks[k].region == TSR_REG_W8 ? img.chunks[k].length : 4u * img.chunks[k].length;
    snprintf(want, sizeof want, "\nload_bytes %llu\n", (unsigned long long)lb);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "\npe3.sram_bytes "));
    assert_null(strstr(text, "pe4.sram_bytes"));
    /* that room is the block of a 4-PE card: every field before
     * pe_sram_bytes, then one (low, high) pair per PE */
    assert_int_equal(room, offsetof(tsr_kcounters, pe_sram_bytes) / 4u + 2u * 4u);
    tsr_wimage_free(&img);
    tsr_checkpoint_close(ck);
    tsr_seq_close(s);
    tsr_model_close(m);
    tsr_device_close(dev);
    trace_off(t);
    unlink(path);
}

/* A card whose kernel refuses what its key promised (here: the key says
 * hidden 16384, the kernel was built for 8192): CONFIGURE's status reaches
 * the caller, and no weight crosses. */
static void test_kernel_refuses_config(void **state)
{
    (void)state;
    char path[64], synth[64], err[256], p[1024];
    profile_with(PROFILE_GENERIC, "hidden", "16384", p, sizeof p);
    tsr_xclbin_desc d = { .profile = p };
    write_xclbin(path, sizeof path, &d);
    temp_path(synth, sizeof synth, "synth");
    assert_int_equal(tsr_synth_file("64x1:hidden=9000,vocab=512,seq=64", synth, 32, 3, err,
                                    sizeof err), TSR_OK);
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, "pes=4", &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load(dev, synth, &mo, &m), TSR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tsr_device_errmsg(dev),
                           "xrt: configure: kernel status 4 (shape outside the kernel profile)"));
    int idx[4];
    assert_int_equal(commands(t, 0, idx, 4), 1);
    assert_int_equal(t->ev[idx[0]].cmd[TSR_CMD_OP], TSR_OP_CONFIGURE);
    assert_int_equal(synced(t, 0, t->n, TSR_BUF_IN, TSR_XRT_H2D), 4u * TSR_KCONFIG_WORDS);
    tsr_device_close(dev);
    trace_off(t);
    unlink(synth);
    unlink(path);
}

/* ------------------------------------------------- profile mismatches --- */

/* Load fails with code and a message containing want, and no command
 * crossed the link (the host checks the model against the xclbin's
 * profile before anything is sent). */
static void expect_load_error(const char *xclbin, const char *extra, const char *model,
                              const tsr_model_opts *opts, int code, const char *want)
{
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(xclbin, extra, &dev), TSR_OK);
    tsr_model_opts mo = *opts;
    mo.tokenizer = TOK;
    tsr_model *m = NULL;
    int mark = t->n, idx[4];
    int rc = tsr_model_load(dev, model, &mo, &m);
    if (rc != code || !strstr(tsr_device_errmsg(dev), want))
        print_error("got %d '%s', want %d '...%s...'\n", rc, tsr_device_errmsg(dev), code, want);
    assert_int_equal(rc, code);
    assert_non_null(strstr(tsr_device_errmsg(dev), want));
    assert_int_equal(commands(t, mark, idx, 4), 0);
    assert_int_equal(synced(t, mark, t->n, -1, TSR_XRT_H2D), 0);
    tsr_device_close(dev);
    trace_off(t);
}

/* A model the xclbin's profile cannot hold is refused before streaming,
 * naming the profile and the figure. */
static void test_profile_mismatch(void **state)
{
    (void)state;
    char x260[64], x15m[64], synth[64], err[256], want[256];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(x260, sizeof x260, &d);
    tsr_xclbin_desc d15 = { .profile = PROFILE_15M };
    write_xclbin(x15m, sizeof x15m, &d15);
    const tsr_kprofile *p260 = tsr_profile_find("stories260k"), *p15 = tsr_profile_find("stories15m");
    tsr_model_opts none = { 0 };

    /* stories260K's 8 heads against stories15m's (stories15M's 6) */
    snprintf(want, sizeof want, "n_heads 8 exceeds the stories15m profile's maximum %u", p15->heads);
    expect_load_error(x15m, NULL, MODEL, &none, TSR_ERR_UNSUPPORTED, want);
    /* dim 128 against stories260k's 64 (a synthetic model, vocab 512) */
    temp_path(synth, sizeof synth, "synth");
    assert_int_equal(tsr_synth_file("128x2:vocab=512,seq=64", synth, 32, 1, err, sizeof err),
                     TSR_OK);
    snprintf(want, sizeof want, "dim 128 exceeds the stories260k profile's maximum %u", p260->dim);
    expect_load_error(x260, NULL, synth, &none, TSR_ERR_UNSUPPORTED, want);
    unlink(synth);
    /* a 512-token context asked for against stories15m's (the file's own
     * context would be cut to the profile's, test_emu) */
    assert_int_equal(tsr_synth_file("96x2:heads=6,vocab=512,seq=512", synth, 32, 2, err, sizeof err),
                     TSR_OK);
    snprintf(want, sizeof want, "seq_len 512 exceeds the stories15m profile's maximum %u", p15->seq);
    tsr_model_opts ctx512 = { .seq_len = 512 };
    expect_load_error(x15m, "pes=16", synth, &ctx512, TSR_ERR_UNSUPPORTED, want);
    /* F32 weights on a profile without the F32 datapath */
    tsr_model_opts f32 = { .weights_f32 = 1, .seq_len = 64 };
    expect_load_error(x15m, "pes=16", synth, &f32, TSR_ERR_UNSUPPORTED,
                      "the stories15m profile has no F32 datapath");
    unlink(synth);
    /* a group size below the profile's */
    tsr_model_opts g16 = { .group_size = 16 };
    snprintf(want, sizeof want, "group size 16 is outside the %u..%u the device's kernel profile "
             "takes", p260->group_min, p260->group_max);
    expect_load_error(x260, NULL, MODEL, &g16, TSR_ERR_UNSUPPORTED, want);
    /* all of stories260K's int8 tiles on one PE */
    snprintf(want, sizeof want, "of int8 tiles on one of 1 PEs, a stories260k PE has %u",
             p260->w8_words * TSR_LANES);
    expect_load_error(x260, "pes=1", MODEL, &none, TSR_ERR_CAPACITY, want);

    /* a model within stories15m's shapes, on 16 of its PEs (4 x 4): its
     * W13 takes one mesh column there, and the profile built SwiGLU at
     * every second PE only (TSR_W13_COLS) */
    char fits[64];
    temp_path(fits, sizeof fits, "fits");
    assert_int_equal(tsr_synth_file("96x2:heads=6,vocab=512,seq=256", fits, 32, 2, err, sizeof err),
                     TSR_OK);
    expect_load_error(x15m, "pes=16", fits, &none, TSR_ERR_UNSUPPORTED,
                      "on a 4 x 4 mesh W13 splits over 1 mesh column, and the stories15m profile "
                      "builds its roots every 2 PEs only");
    /* on all 32 (8 x 4: W13 on 2 columns) it loads (the card played here
     * is the generic kernel, 64 PEs at most) */
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(x15m, "pes=32", &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK };
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, fits, &mo, &m);
    if (rc) print_error("%s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    tsr_model_info mi = { 0 };
    assert_int_equal(tsr_model_get_info(m, &mi), TSR_OK);
    assert_int_equal(mi.n_seqs, (int)p15->slots);
    assert_int_equal(dev->k.cfg.mesh_rows * dev->k.cfg.mesh_cols, 32);
    tsr_model_close(m);
    tsr_device_close(dev);
    trace_off(t);
    unlink(fits);
    unlink(x260);
    unlink(x15m);
}

/* No --xclbin: the one tessera_*.xclbin in $TESSERA_BITSTREAMS for the
 * card's platform (noop reports none, so any platform counts). */
static void test_default_xclbin(void **state)
{
    (void)state;
    char dir[] = "/tmp/tsr_xrt_bits_XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TESSERA_BITSTREAMS", dir, 1);
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("xrt:0", &dev), TSR_ERR_IO);
    assert_non_null(strstr(tsr_device_errmsg(dev), "no tessera_<profile>_<platform>.xclbin in"));
    tsr_device_close(dev);

    char p1[256], p2[256];
    snprintf(p1, sizeof p1, "%s/tessera_stories260k_xilinx_u55c_gen3x16_xdma_3_202210_1.xclbin", dir);
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    assert_int_equal(tsr_xclbin_write(p1, &d), 0);
    trace *t = trace_on();
    assert_int_equal(tsr_device_open("xrt:0", &dev), TSR_OK);
    tsr_xrt_info info;
    assert_int_equal(tsr_xrt_info_get(dev->k.b, &info), TSR_OK);
    assert_string_equal(info.xclbin, p1);
    tsr_device_close(dev);
    trace_off(t);

    snprintf(p2, sizeof p2, "%s/tessera_stories15m_xilinx_u55c_gen3x16_xdma_3_202210_1.xclbin", dir);
    assert_int_equal(tsr_xclbin_write(p2, &d), 0);
    assert_int_equal(tsr_device_open("xrt:0", &dev), TSR_ERR_ARG);
    assert_non_null(strstr(tsr_device_errmsg(dev), "2 xclbins in"));
    assert_non_null(strstr(tsr_device_errmsg(dev), "pass --xclbin FILE"));
    tsr_device_close(dev);
    unsetenv("TESSERA_BITSTREAMS");
    unlink(p1);
    unlink(p2);
    rmdir(dir);
}

/* ------------------------------------------------------------------ CLI --- */

/* The tessera program links the real shim: on this card-less machine it
 * says so in one line, exits 1, and XRT prints nothing. */
static void test_cli_no_card(void **state)
{
    (void)state;
    static char out[8192], err[8192];
    int rc = run_capture("env -u XRT_INI_PATH " TESSERA_BIN " run --backend xrt:0 -m " MODEL_SH
                         " -z " TOK_SH " -p hi -n 4", out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "tessera: no Xilinx device found (xrt:0)"));
    assert_null(strstr(err, "XRT build version"));
    assert_null(strstr(err, "[XRT]"));
    assert_string_equal(out, "");
    /* --xclbin goes into the spec; still no card. */
    rc = run_capture("env -u XRT_INI_PATH " TESSERA_BIN " run --backend xrt:1 --xclbin /tmp/x.xclbin -m "
                     MODEL_SH " -z " TOK_SH, out, err, sizeof out);
    assert_int_equal(rc, 1);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "no Xilinx device found (xrt:1)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xclbin_metadata),
        cmocka_unit_test(test_profile_keys),
        cmocka_unit_test(test_open_maps_banks),
        cmocka_unit_test(test_bank_pairs),
        cmocka_unit_test(test_not_this_kernel),
        cmocka_unit_test(test_profile_key_refused),
        cmocka_unit_test(test_empty_and_foreign_files),
        cmocka_unit_test(test_protocol),
        cmocka_unit_test(test_tokens_equal_emulator),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_debug_reads),
        cmocka_unit_test(test_kernel_refuses_config),
        cmocka_unit_test(test_profile_mismatch),
        cmocka_unit_test(test_default_xclbin),
        cmocka_unit_test(test_cli_no_card),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* A failed test leaves its device open and its card thread serving the
     * ring; XRT's static destructors would free those buffers under the
     * thread.  Leave without them (a passing run exits normally, so leak
     * checkers still see it). */
    if (failed) _exit(1);
    return 0;
}

#else /* !TSR_HAVE_XRT */

/* Built without XRT: the backend is a stub that says so. */
static void test_stub_says_built_without_xrt(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("xrt:0", &dev), TSR_ERR_UNSUPPORTED);
    assert_non_null(strstr(tsr_device_errmsg(dev), "tessera was built without XRT"));
    tsr_device_close(dev);
}

int main(void)
{
    fprintf(stderr, "test_xrt: SKIPPED the noop-shim tests: built without XRT "
                    "(install libxrt-dev, then make XRT=1)\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stub_says_built_without_xrt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
