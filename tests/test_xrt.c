/*
 * test_xrt.c - the XRT backend against XRT's noop shim (linked instead of
 * the real one by the Makefile): a metadata-only xclbin written at test
 * time (tests/support/xclbin_write.c), the device opened through the public
 * API, and the backend's trace hook (driver/backend_xrt.h) recording every
 * kernel run and buffer sync.  noop computes nothing, so these tests check
 * the protocol -- order and words of the commands, banks, bytes per phase,
 * refusals -- not the numerics (the emulator's tests do those).  The trace
 * hook plays the device where noop cannot: it writes decode output and
 * returns kernel status words.
 *
 * Also: `tessera run --backend xrt:0` with the real shim on this card-less
 * machine says so in one line, without XRT's banner.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_xrt.h"
#include "device.h"
#include "model.h"
#include "run_capture.h"
#include "tessera.h"
#include "test_util.h"
#include "tsr_kernel.h"
#include "weight_image.h"
#include "xclbin_write.h"

#define MODEL SHARED_MODEL("stories260K.bin")
#define MODEL_SH SH_MODEL("stories260K.bin")
#define TOK   SHARED_MODEL("tok512.bin")
#define TOK_SH SH_MODEL("tok512.bin")

/* What hw/profile_kv.c prints for the two synthesis profiles. */
#define PROFILE_260K "name=stories260k,pes=4,rows=4,cols=4,dim=64,hidden=172,layers=5,heads=8," \
                     "kv_heads=4,head_size=8,vocab=512,seq=512,slots=2,group_min=16," \
                     "group_max=64,i8_bytes=81920,f32_words=163840"
#define PROFILE_15M  "name=stories15m,pes=16,rows=16,cols=4,dim=288,hidden=768,layers=6," \
                     "heads=6,kv_heads=6,head_size=48,vocab=32000,seq=256,slots=1," \
                     "group_min=16,group_max=64,i8_bytes=1310720,f32_words=131072"

#ifdef TSR_HAVE_XRT

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

/* The trace: every run's command words, every sync. */
#define MAX_EV 4096
typedef struct event {
    int      is_run;
    uint32_t cmd[TSR_CMD_WORDS];       /* runs                              */
    int      arg, dir;                 /* syncs                             */
    size_t   bytes, offset;
} event;

typedef struct trace {
    event    ev[MAX_EV];
    int      n;
    int      overflow;
    /* playing the device for DECODE */
    uint32_t decode_tokens[8];
    uint32_t n_decode_tokens;
    int      status_for_op[TSR_OP_COUNT];   /* kernel status to return per op */
} trace;

static void on_run(const uint32_t cmd[TSR_CMD_WORDS], uint32_t *out, size_t out_words, void *user)
{
    trace *t = user;
    if (t->n < MAX_EV) {
        t->ev[t->n].is_run = 1;
        memcpy(t->ev[t->n].cmd, cmd, sizeof t->ev[t->n].cmd);
        t->n++;
    } else {
        t->overflow = 1;
    }
    if (cmd[TSR_CMD_OP] == TSR_OP_READ_COUNTERS) {
        /* a card with the stories260k profile: 4 PEs, so its block ends
         * after 4 per-PE words (shorter than the library's own struct) */
        tsr_kcounters kc;
        memset(&kc, 0, sizeof kc);
        kc.runs[TSR_OP_DECODE] = 7;
        kc.macs = 12345;
        kc.n_pes = 4;
        for (int p = 0; p < 4; p++) kc.pe_sram_bytes[p] = 100u * (uint64_t)(p + 1);
        size_t words = (offsetof(tsr_kcounters, pe_sram_bytes) + 4u * 8u) / 4u;
        if (cmd[TSR_CMD_A0] == words && out_words >= words) memcpy(out, &kc, 4u * words);
    }
    if (cmd[TSR_CMD_OP] == TSR_OP_DECODE && out_words > t->n_decode_tokens) {
        uint32_t n = t->n_decode_tokens < cmd[TSR_CMD_A0] ? t->n_decode_tokens : cmd[TSR_CMD_A0];
        for (uint32_t i = 0; i < n; i++) out[1 + i] = t->decode_tokens[i];
        out[0] = n;
    }
}

static int on_status(const uint32_t cmd[TSR_CMD_WORDS], void *user)
{
    trace *t = user;
    return cmd[TSR_CMD_OP] < TSR_OP_COUNT ? t->status_for_op[cmd[TSR_CMD_OP]] : TSR_K_EOP;
}

static void on_sync(int arg, int dir, size_t bytes, size_t offset, void *user)
{
    trace *t = user;
    if (t->n >= MAX_EV) { t->overflow = 1; return; }
    event *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    e->arg = arg;
    e->dir = dir;
    e->bytes = bytes;
    e->offset = offset;
}

static trace *trace_on(void)
{
    trace *t = calloc(1, sizeof *t);
    assert_non_null(t);
    tsr_xrt_trace h = { on_run, on_status, on_sync, t };
    tsr_xrt_set_trace(&h);
    return t;
}

static void trace_off(trace *t)
{
    tsr_xrt_set_trace(NULL);
    free(t);
}

/* Index of the next run event at or after i, or -1. */
static int next_run(const trace *t, int i)
{
    for (; i < t->n; i++)
        if (t->ev[i].is_run) return i;
    return -1;
}

/* ------------------------------------------------- the xclbin itself --- */

/* The writer's file reads back through the backend's own reader. */
static void test_xclbin_metadata(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_15M, .bank = { "HBM[3]", "HBM[7]", "HBM[7]" } };
    write_xclbin(path, sizeof path, &d);
    tsr_xmeta *m = malloc(sizeof *m);
    assert_non_null(m);
    tsr_err e;
    tsr_clearerr(&e);
    assert_int_equal(tsr_xmeta_read(path, "tessera_top", m, &e), TSR_OK);
    assert_string_equal(m->platform, "xilinx_u55c_gen3x16_xdma_3_202210_1");
    assert_int_equal(m->has_kernel, 1);
    assert_int_equal(m->n_args, 4);
    static const char *const names[4] = { "cmd", "in", "out", "cancel" };
    static const char *const banks[4] = { "", "HBM[3]", "HBM[7]", "HBM[7]" };
    for (int a = 0; a < 4; a++) {
        const tsr_xarg *g = tsr_xmeta_arg(m, names[a]);
        assert_non_null(g);
        assert_int_equal(g->id, a);
        assert_int_equal(g->address_qualifier, a == 0 ? 0 : 1);
        assert_string_equal(g->bank, banks[a]);
    }
    assert_int_equal(tsr_xmeta_arg(m, "cmd")->size, 32);
    assert_string_equal(tsr_xmeta_arg(m, "cmd")->type, "uint*");
    assert_int_equal(m->has_profile, 1);
    assert_string_equal(m->profile.name, "stories15m");
    assert_int_equal(m->profile.pes, 16);
    assert_int_equal(m->profile.cols, 4);
    assert_int_equal(m->profile.dim, 288);
    assert_int_equal(m->profile.vocab, 32000);
    assert_int_equal(m->profile.seq, 256);
    assert_int_equal(m->profile.i8_bytes, 1310720);
    assert_int_equal(m->profile.f32_words, 131072);
    free(m);
    unlink(path);
}

/* A profile value missing a key is refused, naming it. */
static void test_profile_parse_errors(void **state)
{
    (void)state;
    tsr_xprofile p;
    tsr_err e;
    tsr_clearerr(&e);
    assert_int_equal(tsr_xprofile_parse(PROFILE_260K, &p, &e), TSR_OK);
    assert_int_equal(p.slots, 2);
    assert_int_equal(p.group_min, 16);
    assert_int_equal(tsr_xprofile_parse("name=x,pes=4", &p, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "rows missing"));
    assert_int_equal(tsr_xprofile_parse("name=x,pes=four", &p, &e), TSR_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "bad value for pes"));
}

/* ------------------------------------------------------ open and banks --- */

/* The device opens on the noop shim, finds the kernel, and allocates each
 * buffer in the group of the bank the xclbin names for its argument. */
static void test_open_maps_banks(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K, .bank = { "DDR[0]", "DDR[1]", "DDR[1]" } };
    write_xclbin(path, sizeof path, &d);
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    tsr_xrt_info info;
    assert_int_equal(tsr_xrt_info_get(dev->b, &info), TSR_OK);
    assert_string_equal(info.xclbin, path);
    assert_string_equal(info.profile.name, "stories260k");
    assert_string_equal(info.bank[TSR_XRT_ARG_IN], "DDR[0]");
    assert_string_equal(info.bank[TSR_XRT_ARG_OUT], "DDR[1]");
    assert_string_equal(info.bank[TSR_XRT_ARG_CANCEL], "DDR[1]");
    /* MEM_TOPOLOGY holds DDR[0] at index 0 and DDR[1] at index 1. */
    assert_int_equal(info.group[TSR_XRT_ARG_CMD], -1);
    assert_int_equal(info.group[TSR_XRT_ARG_IN], 0);
    assert_int_equal(info.group[TSR_XRT_ARG_OUT], 1);
    assert_int_equal(info.group[TSR_XRT_ARG_CANCEL], 1);
    /* in holds a 1 MiB LOAD chunk; out 513 decode words (seq 512) at least. */
    assert_int_equal(info.bo_bytes[TSR_XRT_ARG_IN], TSR_WIMAGE_CHUNK);
    assert_true(info.bo_bytes[TSR_XRT_ARG_OUT] >= 4u * 513u);
    tsr_device_close(dev);
    unlink(path);
}

/* ------------------------------------------------------------ protocol --- */

static int collect(tsr_seq *s, int token, void *user)
{
    (void)s;
    int *got = user;
    got[++got[0]] = token;
    return got[0] >= 2;   /* stop after the second token */
}

/* Load, prefill and decode through the public API: the runs come in order
 * with the right words, the LOAD runs are the weight image's chunks, and
 * the bytes synced per phase are the emulator's budget. */
static void test_protocol(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(path, sizeof path, &d);
    trace *t = trace_on();
    t->decode_tokens[0] = 10;
    t->decode_tokens[1] = 20;
    t->decode_tokens[2] = 30;
    t->n_decode_tokens = 3;

    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK };
    tsr_model *model = NULL;
    int rc = tsr_model_load(dev, MODEL, &mo, &model);
    if (rc) print_error("%s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    tsr_model_info mi;
    assert_int_equal(tsr_model_get_info(model, &mi), TSR_OK);
    assert_int_equal(mi.n_seqs, 2);          /* the profile's slots */
    assert_int_equal(t->overflow, 0);

    /* The image the backend should have streamed: 4 PEs on a 2 x 2 mesh. */
    tsr_checkpoint *ck = NULL;
    tsr_err e;
    tsr_clearerr(&e);
    assert_int_equal(tsr_checkpoint_open(MODEL, &ck, &e), TSR_OK);
    tsr_load_opts lo = { .group_size = 32, .seq_len = 512, .n_slots = 2 };
    tsr_kconfig kc;
    assert_int_equal(tsr_wimage_config(ck, &lo, 4, &kc, &e), TSR_OK);
    assert_int_equal(kc.mesh_rows, 2);
    assert_int_equal(kc.mesh_cols, 2);
    tsr_wimage img;
    assert_int_equal(tsr_wimage_build(ck, &kc, &img, &e), TSR_OK);

    /* Load: cancel word cleared, CONFIGURE (64-byte block in, 32-byte fit
     * out), then one LOAD per chunk with its header and payload. */
    int i = 0;
    assert_false(t->ev[i].is_run);
    assert_int_equal(t->ev[i].arg, TSR_XRT_ARG_CANCEL);
    assert_int_equal(t->ev[i].dir, TSR_XRT_H2D);
    assert_int_equal(t->ev[i].bytes, 4);
    i++;
    assert_int_equal(t->ev[i].arg, TSR_XRT_ARG_IN);
    assert_int_equal(t->ev[i].bytes, 64);
    i++;
    assert_true(t->ev[i].is_run);
    assert_int_equal(t->ev[i].cmd[TSR_CMD_OP], TSR_OP_CONFIGURE);
    i++;
    assert_int_equal(t->ev[i].arg, TSR_XRT_ARG_OUT);
    assert_int_equal(t->ev[i].dir, TSR_XRT_D2H);
    assert_int_equal(t->ev[i].bytes, 32);
    i++;
    for (int c = 0; c < img.n_chunks; c++) {
        const tsr_wchunk *ch = &img.chunks[c];
        assert_false(t->ev[i].is_run);
        assert_int_equal(t->ev[i].arg, TSR_XRT_ARG_IN);
        assert_int_equal(t->ev[i].dir, TSR_XRT_H2D);
        assert_int_equal(t->ev[i].bytes, ch->nbytes);
        i++;
        assert_true(t->ev[i].is_run);
        const uint32_t want[TSR_CMD_WORDS] = { TSR_OP_LOAD, 0, ch->pe, ch->region, ch->offset,
                                               ch->length, 0, 0 };
        assert_memory_equal(t->ev[i].cmd, want, sizeof want);
        i++;
    }
    assert_int_equal(i, t->n);
    tsr_traffic tr;
    assert_int_equal(tsr_device_traffic(dev, &tr), TSR_OK);
    /* image bytes (config block included) + 32 per command + the cancel word */
    assert_int_equal(tr.load_h2d, img.bytes + 32u * (uint64_t)(img.n_chunks + 1) + 4u);
    assert_int_equal(tr.load_d2h, 32);
    assert_int_equal(tr.loads, 1);

    /* A sequence: RESET, then PREFILL with the prompt's ids. */
    int base = t->n;
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(model, &s), TSR_OK);
    const int prompt[5] = { 1, 403, 407, 261, 378 };
    assert_int_equal(tsr_seq_append_tokens(s, prompt, 5), TSR_OK);
    i = next_run(t, base);
    assert_true(i >= 0);
    assert_int_equal(t->ev[i].cmd[TSR_CMD_OP], TSR_OP_RESET);
    uint32_t slot = t->ev[i].cmd[TSR_CMD_SLOT];
    assert_true(slot < 2);
    assert_false(t->ev[i + 1].is_run);
    assert_int_equal(t->ev[i + 1].arg, TSR_XRT_ARG_IN);
    assert_int_equal(t->ev[i + 1].bytes, 5 * 4);
    assert_true(t->ev[i + 2].is_run);
    const uint32_t want_prefill[TSR_CMD_WORDS] = { TSR_OP_PREFILL, slot, 5, 0, 0, 0, 0, 0 };
    assert_memory_equal(t->ev[i + 2].cmd, want_prefill, sizeof want_prefill);

    /* DECODE: the device (the hook) yields 10, 20, 30; the callback stops
     * after two, so the backend rewinds the third with TRUNCATE. */
    base = t->n;
    int got[8] = { 0 };
    tsr_gen_opts go = { .max_tokens = 3, .temperature = 0.0f, .top_p = 1.0f, .seed = 7 };
    int n_gen = 0;
    assert_int_equal(tsr_seq_generate(s, &go, collect, got, &n_gen), TSR_OK);
    assert_int_equal(n_gen, 2);
    assert_int_equal(got[0], 2);
    assert_int_equal(got[1], 10);
    assert_int_equal(got[2], 20);
    i = next_run(t, base);
    assert_true(i > base);   /* out[0] cleared on the device first */
    assert_int_equal(t->ev[base].arg, TSR_XRT_ARG_OUT);
    assert_int_equal(t->ev[base].dir, TSR_XRT_H2D);
    assert_int_equal(t->ev[base].bytes, 4);
    const uint32_t want_decode[TSR_CMD_WORDS] = { TSR_OP_DECODE, slot, 3, 0, 0x3f800000u, 7, 0,
                                                  TSR_DEC_RESEED };
    assert_memory_equal(t->ev[i].cmd, want_decode, sizeof want_decode);
    /* count word, then the three ids after it */
    assert_int_equal(t->ev[i + 1].dir, TSR_XRT_D2H);
    assert_int_equal(t->ev[i + 1].bytes, 4);
    assert_int_equal(t->ev[i + 1].offset, 0);
    assert_int_equal(t->ev[i + 2].bytes, 12);
    assert_int_equal(t->ev[i + 2].offset, 4);
    i = next_run(t, i + 1);
    assert_true(i >= 0);
    const uint32_t want_trunc[TSR_CMD_WORDS] = { TSR_OP_TRUNCATE, slot, 5 + 2 - 1, 20, 0, 0, 0, 0 };
    assert_memory_equal(t->ev[i].cmd, want_trunc, sizeof want_trunc);
    const int *hist;
    int nh;
    assert_int_equal(tsr_seq_tokens(s, &hist, &nh), TSR_OK);
    assert_int_equal(nh, 7);
    assert_int_equal(hist[5], 10);
    assert_int_equal(hist[6], 20);

    /* Bytes per phase: the emulator's budget. */
    assert_int_equal(tsr_device_traffic(dev, &tr), TSR_OK);
    assert_int_equal(tr.prefill_h2d, 32 + 32 + 5 * 4 + 32);   /* reset, prefill, truncate */
    assert_true(tr.prefill_h2d <= 4u * 5u + 64u + 32u);
    assert_int_equal(tr.prefill_d2h, 0);
    assert_int_equal(tr.decode_d2h, 4 + 3 * 4);
    assert_true(tr.decode_d2h <= 4u * 3u + 64u);
    assert_int_equal(tr.decode_h2d, 32 + 4);
    /* Every byte synced is counted, and the rest are 32-byte commands. */
    uint64_t h2d = 0, d2h = 0, runs = 0;
    for (int k = 0; k < t->n; k++) {
        if (t->ev[k].is_run) runs++;
        else if (t->ev[k].dir == TSR_XRT_H2D) h2d += t->ev[k].bytes;
        else d2h += t->ev[k].bytes;
    }
    assert_int_equal(runs, tr.invocations);
    assert_int_equal(h2d + 32u * runs, tr.load_h2d + tr.prefill_h2d + tr.decode_h2d + tr.debug_h2d);
    assert_int_equal(d2h, tr.load_d2h + tr.prefill_d2h + tr.decode_d2h + tr.debug_d2h);

    /* The same image again: nothing crosses the link. */
    int before = t->n;
    tsr_model *again = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &mo, &again), TSR_OK);
    for (int k = before; k < t->n; k++) assert_false(t->ev[k].is_run && t->ev[k].cmd[0] == TSR_OP_LOAD);
    assert_int_equal(tsr_device_traffic(dev, &tr), TSR_OK);
    assert_int_equal(tr.loads, 1);

    tsr_model_close(again);
    tsr_seq_close(s);
    tsr_model_close(model);
    tsr_device_close(dev);
    tsr_wimage_free(&img);
    tsr_checkpoint_close(ck);
    trace_off(t);
    unlink(path);
}

/* READ_COUNTERS asks for the card profile's counters block (4 PEs here, not
 * the library's 64), reads it back in the debug phase and prints it. */
static void test_kernel_counters(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(path, sizeof path, &d);
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *model = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &mo, &model), TSR_OK);
    tsr_traffic before, after;
    assert_int_equal(tsr_device_traffic(dev, &before), TSR_OK);
    char text[4096];
    assert_int_equal(tsr_device_kernel_counters(dev, text, sizeof text), TSR_OK);
    int r = -1;
    for (int k = 0; k < t->n; k++)
        if (t->ev[k].is_run && t->ev[k].cmd[TSR_CMD_OP] == TSR_OP_READ_COUNTERS) r = k;
    assert_true(r >= 0);
    size_t bytes = offsetof(tsr_kcounters, pe_sram_bytes) + 4u * 8u;
    assert_int_equal(t->ev[r].cmd[TSR_CMD_A0], bytes / 4u);
    assert_int_equal(tsr_device_traffic(dev, &after), TSR_OK);
    assert_int_equal(after.debug_d2h - before.debug_d2h, bytes);
    assert_non_null(strstr(text, "profile stories260k, 4 PEs\n"));
    assert_non_null(strstr(text, "runs.decode 7\n"));
    assert_non_null(strstr(text, "macs 12345\n"));
    assert_non_null(strstr(text, "pe3.sram_bytes 400\n"));
    assert_null(strstr(text, "pe4.sram_bytes"));
    tsr_model_close(model);
    tsr_device_close(dev);
    trace_off(t);
    unlink(path);
}

/* A kernel status word other than OK fails the call with the mapped code. */
static void test_kernel_status(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(path, sizeof path, &d);
    trace *t = trace_on();
    t->status_for_op[TSR_OP_CONFIGURE] = TSR_K_ECAPACITY;
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(path, NULL, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK, .n_seqs = 1 };
    tsr_model *model = NULL;
    assert_int_equal(tsr_model_load(dev, MODEL, &mo, &model), TSR_ERR_CAPACITY);
    assert_non_null(strstr(tsr_device_errmsg(dev), "configure: kernel status 5"));
    /* nothing but the configure ran */
    int runs = 0;
    for (int k = 0; k < t->n; k++) runs += t->ev[k].is_run;
    assert_int_equal(runs, 1);
    tsr_device_close(dev);
    trace_off(t);
    unlink(path);
}

/* --------------------------------------------------------------- errors --- */

/* Open must fail with code and a message containing want. */
static void expect_open_error(const char *path, const char *extra, int code, const char *want)
{
    tsr_device *dev = NULL;
    int rc = open_xrt(path, extra, &dev);
    if (rc != code || !strstr(tsr_device_errmsg(dev), want))
        print_error("got %d '%s', want %d '...%s...'\n", rc, tsr_device_errmsg(dev), code, want);
    assert_int_equal(rc, code);
    assert_non_null(strstr(tsr_device_errmsg(dev), want));
    tsr_device_close(dev);
}

static void test_wrong_kernel_name(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .kernel = "vadd", .profile = PROFILE_260K };
    write_xclbin(path, sizeof path, &d);
    expect_open_error(path, NULL, TSR_ERR_UNSUPPORTED, "no kernel 'tessera_top' in the xclbin (it has: vadd)");
    unlink(path);
}

static void test_missing_argument(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { .profile = PROFILE_260K, .omit_arg = 4 };   /* no cancel */
    write_xclbin(path, sizeof path, &d);
    expect_open_error(path, NULL, TSR_ERR_UNSUPPORTED, "kernel tessera_top has no argument 'cancel'");
    unlink(path);
    tsr_xclbin_desc d2 = { .profile = PROFILE_260K, .cmd_type = "unsigned int" };
    write_xclbin(path, sizeof path, &d2);
    expect_open_error(path, NULL, TSR_ERR_UNSUPPORTED, "argument 'cmd' must be an s_axilite uint*");
    unlink(path);
}

static void test_missing_profile(void **state)
{
    (void)state;
    char path[64];
    tsr_xclbin_desc d = { 0 };
    write_xclbin(path, sizeof path, &d);
    expect_open_error(path, NULL, TSR_ERR_UNSUPPORTED, "no tessera_profile key");
    unlink(path);
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
    expect_open_error("/nonexistent/k.xclbin", NULL, TSR_ERR_IO, "/nonexistent/k.xclbin: cannot open");
}

/* Load fails with code and a message containing want; no LOAD run happened. */
static void expect_load_error(const char *xclbin, const char *extra, const char *model,
                              const char *tok, const tsr_model_opts *opts, int code,
                              const char *want)
{
    trace *t = trace_on();
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(xclbin, extra, &dev), TSR_OK);
    tsr_model_opts mo = *opts;
    mo.tokenizer = tok;
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, model, &mo, &m);
    if (rc != code || !strstr(tsr_device_errmsg(dev), want))
        print_error("got %d '%s', want %d '...%s...'\n", rc, tsr_device_errmsg(dev), code, want);
    assert_int_equal(rc, code);
    assert_non_null(strstr(tsr_device_errmsg(dev), want));
    assert_int_equal(t->n, 0);   /* refused before anything crossed the link */
    tsr_device_close(dev);
    trace_off(t);
}

/* A model bigger than the xclbin's profile is refused before streaming,
 * naming the profile and the figure. */
static void test_profile_too_small(void **state)
{
    (void)state;
    char x260[64], x15m[64], synth[64], err[256];
    tsr_xclbin_desc d = { .profile = PROFILE_260K };
    write_xclbin(x260, sizeof x260, &d);
    tsr_xclbin_desc d15 = { .profile = PROFILE_15M };
    write_xclbin(x15m, sizeof x15m, &d15);
    tsr_model_opts none = { 0 };

    /* dim 128 against stories260k's 64 (a synthetic model, vocab 512). */
    temp_path(synth, sizeof synth, "synth");
    assert_int_equal(tsr_synth_file("128x2:vocab=512,seq=64", synth, 32, 1, err, sizeof err),
                     TSR_OK);
    expect_load_error(x260, NULL, synth, TOK, &none, TSR_ERR_UNSUPPORTED,
                      "dim 128 exceeds the maximum 64 of profile stories260k");
    /* stories260K's 8 heads against stories15m's 6 ... */
    expect_load_error(x15m, NULL, MODEL, TOK, &none, TSR_ERR_UNSUPPORTED,
                      "n_heads 8 exceeds the maximum 6 of profile stories15m");
    /* ... a 1024-token context against stories260k's 512 ... */
    tsr_model_opts ctx = { .seq_len = 1024 };
    expect_load_error(x260, NULL, MODEL, TOK, &ctx, TSR_ERR_ARG, "seq_len 1024 outside 1..512");
    /* ... and the int8 tiles of all of stories260K on one stories260k PE. */
    expect_load_error(x260, "pes=1", MODEL, TOK, &none, TSR_ERR_CAPACITY,
                      "of int8 tiles on one of 1 PEs, a PE of profile stories260k");
    /* More PEs than the profile has. */
    expect_open_error(x260, "pes=8", TSR_ERR_ARG, "pes=8 outside 1..4 (profile stories260k");

    /* A 256-token context of a stories15m-sized-or-smaller model fits. */
    char fits[64];
    temp_path(fits, sizeof fits, "fits");
    assert_int_equal(tsr_synth_file("96x2:heads=4,vocab=512,seq=256", fits, 32, 2, err, sizeof err),
                     TSR_OK);
    trace *t = trace_on();   /* noop has no status register: the hook answers */
    tsr_device *dev = NULL;
    assert_int_equal(open_xrt(x15m, NULL, &dev), TSR_OK);
    tsr_model_opts mo = { .tokenizer = TOK };
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, fits, &mo, &m);
    if (rc) print_error("%s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    tsr_model_close(m);
    tsr_device_close(dev);
    trace_off(t);
    unlink(fits);
    unlink(synth);
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
    assert_int_equal(tsr_device_open("xrt:0", &dev), TSR_OK);
    tsr_xrt_info info;
    assert_int_equal(tsr_xrt_info_get(dev->b, &info), TSR_OK);
    assert_string_equal(info.xclbin, p1);
    tsr_device_close(dev);

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
        cmocka_unit_test(test_profile_parse_errors),
        cmocka_unit_test(test_open_maps_banks),
        cmocka_unit_test(test_protocol),
        cmocka_unit_test(test_kernel_status),
        cmocka_unit_test(test_kernel_counters),
        cmocka_unit_test(test_wrong_kernel_name),
        cmocka_unit_test(test_missing_argument),
        cmocka_unit_test(test_missing_profile),
        cmocka_unit_test(test_empty_and_foreign_files),
        cmocka_unit_test(test_profile_too_small),
        cmocka_unit_test(test_default_xclbin),
        cmocka_unit_test(test_cli_no_card),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
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
